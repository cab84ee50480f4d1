//! The flags that set the parsers' count limits (`--max-metaneff-*`, `--max-hlo-*`,
//! `--max-neff-*`), and the variables that set the compile target's: an input refused under a
//! limit is read with the limit raised, the refusal names the flag (or variable), and `--help`
//! gives each default.

use abi::neff::{GraphSpec, NeffSpec, Signature, TensorSignature, Var};

mod support;
use support::{nrtsim, nrtsim_exe, scratch, stderr, stdout};

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

/// A module of 2 computations and 4 instructions, `f32[4]` in and out (`x + x` through a call).
const DOUBLE: &str = "HloModule m\n\ndouble {\n  a = f32[4] parameter(0)\n  ROOT s = f32[4] add(a, a)\n}\n\nENTRY main {\n  x = f32[4] parameter(0)\n  ROOT y = f32[4] call(x), to_apply=double\n}\n";

/// Asserts that `args` is refused naming `flag` under the lowered limit, and accepted with the
/// limit raised to `enough`.
fn refused_then_accepted(args: &[&str], flag: &str, short: &str, enough: &str) {
    let mut lowered = args.to_vec();
    lowered.extend([flag, short]);
    let message = refused(&lowered);
    assert!(
        message.contains(&format!("pass a larger {flag} to read it")),
        "{lowered:?}: {message}"
    );
    let mut raised = args.to_vec();
    raised.extend([flag, enough]);
    accepted(&raised);
}

/// A metaneff of three inputs of shape `[1, 2, 3]`.
fn three_tensors() -> Vec<u8> {
    let tensor = abi::metaneff::MetaTensor { shape: vec![1, 2, 3], ..Default::default() };
    abi::metaneff::encode(&abi::metaneff::MetaNeff {
        input_tensors: vec![tensor; 3],
        ..Default::default()
    })
}

/// `metaneff diff` decodes both files under the metaneff flags.
#[test]
fn metaneff_diff_takes_the_metaneff_limits() {
    let dir = scratch("diff-limits");
    let pb = dir.join("three.pb");
    std::fs::write(&pb, three_tensors()).unwrap();
    let pb = pb.to_str().unwrap();
    let args = ["metaneff", "diff", pb, pb];
    refused_then_accepted(&args, "--max-metaneff-tensors", "2", "3");
    refused_then_accepted(&args, "--max-metaneff-shape-dims", "2", "3");
}

/// `metaneff from-hlo` reads its module under the HLO flags.
#[test]
fn metaneff_from_hlo_takes_the_hlo_limits() {
    let dir = scratch("from-hlo-limits");
    let module = dir.join("m.hlo");
    std::fs::write(&module, DOUBLE).unwrap();
    let out = dir.join("m.pb");
    let args = ["metaneff", "from-hlo", module.to_str().unwrap(), "-o", out.to_str().unwrap()];
    refused_then_accepted(&args, "--max-hlo-instructions", "3", "4");
    refused_then_accepted(&args, "--max-hlo-computations", "1", "2");
}

