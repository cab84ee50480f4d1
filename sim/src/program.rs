//! The simulated device program: the `sim/program.json` member a NEFF may carry.
//!
//! A real NEFF's engine programs cannot run off-device, so the simulator runs a small list of
//! operations over variable names instead (DESIGN.md, "The simulated device program"). It is
//! enough to make binding observable (an output that is a function of named inputs reveals a
//! mis-binding), to update state through aliasing, and to trigger 1003.
//!
//! Schema (version 1), JSON:
//! `{"version": 1, "dtypes": {"tmp": "float32"}, "ops": [{"op": "copy", "dst": "o", "src": "i"},
//! {"op": "fill", "dst": "v", "value": 1.5}, {"op": "add", "dst": "o", "a": "x", "b": "y"},
//! {"op": "mul", ...}, {"op": "scale", "dst": "o", "src": "x", "factor": 2.0},
//! {"op": "nan", "dst": "o", "index": 0}]}`.
//!
//! Design choices:
//! - **Element types come from the NEFF signature** (its dltype strings) for inputs and outputs;
//!   the optional `dtypes` map names them for other variables (scratch, constants). A variable
//!   with no known type is raw bytes: `copy` works on it, `fill` takes a byte value (0..=255),
//!   arithmetic and `nan` are refused.
//! - **Every check happens at load.** [`compile`] resolves names to slots and checks types and
//!   sizes, so a bad program is an `NRT_INVALID` from `nrt_load` naming the op index, and
//!   [`CompiledProgram::run`] cannot fail.
//! - **Arithmetic** is done in f64 and rounded to the element type (f16 and bf16 through f32, as
//!   the engines compute in fp32); integers wrap, and `scale`/`fill` of integers saturate.
//! - **f16 and bf16 conversions are `abi::dtype`'s** (round to nearest even, tested exhaustively
//!   there), so the simulator and the vector tools round the same way; no `half` dependency.

use std::collections::BTreeMap;

use abi::dtype::{Dltype, bf16_bits_to_f32, f16_bits_to_f32, f32_to_bf16_bits, f32_to_f16_bits};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The NEFF member that holds the program.
pub const PROGRAM_MEMBER: &str = "sim/program.json";

/// The schema version this simulator runs.
pub const PROGRAM_VERSION: u64 = 1;

/// One operation of a device program.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase", deny_unknown_fields)]
pub enum ProgramOp {
    /// `dst = src`, byte for byte (same sizes).
    Copy {
        /// The variable written.
        dst: String,
        /// The variable read.
        src: String,
    },
    /// Every element of `dst` set to `value` (a byte value for untyped variables).
    Fill {
        /// The variable written.
        dst: String,
        /// The value.
        value: f64,
    },
    /// `dst = a + b`, elementwise.
    Add {
        /// The variable written.
        dst: String,
        /// The first operand.
        a: String,
        /// The second operand.
        b: String,
    },
    /// `dst = a × b`, elementwise.
    Mul {
        /// The variable written.
        dst: String,
        /// The first operand.
        a: String,
        /// The second operand.
        b: String,
    },
    /// `dst = src × factor`, elementwise.
    Scale {
        /// The variable written.
        dst: String,
        /// The variable read.
        src: String,
        /// The factor.
        factor: f64,
    },
    /// Element `index` of a floating-point `dst` set to NaN.
    Nan {
        /// The variable written.
        dst: String,
        /// The element index.
        index: u64,
    },
}

/// A device program as written in `sim/program.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeviceProgram {
    /// The schema version, [`PROGRAM_VERSION`].
    pub version: u64,
    /// Element types (dltype strings) of variables the signature does not type.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub dtypes: BTreeMap<String, String>,
    /// The operations, run in order at each launch.
    pub ops: Vec<ProgramOp>,
}

/// Why a device program was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProgramError {
    /// The program as a whole is malformed.
    #[error("sim program: {detail}")]
    Program {
        /// What is wrong.
        detail: String,
    },
    /// One operation is malformed or does not fit the model.
    #[error("sim program op {op_index}: {detail}")]
    Op {
        /// The index of the op in `ops`.
        op_index: usize,
        /// What is wrong.
        detail: String,
    },
}

