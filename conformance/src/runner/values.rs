//! Element values, hex and tensor comparisons shared by the steps.

use abi::dtype::{ScalarType, decode_elements, encode_element};
use abi::runtime::{Framework, Placement, TensorInfo, TensorUsage};
use bind::HostTensor;

use super::StepResult;
use crate::spec::{ExpectedTensorInfo, FrameworkName, TensorPlacement, TensorValue, Usage};

/// The runtime's placement for a step's (default `DEVICE`).
pub(super) fn placement(placement: Option<TensorPlacement>) -> Placement {
    match placement.unwrap_or(TensorPlacement::Device) {
        TensorPlacement::Device => Placement::Device,
        TensorPlacement::Host => Placement::Host,
        TensorPlacement::Virtual => Placement::Virtual,
    }
}

/// The runtime's framework for a step's (default `NO_FW`).
pub(super) fn framework(framework: Option<FrameworkName>) -> Framework {
    match framework.unwrap_or(FrameworkName::NoFw) {
        FrameworkName::Invalid => Framework::Invalid,
        FrameworkName::NoFw => Framework::NoFw,
        FrameworkName::Tensorflow => Framework::Tensorflow,
        FrameworkName::Pytorch => Framework::Pytorch,
        FrameworkName::Mxnet => Framework::Mxnet,
        FrameworkName::Precheck => Framework::Precheck,
    }
}

/// The spec's name for a tensor usage.
fn usage(usage: TensorUsage) -> Usage {
    match usage {
        TensorUsage::Input => Usage::Input,
        TensorUsage::Output => Usage::Output,
    }
}

/// The bytes of `values` as elements of `scalar_type`.
pub(super) fn encode_values(scalar_type: ScalarType, values: &[f64]) -> Result<Vec<u8>, String> {
    let n_bytes = values.len().checked_mul(scalar_type.item_size() as usize).ok_or_else(|| {
        format!("{} {} values overflow the address space", values.len(), scalar_type.name())
    })?;
    let mut bytes = Vec::new();
    bytes.try_reserve(n_bytes).map_err(|e| format!("{n_bytes} bytes of values: {e}"))?;
    for &value in values {
        encode_element(scalar_type, value, &mut bytes).map_err(|e| e.to_string())?;
    }
    Ok(bytes)
}

/// Hex bytes as a spec writes them (`"0000803f"`, `"00 00 80 3f"`), read by `abi::hex`.
pub(super) fn parse_hex(hex: &str) -> Result<Vec<u8>, String> {
    abi::hex::parse_hex(hex).map_err(|error| format!("hex {hex:?}: {error}"))
}

pub(super) use abi::hex::to_hex_spaced as hex;

/// The bytes of a [`TensorValue`].
pub(super) fn value_bytes(value: &TensorValue) -> Result<(ScalarType, Vec<u8>), String> {
    let scalar_type = value.dtype.0;
    let n_elements = abi::dtype::n_elements(&value.shape).map_err(|e| e.to_string())?;
    let n_elements = usize::try_from(n_elements)
        .map_err(|_| format!("shape {:?} has more elements than this host holds", value.shape))?;
    let bytes = match (&value.values, value.fill, &value.hex) {
        (Some(values), None, None) => {
            if values.len() != n_elements {
                return Err(format!(
                    "{} values for shape {:?}, expected {n_elements}",
                    values.len(),
                    value.shape
                ));
            }
            encode_values(scalar_type, values)?
        }
        (None, Some(fill), None) => fill_bytes(scalar_type, fill, n_elements)?,
        (None, None, Some(text)) => parse_hex(text)?,
        (None, None, None) => fill_bytes(scalar_type, 0.0, n_elements)?,
        _ => return Err("give at most one of values, fill and hex".to_owned()),
    };
    Ok((scalar_type, bytes))
}

