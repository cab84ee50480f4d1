//! Small models for tests: a NEFF whose HLO device program (the `sim/model.hlo.pb` member, written
//! from [`Step`]s by `sim::hlo_text`) makes outputs a function of named inputs, and the matching
//! metaneff, both built from one [`ModelDef`].
//!
//! The same [`ModelDef`] is also the simulator's in-memory model ([`ModelDef::description`], for
//! `SimRuntime::load_description`), so the simulator's tests, the C-ABI tests and the binding
//! suite build their models one way.
//!
//! The NEFF has one graph `sg00` whose variables are the inputs then the outputs (var_ids in
//! that order, sizes from dtype and shape) and a signature with their dltypes, so a simulator
//! can type the program's operands. The metaneff is canonical proto3 from `abi::metaneff`.

use std::collections::BTreeMap;

use abi::dtype::{Dltype, dltype_of, n_bytes};
use abi::metaneff::meta_tensor::{DataType, Type};
use abi::metaneff::{self, MetaNeff, MetaTensor, ModelConfig};
use abi::neff::{GraphSpec, NeffSpec, Signature, TensorSignature, Var};
use sim::ModelDescription;
pub use sim::hlo_text::Step;

/// One boundary tensor of a test model.
#[derive(Clone, Debug)]
pub struct TensorDef {
    /// The name (`input0`, `output0`, …).
    pub name: String,
    /// The metaneff data type.
    pub data_type: DataType,
    /// The compiled shape.
    pub shape: Vec<i64>,
    /// The metaneff role (outputs: `UndefinedType`).
    pub kind: Type,
    /// The `checkpoint_key` of a state or weight.
    pub checkpoint_key: Option<String>,
    /// `allow_dynamic_batch_size`.
    pub dynamic: bool,
}

impl TensorDef {
    /// A user input.
    pub fn input(name: &str, data_type: DataType, shape: &[i64]) -> TensorDef {
        TensorDef {
            name: name.to_owned(),
            data_type,
            shape: shape.to_vec(),
            kind: Type::UserInput,
            checkpoint_key: None,
            dynamic: false,
        }
    }

    /// An output.
    pub fn output(name: &str, data_type: DataType, shape: &[i64]) -> TensorDef {
        TensorDef { kind: Type::UndefinedType, ..TensorDef::input(name, data_type, shape) }
    }

    /// A state input with its checkpoint key.
    pub fn state(name: &str, data_type: DataType, shape: &[i64], key: &str) -> TensorDef {
        TensorDef {
            kind: Type::InputState,
            checkpoint_key: Some(key.to_owned()),
            ..TensorDef::input(name, data_type, shape)
        }
    }

    /// A weight input with its checkpoint key.
    pub fn weight(name: &str, data_type: DataType, shape: &[i64], key: &str) -> TensorDef {
        TensorDef {
            kind: Type::InputWeight,
            checkpoint_key: Some(key.to_owned()),
            ..TensorDef::input(name, data_type, shape)
        }
    }

    /// The same tensor with another role.
    pub fn with_kind(mut self, kind: Type) -> TensorDef {
        self.kind = kind;
        self
    }

    /// The same tensor marked for dynamic batching.
    pub fn dynamic(mut self) -> TensorDef {
        self.dynamic = true;
        self
    }

    fn n_bytes(&self) -> u64 {
        n_bytes(&self.shape, self.data_type).expect("test tensors have valid shapes")
    }

    fn meta(&self) -> MetaTensor {
        MetaTensor {
            name: self.name.as_bytes().to_vec().into(),
            shape: self.shape.clone(),
            data_type: self.data_type as i32,
            allow_dynamic_batch_size: self.dynamic,
            checkpoint_key: self.checkpoint_key.as_ref().map(|key| key.as_bytes().to_vec().into()),
            r#type: self.kind as i32,
            ..MetaTensor::default()
        }
    }

    fn signature(&self) -> TensorSignature {
        let dltype = dltype_of(self.data_type).map_or("", |dltype| dltype.name());
        TensorSignature::new(&self.name, dltype, &self.shape)
    }
}