/// `check` reads the metaneff under the metaneff flags and its module under the HLO flags; the
/// NEFF flags were there already.
#[test]
fn check_takes_the_metaneff_and_hlo_limits() {
    let dir = scratch("check-limits");
    let mut spec = NeffSpec::new("double.neff");
    spec.graphs.push(GraphSpec {
        name: "sg00".to_owned(),
        vars: vec![
            Var::new("x", 0, "input").with_size(16),
            Var::new("output0", 1, "output").with_size(16),
        ],
    });
    spec.signature = Signature {
        inputs: vec![TensorSignature::new("x", "float32", &[4])],
        outputs: vec![TensorSignature::new("output0", "float32", &[4])],
    };
    let neff = dir.join("double.neff");
    std::fs::write(&neff, spec.to_bytes().unwrap()).unwrap();
    let tensor = |name: &str| abi::metaneff::MetaTensor {
        name: name.as_bytes().to_vec().into(),
        shape: vec![4],
        data_type: abi::metaneff::meta_tensor::DataType::Float as i32,
        ..Default::default()
    };
    let metaneff = abi::metaneff::encode(&abi::metaneff::MetaNeff {
        input_tensors: vec![tensor("x")],
        output_tensors: vec![tensor("output0")],
        serialized_graph_def: DOUBLE.as_bytes().to_vec().into(),
        ..Default::default()
    });
    let pb = dir.join("double.pb");
    std::fs::write(&pb, metaneff).unwrap();
    let args = ["check", neff.to_str().unwrap(), pb.to_str().unwrap()];
    // The pair binds: the raised limits give the report, not a refusal.
    assert!(accepted(&args).contains("the pair binds"), "{args:?}");
    refused_then_accepted(&args, "--max-metaneff-tensors", "0", "1");
    refused_then_accepted(&args, "--max-hlo-instructions", "3", "4");
    refused_then_accepted(&args, "--max-hlo-computations", "1", "2");
}

/// `DOUBLE` compiled by `nrtsim compile` (its program in the NEFF), its metaneff by
/// `metaneff from-hlo`, and an input: the files of a `run`, in `dir`.
fn compiled_double(dir: &std::path::Path) {
    std::fs::write(dir.join("m.hlo"), DOUBLE).unwrap();
    let compile = std::process::Command::new(nrtsim_exe())
        .current_dir(dir)
        .args(["compile", "m.hlo", "--framework", "XLA", "--target", "trn1", "--output", "m.neff"])
        .output()
        .unwrap();
    assert!(compile.status.success(), "{}", stderr(&compile));
    let from_hlo = std::process::Command::new(nrtsim_exe())
        .current_dir(dir)
        .args(["metaneff", "from-hlo", "m.hlo", "-o", "m.pb"])
        .output()
        .unwrap();
    assert!(from_hlo.status.success(), "{}", stderr(&from_hlo));
    let header = abi::neff::npy::encode_header("<f4", &[4], 16).unwrap();
    let values: Vec<u8> = [1f32, 2., 3., 4.].iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(dir.join("x.npy"), [header, values].concat()).unwrap();
}

/// The compile target reads the simulator's `NRTSIM_MAX_HLO_*` variables: a module past one is
/// refused naming it, and compiles with it raised.
#[test]
fn compile_takes_the_hlo_limits_from_the_simulators_variables() {
    let dir = scratch("compile-limits");
    std::fs::write(dir.join("m.hlo"), DOUBLE).unwrap();
    for (variable, short, enough) in
        [("NRTSIM_MAX_HLO_INSTRUCTIONS", "3", "4"), ("NRTSIM_MAX_HLO_COMPUTATIONS", "1", "2")]
    {
        let compile = |value: &str| {
            std::process::Command::new(nrtsim_exe())
                .current_dir(&*dir)
                .env(variable, value)
                .args(["compile", "m.hlo", "--framework", "XLA", "--target", "trn1"])
                .args(["--output", "m.neff"])
                .output()
                .unwrap()
        };
        let out = compile(short);
        assert_eq!(out.status.code(), Some(1), "{variable}={short}: {}", stderr(&out));
        assert!(stderr(&out).contains(&format!("set {variable} higher")), "{}", stderr(&out));
        assert!(!dir.join("m.neff").exists(), "{variable}={short} wrote the NEFF");
        let out = compile(enough);
        assert!(out.status.success(), "{variable}={enough}: {}", stderr(&out));
        std::fs::remove_file(dir.join("m.neff")).unwrap();
    }
}

