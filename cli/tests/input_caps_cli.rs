//! Every file a command of `nrtsim` reads goes through the capped reader: an endless stream
//! (`/dev/zero`) is refused at the limit, and a regular file over it (a sparse one, so the test
//! writes no gigabytes) is refused from its length, each with a message naming the flag that
//! sets the limit and the limit's value. One test per reading command, covering each of its
//! inputs, with the defaults checked on the sparse files.

use std::path::{Path, PathBuf};
use std::process::Output;

use abi::dtype::Dltype;
use abi::metaneff::text;
use abi::neff::npy;
use sim::ModelDescription;

mod support;
use support::{Scratch, nrtsim, stderr};

/// The defaults `--help` and the README give.
const DEFAULT_NEFF: u64 = 1 << 30;
const DEFAULT_METANEFF: u64 = 256 << 20;
const DEFAULT_HLO: u64 = 1 << 30;
const DEFAULT_RUN: u64 = 1 << 30;
const DEFAULT_REPLAY: u64 = 1 << 30;

/// A small limit for the endless input, so each refusal reads 64 KiB, not a gigabyte.
const SMALL: &str = "65536";

/// Asserts that `output` is the refusal of `path` at `limit` bytes set by `flag`.
fn assert_refused(output: &Output, path: &str, flag: &str, limit: u64) {
    let message = stderr(output);
    assert!(!output.status.success(), "{path}: expected a refusal, got success: {message}");
    let expected =
        format!("{path} is larger than {flag} ({limit} bytes); pass a larger {flag} to read it");
    assert!(message.contains(&expected), "expected {expected:?} in: {message}");
}

/// A sparse file of `n_bytes` bytes: its length is real, its blocks are not stored.
fn sparse(dir: &Path, name: &str, n_bytes: u64) -> PathBuf {
    let path = dir.join(name);
    let file = std::fs::File::create(&path).expect("create a sparse file");
    file.set_len(n_bytes).expect("set its length");
    path
}

fn s(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 scratch path")
}

/// A NEFF with one f32[2] input `x` and output `output0`, and no program of its own.
fn neff_without_program(dir: &Path) -> PathBuf {
    let description = ModelDescription::new("caps.neff")
        .with_input("x", Dltype::Float32, &[2])
        .with_output("output0", Dltype::Float32, &[2]);
    let spec = sim::neff_load::neff_spec_of(&description).expect("a spec");
    let path = dir.join("caps.neff");
    std::fs::write(&path, spec.to_bytes().expect("neff bytes")).expect("write the neff");
    path
}

const IDENTITY_HLO: &str = "HloModule identity\n\nENTRY main {\n  x = f32[2] parameter(0)\n  ROOT out = (f32[2]) tuple(x)\n}\n";

/// The metaneff of [`neff_without_program`]: its one user input and its output.
fn metaneff(dir: &Path) -> PathBuf {
    let message = text::from_text(
        r#"input_tensors { name: "x" shape: [2] data_type: FLOAT type: USER_INPUT }
output_tensors { name: "output0" shape: [2] data_type: FLOAT }"#,
    )
    .expect("metaneff text");
    let path = dir.join("caps.metaneff");
    std::fs::write(&path, message).expect("write the metaneff");
    path
}

fn x_npy(dir: &Path) -> PathBuf {
    let path = dir.join("x.npy");
    let data: Vec<u8> = [1.0f32, 2.0].iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(&path, npy::encode("<f4", &[2], &data).expect("npy")).expect("write npy");
    path
}

#[test]
fn inspect_refuses_an_endless_or_over_cap_neff_naming_the_flag() {
    let dir = Scratch::new("caps-inspect");
    let out = nrtsim(&["inspect", "/dev/zero", "--max-input-bytes", SMALL]);
    assert_refused(&out, "/dev/zero", "--max-input-bytes", 65536);
    let big = sparse(&dir, "big.neff", DEFAULT_NEFF + 1);
    assert_refused(&nrtsim(&["inspect", s(&big)]), s(&big), "--max-input-bytes", DEFAULT_NEFF);
}

#[test]
fn check_refuses_an_endless_or_over_cap_input_naming_its_own_flag() {
    let dir = Scratch::new("caps-check");
    let neff = neff_without_program(&dir);
    let meta = metaneff(&dir);
    let out = nrtsim(&["check", "/dev/zero", s(&meta), "--max-neff-bytes", SMALL]);
    assert_refused(&out, "/dev/zero", "--max-neff-bytes", 65536);
    let out = nrtsim(&["check", s(&neff), "/dev/zero", "--max-metaneff-bytes", SMALL]);
    assert_refused(&out, "/dev/zero", "--max-metaneff-bytes", 65536);
    let big_neff = sparse(&dir, "big.neff", DEFAULT_NEFF + 1);
    let out = nrtsim(&["check", s(&big_neff), s(&meta)]);
    assert_refused(&out, s(&big_neff), "--max-neff-bytes", DEFAULT_NEFF);
    let big_meta = sparse(&dir, "big.metaneff", DEFAULT_METANEFF + 1);
    let out = nrtsim(&["check", s(&neff), s(&big_meta)]);
    assert_refused(&out, s(&big_meta), "--max-metaneff-bytes", DEFAULT_METANEFF);
}

