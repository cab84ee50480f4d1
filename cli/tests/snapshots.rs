//! Snapshots (insta) of what people read: `inspect`, `check` findings, `metaneff diff`,
//! `metaneff decode` text and `hlo print`, run as the built binary on files this test writes
//! (with the NEFF writer and metaneff text) and on the `hlo` crate's jax-written fixtures.
//!
//! The snapshots pin derived output for review (`cargo xtask bless` rewrites them with the
//! vectors' generated files, then read the diff); the hand-written tests of each command stay the first net. Every
//! command runs in a fresh directory on relative file names, so no path reaches the output.

use std::path::Path;
use std::process::Command;

use abi::metaneff::{self, text};
use abi::neff::{GraphSpec, NeffSpec, Signature, TensorSignature, Var};

mod support;
use support::{Scratch, nrtsim_exe};

/// Runs `nrtsim ARGS` in `dir`; the snapshot holds the exit status, stdout and stderr.
fn nrtsim(dir: &Path, args: &[&str]) -> String {
    let output =
        Command::new(nrtsim_exe()).current_dir(dir).args(args).output().expect("run nrtsim");
    format!(
        "exit status: {:?}\n--- stdout\n{}--- stderr\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn neff() -> Vec<u8> {
    let mut spec = NeffSpec::new("snapshot.neff");
    spec.graphs.push(GraphSpec {
        name: "sg00".to_owned(),
        vars: vec![
            Var::new("SB", 0, "state-buffer"),
            Var::new("x", 1, "input").with_size(32),
            Var::new("cache", 2, "input").with_size(32),
            Var::new("w", 3, "input").with_size(16),
            Var::new("out", 4, "output").with_size(32),
            Var::new("new_cache", 5, "output"),
        ],
    });
    spec.signature = Signature {
        inputs: vec![
            TensorSignature::new("x", "float32", &[2, 4]),
            TensorSignature::new("cache", "float32", &[2, 4]),
            TensorSignature::new("w", "bfloat16", &[2, 4]),
        ],
        outputs: vec![TensorSignature::new("out", "float32", &[2, 4])],
    };
    spec.to_bytes().expect("neff")
}

/// A metaneff that binds to [`neff`] but for a handful of defects.
const BROKEN: &str = r#"
name: "snapshot"
input_tensors { name: "x" shape: [2, 4] data_type: FLOAT type: USER_INPUT }
input_tensors { name: "w" shape: [2, 4] data_type: FLOAT type: INPUT_WEIGHT checkpoint_key: "w" }
input_tensors { name: "cache" shape: [2, 4] data_type: FLOAT type: INPUT_STATE }
input_tensors { name: "scale" allow_dynamic_batch_size: true data_type: FLOAT type: USER_INPUT }
output_tensors { name: "out" shape: [2, 4] data_type: FLOAT }
output_tensors { name: "new_cache" shape: [2, 4] data_type: FLOAT }
output_aliases_to { key: 1 value: 2 }
output_aliases_to { key: 3 value: 0 }
model_config { return_aliases: true }
"#;

/// The same model as [`BROKEN`], fixed.
const FIXED: &str = r#"
name: "snapshot"
input_tensors { name: "x" shape: [2, 4] data_type: FLOAT type: USER_INPUT }
input_tensors { name: "cache" shape: [2, 4] data_type: FLOAT type: INPUT_STATE checkpoint_key: "cache" }
input_tensors { name: "w" shape: [2, 4] data_type: BFLOAT16 type: INPUT_WEIGHT checkpoint_key: "w" }
output_tensors { name: "out" shape: [2, 4] data_type: FLOAT }
output_tensors { name: "new_cache" shape: [2, 4] data_type: FLOAT }
output_aliases_to { key: 1 value: 1 }
model_config { return_aliases: true }
"#;

fn files(label: &str) -> Scratch {
    let dir = Scratch::new(label);
    dir.write("model.neff", &neff());
    let mut broken = text::from_text(BROKEN).expect("broken text encodes");
    // Field 15 as a varint, 1: a field the schema does not know.
    broken.extend_from_slice(&[0x78, 0x01]);
    dir.write("broken.metaneff", &broken);
    dir.write("fixed.metaneff", &text::from_text(FIXED).expect("fixed text encodes"));
    let meta = metaneff::decode(&text::from_text(FIXED).expect("encodes")).expect("decodes");
    assert_eq!(meta.input_tensors.len(), 3, "the fixed text is the model the NEFF declares");
    dir
}

#[test]
fn inspect_text() {
    let dir = files("inspect");
    insta::assert_snapshot!(nrtsim(dir.path(), &["inspect", "model.neff"]));
}

#[test]
fn check_findings_of_a_broken_pair() {
    let dir = files("check-broken");
    insta::assert_snapshot!(nrtsim(dir.path(), &["check", "model.neff", "broken.metaneff"]));
}

#[test]
fn check_of_the_fixed_pair() {
    let dir = files("check-fixed");
    insta::assert_snapshot!(nrtsim(dir.path(), &["check", "model.neff", "fixed.metaneff"]));
}

#[test]
fn metaneff_diff_of_the_fix() {
    let dir = files("diff");
    insta::assert_snapshot!(nrtsim(
        dir.path(),
        &["metaneff", "diff", "broken.metaneff", "fixed.metaneff"]
    ));
}

#[test]
fn metaneff_decode_text() {
    let dir = files("decode");
    insta::assert_snapshot!(nrtsim(dir.path(), &["metaneff", "decode", "broken.metaneff"]));
}

#[test]
fn hlo_print_of_jax_fixtures() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../hlo/tests/fixtures");
    for name in ["batched_dot", "cond"] {
        insta::assert_snapshot!(
            format!("hlo_print_{name}"),
            nrtsim(&fixtures.join(name), &["hlo", "print", "jax.pb"])
        );
    }
}