/// `run` hands every group to the simulator's loader and the binding layer: the NEFF, the
/// program the loader reads from it, and the metaneff, with and without `--metaneff`.
#[test]
fn run_takes_the_neff_hlo_and_metaneff_limits() {
    let dir = scratch("run-limits");
    compiled_double(&dir);
    let parsed = abi::neff::Neff::parse(
        &std::fs::read(dir.join("m.neff")).unwrap(),
        &abi::neff::ReadOptions::default(),
    )
    .unwrap();
    let vars = parsed.graphs.iter().map(|graph| graph.vars.len()).sum::<usize>();
    let (fewer, all) = ((vars - 1).to_string(), vars.to_string());
    let members = parsed.members.len();
    let (fewer_members, all_members) = ((members - 1).to_string(), members.to_string());
    let path = |name: &str| dir.join(name).to_str().unwrap().to_owned();
    let (neff, pb, x, out) = (path("m.neff"), path("m.pb"), path("x.npy"), path("out"));
    let raw = ["run", neff.as_str(), "--input", "input0=x", "--output-dir", out.as_str()];
    let raw: Vec<String> =
        raw.iter().map(|arg| arg.replace("input0=x", &format!("input0={x}"))).collect();
    let raw: Vec<&str> = raw.iter().map(String::as_str).collect();
    let bound = ["run", neff.as_str(), "--metaneff", pb.as_str(), "--input", x.as_str()];
    let bound = [&bound[..], &["--output-dir", out.as_str()]].concat();
    for args in [&raw[..], &bound[..]] {
        // The loader's hint names its variable; `run` names the flag, which overrides it.
        let message = refused(&[args, &["--max-hlo-instructions", "3"]].concat());
        assert!(!message.contains("NRTSIM_MAX_HLO_INSTRUCTIONS"), "{args:?}: {message}");
        refused_then_accepted(args, "--max-hlo-instructions", "3", "4");
        refused_then_accepted(args, "--max-hlo-computations", "1", "2");
        refused_then_accepted(args, "--max-neff-vars", &fewer, &all);
        refused_then_accepted(args, "--max-neff-members", &fewer_members, &all_members);
    }
    refused_then_accepted(&bound, "--max-metaneff-tensors", "0", "1");
    refused_then_accepted(&bound, "--max-metaneff-shape-dims", "0", "1");
}

/// A flag and the default `--help` must give for it.
type FlagDefault = (&'static str, usize);

/// `--help` of each command with a group gives every flag with its default.
#[test]
fn help_gives_each_limit_and_its_default() {
    let cases: [(&[&str], &[FlagDefault]); 7] = [
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
        (
            &["check", "--help"],
            &[
                ("--max-neff-vars", abi::neff::DEFAULT_MAX_VARS),
                ("--max-metaneff-tensors", abi::metaneff::DEFAULT_MAX_TENSORS),
                ("--max-hlo-instructions", hlo::DEFAULT_MAX_INSTRUCTIONS),
            ],
        ),
        (
            &["metaneff", "diff", "--help"],
            &[
                ("--max-metaneff-tensors", abi::metaneff::DEFAULT_MAX_TENSORS),
                ("--max-metaneff-shape-dims", abi::metaneff::DEFAULT_MAX_SHAPE_DIMS),
            ],
        ),
        (
            &["metaneff", "from-hlo", "--help"],
            &[
                ("--max-hlo-computations", hlo::DEFAULT_MAX_COMPUTATIONS),
                ("--max-hlo-instructions", hlo::DEFAULT_MAX_INSTRUCTIONS),
            ],
        ),
        (
            &["run", "--help"],
            &[
                ("--max-neff-members", abi::neff::DEFAULT_MAX_MEMBERS),
                ("--max-neff-vars", abi::neff::DEFAULT_MAX_VARS),
                ("--max-metaneff-tensors", abi::metaneff::DEFAULT_MAX_TENSORS),
                ("--max-metaneff-shape-dims", abi::metaneff::DEFAULT_MAX_SHAPE_DIMS),
                ("--max-hlo-computations", hlo::DEFAULT_MAX_COMPUTATIONS),
                ("--max-hlo-instructions", hlo::DEFAULT_MAX_INSTRUCTIONS),
            ],
        ),
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
