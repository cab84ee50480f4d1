//! `nrtsim check`: does a NEFF/metaneff pair bind? Every rule the binding layer relies on, as
//! findings with stable codes.
//!
//! Design choices:
//! - **Findings, not a first error.** A producer fixing a pair wants every defect at once, so the
//!   checker never stops at the first one; each [`Finding`] carries a stable [`Code`] (`E001`,
//!   `W001`, …, never renumbered: a retired rule keeps its number unused), a severity, the tensor
//!   it is about, what was expected and what came, and the fix.
//! - **Errors are what breaks binding or launch; warnings are what the checker cannot judge**
//!   (a variable without a size, a tensor the signature does not list) or what binds but is
//!   suspicious (unknown fields, count fields that disagree with the tensor types).
//! - **A package of its own, not part of `abi` or of the vector runner.** The HLO rule needs the
//!   `hlo` crate, and `abi` is the contract with no dependency on the device-program language;
//!   the checker reads both, and nothing more, so the `nrtsim` tool and anything else that lints
//!   a pair use it without building the runner and its backends.
//! - **Dtypes are compared through the producers' maps.** A neff.json `uint32` is an XLA `U32`,
//!   which every producer writes as metaneff `INT32`; an HLO `PRED` is `BOOL` for torch-neuronx
//!   and `UINT8` for transformers-neuronx. A metaneff dtype agrees with a neff.json dltype or an
//!   HLO element type when some producer writes it for that type.
//! - **Deterministic output.** Findings come in rule order, then tensor order; the text form has
//!   no paths or addresses, so it can be pinned by snapshots.
//! - **The inverse lives here too** ([`from_hlo`], `nrtsim metaneff from-hlo`): writing the
//!   producers' metaneff of an HLO module reads the same two crates through the same producers'
//!   maps, so the rules the checker applies and the metaneff the writer makes stay side by side.
#![forbid(unsafe_code)]

pub mod from_hlo;

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};

use abi::dtype::{Dltype, Producer, XlaPrimitiveType, n_bytes_of_raw, scalar_type_of_raw};
use abi::metaneff::decoded::{DecodedTensor, DecodedTensors};
use abi::metaneff::{self, Decoded, MetaneffDecodeError, MetaneffLimits};
use abi::neff::{MrType, Neff, Var};
use hlo::proto::{HloModuleProto, PrimitiveType, ShapeProto};
use serde_json::{Value, json};

/// How bad a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// The pair does not bind, or a launch fails or computes on the wrong bytes.
    Error,
    /// The checker could not judge a rule, or the pair binds but something is suspicious.
    Warning,
}

