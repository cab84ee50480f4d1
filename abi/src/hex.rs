//! Bytes as hexadecimal text, the one spelling every message, report and trace uses, and the one
//! reader of that spelling.
//!
//! Two written forms: [`to_hex`] packs the digits (`"0a1b"`, for digests and identifiers) and
//! [`to_hex_spaced`] separates bytes with a space (`"0a 1b"`, for byte strings a reader compares
//! by eye). Both look digits up in a table and write into one preallocated `String`, since the
//! recorder formats every write a program makes; [`push_hex`] and [`push_hex_spaced`] append to a
//! caller's `String` for text that has more around the digits.
//!
//! Two readers: [`parse_hex`] takes hand-written hex (`"00ff"`, `"00 ff"`, `"0000 803f"`: ASCII
//! whitespace anywhere is ignored) and [`parse_hex_spaced`] takes exactly the form
//! [`to_hex_spaced`] writes (two digits a byte, one space between bytes), as trace lines hold it.
//!
//! Case: the writers write lowercase only, so traces compare byte for byte; the readers accept
//! either case, since hand-written specs use both and an uppercase digit is not ambiguous.
//! Both readers walk the text character by character and never index into it, so any text,
//! non-ASCII included, gives bytes or a [`HexError`] saying where and what.

/// The digits, by value.
const DIGITS: &[u8; 16] = b"0123456789abcdef";

/// Appends the bytes as packed lowercase hex digits to `out`.
pub fn push_hex(out: &mut String, bytes: &[u8]) {
    out.reserve(bytes.len() * 2);
    for &byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 15)]));
    }
}

/// Appends the bytes as lowercase hex with one space between bytes to `out`.
pub fn push_hex_spaced(out: &mut String, bytes: &[u8]) {
    out.reserve(bytes.len() * 3);
    for (index, &byte) in bytes.iter().enumerate() {
        if index > 0 {
            out.push(' ');
        }
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 15)]));
    }
}

/// The bytes as packed lowercase hex digits: `[0x0a, 0x1b]` is `"0a1b"`.
pub fn to_hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    push_hex(&mut out, bytes);
    out
}

/// The bytes as lowercase hex with one space between bytes: `[0x0a, 0x1b]` is `"0a 1b"`.
pub fn to_hex_spaced(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 3);
    push_hex_spaced(&mut out, bytes);
    out
}

/// Why a text is not hex bytes. Offsets count bytes of the UTF-8 text from its start.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HexError {
    /// A character that is not a hex digit where a digit belongs.
    #[error("expected a hex digit at byte {offset}, found {found:?}")]
    NotDigit {
        /// Where it is.
        offset: usize,
        /// What is there.
        found: char,
    },
    /// The text ends inside a byte (one digit of two) or after a separating space.
    #[error("expected a hex digit at byte {offset}, found the end of the text")]
    Ended {
        /// The text's length.
        offset: usize,
    },
    /// An odd number of digits, so the last byte has one.
    #[error("expected an even number of hex digits, found {count}")]
    OddDigits {
        /// How many digits the text holds.
        count: usize,
    },
    /// Something other than one space after a byte of the spaced form.
    #[error("expected one space between bytes at byte {offset}, found {found:?}")]
    NotSeparator {
        /// Where it is.
        offset: usize,
        /// What is there.
        found: char,
    },
}

/// The value of one hex digit (either case), or `None` for any other byte.
pub fn digit_value(digit: u8) -> Option<u8> {
    match digit {
        b'0'..=b'9' => Some(digit - b'0'),
        b'a'..=b'f' => Some(digit - b'a' + 10),
        b'A'..=b'F' => Some(digit - b'A' + 10),
        _ => None,
    }
}

/// The value of a character that should be a hex digit, or the error naming it.
fn digit_at(offset: usize, found: char) -> Result<u8, HexError> {
    u8::try_from(found).ok().and_then(digit_value).ok_or(HexError::NotDigit { offset, found })
}

/// Hand-written hex as bytes: pairs of digits (either case), with ASCII whitespace anywhere
/// ignored, so `"00ff"`, `"00 ff"` and `"0000 803f"` all read. The empty text is no bytes.
///
/// # Errors
/// [`HexError::NotDigit`] for any other character (non-ASCII included) and
/// [`HexError::OddDigits`] when the digits do not pair up.
pub fn parse_hex(text: &str) -> Result<Vec<u8>, HexError> {
    let mut out = Vec::with_capacity(text.len() / 2);
    let mut high = None;
    let mut count = 0;
    for (offset, found) in text.char_indices() {
        if found.is_ascii_whitespace() {
            continue;
        }
        let value = digit_at(offset, found)?;
        count += 1;
        match high.take() {
            None => high = Some(value),
            Some(high) => out.push((high << 4) | value),
        }
    }
    if high.is_some() {
        return Err(HexError::OddDigits { count });
    }
    Ok(out)
}

