//! `nrtsim run --metaneff` from the outside: a model with one user input `x`, one state `s`
//! aliased to the output `s_out`, and one weight `w`, whose HLO is `out = x * w + s`,
//! `s_out = s + x`; the state and weight come from a safetensors file built here byte by byte.
//! Expected numbers are computed here from those definitions; every bad safetensors file is
//! refused with the file, the key and what was expected.

use std::path::{Path, PathBuf};
use std::process::Output;

use abi::dtype::Dltype;
use abi::metaneff::meta_tensor::{DataType, Type};
use abi::metaneff::{MetaNeff, MetaTensor, ModelConfig};
use abi::neff::npy;
use sim::ModelDescription;
use testkit::f32_bytes;

mod support;
use support::{nrtsim, scratch, text};

const HLO: &str = "HloModule bound\n\nENTRY main {\n  x = f32[2,3] parameter(0)\n  s = f32[2,3] parameter(1)\n  w = f32[2,3] parameter(2)\n  xw = f32[2,3] multiply(x, w)\n  out = f32[2,3] add(xw, s)\n  next = f32[2,3] add(s, x)\n  ROOT outputs = (f32[2,3], f32[2,3]) tuple(out, next)\n}\n";

const X: [f32; 6] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
const W: [f32; 6] = [0.5, -1.0, 2.0, 0.0, 3.0, 1.0];
const S0: [f32; 6] = [10.0, 20.0, 30.0, 40.0, 50.0, 60.0];

/// The NEFF (variables x, s, w in, out and s_out out) with the HLO as its program member.
fn write_neff(dir: &Path) -> PathBuf {
    write_neff_with(dir, true)
}

fn write_neff_with(dir: &Path, with_hlo: bool) -> PathBuf {
    let description = ModelDescription::new("bound.neff")
        .with_input("x", Dltype::Float32, &[2, 3])
        .with_input("s", Dltype::Float32, &[2, 3])
        .with_input("w", Dltype::Float32, &[2, 3])
        .with_output("out", Dltype::Float32, &[2, 3])
        .with_output("s_out", Dltype::Float32, &[2, 3]);
    let mut spec = sim::neff_load::neff_spec_of(&description).unwrap();
    if with_hlo {
        sim::neff_load::add_hlo(&mut spec, HLO.as_bytes());
    }
    let path = dir.join("bound.neff");
    std::fs::write(&path, spec.to_bytes().unwrap()).unwrap();
    path
}

fn write_metaneff(dir: &Path) -> PathBuf {
    let tensor = |name: &str, kind: Type, key: Option<&str>| MetaTensor {
        name: name.as_bytes().to_vec().into(),
        shape: vec![2, 3],
        data_type: DataType::Float as i32,
        r#type: kind as i32,
        checkpoint_key: key.map(|k| k.as_bytes().to_vec().into()),
        ..MetaTensor::default()
    };
    let message = MetaNeff {
        input_tensors: vec![
            tensor("x", Type::UserInput, None),
            tensor("s", Type::InputState, Some("model.s")),
            tensor("w", Type::InputWeight, Some("model.w")),
        ],
        output_tensors: vec![
            tensor("out", Type::UndefinedType, None),
            tensor("s_out", Type::UndefinedType, None),
        ],
        output_aliases_to: [(1, 1)].into_iter().collect(),
        model_config: Some(ModelConfig { return_aliases: true, ..ModelConfig::default() }),
        ..MetaNeff::default()
    };
    let path = dir.join("bound.metaneff");
    std::fs::write(&path, abi::metaneff::encode(&message)).unwrap();
    path
}