impl Severity {
    /// `error` or `warning`.
    pub fn name(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

/// Declares the finding codes with their number, name and severity in one row each.
macro_rules! codes {
    ($($(#[$doc:meta])* $variant:ident = $code:literal, $name:literal, $severity:ident;)*) => {
        /// A stable finding code.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Code {
            $($(#[$doc])* $variant,)*
        }

        impl Code {
            /// Every code, in number order.
            pub const ALL: &'static [Code] = &[$(Code::$variant,)*];

            /// The stable code, such as `E001`.
            pub fn code(self) -> &'static str {
                match self {
                    $(Code::$variant => $code,)*
                }
            }

            /// The stable name, such as `unknown-input-name`.
            pub fn name(self) -> &'static str {
                match self {
                    $(Code::$variant => $name,)*
                }
            }

            /// Whether a finding of this code is an error or a warning.
            pub fn severity(self) -> Severity {
                match self {
                    $(Code::$variant => Severity::$severity,)*
                }
            }
        }
    };
}

codes! {
    /// A metaneff input names no input variable of the NEFF.
    UnknownInputName = "E001", "unknown-input-name", Error;
    /// A metaneff output names no output variable of the NEFF.
    UnknownOutputName = "E002", "unknown-output-name", Error;
    /// A NEFF input variable has no metaneff input.
    MissingInput = "E003", "missing-input", Error;
    /// A NEFF output variable has no metaneff output.
    MissingOutput = "E004", "missing-output", Error;
    /// Two metaneff inputs (or two outputs) have the same name.
    DuplicateTensorName = "E005", "duplicate-tensor-name", Error;
    /// A data_type libtorchneuron has no torch type for.
    UnsupportedDataType = "E006", "unsupported-data-type", Error;
    /// `item size × Π shape` differs from the NEFF variable's size, or cannot be computed.
    SizeMismatch = "E007", "size-mismatch", Error;
    /// The data_type is not what any producer writes for the neff.json dltype.
    DtypeMismatch = "E008", "dtype-mismatch", Error;
    /// An `output_aliases_to` key or value is not an output or input index.
    AliasOutOfRange = "E009", "alias-out-of-range", Error;
    /// An aliased output and its input differ in dtype or shape.
    AliasIncompatible = "E010", "alias-incompatible", Error;
    /// A `type` value outside the schema's enum.
    UnknownTensorType = "E011", "unknown-tensor-type", Error;
    /// Inputs not in the order user inputs, then states, then weights.
    InputOrder = "E012", "input-order", Error;
    /// A state or weight without `checkpoint_key`.
    MissingCheckpointKey = "E013", "missing-checkpoint-key", Error;
    /// Two states or weights with the same `checkpoint_key`.
    DuplicateCheckpointKey = "E014", "duplicate-checkpoint-key", Error;
    /// `allow_dynamic_batch_size` on a tensor without a leading dimension.
    DynamicBatchWithoutLeadingDimension = "E015", "dynamic-batch-without-leading-dimension", Error;
    /// `serialized_graph_def` is not a valid HLO module.
    InvalidHlo = "E016", "invalid-hlo", Error;
    /// The HLO entry has another number of parameters than the metaneff has inputs.
    HloParameterCount = "E017", "hlo-parameter-count", Error;
    /// An HLO parameter's type or shape differs from its metaneff input.
    HloParameterMismatch = "E018", "hlo-parameter-mismatch", Error;
    /// The HLO entry has another number of results than the metaneff has outputs.
    HloResultCount = "E019", "hlo-result-count", Error;
    /// An HLO result's type or shape differs from its metaneff output.
    HloResultMismatch = "E020", "hlo-result-mismatch", Error;
    /// A field the metaneff schema does not know (binding ignores it).
    UnknownField = "W001", "unknown-field", Warning;
    /// The NEFF variable has no size, so the size rule could not be checked.
    UncheckedSize = "W002", "unchecked-size", Warning;
    /// neff.json gives no (known) dltype for the tensor, so the dtype rule could not be checked.
    UncheckedDtype = "W003", "unchecked-dtype", Warning;
    /// `num_user_inputs`, `num_states` or `num_weights` disagree with the tensor types.
    CountFieldMismatch = "W004", "count-field-mismatch", Warning;
    /// An input with `UNDEFINED_TYPE`: bound as a user input, but never validated.
    UntypedInput = "W005", "untyped-input", Warning;
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.code(), self.name())
    }
}

/// Which list of the metaneff a tensor is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Side {
    /// `input_tensors`.
    Input,
    /// `output_tensors`.
    Output,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Input => "input",
            Side::Output => "output",
        }
    }
}

/// The tensor a finding is about.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct TensorRef {
    /// Input or output.
    pub side: Side,
    /// Its index in the metaneff list; `None` for a NEFF variable the metaneff lacks.
    pub index: Option<usize>,
    /// Its name (lossily decoded when not UTF-8).
    pub name: String,
}

impl fmt::Display for TensorRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.index {
            Some(index) => write!(f, "{} {index} {:?}", self.side.name(), self.name),
            None => write!(f, "{} variable {:?}", self.side.name(), self.name),
        }
    }
}

/// One broken (or unchecked) rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// The stable code; its severity is [`Code::severity`].
    pub code: Code,
    /// The tensor, when the rule is about one.
    pub tensor: Option<TensorRef>,
    /// What is wrong: what was expected and what came.
    pub message: String,
    /// How to fix it.
    pub fix: String,
}

impl Finding {
    /// The severity of the finding's code.
    pub fn severity(&self) -> Severity {
        self.code.severity()
    }

    /// The finding as one JSON object with stable keys.
    pub fn to_json(&self) -> Value {
        json!({
            "code": self.code.code(),
            "name": self.code.name(),
            "severity": self.severity().name(),
            "tensor": self.tensor.as_ref().map(|tensor| json!({
                "side": tensor.side.name(),
                "index": tensor.index,
                "name": tensor.name,
            })),
            "message": self.message,
            "fix": self.fix,
        })
    }
}

