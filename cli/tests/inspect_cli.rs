//! `nrtsim inspect` on NEFFs written by `abi::neff`'s writer, run as the built binary.

use std::process::{Command, Output};

use abi::neff::{GraphSpec, NeffSpec, Signature, TensorSignature, Var};
use serde_json::Value;

mod support;
use support::{Scratch, nrtsim_exe};

fn sample_spec() -> NeffSpec {
    let mut spec = NeffSpec::new("inspect.neff");
    spec.header.lnc_size = 2;
    spec.header.feature_bits = 0x209c00;
    spec.graphs.push(GraphSpec {
        name: "sg00".to_owned(),
        vars: vec![
            Var::new("SB", 0, "state-buffer"),
            Var::new("x", 1, "input").with_size(512),
            Var::new("output0", 2, "output").with_size(256),
            Var::new("sem", 3, "semaphore").with_size(8),
        ],
    });
    spec.signature = Signature {
        inputs: vec![TensorSignature::new("x", "float16", &[16, 16])],
        outputs: vec![TensorSignature::new("output0", "float16", &[8, 16])],
    };
    spec.extra_members.insert("sim/model.hlo.pb".to_owned(), b"[]".to_vec());
    spec
}

fn inspect(dir: &Scratch, file_name: &str, bytes: &[u8], extra_args: &[&str]) -> Output {
    let path = dir.join(file_name);
    std::fs::write(&path, bytes).expect("write neff");
    Command::new(nrtsim_exe())
        .arg("inspect")
        .arg(&path)
        .args(extra_args)
        .output()
        .expect("run nrtsim")
}

