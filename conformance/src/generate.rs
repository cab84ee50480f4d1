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
//! - **Files come from serializers, never from `format!`.** `case.toml` is a few `Serialize`
//!   structs written by the `toml` crate, and `metaneff.txtpb` is the `MetaNeff` message printed
//!   by `abi::metaneff::text`, so quoting, escaping and table layout are theirs to get right.
//! - **No hand-written expectations.** The property is only that both backends agree, and the
//!   trace records every call, status and binding event.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use abi::dtype::Dltype;
use abi::metaneff::meta_tensor::{DataType, Type as TensorType};
use abi::metaneff::{MetaNeff, MetaTensor, ModelConfig};
use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;
use serde::Serialize;
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
            crate::output_file::write(&path, text.as_bytes()).map_err(io(&path))?;
        }
        Ok(dir)
    }
}

/// One element type: the NEFF dltype, the torch name, the metaneff data type, and whether it
/// floats.
struct Dtype {
    dltype: &'static str,
    torch: &'static str,
    data_type: DataType,
    float: bool,
    unsigned: bool,
}

const DTYPES: [Dtype; 6] = [
    Dtype {
        dltype: "float32",
        torch: "Float",
        data_type: DataType::Float,
        float: true,
        unsigned: false,
    },
    Dtype {
        dltype: "float16",
        torch: "Half",
        data_type: DataType::Float16,
        float: true,
        unsigned: false,
    },
    Dtype {
        dltype: "bfloat16",
        torch: "BFloat16",
        data_type: DataType::Bfloat16,
        float: true,
        unsigned: false,
    },
    Dtype {
        dltype: "int32",
        torch: "Int",
        data_type: DataType::Int32,
        float: false,
        unsigned: false,
    },
    Dtype {
        dltype: "int8",
        torch: "Char",
        data_type: DataType::Int8,
        float: false,
        unsigned: false,
    },
    Dtype {
        dltype: "uint8",
        torch: "Byte",
        data_type: DataType::Uint8,
        float: false,
        unsigned: true,
    },
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

/// Element values in the dtype's range (unsigned types take the absolute value), taken from
/// `pool` in order from `start`, wrapping around.
fn element_values(dtype: usize, pool: &[i8], start: usize, count: usize) -> Vec<i64> {
    (0..count)
        .map(|k| {
            let value = pool.get((start + k) % pool.len().max(1)).copied().unwrap_or(0);
            i64::from(if DTYPES[dtype].unsigned { value.abs() } else { value })
        })
        .collect()
}

/// `case.toml` as the generator writes it: the part of [`crate::spec::CaseSpec`] it uses,
/// serialized by the `toml` crate so every string is quoted and escaped as TOML says.
#[derive(Serialize)]
struct CaseFile {
    description: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    sim: Option<SimFile>,
    neff: NeffFile,
    step: Vec<StepFile>,
}

/// The `[sim]` table.
#[derive(Serialize)]
struct SimFile {
    numerical_errors: bool,
}

/// The `[neff]` table.
#[derive(Serialize)]
struct NeffFile {
    inputs: Vec<NeffTensorFile>,
    outputs: Vec<NeffTensorFile>,
}

/// One variable of the `[neff]` table.
#[derive(Serialize)]
struct NeffTensorFile {
    name: String,
    dtype: &'static str,
    shape: Vec<i64>,
}

/// The steps the generator writes.
#[derive(Serialize)]
#[serde(tag = "call", rename_all = "snake_case")]
enum StepFile {
    ModelNew {
        #[serde(rename = "as")]
        label: &'static str,
        #[serde(skip_serializing_if = "BTreeMap::is_empty")]
        weights: BTreeMap<&'static str, ValueFile>,
    },
    ModelForward {
        model: &'static str,
        #[serde(rename = "as")]
        label: String,
        inputs: Vec<ValueFile>,
        #[serde(skip_serializing_if = "Option::is_none")]
        expect_status: Option<&'static str>,
    },
}

/// A tensor's contents.
#[derive(Serialize)]
struct ValueFile {
    dtype: &'static str,
    shape: Vec<i64>,
    values: Vec<i64>,
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
        let description = format!(
            "generated: {} user input(s), {} output(s){}{}{}; sim and capi must agree",
            n_user,
            outputs.len(),
            if state_alias.is_some() { ", a state" } else { "" },
            if self.weight.is_some() { ", a weight" } else { "" },
            if self.compiled_batch.is_some() { ", dynamic batching" } else { "" },
        );
        let neff_tensor = |t: &Tensor| NeffTensorFile {
            name: t.name.clone(),
            dtype: DTYPES[t.dtype].dltype,
            shape: t.shape.clone(),
        };
        let mut steps = vec![StepFile::ModelNew { label: "model", weights: BTreeMap::new() }];
        if let (Some((_, values)), Some((weight, _))) =
            (&self.weight, inputs.iter().find(|(_, kind)| *kind == "INPUT_WEIGHT"))
        {
            let value = ValueFile {
                dtype: DTYPES[weight.dtype].torch,
                shape: weight.shape.clone(),
                values: element_values(weight.dtype, values, 0, weight.n_elems()),
            };
            steps[0] =
                StepFile::ModelNew { label: "model", weights: BTreeMap::from([("w", value)]) };
        }
        for (index, forward) in self.forwards.iter().enumerate() {
            let mut start = 0;
            let values = inputs[..n_user]
                .iter()
                .map(|(t, _)| {
                    let mut shape = t.shape.clone();
                    if t.dynamic {
                        shape[0] = forward.batch;
                    }
                    let count = shape.iter().product::<i64>().max(0) as usize;
                    let value = ValueFile {
                        dtype: DTYPES[t.dtype].torch,
                        values: element_values(t.dtype, &forward.values, start, count),
                        shape,
                    };
                    start += count;
                    value
                })
                .collect();
            steps.push(StepFile::ModelForward {
                model: "model",
                label: format!("out{}", index + 1),
                inputs: values,
                // A tolerance, not an expectation of values: with it the outputs reach the trace.
                expect_status: reports_nan.then_some("NRT_EXEC_COMPLETED_WITH_NUM_ERR"),
            });
        }
        let case = CaseFile {
            description,
            sim: has_nan.then_some(SimFile { numerical_errors: self.numerical_errors }),
            neff: NeffFile {
                inputs: inputs.iter().map(|(t, _)| neff_tensor(t)).collect(),
                outputs: outputs.iter().map(neff_tensor).collect(),
            },
            step: steps,
        };
        // Plain data of known types; an error here is a bug of the generator.
        let case_toml =
            toml::to_string(&case).unwrap_or_else(|err| format!("# generator bug: {err}\n"));

        let message = MetaNeff {
            input_tensors: inputs
                .iter()
                .map(|(tensor, kind)| MetaTensor {
                    name: tensor.name.clone().into_bytes().into(),
                    shape: tensor.shape.clone(),
                    data_type: DTYPES[tensor.dtype].data_type as i32,
                    allow_dynamic_batch_size: tensor.dynamic,
                    checkpoint_key: match *kind {
                        "INPUT_STATE" => Some(b"state".to_vec().into()),
                        "INPUT_WEIGHT" => Some(b"w".to_vec().into()),
                        _ => None,
                    },
                    r#type: match *kind {
                        "INPUT_STATE" => TensorType::InputState,
                        "INPUT_WEIGHT" => TensorType::InputWeight,
                        _ => TensorType::UserInput,
                    } as i32,
                    ..MetaTensor::default()
                })
                .collect(),
            output_tensors: outputs
                .iter()
                .map(|tensor| MetaTensor {
                    name: tensor.name.clone().into_bytes().into(),
                    shape: tensor.shape.clone(),
                    data_type: DTYPES[tensor.dtype].data_type as i32,
                    allow_dynamic_batch_size: tensor.dynamic,
                    ..MetaTensor::default()
                })
                .collect(),
            output_aliases_to: state_alias
                .map(|out| (out as i64, n_user as i64))
                .into_iter()
                .collect(),
            model_config: Some(ModelConfig {
                return_aliases: self.return_aliases,
                ..ModelConfig::default()
            }),
            ..MetaNeff::default()
        };
        // Printed from the message, so the text is what the text format says it is.
        let metaneff_text = match abi::metaneff::text::to_text(&abi::metaneff::encode(&message)) {
            Ok(printed) => {
                format!("# Generated by the differential property test.\n{}", printed.text)
            }
            Err(err) => format!("# generator bug: {err}\n"),
        };
        GeneratedVector { name: name.to_owned(), case_toml, metaneff_text, hlo_text }
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

#[cfg(test)]
mod tests {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

    use super::*;
    use crate::spec::{CaseSpec, Step as CaseStep};

    /// Designs from a fixed seed, so a failure names a reproducible value.
    fn designs(count: usize) -> Vec<Design> {
        let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]);
        let mut runner = TestRunner::new_with_rng(Config::default(), rng);
        (0..count)
            .map(|_| design_strategy().new_tree(&mut runner).expect("a design").current())
            .collect()
    }

    #[test]
    fn rendered_files_read_back_as_the_design_says() {
        for design in designs(64) {
            let vector = design.render("case");
            let case: CaseSpec = toml::from_str(&vector.case_toml)
                .unwrap_or_else(|err| panic!("{err}\n{}", vector.case_toml));
            let neff = case.neff.as_ref().expect("a [neff] table");
            assert_eq!(neff.outputs.len(), design.outputs.len(), "{}", vector.case_toml);
            let n_inputs = design.user_inputs.len()
                + usize::from(design.state.is_some())
                + usize::from(design.weight.is_some());
            assert_eq!(neff.inputs.len(), n_inputs, "{}", vector.case_toml);
            assert_eq!(case.steps.len(), 1 + design.forwards.len(), "{}", vector.case_toml);
            let Some(CaseStep::ModelNew(model_new)) = case.steps.first() else {
                panic!("expected model_new first:\n{}", vector.case_toml);
            };
            assert_eq!(model_new.weights.len(), usize::from(design.weight.is_some()));
            for step in &case.steps[1..] {
                let CaseStep::ModelForward(forward) = step else {
                    panic!("expected model_forward:\n{}", vector.case_toml);
                };
                assert_eq!(forward.inputs.len(), design.user_inputs.len());
            }
            let bytes = abi::metaneff::text::from_text(&vector.metaneff_text)
                .unwrap_or_else(|err| panic!("{err}\n{}", vector.metaneff_text));
            let message = abi::metaneff::decode(&bytes).expect("the metaneff decodes");
            assert_eq!(message.input_tensors.len(), n_inputs);
            assert_eq!(message.output_tensors.len(), design.outputs.len());
            assert_eq!(message.output_aliases_to.len(), usize::from(design.state.is_some()));
            assert_eq!(
                message.model_config.map(|config| config.return_aliases),
                Some(design.return_aliases)
            );
        }
    }
}