/// Every finding of one check, in rule order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// The findings.
    pub findings: Vec<Finding>,
}

impl Report {
    /// Whether any finding is an error.
    pub fn has_errors(&self) -> bool {
        self.findings.iter().any(|finding| finding.severity() == Severity::Error)
    }

    /// The number of findings of a severity.
    pub fn count(&self, severity: Severity) -> usize {
        self.findings.iter().filter(|finding| finding.severity() == severity).count()
    }

    /// The report as one JSON object: the findings and the counts.
    pub fn to_json(&self) -> Value {
        json!({
            "findings": self.findings.iter().map(Finding::to_json).collect::<Vec<_>>(),
            "errors": self.count(Severity::Error),
            "warnings": self.count(Severity::Warning),
        })
    }

    /// The report for people: one block per finding and a summary line.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail, so the results of `writeln!` are ignored throughout.
        for finding in &self.findings {
            let _ = write!(out, "{}[{}]", finding.severity().name(), finding.code);
            if let Some(tensor) = &finding.tensor {
                let _ = write!(out, " {tensor}");
            }
            let _ = writeln!(out, ": {}", finding.message);
            let _ = writeln!(out, "  fix: {}", finding.fix);
        }
        let errors = self.count(Severity::Error);
        let warnings = self.count(Severity::Warning);
        let verdict = if errors == 0 { "binds" } else { "does not bind" };
        let _ = writeln!(out, "{errors} error(s), {warnings} warning(s): the pair {verdict}");
        out
    }
}

/// Why a pair could not be checked at all.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The metaneff bytes are not a metaneff, or one past [`CheckLimits::metaneff`]
    /// ([`MetaneffDecodeError::exceeded`] says which limit).
    #[error("metaneff does not decode: {0}")]
    Metaneff(#[from] MetaneffDecodeError),
    /// The HLO module in `serialized_graph_def` is past [`CheckLimits::hlo`]: a count limit is a
    /// refusal to read the module, not a finding about it, so the pair is not checked.
    #[error("serialized_graph_def: {0}")]
    HloLimit(hlo::LoadError),
}

/// The count limits the checker reads the metaneff and its HLO module under; the defaults are
/// the libraries' ([`MetaneffLimits::default`], [`hlo::LoadLimits::default`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CheckLimits {
    /// The metaneff's tensors and shape dimensions.
    pub metaneff: MetaneffLimits,
    /// The computations and instructions of the module in `serialized_graph_def`.
    pub hlo: hlo::LoadLimits,
}

/// Checks a parsed NEFF against metaneff bytes.
///
/// # Errors
/// [`CheckError::Metaneff`] when the metaneff does not decode (with the byte offset and field);
/// everything else is a finding in the [`Report`].
pub fn check(neff: &Neff, metaneff_bytes: &[u8]) -> Result<Report, CheckError> {
    check_with_limits(neff, metaneff_bytes, &CheckLimits::default())
}