impl DeviceProgram {
    /// A version-1 program of `ops`.
    pub fn new(ops: Vec<ProgramOp>) -> DeviceProgram {
        DeviceProgram { version: PROGRAM_VERSION, dtypes: BTreeMap::new(), ops }
    }

    /// Parses `sim/program.json`.
    ///
    /// # Errors
    /// [`ProgramError::Program`] for bad JSON, a missing or unknown version, or a missing `ops`
    /// list; [`ProgramError::Op`] naming the index of a malformed op.
    pub fn from_json(bytes: &[u8]) -> Result<DeviceProgram, ProgramError> {
        let program_error = |detail: String| ProgramError::Program { detail };
        let value: Value = serde_json::from_slice(bytes)
            .map_err(|err| program_error(format!("not valid json: {err}")))?;
        let Value::Object(mut root) = value else {
            return Err(program_error(format!("expected a json object, found {value}")));
        };
        let version = root.get("version").and_then(Value::as_u64);
        if version != Some(PROGRAM_VERSION) {
            return Err(program_error(format!(
                "version is {}, expected {PROGRAM_VERSION}",
                root.get("version").map_or("missing".to_owned(), Value::to_string)
            )));
        }
        let dtypes = match root.remove("dtypes") {
            None => BTreeMap::new(),
            Some(dtypes) => serde_json::from_value(dtypes).map_err(|err| {
                program_error(format!("dtypes must map variable names to dltype strings: {err}"))
            })?,
        };
        let Some(Value::Array(raw_ops)) = root.remove("ops") else {
            return Err(program_error("ops must be a list of operations".to_owned()));
        };
        if let Some(key) = root.keys().find(|key| *key != "version") {
            return Err(program_error(format!(
                "unknown field {key:?}, expected version, dtypes, ops"
            )));
        }
        let ops = raw_ops
            .into_iter()
            .enumerate()
            .map(|(op_index, raw)| {
                serde_json::from_value(raw)
                    .map_err(|err| ProgramError::Op { op_index, detail: err.to_string() })
            })
            .collect::<Result<Vec<ProgramOp>, ProgramError>>()?;
        Ok(DeviceProgram { version: PROGRAM_VERSION, dtypes, ops })
    }

    /// The JSON bytes of the program, for a NEFF writer's extra members under
    /// [`PROGRAM_MEMBER`].
    pub fn to_json_bytes(&self) -> Vec<u8> {
        // A program holds only strings and finite-or-not floats; serde_json writes non-finite
        // floats as null rather than failing, so this cannot fail.
        serde_json::to_vec_pretty(self).unwrap_or_default()
    }
}

/// The element type of a variable, as far as the program cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElementType {
    /// IEEE binary32.
    F32,
    /// IEEE binary16.
    F16,
    /// bfloat16.
    Bf16,
    /// IEEE binary64.
    F64,
    /// An integer of `bytes` bytes, signed or not.
    Int {
        /// The width in bytes (1, 2, 4 or 8).
        bytes: usize,
        /// Whether it is two's-complement signed.
        signed: bool,
    },
    /// A type the program cannot compute with (bool, fp8): bytes only.
    Opaque {
        /// The item size in bytes.
        bytes: usize,
    },
}

impl ElementType {
    /// The element type of a neff.json dltype.
    pub fn of_dltype(dltype: Dltype) -> ElementType {
        let int = |bytes, signed| ElementType::Int { bytes, signed };
        match dltype {
            Dltype::Float32 => ElementType::F32,
            Dltype::Float16 => ElementType::F16,
            Dltype::BFloat16 => ElementType::Bf16,
            Dltype::Float64 => ElementType::F64,
            Dltype::Int8 => int(1, true),
            Dltype::Uint8 => int(1, false),
            Dltype::Int16 => int(2, true),
            Dltype::Uint16 => int(2, false),
            Dltype::Int32 => int(4, true),
            Dltype::Uint32 => int(4, false),
            Dltype::Int64 => int(8, true),
            Dltype::Uint64 => int(8, false),
            Dltype::Bool | Dltype::Float8E4m3fn | Dltype::Float8E5m2 => {
                ElementType::Opaque { bytes: 1 }
            }
        }
    }

