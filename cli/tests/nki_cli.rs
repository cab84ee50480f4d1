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
