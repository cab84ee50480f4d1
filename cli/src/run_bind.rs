//! `nrtsim run --metaneff`: a launch through the binding layer (`bind::Model::forward`), as
//! libtorchneuron makes it, with weights from a `.safetensors` file.
//!
//! Design choices:
//! - **The layer decides.** User inputs are handed to `Model::forward`, which validates them
//!   with libtorchneuron's checks and messages, batches dynamic inputs and donates aliased
//!   outputs; this file only reads files and reports.
//! - **Inputs by position or by name.** `--input FILE.npy` fills the metaneff's user inputs in
//!   order; `--input NAME=FILE.npy` (NAME a user input's name) fills that one, and positional
//!   files fill the slots left.
//! - **Weights are checked here first**, against the metaneff, so a wrong file is reported with
//!   its path, the `checkpoint_key` and the expected dtype and shape. States whose key the file
//!   has start from its value; the others start at zero.
//! - **The program** comes from the NEFF, `--hlo` or the metaneff's `serialized_graph_def`, as
//!   for the raw path; the last two reach the simulator through its `hlo_source` (a scratch file
//!   for the graph, removed after the run).
//! - **Progress** (`launch i/N` on stderr) only for `--repeat` above 1 and when stderr is a
//!   terminal, so captured output stays clean.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use abi::dtype::{ScalarType, decode_elements, scalar_type_of_raw};
use abi::metaneff::Decoded;
use abi::metaneff::decoded::DecodedTensor;
use abi::runtime::Framework;
use abi::runtime::prelude::*;
use abi::status::NrtStatus;
use anyhow::{Context, Result, anyhow, bail};
use bind::{HostTensor, Model, ModelOptions, Weights};
use sim::{HloSource, SimConfig, SimRuntime};

use crate::input;
use crate::run::{RunArgs, program};

/// A scratch file that is removed when dropped.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn is_user(tensor: &DecodedTensor<'_>) -> bool {
    matches!(tensor.r#type(), 0 | 1)
}

/// The user inputs, read from the `--input` items, in metaneff order.
fn read_inputs(args: &RunArgs, meta: &Decoded) -> Result<Vec<HostTensor>> {
    let users: Vec<String> =
        meta.input_tensors().iter().filter(is_user).map(|t| lossy(t.name())).collect();
    // The signature's types tell the fp8 types' shared descr `|V1` apart.
    let types: Vec<Option<ScalarType>> = meta
        .input_tensors()
        .iter()
        .filter(is_user)
        .map(|t| scalar_type_of_raw(t.data_type()).ok())
        .collect();
    let mut slots: Vec<Option<PathBuf>> = vec![None; users.len()];
    let mut positional = Vec::new();
    for item in &args.inputs {
        let named = item
            .split_once('=')
            .and_then(|(name, file)| Some((users.iter().position(|u| u == name)?, name, file)));
        match named {
            Some((index, name, file)) => {
                if slots[index].replace(PathBuf::from(file)).is_some() {
                    bail!("--input {name:?} is given twice");
                }
            }
            None => positional.push(PathBuf::from(item)),
        }
    }
    let mut positional = positional.into_iter();
    for slot in slots.iter_mut().filter(|slot| slot.is_none()) {
        *slot = positional.next();
    }
    if let Some(extra) = positional.next() {
        bail!(
            "--input {}: every user input is already given, expected {} inputs ({users:?})",
            extra.display(),
            users.len()
        );
    }
    let mut tensors = Vec::with_capacity(users.len());
    for ((name, slot), scalar_type) in users.iter().zip(slots).zip(types) {
        let path = slot.ok_or_else(|| {
            anyhow!(
                "user input {name:?} is missing: the metaneff's user inputs are {users:?}, give \
                 one --input FILE.npy each, in that order (or NAME=FILE.npy)"
            )
        })?;
        let bytes = input::read_capped(&path, args.max_input_bytes)?;
        tensors.push(
            npy_tensor(&bytes, scalar_type)
                .map_err(|err| anyhow!("user input {name:?} ({}): {err}", path.display()))?,
        );
    }
    Ok(tensors)
}

/// A host tensor from `.npy` bytes, read for the signature's type when there is one (bfloat16
/// and fp8 included: their void descrs are told apart by it).
fn npy_tensor(bytes: &[u8], scalar_type: Option<ScalarType>) -> Result<HostTensor> {
    match scalar_type {
        Some(scalar_type) => HostTensor::from_npy_for(bytes, scalar_type),
        None => HostTensor::from_npy(bytes),
    }
    .map_err(|err| anyhow!("{err}"))
}

/// The weights of `--weights`, checked against the metaneff's states and weights.
fn read_weights(args: &RunArgs, meta: &Decoded) -> Result<Weights> {
    let Some(path) = &args.weights else {
        return Ok(Weights::new());
    };
    let file = path.display().to_string();
    let bytes = input::read_capped(path, args.max_input_bytes)?;
    let weights = crate::safetensors::parse(&file, &bytes)?;
    for tensor in meta.input_tensors() {
        let kind = match tensor.r#type() {
            2 => "INPUT_STATE",
            3 => "INPUT_WEIGHT",
            _ => continue,
        };
        let Some(key) = tensor.checkpoint_key() else { continue };
        let name = lossy(tensor.name());
        let expected = match scalar_type_of_raw(tensor.data_type()) {
            Ok(scalar_type) => (scalar_type, tensor.shape()),
            Err(_) => continue,
        };
        let expected_text = format!("{} {:?}", expected.0.name(), expected.1);
        match weights.get(key) {
            None if kind == "INPUT_WEIGHT" => bail!(
                "{file}: no tensor {:?}, expected {expected_text} for {kind} {name:?}",
                lossy(key)
            ),
            Some(weight) if (weight.scalar_type(), weight.shape()) != expected => bail!(
                "{file}: tensor {:?}: {} {:?}, expected {expected_text} for {kind} {name:?}",
                lossy(key),
                weight.scalar_type().name(),
                weight.shape()
            ),
            None | Some(_) => {}
        }
    }
    Ok(weights)
}

