//! neuronx-cc's command-line grammar, shared by `nrtsim compile`, the `neuronx-cc` personality of
//! `nrtsim` and the Python shim.
//!
//! The flags are those of the public neuronx-cc command reference (aws-neuron/aws-neuron-sdk,
//! `compiler/neuronx-cc/api-reference-guide/index.rst`), plus the ones producers are seen to pass:
//! `--lnc` (nkipy, `nkipy/core/compile.py`; the SDK's error-code page `compiler/error-codes/EARG001.rst`
//! names it), `--pipeline` (nkipy; the SDK's `nki/deep-dives/src/mxfp-matmul/mx_toplevel.py`),
//! `--internal-…` (nkipy passes `--internal-tensorizer-opt-level=2`) and
//! `--hbm-scratchpad-page-size` (the SDK's `neuron-runtime/explore/device-memory.rst`).
//!
//! Design choices:
//! - **Hand-written, not clap.** The grammar is neuronx-cc's (argparse-like): a value follows its
//!   flag or comes after `=`, the input file may stand anywhere, `-O2` is `--optlevel 2`,
//!   `-lnc 2` is `--logical-nc-config 2`, `--pipeline` takes the words after it. A table
//!   ([`FLAGS`]) says for each flag whether it takes a value, which values it allows, and whether
//!   the simulator models it; `--help` prints the table.
//! - **Unknown is an error.** A flag the table does not have (other than `--internal-…`, which
//!   the compiler has many of and which are recorded as given) is a usage error naming it.
//!   A `--internal-…` flag without `=` is a switch: its value cannot be told from the input file.
//! - **Defaults are the documented ones**: `--output file.neff`, `--lnc` 2 on trn2 and trn3 and
//!   1 elsewhere.

use std::fmt::Write as _;
use std::path::PathBuf;

use super::{CompileOptions, Target};

/// The pipeline words accepted after `--pipeline`: the documented ones that end in a NEFF.
pub const PIPELINE_WORDS: &[&str] = &["compile", "SaveTemps"];

/// What a flag does in the simulator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlagUse {
    /// The flag changes what is written (framework, target, output, lnc, pipeline).
    Modelled,
    /// The flag is accepted and recorded in the NEFF, and has no effect.
    Ignored,
}

/// One flag of the grammar.
#[derive(Clone, Copy, Debug)]
pub struct Flag {
    /// The spellings, long form first.
    pub names: &'static [&'static str],
    /// The value's placeholder; `None` for a switch.
    pub value: Option<&'static str>,
    /// The allowed values; empty for any value.
    pub choices: &'static [&'static str],
    /// Modelled or ignored.
    pub used: FlagUse,
    /// One line for `--help`.
    pub help: &'static str,
}

const fn flag(
    names: &'static [&'static str],
    value: Option<&'static str>,
    choices: &'static [&'static str],
    used: FlagUse,
    help: &'static str,
) -> Flag {
    Flag { names, value, choices, used, help }
}

use FlagUse::{Ignored, Modelled};

