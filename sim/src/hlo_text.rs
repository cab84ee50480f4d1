//! A writer of small HLO text modules: elementwise graphs over a model's parameters, for tests,
//! benchmarks and the differential generator, so none of them writes HLO text by string pasting.
//!
//! The module it writes has one parameter per [`HloText::parameter`] call (numbered in call
//! order) and a tuple root of the given results, the form an XLA-lowered graph has. Element types
//! are named from dltypes; shapes use the default layout.

use std::collections::HashMap;
use std::fmt::Write as _;

use abi::dtype::Dltype;

/// A value of the module under construction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Operand {
    name: String,
    ty: &'static str,
    dims: Vec<i64>,
    float: bool,
}

impl Operand {
    fn shape(&self) -> String {
        shape_text(self.ty, &self.dims)
    }
}

/// The HLO text name of a dltype's element type.
pub fn type_name(dltype: Dltype) -> &'static str {
    match dltype {
        Dltype::Float32 => "f32",
        Dltype::Float16 => "f16",
        Dltype::BFloat16 => "bf16",
        Dltype::Float64 => "f64",
        Dltype::Int8 => "s8",
        Dltype::Uint8 => "u8",
        Dltype::Int16 => "s16",
        Dltype::Uint16 => "u16",
        Dltype::Int32 => "s32",
        Dltype::Uint32 => "u32",
        Dltype::Int64 => "s64",
        Dltype::Uint64 => "u64",
        Dltype::Bool => "pred",
        Dltype::Float8E4m3fn => "f8e4m3fn",
        Dltype::Float8E5m2 => "f8e5m2",
    }
}

fn is_float(dltype: Dltype) -> bool {
    matches!(
        dltype,
        Dltype::Float32
            | Dltype::Float16
            | Dltype::BFloat16
            | Dltype::Float64
            | Dltype::Float8E4m3fn
            | Dltype::Float8E5m2
    )
}

fn shape_text(ty: &str, dims: &[i64]) -> String {
    let dims: Vec<String> = dims.iter().map(i64::to_string).collect();
    format!("{ty}[{}]", dims.join(","))
}

/// A number as an HLO literal of a float or integer type.
fn literal(value: f64, float: bool) -> String {
    if !float {
        return format!("{}", value as i64);
    }
    if value.is_nan() {
        "nan".to_owned()
    } else if value.is_infinite() {
        if value > 0.0 { "inf".to_owned() } else { "-inf".to_owned() }
    } else if value == value.trunc() && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        format!("{value:?}")
    }
}

/// An HLO module being written.
#[derive(Clone, Debug)]
pub struct HloText {
    name: String,
    lines: Vec<String>,
    parameters: usize,
    next: usize,
}

impl HloText {
    /// An empty module called `name` (letters, digits, `_`, `.` and `-`).
    pub fn new(name: &str) -> HloText {
        HloText { name: name.to_owned(), lines: Vec::new(), parameters: 0, next: 0 }
    }

    fn fresh(&mut self, stem: &str) -> String {
        self.next += 1;
        format!("{stem}.{}", self.next)
    }

    fn push(
        &mut self,
        stem: &str,
        ty: &'static str,
        dims: &[i64],
        float: bool,
        rhs: String,
    ) -> Operand {
        let name = self.fresh(stem);
        let operand = Operand { name, ty, dims: dims.to_vec(), float };
        self.lines.push(format!("  {} = {} {rhs}", operand.name, operand.shape()));
        operand
    }

    /// The next parameter, of `dltype` and `dims`.
    pub fn parameter(&mut self, dltype: Dltype, dims: &[i64]) -> Operand {
        let number = self.parameters;
        self.parameters += 1;
        self.push("p", type_name(dltype), dims, is_float(dltype), format!("parameter({number})"))
    }

    /// `a + b`, elementwise (same type and shape).
    pub fn add(&mut self, a: &Operand, b: &Operand) -> Operand {
        self.push("add", a.ty, &a.dims.clone(), a.float, format!("add({}, {})", a.name, b.name))
    }

    /// `a × b`, elementwise (same type and shape).
    pub fn multiply(&mut self, a: &Operand, b: &Operand) -> Operand {
        self.push(
            "multiply",
            a.ty,
            &a.dims.clone(),
            a.float,
            format!("multiply({}, {})", a.name, b.name),
        )
    }

