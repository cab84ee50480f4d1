//! The protobuf wire format, one field at a time, with byte offsets.
//!
//! prost decodes whole messages and says little about where bad bytes are; this module walks the
//! wire form field by field and keeps every field's exact byte span. Two things are built on it:
//! decode errors that name the byte offset and the field path ([`crate::metaneff::decode`]), and
//! lossless edits that replace one field and copy every other byte as it was
//! ([`crate::metaneff::edit`]), unknown fields included.
//!
//! Nothing here allocates in proportion to a length read from the input: lengths are checked
//! against the bytes actually present before they are used.

use std::fmt;

/// The six wire types of the protobuf encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireType {
    /// 0: a base-128 varint.
    Varint,
    /// 1: eight little-endian bytes.
    I64,
    /// 2: a varint length, then that many bytes.
    Len,
    /// 3: start of a (deprecated) group.
    StartGroup,
    /// 4: end of a group.
    EndGroup,
    /// 5: four little-endian bytes.
    I32,
}

impl WireType {
    /// The wire type for the low three bits of a tag, if valid.
    pub fn from_bits(bits: u64) -> Option<WireType> {
        Some(match bits {
            0 => WireType::Varint,
            1 => WireType::I64,
            2 => WireType::Len,
            3 => WireType::StartGroup,
            4 => WireType::EndGroup,
            5 => WireType::I32,
            _ => return None,
        })
    }

    /// The three-bit value in a tag.
    pub fn bits(self) -> u64 {
        match self {
            WireType::Varint => 0,
            WireType::I64 => 1,
            WireType::Len => 2,
            WireType::StartGroup => 3,
            WireType::EndGroup => 4,
            WireType::I32 => 5,
        }
    }

    /// The name used in protobuf documentation.
    pub fn name(self) -> &'static str {
        match self {
            WireType::Varint => "VARINT",
            WireType::I64 => "I64",
            WireType::Len => "LEN",
            WireType::StartGroup => "SGROUP",
            WireType::EndGroup => "EGROUP",
            WireType::I32 => "I32",
        }
    }
}

impl fmt::Display for WireType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One field as it stands on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field<'a> {
    /// The field number.
    pub number: u32,
    /// The wire type.
    pub wire_type: WireType,
    /// Offset of the tag's first byte, relative to the buffer given to [`fields`].
    pub start: usize,
    /// Offset just past the field's last byte.
    pub end: usize,
    /// Offset of the payload: the varint or fixed bytes, or the first byte after a length prefix,
    /// or the first byte after a group's start tag.
    pub payload_start: usize,
    /// The decoded payload.
    pub value: FieldValue<'a>,
}

/// The payload of a field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldValue<'a> {
    /// A varint, undecoded beyond its 64 bits.
    Varint(u64),
    /// Eight fixed bytes.
    I64(u64),
    /// Four fixed bytes.
    I32(u32),
    /// The bytes of a length-delimited field (without the length prefix).
    Len(&'a [u8]),
    /// The bytes between a group's start and end tags.
    Group(&'a [u8]),
}

/// What is wrong with a wire-format buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WireErrorKind {
    /// The buffer ends inside a varint.
    TruncatedVarint,
    /// A varint longer than ten bytes, or whose tenth byte carries more than one bit.
    VarintTooLong,
    /// A tag whose wire type bits are 6 or 7.
    InvalidWireType(u64),
    /// A tag with field number 0 or above 2^29 - 1.
    InvalidFieldNumber(u64),
    /// A fixed-width field that runs past the end of the buffer.
    TruncatedFixed {
        /// Bytes the field needs.
        needed: usize,
        /// Bytes left in the buffer.
        available: usize,
    },
    /// A length prefix larger than the bytes left.
    LengthOutOfBounds {
        /// The declared length.
        declared: u64,
        /// Bytes left in the buffer.
        available: usize,
    },
    /// A group whose end tag is missing or does not match.
    UnterminatedGroup(u32),
    /// An end-group tag with no group open.
    UnexpectedEndGroup(u32),
    /// Groups nested deeper than [`MAX_DEPTH`].
    TooDeep,
}

impl fmt::Display for WireErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireErrorKind::TruncatedVarint => write!(f, "the bytes end inside a varint"),
            WireErrorKind::VarintTooLong => write!(f, "a varint longer than 64 bits"),
            WireErrorKind::InvalidWireType(bits) => {
                write!(f, "wire type {bits} in a tag, expected 0 to 5")
            }
            WireErrorKind::InvalidFieldNumber(number) => {
                write!(f, "field number {number} in a tag, expected 1 to 536870911")
            }
            WireErrorKind::TruncatedFixed { needed, available } => {
                write!(f, "a fixed-width value needs {needed} bytes, {available} left")
            }
            WireErrorKind::LengthOutOfBounds { declared, available } => {
                write!(f, "a length prefix says {declared} bytes, {available} left")
            }
            WireErrorKind::UnterminatedGroup(number) => {
                write!(f, "group {number} has no matching end tag")
            }
            WireErrorKind::UnexpectedEndGroup(number) => {
                write!(f, "end tag of group {number} with no group open")
            }
            WireErrorKind::TooDeep => write!(f, "groups nested deeper than {MAX_DEPTH}"),
        }
    }
}