#[test]
fn metaneff_commands_refuse_an_endless_or_over_cap_input_naming_the_flag() {
    let dir = Scratch::new("caps-metaneff");
    let meta = metaneff(&dir);
    let big = sparse(&dir, "big.metaneff", DEFAULT_METANEFF + 1);
    for command in [
        vec!["decode", s(&big)],
        vec!["encode", s(&big), "-o", "-"],
        vec!["edit", s(&big), "-o", "-"],
        vec!["diff", s(&big), s(&meta)],
        vec!["diff", s(&meta), s(&big)],
    ] {
        let mut args = vec!["metaneff"];
        args.extend(&command);
        assert_refused(&nrtsim(&args), s(&big), "--max-input-bytes", DEFAULT_METANEFF);
    }
    let out = nrtsim(&["metaneff", "diff", s(&meta), "/dev/zero", "--max-input-bytes", SMALL]);
    assert_refused(&out, "/dev/zero", "--max-input-bytes", 65536);
}

#[test]
fn hlo_commands_refuse_an_endless_or_over_cap_input_naming_the_flag() {
    let dir = Scratch::new("caps-hlo");
    let big = sparse(&dir, "big.hlo.pb", DEFAULT_HLO + 1);
    for command in
        [vec!["print", s(&big)], vec!["encode", s(&big), "-o", "-"], vec!["run", s(&big)]]
    {
        let mut args = vec!["hlo"];
        args.extend(&command);
        assert_refused(&nrtsim(&args), s(&big), "--max-input-bytes", DEFAULT_HLO);
    }
    let module = dir.join("m.hlo");
    std::fs::write(&module, IDENTITY_HLO).expect("write the module");
    let out = nrtsim(&["hlo", "run", s(&module), "--input", s(&big)]);
    assert_refused(&out, s(&big), "--max-input-bytes", DEFAULT_HLO);
    let out =
        nrtsim(&["hlo", "run", s(&module), "--input", "/dev/zero", "--max-input-bytes", SMALL]);
    assert_refused(&out, "/dev/zero", "--max-input-bytes", 65536);
}

