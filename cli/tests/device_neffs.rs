//! The device NEFF pipeline with `nrtsim` run as `neuronx-cc` (a symbolic link named
//! `neuronx-cc` to the built binary: the simulator's compile target, since the real neuronx-cc
//! is not reachable here): compile, manifest, staleness, the device NEFF chosen for the target,
//! `[neff]` damage on top of it, and a missing device NEFF failing with the command that makes it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;

use abi::runtime::prelude::*;
use conformance::device;
use conformance::runner;
use conformance::vector::{self, Vector};

mod support;
use support::{Scratch, nrtsim, text};

/// `neuronx-cc`, a link to the built `nrtsim`, beside the scratch `vectors/` folder.
fn neuronx_cc(vectors: &Path) -> PathBuf {
    let bin = vectors.parent().unwrap().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let link = bin.join("neuronx-cc");
    if !link.exists() {
        std::os::unix::fs::symlink(support::nrtsim_exe(), &link).unwrap();
    }
    link
}

/// A scratch `vectors/` holding copies of two real vectors' hand-written files, blessed.
fn scratch(name: &str) -> Scratch {
    let vectors = Scratch::new(name).inside("vectors", &["expectations"]);
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../vectors");
    for name in ["execute/canonical_client_flow", "load/forbidden_feature_bit_is_unsupported"] {
        let dir = vectors.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        for file in ["case.toml", "model.hlo", "metaneff.txtpb"] {
            if source.join(name).join(file).is_file() {
                std::fs::copy(source.join(name).join(file), dir.join(file)).unwrap();
            }
        }
    }
    let out = nrtsim(&["vectors", "--bless", "--vectors", vectors.to_str().unwrap()]);
    assert!(out.status.success(), "bless: {}", text(&out.stderr));
    vectors
}

fn find(vectors: &Path, name: &str) -> Vector {
    vector::discover(vectors).unwrap().into_iter().find(|v| v.name == name).unwrap()
}

fn sim_runtime(vector: &Vector) -> Arc<dyn Runtime> {
    let config = conformance::backend::sim_config(&vector.case.sim).unwrap();
    sim::SimRuntime::new_shared(config).unwrap()
}

fn compile(vectors: &Path, target: &str) -> Output {
    let compiler = neuronx_cc(vectors);
    nrtsim(&[
        "vectors",
        "compile",
        "--target",
        target,
        "--compiler",
        compiler.to_str().unwrap(),
        "--vectors",
        vectors.to_str().unwrap(),
    ])
}

#[test]
fn a_vector_without_a_device_neff_fails_naming_the_command() {
    let vectors = scratch("missing");
    let vector = find(&vectors, "execute/canonical_client_flow");
    let run = runner::run_on_target(&vector, sim_runtime(&vector), Some("trn2"));
    let failure = run.failure.expect("a missing device NEFF is a failure, not a skip");
    assert!(failure.contains("no device NEFF for trn2"), "{failure}");
    assert!(failure.contains("cargo xtask vectors compile --target trn2"), "{failure}");
}

#[test]
fn compiled_device_neffs_run_with_the_golden_trace_and_their_manifest_tells_staleness() {
    let vectors = scratch("compile");
    let out = compile(&vectors, "trn1");
    assert!(out.status.success(), "compile: {}{}", text(&out.stdout), text(&out.stderr));
    assert!(text(&out.stdout).contains("2 device NEFF(s) compiled for trn1, 0 failed"));

    let vector = find(&vectors, "execute/canonical_client_flow");
    let dir = device::device_dir(&vector, "trn1");
    let manifest: device::Manifest =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    assert!(manifest.compiler_version.contains("simulator compile target"), "{manifest:?}");
    assert_eq!(manifest.target, "trn1");
    assert_eq!(
        manifest.flags,
        [
            "compile",
            "--framework",
            "XLA",
            "model.hlo.pb",
            "--target",
            "trn1",
            "--output",
            "model.neff"
        ]
    );
    let hlo = std::fs::read(vector.dir.join("model.hlo.pb")).unwrap();
    let digest: String = {
        use sha2::Digest as _;
        sha2::Sha256::digest(&hlo).iter().map(|b| format!("{b:02x}")).collect()
    };
    assert_eq!(manifest.hlo_sha256, digest);
    let device_neff = std::fs::read(dir.join("model.neff")).unwrap();
    assert_ne!(device_neff, std::fs::read(vector.dir.join("model.neff")).unwrap());

    // The device NEFF is what runs, and the trace still matches the golden one.
    for name in ["execute/canonical_client_flow", "load/forbidden_feature_bit_is_unsupported"] {
        let vector = find(&vectors, name);
        let run = runner::run_on_target(&vector, sim_runtime(&vector), Some("trn1"));
        assert_eq!(run.failure, None, "{name}");
        let golden = std::fs::read_to_string(vector.dir.join("expected.trace")).unwrap();
        assert_eq!(conformance::judge::first_difference(&golden, &run.trace), None, "{name}");
    }

    // A device NEFF that computes something else makes the vector fail: it is the one loaded.
    let other = vectors.join("other.hlo");
    std::fs::write(
        &other,
        "HloModule other\n\nENTRY main {\n  x = f32[4] parameter(0)\n  ROOT t = (f32[4]) tuple(x)\n}\n",
    )
    .unwrap();
    let replaced = dir.join("model.neff");
    std::fs::remove_file(&replaced).unwrap();
    let status = Command::new(neuronx_cc(&vectors))
        .args(["compile", "--framework", "XLA"])
        .arg(&other)
        .args(["--target", "trn1", "--output"])
        .arg(&replaced)
        .status()
        .unwrap();
    assert!(status.success());
    let run = runner::run_on_target(&vector, sim_runtime(&vector), Some("trn1"));
    assert!(run.failure.is_some(), "a device NEFF computing x instead of 2x must fail the vector");

    // An edited model.hlo makes the device NEFF stale.
    let hlo_text = std::fs::read_to_string(vector.dir.join("model.hlo")).unwrap();
    std::fs::write(vector.dir.join("model.hlo"), hlo_text.replace("constant(2)", "constant(3)"))
        .unwrap();
    let run = runner::run_on_target(&vector, sim_runtime(&vector), Some("trn1"));
    let failure = run.failure.expect("a stale device NEFF is a failure");
    assert!(failure.contains("stale (its model.hlo has changed"), "{failure}");
    assert!(failure.contains("cargo xtask vectors compile --target trn1"), "{failure}");
}