/// [`check`] with the metaneff and its module read under count limits other than the defaults.
///
/// # Errors
/// As [`check`], and [`CheckError::HloLimit`] for a module past [`CheckLimits::hlo`].
pub fn check_with_limits(
    neff: &Neff,
    metaneff_bytes: &[u8],
    limits: &CheckLimits,
) -> Result<Report, CheckError> {
    let meta = Decoded::decode_with_limits(metaneff_bytes, &limits.metaneff)?;
    // The schema walk lists unknown fields with their paths; it runs only when the decode
    // counted some (it refuses what the decode refuses, with the same error, so it cannot fail
    // here).
    let unknown_fields = match meta.n_unknown_fields() {
        0 => Vec::new(),
        _ => metaneff::check_wire(metaneff_bytes)?,
    };
    let mut checker = Checker { meta: &meta, findings: Vec::new() };
    checker.names(neff);
    checker.sizes_and_dtypes(neff);
    checker.aliases();
    checker.input_types();
    checker.checkpoint_keys();
    checker.dynamic_batch();
    checker.hlo(&limits.hlo).map_err(CheckError::HloLimit)?;
    checker.count_fields();
    for field in unknown_fields {
        checker.push(
            Code::UnknownField,
            None,
            format!("unknown {field}, expected only fields of the metaneff schema"),
            "remove the field, or update the schema if a newer runtime reads it; binding ignores it",
        );
    }
    Ok(Report { findings: checker.findings })
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn data_type_name(value: i32) -> String {
    metaneff::meta_tensor::DataType::try_from(value).map_or_else(
        |_| format!("data_type {value}"),
        |data_type| data_type.as_str_name().to_owned(),
    )
}

/// Whether some producer writes `data_type` for the XLA type.
fn producers_write(xla_type: XlaPrimitiveType, data_type: i32) -> bool {
    [Producer::TorchNeuronx, Producer::TransformersNeuronx]
        .into_iter()
        .any(|producer| producer.data_type_of(xla_type) as i32 == data_type)
}

/// Whether a metaneff data_type agrees with a neff.json dltype: libtorchneuron maps it to the
/// dltype's torch type (BYTE and UINT8 are both `uint8`), or a producer writes it for the
/// dltype's XLA type (`uint32` is written INT32).
fn agrees_with_dltype(dltype: Dltype, data_type: i32) -> bool {
    abi::dtype::dltype_of_raw(data_type).is_ok_and(|own| own == dltype)
        || producers_write(dltype.xla_primitive_type(), data_type)
}

/// The names of the data_types that satisfy `agrees`, for messages.
fn data_types_where(agrees: impl Fn(i32) -> bool) -> String {
    let names: Vec<&str> = (0..=16)
        .filter(|&value| agrees(value))
        .filter_map(|value| metaneff::meta_tensor::DataType::try_from(value).ok())
        .map(|data_type| data_type.as_str_name())
        .collect();
    if names.is_empty() { "no data_type".to_owned() } else { names.join(" or ") }
}

struct Checker<'meta> {
    meta: &'meta Decoded,
    findings: Vec<Finding>,
}

impl<'meta> Checker<'meta> {
    fn push(&mut self, code: Code, tensor: Option<TensorRef>, message: String, fix: &str) {
        self.findings.push(Finding { code, tensor, message, fix: fix.to_owned() });
    }

    fn tensors(&self) -> impl Iterator<Item = (Side, usize, DecodedTensor<'meta>)> + use<'meta> {
        let inputs = self.meta.input_tensors().iter().enumerate().map(|(i, t)| (Side::Input, i, t));
        let outputs =
            self.meta.output_tensors().iter().enumerate().map(|(i, t)| (Side::Output, i, t));
        inputs.chain(outputs)
    }

    fn list(&self, side: Side) -> DecodedTensors<'meta> {
        match side {
            Side::Input => self.meta.input_tensors(),
            Side::Output => self.meta.output_tensors(),
        }
    }

    /// Names: every metaneff tensor is a NEFF variable of its side and vice versa, and no name
    /// appears twice in one list.
    fn names(&mut self, neff: &Neff) {
        for (side, mr_type, unknown, missing) in [
            (Side::Input, MrType::Input, Code::UnknownInputName, Code::MissingInput),
            (Side::Output, MrType::Output, Code::UnknownOutputName, Code::MissingOutput),
        ] {
            let vars = neff_vars(neff, mr_type);
            let mut seen = BTreeMap::<&[u8], usize>::new();
            let list = self.list(side);
            let mut found = Vec::new();
            for (index, tensor) in list.iter().enumerate() {
                let tensor_ref = TensorRef { side, index: Some(index), name: lossy(tensor.name()) };
                if let Some(&first) = seen.get(tensor.name()) {
                    found.push(Finding {
                        code: Code::DuplicateTensorName,
                        tensor: Some(tensor_ref.clone()),
                        message: format!(
                            "name already used by {} {first}, expected names unique per list",
                            side.name()
                        ),
                        fix: "rename one of the two tensors after its NEFF variable".to_owned(),
                    });
                } else {
                    seen.insert(tensor.name(), index);
                }
                let known =
                    std::str::from_utf8(tensor.name()).is_ok_and(|name| vars.contains_key(name));
                if !known {
                    let names = vars.keys().cloned().collect::<Vec<_>>().join(", ");
                    found.push(Finding {
                        code: unknown,
                        tensor: Some(tensor_ref),
                        message: format!(
                            "no {} variable of the NEFF has this name, expected one of [{names}]",
                            side.name()
                        ),
                        fix: format!(
                            "name the tensor after the NEFF's {} variable it binds to",
                            side.name()
                        ),
                    });
                }
            }
            for name in vars.keys() {
                if !seen.contains_key(name.as_bytes()) {
                    found.push(Finding {
                        code: missing,
                        tensor: Some(TensorRef { side, index: None, name: name.clone() }),
                        message: format!(
                            "the NEFF has this {} variable, expected a metaneff {} tensor of \
                             that name",
                            side.name(),
                            side.name()
                        ),
                        fix: format!(
                            "add a {} tensor named {name:?} to the metaneff (or recompile)",
                            side.name()
                        ),
                    });
                }
            }
            self.findings.extend(found);
        }
    }

