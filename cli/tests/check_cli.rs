//! `nrtsim check` run as the built binary: exit status, `--json`, and bad input files.

use std::path::Path;
use std::process::{Command, Output};

use abi::metaneff::text;
use abi::neff::{GraphSpec, NeffSpec, Signature, TensorSignature, Var};
use serde_json::Value;

mod support;
use support::{Scratch, nrtsim_exe, stderr, stdout};

fn neff() -> Vec<u8> {
    let mut spec = NeffSpec::new("cli.neff");
    spec.graphs.push(GraphSpec {
        name: "sg00".to_owned(),
        vars: vec![
            Var::new("x", 0, "input").with_size(16),
            Var::new("y", 1, "output").with_size(16),
        ],
    });
    spec.signature = Signature {
        inputs: vec![TensorSignature::new("x", "float32", &[4])],
        outputs: vec![TensorSignature::new("y", "float32", &[4])],
    };
    spec.to_bytes().expect("neff")
}

fn metaneff(input_name: &str) -> Vec<u8> {
    text::from_text(&format!(
        r#"input_tensors {{ name: "{input_name}" shape: [4] data_type: FLOAT type: USER_INPUT }}
output_tensors {{ name: "y" shape: [4] data_type: FLOAT }}"#
    ))
    .expect("metaneff")
}

fn check(neff: &Path, metaneff: &Path, extra: &[&str]) -> Output {
    Command::new(nrtsim_exe())
        .arg("check")
        .arg(neff)
        .arg(metaneff)
        .args(extra)
        .output()
        .expect("run nrtsim")
}

#[test]
fn a_pair_that_binds_exits_zero() {
    let dir = Scratch::new("check-ok");
    let output = check(&dir.write("m.neff", &neff()), &dir.write("m.pb", &metaneff("x")), &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "0 error(s), 0 warning(s): the pair binds\n");
}

#[test]
fn warnings_only_exit_zero() {
    let dir = Scratch::new("check-warn");
    let mut bytes = metaneff("x");
    bytes.extend_from_slice(&[0xa0, 0x01, 0x01]);
    let output = check(&dir.write("m.neff", &neff()), &dir.write("m.pb", &bytes), &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).starts_with("warning[W001 unknown-field]: unknown field 20"));
}

#[test]
fn errors_exit_one_and_json_lists_them() {
    let dir = Scratch::new("check-json");
    let output =
        check(&dir.write("m.neff", &neff()), &dir.write("m.pb", &metaneff("input0")), &["--json"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let report: Value = serde_json::from_str(&stdout(&output)).expect("one JSON object");
    assert_eq!(report["errors"], 2);
    assert_eq!(report["warnings"], 0);
    let first = &report["findings"][0];
    assert_eq!(first["code"], "E001");
    assert_eq!(first["name"], "unknown-input-name");
    assert_eq!(first["severity"], "error");
    assert_eq!(first["tensor"]["side"], "input");
    assert_eq!(first["tensor"]["index"], 0);
    assert_eq!(first["tensor"]["name"], "input0");
    assert_eq!(report["findings"][1]["code"], "E003");
    assert_eq!(report["findings"][1]["tensor"]["index"], Value::Null);
}

#[test]
fn a_truncated_metaneff_names_the_file_the_byte_and_what_was_expected() {
    let dir = Scratch::new("check-truncated");
    let bytes = metaneff("x");
    let path = dir.write("short.pb", &bytes[..bytes.len() - 2]);
    let output = check(&dir.write("m.neff", &neff()), &path, &[]);
    assert_eq!(output.status.code(), Some(1));
    let message = stderr(&output);
    assert!(
        message.contains("short.pb: metaneff does not decode: invalid metaneff at byte "),
        "{message}"
    );
    assert!(message.contains("(MetaNeff): a length prefix says 8 bytes, 6 left"), "{message}");
}

#[test]
fn an_oversized_metaneff_names_the_limit_and_the_flag() {
    let dir = Scratch::new("check-oversized");
    let path = dir.write("big.pb", &metaneff("x"));
    let output = check(&dir.write("m.neff", &neff()), &path, &["--max-metaneff-bytes", "8"]);
    assert_eq!(output.status.code(), Some(1));
    let message = stderr(&output);
    assert!(message.contains("big.pb is larger than --max-metaneff-bytes (8 bytes)"), "{message}");
    assert!(message.contains("--max-metaneff-bytes"), "{message}");
}

#[test]
fn a_file_that_is_not_a_neff_names_the_file_and_the_status() {
    let dir = Scratch::new("check-not-neff");
    let path = dir.write("bad.neff", b"not a neff");
    let output = check(&path, &dir.write("m.pb", &metaneff("x")), &[]);
    assert_eq!(output.status.code(), Some(1));
    let message = stderr(&output);
    assert!(
        message.contains("bad.neff: neff is 10 bytes, expected at least the 1024-byte header"),
        "{message}"
    );
    assert!(message.contains("NRT_INVALID"), "{message}");
}
