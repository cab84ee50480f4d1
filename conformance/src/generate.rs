//! Generated vectors for the differential property test: sim ≡ sim behind the C ABI.
//!
//! [`vector_strategy`] is a proptest strategy whose values are vectors *as files* (`case.toml`,
//! `metaneff.txtpb` and `model.hlo` text), so a failing value can be written to disk as it is, reviewed, and
//! promoted to a hand-written vector (`cargo xtask vectors promote`).
//!
//! Design choices:
//! - **The strategy draws a structured [`Design`], then renders it.** Every part of the design is
//!   an independent strategy (no `prop_flat_map`), and choices that depend on other parts (which
//!   variable an op reads, which output the state aliases) are stored as free indexes and
//!   resolved modulo the candidates at render time. So shrinking works on every part at once,
//!   and every value renders to a valid vector.
//! - **Programs are valid by construction.** The device program is an elementwise graph written
//!   as HLO (`sim::hlo_text::from_steps`): steps only combine variables of the same dtype and
//!   shape, read only inputs and outputs already written, and write every output before any
//!   extra step; `nan` only lands on floating-point outputs, and unsigned values are never
//!   scaled by a negative factor. A program the simulator would refuse
//!   at load would test nothing but the load gate, which hand-written vectors cover.
//! - **Values are small integers** (−3..=3, 0..=3 for unsigned), so f16/bf16 arithmetic stays
//!   exact and a difference in the trace is a difference in behaviour, not in rounding.
//! - **No hand-written expectations.** The property is only that both backends agree, and the
//!   trace records every call, status and binding event.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use abi::dtype::Dltype;
use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;
use sim::hlo_text::{Step, from_steps};

/// The area generated vectors live in (`vectors/generated/<name>/`).
pub const GENERATED_AREA: &str = "generated";

/// A generated vector as the text of its hand-written files.
#[derive(Clone, Debug)]
pub struct GeneratedVector {
    /// The folder name.
    pub name: String,
    /// The `case.toml` text.
    pub case_toml: String,
    /// The `metaneff.txtpb` text.
    pub metaneff_text: String,
    /// The `model.hlo` text.
    pub hlo_text: String,
}

/// A generated vector that could not be written.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {source}")]
pub struct WriteError {
    /// The file or folder.
    pub path: PathBuf,
    /// The cause.
    pub source: std::io::Error,
}

impl GeneratedVector {
    /// Writes the vector as `vectors_dir/generated/<name>/` (with an empty `expectations/`
    /// beside, as the tools expect of a vectors folder) and returns the vector's folder.
    ///
    /// # Errors
    /// [`WriteError`] naming the file that could not be written.
    pub fn write_into(&self, vectors_dir: &Path) -> Result<PathBuf, WriteError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| WriteError { path, source }
        };
        let expectations = vectors_dir.join("expectations");
        std::fs::create_dir_all(&expectations).map_err(io(&expectations))?;
        let dir = vectors_dir.join(GENERATED_AREA).join(&self.name);
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        for (file, text) in [
            ("case.toml", &self.case_toml),
            (crate::vector::METANEFF_TEXT_FILE, &self.metaneff_text),
            (crate::vector::HLO_TEXT_FILE, &self.hlo_text),
        ] {
            let path = dir.join(file);
            std::fs::write(&path, text).map_err(io(&path))?;
        }
        Ok(dir)
    }
}

/// One element type: the NEFF dltype, the torch name, the metaneff name, and whether it floats.
struct Dtype {
    dltype: &'static str,
    torch: &'static str,
    metaneff: &'static str,
    float: bool,
    unsigned: bool,
}