/// `n_elements` elements equal to `value`.
fn fill_bytes(scalar_type: ScalarType, value: f64, n_elements: usize) -> Result<Vec<u8>, String> {
    let one = encode_values(scalar_type, &[value])?;
    let n_bytes = n_elements.checked_mul(one.len()).ok_or_else(|| {
        format!("{n_elements} {} elements overflow the address space", scalar_type.name())
    })?;
    let mut bytes = Vec::new();
    bytes.try_reserve(n_bytes).map_err(|e| format!("{n_bytes} bytes of elements: {e}"))?;
    for _ in 0..n_elements {
        bytes.extend_from_slice(&one);
    }
    Ok(bytes)
}

pub(super) fn host_tensor(value: &TensorValue) -> Result<HostTensor, String> {
    let (scalar_type, bytes) = value_bytes(value)?;
    HostTensor::from_bytes(scalar_type, &value.shape, bytes).map_err(|e| e.to_string())
}

/// Whether two byte strings hold the same elements (any NaN equals any NaN; raw bytes for types
/// without number conversion).
pub(super) fn same_elements(scalar_type: ScalarType, want: &[u8], got: &[u8]) -> bool {
    match (decode_elements(scalar_type, want), decode_elements(scalar_type, got)) {
        (Some(a), Some(b)) => {
            a.len() == b.len()
                && a.iter().zip(&b).all(|(x, y)| x == y || (x.is_nan() && y.is_nan()))
        }
        _ => want == got,
    }
}

/// Compares an output with the expected value: dtype, shape and elements (NaN equals NaN).
pub(super) fn check_tensor(what: &str, got: &HostTensor, want: &TensorValue) -> StepResult {
    let (want_type, want_bytes) = value_bytes(want)?;
    if got.scalar_type() != want_type || got.shape() != want.shape.as_slice() {
        return Err(format!(
            "{what}: expected {} {:?}, got {} {:?}",
            want_type.name(),
            want.shape,
            got.scalar_type().name(),
            got.shape()
        ));
    }
    let got_bytes = got.to_bytes();
    if same_elements(want_type, &want_bytes, &got_bytes) {
        Ok(())
    } else {
        let show = |bytes: &[u8]| match decode_elements(want_type, bytes) {
            Some(values) => format!("{values:?}"),
            None => hex(bytes),
        };
        Err(format!("{what}: expected {}, got {}", show(&want_bytes), show(&got_bytes)))
    }
}

/// Compares `nrt_get_model_tensor_info` entries with the expected ones, in order.
pub(super) fn check_tensor_info(got: &[TensorInfo], want: &[ExpectedTensorInfo]) -> StepResult {
    let show = |info: &TensorInfo| format!("{} {} {}", info.name, usage(info.usage), info.size);
    let same = got.len() == want.len()
        && got.iter().zip(want).all(|(g, w)| {
            g.name == w.name
                && usage(g.usage) == w.usage
                && w.size.is_none_or(|size| size == g.size)
        });
    if same {
        return Ok(());
    }
    let want: Vec<String> = want
        .iter()
        .map(|w| {
            format!("{} {} {}", w.name, w.usage, w.size.map_or("*".to_owned(), |s| s.to_string()))
        })
        .collect();
    Err(format!(
        "tensor info [{}], expected [{}]",
        got.iter().map(show).collect::<Vec<_>>().join(", "),
        want.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_written_hex_reads_packed_or_spaced_and_refuses_the_rest_without_panicking() {
        assert_eq!(parse_hex("0000803f"), Ok(vec![0, 0, 0x80, 0x3f]));
        assert_eq!(parse_hex("00 00 80 3F"), Ok(vec![0, 0, 0x80, 0x3f]));
        assert_eq!(parse_hex(""), Ok(Vec::new()));
        assert_eq!(
            parse_hex("abc"),
            Err("hex \"abc\": expected an even number of hex digits, found 3".to_owned())
        );
        for text in ["é0", "0é", "ü", "00é0"] {
            assert!(parse_hex(text).is_err(), "{text}");
        }
    }
}