/// Hex bytes in exactly the form [`to_hex_spaced`] writes (either case): two digits a byte, one
/// space between bytes, nothing before or after (`"00 ff"`). The empty text is no bytes.
///
/// # Errors
/// [`HexError::NotDigit`] where a digit belongs, [`HexError::NotSeparator`] where the space
/// belongs, [`HexError::Ended`] for a text that ends inside a byte or after a space.
pub fn parse_hex_spaced(text: &str) -> Result<Vec<u8>, HexError> {
    let mut out = Vec::with_capacity(text.len().div_ceil(3));
    let mut chars = text.char_indices();
    let ended = HexError::Ended { offset: text.len() };
    let digit = |chars: &mut std::str::CharIndices<'_>| -> Result<u8, HexError> {
        let (offset, found) = chars.next().ok_or_else(|| ended.clone())?;
        digit_at(offset, found)
    };
    if text.is_empty() {
        return Ok(out);
    }
    loop {
        let high = digit(&mut chars)?;
        let low = digit(&mut chars)?;
        out.push((high << 4) | low);
        match chars.next() {
            None => return Ok(out),
            Some((_, ' ')) => {}
            Some((offset, found)) => return Err(HexError::NotSeparator { offset, found }),
        }
    }
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

    #[test]
    fn the_pushing_forms_append_after_what_is_there() {
        let mut out = "[".to_owned();
        push_hex_spaced(&mut out, &[0, 0x80]);
        out.push_str("] sha256:");
        push_hex(&mut out, &[0x7f, 0x9c]);
        assert_eq!(out, "[00 80] sha256:7f9c");
    }

    #[test]
    fn every_byte_reads_back_in_both_forms() {
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(parse_hex(&to_hex(&all)), Ok(all.clone()));
        assert_eq!(parse_hex(&to_hex_spaced(&all)), Ok(all.clone()));
        assert_eq!(parse_hex_spaced(&to_hex_spaced(&all)), Ok(all));
    }

    #[test]
    fn the_empty_text_is_no_bytes() {
        assert_eq!(parse_hex(""), Ok(Vec::new()));
        assert_eq!(parse_hex(" \n\t"), Ok(Vec::new()));
        assert_eq!(parse_hex_spaced(""), Ok(Vec::new()));
    }

    #[test]
    fn uppercase_digits_read_as_lowercase_ones() {
        assert_eq!(parse_hex("ABcd"), Ok(vec![0xab, 0xcd]));
        assert_eq!(parse_hex_spaced("AB cd"), Ok(vec![0xab, 0xcd]));
        assert_eq!(digit_value(b'F'), Some(15));
        assert_eq!(digit_value(b'g'), None);
    }

    #[test]
    fn hand_written_hex_ignores_ascii_whitespace_anywhere() {
        assert_eq!(parse_hex("0000 803f"), Ok(vec![0, 0, 0x80, 0x3f]));
        assert_eq!(parse_hex(" 0 0\nf\tf "), Ok(vec![0, 0xff]));
    }

    #[test]
    fn an_odd_number_of_digits_is_refused() {
        assert_eq!(parse_hex("abc"), Err(HexError::OddDigits { count: 3 }));
        assert_eq!(parse_hex("a"), Err(HexError::OddDigits { count: 1 }));
        assert_eq!(parse_hex_spaced("ab c"), Err(HexError::Ended { offset: 4 }));
        assert_eq!(parse_hex_spaced("a"), Err(HexError::Ended { offset: 1 }));
        assert_eq!(
            parse_hex("abc").unwrap_err().to_string(),
            "expected an even number of hex digits, found 3"
        );
    }

    #[test]
    fn non_ascii_text_is_an_error_naming_the_character_never_a_panic() {
        for (text, offset, found) in [("é0", 0, 'é'), ("0é", 1, 'é'), ("ü", 0, 'ü')] {
            assert_eq!(parse_hex(text), Err(HexError::NotDigit { offset, found }), "{text}");
            assert_eq!(parse_hex_spaced(text), Err(HexError::NotDigit { offset, found }), "{text}");
        }
        assert_eq!(parse_hex("00é0"), Err(HexError::NotDigit { offset: 2, found: 'é' }));
        assert_eq!(parse_hex_spaced("00 é0"), Err(HexError::NotDigit { offset: 3, found: 'é' }));
        // A non-ASCII space is not a separator.
        assert_eq!(parse_hex("00\u{a0}ff"), Err(HexError::NotDigit { offset: 2, found: '\u{a0}' }));
        assert_eq!(
            parse_hex_spaced("00\u{a0}ff"),
            Err(HexError::NotSeparator { offset: 2, found: '\u{a0}' })
        );
        assert_eq!(
            parse_hex("0é").unwrap_err().to_string(),
            "expected a hex digit at byte 1, found 'é'"
        );
    }

    #[test]
    fn the_spaced_form_takes_one_space_between_bytes_and_nothing_else() {
        assert_eq!(parse_hex_spaced("00ff"), Err(HexError::NotSeparator { offset: 2, found: 'f' }));
        assert_eq!(parse_hex_spaced("00  ff"), Err(HexError::NotDigit { offset: 3, found: ' ' }));
        assert_eq!(parse_hex_spaced(" 00"), Err(HexError::NotDigit { offset: 0, found: ' ' }));
        assert_eq!(parse_hex_spaced("00 "), Err(HexError::Ended { offset: 3 }));
        assert_eq!(parse_hex_spaced("+f"), Err(HexError::NotDigit { offset: 0, found: '+' }));
        assert_eq!(parse_hex("+f"), Err(HexError::NotDigit { offset: 0, found: '+' }));
    }
}
