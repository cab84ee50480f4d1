//! `nrtsim run` from the outside: a NEFF in the shape of the real NKI matmul NEFF of
//! docs/abi-facts.md §5 (inputs `x` f16[128,256], `y` f16[256,128], output `output0`
//! f16[128,128]) whose program is the HLO of `x @ y` in its metaneff's `serialized_graph_def`, and the refusals.

use std::path::{Path, PathBuf};

use abi::dtype::{Dltype, f32_to_f16_bits};
use abi::metaneff::{MetaNeff, MetaTensor, meta_tensor::DataType};
use abi::neff::npy;
use sim::{ModelDescription, SlotKind, VarDescription};

mod support;
use support::{nrtsim, scratch, text};

const MATMUL_HLO: &str = "HloModule matmul\n\nENTRY main {\n  x = f16[128,256] parameter(0)\n  y = f16[256,128] parameter(1)\n  product = f16[128,128] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n  ROOT outputs = (f16[128,128]) tuple(product)\n}\n";

/// The NKI matmul NEFF's variables (docs/abi-facts.md §5): SB, x, y, output0 and a constant, no program.
fn nki_matmul() -> ModelDescription {
    ModelDescription::new("file.neff")
        .with_var(VarDescription::new("SB", 0, SlotKind::Sb, 4096))
        .with_input("x", Dltype::Float16, &[128, 256])
        .with_input("y", Dltype::Float16, &[256, 128])
        .with_output("output0", Dltype::Float16, &[128, 128])
        .with_constant("file", vec![0; 32768])
}

fn write_neff(dir: &Path, description: &ModelDescription) -> PathBuf {
    let mut spec = sim::neff_load::neff_spec_of(description).unwrap();
    // The header fields and the graph-only output signature of the real NEFF (docs/abi-facts.md §5).
    spec.header.feature_bits = 0x209c00;
    spec.header.lnc_size = 2;
    spec.header.num_tpb = 1;
    spec.signature_form = abi::neff::SignatureForm::GraphOnly;
    let path = dir.join("file.neff");
    std::fs::write(&path, spec.to_bytes().unwrap()).unwrap();
    path
}

fn write_metaneff(dir: &Path, graph: Vec<u8>) -> PathBuf {
    let tensor = |name: &str, shape: &[i64]| MetaTensor {
        name: name.as_bytes().to_vec().into(),
        shape: shape.to_vec(),
        data_type: DataType::Float16 as i32,
        ..MetaTensor::default()
    };
    let message = MetaNeff {
        input_tensors: vec![tensor("x", &[128, 256]), tensor("y", &[256, 128])],
        output_tensors: vec![tensor("output0", &[128, 128])],
        serialized_graph_def: graph.into(),
        ..MetaNeff::default()
    };
    let path = dir.join("metaneff.pb");
    std::fs::write(&path, abi::metaneff::encode(&message)).unwrap();
    path
}

fn x_value(i: usize, k: usize) -> i64 {
    ((i * 3 + k * 5) % 5) as i64 - 2
}

fn y_value(k: usize, j: usize) -> i64 {
    ((k * 7 + j) % 5) as i64 - 2
}

fn f16_npy(
    dir: &Path,
    name: &str,
    rows: usize,
    cols: usize,
    value: fn(usize, usize) -> i64,
) -> PathBuf {
    let mut data = Vec::with_capacity(rows * cols * 2);
    for r in 0..rows {
        for c in 0..cols {
            data.extend(f32_to_f16_bits(value(r, c) as f32).to_le_bytes());
        }
    }
    let path = dir.join(format!("{name}.npy"));
    std::fs::write(&path, npy::encode("<f2", &[rows as u64, cols as u64], &data).unwrap()).unwrap();
    path
}

/// `x @ y` in integers (every partial sum is an integer of magnitude ≤ 1024, exact in f16), as
/// f16 bytes.
fn expected_product() -> Vec<u8> {
    let mut out = Vec::with_capacity(128 * 128 * 2);
    for i in 0..128 {
        for j in 0..128 {
            let sum: i64 = (0..256).map(|k| x_value(i, k) * y_value(k, j)).sum();
            out.extend(f32_to_f16_bits(sum as f32).to_le_bytes());
        }
    }
    out
}

fn inputs(dir: &Path) -> (String, String) {
    let x = f16_npy(dir, "x", 128, 256, x_value);
    let y = f16_npy(dir, "y", 256, 128, y_value);
    (format!("x={}", x.display()), format!("y={}", y.display()))
}

fn output_data(path: &Path) -> Vec<u8> {
    let bytes = std::fs::read(path).unwrap();
    let header = npy::parse_header("output", &bytes).unwrap();
    assert_eq!((header.descr.as_str(), header.shape.as_slice()), ("<f2", &[128u64, 128][..]));
    bytes[header.data_offset..].to_vec()
}