    /// The size of one element in bytes.
    pub fn item_size(self) -> usize {
        match self {
            ElementType::F32 => 4,
            ElementType::F16 | ElementType::Bf16 => 2,
            ElementType::F64 => 8,
            ElementType::Int { bytes, .. } | ElementType::Opaque { bytes } => bytes,
        }
    }

    fn is_float(self) -> bool {
        matches!(self, ElementType::F32 | ElementType::F16 | ElementType::Bf16 | ElementType::F64)
    }

    fn is_numeric(self) -> bool {
        !matches!(self, ElementType::Opaque { .. })
    }

    /// Element `index` as f64 (floats) or as the integer's value.
    fn load(self, bytes: &[u8], index: usize) -> Number {
        let size = self.item_size();
        let at = index * size;
        let mut raw = [0u8; 8];
        raw[..size].copy_from_slice(&bytes[at..at + size]);
        let bits = u64::from_le_bytes(raw);
        match self {
            ElementType::F32 => Number::Float(f64::from(f32::from_bits(bits as u32))),
            ElementType::F16 => Number::Float(f64::from(f16_bits_to_f32(bits as u16))),
            ElementType::Bf16 => Number::Float(f64::from(bf16_bits_to_f32(bits as u16))),
            ElementType::F64 => Number::Float(f64::from_bits(bits)),
            ElementType::Int { bytes, signed } => {
                let shift = 64 - 8 * bytes as u32;
                let value = if signed {
                    i128::from(((bits << shift) as i64) >> shift)
                } else {
                    i128::from(bits)
                };
                Number::Int(value)
            }
            ElementType::Opaque { .. } => Number::Int(i128::from(bits)),
        }
    }

    /// Stores `value` at element `index`, rounding floats and truncating integers.
    fn store(self, bytes: &mut [u8], index: usize, value: Number) {
        let bits: u64 = match (self, value) {
            (ElementType::F32, v) => u64::from((v.as_f64() as f32).to_bits()),
            (ElementType::F16, v) => u64::from(f32_to_f16_bits(v.as_f64() as f32)),
            (ElementType::Bf16, v) => u64::from(f32_to_bf16_bits(v.as_f64() as f32)),
            (ElementType::F64, v) => v.as_f64().to_bits(),
            (ElementType::Int { .. } | ElementType::Opaque { .. }, Number::Int(v)) => v as u64,
            (ElementType::Int { bytes, signed }, Number::Float(v)) => {
                saturate_to_int(v, bytes, signed)
            }
            (ElementType::Opaque { .. }, Number::Float(v)) => v as u64,
        };
        let size = self.item_size();
        let at = index * size;
        bytes[at..at + size].copy_from_slice(&bits.to_le_bytes()[..size]);
    }
}

/// The integer nearest `value` within the type's range (NaN → 0), as raw little-endian bits.
fn saturate_to_int(value: f64, bytes: usize, signed: bool) -> u64 {
    let value = value.round();
    match (bytes, signed) {
        (1, true) => value as i8 as u64,
        (1, false) => u64::from(value as u8),
        (2, true) => value as i16 as u64,
        (2, false) => u64::from(value as u16),
        (4, true) => value as i32 as u64,
        (4, false) => u64::from(value as u32),
        (_, true) => value as i64 as u64,
        (_, false) => value as u64,
    }
}

#[derive(Clone, Copy)]
enum Number {
    Float(f64),
    Int(i128),
}

impl Number {
    fn as_f64(self) -> f64 {
        match self {
            Number::Float(v) => v,
            Number::Int(v) => v as f64,
        }
    }
}

/// What the compiler needs to know about one variable of the model.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ProgramVar {
    /// The slot the variable lives in at run time.
    pub(crate) slot: usize,
    /// Its size in bytes.
    pub(crate) size: u64,
    /// Its element type, when the signature says.
    pub(crate) element: Option<ElementType>,
    /// Whether the program may address it (false for pointer tables and the like).
    pub(crate) addressable: bool,
}