/// A malformed buffer: what is wrong and at which byte.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("at byte {offset}: {kind}")]
pub struct WireError {
    /// Offset of the offending byte, relative to the buffer given to [`fields`].
    pub offset: usize,
    /// What is wrong.
    pub kind: WireErrorKind,
}

/// How deeply groups may nest before the input is refused (protobuf implementations use 100).
pub const MAX_DEPTH: usize = 100;

/// Iterates over the fields of a message. After the first error the iterator ends.
pub fn fields(buf: &[u8]) -> Fields<'_> {
    Fields { buf, pos: 0, failed: false }
}

/// The iterator returned by [`fields`].
#[derive(Clone, Debug)]
pub struct Fields<'a> {
    buf: &'a [u8],
    pos: usize,
    failed: bool,
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<Field<'a>, WireError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.buf.len() {
            return None;
        }
        let result = read_field(self.buf, self.pos, 0);
        match &result {
            Ok(field) => self.pos = field.end,
            Err(_) => self.failed = true,
        }
        Some(result)
    }
}

/// Reads a varint at `pos`, returning its value and the offset after it.
///
/// # Errors
/// A [`WireError`] when the buffer ends inside the varint or the varint exceeds 64 bits.
pub fn read_varint(buf: &[u8], pos: usize) -> Result<(u64, usize), WireError> {
    let mut value: u64 = 0;
    for i in 0..10 {
        let Some(&byte) = buf.get(pos + i) else {
            return Err(WireError { offset: pos, kind: WireErrorKind::TruncatedVarint });
        };
        if i == 9 && byte > 1 {
            return Err(WireError { offset: pos, kind: WireErrorKind::VarintTooLong });
        }
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Ok((value, pos + i + 1));
        }
    }
    Err(WireError { offset: pos, kind: WireErrorKind::VarintTooLong })
}

/// Reads a tag at `pos`: field number, wire type and the offset after the tag.
fn read_tag(buf: &[u8], pos: usize) -> Result<(u32, WireType, usize), WireError> {
    let (tag, after) = read_varint(buf, pos)?;
    let wire_type = WireType::from_bits(tag & 7)
        .ok_or(WireError { offset: pos, kind: WireErrorKind::InvalidWireType(tag & 7) })?;
    let number = tag >> 3;
    if number == 0 || number > (1 << 29) - 1 {
        return Err(WireError { offset: pos, kind: WireErrorKind::InvalidFieldNumber(number) });
    }
    // The check above bounds the number to 29 bits.
    let number = u32::try_from(number).unwrap_or(u32::MAX);
    Ok((number, wire_type, after))
}

fn read_fixed<const N: usize>(buf: &[u8], pos: usize) -> Result<[u8; N], WireError> {
    buf.get(pos..pos + N).and_then(|s| <[u8; N]>::try_from(s).ok()).ok_or(WireError {
        offset: pos,
        kind: WireErrorKind::TruncatedFixed { needed: N, available: buf.len().saturating_sub(pos) },
    })
}

fn read_field(buf: &[u8], start: usize, depth: usize) -> Result<Field<'_>, WireError> {
    let (number, wire_type, payload_start) = read_tag(buf, start)?;
    let (value, end) = match wire_type {
        WireType::Varint => {
            let (v, end) = read_varint(buf, payload_start)?;
            (FieldValue::Varint(v), end)
        }
        WireType::I64 => {
            let bytes = read_fixed::<8>(buf, payload_start)?;
            (FieldValue::I64(u64::from_le_bytes(bytes)), payload_start + 8)
        }
        WireType::I32 => {
            let bytes = read_fixed::<4>(buf, payload_start)?;
            (FieldValue::I32(u32::from_le_bytes(bytes)), payload_start + 4)
        }
        WireType::Len => {
            let (declared, data_start) = read_varint(buf, payload_start)?;
            let available = buf.len() - data_start;
            let len = usize::try_from(declared).ok().filter(|&len| len <= available).ok_or(
                WireError {
                    offset: payload_start,
                    kind: WireErrorKind::LengthOutOfBounds { declared, available },
                },
            )?;
            (FieldValue::Len(&buf[data_start..data_start + len]), data_start + len)
        }
        WireType::StartGroup => {
            if depth >= MAX_DEPTH {
                return Err(WireError { offset: start, kind: WireErrorKind::TooDeep });
            }
            let mut pos = payload_start;
            loop {
                if pos >= buf.len() {
                    return Err(WireError {
                        offset: start,
                        kind: WireErrorKind::UnterminatedGroup(number),
                    });
                }
                let (inner_number, inner_type, after) = read_tag(buf, pos)?;
                if inner_type == WireType::EndGroup {
                    if inner_number != number {
                        return Err(WireError {
                            offset: pos,
                            kind: WireErrorKind::UnterminatedGroup(number),
                        });
                    }
                    break (FieldValue::Group(&buf[payload_start..pos]), after);
                }
                pos = read_field(buf, pos, depth + 1)?.end;
            }
        }
        WireType::EndGroup => {
            return Err(WireError {
                offset: start,
                kind: WireErrorKind::UnexpectedEndGroup(number),
            });
        }
    };
    Ok(Field { number, wire_type, start, end, payload_start, value })
}