/// `run` without `--metaneff`: the NEFF, `--hlo` and `--input NAME=FILE` (each read after the
/// ones before it were accepted).
#[test]
fn run_refuses_an_endless_or_over_cap_neff_hlo_or_input_naming_the_flag() {
    let dir = Scratch::new("caps-run");
    let neff = neff_without_program(&dir);
    let hlo = dir.join("identity.hlo");
    std::fs::write(&hlo, IDENTITY_HLO).expect("write the module");
    let out_dir = dir.join("out");
    let run = |extra: &[&str]| {
        let mut args = vec!["run"];
        args.extend(extra);
        args.extend(["--output-dir", s(&out_dir)]);
        nrtsim(&args)
    };
    assert_refused(
        &run(&["/dev/zero", "--max-input-bytes", SMALL]),
        "/dev/zero",
        "--max-input-bytes",
        65536,
    );
    let out = run(&[s(&neff), "--hlo", "/dev/zero", "--max-input-bytes", SMALL]);
    assert_refused(&out, "/dev/zero", "--max-input-bytes", 65536);
    let out =
        run(&[s(&neff), "--hlo", s(&hlo), "--input", "x=/dev/zero", "--max-input-bytes", SMALL]);
    assert_refused(&out, "/dev/zero", "--max-input-bytes", 65536);
    let big = sparse(&dir, "big.bin", DEFAULT_RUN + 1);
    assert_refused(&run(&[s(&big)]), s(&big), "--max-input-bytes", DEFAULT_RUN);
    assert_refused(&run(&[s(&neff), "--hlo", s(&big)]), s(&big), "--max-input-bytes", DEFAULT_RUN);
    let input = format!("x={}", s(&big));
    let out = run(&[s(&neff), "--hlo", s(&hlo), "--input", &input]);
    assert_refused(&out, s(&big), "--max-input-bytes", DEFAULT_RUN);
    // The same files within the limit run.
    let input = format!("x={}", s(&x_npy(&dir)));
    let out = run(&[s(&neff), "--hlo", s(&hlo), "--input", &input]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// `run --metaneff`: the metaneff, `--input FILE` and `--weights`.
#[test]
fn run_with_a_metaneff_refuses_an_endless_or_over_cap_input_naming_the_flag() {
    let dir = Scratch::new("caps-run-bind");
    let neff = neff_without_program(&dir);
    let meta = metaneff(&dir);
    let hlo = dir.join("identity.hlo");
    std::fs::write(&hlo, IDENTITY_HLO).expect("write the module");
    let x = x_npy(&dir);
    let big = sparse(&dir, "big.bin", DEFAULT_RUN + 1);
    let run = |extra: &[&str]| {
        let mut args = vec!["run", s(&neff), "--hlo", s(&hlo), "--print"];
        args.extend(extra);
        nrtsim(&args)
    };
    let out = run(&["--metaneff", "/dev/zero", "--input", s(&x), "--max-input-bytes", SMALL]);
    assert_refused(&out, "/dev/zero", "--max-input-bytes", 65536);
    let out = run(&["--metaneff", s(&big), "--input", s(&x)]);
    assert_refused(&out, s(&big), "--max-input-bytes", DEFAULT_RUN);
    let out = run(&["--metaneff", s(&meta), "--input", "/dev/zero", "--max-input-bytes", SMALL]);
    assert_refused(&out, "/dev/zero", "--max-input-bytes", 65536);
    let out = run(&["--metaneff", s(&meta), "--input", s(&big)]);
    assert_refused(&out, s(&big), "--max-input-bytes", DEFAULT_RUN);
    let out = run(&["--metaneff", s(&meta), "--input", s(&x), "--weights", s(&big)]);
    assert_refused(&out, s(&big), "--max-input-bytes", DEFAULT_RUN);
    let out = run(&["--metaneff", s(&meta), "--input", s(&x)]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// `replay`: the recording itself and each blob it names.
#[test]
fn replay_refuses_an_endless_or_over_cap_recording_or_blob_naming_the_flag() {
    let dir = Scratch::new("caps-replay");
    let out = nrtsim(&["replay", "/dev/zero", "--max-input-bytes", SMALL]);
    assert_refused(&out, "/dev/zero", "--max-input-bytes", 65536);
    let big = sparse(&dir, "big.trace", DEFAULT_REPLAY + 1);
    assert_refused(&nrtsim(&["replay", s(&big)]), s(&big), "--max-input-bytes", DEFAULT_REPLAY);
    let trace = dir.join("run.trace");
    let hash = "0123456789abcdef";
    std::fs::write(
        &trace,
        format!(
            "# nrtsim-trace 1\ninit(NO_FW, \"\", \"\") -> NRT_SUCCESS\nload(<{} bytes sha256:{hash}>, 0, 1) -> m1 NRT_SUCCESS\n",
            DEFAULT_REPLAY + 1
        ),
    )
    .expect("write the recording");
    let blobs = dir.join("run.trace.blobs");
    std::fs::create_dir_all(&blobs).expect("create the blobs folder");
    let blob = sparse(&blobs, hash, DEFAULT_REPLAY + 1);
    let out = nrtsim(&["replay", s(&trace)]);
    assert_refused(&out, s(&blob), "--max-input-bytes", DEFAULT_REPLAY);
    assert!(stderr(&out).contains("line 3: "), "{}", stderr(&out));
}

#[test]
fn report_and_settle_refuse_an_endless_or_over_cap_input_naming_the_flag() {
    const DEFAULT_REPORT: u64 = 256 << 20;
    const DEFAULT_BUNDLE: u64 = 256 << 20;
    let dir = Scratch::new("caps-report");
    let small = dir.write("r.json", br#"{"cases": []}"#);
    for command in [
        vec!["report", "merge", "/dev/zero"],
        vec!["report", "merge", s(&small), "/dev/zero"],
        vec!["report", "diff", "/dev/zero", s(&small)],
        vec!["report", "diff", s(&small), "/dev/zero"],
        vec!["vectors", "settle", "/dev/zero", "--vectors", s(&dir)],
    ] {
        let mut args = command.clone();
        args.extend(["--max-input-bytes", SMALL]);
        assert_refused(&nrtsim(&args), "/dev/zero", "--max-input-bytes", 65536);
    }
    let big = sparse(&dir, "big.json", DEFAULT_REPORT + 1);
    let out = nrtsim(&["report", "merge", s(&big)]);
    assert_refused(&out, s(&big), "--max-input-bytes", DEFAULT_REPORT);
    let out = nrtsim(&["report", "diff", s(&small), s(&big)]);
    assert_refused(&out, s(&big), "--max-input-bytes", DEFAULT_REPORT);
    let big = sparse(&dir, "big.tar.gz", DEFAULT_BUNDLE + 1);
    let out = nrtsim(&["vectors", "settle", s(&big), "--vectors", s(&dir)]);
    assert_refused(&out, s(&big), "--max-input-bytes", DEFAULT_BUNDLE);
}
