//! A small `.npy` (version 1.0) reader and writer for NEFF constants.
//!
//! Design choices:
//! - Only what NEFF constants need: a `descr` such as `<f4`, `<f2`, `<i4` or `|u1`, C or Fortran
//!   order flag, and a shape. The header dict is parsed by looking for its three keys, not by a
//!   general Python-literal parser.
//! - [`parse_header`] returns where the data starts instead of copying it, so a large constant is
//!   never duplicated; the data length is checked against `item_size × Π shape` with overflow
//!   checks.
//! - [`encode`] pads the header with spaces to a multiple of 64 bytes and ends it with `\n`, as
//!   numpy does, so files written here load with `numpy.load`.

use super::NeffError;

const MAGIC: &[u8] = b"\x93NUMPY";

/// The header of a `.npy` file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NpyHeader {
    /// The dtype descriptor, such as `<f2`.
    pub descr: String,
    /// Whether the data is in Fortran order.
    pub fortran_order: bool,
    /// The shape; empty for a scalar.
    pub shape: Vec<u64>,
    /// The offset of the data in the file.
    pub data_offset: usize,
}

impl NpyHeader {
    /// The item size in bytes, read from the digits of `descr` (`<f4` → 4), or for the names
    /// ml_dtypes users write as `descr` (`bfloat16`, `float8_e4m3fn`, `float8_e5m2`), their size.
    pub fn item_size(&self) -> Option<u64> {
        match self.descr.as_str() {
            "bfloat16" => Some(2),
            "float8_e4m3fn" | "float8_e5m2" => Some(1),
            descr => descr.get(2..)?.parse().ok(),
        }
    }
}

fn npy_error(context: &str, detail: impl Into<String>) -> NeffError {
    NeffError::Npy { context: context.to_owned(), detail: detail.into() }
}

/// Parses a `.npy` file's header and checks that the data length matches it. `context` names
/// the array in errors (a member name, for instance).
///
/// # Errors
/// [`NeffError::Npy`] for a bad magic, version, header dict or data length.
pub fn parse_header(context: &str, bytes: &[u8]) -> Result<NpyHeader, NeffError> {
    parse_header_prefix(context, bytes, bytes.len() as u64)
}

/// Like [`parse_header`] for a file of `file_len` bytes of which `bytes` is a prefix holding at
/// least the header: a reader of a large file parses the header without reading the data.
///
/// # Errors
/// As [`parse_header`]; a header longer than `bytes` is an error too.
pub fn parse_header_prefix(
    context: &str,
    bytes: &[u8],
    file_len: u64,
) -> Result<NpyHeader, NeffError> {
    if bytes.len() < 10 || &bytes[..6] != MAGIC {
        return Err(npy_error(context, "expected the \\x93NUMPY magic"));
    }
    let (header_len, header_start): (usize, usize) = match bytes[6] {
        1 => (usize::from(u16::from_le_bytes([bytes[8], bytes[9]])), 10),
        2 | 3 if bytes.len() >= 12 => {
            let len = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
            (usize::try_from(len).unwrap_or(usize::MAX), 12)
        }
        major => {
            return Err(npy_error(
                context,
                format!("version {major}.{} is not supported, expected 1.0, 2.0 or 3.0", bytes[7]),
            ));
        }
    };
    let data_offset = header_start
        .checked_add(header_len)
        .filter(|&end| end <= bytes.len())
        .ok_or_else(|| {
            npy_error(
                context,
                format!("header of {header_len} bytes runs past the file of {} bytes", bytes.len()),
            )
        })?;
    let dict = std::str::from_utf8(&bytes[header_start..data_offset])
        .map_err(|_| npy_error(context, "header is not text"))?;
    let descr = quoted_value(dict, "descr")
        .ok_or_else(|| npy_error(context, format!("header has no 'descr': {dict:?}")))?;
    let fortran_order = match raw_value(dict, "fortran_order") {
        Some(value) if value.starts_with("True") => true,
        Some(value) if value.starts_with("False") => false,
        _ => return Err(npy_error(context, format!("header has no 'fortran_order': {dict:?}"))),
    };
    let shape = shape_value(dict)
        .ok_or_else(|| npy_error(context, format!("header has no valid 'shape': {dict:?}")))?;
    let header = NpyHeader { descr, fortran_order, shape, data_offset };
    let item_size = header
        .item_size()
        .ok_or_else(|| npy_error(context, format!("descr {:?} has no item size", header.descr)))?;
    let expected = header
        .shape
        .iter()
        .try_fold(item_size, |product, &dim| product.checked_mul(dim))
        .ok_or_else(|| npy_error(context, "shape overflows the data size"))?;
    let found = file_len.saturating_sub(data_offset as u64);
    if expected != found {
        return Err(npy_error(
            context,
            format!(
                "data is {found} bytes, expected {expected} for {:?} {:?}",
                header.descr, header.shape
            ),
        ));
    }
    Ok(header)
}