/// Appends `value` as a varint.
pub fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Appends a tag.
pub fn put_tag(out: &mut Vec<u8>, number: u32, wire_type: WireType) {
    put_varint(out, (u64::from(number) << 3) | wire_type.bits());
}

/// Appends a length-delimited field.
pub fn put_len_field(out: &mut Vec<u8>, number: u32, payload: &[u8]) {
    put_tag(out, number, WireType::Len);
    put_varint(out, payload.len() as u64);
    out.extend_from_slice(payload);
}

/// Appends a varint field.
pub fn put_varint_field(out: &mut Vec<u8>, number: u32, value: u64) {
    put_tag(out, number, WireType::Varint);
    put_varint(out, value);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(buf: &[u8]) -> Result<Vec<Field<'_>>, WireError> {
        fields(buf).collect()
    }

    #[test]
    fn varints_round_trip_at_the_edges() {
        for value in [0, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX - 1, u64::MAX] {
            let mut out = Vec::new();
            put_varint(&mut out, value);
            assert_eq!(read_varint(&out, 0), Ok((value, out.len())), "value {value}");
        }
    }

    #[test]
    fn spans_cover_each_field_exactly() {
        // field 1 LEN "ab", field 7 varint 1, field 99 varint 5.
        let buf = [0x0a, 0x02, b'a', b'b', 0x38, 0x01, 0x98, 0x06, 0x05];
        let parsed = all(&buf).unwrap();
        assert_eq!(parsed.len(), 3);
        assert_eq!((parsed[0].number, parsed[0].start, parsed[0].end), (1, 0, 4));
        assert_eq!(parsed[0].value, FieldValue::Len(b"ab"));
        assert_eq!((parsed[1].number, parsed[1].value), (7, FieldValue::Varint(1)));
        assert_eq!((parsed[2].number, parsed[2].start, parsed[2].end), (99, 6, 9));
    }

    #[test]
    fn malformed_buffers_name_the_offset() {
        let check = |buf: &[u8], offset: usize, kind: WireErrorKind| {
            assert_eq!(all(buf), Err(WireError { offset, kind }), "{buf:02x?}");
        };
        check(
            &[0x0a, 0x05, 1, 2],
            1,
            WireErrorKind::LengthOutOfBounds { declared: 5, available: 2 },
        );
        check(&[0x08, 0x80], 1, WireErrorKind::TruncatedVarint);
        check(&[0x0e], 0, WireErrorKind::InvalidWireType(6));
        check(&[0x00, 0x01], 0, WireErrorKind::InvalidFieldNumber(0));
        check(&[0x09, 1, 2, 3], 1, WireErrorKind::TruncatedFixed { needed: 8, available: 3 });
        check(&[0x0b, 0x08, 0x01], 0, WireErrorKind::UnterminatedGroup(1));
        check(&[0x0c], 0, WireErrorKind::UnexpectedEndGroup(1));
        let mut eleven = vec![0x08];
        eleven.extend([0xff; 10]);
        eleven.push(0x01);
        check(&eleven, 1, WireErrorKind::VarintTooLong);
    }

    #[test]
    fn groups_are_kept_whole_and_depth_is_bounded() {
        // group 1 { field 2 varint 3 } then field 3 varint 4.
        let buf = [0x0b, 0x10, 0x03, 0x0c, 0x18, 0x04];
        let parsed = all(&buf).unwrap();
        assert_eq!(parsed[0].value, FieldValue::Group(&[0x10, 0x03]));
        assert_eq!(parsed[0].end, 4);
        let deep: Vec<u8> = std::iter::repeat_n(0x0b, MAX_DEPTH + 1).collect();
        assert_eq!(all(&deep).unwrap_err().kind, WireErrorKind::TooDeep);
    }
}