#[test]
fn inspect_json_shows_header_members_vars_and_signature() {
    let dir = Scratch::new("inspect-json");
    let output =
        inspect(&dir, "model.neff", &sample_spec().to_bytes().expect("valid spec"), &["--json"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let report: Value = serde_json::from_slice(&output.stdout).expect("one json object");

    let header = &report["header"];
    for (key, expected) in [
        ("pkg_version", Value::from(2)),
        ("header_size", Value::from(1024)),
        ("version_major", Value::from(2)),
        ("version_minor", Value::from(0)),
        ("num_tpb", Value::from(1)),
        ("name", Value::from("inspect.neff")),
        ("lnc_size", Value::from(2)),
        ("feature_bits", Value::from(0x209c00)),
        ("hash_ok", Value::from(true)),
    ] {
        assert_eq!(header[key], expected, "header.{key}");
    }
    assert!(header["data_size"].as_u64().is_some_and(|size| size > 0));

    let members = report["members"].as_array().expect("members");
    let program =
        members.iter().find(|member| member["name"] == "sim/model.hlo.pb").expect("listed");
    assert_eq!(program["size"], 2);

    let vars = report["graphs"][0]["vars"].as_array().expect("vars");
    let rows: Vec<(String, u64, String, String, Value, Value)> = vars
        .iter()
        .map(|var| {
            (
                var["name"].as_str().unwrap_or_default().to_owned(),
                var["var_id"].as_u64().unwrap_or(u64::MAX),
                var["type"].as_str().unwrap_or_default().to_owned(),
                var["mr_type"].as_str().unwrap_or_default().to_owned(),
                var["mr_type_id"].clone(),
                var["size"].clone(),
            )
        })
        .collect();
    let expected = [
        ("SB", 0, "state-buffer", "MR_SB", Value::from(1), Value::Null),
        ("x", 1, "input", "MR_INPUT", Value::from(5), Value::from(512)),
        ("output0", 2, "output", "MR_OUTPUT", Value::from(6), Value::from(256)),
        ("sem", 3, "semaphore", "unknown", Value::Null, Value::from(8)),
    ]
    .map(|(name, var_id, kind, mr_type, mr_type_id, size)| {
        (name.to_owned(), var_id, kind.to_owned(), mr_type.to_owned(), mr_type_id, size)
    });
    assert_eq!(rows, expected);

    assert_eq!(
        report["signature"]["inputs"][0],
        serde_json::json!({ "name": "x", "dtype": "float16", "shape": [16, 16] })
    );
    assert_eq!(report["signature"]["outputs"][0]["name"], "output0");
}

#[test]
fn inspect_text_is_readable() {
    let dir = Scratch::new("inspect-text");
    let output = inspect(&dir, "model.neff", &sample_spec().to_bytes().expect("valid spec"), &[]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8_lossy(&output.stdout);
    for needle in
        ["inspect.neff", "graph sg00", "MR_INPUT (5)", "unknown", "float16", "sim/model.hlo.pb"]
    {
        assert!(text.contains(needle), "{needle:?} missing from:\n{text}");
    }
}

#[test]
fn inspect_of_a_refused_neff_fails_with_the_status() {
    let dir = Scratch::new("inspect-bad");
    let mut bytes = sample_spec().to_bytes().expect("valid spec");
    bytes[0x018] = 3;
    let output = inspect(&dir, "bad.neff", &bytes, &["--json"]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("NRT_UNSUPPORTED_NEFF_VERSION"), "{stderr}");
}

/// An endless input (`/dev/zero`) is read only up to the limit, then refused with a message
/// naming the limit and the flag that raises it.
#[test]
fn inspect_of_an_endless_input_is_refused_at_the_input_limit() {
    let output = Command::new(nrtsim_exe())
        .args(["inspect", "/dev/zero", "--max-input-bytes", "65536"])
        .output()
        .expect("run nrtsim");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--max-input-bytes (65536 bytes)"), "{stderr}");
    assert!(stderr.contains("--max-input-bytes"), "{stderr}");
}

/// A NEFF one byte over the limit is refused; at the limit it is inspected.
#[test]
fn inspect_of_a_file_over_the_input_limit_is_refused_and_one_at_it_is_read() {
    let dir = Scratch::new("inspect-limit");
    let bytes = sample_spec().to_bytes().expect("valid spec");
    let over = (bytes.len() - 1).to_string();
    let output = inspect(&dir, "model.neff", &bytes, &["--max-input-bytes", &over]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains(&format!("--max-input-bytes ({over} bytes)")), "{stderr}");
    let at = bytes.len().to_string();
    let output = inspect(&dir, "model.neff", &bytes, &["--max-input-bytes", &at]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
}

/// `inspect` lists the outputs of a NEFF laid out as neuronx-cc 2.23 writes it (empty metadata
/// `outputs`, outputs in the graph form; see `abi/tests/data/README.md`).
#[test]
fn inspect_lists_the_graph_form_outputs_of_a_neuronx_cc_neff() {
    use abi::neff::{NeffHeader, assemble_neff, write_payload};
    let neff_json: &[u8] = include_bytes!("../../abi/tests/data/neuronx_cc_2_23_neff.json");
    let kelf: &[u8] =
        br#"{"graphs":[{"definition":"sg00/def.json","name":"sg00"}],"version":"0.5"}"#;
    let def_json: &[u8] = br#"{"var":{"x":{"type":"input","var_id":0,"size":65536},
        "y":{"type":"input","var_id":1,"size":65536},"output0":{"type":"output","var_id":2,"size":32768}}}"#;
    let members = [("kelf-0.json", kelf), ("neff.json", neff_json), ("sg00/def.json", def_json)];
    let payload = write_payload(2, &members).expect("members");
    let bytes = assemble_neff(&NeffHeader::default(), &payload).expect("neff");
    let dir = Scratch::new("inspect-neuronx-cc");
    let output = inspect(&dir, "model.neff", &bytes, &["--json"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let report: Value = serde_json::from_slice(&output.stdout).expect("one json object");
    let outputs = report["signature"]["outputs"].as_array().expect("a list of outputs");
    assert_eq!(outputs.len(), 1, "{outputs:?}");
    assert_eq!(outputs[0]["name"], "output0");
    assert_eq!(outputs[0]["dtype"], "float16");
    assert_eq!(outputs[0]["shape"], serde_json::json!([128, 128]));
}