/// The flags of `compile`, in the order `--help` lists them.
pub const FLAGS: &[Flag] = &[
    flag(&["--framework"], Some("FRAMEWORK"), &["XLA"], Modelled, "the input's framework"),
    flag(
        &["--target"],
        Some("TARGET"),
        &["trn1", "trn1n", "trn2", "trn3", "inf2"],
        Modelled,
        "the instance family (kept in the NEFF; the simulator runs every target alike)",
    ),
    flag(&["--output"], Some("PATH"), &[], Modelled, "the NEFF to write (default file.neff)"),
    flag(
        &["--logical-nc-config", "--lnc", "-lnc"],
        Some("N"),
        &["1", "2"],
        Modelled,
        "logical NeuronCore size, the header's lnc_size (default 2 on trn2/trn3, else 1)",
    ),
    flag(
        &["--pipeline"],
        Some("WORD…"),
        PIPELINE_WORDS,
        Modelled,
        "pipeline words; compile and SaveTemps both write the NEFF",
    ),
    flag(
        &["--model-type"],
        Some("MODEL"),
        &["generic", "transformer", "unet-inference"],
        Ignored,
        "",
    ),
    flag(&["--auto-cast"], Some("MODE"), &["none", "matmult", "all"], Ignored, ""),
    flag(&["--auto-cast-type"], Some("TYPE"), &["bf16", "fp16", "tf32", "fp8_e4m3"], Ignored, ""),
    flag(&["--native-int64"], Some("MODE"), &["default", "enabled", "disabled"], Ignored, ""),
    flag(&["--implicit-integer-downcast"], Some("MODE"), &[], Ignored, ""),
    flag(&["--distribution-strategy"], Some("STRATEGY"), &["llm-training", "NEMO"], Ignored, ""),
    flag(&["--optlevel", "-O"], Some("LEVEL"), &["1", "2", "3"], Ignored, ""),
    flag(&["--enable-mixed-precision-accumulation"], None, &[], Ignored, ""),
    flag(&["--disable-mixed-precision-accumulation"], None, &[], Ignored, ""),
    flag(&["--enable-saturate-infinity"], None, &[], Ignored, ""),
    flag(&["--enable-fast-context-switch"], None, &[], Ignored, ""),
    flag(&["--enable-fast-loading-neuron-binaries"], None, &[], Ignored, ""),
    flag(&["--enable-experimental-O1"], None, &[], Ignored, ""),
    flag(&["--hbm-scratchpad-page-size"], Some("MB"), &[], Ignored, ""),
    flag(&["--logfile"], Some("FILE"), &[], Ignored, ""),
    flag(&["--verbose"], Some("LEVEL"), &[], Ignored, ""),
];

/// What a command line asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Invocation {
    /// `compile`: read `input`, write `output`.
    Compile {
        /// The module file, as given (relative to the working directory).
        input: PathBuf,
        /// The NEFF to write, as given.
        output: PathBuf,
        /// Everything else the command line said.
        options: CompileOptions,
    },
    /// `list-operators`.
    ListOperators,
    /// `--version`.
    Version,
    /// `--help`, for the whole tool or one command.
    Help {
        /// `compile` or `list-operators`, or `None` for the tool.
        command: Option<String>,
    },
}

/// A command line neuronx-cc would refuse (exit status 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompileUsageError {
    /// No command.
    #[error("no command given, expected compile, list-operators, --version or --help")]
    MissingCommand,
    /// An unknown command.
    #[error("unknown command {command:?}, expected compile, list-operators, --version or --help")]
    UnknownCommand {
        /// What came.
        command: String,
    },
    /// A flag neuronx-cc does not have.
    #[error("unrecognized argument {flag:?}: neuronx-cc has no such flag (see --help)")]
    UnknownFlag {
        /// The flag as given.
        flag: String,
    },
    /// A flag that needs a value came last or before another flag.
    #[error("flag {flag} expects a value {placeholder}, found none")]
    MissingValue {
        /// The flag.
        flag: String,
        /// Its placeholder.
        placeholder: String,
    },
    /// A switch was given a value with `=`.
    #[error("flag {flag} takes no value, found {value:?}")]
    UnexpectedValue {
        /// The flag.
        flag: String,
        /// The value.
        value: String,
    },
    /// A value outside the flag's choices.
    #[error("flag {flag}: invalid choice {value:?}, expected one of {expected}")]
    BadValue {
        /// The flag.
        flag: String,
        /// The value.
        value: String,
        /// The choices, comma-separated.
        expected: String,
    },
    /// A required flag is missing.
    #[error("compile needs {flag}")]
    MissingFlag {
        /// The flag.
        flag: &'static str,
    },
    /// No input file.
    #[error("compile needs the model file (an XLA HloModuleProto or HLO text)")]
    MissingInput,
    /// A second positional argument.
    #[error(
        "unexpected argument {second:?}: compile takes one model file, already given {first:?}"
    )]
    ExtraInput {
        /// The first input.
        first: String,
        /// The extra one.
        second: String,
    },
    /// `--lnc 2` for a target without logical NeuronCores of two.
    #[error("--lnc {lnc} is not available on {target}, expected 1 (lnc 2 is for trn2 and trn3)")]
    LncForTarget {
        /// The lnc asked for.
        lnc: u32,
        /// The target.
        target: &'static str,
    },
}