    /// A constant of `like`'s type and shape with every element `value`.
    pub fn fill_like(&mut self, like: &Operand, value: f64) -> Operand {
        let scalar = self.push(
            "constant",
            like.ty,
            &[],
            like.float,
            format!("constant({})", literal(value, like.float)),
        );
        self.push(
            "broadcast",
            like.ty,
            &like.dims.clone(),
            like.float,
            format!("broadcast({}), dimensions={{}}", scalar.name),
        )
    }

    /// A constant of `dltype` and `dims` with every element `value`.
    pub fn fill(&mut self, dltype: Dltype, dims: &[i64], value: f64) -> Operand {
        let like = Operand {
            name: String::new(),
            ty: type_name(dltype),
            dims: dims.to_vec(),
            float: is_float(dltype),
        };
        self.fill_like(&like, value)
    }

    /// `a × factor`, elementwise.
    pub fn scale(&mut self, a: &Operand, factor: f64) -> Operand {
        let factor = self.fill_like(a, factor);
        self.multiply(a, &factor)
    }

    /// `a` with element `index` (row-major) made NaN: `a` times a constant that is 1 everywhere
    /// but NaN there (floating-point `a` only).
    pub fn nan_at(&mut self, a: &Operand, index: usize) -> Operand {
        let mut flat = 0usize;
        let mut text = String::new();
        nested(&a.dims, &mut |piece| match piece {
            Piece::Open => text.push('{'),
            Piece::Close => text.push('}'),
            Piece::Comma => text.push_str(", "),
            Piece::Element => {
                text.push_str(if flat == index { "nan" } else { "1" });
                flat += 1;
            }
        });
        let mask =
            self.push("constant", a.ty, &a.dims.clone(), a.float, format!("constant({text})"));
        self.multiply(a, &mask)
    }

    /// The module's text, with a tuple of `results` as the entry's root.
    pub fn finish(mut self, results: &[Operand]) -> String {
        let shapes: Vec<String> = results.iter().map(Operand::shape).collect();
        let names: Vec<&str> = results.iter().map(|r| r.name.as_str()).collect();
        let tuple = format!("({})", shapes.join(", "));
        let root = self.fresh("tuple");
        let mut out = String::new();
        let _ = writeln!(out, "HloModule {}\n\nENTRY main {{", self.name);
        for line in self.lines.drain(..) {
            let _ = writeln!(out, "{line}");
        }
        let _ = writeln!(out, "  ROOT {root} = {tuple} tuple({})\n}}", names.join(", "));
        out
    }
}

/// One step of an elementwise graph over named variables, for [`from_steps`]: each writes `dst`
/// (an output) from inputs and outputs written before it.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// `dst = src`.
    Copy {
        /// The output written.
        dst: String,
        /// The variable read.
        src: String,
    },
    /// `dst = a + b`.
    Add {
        /// The output written.
        dst: String,
        /// The first operand.
        a: String,
        /// The second operand.
        b: String,
    },
    /// `dst = a × b`.
    Mul {
        /// The output written.
        dst: String,
        /// The first operand.
        a: String,
        /// The second operand.
        b: String,
    },
    /// `dst = src × factor`.
    Scale {
        /// The output written.
        dst: String,
        /// The variable read.
        src: String,
        /// The factor.
        factor: f64,
    },
    /// Every element of `dst` set to `value`.
    Fill {
        /// The output written.
        dst: String,
        /// The value.
        value: f64,
    },
    /// Element `index` of `dst` (as written so far) made NaN.
    Nan {
        /// The output written.
        dst: String,
        /// The element index.
        index: usize,
    },
}

/// One variable of the model a graph is written for: name, element type, shape.
pub type Var<'a> = (&'a str, Dltype, &'a [i64]);

/// Why [`from_steps`] cannot write a graph.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StepError {
    /// A step writes a variable that is not an output.
    #[error("{var:?} is not an output")]
    NotAnOutput {
        /// The variable.
        var: String,
    },
    /// A step reads a variable before anything gave it a value.
    #[error("step {step} reads {var:?}, which is neither an input nor a written output")]
    Unwritten {
        /// The step's index.
        step: usize,
        /// The variable.
        var: String,
    },
}