const DTYPES: [Dtype; 6] = [
    Dtype { dltype: "float32", torch: "Float", metaneff: "FLOAT", float: true, unsigned: false },
    Dtype { dltype: "float16", torch: "Half", metaneff: "FLOAT16", float: true, unsigned: false },
    Dtype {
        dltype: "bfloat16",
        torch: "BFloat16",
        metaneff: "BFLOAT16",
        float: true,
        unsigned: false,
    },
    Dtype { dltype: "int32", torch: "Int", metaneff: "INT32", float: false, unsigned: false },
    Dtype { dltype: "int8", torch: "Char", metaneff: "INT8", float: false, unsigned: false },
    Dtype { dltype: "uint8", torch: "Byte", metaneff: "UINT8", float: false, unsigned: true },
];

/// A dtype (index into the table) and a shape of rank 1–2 with dims 1–4.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorPick {
    dtype: usize,
    shape: Vec<i64>,
}

/// An op as free choices, resolved against the variables at render time.
#[derive(Clone, Debug)]
pub struct OpPick {
    kind: u8,
    a: usize,
    b: usize,
    value: i8,
}

/// One `model_forward`: the launch batch (used when batching is on) and a pool of values the
/// inputs take their elements from, in order.
#[derive(Clone, Debug)]
pub struct ForwardPick {
    batch: i64,
    values: Vec<i8>,
}

/// Everything a generated vector is made of, before rendering.
#[derive(Clone, Debug)]
pub struct Design {
    /// The shape and dtype most tensors share (so ops have operands).
    base: TensorPick,
    /// User inputs: `None` takes the base.
    user_inputs: Vec<Option<TensorPick>>,
    /// Outputs: `None` takes the base.
    outputs: Vec<Option<TensorPick>>,
    /// An INPUT_STATE aliased to the output at this index (modulo the outputs).
    state: Option<usize>,
    /// An INPUT_WEIGHT (`None` inside takes the base) and its values.
    weight: Option<(Option<TensorPick>, Vec<i8>)>,
    /// Dynamic batching: the compiled batch of the base-shaped rank-2 user inputs and outputs.
    compiled_batch: Option<i64>,
    return_aliases: bool,
    /// One op per output, writing it.
    primaries: Vec<OpPick>,
    /// Further ops on outputs already written.
    extras: Vec<OpPick>,
    /// A `nan` op: (float output pick, element index pick), and whether 1003 is reported.
    nan: Option<(usize, usize)>,
    numerical_errors: bool,
    forwards: Vec<ForwardPick>,
}

fn tensor_pick() -> impl Strategy<Value = TensorPick> {
    (0..DTYPES.len(), vec(1i64..=4, 1..=2)).prop_map(|(dtype, shape)| TensorPick { dtype, shape })
}

/// Mostly the base tensor, sometimes one of its own.
fn maybe_own() -> impl Strategy<Value = Option<TensorPick>> {
    option::weighted(0.25, tensor_pick())
}

fn op_pick() -> impl Strategy<Value = OpPick> {
    (0u8..5, 0usize..8, 0usize..8, -3i8..=3).prop_map(|(kind, a, b, value)| OpPick {
        kind,
        a,
        b,
        value,
    })
}

/// The design strategy; [`vector_strategy`] renders it.
pub fn design_strategy() -> impl Strategy<Value = Design> {
    let tensors = (
        tensor_pick(),
        vec(maybe_own(), 1..=3),
        vec(maybe_own(), 1..=2),
        option::of(0usize..2),
        option::of((maybe_own(), vec(-3i8..=3, 16))),
        option::of(1i64..=4),
        any::<bool>(),
    );
    let program = (
        vec(op_pick(), 2),
        vec(op_pick(), 0..=2),
        option::of((0usize..2, 0usize..16)),
        any::<bool>(),
        vec(
            (1i64..=5, vec(-3i8..=3, 64)).prop_map(|(batch, values)| ForwardPick { batch, values }),
            1..=3,
        ),
    );
    (tensors, program).prop_map(
        |(
            (base, user_inputs, outputs, state, weight, compiled_batch, return_aliases),
            (primaries, extras, nan, numerical_errors, forwards),
        )| Design {
            base,
            user_inputs,
            outputs,
            state,
            weight,
            compiled_batch,
            return_aliases,
            primaries,
            extras,
            nan,
            numerical_errors,
            forwards,
        },
    )
}

