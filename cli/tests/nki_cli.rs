//! `nrtsim nki run` from the outside: raw inputs in, raw outputs and a report out, and an error
//! as one `FILE:LINE: error:` line at the kernel's line.

mod support;
use support::{nrtsim, scratch, stderr};

/// `out = x * 2` over [2, 2] float32 through SBUF; line 7 of add.py is the multiply.
const PROGRAM: &str = r#"{
  "format": "nrtsim-nki-program", "version": 1,
  "kernel": {"name": "double", "file": "add.py", "line": 3},
  "target": "trn1", "grid": [], "seed": 0, "files": ["add.py"],
  "tensors": [
    {"name": "x", "dtype": "float32", "shape": [2, 2], "buffer": "hbm", "loc": [0, 3]},
    {"name": "out", "dtype": "float32", "shape": [2, 2], "buffer": "hbm", "loc": [0, 4]},
    {"name": "tile", "dtype": "float32", "shape": [2, 2], "buffer": "sbuf", "loc": [0, 5]}
  ],
  "inputs": [0], "outputs": [1],
  "instructions": [
    {"op": "dma", "engine": "dma", "loc": [0, 6],
     "dst": {"t": 2, "off": 0, "ap": [[2, 2], [1, 2]]}, "src": {"t": 0, "off": 0, "ap": [[2, 2], [1, 2]]}},
    {"op": "tensor_scalar", "engine": "vector", "loc": [0, 7],
     "dst": {"t": 2, "off": 0, "ap": [[2, 2], [1, 2]]}, "src": {"t": 2, "off": 0, "ap": [[2, 2], [1, 2]]},
     "ops": [{"op": "multiply", "operand": {"imm": 2.0}}]},
    {"op": "dma", "engine": "dma", "loc": [0, 8],
     "dst": {"t": 1, "off": 0, "ap": [[2, 2], [1, 2]]}, "src": {"t": 2, "off": 0, "ap": [[2, 2], [1, 2]]}}
  ]
}"#;

fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

#[test]
fn nki_run_writes_raw_outputs_and_a_report() {
    let dir = scratch("nki-run");
    let program = dir.write("double.json", PROGRAM.as_bytes());
    std::fs::create_dir_all(dir.join("in")).unwrap();
    std::fs::write(dir.join("in/in0.bin"), f32_bytes(&[1.0, -2.5, 3.0, 0.25])).unwrap();
    let out = nrtsim(&[
        "nki",
        "run",
        program.to_str().unwrap(),
        "--inputs",
        dir.join("in").to_str().unwrap(),
        "--outputs",
        dir.join("out").to_str().unwrap(),
        "--report",
        dir.join("report.json").to_str().unwrap(),
        "--strict",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    // Each element doubled, worked out by hand.
    assert_eq!(std::fs::read(dir.join("out/out0.bin")).unwrap(), f32_bytes(&[2.0, -5.0, 6.0, 0.5]));
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["warnings"], serde_json::json!([]));
    assert_eq!(report["stats"]["instructions"], 3);
    assert_eq!(report["stats"]["dma_bytes"], 32);
}

#[test]
fn nki_run_error_is_one_line_at_the_kernel_line() {
    let dir = scratch("nki-error");
    // A store past the end of `out` at line 8.
    let broken = PROGRAM.replace(r#""dst": {"t": 1, "off": 0,"#, r#""dst": {"t": 1, "off": 1,"#);
    let program = dir.write("broken.json", broken.as_bytes());
    std::fs::create_dir_all(dir.join("in")).unwrap();
    std::fs::write(dir.join("in/in0.bin"), f32_bytes(&[0.0; 4])).unwrap();
    let out = nrtsim(&[
        "nki",
        "run",
        program.to_str().unwrap(),
        "--inputs",
        dir.join("in").to_str().unwrap(),
        "--outputs",
        dir.join("out").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let text = stderr(&out);
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(
        text.starts_with("add.py:8: error: instruction 2: dst reaches outside tensor `out`"),
        "{text}"
    );
}

#[test]
fn nki_run_failure_still_writes_the_report_with_the_error() {
    let dir = scratch("nki-error-report");
    // The store at line 8 starts one element late: its last element, index [1, 1], is at
    // offset 1 + 2 + 1 = 4, one past the 4 elements of `out`.
    let broken = PROGRAM.replace(r#""dst": {"t": 1, "off": 0,"#, r#""dst": {"t": 1, "off": 1,"#);
    let program = dir.write("broken.json", broken.as_bytes());
    std::fs::create_dir_all(dir.join("in")).unwrap();
    std::fs::write(dir.join("in/in0.bin"), f32_bytes(&[0.0; 4])).unwrap();
    let report_path = dir.join("report.json");
    let out = nrtsim(&[
        "nki",
        "run",
        program.to_str().unwrap(),
        "--inputs",
        dir.join("in").to_str().unwrap(),
        "--outputs",
        dir.join("out").to_str().unwrap(),
        "--report",
        report_path.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&report_path).unwrap()).unwrap();
    let error = &report["error"];
    assert_eq!(error["kind"], "OutOfBounds");
    assert_eq!(error["loc"], "add.py:8");
    assert_eq!(error["tensor"], "out");
    assert_eq!(error["offset"], 4);
    assert_eq!(error["numel"], 4);
    assert!(
        error["message"].as_str().unwrap().starts_with("instruction 2: dst reaches outside"),
        "{error}"
    );
    // The two instructions before the error ran.
    assert_eq!(report["stats"]["instructions"], 2);

    // A program the executor refuses before running also leaves a report, with no
    // out-of-bounds fields.
    let unsupported = PROGRAM.replace(r#""op": "tensor_scalar""#, r#""op": "no_such_op""#);
    let program = dir.write("unsupported.json", unsupported.as_bytes());
    let out = nrtsim(&[
        "nki",
        "run",
        program.to_str().unwrap(),
        "--inputs",
        dir.join("in").to_str().unwrap(),
        "--outputs",
        dir.join("out").to_str().unwrap(),
        "--report",
        report_path.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&report_path).unwrap()).unwrap();
    assert_eq!(report["error"]["kind"], "Unsupported");
    assert_eq!(report["error"]["loc"], "add.py:7");
    assert!(report["error"].get("tensor").is_none(), "{}", report["error"]);
    assert_eq!(report["stats"]["instructions"], 0);
}