#[derive(Clone, Copy, Debug)]
enum BinaryKind {
    Add,
    Mul,
}

#[derive(Clone, Debug)]
enum Op {
    Copy { dst: usize, src: usize, len: usize },
    FillBytes { dst: usize, len: usize, byte: u8 },
    Fill { dst: usize, element: ElementType, n: usize, value: f64 },
    Binary { kind: BinaryKind, dst: usize, a: usize, b: usize, element: ElementType, n: usize },
    Scale { dst: usize, src: usize, element: ElementType, n: usize, factor: f64 },
    Nan { dst: usize, element: ElementType, index: usize },
}

/// A program checked against a model, ready to run.
#[derive(Clone, Debug)]
pub(crate) struct CompiledProgram {
    ops: Vec<Op>,
}

/// Resolves and checks `program` against the model's variables (`lookup` by name).
///
/// # Errors
/// A [`ProgramError`] naming the op and what does not fit: an unknown or unaddressable
/// variable, mismatched sizes or element types, arithmetic on raw bytes, a NaN in an integer, an
/// index out of range.
pub(crate) fn compile(
    program: &DeviceProgram,
    lookup: &dyn Fn(&str) -> Option<ProgramVar>,
) -> Result<CompiledProgram, ProgramError> {
    let mut declared: BTreeMap<&str, ElementType> = BTreeMap::new();
    for (name, dtype) in &program.dtypes {
        let dltype = Dltype::from_name(dtype)
            .map_err(|err| ProgramError::Program { detail: format!("dtypes.{name}: {err}") })?;
        let element = ElementType::of_dltype(dltype);
        match lookup(name) {
            None => {
                return Err(ProgramError::Program {
                    detail: format!("dtypes names variable {name:?}, which the neff does not have"),
                });
            }
            Some(var) if var.element.is_some_and(|known| known != element) => {
                return Err(ProgramError::Program {
                    detail: format!(
                        "dtypes gives {name:?} {dtype}, expected the signature's {:?}",
                        var.element
                    ),
                });
            }
            Some(_) => {
                declared.insert(name, element);
            }
        }
    }
    let ops = program
        .ops
        .iter()
        .enumerate()
        .map(|(op_index, op)| {
            compile_op(op, &|name| {
                let mut var = lookup(name).ok_or_else(|| {
                    format!("variable {name:?} is not in the neff's variable table")
                })?;
                if !var.addressable {
                    return Err(format!(
                        "variable {name:?} has no memory the sim program can address"
                    ));
                }
                if let Some(&element) = declared.get(name) {
                    var.element = Some(element);
                }
                Ok(var)
            })
            .map_err(|detail| ProgramError::Op { op_index, detail })
        })
        .collect::<Result<Vec<Op>, ProgramError>>()?;
    Ok(CompiledProgram { ops })
}

fn numeric(name: &str, var: ProgramVar) -> Result<(ElementType, usize), String> {
    match var.element {
        Some(element) if element.is_numeric() => {
            let size = element.item_size() as u64;
            if var.size % size != 0 {
                return Err(format!(
                    "variable {name:?} has {} bytes, not a whole number of {size}-byte elements",
                    var.size
                ));
            }
            Ok((element, (var.size / size) as usize))
        }
        Some(element) => {
            Err(format!("variable {name:?} has element type {element:?}, expected a number type"))
        }
        None => Err(format!(
            "variable {name:?} has no known element type, expected a dltype from the signature or the program's dtypes"
        )),
    }
}

fn same_shape(
    dst: (&str, ElementType, usize),
    other: (&str, ElementType, usize),
) -> Result<(), String> {
    if dst.1 != other.1 || dst.2 != other.2 {
        return Err(format!(
            "variable {:?} is {} x {:?} but {:?} is {} x {:?}, expected the same element type and count",
            dst.0, dst.2, dst.1, other.0, other.2, other.1
        ));
    }
    Ok(())
}

