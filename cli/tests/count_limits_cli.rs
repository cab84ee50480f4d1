//! The flags that set the parsers' count limits (`--max-metaneff-*`, `--max-hlo-*`,
//! `--max-neff-*`): an input refused under a limit is read with the flag raised, the refusal
//! names the flag, and `--help` gives each default.

use abi::neff::{GraphSpec, NeffSpec, Signature, TensorSignature, Var};

mod support;
use support::{nrtsim, scratch, stderr, stdout};

/// Runs `nrtsim` and returns its stderr, asserting the exit status.
fn refused(args: &[&str]) -> String {
    let out = nrtsim(args);
    assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
    stderr(&out)
}

fn accepted(args: &[&str]) -> String {
    let out = nrtsim(args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    stdout(&out)
}

/// A metaneff one tensor past the default limit is refused by default, naming the flag, and
/// read by decode, edit and encode with `--max-metaneff-tensors` raised to fit it.
#[test]
fn max_metaneff_tensors_raises_the_tensor_limit() {
    let dir = scratch("metaneff-tensors");
    let count = abi::metaneff::DEFAULT_MAX_TENSORS + 1;
    let bytes: Vec<u8> = std::iter::repeat_n([0x0a, 0x00], count).flatten().collect();
    let pb = dir.join("many.pb");
    std::fs::write(&pb, &bytes).unwrap();
    let txt = dir.join("many.txtpb");
    std::fs::write(&txt, "input_tensors {\n}\n".repeat(count)).unwrap();
    let (pb, txt) = (pb.to_str().unwrap(), txt.to_str().unwrap());
    let edited = dir.join("edited.pb");
    let encoded = dir.join("encoded.pb");
    let (edited_s, encoded_s) = (edited.to_str().unwrap(), encoded.to_str().unwrap());
    let commands: [&[&str]; 3] = [
        &["metaneff", "decode", pb],
        &["metaneff", "edit", pb, "--lazy-load", "false", "-o", edited_s],
        &["metaneff", "encode", txt, "-o", encoded_s],
    ];
    let raised = count.to_string();
    for args in commands {
        let message = refused(args);
        assert!(message.contains("pass a larger --max-metaneff-tensors"), "{args:?}: {message}");
        let mut args = args.to_vec();
        args.extend(["--max-metaneff-tensors", &raised]);
        let printed = accepted(&args);
        if args[1] == "decode" {
            // Printed as one list of empty messages: `input_tensors: [{}, {}, …]`.
            assert_eq!(printed.matches("{}").count(), count);
        }
    }
    assert_eq!(std::fs::read(&encoded).unwrap(), bytes);
    let decoded = abi::metaneff::decode_with_limits(
        &std::fs::read(&edited).unwrap(),
        &abi::metaneff::MetaneffLimits { max_tensors: count, ..Default::default() },
    )
    .unwrap();
    assert_eq!(decoded.input_tensors.len(), count);
    assert!(decoded.model_config.is_some(), "the edit was made");
}

/// A module of 2 computations and 4 instructions: refused under lower limits, naming the flag
/// that was short, and read with each limit at its count.
#[test]
fn max_hlo_flags_set_the_module_limits() {
    let dir = scratch("hlo-limits");
    let module = "HloModule m\n\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n\nENTRY main {\n  ROOT x = f32[] parameter(0)\n}\n";
    let path = dir.join("m.hlo");
    std::fs::write(&path, module).unwrap();
    let path = path.to_str().unwrap();
    for command in ["print", "encode"] {
        let mut args = vec!["hlo", command, path];
        if command == "encode" {
            args.extend(["-o", "-"]);
        }
        let short = |flag: &'static str, value: &'static str| {
            let mut args = args.clone();
            args.extend([flag, value]);
            let message = refused(&args);
            assert!(message.contains(&format!("pass a larger {flag}")), "{args:?}: {message}");
        };
        short("--max-hlo-instructions", "3");
        short("--max-hlo-computations", "1");
        args.extend(["--max-hlo-instructions", "4", "--max-hlo-computations", "2"]);
        accepted(&args);
    }
}

/// A NEFF of 4 variables and its members: refused under lower limits by `inspect` and `check`,
/// naming the flag, and read with the limits at its counts.
#[test]
fn max_neff_flags_set_the_neff_limits() {
    let dir = scratch("neff-limits");
    let mut spec = NeffSpec::new("limits.neff");
    spec.graphs.push(GraphSpec {
        name: "sg00".to_owned(),
        vars: vec![
            Var::new("SB", 0, "state-buffer"),
            Var::new("x", 1, "input").with_size(16),
            Var::new("output0", 2, "output").with_size(16),
            Var::new("sem", 3, "semaphore").with_size(8),
        ],
    });
    spec.signature = Signature {
        inputs: vec![TensorSignature::new("x", "float32", &[4])],
        outputs: vec![TensorSignature::new("output0", "float32", &[4])],
    };
    let bytes = spec.to_bytes().unwrap();
    let members =
        abi::neff::Neff::parse(&bytes, &abi::neff::ReadOptions::default()).unwrap().members.len();
    let neff = dir.join("limits.neff");
    std::fs::write(&neff, &bytes).unwrap();
    let neff = neff.to_str().unwrap();
    let (fewer, all) = ((members - 1).to_string(), members.to_string());
    for (flag, short, enough) in
        [("--max-neff-vars", "3", "4"), ("--max-neff-members", fewer.as_str(), all.as_str())]
    {
        let message = refused(&["inspect", neff, flag, short]);
        assert!(message.contains(&format!("pass a larger {flag}")), "{flag}: {message}");
        accepted(&["inspect", neff, flag, enough]);
    }
    let message = refused(&["check", neff, "-", "--max-neff-vars", "3"]);
    assert!(message.contains("pass a larger --max-neff-vars"), "{message}");
}

/// A flag and the default `--help` must give for it.
type FlagDefault = (&'static str, usize);

/// `--help` of each command with a group gives every flag with its default.
#[test]
fn help_gives_each_limit_and_its_default() {
    let cases: [(&[&str], &[FlagDefault]); 4] = [
        (
            &["metaneff", "decode", "--help"],
            &[
                ("--max-metaneff-tensors", abi::metaneff::DEFAULT_MAX_TENSORS),
                ("--max-metaneff-shape-dims", abi::metaneff::DEFAULT_MAX_SHAPE_DIMS),
            ],
        ),
        (
            &["hlo", "run", "--help"],
            &[
                ("--max-hlo-computations", hlo::DEFAULT_MAX_COMPUTATIONS),
                ("--max-hlo-instructions", hlo::DEFAULT_MAX_INSTRUCTIONS),
            ],
        ),
        (
            &["inspect", "--help"],
            &[
                ("--max-neff-members", abi::neff::DEFAULT_MAX_MEMBERS),
                ("--max-neff-vars", abi::neff::DEFAULT_MAX_VARS),
            ],
        ),
        (&["check", "--help"], &[("--max-neff-vars", abi::neff::DEFAULT_MAX_VARS)]),
    ];
    for (args, flags) in cases {
        let help = accepted(args);
        for (flag, default) in flags {
            let line = help.lines().position(|line| line.contains(&format!("{flag} <N>")));
            let line = line.unwrap_or_else(|| panic!("{args:?}: no {flag} in\n{help}"));
            // clap puts the default at the end of the flag's description.
            let described: String = help.lines().skip(line).take(4).collect();
            assert!(described.contains(&format!("[default: {default}]")), "{args:?}: {help}");
        }
    }
}
