//! Bytes as lowercase hexadecimal text, the one spelling every message, report and trace uses.
//!
//! Two forms: [`to_hex`] packs the digits (`"0a1b"`, for digests and identifiers) and
//! [`to_hex_spaced`] separates bytes with a space (`"0a 1b"`, for byte strings a reader compares
//! by eye). Both write into one preallocated `String`.

use std::fmt::Write as _;

/// The bytes as packed lowercase hex digits: `[0x0a, 0x1b]` is `"0a1b"`.
pub fn to_hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        // Writing to a String cannot fail.
        let _ = write!(out, "{byte:02x}");
    }
    out
}

/// The bytes as lowercase hex with one space between bytes: `[0x0a, 0x1b]` is `"0a 1b"`.
pub fn to_hex_spaced(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 3);
    for (index, byte) in bytes.iter().enumerate() {
        if index > 0 {
            out.push(' ');
        }
        let _ = write!(out, "{byte:02x}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_forms_spell_every_byte_with_two_lowercase_digits() {
        assert_eq!(to_hex(&[]), "");
        assert_eq!(to_hex_spaced(&[]), "");
        assert_eq!(to_hex(&[0x00, 0x0a, 0xff, 0x7b]), "000aff7b");
        assert_eq!(to_hex_spaced(&[0x00, 0x0a, 0xff, 0x7b]), "00 0a ff 7b");
        assert_eq!(to_hex_spaced(&[0xab]), "ab");
        let all: Vec<u8> = (0..=255).collect();
        let packed = to_hex(&all);
        assert_eq!(packed.len(), 512);
        for (index, pair) in packed.as_bytes().chunks(2).enumerate() {
            let text = std::str::from_utf8(pair).expect("ascii");
            assert_eq!(u8::from_str_radix(text, 16), Ok(index as u8));
            assert_eq!(text, text.to_lowercase());
        }
    }
}