fn compile_op(
    op: &ProgramOp,
    var: &dyn Fn(&str) -> Result<ProgramVar, String>,
) -> Result<Op, String> {
    match op {
        ProgramOp::Copy { dst, src } => {
            let (d, s) = (var(dst)?, var(src)?);
            if d.size != s.size {
                return Err(format!(
                    "copy from {src:?} ({} bytes) to {dst:?} ({} bytes), expected equal sizes",
                    s.size, d.size
                ));
            }
            Ok(Op::Copy { dst: d.slot, src: s.slot, len: d.size as usize })
        }
        ProgramOp::Fill { dst, value } => {
            let d = var(dst)?;
            match d.element {
                Some(element) if element.is_numeric() => {
                    let (element, n) = numeric(dst, d)?;
                    Ok(Op::Fill { dst: d.slot, element, n, value: *value })
                }
                _ => {
                    let is_byte = value.fract() == 0.0 && (0.0..=255.0).contains(value);
                    if !is_byte {
                        return Err(format!(
                            "fill of untyped variable {dst:?} with {value}, expected a byte value 0..=255"
                        ));
                    }
                    Ok(Op::FillBytes { dst: d.slot, len: d.size as usize, byte: *value as u8 })
                }
            }
        }
        ProgramOp::Add { dst, a, b } | ProgramOp::Mul { dst, a, b } => {
            let kind =
                if matches!(op, ProgramOp::Add { .. }) { BinaryKind::Add } else { BinaryKind::Mul };
            let (d, va, vb) = (var(dst)?, var(a)?, var(b)?);
            let (de, dn) = numeric(dst, d)?;
            let (ae, an) = numeric(a, va)?;
            let (be, bn) = numeric(b, vb)?;
            same_shape((dst, de, dn), (a, ae, an))?;
            same_shape((dst, de, dn), (b, be, bn))?;
            Ok(Op::Binary { kind, dst: d.slot, a: va.slot, b: vb.slot, element: de, n: dn })
        }
        ProgramOp::Scale { dst, src, factor } => {
            let (d, s) = (var(dst)?, var(src)?);
            let (de, dn) = numeric(dst, d)?;
            let (se, sn) = numeric(src, s)?;
            same_shape((dst, de, dn), (src, se, sn))?;
            Ok(Op::Scale { dst: d.slot, src: s.slot, element: de, n: dn, factor: *factor })
        }
        ProgramOp::Nan { dst, index } => {
            let d = var(dst)?;
            let (element, n) = numeric(dst, d)?;
            if !element.is_float() {
                return Err(format!(
                    "nan into {dst:?} of element type {element:?}, expected a floating-point variable"
                ));
            }
            if *index >= n as u64 {
                return Err(format!(
                    "nan at index {index} of {dst:?}, expected an index below its {n} elements"
                ));
            }
            Ok(Op::Nan { dst: d.slot, element, index: *index as usize })
        }
    }
}

impl CompiledProgram {
    /// Runs every op over `memory` (a core's HBM), where slot `i` starts at `slot_starts[i]`.
    /// Cannot fail: [`compile`] checked sizes, and the runtime placed every slot in bounds.
    pub(crate) fn run(&self, memory: &mut [u8], slot_starts: &[usize]) {
        for op in &self.ops {
            match *op {
                Op::Copy { dst, src, len } => {
                    let from = slot_starts[src];
                    memory.copy_within(from..from + len, slot_starts[dst]);
                }
                Op::FillBytes { dst, len, byte } => {
                    let at = slot_starts[dst];
                    memory[at..at + len].fill(byte);
                }
                Op::Fill { dst, element, n, value } => {
                    let region = &mut memory[slot_starts[dst]..];
                    for index in 0..n {
                        element.store(region, index, Number::Float(value));
                    }
                }
                Op::Binary { kind, dst, a, b, element, n } => {
                    let item = element.item_size();
                    for index in 0..n {
                        let x = element.load(&memory[slot_starts[a]..], index);
                        let y = element.load(&memory[slot_starts[b]..], index);
                        let result = match (kind, x, y) {
                            (BinaryKind::Add, Number::Int(x), Number::Int(y)) => {
                                Number::Int(x.wrapping_add(y))
                            }
                            (BinaryKind::Mul, Number::Int(x), Number::Int(y)) => {
                                Number::Int(x.wrapping_mul(y))
                            }
                            (BinaryKind::Add, x, y) => Number::Float(x.as_f64() + y.as_f64()),
                            (BinaryKind::Mul, x, y) => Number::Float(x.as_f64() * y.as_f64()),
                        };
                        let at = slot_starts[dst];
                        element.store(&mut memory[at..at + n * item], index, result);
                    }
                }
                Op::Scale { dst, src, element, n, factor } => {
                    for index in 0..n {
                        let x = element.load(&memory[slot_starts[src]..], index);
                        let at = slot_starts[dst];
                        element.store(&mut memory[at..], index, Number::Float(x.as_f64() * factor));
                    }
                }
                Op::Nan { dst, element, index } => {
                    element.store(&mut memory[slot_starts[dst]..], index, Number::Float(f64::NAN));
                }
            }
        }
    }
}

