//! `nrtsim compile …` and the `neuronx-cc` personality of `nrtsim` (`argv[0]` named `neuronx-cc`):
//! neuronx-cc's command line over the simulator's compile target (the `compile` library).
//!
//! Exit statuses as neuronx-cc's: 0 on success, 1 for a module that does not compile (the message
//! names the instruction), 2 for a command line it would refuse. The NEFF is written through
//! `conformance::output_file`: to a fresh temporary file beside the output, then renamed, so a
//! failed compile never leaves a partial file, a link planted at the temporary name is never
//! followed, and an output path that is not a regular file is refused.

use std::ffi::OsStr;
use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;

use ::compile::{self, Invocation};
use anyhow::{Context, Result};
use clap::Args;

/// The program name whose `argv[0]` makes `nrtsim` behave as neuronx-cc.
pub(crate) const NEURONX_CC: &str = "neuronx-cc";

/// `nrtsim compile`'s arguments: neuronx-cc's, parsed by the `compile` library.
#[derive(Args)]
#[command(disable_help_flag = true)]
pub(crate) struct CompileArgs {
    /// neuronx-cc's compile arguments: MODEL --framework XLA --target T [--output PATH] …
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, value_name = "ARGS")]
    args: Vec<String>,
}

/// Whether `argv0` names the `neuronx-cc` personality.
pub(crate) fn is_neuronx_cc(argv0: &OsStr) -> bool {
    Path::new(argv0).file_name() == Some(OsStr::new(NEURONX_CC))
}

/// `nrtsim compile ARGS…`.
pub(crate) fn run(args: CompileArgs) -> ExitCode {
    let mut argv = vec!["compile".to_owned()];
    argv.extend(args.args);
    neuronx_cc("nrtsim", &argv)
}

/// neuronx-cc on `args` (argv after the program name); `program` names the tool in messages.
pub(crate) fn neuronx_cc(program: &str, args: &[String]) -> ExitCode {
    let invocation = match compile::parse_neuronx_cc_args(args) {
        Ok(invocation) => invocation,
        Err(error) => {
            eprintln!("{program}: error: {error}");
            let command = args.first().filter(|command| *command == "compile");
            let help = command.map_or(String::new(), |command| format!(" {command}"));
            eprintln!("(`{program}{help} --help` for usage)");
            return ExitCode::from(2);
        }
    };
    let result = match invocation {
        Invocation::Version => print(&format!("{}\n", compile::version_line())),
        Invocation::Help { command } => print(&compile::help_text(program, command.as_deref())),
        Invocation::ListOperators => {
            let mut text = String::new();
            for opcode in hlo::eval::EVALUATED_OPCODES {
                text.push_str(opcode);
                text.push('\n');
            }
            // Custom calls run by their target: one line each, after the opcodes.
            for target in hlo::eval::EVALUATED_CUSTOM_CALLS {
                text.push_str(&format!("custom-call {target}\n"));
            }
            print(&text)
        }
        Invocation::Compile { input, output, options } => compile_file(&input, &output, &options),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("{program}: error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn print(text: &str) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes()).context("writing to stdout")?;
    stdout.flush().context("writing to stdout")
}

/// The environment variable that raises the cap on the model file (neuronx-cc's command line has
/// no flag for it); the default is the cap of every HLO module `nrtsim` reads.
const MAX_INPUT_ENV: &str = "NRTSIM_COMPILE_MAX_INPUT_BYTES";

fn input_cap() -> Result<u64> {
    match std::env::var(MAX_INPUT_ENV) {
        Err(_) => Ok(crate::input::DEFAULT_MAX_HLO_BYTES),
        Ok(value) => value
            .trim()
            .parse()
            .with_context(|| format!("{MAX_INPUT_ENV}={value:?}: expected a number of bytes")),
    }
}

fn compile_file(input: &Path, output: &Path, options: &compile::CompileOptions) -> Result<()> {
    let (bytes, weights) = if input.is_dir() {
        read_model_folder(input)?
    } else {
        (crate::input::read_capped_with_flag(input, input_cap()?, MAX_INPUT_ENV)?, Vec::new())
    };
    // The module's count limits are the simulator's loader's, from the same variables, so the
    // compile target refuses exactly what a load would refuse.
    let limits = sim::config::hlo_limits_from_env(|name| std::env::var(name).ok())?;
    let options = compile::CompileOptions { limits, ..options.clone() };
    let neff =
        compile::compile_with_weights(&bytes, &weights, &options).map_err(
            |error| match &error {
                compile::CompileError::CountLimit { what, .. } => {
                    let variable = match what {
                        compile::ModuleCount::Computations => sim::config::MAX_HLO_COMPUTATIONS_ENV,
                        compile::ModuleCount::Instructions => sim::config::MAX_HLO_INSTRUCTIONS_ENV,
                    };
                    anyhow::anyhow!("{error}; set {variable} higher to compile it")
                }
                _ => anyhow::Error::new(error),
            },
        )?;
    // Through the one output writer: beside, then renamed, never following a link nor replacing
    // anything but a regular file.
    conformance::output_file::write(output, &neff)
        .with_context(|| format!("writing {}", output.display()))
}

/// The cap on a model folder's `metadata.json`.
const MAX_METADATA_BYTES: u64 = 16 << 20;

/// `metadata.json` of a model folder, as torch-neuronx writes it for neuronx-cc: the module's
/// file and the weights' `.npy` files by key, both relative to the folder.
#[derive(serde::Deserialize)]
struct ModelMetadata {
    model_files: String,
    #[serde(default)]
    weights: std::collections::BTreeMap<String, String>,
}

/// A model folder: the module named by `metadata.json`, and each weight's elements from its
/// `.npy` (row-major; the descriptor gives only the element size, so torch-neuronx's `|V2` for
/// bfloat16 is read as two-byte elements).
fn read_model_folder(folder: &Path) -> Result<(Vec<u8>, Vec<compile::Weight>)> {
    let metadata_path = folder.join("metadata.json");
    let text =
        crate::input::read_capped(&metadata_path, MAX_METADATA_BYTES).with_context(|| {
            format!(
                "{} is a folder, so it must hold metadata.json (a model folder)",
                folder.display()
            )
        })?;
    let metadata: ModelMetadata = serde_json::from_slice(&text).with_context(|| {
        format!(
            "{}: expected {{\"model_files\": FILE, \"weights\": {{KEY: FILE.npy}}}}",
            metadata_path.display()
        )
    })?;
    let cap = input_cap()?;
    let module = crate::input::read_capped_with_flag(
        &folder.join(&metadata.model_files),
        cap,
        MAX_INPUT_ENV,
    )?;
    let mut weights = Vec::with_capacity(metadata.weights.len());
    for (key, file) in &metadata.weights {
        let path = folder.join(file);
        let bytes = crate::input::read_capped_with_flag(&path, cap, MAX_INPUT_ENV)?;
        let header = abi::neff::npy::parse_header(&path.display().to_string(), &bytes)?;
        if header.fortran_order {
            anyhow::bail!(
                "{}: Fortran order, expected a row-major (C order) array",
                path.display()
            );
        }
        let item_size = header.item_size().with_context(|| {
            format!("{}: descriptor {:?} has no element size", path.display(), header.descr)
        })?;
        let data = bytes.get(header.data_offset..).unwrap_or_default().to_vec();
        weights.push(compile::Weight { key: key.clone(), bytes: data, item_size: Some(item_size) });
    }
    Ok((module, weights))
}
