//! `nrtsim metaneff`: decode, encode, edit and diff metaneff protobufs, and derive one from an
//! XLA module (`from-hlo`, the mapping of [`conformance::from_hlo`]).

use std::io::Write;
use std::path::{Path, PathBuf};

use abi::metaneff::diff::{self, Which};
use abi::metaneff::edit::{self, ConfigFlag};
use abi::metaneff::text;
use anyhow::{Context, Result, bail};
use conformance::from_hlo::{self, FromHloOptions, ParameterChoice};

use crate::input;

/// The `nrtsim metaneff` subcommands.
#[derive(clap::Subcommand)]
pub(crate) enum MetaneffCommand {
    /// Print a binary metaneff as protobuf text format (default) or proto3 JSON.
    ///
    /// Unknown fields are listed as `#` comments at the top of text output (and on stderr for
    /// JSON): they cannot be written back from text.
    Decode {
        /// The binary metaneff (`-` for standard input).
        file: PathBuf,
        /// The output format.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// Refuse inputs larger than this many bytes (a guard against endless inputs such as
        /// `/dev/zero`).
        #[arg(long, value_name = "BYTES", default_value_t = input::DEFAULT_MAX_METANEFF_BYTES)]
        max_input_bytes: u64,
    },
    /// Turn text format (or JSON) back into canonical metaneff bytes (alias map entries
    /// ascending by key).
    Encode {
        /// The text-format or JSON metaneff (`-` for standard input).
        file: PathBuf,
        /// Where to write the bytes (`-` for standard output).
        #[arg(short, long)]
        output: PathBuf,
        /// The input format.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// Write alias map entries in the order the text gives them (every one), not ascending:
        /// text decoded from a foreign file encodes back to its bytes, for a byte-for-byte
        /// review. Text format only (JSON objects have no order).
        #[arg(long)]
        preserve_order: bool,
        /// Refuse inputs larger than this many bytes (a guard against endless inputs such as
        /// `/dev/zero`).
        #[arg(long, value_name = "BYTES", default_value_t = input::DEFAULT_MAX_METANEFF_BYTES)]
        max_input_bytes: u64,
    },
    /// Change fields of a binary metaneff as the `Model` setters do, keeping every other byte
    /// (unknown fields included).
    Edit {
        /// The binary metaneff (`-` for standard input).
        file: PathBuf,
        /// Where to write the edited bytes (`-` for standard output).
        #[arg(short, long)]
        output: PathBuf,
        /// The edits.
        #[command(flatten)]
        edits: Edits,
        /// Refuse inputs larger than this many bytes (a guard against endless inputs such as
        /// `/dev/zero`).
        #[arg(long, value_name = "BYTES", default_value_t = input::DEFAULT_MAX_METANEFF_BYTES)]
        max_input_bytes: u64,
    },
    /// Write the metaneff a framework writes for an XLA module, as transformers-neuronx's
    /// `hlo2metaneff` does.
    ///
    /// One input per parameter of the module's program shape, in parameter order, named
    /// `input{i}`; one output per element of a tuple result (else one for the result), named
    /// `output{j}`; HLO shapes; dtypes by the producers' table (PRED→UINT8, F8E4M3FN→INT8, U32→INT32,
    /// …); `input_output_alias` as `output_aliases_to`; the module as `serialized_graph_def`.
    /// Parameters are `USER_INPUT` unless `--weight` or `--state` chooses them; the choices must
    /// keep the order user inputs, then states, then weights.
    FromHlo {
        /// The module: a binary `HloModuleProto` (as jax's `as_serialized_hlo_module_proto()`
        /// writes it) or HLO text.
        module: PathBuf,
        /// Where to write the metaneff (`-` for standard output).
        #[arg(short, long)]
        output: PathBuf,
        /// Make a parameter an `INPUT_WEIGHT` (repeatable): `nrtsim run --weights` fills it from
        /// the tensor named KEY. PARAM is the parameter number or the name of its parameter
        /// instruction, as `nrtsim hlo print` shows it (jax names them after the argument, e.g.
        /// `w.1`); KEY (the `checkpoint_key`) defaults to that name.
        #[arg(long = "weight", value_name = "PARAM[=KEY]")]
        weights: Vec<ParameterChoice>,
        /// Make a parameter an `INPUT_STATE` (repeatable): it starts from the tensor named KEY
        /// in `--weights` (zeros when absent) and is carried between launches through the output
        /// aliased to it. PARAM and KEY as for --weight.
        #[arg(long = "state", value_name = "PARAM[=KEY]")]
        states: Vec<ParameterChoice>,
        /// Refuse modules larger than this many bytes.
        #[arg(long, value_name = "BYTES", default_value_t = input::DEFAULT_MAX_HLO_BYTES)]
        max_input_bytes: u64,
    },
    /// Show the field-level differences between two binary metaneffs, unknown fields included
    /// (tensors matched by name, then index); exit status 1 when they differ.
    Diff {
        /// The first (old) binary metaneff.
        a: PathBuf,
        /// The second (new) binary metaneff.
        b: PathBuf,
        /// Refuse inputs larger than this many bytes (a guard against endless inputs such as
        /// `/dev/zero`).
        #[arg(long, value_name = "BYTES", default_value_t = input::DEFAULT_MAX_METANEFF_BYTES)]
        max_input_bytes: u64,
    },
}