/// Whether `bytes`, read as elements of `element`, hold a NaN (never for non-float types).
pub(crate) fn holds_nan(element: ElementType, bytes: &[u8]) -> bool {
    match element {
        ElementType::F32 => {
            bytes.chunks_exact(4).any(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]).is_nan())
        }
        ElementType::F16 => bytes.chunks_exact(2).any(|c| {
            let h = u16::from_le_bytes([c[0], c[1]]);
            h & 0x7c00 == 0x7c00 && h & 0x03ff != 0
        }),
        ElementType::Bf16 => bytes.chunks_exact(2).any(|c| {
            let h = u16::from_le_bytes([c[0], c[1]]);
            h & 0x7f80 == 0x7f80 && h & 0x007f != 0
        }),
        ElementType::F64 => bytes.chunks_exact(8).any(|c| {
            let mut raw = [0u8; 8];
            raw.copy_from_slice(c);
            f64::from_le_bytes(raw).is_nan()
        }),
        ElementType::Int { .. } | ElementType::Opaque { .. } => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_types_compute_through_f32_and_round_to_nearest_even() {
        let half =
            |slot, element| ProgramVar { slot, size: 4, element: Some(element), addressable: true };
        let lookup = |name: &str| match name {
            "h" => Some(half(0, ElementType::F16)),
            "b" => Some(half(1, ElementType::Bf16)),
            _ => None,
        };
        let program = DeviceProgram::new(vec![
            ProgramOp::Fill { dst: "h".into(), value: 1.5 },
            ProgramOp::Scale { dst: "h".into(), src: "h".into(), factor: 3.0 },
            ProgramOp::Fill { dst: "b".into(), value: 1.0 },
            ProgramOp::Add { dst: "b".into(), a: "b".into(), b: "b".into() },
            ProgramOp::Nan { dst: "b".into(), index: 1 },
        ]);
        let mut memory = vec![0u8; 8];
        compile(&program, &lookup).expect("valid").run(&mut memory, &[0, 4]);
        assert_eq!(&memory[0..4], &[0x80, 0x44, 0x80, 0x44], "4.5 as f16 is 0x4480");
        assert_eq!(&memory[4..6], &[0x00, 0x40], "2.0 as bf16 is 0x4000");
        assert!(holds_nan(ElementType::Bf16, &memory[4..8]));
        assert!(!holds_nan(ElementType::F16, &memory[0..4]));
    }

    #[test]
    fn parse_names_the_bad_op_index() {
        let text =
            br#"{"version":1,"ops":[{"op":"copy","dst":"o","src":"i"},{"op":"frob","dst":"o"}]}"#;
        let err = DeviceProgram::from_json(text).unwrap_err();
        assert!(matches!(err, ProgramError::Op { op_index: 1, .. }), "{err}");
        let text = br#"{"version":1,"ops":[{"op":"copy","dst":"o","src":"i","extra":1}]}"#;
        assert!(matches!(
            DeviceProgram::from_json(text),
            Err(ProgramError::Op { op_index: 0, .. })
        ));
        let err = DeviceProgram::from_json(br#"{"version":2,"ops":[]}"#).unwrap_err();
        assert_eq!(err.to_string(), "sim program: version is 2, expected 1");
    }

    #[test]
    fn program_json_round_trips() {
        let program = DeviceProgram::new(vec![
            ProgramOp::Copy { dst: "o".into(), src: "i".into() },
            ProgramOp::Fill { dst: "o".into(), value: 1.5 },
            ProgramOp::Add { dst: "o".into(), a: "x".into(), b: "y".into() },
            ProgramOp::Mul { dst: "o".into(), a: "x".into(), b: "y".into() },
            ProgramOp::Scale { dst: "o".into(), src: "x".into(), factor: 2.0 },
            ProgramOp::Nan { dst: "o".into(), index: 3 },
        ]);
        assert_eq!(DeviceProgram::from_json(&program.to_json_bytes()), Ok(program));
    }

    fn vars(name: &str) -> Option<ProgramVar> {
        let f32_var = |slot| ProgramVar {
            slot,
            size: 16,
            element: Some(ElementType::F32),
            addressable: true,
        };
        match name {
            "x" => Some(f32_var(0)),
            "y" => Some(f32_var(1)),
            "o" => Some(f32_var(2)),
            "i32" => Some(ProgramVar {
                slot: 3,
                size: 16,
                element: Some(ElementType::Int { bytes: 4, signed: true }),
                addressable: true,
            }),
            "raw" => Some(ProgramVar { slot: 4, size: 16, element: None, addressable: true }),
            _ => None,
        }
    }

    #[test]
    fn compile_refuses_what_does_not_fit_and_names_the_op() {
        let cases = [
            (ProgramOp::Copy { dst: "o".into(), src: "nope".into() }, "\"nope\" is not in"),
            (
                ProgramOp::Add { dst: "o".into(), a: "x".into(), b: "i32".into() },
                "expected the same element type",
            ),
            (
                ProgramOp::Scale { dst: "raw".into(), src: "raw".into(), factor: 1.0 },
                "no known element type",
            ),
            (ProgramOp::Nan { dst: "i32".into(), index: 0 }, "expected a floating-point"),
            (ProgramOp::Nan { dst: "o".into(), index: 4 }, "below its 4 elements"),
            (ProgramOp::Fill { dst: "raw".into(), value: 1.5 }, "byte value"),
        ];
        for (op, expected) in cases {
            let program =
                DeviceProgram::new(vec![ProgramOp::Fill { dst: "o".into(), value: 0.0 }, op]);
            let err = compile(&program, &vars).unwrap_err();
            assert!(matches!(err, ProgramError::Op { op_index: 1, .. }), "{err}");
            assert!(err.to_string().contains(expected), "{err}");
        }
    }

    #[test]
    fn ops_compute_in_the_element_type() {
        let program = DeviceProgram::new(vec![
            ProgramOp::Fill { dst: "x".into(), value: 1.5 },
            ProgramOp::Fill { dst: "y".into(), value: 2.0 },
            ProgramOp::Mul { dst: "o".into(), a: "x".into(), b: "y".into() },
            ProgramOp::Add { dst: "o".into(), a: "o".into(), b: "x".into() },
            ProgramOp::Scale { dst: "i32".into(), src: "i32".into(), factor: 2.0 },
            ProgramOp::Nan { dst: "y".into(), index: 1 },
            ProgramOp::Fill { dst: "raw".into(), value: 7.0 },
        ]);
        let compiled = compile(&program, &vars).expect("valid");
        let mut memory = vec![0u8; 80];
        memory[48..52].copy_from_slice(&(-3i32).to_le_bytes());
        compiled.run(&mut memory, &[0, 16, 32, 48, 64]);
        let f = |at: usize| f32::from_le_bytes(memory[at..at + 4].try_into().unwrap());
        assert_eq!(f(32), 4.5);
        assert_eq!(f(44), 4.5);
        assert!(f(20).is_nan());
        assert_eq!(i32::from_le_bytes(memory[48..52].try_into().unwrap()), -6);
        assert_eq!(&memory[64..80], &[7u8; 16]);
        assert!(holds_nan(ElementType::F32, &memory[16..32]));
        assert!(!holds_nan(ElementType::F32, &memory[32..48]));
    }
}