fn find_flag(name: &str) -> Option<&'static Flag> {
    FLAGS.iter().find(|flag| flag.names.contains(&name))
}

fn check_choice(flag: &Flag, name: &str, value: &str) -> Result<(), CompileUsageError> {
    if flag.choices.is_empty() || flag.choices.contains(&value) {
        Ok(())
    } else {
        Err(CompileUsageError::BadValue {
            flag: name.to_owned(),
            value: value.to_owned(),
            expected: flag.choices.join(", "),
        })
    }
}

/// Parses neuronx-cc's arguments (`args` is `argv[1..]`: the command first).
///
/// # Errors
/// A [`CompileUsageError`] naming the argument that neuronx-cc would refuse.
pub fn parse_neuronx_cc_args(args: &[String]) -> Result<Invocation, CompileUsageError> {
    let Some((command, rest)) = args.split_first() else {
        return Err(CompileUsageError::MissingCommand);
    };
    match command.as_str() {
        "--version" => Ok(Invocation::Version),
        "--help" | "-h" | "help" => Ok(Invocation::Help { command: None }),
        "list-operators" => parse_list_operators(rest),
        "compile" => parse_compile(args, rest),
        other if other.starts_with('-') => {
            Err(CompileUsageError::UnknownFlag { flag: other.to_owned() })
        }
        other => Err(CompileUsageError::UnknownCommand { command: other.to_owned() }),
    }
}

fn parse_list_operators(rest: &[String]) -> Result<Invocation, CompileUsageError> {
    let mut words = rest.iter();
    while let Some(word) = words.next() {
        let (name, inline) = match word.split_once('=') {
            Some((name, value)) if name.starts_with("--") => (name, Some(value.to_owned())),
            _ => (word.as_str(), None),
        };
        match name {
            "--help" | "-h" => {
                return Ok(Invocation::Help { command: Some("list-operators".into()) });
            }
            "--framework" => {
                let value = match inline {
                    Some(value) => value,
                    None => words.next().filter(|next| takes_as_value(next)).cloned().ok_or_else(
                        || CompileUsageError::MissingValue {
                            flag: name.to_owned(),
                            placeholder: "FRAMEWORK".to_owned(),
                        },
                    )?,
                };
                check_choice(&FLAGS[0], name, &value)?;
            }
            other if other.starts_with('-') => {
                return Err(CompileUsageError::UnknownFlag { flag: word.clone() });
            }
            _ => return Err(CompileUsageError::UnknownCommand { command: word.clone() }),
        }
    }
    Ok(Invocation::ListOperators)
}

/// Whether the word after a flag that needs a value can be that value: anything but another
/// flag (`--output --lnc=1` is a missing value, not an output named `--lnc=1`); a lone `-` is a
/// value (standard input or output, as argparse takes it).
fn takes_as_value(word: &str) -> bool {
    !word.starts_with('-') || word == "-"
}

/// Splits `-O2` into `-O` and `2`, and `--flag=value` into both halves.
fn split_word(word: &str) -> (&str, Option<&str>) {
    if let Some(level) = word.strip_prefix("-O").filter(|level| !level.is_empty()) {
        if !level.starts_with('=') {
            return ("-O", Some(level));
        }
    }
    match word.split_once('=') {
        Some((name, value)) => (name, Some(value)),
        None => (word, None),
    }
}

