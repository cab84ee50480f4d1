//! `nrtsim hlo`: XLA HLO modules, as binary `HloModuleProto` (`.pb`) or HLO text (`.hlo`).
//!
//! Every command reads either form (told apart by content, not by extension) and validates the
//! module's structure before doing anything with it.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

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
    },
}

/// Runs an `nrtsim hlo` subcommand.
pub(crate) fn run(command: HloCommand) -> Result<()> {
    match command {
        HloCommand::Print { file, output, no_validate } => {
            let module = load(&file, !no_validate)?;
            let text = hlo::text::print_module(&module)
                .with_context(|| format!("printing {}", file.display()))?;
            match output {
                Some(path) => write_output(&path, text.as_bytes()),
                None => write_output(Path::new("-"), text.as_bytes()),
            }
        }
        HloCommand::Encode { file, output } => {
            let module = load(&file, true)?;
            if output == Path::new("-") && std::io::IsTerminal::is_terminal(&std::io::stdout()) {
                bail!("refusing to write a binary proto to a terminal; use -o FILE");
            }
            write_output(&output, &hlo::encode_module(&module))
        }
    }
}

/// Reads and loads a module in either form, and validates it when asked.
fn load(path: &Path, validate: bool) -> Result<hlo::proto::HloModuleProto> {
    let bytes = read_input(path)?;
    let module = hlo::load_module(&bytes).with_context(|| format!("loading {}", path.display()))?;
    if validate {
        hlo::validate(&module).with_context(|| format!("validating {}", path.display()))?;
    }
    Ok(module)
}

fn read_input(path: &Path) -> Result<Vec<u8>> {
    if path == Path::new("-") {
        let mut bytes = Vec::new();
        std::io::stdin().read_to_end(&mut bytes).context("reading standard input")?;
        Ok(bytes)
    } else {
        std::fs::read(path).with_context(|| format!("reading {}", path.display()))
    }
}

fn write_output(path: &Path, bytes: &[u8]) -> Result<()> {
    if path == Path::new("-") {
        std::io::stdout().write_all(bytes).context("writing to stdout")
    } else {
        std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))
    }
}