/// The HLO text of the graph `steps` over a model with `inputs` and `outputs` (signature order):
/// parameters and results numbered as the simulator binds them
/// ([`crate::device_program::binding_order`]), an output no step writes is zeros.
///
/// # Errors
/// A step naming a variable that is not an input or an output written before it, or writing a
/// variable that is not an output.
pub fn from_steps(
    name: &str,
    inputs: &[Var<'_>],
    outputs: &[Var<'_>],
    steps: &[Step],
) -> Result<String, StepError> {
    use crate::device_program::binding_order;
    let mut hlo = HloText::new(name);
    let mut values: HashMap<&str, Operand> = HashMap::new();
    let input_names: Vec<&str> = inputs.iter().map(|v| v.0).collect();
    for position in binding_order(&input_names, "input") {
        let (var, dltype, dims) = inputs[position];
        values.insert(var, hlo.parameter(dltype, dims));
    }
    let output_names: Vec<&str> = outputs.iter().map(|v| v.0).collect();
    let output_of = |dst: &str| {
        outputs
            .iter()
            .find(|v| v.0 == dst)
            .ok_or_else(|| StepError::NotAnOutput { var: dst.to_owned() })
    };
    for (index, step) in steps.iter().enumerate() {
        let get = |values: &HashMap<&str, Operand>, var: &str| {
            values
                .get(var)
                .cloned()
                .ok_or_else(|| StepError::Unwritten { step: index, var: var.to_owned() })
        };
        let (dst, value) = match step {
            Step::Copy { dst, src } => (dst, get(&values, src)?),
            Step::Add { dst, a, b } => {
                let (a, b) = (get(&values, a)?, get(&values, b)?);
                (dst, hlo.add(&a, &b))
            }
            Step::Mul { dst, a, b } => {
                let (a, b) = (get(&values, a)?, get(&values, b)?);
                (dst, hlo.multiply(&a, &b))
            }
            Step::Scale { dst, src, factor } => {
                let src = get(&values, src)?;
                (dst, hlo.scale(&src, *factor))
            }
            Step::Fill { dst, value } => {
                let (_, dltype, dims) = *output_of(dst)?;
                (dst, hlo.fill(dltype, dims, *value))
            }
            Step::Nan { dst, index } => {
                let current = get(&values, dst)?;
                (dst, hlo.nan_at(&current, *index))
            }
        };
        let (out, _, _) = *output_of(dst)?;
        values.insert(out, value);
    }
    let mut results = Vec::new();
    for position in binding_order(&output_names, "output") {
        let (var, dltype, dims) = outputs[position];
        let value = match values.get(var) {
            Some(value) => value.clone(),
            None => hlo.fill(dltype, dims, 0.0),
        };
        results.push(value);
    }
    Ok(hlo.finish(&results))
}

enum Piece {
    Open,
    Close,
    Comma,
    Element,
}

/// Walks a literal's brace structure for `dims` (a scalar is one bare element).
fn nested(dims: &[i64], emit: &mut impl FnMut(Piece)) {
    let Some((&first, rest)) = dims.split_first() else {
        emit(Piece::Element);
        return;
    };
    emit(Piece::Open);
    for i in 0..first.max(0) {
        if i > 0 {
            emit(Piece::Comma);
        }
        if rest.is_empty() {
            emit(Piece::Element);
        } else {
            nested(rest, emit);
        }
    }
    emit(Piece::Close);
}

#[cfg(test)]
mod tests {
    use super::*;
    use hlo::eval::{Array, EvalOptions, Value, evaluate};

    #[test]
    fn written_modules_parse_and_compute_what_they_say() {
        let mut m = HloText::new("t");
        let x = m.parameter(Dltype::Float32, &[2, 2]);
        let y = m.parameter(Dltype::Float32, &[2, 2]);
        let sum = m.add(&x, &y);
        let scaled = m.scale(&sum, 0.5);
        let holed = m.nan_at(&scaled, 2);
        let text = m.finish(&[holed, x]);
        let module = hlo::load_module(text.as_bytes()).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let args = [
            Array::from_f32(&[2, 2], &[1.0, 2.0, 3.0, 4.0]),
            Array::from_f32(&[2, 2], &[3.0, 4.0, 5.0, 6.0]),
        ];
        let Value::Tuple(items) = evaluate(&module, &args, &EvalOptions::default()).unwrap() else {
            panic!("expected a tuple");
        };
        let Value::Array(first) = &items[0] else { panic!("expected an array") };
        let values = first.to_f64().unwrap();
        assert_eq!(values[0], 2.0);
        assert_eq!(values[1], 3.0);
        assert!(values[2].is_nan());
        assert_eq!(values[3], 5.0);
        assert_eq!(items[1], Value::Array(args[0].clone()));
    }

    #[test]
    fn literals_follow_the_type() {
        assert_eq!(literal(2.0, true), "2");
        assert_eq!(literal(0.5, true), "0.5");
        assert_eq!(literal(f64::NAN, true), "nan");
        assert_eq!(literal(-3.0, false), "-3");
    }
}