fn parse_compile(argv: &[String], rest: &[String]) -> Result<Invocation, CompileUsageError> {
    let mut input: Option<String> = None;
    let mut framework = None;
    let mut target: Option<Target> = None;
    let mut output: Option<String> = None;
    let mut lnc: Option<u32> = None;
    let mut pipeline: Vec<String> = Vec::new();
    let mut accepted_flags: Vec<(String, Option<String>)> = Vec::new();
    let mut index = 0;
    while index < rest.len() {
        let word = &rest[index];
        index += 1;
        if word == "--help" || word == "-h" {
            return Ok(Invocation::Help { command: Some("compile".to_owned()) });
        }
        if !word.starts_with('-') || word == "-" {
            match &input {
                Some(first) => {
                    return Err(CompileUsageError::ExtraInput {
                        first: first.clone(),
                        second: word.clone(),
                    });
                }
                None => input = Some(word.clone()),
            }
            continue;
        }
        let (name, inline) = split_word(word);
        if name.starts_with("--internal-") && name.len() > "--internal-".len() {
            accepted_flags.push((name.to_owned(), inline.map(str::to_owned)));
            continue;
        }
        let flag = find_flag(name)
            .ok_or_else(|| CompileUsageError::UnknownFlag { flag: name.to_owned() })?;
        let Some(placeholder) = flag.value else {
            if let Some(value) = inline {
                return Err(CompileUsageError::UnexpectedValue {
                    flag: name.to_owned(),
                    value: value.to_owned(),
                });
            }
            accepted_flags.push((name.to_owned(), None));
            continue;
        };
        let missing = || CompileUsageError::MissingValue {
            flag: name.to_owned(),
            placeholder: placeholder.to_owned(),
        };
        if flag.names[0] == "--pipeline" {
            let mut words: Vec<String> = inline.map(str::to_owned).into_iter().collect();
            if inline.is_none() {
                // The words end at the next flag or at `-`, which is then the input file.
                while let Some(next) = rest.get(index).filter(|next| !next.starts_with('-')) {
                    words.push(next.clone());
                    index += 1;
                }
            }
            if words.is_empty() {
                return Err(missing());
            }
            for pipeline_word in &words {
                check_choice(flag, name, pipeline_word)?;
            }
            pipeline.extend(words);
            continue;
        }
        let value = match inline {
            Some(value) => value.to_owned(),
            None => {
                let next = rest.get(index).filter(|next| takes_as_value(next));
                index += 1;
                next.cloned().ok_or_else(missing)?
            }
        };
        check_choice(flag, name, &value)?;
        match flag.names[0] {
            "--framework" => framework = Some(value),
            "--target" => target = Target::parse(&value),
            "--output" => output = Some(value),
            "--logical-nc-config" => lnc = value.parse().ok(),
            _ => accepted_flags.push((name.to_owned(), Some(value))),
        }
    }
    if framework.is_none() {
        return Err(CompileUsageError::MissingFlag { flag: "--framework" });
    }
    let target = target.ok_or(CompileUsageError::MissingFlag { flag: "--target" })?;
    let input = input.ok_or(CompileUsageError::MissingInput)?;
    let lnc = lnc.unwrap_or_else(|| target.default_lnc());
    if lnc > target.max_lnc() {
        return Err(CompileUsageError::LncForTarget { lnc, target: target.as_str() });
    }
    let output = PathBuf::from(output.unwrap_or_else(|| "file.neff".to_owned()));
    let output_name = output
        .file_name()
        .map_or_else(|| "file.neff".to_owned(), |name| name.to_string_lossy().into_owned());
    let options = CompileOptions {
        target,
        lnc,
        pipeline,
        output_name,
        accepted_flags,
        argv: argv.to_vec(),
        limits: hlo::LoadLimits::default(),
    };
    Ok(Invocation::Compile { input: PathBuf::from(input), output, options })
}