/// A test model: boundary tensors, aliases, config flags and a device program.
#[derive(Clone, Debug, Default)]
pub struct ModelDef {
    /// The NEFF name.
    pub name: String,
    /// The inputs, in metaneff order.
    pub inputs: Vec<TensorDef>,
    /// The outputs, in metaneff order.
    pub outputs: Vec<TensorDef>,
    /// `output_aliases_to`: output index → input index.
    pub aliases: BTreeMap<i64, i64>,
    /// `ModelConfig.return_aliases`.
    pub return_aliases: bool,
    /// `ModelConfig.lazy_load`.
    pub lazy_load: bool,
    /// `ModelConfig.async_load`.
    pub async_load: bool,
    /// The program's steps, written into the NEFF as HLO.
    pub ops: Vec<Step>,
}

impl ModelDef {
    /// An empty model called `name`.
    pub fn new(name: &str) -> ModelDef {
        ModelDef { name: name.to_owned(), ..ModelDef::default() }
    }

    /// The NEFF bytes.
    pub fn neff(&self) -> Vec<u8> {
        let mut spec = NeffSpec::new(&self.name);
        let mut vars = Vec::new();
        for (var_id, (tensor, kind)) in self
            .inputs
            .iter()
            .map(|t| (t, "input"))
            .chain(self.outputs.iter().map(|t| (t, "output")))
            .enumerate()
        {
            vars.push(Var::new(&tensor.name, var_id as u32, kind).with_size(tensor.n_bytes()));
        }
        spec.graphs.push(GraphSpec { name: "sg00".to_owned(), vars });
        spec.signature = Signature {
            inputs: self.inputs.iter().map(TensorDef::signature).collect(),
            outputs: self.outputs.iter().map(TensorDef::signature).collect(),
        };
        let vars = |tensors: &[TensorDef]| -> Vec<(String, abi::dtype::Dltype, Vec<i64>)> {
            tensors
                .iter()
                .map(|t| {
                    let dltype = dltype_of(t.data_type).expect("test tensors have a dltype");
                    (t.name.clone(), dltype, t.shape.clone())
                })
                .collect()
        };
        let (inputs, outputs) = (vars(&self.inputs), vars(&self.outputs));
        fn view(vars: &[(String, abi::dtype::Dltype, Vec<i64>)]) -> Vec<sim::hlo_text::Var<'_>> {
            vars.iter().map(|(n, d, s)| (n.as_str(), *d, s.as_slice())).collect()
        }
        let hlo = sim::hlo_text::from_steps("model", &view(&inputs), &view(&outputs), &self.ops)
            .expect("test programs are valid");
        spec.extra_members.insert(sim::HLO_MEMBER.to_owned(), hlo.into_bytes());
        spec.to_bytes().expect("test NEFFs are valid")
    }

    /// The simulator's description of the model, as `SimRuntime` reads it from [`ModelDef::neff`]
    /// (device program included).
    pub fn description(&self) -> ModelDescription {
        sim::neff_load::describe_neff(&self.neff()).expect("test NEFFs describe")
    }

    /// The decoded metaneff.
    pub fn metaneff_message(&self) -> MetaNeff {
        let config = ModelConfig {
            return_aliases: self.return_aliases,
            lazy_load: self.lazy_load,
            async_load: self.async_load,
            ..ModelConfig::default()
        };
        let any_flag = self.return_aliases || self.lazy_load || self.async_load;
        MetaNeff {
            input_tensors: self.inputs.iter().map(TensorDef::meta).collect(),
            output_tensors: self.outputs.iter().map(TensorDef::meta).collect(),
            model_config: any_flag.then_some(config),
            output_aliases_to: self.aliases.clone(),
            name: self.name.as_bytes().to_vec().into(),
            ..MetaNeff::default()
        }
    }

    /// The metaneff bytes.
    pub fn metaneff(&self) -> Vec<u8> {
        metaneff::encode(&self.metaneff_message())
    }
}

/// A `copy` step.
pub fn op_copy(dst: &str, src: &str) -> Step {
    Step::Copy { dst: dst.to_owned(), src: src.to_owned() }
}

/// An `add` step.
pub fn op_add(dst: &str, a: &str, b: &str) -> Step {
    Step::Add { dst: dst.to_owned(), a: a.to_owned(), b: b.to_owned() }
}

/// A `scale` step.
pub fn op_scale(dst: &str, src: &str, factor: f64) -> Step {
    Step::Scale { dst: dst.to_owned(), src: src.to_owned(), factor }
}

