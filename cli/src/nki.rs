//! `nrtsim nki`: traced NKI kernel programs (docs/nki-program.md).
//!
//! `run` reads a program and one raw little-endian file per kernel input, runs it with the `nki`
//! crate and writes one raw file per output. Errors are one line on standard error in the
//! compiler style, `KERNEL_FILE:LINE: error: MESSAGE`, at the instruction's `loc`, so editors
//! jump to the kernel line.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::input;

/// The `nrtsim nki` subcommands.
#[derive(clap::Subcommand)]
pub(crate) enum NkiCommand {
    /// Run a traced NKI program: raw inputs in, raw outputs out.
    ///
    /// Input k is `DIR/in{k}.bin`, the k-th kernel argument's elements (little-endian, row-major,
    /// exactly numel × element size bytes); output k is written to `DIR/out{k}.bin` the same
    /// way. A read of memory nothing wrote gives NaN (0 for integers) and a warning, as does an
    /// output element nothing wrote; `--strict` makes both errors. Errors exit with status 1 and
    /// one line `FILE:LINE: error: MESSAGE` on standard error.
    Run(RunArgs),
}

/// `nrtsim nki run`'s arguments.
#[derive(clap::Args)]
pub(crate) struct RunArgs {
    /// The program (JSON, format `nrtsim-nki-program`).
    program: PathBuf,
    /// The folder holding `in0.bin`, `in1.bin`, ...
    #[arg(long, value_name = "DIR")]
    inputs: PathBuf,
    /// The folder to write `out0.bin`, `out1.bin`, ... into (created if missing).
    #[arg(long, value_name = "DIR")]
    outputs: PathBuf,
    /// Write the report (warnings, prints, statistics) as JSON to this file.
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
    /// Make reads of unwritten memory and unwritten output elements errors.
    #[arg(long)]
    strict: bool,
    /// The most bytes the program's tensors may take.
    #[arg(long, value_name = "BYTES", default_value_t = nki::DEFAULT_MAX_MEMORY_BYTES)]
    max_memory_bytes: u64,
    /// Refuse a program or input file larger than this many bytes.
    #[arg(long, value_name = "BYTES", default_value_t = input::DEFAULT_MAX_HLO_BYTES)]
    max_input_bytes: u64,
}

/// Runs an `nrtsim nki` subcommand: `Ok(false)` when the program failed (its error printed).
pub(crate) fn run(command: NkiCommand) -> Result<bool> {
    match command {
        NkiCommand::Run(args) => run_program(&args),
    }
}

/// Where an error is: `loc`, else the program file (with the JSON line, when the document
/// itself is malformed).
fn error_loc(program_path: &Path, loc: Option<&nki::SourceLoc>, line: Option<usize>) -> String {
    match (loc, line) {
        (Some(loc), _) => loc.to_string(),
        (None, Some(line)) => format!("{}:{line}", program_path.display()),
        (None, None) => program_path.display().to_string(),
    }
}

/// Writes the report (JSON) to `path`.
fn write_report(path: &Path, report: &nki::Report) -> Result<()> {
    let json = serde_json::to_vec_pretty(report).context("encoding the report")?;
    conformance::output_file::write(path, &json)
        .with_context(|| format!("writing {}", path.display()))
}

/// Writes a report holding only `error` when the run has a `--report` file, so that a caller
/// reading the report learns why there are no outputs.
fn write_error_report(args: &RunArgs, error: nki::ErrorRecord) -> Result<()> {
    match &args.report {
        Some(path) => write_report(path, &nki::Report { error: Some(error), ..Default::default() }),
        None => Ok(()),
    }
}

fn run_program(args: &RunArgs) -> Result<bool> {
    let bytes = match input::read_capped(&args.program, args.max_input_bytes) {
        Ok(bytes) => bytes,
        Err(error) => {
            write_error_report(args, io_record(&error))?;
            return Err(error);
        }
    };
    let program = match nki::Program::from_json(&bytes) {
        Ok(program) => program,
        Err(error) => {
            let line = match &*error.kind {
                nki::ProgramErrorKind::Json { line, .. } => *line,
                _ => None,
            };
            let loc = error_loc(&args.program, error.loc.as_ref(), line);
            eprintln!("{loc}: error: {error}");
            let mut record = error.record();
            record.loc = Some(loc);
            write_error_report(args, record)?;
            return Ok(false);
        }
    };
    let mut inputs = Vec::with_capacity(program.inputs.len());
    for k in 0..program.inputs.len() {
        let path = args.inputs.join(format!("in{k}.bin"));
        match input::read_capped(&path, args.max_input_bytes) {
            Ok(bytes) => inputs.push(bytes),
            Err(error) => {
                write_error_report(args, io_record(&error))?;
                return Err(error);
            }
        }
    }
    let input_slices: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    let options = nki::RunOptions { strict: args.strict, max_memory_bytes: args.max_memory_bytes };
    let result = match nki::run(&program, &input_slices, &options) {
        Ok(result) => result,
        Err(error) => {
            // An error with no instruction (inputs, memory) is about the kernel as a whole.
            // Standard error gets the one error line; the warnings before it are in the report.
            let report = error.report(&program);
            if let Some(record) = &report.error {
                eprintln!(
                    "{}: error: {}",
                    record.loc.as_deref().unwrap_or_default(),
                    record.message
                );
            }
            if let Some(path) = &args.report {
                write_report(path, &report)?;
            }
            return Ok(false);
        }
    };
    std::fs::create_dir_all(&args.outputs)
        .with_context(|| format!("creating {}", args.outputs.display()))?;
    for (k, output) in result.outputs.iter().enumerate() {
        let path = args.outputs.join(format!("out{k}.bin"));
        conformance::output_file::write(&path, output)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    for warning in &result.report.warnings {
        print_warning(warning);
    }
    if let Some(path) = &args.report {
        write_report(path, &result.report)?;
    }
    Ok(true)
}

/// `FILE:LINE: warning: KIND: MESSAGE` on standard error.
fn print_warning(warning: &nki::Warning) {
    match &warning.loc {
        Some(loc) => eprintln!("{loc}: warning: {}: {}", warning.kind, warning.message),
        None => eprintln!("warning: {}: {}", warning.kind, warning.message),
    }
}

/// A file that could not be read, as the report's error (kind `Io`).
fn io_record(error: &anyhow::Error) -> nki::ErrorRecord {
    nki::ErrorRecord {
        kind: "Io".into(),
        message: format!("{error:#}"),
        loc: None,
        out_of_bounds: None,
    }
}