#[test]
fn run_writes_the_product_of_the_nki_matmul_neff_from_its_metaneff_graph() {
    let dir = scratch("matmul");
    let neff = write_neff(&dir, &nki_matmul());
    let module = hlo::text::parse_module(MATMUL_HLO).unwrap();
    let metaneff = write_metaneff(&dir, hlo::encode_module(&module));
    let (x, y) = inputs(&dir);
    let out_dir = dir.join("out");
    let out = nrtsim(&[
        "run",
        neff.to_str().unwrap(),
        "--metaneff",
        metaneff.to_str().unwrap(),
        "--input",
        &x,
        "--input",
        &y,
        "--output-dir",
        out_dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let got = output_data(&out_dir.join("output0.npy"));
    assert!(got == expected_product(), "output0 is not x @ y");
    assert!(got.iter().any(|&b| b != 0), "the product is not all zeros");

    // The same module given with --hlo (as text) computes the same.
    let hlo_file = dir.join("matmul.hlo");
    std::fs::write(&hlo_file, MATMUL_HLO).unwrap();
    let out_dir = dir.join("out-hlo");
    let out = nrtsim(&[
        "run",
        neff.to_str().unwrap(),
        "--hlo",
        hlo_file.to_str().unwrap(),
        "--input",
        &x,
        "--input",
        &y,
        "--output-dir",
        out_dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    assert!(output_data(&out_dir.join("output0.npy")) == expected_product());
}

#[test]
fn run_refuses_a_neff_without_program_unless_opaque_is_allowed() {
    let dir = scratch("opaque");
    let neff = write_neff(&dir, &nki_matmul());
    let metaneff = write_metaneff(&dir, Vec::new());
    let (x, y) = inputs(&dir);
    let base = ["run", neff.to_str().unwrap(), "--metaneff", metaneff.to_str().unwrap()];
    let out_dir = dir.join("out");
    let rest = ["--input", &x, "--input", &y, "--output-dir", out_dir.to_str().unwrap()];
    let args: Vec<&str> = base.iter().chain(rest.iter()).copied().collect();
    let out = nrtsim(&args);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("carries no HLO program") && stderr.contains("--allow-opaque"),
        "{stderr}"
    );
    assert!(!out_dir.join("output0.npy").exists(), "nothing is written");

    let mut opaque = args.clone();
    opaque.push("--allow-opaque");
    let out = nrtsim(&opaque);
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    assert_eq!(output_data(&out_dir.join("output0.npy")), vec![0; 128 * 128 * 2]);
}

#[test]
fn run_checks_inputs_against_the_signature() {
    let dir = scratch("inputs");
    let neff = write_neff(&dir, &nki_matmul().with_hlo(MATMUL_HLO));
    let (x, y) = inputs(&dir);
    let neff = neff.to_str().unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec!["run", neff, "--output-dir", dir.to_str().unwrap()];
        args.extend_from_slice(extra);
        let out = nrtsim(&args);
        assert!(!out.status.success(), "{extra:?} must fail");
        text(&out.stderr)
    };
    let stderr = run(&["--input", &x]);
    assert!(stderr.contains("input \"y\" is missing"), "{stderr}");
    let stderr = run(&[
        "--input",
        &x,
        "--input",
        &y,
        "--input",
        &format!("z={}", dir.join("x.npy").display()),
    ]);
    assert!(stderr.contains("--input \"z\": the NEFF has no input of that name"), "{stderr}");
    // x's file given as y: the shape differs.
    let swapped = format!("y={}", dir.join("x.npy").display());
    let stderr = run(&["--input", &x, "--input", &swapped]);
    assert!(stderr.contains("shape [128, 256], expected [256, 128]"), "{stderr}");
    let f32_file = dir.join("y32.npy");
    let f32_data = vec![0u8; 256 * 128 * 4];
    std::fs::write(&f32_file, npy::encode("<f4", &[256, 128], &f32_data).unwrap()).unwrap();
    let stderr = run(&["--input", &x, "--input", &format!("y={}", f32_file.display())]);
    assert!(stderr.contains("dtype \"<f4\", expected \"<f2\" (float16"), "{stderr}");
    let stderr = run(&["--input", "x"]);
    assert!(stderr.contains("expected NAME=FILE.npy"), "{stderr}");
}

/// `--hlo FILE` is never dropped in silence: with a NEFF that carries its own program, the
/// command refuses the pair (raw and through the binding layer) and says which program the NEFF
/// has; with a NEFF that carries none, a FILE that is not HLO is an error naming the file. No
/// output is written in either case.
#[test]
fn hlo_given_is_honoured_or_refused_never_ignored() {
    let dir = scratch("hlo-flag");
    let (x, y) = inputs(&dir);
    let not_hlo = dir.join("notes.txt");
    std::fs::write(&not_hlo, "these are notes, not an HLO module\n").unwrap();
    let not_hlo = not_hlo.to_str().unwrap();
    let out_dir = dir.join("out");
    let run = |neff: &Path, extra: &[&str]| {
        let mut args = vec!["run", neff.to_str().unwrap(), "--hlo", not_hlo];
        args.extend_from_slice(&["--input", &x, "--input", &y]);
        args.extend_from_slice(&["--output-dir", out_dir.to_str().unwrap()]);
        args.extend_from_slice(extra);
        let out = nrtsim(&args);
        assert!(!out.status.success(), "{extra:?}: --hlo {not_hlo} must not be ignored");
        assert!(!out_dir.join("output0.npy").exists(), "{extra:?}: nothing is written");
        text(&out.stderr)
    };

    let carrying = write_neff(&dir, &nki_matmul().with_hlo(MATMUL_HLO));
    let metaneff = write_metaneff(&dir, Vec::new());
    for extra in [&[][..], &["--metaneff", metaneff.to_str().unwrap()][..]] {
        let stderr = run(&carrying, extra);
        assert!(stderr.contains(&format!("--hlo {not_hlo}")), "{extra:?}: {stderr}");
        assert!(stderr.contains("carries its own HLO program"), "{extra:?}: {stderr}");
    }

    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let without = write_neff(&empty, &nki_matmul());
    for extra in [&[][..], &["--metaneff", metaneff.to_str().unwrap()][..]] {
        let stderr = run(&without, extra);
        assert!(stderr.contains(not_hlo), "{extra:?}: {stderr}");
        assert!(stderr.contains("not an HLO module"), "{extra:?}: {stderr}");
    }
}