/// A safetensors file: the 8-byte length, the JSON header as given, then `data`.
fn safetensors(dir: &Path, name: &str, header: &str, data: &[u8]) -> PathBuf {
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend(header.as_bytes());
    bytes.extend(data);
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn good_weights(dir: &Path) -> PathBuf {
    let header = r#"{"__metadata__":{"format":"pt"},"model.s":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},"model.w":{"dtype":"F32","shape":[2,3],"data_offsets":[24,48]}}"#;
    let mut data = f32_bytes(&S0);
    data.extend(f32_bytes(&W));
    safetensors(dir, "weights.safetensors", header, &data)
}

fn write_x(dir: &Path) -> PathBuf {
    let path = dir.join("x.npy");
    std::fs::write(&path, npy::encode("<f4", &[2, 3], &f32_bytes(&X)).unwrap()).unwrap();
    path
}

struct Model {
    dir: support::Scratch,
    neff: PathBuf,
    metaneff: PathBuf,
    x: PathBuf,
}

fn model(name: &str) -> Model {
    let dir = scratch(name);
    Model { neff: write_neff(&dir), metaneff: write_metaneff(&dir), x: write_x(&dir), dir }
}

fn run(model: &Model, weights: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "run",
        model.neff.to_str().unwrap(),
        "--metaneff",
        model.metaneff.to_str().unwrap(),
        "--weights",
        weights.to_str().unwrap(),
        "--input",
        model.x.to_str().unwrap(),
    ];
    args.extend(extra);
    nrtsim(&args)
}