/// Generated vectors, rendered as files; the name is `case` (one folder per run).
pub fn vector_strategy() -> impl Strategy<Value = GeneratedVector> {
    design_strategy().prop_map(|design| design.render("case"))
}

/// A resolved tensor of the rendered vector.
struct Tensor {
    name: String,
    dtype: usize,
    shape: Vec<i64>,
    dynamic: bool,
}

impl Tensor {
    fn n_elems(&self) -> usize {
        self.shape.iter().product::<i64>().max(0) as usize
    }
}

fn shape_text(shape: &[i64]) -> String {
    let dims: Vec<String> = shape.iter().map(i64::to_string).collect();
    format!("[{}]", dims.join(", "))
}

/// Values as TOML numbers in the dtype's range (unsigned types take the absolute value).
fn values_text(dtype: usize, pool: &[i8], start: usize, count: usize) -> String {
    let values: Vec<String> = (0..count)
        .map(|k| {
            let value = pool.get((start + k) % pool.len().max(1)).copied().unwrap_or(0);
            let value = if DTYPES[dtype].unsigned { value.abs() } else { value };
            value.to_string()
        })
        .collect();
    format!("[{}]", values.join(", "))
}

impl Design {
    /// Renders the design as the files of a vector named `name`.
    pub fn render(&self, name: &str) -> GeneratedVector {
        let resolve = |pick: &Option<TensorPick>| pick.clone().unwrap_or_else(|| self.base.clone());
        let batch_base = |pick: &Option<TensorPick>| {
            // With batching on, the base is rank 2 with the compiled batch as leading dim.
            let mut tensor = resolve(pick);
            if let (None, Some(compiled)) = (pick, self.compiled_batch) {
                let last = tensor.shape.last().copied().unwrap_or(1);
                tensor.shape = vec![compiled, last];
            }
            tensor
        };
        let dynamic = |pick: &Option<TensorPick>| pick.is_none() && self.compiled_batch.is_some();

        let mut outputs: Vec<Tensor> = self
            .outputs
            .iter()
            .enumerate()
            .map(|(i, pick)| {
                let t = batch_base(pick);
                Tensor {
                    name: format!("output{i}"),
                    dtype: t.dtype,
                    shape: t.shape,
                    dynamic: dynamic(pick),
                }
            })
            .collect();
        let mut inputs: Vec<(Tensor, &'static str)> = self
            .user_inputs
            .iter()
            .map(|pick| {
                let t = batch_base(pick);
                (
                    Tensor {
                        name: String::new(),
                        dtype: t.dtype,
                        shape: t.shape,
                        dynamic: dynamic(pick),
                    },
                    "USER_INPUT",
                )
            })
            .collect();
        let n_user = inputs.len();
        // The state takes its aliased output's dtype and shape; that output is passed whole.
        let state_alias = self.state.map(|pick| pick % outputs.len());
        if let Some(out) = state_alias {
            outputs[out].dynamic = false;
            let t = &outputs[out];
            let tensor = Tensor {
                name: String::new(),
                dtype: t.dtype,
                shape: t.shape.clone(),
                dynamic: false,
            };
            inputs.push((tensor, "INPUT_STATE"));
        }
        if let Some((pick, _)) = &self.weight {
            let t = resolve(pick);
            inputs.push((
                Tensor { name: String::new(), dtype: t.dtype, shape: t.shape, dynamic: false },
                "INPUT_WEIGHT",
            ));
        }
        for (i, (tensor, _)) in inputs.iter_mut().enumerate() {
            tensor.name = format!("input{i}");
        }

        let program = self.program(&inputs, &outputs);
        let has_nan = program.iter().any(|step| matches!(step, Step::Nan { .. }));
        let reports_nan = self.numerical_errors && has_nan;
        let dltype =
            |t: &Tensor| Dltype::from_name(DTYPES[t.dtype].dltype).unwrap_or(Dltype::Float32);
        let input_vars: Vec<(&str, Dltype, &[i64])> =
            inputs.iter().map(|(t, _)| (t.name.as_str(), dltype(t), t.shape.as_slice())).collect();
        let output_vars: Vec<(&str, Dltype, &[i64])> =
            outputs.iter().map(|t| (t.name.as_str(), dltype(t), t.shape.as_slice())).collect();
        // Valid by construction (see the module docs); an error here is a bug of the generator.
        let hlo_text = from_steps(name, &input_vars, &output_vars, &program)
            .unwrap_or_else(|err| format!("generator bug: {err}\n"));
        let mut case = String::new();
        let _ = writeln!(
            case,
            "description = \"generated: {} user input(s), {} output(s){}{}{}; sim and capi must agree\"",
            n_user,
            outputs.len(),
            if state_alias.is_some() { ", a state" } else { "" },
            if self.weight.is_some() { ", a weight" } else { "" },
            if self.compiled_batch.is_some() { ", dynamic batching" } else { "" },
        );
        if has_nan {
            let _ = writeln!(case, "[sim]\nnumerical_errors = {}", self.numerical_errors);
        }
        let neff_list = |tensors: &mut dyn Iterator<Item = &Tensor>| {
            let items: Vec<String> = tensors
                .map(|t| {
                    format!(
                        "{{ name = \"{}\", dtype = \"{}\", shape = {} }}",
                        t.name,
                        DTYPES[t.dtype].dltype,
                        shape_text(&t.shape)
                    )
                })
                .collect();
            format!("[{}]", items.join(", "))
        };
        let _ = writeln!(case, "[neff]");
        let _ = writeln!(case, "inputs = {}", neff_list(&mut inputs.iter().map(|(t, _)| t)));
        let _ = writeln!(case, "outputs = {}", neff_list(&mut outputs.iter()));
        let _ = writeln!(case, "\n[[step]]\ncall = \"model_new\"\nas = \"model\"");
        if let (Some((_, values)), Some((weight, _))) =
            (&self.weight, inputs.iter().find(|(_, kind)| *kind == "INPUT_WEIGHT"))
        {
            let _ = writeln!(
                case,
                "weights = {{ \"w\" = {{ dtype = \"{}\", shape = {}, values = {} }} }}",
                DTYPES[weight.dtype].torch,
                shape_text(&weight.shape),
                values_text(weight.dtype, values, 0, weight.n_elems())
            );
        }
        for (index, forward) in self.forwards.iter().enumerate() {
            let mut start = 0;
            let items: Vec<String> = inputs[..n_user]
                .iter()
                .map(|(t, _)| {
                    let mut shape = t.shape.clone();
                    if t.dynamic {
                        shape[0] = forward.batch;
                    }
                    let count = shape.iter().product::<i64>().max(0) as usize;
                    let text = format!(
                        "{{ dtype = \"{}\", shape = {}, values = {} }}",
                        DTYPES[t.dtype].torch,
                        shape_text(&shape),
                        values_text(t.dtype, &forward.values, start, count)
                    );
                    start += count;
                    text
                })
                .collect();
            let _ = writeln!(
                case,
                "[[step]]\ncall = \"model_forward\"\nmodel = \"model\"\nas = \"out{}\"\ninputs = [{}]",
                index + 1,
                items.join(", ")
            );
            if reports_nan {
                // A tolerance, not an expectation of values: with it the outputs reach the trace.
                let _ = writeln!(case, "expect_status = \"NRT_EXEC_COMPLETED_WITH_NUM_ERR\"");
            }
        }

        let mut metaneff = String::from("# Generated by the differential property test.\n");
        for (tensor, kind) in &inputs {
            let _ = write!(
                metaneff,
                "input_tensors {{ name: \"{}\" shape: {} data_type: {} type: {kind}",
                tensor.name,
                shape_text(&tensor.shape),
                DTYPES[tensor.dtype].metaneff
            );
            match *kind {
                "INPUT_STATE" => metaneff.push_str(" checkpoint_key: \"state\""),
                "INPUT_WEIGHT" => metaneff.push_str(" checkpoint_key: \"w\""),
                _ => {}
            }
            if tensor.dynamic {
                metaneff.push_str(" allow_dynamic_batch_size: true");
            }
            metaneff.push_str(" }\n");
        }
        for tensor in &outputs {
            let _ = write!(
                metaneff,
                "output_tensors {{ name: \"{}\" shape: {} data_type: {}",
                tensor.name,
                shape_text(&tensor.shape),
                DTYPES[tensor.dtype].metaneff
            );
            if tensor.dynamic {
                metaneff.push_str(" allow_dynamic_batch_size: true");
            }
            metaneff.push_str(" }\n");
        }
        if let Some(out) = state_alias {
            let _ = writeln!(metaneff, "output_aliases_to {{ key: {out} value: {n_user} }}");
        }
        let _ = writeln!(metaneff, "model_config {{ return_aliases: {} }}", self.return_aliases);
        GeneratedVector {
            name: name.to_owned(),
            case_toml: case,
            metaneff_text: metaneff,
            hlo_text,
        }
    }

    /// The program's steps: one writing each output, then extras, then `nan`.
    fn program(&self, inputs: &[(Tensor, &'static str)], outputs: &[Tensor]) -> Vec<Step> {
        let mut written = vec![false; outputs.len()];
        let mut ops = Vec::new();
        let resolve = |pick: &OpPick, dst: usize, written: &[bool]| {
            let target = &outputs[dst];
            let readable: Vec<&str> = inputs
                .iter()
                .map(|(t, _)| t)
                .chain(outputs.iter().enumerate().filter(|(i, _)| written[*i]).map(|(_, t)| t))
                .filter(|t| t.dtype == target.dtype && t.shape == target.shape)
                .map(|t| t.name.as_str())
                .collect();
            let dst = target.name.clone();
            let unsigned = DTYPES[target.dtype].unsigned;
            let value = if unsigned { pick.value.abs() } else { pick.value };
            if readable.is_empty() || pick.kind == 1 {
                return Step::Fill { dst, value: f64::from(value) };
            }
            let a = readable[pick.a % readable.len()].to_owned();
            let b = readable[pick.b % readable.len()].to_owned();
            match pick.kind {
                0 => Step::Copy { dst, src: a },
                2 => Step::Add { dst, a, b },
                3 => Step::Mul { dst, a, b },
                _ => {
                    let factors: &[f64] = if unsigned { &[2.0, 3.0] } else { &[-1.0, 2.0, 3.0] };
                    Step::Scale { dst, src: a, factor: factors[pick.b % factors.len()] }
                }
            }
        };
        for (dst, pick) in self.primaries.iter().take(outputs.len()).enumerate() {
            ops.push(resolve(pick, dst, &written));
            written[dst] = true;
        }
        let float_outputs: Vec<&Tensor> =
            outputs.iter().filter(|t| DTYPES[t.dtype].float).collect();
        let nan = self.nan.filter(|_| !float_outputs.is_empty());
        let room = 4usize.saturating_sub(ops.len() + usize::from(nan.is_some()));
        for pick in self.extras.iter().take(room) {
            ops.push(resolve(pick, pick.b % outputs.len(), &written));
        }
        if let Some((out, index)) = nan {
            let target = float_outputs[out % float_outputs.len()];
            let index = index % target.n_elems().max(1);
            ops.push(Step::Nan { dst: target.name.clone(), index });
        }
        ops
    }
}