/// One summary line of an output: dtype, shape, and the min, max and mean of its elements.
pub(crate) fn summary(name: &str, tensor: &HostTensor) -> String {
    let head = format!("{name}: {} {:?}", tensor.scalar_type().name(), tensor.shape());
    let values = decode_elements(tensor.scalar_type(), &tensor.to_bytes()).unwrap_or_default();
    if values.is_empty() {
        return format!("{head} (no elements)");
    }
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    format!("{head} min {min} max {max} mean {mean}")
}

/// The names of the outputs `forward` returns, in its order.
fn output_names(meta: &Decoded) -> Vec<String> {
    let return_aliases = meta.model_config().is_some_and(|c| c.return_aliases);
    meta.output_tensors()
        .iter()
        .enumerate()
        .filter(|(index, _)| return_aliases || meta.alias_of(*index as i64).is_none())
        .map(|(_, tensor)| lossy(tensor.name()))
        .collect()
}

/// Runs `nrtsim run --metaneff`; returns whether every launch succeeded.
pub(crate) fn run(args: &RunArgs) -> Result<bool> {
    let metaneff_path = args.metaneff.as_deref().unwrap_or(Path::new("-"));
    let neff = input::read_capped(&args.neff, args.max_input_bytes)?;
    let metaneff = input::read_capped(metaneff_path, args.max_input_bytes)?;
    let meta = args.decode_metaneff(metaneff_path, metaneff.clone())?;
    let description = args.describe_neff(&neff)?;
    let mut config = SimConfig { warnings_to_stderr: !args.allow_opaque, ..SimConfig::from_env()? };
    args.apply_limits(&mut config);
    let mut _scratch = None;
    if let Some((hlo, _origin)) = program(args, description.hlo.is_some())? {
        let path = match &args.hlo {
            Some(path) => path.clone(),
            None => {
                let path = std::env::temp_dir()
                    .join(format!("nrtsim-run-{}-graph.hlo.pb", std::process::id()));
                conformance::output_file::write(&path, &hlo)
                    .with_context(|| format!("writing {}", path.display()))?;
                _scratch = Some(Scratch(path.clone()));
                path
            }
        };
        config.hlo_source = Some(HloSource::File(path));
    }
    let inputs = read_inputs(args, &meta)?;
    let weights = read_weights(args, &meta)?;
    let runtime = SimRuntime::new(config).map_err(|err| anyhow!("{err}"))?;
    let runtime: Arc<dyn Runtime> = Arc::new(runtime);
    runtime
        .init(Framework::NoFw, "", "")
        .map_err(|e| anyhow!("nrt_init: {} ({})", e.detail, e.status.name()))?;
    let options = ModelOptions {
        weights,
        metaneff_limits: args.metaneff_limits.limits(),
        neff_read_options: args.neff_limits.read_options(),
        ..ModelOptions::default()
    };
    let mut model = Model::new(runtime, &neff, &metaneff, options).map_err(|err| {
        let message = crate::limits::with_flag_for_loader_limit(&err.to_string());
        anyhow!("{}: {message}", args.neff.display())
    })?;
    let progress = args.repeat > 1 && std::io::stderr().is_terminal();
    let mut last = None;
    let mut failed = None;
    for launch in 1..=args.repeat {
        if progress {
            eprint!("\rlaunch {launch}/{}", args.repeat);
        }
        let output = model.forward(&inputs).map_err(|err| {
            let error = anyhow!("forward: {err}");
            if error.to_string().contains("NRT_TIMEOUT") {
                error.context(crate::run::LIMIT_HINT)
            } else {
                error
            }
        })?;
        if output.status != NrtStatus::Success && failed.is_none() {
            failed = Some((launch, output.status));
        }
        last = Some(output);
    }
    if progress {
        eprintln!();
    }
    let output = last.ok_or_else(|| anyhow!("--repeat must be at least 1"))?;
    let names = output_names(&meta);
    if !args.print {
        std::fs::create_dir_all(&args.output_dir)
            .with_context(|| format!("creating {}", args.output_dir.display()))?;
    }
    for (name, tensor) in names.iter().zip(&output.outputs) {
        if args.print {
            println!("{}", summary(name, tensor));
            continue;
        }
        let file = tensor.to_npy().map_err(|err| anyhow!("output {name:?}: {err}"))?;
        let path = args.output_dir.join(format!("{name}.npy"));
        conformance::output_file::write(&path, &file)
            .with_context(|| format!("writing {}", path.display()))?;
        println!("wrote {}", path.display());
    }
    match failed {
        None => Ok(true),
        Some((launch, status)) => {
            eprintln!(
                "nrtsim: launch {launch} returned {} ({}); outputs written",
                status.name(),
                status.code()
            );
            Ok(false)
        }
    }
}