/// The edits of `nrtsim metaneff edit`, applied in this order.
#[derive(clap::Args)]
pub(crate) struct Edits {
    /// Set `model_config.async_load`.
    #[arg(long, value_name = "BOOL")]
    async_load: Option<bool>,
    /// Set `model_config.lazy_load`.
    #[arg(long, value_name = "BOOL")]
    lazy_load: Option<bool>,
    /// Set `model_config.return_aliases`.
    #[arg(long, value_name = "BOOL")]
    return_aliases: Option<bool>,
    /// Set `allow_dynamic_batch_size` on every input and output tensor.
    #[arg(long, value_name = "BOOL")]
    dynamic_batching: Option<bool>,
}

/// A human-readable metaneff format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Format {
    /// Protobuf text format.
    Text,
    /// Proto3 JSON with the proto field names.
    Json,
}

/// Runs an `nrtsim metaneff` subcommand; `Ok(false)` (exit status 1) when `diff` finds
/// differences.
pub(crate) fn run(command: MetaneffCommand) -> Result<bool> {
    match command {
        MetaneffCommand::Diff { a, b, max_input_bytes } => {
            let bytes_a = input::read_capped(&a, max_input_bytes)?;
            let bytes_b = input::read_capped(&b, max_input_bytes)?;
            let differences = diff::diff(&bytes_a, &bytes_b).map_err(|error| {
                let file = if error.which == Which::A { &a } else { &b };
                anyhow::anyhow!("{}: {error}", file.display())
            })?;
            if differences.is_empty() {
                return Ok(true);
            }
            let mut out = format!("--- {}\n+++ {}\n", a.display(), b.display());
            out.push_str(&diff::render(&differences));
            std::io::stdout().write_all(out.as_bytes()).context("writing to stdout")?;
            return Ok(false);
        }
        MetaneffCommand::FromHlo { module, output, weights, states, max_input_bytes } => {
            let bytes = input::read_capped(&module, max_input_bytes)?;
            let metaneff = from_hlo::metaneff_from_hlo(&bytes, &FromHloOptions { weights, states })
                .with_context(|| format!("{}", module.display()))?;
            if output == Path::new("-") && std::io::IsTerminal::is_terminal(&std::io::stdout()) {
                bail!("refusing to write a binary metaneff to a terminal; use -o FILE");
            }
            write_output(&output, &metaneff)?;
        }
        MetaneffCommand::Decode { file, format, max_input_bytes } => {
            let bytes = input::read_capped(&file, max_input_bytes)?;
            let printed = match format {
                Format::Text => text::to_text(&bytes),
                Format::Json => text::to_json(&bytes),
            }
            .with_context(|| format!("decoding {}", file.display()))?;
            if format == Format::Json {
                for field in &printed.unknown_fields {
                    eprintln!("nrtsim: note: unknown {field} is not shown");
                }
            }
            std::io::stdout().write_all(printed.text.as_bytes()).context("writing to stdout")?;
        }
        MetaneffCommand::Encode { file, output, format, preserve_order, max_input_bytes } => {
            if preserve_order && format == Format::Json {
                bail!("--preserve-order needs text format: JSON objects have no entry order");
            }
            let input = input::read_capped(&file, max_input_bytes)?;
            let input = String::from_utf8(input)
                .with_context(|| format!("{} is not UTF-8 text", file.display()))?;
            let bytes = match format {
                Format::Text if preserve_order => text::from_text_in_written_order(&input),
                Format::Text => text::from_text(&input),
                Format::Json => text::from_json(&input),
            }
            .with_context(|| format!("encoding {}", file.display()))?;
            write_output(&output, &bytes)?;
        }
        MetaneffCommand::Edit { file, output, edits, max_input_bytes } => {
            let mut bytes = input::read_capped(&file, max_input_bytes)?;
            let flags = [
                (ConfigFlag::AsyncLoad, edits.async_load),
                (ConfigFlag::LazyLoad, edits.lazy_load),
                (ConfigFlag::ReturnAliases, edits.return_aliases),
            ];
            for (flag, value) in flags {
                if let Some(value) = value {
                    bytes = edit::set_config_flag(&bytes, flag, value)
                        .with_context(|| format!("editing {}", file.display()))?;
                }
            }
            if let Some(value) = edits.dynamic_batching {
                bytes = edit::set_allow_dynamic_batch_size(&bytes, |_, _| Some(value))
                    .with_context(|| format!("editing {}", file.display()))?;
            }
            write_output(&output, &bytes)?;
        }
    }
    Ok(true)
}

fn write_output(path: &Path, bytes: &[u8]) -> Result<()> {
    if path == Path::new("-") {
        std::io::stdout().write_all(bytes).context("writing to stdout")
    } else {
        conformance::output_file::write(path, bytes)
            .with_context(|| format!("writing {}", path.display()))
    }
}
