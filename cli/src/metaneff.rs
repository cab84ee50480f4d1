//! `nrtsim metaneff`: decode, encode, edit and diff metaneff protobufs, and derive one from an
//! XLA module (`from-hlo`, the mapping of [`check::from_hlo`]).

use std::io::Write;
use std::path::{Path, PathBuf};

use abi::metaneff::MetaneffLimits;
use abi::metaneff::diff::{self, Which};
use abi::metaneff::edit::{self, ConfigFlag};
use abi::metaneff::text;
use abi::metaneff::view::MetaneffView;
use anyhow::{Context, Result, bail};
use check::from_hlo::{self, FromHloOptions, ParameterChoice};

use crate::input;
use crate::limits::{HloLimitArgs, MetaneffLimitArgs};

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
        /// The metaneff's count limits.
        #[command(flatten)]
        limits: MetaneffLimitArgs,
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
        /// The metaneff's count limits.
        #[command(flatten)]
        limits: MetaneffLimitArgs,
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
        /// The metaneff's count limits.
        #[command(flatten)]
        limits: MetaneffLimitArgs,
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
        /// The module's count limits.
        #[command(flatten)]
        limits: HloLimitArgs,
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
        /// The count limits of both metaneffs.
        #[command(flatten)]
        limits: MetaneffLimitArgs,
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
        MetaneffCommand::Diff { a, b, max_input_bytes, limits } => {
            let bytes_a = input::read_capped(&a, max_input_bytes)?;
            let bytes_b = input::read_capped(&b, max_input_bytes)?;
            let differences = diff::diff_with_limits(&bytes_a, &bytes_b, &limits.limits())
                .map_err(|error| {
                    let file = if error.which == Which::A { &a } else { &b };
                    let hint = error
                        .source
                        .exceeded
                        .map(MetaneffLimitArgs::flag_for)
                        .map_or(String::new(), |flag| format!("; pass a larger {flag} to read it"));
                    anyhow::anyhow!("{}: {error}{hint}", file.display())
                })?;
            if differences.is_empty() {
                return Ok(true);
            }
            let mut out = format!("--- {}\n+++ {}\n", a.display(), b.display());
            out.push_str(&diff::render(&differences));
            std::io::stdout().write_all(out.as_bytes()).context("writing to stdout")?;
            return Ok(false);
        }
        MetaneffCommand::FromHlo { module, output, weights, states, max_input_bytes, limits } => {
            let bytes = input::read_capped(&module, max_input_bytes)?;
            let options = FromHloOptions { weights, states, limits: limits.limits() };
            let metaneff = from_hlo::metaneff_from_hlo(&bytes, &options).map_err(|error| {
                let flag = match &error {
                    from_hlo::FromHloError::Load(error) => HloLimitArgs::flag_for(error),
                    _ => None,
                };
                match flag {
                    Some(flag) => anyhow::anyhow!(
                        "{}: {error}; pass a larger {flag} to read it",
                        module.display()
                    ),
                    None => anyhow::Error::new(error).context(module.display().to_string()),
                }
            })?;
            if output == Path::new("-") && std::io::IsTerminal::is_terminal(&std::io::stdout()) {
                bail!("refusing to write a binary metaneff to a terminal; use -o FILE");
            }
            write_output(&output, &metaneff)?;
        }
        MetaneffCommand::Decode { file, format, max_input_bytes, limits } => {
            let bytes = input::read_capped(&file, max_input_bytes)?;
            within_limits(&bytes, &limits.limits(), "decoding", &file)?;
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
        MetaneffCommand::Encode {
            file,
            output,
            format,
            preserve_order,
            max_input_bytes,
            limits,
        } => {
            let limits = limits.limits();
            if preserve_order && format == Format::Json {
                bail!("--preserve-order needs text format: JSON objects have no entry order");
            }
            let input = input::read_capped(&file, max_input_bytes)?;
            let input = String::from_utf8(input)
                .with_context(|| format!("{} is not UTF-8 text", file.display()))?;
            // Counted before parsing: a tensor is a few bytes of text and hundreds once parsed.
            tensors_within_limit(&input, format, limits.max_tensors)
                .with_context(|| format!("encoding {}", file.display()))?;
            let bytes = match format {
                Format::Text if preserve_order => text::from_text_in_written_order(&input),
                Format::Text => text::from_text(&input),
                Format::Json => text::from_json(&input),
            }
            .with_context(|| format!("encoding {}", file.display()))?;
            within_limits(&bytes, &limits, "encoding", &file)?;
            write_output(&output, &bytes)?;
        }
        MetaneffCommand::Edit { file, output, edits, max_input_bytes, limits } => {
            let mut bytes = input::read_capped(&file, max_input_bytes)?;
            within_limits(&bytes, &limits.limits(), "editing", &file)?;
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

/// Refuses a metaneff past the count limits, as `check` and `diff` do, before (or, for `encode`,
/// instead of) anything that holds it decoded in full: the borrowed view counts the tensors and
/// dimensions as it walks, so a message past a limit costs little more than its bytes.
fn within_limits(bytes: &[u8], limits: &MetaneffLimits, doing: &str, file: &Path) -> Result<()> {
    MetaneffView::decode_with_limits(bytes, limits).map(drop).map_err(|error| {
        let doing = format!("{doing} {}", file.display());
        match error.exceeded.map(MetaneffLimitArgs::flag_for) {
            Some(flag) => anyhow::anyhow!("{doing}: {error}; pass a larger {flag} to read it"),
            None => anyhow::Error::new(error).context(doing),
        }
    })
}

/// Refuses text format or JSON whose `input_tensors` or `output_tensors` list holds more than
/// `limit` tensors, counting the messages opened at the top level of those fields without
/// parsing (strings and `#` comments skipped), so that the parse is never given more tensors
/// than a decode would accept. What does not scan as expected is left to the parser to refuse.
fn tensors_within_limit(input: &str, format: Format, limit: usize) -> Result<()> {
    // The fields of the message stand at depth 0 in text format and inside `{` in JSON.
    let root = if format == Format::Json { 1 } else { 0 };
    let mut counts = [0usize; 2];
    let mut field: Option<usize> = None;
    let mut depth = 0usize;
    let mut list_depth: Option<usize> = None;
    let bytes = input.as_bytes();
    let mut at = 0;
    while let Some(&byte) = bytes.get(at) {
        at += 1;
        match byte {
            b'"' | b'\'' => {
                let start = at;
                while let Some(&inner) = bytes.get(at) {
                    at += 1;
                    match inner {
                        b'\\' => at += 1,
                        _ if inner == byte => break,
                        _ => {}
                    }
                }
                if depth == root && format == Format::Json {
                    let key = &bytes[start..at.saturating_sub(1).max(start)];
                    field = tensor_list(key);
                }
            }
            b'#' if format == Format::Text => {
                while bytes.get(at).is_some_and(|&inner| inner != b'\n') {
                    at += 1;
                }
            }
            b'{' | b'<' => {
                if let Some(list) = field.filter(|_| depth == root || list_depth == Some(depth)) {
                    counts[list] += 1;
                    if counts[list] > limit {
                        let name = ["input_tensors", "output_tensors"][list];
                        bail!(
                            "more than {limit} {name}, expected at most {limit} (the tensor \
                             limit); pass a larger --max-metaneff-tensors to read it"
                        );
                    }
                }
                depth += 1;
            }
            b'[' => {
                if depth == root {
                    list_depth = Some(depth + 1);
                }
                depth += 1;
            }
            b'}' | b'>' | b']' => {
                if byte == b']' && list_depth == Some(depth) {
                    list_depth = None;
                }
                depth = depth.saturating_sub(1);
            }
            b'a'..=b'z' | b'A'..=b'Z' | b'_' if format == Format::Text => {
                let start = at - 1;
                while bytes.get(at).is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_') {
                    at += 1;
                }
                if depth == root {
                    field = tensor_list(&bytes[start..at]);
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// The index of a tensor list's field name among `input_tensors` and `output_tensors`.
fn tensor_list(name: &[u8]) -> Option<usize> {
    match name {
        b"input_tensors" => Some(0),
        b"output_tensors" => Some(1),
        _ => None,
    }
}

fn write_output(path: &Path, bytes: &[u8]) -> Result<()> {
    if path == Path::new("-") {
        std::io::stdout().write_all(bytes).context("writing to stdout")
    } else {
        conformance::output_file::write(path, bytes)
            .with_context(|| format!("writing {}", path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tensors the pre-parse count sees, or the refusal, for a limit of 2.
    fn check(input: &str, format: Format) -> Result<(), String> {
        tensors_within_limit(input, format, 2).map_err(|error| error.to_string())
    }

    #[test]
    fn the_tensor_count_sees_every_spelling_of_a_list_and_nothing_else() {
        let hint = "; pass a larger --max-metaneff-tensors to read it";
        let refused =
            Err(format!("more than 2 input_tensors, expected at most 2 (the tensor limit){hint}"));
        let outputs =
            Err(format!("more than 2 output_tensors, expected at most 2 (the tensor limit){hint}"));
        let cases: &[(&str, Format, Result<(), String>)] = &[
            ("input_tensors {} input_tensors <> input_tensors: {}", Format::Text, refused.clone()),
            ("input_tensors: [{}, <>, {}]", Format::Text, refused.clone()),
            ("output_tensors [{}, {}] output_tensors {}", Format::Text, outputs),
            // Two of each list, nested braces, and the names in strings and comments.
            (
                "input_tensors { shape: [1, 2] name: \"input_tensors {}\" }\n# input_tensors {}\n\
                 output_tensors {} output_tensors {} input_tensors { name: 'a}{' }\n\
                 output_aliases_to [{ key: 0 }, { key: 1 }, { key: 2 }]",
                Format::Text,
                Ok(()),
            ),
            (r#"{"input_tensors": [{}, {"name": "e30="}, {}]}"#, Format::Json, refused),
            (
                r#"{"input_tensors": [{"shape": ["1"]}, {}], "name": "input_tensors", "output_aliases_to": {"0": 0, "1": 1, "2": 2}}"#,
                Format::Json,
                Ok(()),
            ),
        ];
        for (input, format, expected) in cases {
            assert_eq!(&check(input, *format), expected, "{input}");
        }
    }
}
