//! `nrtsim hlo print` and `nrtsim hlo encode` from the outside: outputs, exit codes, errors.

use std::path::PathBuf;

mod support;
use support::{nrtsim, scratch, stderr};

/// The file `file` of the fixture `name`, written by jax (see hlo/tests/fixtures/export.py).
fn fixture(name: &str, file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../hlo/tests/fixtures").join(name).join(file)
}

#[test]
fn encode_then_print_gives_back_the_jax_text() {
    let dir = scratch("roundtrip");
    let pb = dir.join("while_loop.pb");
    let text = fixture("while_loop", "module.hlo");
    let out = nrtsim(&["hlo", "encode", text.to_str().unwrap(), "-o", pb.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    // The proto we wrote is the one XLA's parser writes for the same text.
    let ours = hlo::decode_module(&std::fs::read(&pb).unwrap()).unwrap();
    let xla = hlo::decode_module(&std::fs::read(fixture("while_loop", "xla.pb")).unwrap()).unwrap();
    assert_eq!(ours.computations.len(), xla.computations.len());
    for (a, b) in ours.computations.iter().zip(&xla.computations) {
        let ids = |c: &hlo::proto::HloComputationProto| {
            c.instructions
                .iter()
                .map(|i| (i.id, i.operand_ids.clone(), i.called_computation_ids.clone()))
                .collect::<Vec<_>>()
        };
        assert_eq!(ids(a), ids(b));
    }
    let out = nrtsim(&["hlo", "print", pb.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(String::from_utf8(out.stdout).unwrap(), std::fs::read_to_string(&text).unwrap());
}

#[test]
fn print_reads_xla_binary_and_writes_to_a_file() {
    let dir = scratch("binary");
    let out_path = dir.join("conv.hlo");
    let out = nrtsim(&[
        "hlo",
        "print",
        fixture("conv", "xla.pb").to_str().unwrap(),
        "-o",
        out_path.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(out.stdout.is_empty());
    assert_eq!(
        std::fs::read_to_string(out_path).unwrap(),
        std::fs::read_to_string(fixture("conv", "module.hlo")).unwrap()
    );
}

#[test]
fn bad_text_fails_with_line_and_column() {
    let dir = scratch("bad");
    let bad = dir.join("bad.hlo");
    std::fs::write(&bad, "HloModule m\n\nENTRY e {\n  x = f32[2] frobnicate()\n}\n").unwrap();
    let out =
        nrtsim(&["hlo", "encode", bad.to_str().unwrap(), "-o", dir.join("x.pb").to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("4:14: unknown opcode `frobnicate`"), "{}", stderr(&out));
    assert!(!dir.join("x.pb").exists());
}

#[test]
fn invalid_structure_is_refused_unless_asked() {
    let dir = scratch("cycle");
    let cyclic = dir.join("cycle.hlo");
    std::fs::write(
        &cyclic,
        "HloModule m\nENTRY e {\n  a = f32[] negate(b)\n  ROOT b = f32[] negate(a)\n}\n",
    )
    .unwrap();
    let out = nrtsim(&["hlo", "print", cyclic.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("instruction `a` depends on itself"), "{}", stderr(&out));
    let out = nrtsim(&["hlo", "print", "--no-validate", cyclic.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8(out.stdout).unwrap().contains("ROOT b = f32[] negate(a)"));
}

#[test]
fn help_names_both_forms() {
    let out = nrtsim(&["hlo", "print", "--help"]);
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    assert!(help.contains("HloModuleProto") && help.contains("HLO text"), "{help}");
}

#[test]
fn no_metadata_leaves_metadata_out() {
    let dir = scratch("metadata");
    let src = dir.join("m.hlo");
    std::fs::write(
        &src,
        "HloModule m\n\nENTRY e {\n  ROOT x = f32[] parameter(0), metadata={op_name=\"x\"}\n}\n\n",
    )
    .unwrap();
    let with = nrtsim(&["hlo", "print", src.to_str().unwrap()]);
    assert!(String::from_utf8(with.stdout).unwrap().contains("metadata={op_name=\"x\"}"));
    let without = nrtsim(&["hlo", "print", "--no-metadata", src.to_str().unwrap()]);
    assert!(without.status.success(), "{}", stderr(&without));
    assert_eq!(
        String::from_utf8(without.stdout).unwrap(),
        // The entry layout is the one the parser derives, as XLA's printer writes it.
        "HloModule m, entry_computation_layout={(f32[])->f32[]}\n\nENTRY e {\n  ROOT x = f32[] parameter(0)\n}\n\n"
    );
}

/// An endless module (`/dev/zero`) is refused at the input limit by every subcommand, and the
/// message names the limit and the flag that raises it; the same cap applies to `.npy` inputs.
#[test]
fn endless_inputs_are_refused_at_the_input_limit() {
    for command in
        [&["print", "/dev/zero"][..], &["encode", "/dev/zero", "-o", "-"], &["run", "/dev/zero"]]
    {
        let mut args = vec!["hlo"];
        args.extend_from_slice(command);
        args.extend_from_slice(&["--max-input-bytes", "4096"]);
        let out = nrtsim(&args);
        assert!(!out.status.success(), "{command:?}");
        let message = stderr(&out);
        assert!(message.contains("--max-input-bytes (4096 bytes)"), "{command:?}: {message}");
        assert!(message.contains("--max-input-bytes"), "{command:?}: {message}");
    }
    let dir = scratch("npy-limit");
    let module = dir.join("m.hlo");
    std::fs::write(&module, "HloModule m\n\nENTRY e {\n  ROOT p = f32[2]{0} parameter(0)\n}\n")
        .unwrap();
    let out = nrtsim(&[
        "hlo",
        "run",
        module.to_str().unwrap(),
        "--input",
        "/dev/zero",
        "--max-input-bytes",
        "4096",
    ]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--max-input-bytes (4096 bytes)"), "{}", stderr(&out));
}