/// The usage text of `--help` (`command`: `compile`, `list-operators`, or `None` for the tool).
pub fn help_text(program: &str, command: Option<&str>) -> String {
    let mut text = String::new();
    let intro = "the nrtsim simulator's compile target with neuronx-cc's command line: it checks \
                 an XLA HLO module the way the simulator runs it and writes a NEFF that only the \
                 simulator runs (a real libnrt refuses it at load)";
    match command {
        Some("list-operators") => {
            let _ = writeln!(text, "usage: {program} list-operators [--framework XLA]\n");
            let _ = writeln!(text, "Prints the HLO opcodes the simulator evaluates, one a line.");
        }
        Some(_) => {
            let _ = writeln!(
                text,
                "usage: {program} compile MODEL --framework XLA --target TARGET [--output PATH] \
                 [--lnc N] [--pipeline WORD…] [flags]\n\n{intro}.\n\nModelled flags:"
            );
            let mut ignored = String::new();
            for flag in FLAGS {
                let mut spelled = flag.names.join(", ");
                if let Some(value) = flag.value {
                    let _ = write!(spelled, " {value}");
                }
                let choices = if flag.choices.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", flag.choices.join(" | "))
                };
                match flag.used {
                    FlagUse::Modelled => {
                        let _ = writeln!(text, "  {spelled}{choices}\n      {}", flag.help);
                    }
                    FlagUse::Ignored => {
                        let _ = writeln!(ignored, "  {spelled}{choices}");
                    }
                }
            }
            let _ = writeln!(
                text,
                "\nAccepted and ignored (recorded in the NEFF's sim/compile.json):\n{ignored}  \
                 --internal-NAME[=VALUE] (any)"
            );
        }
        None => {
            let _ = writeln!(
                text,
                "usage: {program} <command> [parameters]\n\n{intro}.\n\nCommands:\n  compile          \
                 compile an XLA HLO module to a simulator NEFF\n  list-operators   print the HLO \
                 opcodes the simulator evaluates\n\nOptions:\n  --version        print the \
                 version\n  --help           print this text; `{program} <command> --help` for a \
                 command"
            );
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Result<Invocation, CompileUsageError> {
        let args: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
        parse_neuronx_cc_args(&args)
    }

    fn compiled(line: &str) -> (PathBuf, PathBuf, CompileOptions) {
        match parse(line) {
            Ok(Invocation::Compile { input, output, options }) => (input, output, options),
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn nkipys_command_line_parses() {
        let line = "compile --framework XLA /abs/dir/hlo_module.pb --pipeline compile SaveTemps \
                    --target trn2 --output=file.neff --lnc 1 --internal-tensorizer-opt-level=2";
        let (input, output, options) = compiled(line);
        assert_eq!(input, PathBuf::from("/abs/dir/hlo_module.pb"));
        assert_eq!(output, PathBuf::from("file.neff"));
        assert_eq!(options.target, Target::Trn2);
        assert_eq!(options.lnc, 1);
        assert_eq!(options.pipeline, ["compile", "SaveTemps"]);
        assert_eq!(options.output_name, "file.neff");
        assert_eq!(
            options.accepted_flags,
            [("--internal-tensorizer-opt-level".to_owned(), Some("2".to_owned()))]
        );
        assert_eq!(options.argv.len(), 13);
    }

    #[test]
    fn the_file_may_come_first_and_values_after_equals() {
        let (input, output, options) =
            compiled("compile model.hlo --framework XLA --target trn1 --output model.neff");
        assert_eq!((input, output), (PathBuf::from("model.hlo"), PathBuf::from("model.neff")));
        assert_eq!((options.target, options.lnc), (Target::Trn1, 1));
        let (_, output, options) =
            compiled("compile m.pb --framework=XLA --target=trn2 --lnc=2 --output=out/x.neff");
        assert_eq!(output, PathBuf::from("out/x.neff"));
        assert_eq!(
            (options.target, options.lnc, options.output_name.as_str()),
            (Target::Trn2, 2, "x.neff")
        );
    }

    #[test]
    fn defaults_are_the_documented_ones() {
        let (_, output, options) = compiled("compile m.pb --framework XLA --target trn2");
        assert_eq!(output, PathBuf::from("file.neff"));
        assert_eq!(options.lnc, 2);
        let (_, _, options) = compiled("compile m.pb --framework XLA --target inf2");
        assert_eq!(options.lnc, 1);
    }

    #[test]
    fn ignored_flags_are_recorded_in_order() {
        let (_, _, options) = compiled(
            "compile m.pb --framework XLA --target trn1 -O1 --auto-cast all \
             --enable-saturate-infinity --verbose=info -lnc 1 --internal-x",
        );
        let expected: Vec<(String, Option<String>)> = vec![
            ("-O".into(), Some("1".into())),
            ("--auto-cast".into(), Some("all".into())),
            ("--enable-saturate-infinity".into(), None),
            ("--verbose".into(), Some("info".into())),
            ("--internal-x".into(), None),
        ];
        assert_eq!(options.accepted_flags, expected);
    }

    #[test]
    fn refusals_name_what_is_wrong() {
        let cases: &[(&str, CompileUsageError)] = &[
            ("", CompileUsageError::MissingCommand),
            ("build", CompileUsageError::UnknownCommand { command: "build".into() }),
            (
                "compile m.pb --framework XLA --target trn2 --frobnicate",
                CompileUsageError::UnknownFlag { flag: "--frobnicate".into() },
            ),
            (
                "compile m.pb --framework XLA --target trn9",
                CompileUsageError::BadValue {
                    flag: "--target".into(),
                    value: "trn9".into(),
                    expected: "trn1, trn1n, trn2, trn3, inf2".into(),
                },
            ),
            (
                "compile m.pb --framework TENSORFLOW --target trn2",
                CompileUsageError::BadValue {
                    flag: "--framework".into(),
                    value: "TENSORFLOW".into(),
                    expected: "XLA".into(),
                },
            ),
            ("compile m.pb --target trn2", CompileUsageError::MissingFlag { flag: "--framework" }),
            ("compile m.pb --framework XLA", CompileUsageError::MissingFlag { flag: "--target" }),
            ("compile --framework XLA --target trn2", CompileUsageError::MissingInput),
            (
                "compile a.pb b.pb --framework XLA --target trn2",
                CompileUsageError::ExtraInput { first: "a.pb".into(), second: "b.pb".into() },
            ),
            (
                "compile m.pb --framework XLA --target trn2 --output",
                CompileUsageError::MissingValue {
                    flag: "--output".into(),
                    placeholder: "PATH".into(),
                },
            ),
            (
                "compile m.pb --framework XLA --target trn1 --lnc 2",
                CompileUsageError::LncForTarget { lnc: 2, target: "trn1" },
            ),
            (
                "compile m.pb --framework XLA --target trn2 --pipeline tensorize",
                CompileUsageError::BadValue {
                    flag: "--pipeline".into(),
                    value: "tensorize".into(),
                    expected: "compile, SaveTemps".into(),
                },
            ),
            (
                "compile m.pb --framework XLA --target trn2 --enable-saturate-infinity=1",
                CompileUsageError::UnexpectedValue {
                    flag: "--enable-saturate-infinity".into(),
                    value: "1".into(),
                },
            ),
        ];
        for (line, expected) in cases {
            assert_eq!(parse(line).as_ref(), Err(expected), "{line}");
        }
    }

    /// Every flag that takes a value, followed by another flag (`--output --lnc=1`), is refused
    /// naming the flag: the next flag is never taken as its value.
    #[test]
    fn a_value_flag_followed_by_a_flag_is_missing_its_value() {
        let followers = ["--lnc=1", "--target", "-O2", "--enable-saturate-infinity", "--help"];
        for flag in FLAGS {
            let Some(placeholder) = flag.value else { continue };
            for name in flag.names {
                for follower in followers {
                    // The flag under test comes first, so a follower that is itself the flag's
                    // value (or a request for help) cannot end the parse before it.
                    let line =
                        format!("compile m.pb {name} {follower} --framework XLA --target trn2");
                    let expected = CompileUsageError::MissingValue {
                        flag: (*name).to_owned(),
                        placeholder: placeholder.to_owned(),
                    };
                    assert_eq!(parse(&line), Err(expected), "{line}");
                }
            }
        }
        assert_eq!(
            parse("list-operators --framework --help"),
            Err(CompileUsageError::MissingValue {
                flag: "--framework".into(),
                placeholder: "FRAMEWORK".into()
            })
        );
    }

    #[test]
    fn the_other_commands_parse() {
        assert_eq!(parse("--version"), Ok(Invocation::Version));
        assert_eq!(parse("--help"), Ok(Invocation::Help { command: None }));
        assert_eq!(parse("list-operators --framework XLA"), Ok(Invocation::ListOperators));
        assert_eq!(parse("list-operators --framework=XLA"), Ok(Invocation::ListOperators));
        assert_eq!(
            parse("compile --help"),
            Ok(Invocation::Help { command: Some("compile".into()) })
        );
    }

    #[test]
    fn help_lists_every_ignored_flag() {
        let help = help_text("neuronx-cc", Some("compile"));
        let (_, ignored) = help.split_once("Accepted and ignored").unwrap();
        for flag in FLAGS.iter().filter(|flag| flag.used == FlagUse::Ignored) {
            assert!(ignored.contains(flag.names[0]), "{}", flag.names[0]);
        }
        assert!(ignored.contains("--internal-"));
    }
}