/// A `nan` step.
pub fn op_nan(dst: &str, index: u64) -> Step {
    Step::Nan { dst: dst.to_owned(), index: index as usize }
}

/// `output0 = input0 + input1`, donated to input 0, and `output1 = 2 × input1`, over `f32[2]`.
pub fn in_place_model(return_aliases: bool) -> ModelDef {
    ModelDef {
        inputs: vec![
            TensorDef::input("input0", DataType::Float, &[2]),
            TensorDef::input("input1", DataType::Float, &[2]),
        ],
        outputs: vec![
            TensorDef::output("output0", DataType::Float, &[2]),
            TensorDef::output("output1", DataType::Float, &[2]),
        ],
        aliases: [(0, 0)].into_iter().collect(),
        return_aliases,
        ops: vec![op_add("output0", "input0", "input1"), op_scale("output1", "input1", 2.0)],
        ..ModelDef::new("in_place")
    }
}

/// `output0 = input0 × factor` over f32 `shape`.
pub fn scale_model(shape: &[i64], factor: f64) -> ModelDef {
    ModelDef {
        inputs: vec![TensorDef::input("input0", DataType::Float, shape)],
        outputs: vec![TensorDef::output("output0", DataType::Float, shape)],
        ops: vec![op_scale("output0", "input0", factor)],
        ..ModelDef::new("scale")
    }
}

/// `output0 = input0` over `n_bytes` of uint8: the launch-overhead model.
pub fn copy_model(n_bytes: i64) -> ModelDef {
    ModelDef {
        inputs: vec![TensorDef::input("input0", DataType::Uint8, &[n_bytes])],
        outputs: vec![TensorDef::output("output0", DataType::Uint8, &[n_bytes])],
        ops: vec![op_copy("output0", "input0")],
        ..ModelDef::new("copy")
    }
}

/// A `mul` step.
pub fn op_mul(dst: &str, a: &str, b: &str) -> Step {
    Step::Mul { dst: dst.to_owned(), a: a.to_owned(), b: b.to_owned() }
}

/// `sum = x + y`, `prod = x × y × 2`, over `f32[n]`; the names are the NKI style (`x`, `y`).
pub fn arithmetic_model(n: i64) -> ModelDef {
    ModelDef {
        inputs: vec![
            TensorDef::input("x", DataType::Float, &[n]),
            TensorDef::input("y", DataType::Float, &[n]),
        ],
        outputs: vec![
            TensorDef::output("sum", DataType::Float, &[n]),
            TensorDef::output("prod", DataType::Float, &[n]),
        ],
        ops: vec![op_add("sum", "x", "y"), op_mul("prod", "x", "y"), op_scale("prod", "prod", 2.0)],
        ..ModelDef::new("arithmetic")
    }
}

/// `output0 = input0`, then element `index` of output0 set to NaN, over `f32[4]`.
pub fn nan_model(index: u64) -> ModelDef {
    ModelDef {
        inputs: vec![TensorDef::input("input0", DataType::Float, &[4])],
        outputs: vec![TensorDef::output("output0", DataType::Float, &[4])],
        ops: vec![op_copy("output0", "input0"), op_nan("output0", index)],
        ..ModelDef::new("nan")
    }
}

/// `output0 = input0` over `dltype[n]`, as HLO text.
pub fn copy_hlo(dltype: Dltype, n: i64) -> String {
    let mut hlo = sim::hlo_text::HloText::new("copy");
    let x = hlo.parameter(dltype, &[n]);
    hlo.finish(&[x])
}

/// The NEFF bytes of a simulator description (one changed after [`ModelDef::description`], say
/// without its program), with its device program, if any, as the `sim/model.hlo.pb` member.
pub fn neff_of(description: &ModelDescription) -> Vec<u8> {
    let spec = sim::neff_load::neff_spec_of(description).expect("a NEFF spec");
    abi::neff::write_neff(&spec).expect("write the NEFF")
}

/// Little-endian f32 bytes: the one helper every test uses.
pub fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|value| value.to_le_bytes()).collect()
}

/// The f32 values of little-endian bytes (a trailing partial value is ignored).
pub fn f32_values(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|chunk| f32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]))
        .collect()
}