    /// Sizes against the NEFF variables and dtypes against the neff.json signature.
    fn sizes_and_dtypes(&mut self, neff: &Neff) {
        let inputs = neff_vars(neff, MrType::Input);
        let outputs = neff_vars(neff, MrType::Output);
        let mut found = Vec::new();
        for (side, index, tensor) in self.tensors() {
            let name = lossy(tensor.name());
            let tensor_ref = || Some(TensorRef { side, index: Some(index), name: name.clone() });
            let push = |found: &mut Vec<Finding>, code, message: String, fix: &str| {
                found.push(Finding { code, tensor: tensor_ref(), message, fix: fix.to_owned() });
            };
            if let Err(error) = scalar_type_of_raw(tensor.data_type()) {
                push(
                    &mut found,
                    Code::UnsupportedDataType,
                    error.to_string(),
                    "use a data_type with a torch type (FLOAT, INT32, BFLOAT16, …)",
                );
                continue;
            }
            let (vars, signature) = match side {
                Side::Input => (&inputs, &neff.signature.inputs),
                Side::Output => (&outputs, &neff.signature.outputs),
            };
            let Some(var) = vars.get(&name) else { continue };
            match (n_bytes_of_raw(tensor.shape(), tensor.data_type()), var.size) {
                (Err(error), _) => push(
                    &mut found,
                    Code::SizeMismatch,
                    format!("the size of shape {:?} cannot be computed: {error}", tensor.shape()),
                    "give the tensor the shape the NEFF was compiled for",
                ),
                (Ok(_), None) => push(
                    &mut found,
                    Code::UncheckedSize,
                    "the NEFF variable has no size, so the size rule was not checked".to_owned(),
                    "nothing to fix in the metaneff; a NEFF from neuronx-cc gives input and \
                     output variables a size",
                ),
                (Ok(n_bytes), Some(size)) if n_bytes != size => push(
                    &mut found,
                    Code::SizeMismatch,
                    format!(
                        "{} {:?} is {n_bytes} bytes, expected the NEFF variable's {size} bytes",
                        data_type_name(tensor.data_type()),
                        tensor.shape()
                    ),
                    "make data_type and shape those the NEFF was compiled for",
                ),
                (Ok(_), Some(_)) => {}
            }
            let dltype = signature.iter().find(|entry| entry.name == name).map(|e| &e.dtype);
            match dltype.map(|dtype| Dltype::from_name(dtype)) {
                None => push(
                    &mut found,
                    Code::UncheckedDtype,
                    format!(
                        "neff.json's signature does not list this {}, so the dtype rule was not \
                         checked",
                        side.name()
                    ),
                    "nothing to fix in the metaneff; the NEFF's neff.json lacks the tensor",
                ),
                Some(Err(error)) => push(
                    &mut found,
                    Code::UncheckedDtype,
                    format!("{error}, so the dtype rule was not checked"),
                    "nothing to fix in the metaneff; the NEFF's neff.json has an unknown dltype",
                ),
                Some(Ok(dltype)) if !agrees_with_dltype(dltype, tensor.data_type()) => {
                    push(
                        &mut found,
                        Code::DtypeMismatch,
                        format!(
                            "data_type is {}, expected {} for neff.json dltype {dltype}",
                            data_type_name(tensor.data_type()),
                            data_types_where(|value| agrees_with_dltype(dltype, value))
                        ),
                        "set data_type to the type the NEFF was compiled for",
                    );
                }
                Some(Ok(_)) => {}
            }
        }
        self.findings.extend(found);
    }

