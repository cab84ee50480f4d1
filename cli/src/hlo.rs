//! `nrtsim hlo`: XLA HLO modules, as binary `HloModuleProto` (`.pb`) or HLO text (`.hlo`).
//!
//! Every command reads either form (told apart by content, not by extension) and validates the
//! module's structure before doing anything with it.
//!
//! `run` reads and writes `.npy` (version 1.0, C order; Fortran order is read too), with the
//! descrs of `abi::dtype::NpyType`: bf16 and the f8 types, which numpy has no codes for, are
//! written as ml_dtypes' `np.save` writes them (`'<V2'`, `'|V1'`), and read from those, from the
//! ml_dtypes names (`bfloat16`, `float8_e4m3fn`, …) and from `'<f1'` (float8_e5m2 in older
//! ml_dtypes).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use abi::dtype::NpyType;
use hlo::eval::{Input, Output};

use crate::input;
use crate::limits::HloLimitArgs;

/// The `nrtsim hlo` subcommands.
#[derive(clap::Subcommand)]
pub(crate) enum HloCommand {
    /// Print a module as HLO text, in the style jax's `as_hlo_text()` prints.
    ///
    /// The input is a binary HloModuleProto (as torch-neuronx stores in the metaneff's
    /// serialized_graph_def, or jax's `as_serialized_hlo_module_proto()`) or HLO text. Fields
    /// the text form does not carry (sharding, schedules, ...) are not printed.
    Print {
        /// The module (`-` for standard input).
        file: PathBuf,
        /// Where to write the text (default: standard output).
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Print even a structurally invalid module (dangling ids, cycles), as far as possible.
        #[arg(long)]
        no_validate: bool,
        /// Leave out `metadata={...}`, as jax's `as_hlo_text()` does.
        #[arg(long)]
        no_metadata: bool,
        /// Refuse inputs (the module, and each `.npy`) larger than this many bytes.
        #[arg(long, value_name = "BYTES", default_value_t = input::DEFAULT_MAX_HLO_BYTES)]
        max_input_bytes: u64,
        /// The module's count limits.
        #[command(flatten)]
        limits: HloLimitArgs,
    },
    /// Evaluate a module's entry computation with the interpreter.
    ///
    /// Inputs bind to the entry parameters in order. The result is flattened: a tuple gives
    /// `output0.npy`, `output1.npy`, ... and an array gives `output0.npy`.
    Run {
        /// The module (`.pb` or HLO text; `-` for standard input).
        file: PathBuf,
        /// One `.npy` per entry parameter, in order.
        #[arg(long = "input", value_name = "NPY")]
        inputs: Vec<PathBuf>,
        /// Where to write `outputN.npy` (created if missing; default: the current directory).
        #[arg(long, value_name = "DIR")]
        output_dir: Option<PathBuf>,
        /// The largest array the evaluation may allocate, in bytes (default 4 GiB).
        #[arg(long)]
        budget_bytes: Option<u64>,
        /// Refuse inputs (the module, and each `.npy`) larger than this many bytes.
        #[arg(long, value_name = "BYTES", default_value_t = input::DEFAULT_MAX_HLO_BYTES)]
        max_input_bytes: u64,
        /// The module's count limits.
        #[command(flatten)]
        limits: HloLimitArgs,
        /// The execution timeout in seconds of device time, or `none`: the run stops when a
        /// NeuronCore, at its peak rates, could not have finished it within this time (default:
        /// NEURON_RT_EXEC_TIMEOUT, else libnrt's default of 30).
        #[arg(long, value_name = "SECS|none", value_parser = parse_exec_timeout)]
        exec_timeout: Option<ExecTimeout>,
        /// The total work the run may do, in element-operations, or `none` (default: no limit).
        #[arg(long, value_name = "N|none", value_parser = parse_work_budget)]
        work_budget: Option<WorkBudget>,
        /// Stop the run after this many milliseconds of wall-clock time (default: no limit).
        #[arg(long, value_name = "MS")]
        time_limit_ms: Option<u64>,
        /// After the run, print the process's peak resident memory (Linux's VmHWM) to standard
        /// error, to check what a module costs against its inputs, outputs and intermediates.
        #[arg(long)]
        report_peak_rss: bool,
    },
    /// Parse HLO text (or re-encode a binary module) and write a binary HloModuleProto.
    ///
    /// Ids are assigned as XLA's parser assigns them: computation c, instruction i gets
    /// `c << 32 | i`.
    Encode {
        /// The module (`-` for standard input).
        file: PathBuf,
        /// Where to write the proto (`-` for standard output).
        #[arg(short, long)]
        output: PathBuf,
        /// Refuse inputs (the module, and each `.npy`) larger than this many bytes.
        #[arg(long, value_name = "BYTES", default_value_t = input::DEFAULT_MAX_HLO_BYTES)]
        max_input_bytes: u64,
        /// The module's count limits.
        #[command(flatten)]
        limits: HloLimitArgs,
    },
}