/// The text after `'key':` with leading spaces removed.
fn raw_value<'d>(dict: &'d str, key: &str) -> Option<&'d str> {
    let at = dict.find(&format!("'{key}'"))?;
    let rest = dict[at + key.len() + 2..].trim_start();
    Some(rest.strip_prefix(':')?.trim_start())
}

fn quoted_value(dict: &str, key: &str) -> Option<String> {
    let rest = raw_value(dict, key)?.strip_prefix('\'')?;
    Some(rest[..rest.find('\'')?].to_owned())
}

fn shape_value(dict: &str) -> Option<Vec<u64>> {
    let rest = raw_value(dict, "shape")?.strip_prefix('(')?;
    let inside = &rest[..rest.find(')')?];
    inside
        .split(',')
        .map(str::trim)
        .filter(|dim| !dim.is_empty())
        .map(|dim| dim.parse().ok())
        .collect()
}

/// Encodes a C-order `.npy` version 1.0 file.
///
/// # Errors
/// [`NeffError::Npy`] when `descr` is not of the form `<f4`, when `data` does not have
/// `item_size × Π shape` bytes, or when the header would not fit version 1.0.
pub fn encode(descr: &str, shape: &[u64], data: &[u8]) -> Result<Vec<u8>, NeffError> {
    let header = encode_header(descr, shape, data.len() as u64)?;
    let mut out = Vec::with_capacity(header.len() + data.len());
    out.extend_from_slice(&header);
    out.extend_from_slice(data);
    Ok(out)
}

/// The header of the C-order `.npy` version 1.0 file that [`encode`] makes for `data_len`
/// bytes of data, for a writer that writes the data itself (without a whole copy of it).
///
/// # Errors
/// As [`encode`].
pub fn encode_header(descr: &str, shape: &[u64], data_len: u64) -> Result<Vec<u8>, NeffError> {
    let valid_descr = descr.len() >= 3
        && matches!(descr.as_bytes()[0], b'<' | b'>' | b'|' | b'=')
        && descr.as_bytes()[1].is_ascii_alphabetic()
        && descr[2..].bytes().all(|byte| byte.is_ascii_digit());
    if !valid_descr {
        return Err(npy_error("writer", format!("descr {descr:?} is not of the form <f4")));
    }
    let item_size: u64 = descr[2..]
        .parse()
        .map_err(|_| npy_error("writer", format!("descr {descr:?} has no item size")))?;
    let expected = shape.iter().try_fold(item_size, |product, &dim| product.checked_mul(dim));
    if expected != Some(data_len) {
        return Err(npy_error(
            "writer",
            format!("data is {data_len} bytes, expected {expected:?} for {descr:?} {shape:?}"),
        ));
    }
    let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
    let shape_text = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let mut dict =
        format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape_text}, }}");
    let unpadded = MAGIC.len() + 4 + dict.len() + 1;
    dict.push_str(&" ".repeat((64 - unpadded % 64) % 64));
    dict.push('\n');
    let header_len = u16::try_from(dict.len())
        .map_err(|_| npy_error("writer", "header does not fit npy version 1.0"))?;
    let mut out = Vec::with_capacity(MAGIC.len() + 4 + dict.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&header_len.to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_then_parse_round_trips() {
        for (descr, shape) in
            [("<f2", vec![2, 3]), ("|u1", vec![5]), ("<i4", vec![]), ("<f4", vec![0, 7])]
        {
            let item_size: u64 = descr[2..].parse().expect("digits");
            let n_bytes = shape.iter().product::<u64>() * item_size;
            let data: Vec<u8> = (0..n_bytes).map(|byte| byte as u8).collect();
            let file = encode(descr, &shape, &data).expect("valid");
            assert_eq!(file.len() % 64, data.len() % 64);
            let header = parse_header("test", &file).expect("parses");
            assert_eq!(
                (header.descr.as_str(), &header.shape, header.fortran_order),
                (descr, &shape, false)
            );
            assert_eq!(&file[header.data_offset..], &data[..]);
        }
    }

    #[test]
    fn wrong_data_length_is_refused() {
        let mut file = encode("<f4", &[2], &[0; 8]).expect("valid");
        file.pop();
        let error = parse_header("c.npy", &file).expect_err("short data");
        assert!(error.to_string().contains("expected 8"), "{error}");
        assert!(encode("<f4", &[3], &[0; 8]).is_err());
        assert!(encode("f4", &[2], &[0; 8]).is_err());
    }
}