    /// `output_aliases_to`: keys are output indexes, values input indexes, and the two tensors
    /// have the same dtype and shape (the output is written into the input's buffer).
    fn aliases(&mut self) {
        let n_inputs = self.meta.input_tensors().len();
        let n_outputs = self.meta.output_tensors().len();
        let mut found = Vec::new();
        for &(output, input) in self.meta.output_aliases_to() {
            let output_index = usize::try_from(output).ok().filter(|&o| o < n_outputs);
            let input_index = usize::try_from(input).ok().filter(|&i| i < n_inputs);
            let (Some(output_index), Some(input_index)) = (output_index, input_index) else {
                found.push(Finding {
                    code: Code::AliasOutOfRange,
                    tensor: None,
                    message: format!(
                        "output_aliases_to {{ key: {output} value: {input} }}, expected a key \
                         in 0..{n_outputs} (outputs) and a value in 0..{n_inputs} (inputs)"
                    ),
                    fix: "key an alias by the output index, valued by the input index".to_owned(),
                });
                continue;
            };
            let Some(out) = self.meta.output_tensors().get(output_index) else { continue };
            let Some(inp) = self.meta.input_tensors().get(input_index) else { continue };
            if out.data_type() != inp.data_type() || out.shape() != inp.shape() {
                found.push(Finding {
                    code: Code::AliasIncompatible,
                    tensor: Some(TensorRef {
                        side: Side::Output,
                        index: Some(output_index),
                        name: lossy(out.name()),
                    }),
                    message: format!(
                        "aliases input {input_index} {:?} ({} {:?}) but is {} {:?}, expected the \
                         same dtype and shape",
                        lossy(inp.name()),
                        data_type_name(inp.data_type()),
                        inp.shape(),
                        data_type_name(out.data_type()),
                        out.shape()
                    ),
                    fix: "alias the output to the input it updates, or remove the alias".to_owned(),
                });
            }
        }
        self.findings.extend(found);
    }