/// Runs an `nrtsim hlo` subcommand.
pub(crate) fn run(command: HloCommand) -> Result<()> {
    match command {
        HloCommand::Print { file, output, no_validate, no_metadata, max_input_bytes, limits } => {
            let module = load(&file, !no_validate, max_input_bytes, &limits)?;
            let options = hlo::text::PrintOptions { metadata: !no_metadata };
            let text = hlo::text::print_module_with(&module, &options)
                .with_context(|| format!("printing {}", file.display()))?;
            match output {
                Some(path) => write_output(&path, text.as_bytes()),
                None => write_output(Path::new("-"), text.as_bytes()),
            }
        }
        HloCommand::Run {
            file,
            inputs,
            output_dir,
            budget_bytes,
            max_input_bytes,
            limits: count_limits,
            exec_timeout,
            work_budget,
            time_limit_ms,
            report_peak_rss,
        } => {
            let limits = RunLimits { exec_timeout, work_budget, time_limit_ms };
            let module = load(&file, true, max_input_bytes, &count_limits)?;
            run_module(
                &file,
                &module,
                &inputs,
                output_dir.as_deref(),
                budget_bytes,
                max_input_bytes,
                limits,
            )?;
            if report_peak_rss {
                match input::peak_rss_bytes() {
                    Some(bytes) => eprintln!("peak RSS: {bytes} bytes"),
                    None => eprintln!("peak RSS: unavailable (no VmHWM in /proc/self/status)"),
                }
            }
            Ok(())
        }
        HloCommand::Encode { file, output, max_input_bytes, limits } => {
            let module = load(&file, true, max_input_bytes, &limits)?;
            if output == Path::new("-") && std::io::IsTerminal::is_terminal(&std::io::stdout()) {
                bail!("refusing to write a binary proto to a terminal; use -o FILE");
            }
            write_output(&output, &hlo::encode_module(&module))
        }
    }
}

/// Reads and loads a module in either form, and validates it when asked.
fn load(
    path: &Path,
    validate: bool,
    limit: u64,
    limits: &HloLimitArgs,
) -> Result<hlo::proto::HloModuleProto> {
    let bytes = input::read_capped(path, limit)?;
    let module = hlo::load_module_with_limits(&bytes, &limits.limits()).map_err(|error| {
        let loading = format!("loading {}", path.display());
        match HloLimitArgs::flag_for(&error) {
            Some(flag) => anyhow::anyhow!("{loading}: {error}; pass a larger {flag} to read it"),
            None => anyhow::Error::new(error).context(loading),
        }
    })?;
    if validate {
        hlo::validate(&module).with_context(|| format!("validating {}", path.display()))?;
    }
    Ok(module)
}

fn write_output(path: &Path, bytes: &[u8]) -> Result<()> {
    if path == Path::new("-") {
        std::io::stdout().write_all(bytes).context("writing to stdout")
    } else {
        conformance::output_file::write(path, bytes)
            .with_context(|| format!("writing {}", path.display()))
    }
}

/// `--work-budget`: a number of element-operations, or `None` for `none`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WorkBudget(pub(crate) Option<u64>);

/// A flag's value that does not parse: what the flag takes and what came.
#[derive(Debug, thiserror::Error)]
#[error("expected {expected}, got {got:?}")]
pub(crate) struct FlagValueError {
    expected: String,
    got: String,
}

/// Parses `--work-budget` and `nrtsim run --work-budget`.
pub(crate) fn parse_work_budget(text: &str) -> Result<WorkBudget, FlagValueError> {
    match text.trim() {
        "none" => Ok(WorkBudget(None)),
        n => n.parse().map(|n| WorkBudget(Some(n))).map_err(|_| FlagValueError {
            expected: "a number of element-operations or none".to_owned(),
            got: text.to_owned(),
        }),
    }
}

/// `--exec-timeout`: seconds of device time, or `None` for `none` (or 0).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ExecTimeout(pub(crate) Option<std::time::Duration>);

/// Parses `--exec-timeout` (`nrtsim hlo run` and `nrtsim run`) as `NEURON_RT_EXEC_TIMEOUT` reads.
pub(crate) fn parse_exec_timeout(text: &str) -> Result<ExecTimeout, FlagValueError> {
    sim::config::parse_exec_timeout(text.trim()).map(ExecTimeout).ok_or_else(|| FlagValueError {
        expected: sim::config::EXEC_TIMEOUT_EXPECTED.to_owned(),
        got: text.to_owned(),
    })
}