fn read_f32_npy(path: &Path) -> Vec<f32> {
    let bytes = std::fs::read(path).unwrap();
    let header = npy::parse_header("output", &bytes).unwrap();
    assert_eq!((header.descr.as_str(), header.shape.as_slice()), ("<f4", &[2u64, 3][..]));
    bytes[header.data_offset..]
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// `out` and `s_out` after `launches` launches, from the HLO's definition.
fn expected(launches: usize) -> (Vec<f32>, Vec<f32>) {
    let mut state = S0.to_vec();
    let mut out = Vec::new();
    for _ in 0..launches {
        out = (0..6).map(|i| X[i] * W[i] + state[i]).collect();
        state = (0..6).map(|i| state[i] + X[i]).collect();
    }
    (out, state)
}

#[test]
fn run_through_the_binding_layer_gives_the_hlo_numbers_with_safetensors_weights() {
    let model = model("numbers");
    let weights = good_weights(&model.dir);
    let out_dir = model.dir.join("out");
    let output = run(&model, &weights, &["--output-dir", out_dir.to_str().unwrap()]);
    assert!(output.status.success(), "stderr: {}", text(&output.stderr));
    let (out, state) = expected(1);
    assert_eq!(read_f32_npy(&out_dir.join("out.npy")), out);
    assert_eq!(read_f32_npy(&out_dir.join("s_out.npy")), state);
    assert_eq!(out, [10.5, 18.0, 36.0, 40.0, 65.0, 66.0]);
}

#[test]
fn repeated_launches_carry_the_state_over() {
    let model = model("repeat");
    let weights = good_weights(&model.dir);
    let out_dir = model.dir.join("out");
    let output =
        run(&model, &weights, &["--repeat", "3", "--output-dir", out_dir.to_str().unwrap()]);
    assert!(output.status.success(), "stderr: {}", text(&output.stderr));
    let (out, state) = expected(3);
    assert_eq!(read_f32_npy(&out_dir.join("out.npy")), out);
    assert_eq!(read_f32_npy(&out_dir.join("s_out.npy")), state);
    // Not a terminal: no progress indicator.
    assert!(!text(&output.stderr).contains("launch"), "stderr: {}", text(&output.stderr));
}

#[test]
fn named_inputs_are_accepted_too() {
    let model = model("named");
    let weights = good_weights(&model.dir);
    let x = format!("x={}", model.x.display());
    let output = nrtsim(&[
        "run",
        model.neff.to_str().unwrap(),
        "--metaneff",
        model.metaneff.to_str().unwrap(),
        "--weights",
        weights.to_str().unwrap(),
        "--input",
        &x,
        "--print",
    ]);
    assert!(output.status.success(), "stderr: {}", text(&output.stderr));
    assert!(text(&output.stdout).starts_with("out: Float [2, 3] min 10.5"));
}

#[test]
fn print_summarizes_each_output() {
    let model = model("print");
    let weights = good_weights(&model.dir);
    let output = run(&model, &weights, &["--print"]);
    assert!(output.status.success(), "stderr: {}", text(&output.stderr));
    // out = [10.5, 18, 36, 40, 65, 66]: mean 235.5 / 6; s_out = [11, 22, 33, 44, 55, 66].
    assert_eq!(
        text(&output.stdout),
        "out: Float [2, 3] min 10.5 max 66 mean 39.25\n\
         s_out: Float [2, 3] min 11 max 66 mean 38.5\n"
    );
    assert!(!model.dir.join("out.npy").exists());
}

#[test]
fn a_missing_user_input_is_refused_naming_it() {
    let model = model("no-input");
    let weights = good_weights(&model.dir);
    let output = nrtsim(&[
        "run",
        model.neff.to_str().unwrap(),
        "--metaneff",
        model.metaneff.to_str().unwrap(),
        "--weights",
        weights.to_str().unwrap(),
    ]);
    assert!(!output.status.success());
    let stderr = text(&output.stderr);
    assert!(stderr.contains("user input \"x\" is missing"), "stderr: {stderr}");
}

#[test]
fn a_user_input_of_the_wrong_shape_is_refused_by_validation() {
    let model = model("bad-input");
    let weights = good_weights(&model.dir);
    std::fs::write(&model.x, npy::encode("<f4", &[3, 2], &f32_bytes(&X)).unwrap()).unwrap();
    let output = run(&model, &weights, &["--print"]);
    assert!(!output.status.success());
    let stderr = text(&output.stderr);
    assert!(stderr.contains("forward:"), "stderr: {stderr}");
}

fn refused(name: &str, bytes: Option<Vec<u8>>, header: &str, data: &[u8], wanted: &[&str]) {
    let model = model(name);
    let path = match bytes {
        Some(bytes) => {
            let path = model.dir.join("bad.safetensors");
            std::fs::write(&path, bytes).unwrap();
            path
        }
        None => safetensors(&model.dir, "bad.safetensors", header, data),
    };
    let output = run(&model, &path, &["--print"]);
    assert!(!output.status.success(), "{name}: accepted");
    let stderr = text(&output.stderr);
    assert!(stderr.contains(path.to_str().unwrap()), "{name}: no file in {stderr}");
    for part in wanted {
        assert!(stderr.contains(part), "{name}: no {part:?} in {stderr}");
    }
    assert!(!stderr.contains("panicked"), "{name}: {stderr}");
}

fn both(s: &str, w: &str) -> String {
    format!("{{\"model.s\":{s},\"model.w\":{w}}}")
}

const S_OK: &str = r#"{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}"#;

#[test]
fn bad_safetensors_files_are_refused_naming_the_file_the_key_and_the_expectation() {
    let data = [f32_bytes(&S0), f32_bytes(&W)].concat();
    refused("truncated", Some(vec![1, 2, 3, 4]), "", &[], &["4 bytes, expected at least 8"]);
    let mut huge = 1000u64.to_le_bytes().to_vec();
    huge.extend(b"{}");
    refused("header", Some(huge), "", &[], &["header of 1000 bytes, expected at most the 2 bytes"]);
    refused("json", None, "[1, 2]", &[], &["header is not a JSON object"]);
    let w = r#"{"dtype":"F32","shape":[2,3],"data_offsets":[24,72]}"#;
    refused(
        "range",
        None,
        &both(S_OK, w),
        &data,
        &["\"model.w\"", "data_offsets [24, 72]", "within the 48 data bytes"],
    );
    let w = r#"{"dtype":"F32","shape":[2,3],"data_offsets":[12,36]}"#;
    refused("overlap", None, &both(S_OK, w), &data, &["\"model.s\" and \"model.w\" overlap"]);
    let w = r#"{"dtype":"Q4","shape":[2,3],"data_offsets":[24,48]}"#;
    refused(
        "dtype",
        None,
        &both(S_OK, w),
        &data,
        &["\"model.w\"", "dtype \"Q4\", expected one of"],
    );
    let w = r#"{"dtype":"U32","shape":[2,3],"data_offsets":[24,48]}"#;
    refused(
        "dtype-u32",
        None,
        &both(S_OK, w),
        &data,
        &["\"model.w\"", "dtype \"U32\" is a safetensors dtype with no torch scalar type"],
    );
    let w = r#"{"dtype":"F32","shape":[2,2],"data_offsets":[24,48]}"#;
    refused(
        "size",
        None,
        &both(S_OK, w),
        &data,
        &["\"model.w\"", "24 data bytes, expected 16 for Float [2, 2]"],
    );
    refused(
        "missing",
        None,
        &format!("{{\"model.s\":{S_OK}}}"),
        // Only the state's bytes: data after the last tensor is refused on its own.
        &data[..24],
        &["no tensor \"model.w\"", "expected Float [2, 3] for INPUT_WEIGHT \"w\""],
    );
    let w = r#"{"dtype":"F16","shape":[2,3],"data_offsets":[24,36]}"#;
    refused(
        "mismatch-dtype",
        None,
        &both(S_OK, w),
        &data[..36],
        &["tensor \"model.w\": Half [2, 3], expected Float [2, 3] for INPUT_WEIGHT \"w\""],
    );
    let w = r#"{"dtype":"F32","shape":[3,2],"data_offsets":[24,48]}"#;
    refused(
        "mismatch-shape",
        None,
        &both(S_OK, w),
        &data,
        &["tensor \"model.w\": Float [3, 2], expected Float [2, 3] for INPUT_WEIGHT \"w\""],
    );
    let s = r#"{"dtype":"F32","shape":[6],"data_offsets":[0,24]}"#;
    refused(
        "mismatch-state",
        None,
        &both(s, r#"{"dtype":"F32","shape":[2,3],"data_offsets":[24,48]}"#),
        &data,
        &["tensor \"model.s\": Float [6], expected Float [2, 3] for INPUT_STATE \"s\""],
    );
}

#[test]
fn a_state_absent_from_the_file_starts_at_zero() {
    let model = model("zero-state");
    let header = r#"{"model.w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}}"#;
    let weights = safetensors(&model.dir, "w.safetensors", header, &f32_bytes(&W));
    let out_dir = model.dir.join("out");
    let output = run(&model, &weights, &["--output-dir", out_dir.to_str().unwrap()]);
    assert!(output.status.success(), "stderr: {}", text(&output.stderr));
    let out: Vec<f32> = (0..6).map(|i| X[i] * W[i]).collect();
    assert_eq!(read_f32_npy(&out_dir.join("out.npy")), out);
    assert_eq!(read_f32_npy(&out_dir.join("s_out.npy")), X.to_vec());
}

#[test]
fn weights_without_a_metaneff_are_refused() {
    let model = model("raw");
    let weights = good_weights(&model.dir);
    let output = nrtsim(&[
        "run",
        model.neff.to_str().unwrap(),
        "--weights",
        weights.to_str().unwrap(),
        "--input",
        &format!("x={}", model.x.display()),
    ]);
    assert!(!output.status.success());
    assert!(text(&output.stderr).contains("need --metaneff"), "{}", text(&output.stderr));
}

#[test]
fn the_program_can_come_from_hlo_when_the_neff_has_none() {
    let mut model = model("hlo-flag");
    model.neff = write_neff_with(&model.dir, false);
    let hlo = model.dir.join("bound.hlo");
    std::fs::write(&hlo, HLO).unwrap();
    let weights = good_weights(&model.dir);
    let output = run(&model, &weights, &["--hlo", hlo.to_str().unwrap(), "--print"]);
    assert!(output.status.success(), "stderr: {}", text(&output.stderr));
    assert!(text(&output.stdout).starts_with("out: Float [2, 3] min 10.5 max 66 mean 39.25\n"));
    // Without it the NEFF is opaque, which is refused.
    let output = run(&model, &weights, &["--print"]);
    assert!(!output.status.success());
    assert!(text(&output.stderr).contains("--allow-opaque"), "{}", text(&output.stderr));
}

#[test]
fn a_header_entry_without_a_dtype_is_refused_naming_the_key() {
    let w = r#"{"shape":[2,3],"data_offsets":[24,48]}"#;
    let data = [f32_bytes(&S0), f32_bytes(&W)].concat();
    refused(
        "no-dtype",
        None,
        &both(S_OK, w),
        &data,
        &["tensor \"model.w\": expected a string \"dtype\""],
    );
}