    /// Tensor types: known values, untyped inputs, and the order user, state, weight.
    fn input_types(&mut self) {
        let mut found = Vec::new();
        // The rank of the latest input so far and the index that set it.
        let mut latest: Option<(u8, usize)> = None;
        for (index, tensor) in self.meta.input_tensors().iter().enumerate() {
            let tensor_ref = || {
                Some(TensorRef {
                    side: Side::Input,
                    index: Some(index),
                    name: lossy(tensor.name()),
                })
            };
            let rank = match tensor.r#type() {
                0 => {
                    found.push(Finding {
                        code: Code::UntypedInput,
                        tensor: tensor_ref(),
                        message: "type is UNDEFINED_TYPE: it is bound as a user input but its \
                                  dtype and shape are never validated"
                            .to_owned(),
                        fix: "set type to USER_INPUT, INPUT_STATE or INPUT_WEIGHT".to_owned(),
                    });
                    0
                }
                1 => 0,
                2 => 1,
                3 => 2,
                value => {
                    found.push(Finding {
                        code: Code::UnknownTensorType,
                        tensor: tensor_ref(),
                        message: format!(
                            "type is {value}, expected 0..=3 (UNDEFINED_TYPE, USER_INPUT, \
                             INPUT_STATE, INPUT_WEIGHT)"
                        ),
                        fix: "set type to USER_INPUT, INPUT_STATE or INPUT_WEIGHT".to_owned(),
                    });
                    continue;
                }
            };
            match latest {
                Some((latest_rank, latest_index)) if rank < latest_rank => {
                    found.push(Finding {
                        code: Code::InputOrder,
                        tensor: tensor_ref(),
                        message: format!(
                            "a {} after the {} at input {latest_index}, expected user inputs, \
                             then states, then weights",
                            rank_name(rank),
                            rank_name(latest_rank)
                        ),
                        fix: "reorder input_tensors (and the HLO parameters) as user inputs, \
                              states, weights"
                            .to_owned(),
                    });
                }
                Some((latest_rank, _)) if rank <= latest_rank => {}
                _ => latest = Some((rank, index)),
            }
        }
        self.findings.extend(found);
    }

    /// States and weights have a `checkpoint_key`, unique among them.
    fn checkpoint_keys(&mut self) {
        let mut found = Vec::new();
        let mut seen = BTreeMap::<&[u8], usize>::new();
        for (index, tensor) in self.meta.input_tensors().iter().enumerate() {
            let kind = match tensor.r#type() {
                2 => "INPUT_STATE",
                3 => "INPUT_WEIGHT",
                _ => continue,
            };
            let tensor_ref = Some(TensorRef {
                side: Side::Input,
                index: Some(index),
                name: lossy(tensor.name()),
            });
            match tensor.checkpoint_key() {
                None => found.push(Finding {
                    code: Code::MissingCheckpointKey,
                    tensor: tensor_ref,
                    message: format!("an {kind} without checkpoint_key, expected one"),
                    fix: "set checkpoint_key to the state or weight's name in the checkpoint"
                        .to_owned(),
                }),
                Some(key) => {
                    if let Some(&first) = seen.get(key) {
                        found.push(Finding {
                            code: Code::DuplicateCheckpointKey,
                            tensor: tensor_ref,
                            message: format!(
                                "checkpoint_key {:?} is also input {first}'s, expected keys \
                                 unique among states and weights",
                                lossy(key)
                            ),
                            fix: "give each state and weight its own checkpoint_key".to_owned(),
                        });
                    } else {
                        seen.insert(key, index);
                    }
                }
            }
        }
        self.findings.extend(found);
    }

    /// `allow_dynamic_batch_size` only where there is a leading dimension to batch.
    fn dynamic_batch(&mut self) {
        let mut found = Vec::new();
        for (side, index, tensor) in self.tensors() {
            if tensor.allow_dynamic_batch_size() && tensor.shape().is_empty() {
                found.push(Finding {
                    code: Code::DynamicBatchWithoutLeadingDimension,
                    tensor: Some(TensorRef {
                        side,
                        index: Some(index),
                        name: lossy(tensor.name()),
                    }),
                    message: "allow_dynamic_batch_size is set on a scalar, expected a tensor \
                              with a leading (batch) dimension"
                        .to_owned(),
                    fix: "clear allow_dynamic_batch_size on the scalar".to_owned(),
                });
            }
        }
        self.findings.extend(found);
    }

    /// The HLO module, when present: valid, and its entry's parameters and results match the
    /// inputs and outputs in order, dtype and shape.
    ///
    /// # Errors
    /// The load error of a module past `limits`, which is not read.
    fn hlo(&mut self, limits: &hlo::LoadLimits) -> Result<(), hlo::LoadError> {
        let bytes = self.meta.serialized_graph_def();
        if bytes.is_empty() {
            return Ok(());
        }
        let fix = "store the HloModuleProto the NEFF was compiled from";
        let module = match hlo::load_module_with_limits(bytes, limits) {
            Ok(module) => module,
            Err(
                error @ (hlo::LoadError::TooManyComputations { .. }
                | hlo::LoadError::TooManyInstructions { .. }),
            ) => return Err(error),
            Err(error) => {
                self.push(Code::InvalidHlo, None, format!("serialized_graph_def: {error}"), fix);
                return Ok(());
            }
        };
        if let Err(error) = hlo::validate(&module) {
            self.push(Code::InvalidHlo, None, format!("serialized_graph_def: {error}"), fix);
            return Ok(());
        }
        let Some((parameters, result)) = entry_signature(&module) else {
            self.push(
                Code::InvalidHlo,
                None,
                "serialized_graph_def has no entry signature, expected a program shape or an \
                 entry computation"
                    .to_owned(),
                fix,
            );
            return Ok(());
        };
        let results = match &result {
            Some(shape) if shape.element_type == PrimitiveType::Tuple as i32 => {
                shape.tuple_shapes.clone()
            }
            Some(shape) => vec![shape.clone()],
            None => Vec::new(),
        };
        for (side, shapes, count_code, mismatch_code, what) in [
            (
                Side::Input,
                &parameters,
                Code::HloParameterCount,
                Code::HloParameterMismatch,
                "parameter",
            ),
            (Side::Output, &results, Code::HloResultCount, Code::HloResultMismatch, "result"),
        ] {
            let list = self.list(side);
            if shapes.len() != list.len() {
                let message = format!(
                    "the HLO entry has {} {what}(s), expected one per metaneff {} ({})",
                    shapes.len(),
                    side.name(),
                    list.len()
                );
                self.push(count_code, None, message, "regenerate the metaneff from the HLO module");
                continue;
            }
            let mut found = Vec::new();
            for (index, (shape, tensor)) in shapes.iter().zip(list).enumerate() {
                let xla_name = PrimitiveType::try_from(shape.element_type).map_or_else(
                    |_| format!("element type {}", shape.element_type),
                    |t| t.as_str_name().to_owned(),
                );
                let type_ok = XlaPrimitiveType::from_name(&xla_name)
                    .is_ok_and(|xla_type| producers_write(xla_type, tensor.data_type()));
                if !type_ok || shape.dimensions != tensor.shape() {
                    found.push(Finding {
                        code: mismatch_code,
                        tensor: Some(TensorRef {
                            side,
                            index: Some(index),
                            name: lossy(tensor.name()),
                        }),
                        message: format!(
                            "HLO {what} {index} is {xla_name} {:?}, the metaneff says {} {:?}",
                            shape.dimensions,
                            data_type_name(tensor.data_type()),
                            tensor.shape()
                        ),
                        fix: format!(
                            "make the tensor's data_type and shape those of HLO {what} {index}"
                        ),
                    });
                }
            }
            self.findings.extend(found);
        }
        Ok(())
    }

    /// The count fields, when a producer wrote any, agree with the tensor types.
    fn count_fields(&mut self) {
        let meta = self.meta;
        if meta.num_user_inputs() == 0 && meta.num_states() == 0 && meta.num_weights() == 0 {
            return;
        }
        let count = |wanted: &[i32]| {
            let n = meta.input_tensors().iter().filter(|t| wanted.contains(&t.r#type())).count();
            i64::try_from(n).unwrap_or(i64::MAX)
        };
        for (field, value, actual) in [
            ("num_user_inputs", meta.num_user_inputs(), count(&[0, 1])),
            ("num_states", meta.num_states(), count(&[2])),
            ("num_weights", meta.num_weights(), count(&[3])),
        ] {
            if value != actual {
                self.push(
                    Code::CountFieldMismatch,
                    None,
                    format!("{field} is {value}, expected {actual} from the input tensors' types"),
                    "set the count fields from the input tensors, or leave them all unset",
                );
            }
        }
    }
}

fn rank_name(rank: u8) -> &'static str {
    match rank {
        0 => "user input",
        1 => "state",
        _ => "weight",
    }
}