/// The run limits `nrtsim hlo run` takes from its flags.
struct RunLimits {
    exec_timeout: Option<ExecTimeout>,
    work_budget: Option<WorkBudget>,
    time_limit_ms: Option<u64>,
}

fn run_module(
    file: &Path,
    module: &hlo::proto::HloModuleProto,
    inputs: &[PathBuf],
    output_dir: Option<&Path>,
    budget_bytes: Option<u64>,
    max_input_bytes: u64,
    limits: RunLimits,
) -> Result<()> {
    let mut options = hlo::eval::EvalOptions::default();
    if let Some(budget) = budget_bytes {
        options.budget_bytes = budget;
    }
    // The flag, else libnrt's variable as the simulator reads it, else libnrt's default.
    options.device_time_limit = match limits.exec_timeout {
        Some(ExecTimeout(timeout)) => timeout,
        None => sim::config::exec_timeout_from_env(|name| std::env::var(name).ok())?,
    };
    if let Some(WorkBudget(budget)) = limits.work_budget {
        options.work_budget = budget;
    }
    options.time_limit = limits.time_limit_ms.map(std::time::Duration::from_millis);
    let program = hlo::eval::Program::compile(module, &options)
        .with_context(|| format!("compiling {}", file.display()))?;
    let parameters = program.parameter_types();
    if inputs.len() != parameters.len() {
        bail!(
            "{} takes {} inputs ({}), got {} --input",
            file.display(),
            parameters.len(),
            program.parameter_shapes().join(", "),
            inputs.len()
        );
    }
    let mut args = Vec::new();
    args.try_reserve_exact(inputs.len()).context("no memory for the argument list")?;
    for (path, &ty) in inputs.iter().zip(&parameters) {
        args.push(
            read_npy_input(path, ty, max_input_bytes)
                .with_context(|| format!("reading {}", path.display()))?,
        );
    }
    let outputs = program.run_inputs(args).map_err(|err| {
        // Name the flag that raises the limit the run reached.
        let flag = match err.innermost() {
            hlo::eval::EvalError::DeviceTime { .. } => Some("--exec-timeout SECS (or none)"),
            hlo::eval::EvalError::WorkBudget { .. } => Some("--work-budget N (or none)"),
            hlo::eval::EvalError::TimeLimit { .. } => Some("--time-limit-ms MS"),
            _ => None,
        };
        let error = anyhow::Error::new(err).context(format!("evaluating {}", file.display()));
        match flag {
            Some(flag) => error.context(format!("raise the limit with {flag}")),
            None => error,
        }
    })?;
    let dir = output_dir.unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for (i, output) in outputs.iter().enumerate() {
        let path = dir.join(format!("output{i}.npy"));
        write_npy_output(&path, output)?;
        let dims: Vec<String> = output.dims().iter().map(i64::to_string).collect();
        println!(
            "{} {}[{}]",
            path.display(),
            output.ty().as_str_name().to_ascii_lowercase(),
            dims.join(",")
        );
    }
    Ok(())
}

/// Reads one `.npy` input for a parameter of `ty` straight into the interpreter's storage: the
/// data is read once, through a small buffer, so an input costs its array and never a second
/// whole copy, and an array that does not fit in memory is an error naming its size. A file of
/// Fortran order (rare, and transposed on the way in) and standard input are read whole first.
fn read_npy_input(path: &Path, ty: hlo::proto::PrimitiveType, limit: u64) -> Result<Input> {
    let (header, len, prefix, mut file) = match input::open_npy(path, "input", limit)? {
        input::OpenedNpy::Whole { header, bytes } => {
            return npy_bytes_to_input(&header, &bytes, ty);
        }
        input::OpenedNpy::File { header, len, prefix, file } => (header, len, prefix, file),
    };
    let dims = npy_dims(&header, ty)?;
    let data_start = prefix.get(header.data_offset..).unwrap_or_default();
    if header.fortran_order {
        let mut data = Vec::new();
        let n_bytes = usize::try_from(len - header.data_offset as u64)?;
        data.try_reserve_exact(n_bytes)
            .map_err(|_| anyhow::anyhow!("{n_bytes} bytes of data do not fit in memory"))?;
        data.extend_from_slice(data_start);
        file.read_to_end(&mut data)?;
        return Ok(Input::from_physical(ty, &dims, &fortran_layout(dims.len()), &data)?);
    }
    let mut reader = data_start.chain(file);
    Ok(Input::read_from(ty, &dims, &mut reader)?)
}

/// The layout of Fortran order: the first dimension varies fastest.
fn fortran_layout(rank: usize) -> Vec<i64> {
    (0..rank as i64).collect()
}

/// The dimensions of an input whose header fits a parameter of `ty`.
fn npy_dims(header: &abi::neff::npy::NpyHeader, ty: hlo::proto::PrimitiveType) -> Result<Vec<i64>> {
    if !descr_fits(&header.descr, ty) {
        bail!(
            "descr {:?} does not fit a parameter of type {}",
            header.descr,
            ty.as_str_name().to_ascii_lowercase()
        );
    }
    header.shape.iter().map(|&d| i64::try_from(d).context("dimension too large")).collect()
}

/// An input from a whole `.npy` file in memory (standard input, a stream), copied once.
fn npy_bytes_to_input(
    header: &abi::neff::npy::NpyHeader,
    bytes: &[u8],
    ty: hlo::proto::PrimitiveType,
) -> Result<Input> {
    let dims = npy_dims(header, ty)?;
    let data = &bytes[header.data_offset..];
    Ok(if header.fortran_order {
        Input::from_physical(ty, &dims, &fortran_layout(dims.len()), data)?
    } else {
        Input::from_le_bytes(ty, &dims, data)?
    })
}

/// Writes one result as a `.npy` file, the data streamed from the interpreter's storage.
fn write_npy_output(path: &Path, output: &Output) -> Result<()> {
    let shape: Vec<u64> = output.dims().iter().map(|&d| d as u64).collect();
    let header =
        abi::neff::npy::encode_header(npy_descr(output.ty())?, &shape, output.n_bytes() as u64)?;
    conformance::output_file::write_with(path, |writer| {
        writer.write_all(&header)?;
        output.write_to(writer)
    })
    .with_context(|| format!("writing {}", path.display()))
}

/// The descr `run` writes for an element type (`abi::dtype::NpyType`; see the module docs for
/// bf16 and f8).
fn npy_descr(ty: hlo::proto::PrimitiveType) -> Result<&'static str> {
    match NpyType::from_xla_name(ty.as_str_name()) {
        Some(npy_type) => Ok(npy_type.descr()),
        None => bail!("no npy descr for element type {}", ty.as_str_name()),
    }
}

/// Whether an input's descr may bind to a parameter of `ty` (`abi::dtype::NpyType::accepts`).
fn descr_fits(descr: &str, ty: hlo::proto::PrimitiveType) -> bool {
    NpyType::from_xla_name(ty.as_str_name()).is_some_and(|npy_type| npy_type.accepts(descr))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hlo::proto::PrimitiveType as P;

    #[test]
    fn ml_dtypes_descrs_bind_to_their_types() {
        assert!(descr_fits("<V2", P::Bf16));
        assert!(descr_fits("bfloat16", P::Bf16));
        assert!(descr_fits("<f1", P::F8e5m2));
        assert!(!descr_fits("<f1", P::F8e4m3fn));
        assert!(descr_fits("float8_e4m3", P::F8e4m3));
        assert!(descr_fits("|V1", P::F8e4m3));
        assert!(!descr_fits("float8_e4m3fn", P::F8e4m3));
        assert_eq!(npy_descr(P::F8e4m3).unwrap(), "|V1");
        assert!(descr_fits("<i1", P::S8));
        assert!(!descr_fits("<f4", P::F64));
    }

    #[test]
    fn fortran_order_input_is_transposed_to_logical() {
        // [[1,2,3],[4,5,6]] stored column by column is 1,4,2,5,3,6.
        let data: Vec<u8> =
            [1.0f32, 4.0, 2.0, 5.0, 3.0, 6.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        let mut file = abi::neff::npy::encode("<f4", &[2, 3], &data).unwrap();
        let at = file.windows(5).position(|w| w == b"False").unwrap();
        file[at..at + 5].copy_from_slice(b"True ");
        let whole = |bytes: &[u8]| {
            let header = abi::neff::npy::parse_header("input", bytes).unwrap();
            npy_bytes_to_input(&header, bytes, P::F32)
        };
        let expected = whole(
            &abi::neff::npy::encode(
                "<f4",
                &[2, 3],
                &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]
                    .iter()
                    .flat_map(|v| v.to_le_bytes())
                    .collect::<Vec<u8>>(),
            )
            .unwrap(),
        )
        .unwrap();
        let dir = std::env::temp_dir().join(format!("nrtsim-fortran-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("x.npy");
        std::fs::write(&path, &file).unwrap();
        for input in [whole(&file).unwrap(), read_npy_input(&path, P::F32, 1 << 20).unwrap()] {
            assert_eq!(format!("{input:?}"), format!("{expected:?}"));
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