/// The NEFF's variables of one memory type over all graphs, by name.
fn neff_vars(neff: &Neff, mr_type: MrType) -> BTreeMap<String, &Var> {
    let mut vars = BTreeMap::new();
    for graph in &neff.graphs {
        for var in &graph.vars {
            if var.mr_type == Some(mr_type) {
                vars.entry(var.name.clone()).or_insert(var);
            }
        }
    }
    vars
}

/// The entry's parameter shapes and result shape: the module's `host_program_shape`, else the
/// entry computation's `program_shape`, else its parameter and root instructions.
fn entry_signature(module: &HloModuleProto) -> Option<(Vec<ShapeProto>, Option<ShapeProto>)> {
    if let Some(shape) = &module.host_program_shape {
        return Some((shape.parameters.clone(), shape.result.clone()));
    }
    let entry = module
        .computations
        .iter()
        .find(|computation| computation.id == module.entry_computation_id)
        .or_else(|| module.computations.iter().find(|c| c.name == module.entry_computation_name))?;
    if let Some(shape) = &entry.program_shape {
        return Some((shape.parameters.clone(), shape.result.clone()));
    }
    let mut parameters: Vec<_> = entry
        .instructions
        .iter()
        .filter(|instruction| instruction.opcode == "parameter")
        .map(|instruction| (instruction.parameter_number, instruction.shape.clone()))
        .collect();
    parameters.sort_by_key(|(number, _)| *number);
    let root = entry.instructions.iter().find(|instruction| instruction.id == entry.root_id);
    Some((
        parameters.into_iter().map(|(_, shape)| shape.unwrap_or_default()).collect(),
        root.and_then(|instruction| instruction.shape.clone()),
    ))
}
