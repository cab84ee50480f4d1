//! `nrtsim conformance` and `nrtsim run-vector` from the outside: failures on stderr and a
//! non-zero exit status, and stale generated inputs refused with the vector and the bless command.

use std::path::{Path, PathBuf};

mod support;
use support::{Scratch, nrtsim, text};

/// A scratch `vectors/` folder with an empty expectations folder.
/// An empty `vectors/` folder with its `expectations/`.
fn scratch(name: &str) -> Scratch {
    Scratch::new(name).inside("vectors", &["expectations"])
}

fn add_vector(vectors: &Path, name: &str, case: &str) -> PathBuf {
    let dir = vectors.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("case.toml"), case).unwrap();
    dir
}

/// Fails its own expectation: `init` succeeds, the case says it must not.
const FAILING_CASE: &str = r#"
description = "a vector that fails on purpose"
auto_init = false
[[step]]
call = "init"
expect = "NRT_INVALID"
"#;

const PASSING_CASE: &str = r#"
description = "a vector that passes"
[[step]]
call = "get_version"
"#;

#[test]
fn conformance_failures_go_to_stderr_with_a_non_zero_exit() {
    let vectors = scratch("fails");
    add_vector(&vectors, "area/fails_on_purpose", FAILING_CASE);
    let out = nrtsim(&["conformance", "--backend", "sim", "--vectors", vectors.to_str().unwrap()]);
    assert!(!out.status.success(), "exit status {}", out.status);
    let stderr = text(&out.stderr);
    assert!(stderr.contains("FAIL sim/area/fails_on_purpose"), "stderr: {stderr}");
    assert!(stderr.contains("expected NRT_INVALID, got NRT_SUCCESS"), "stderr: {stderr}");
    assert!(!text(&out.stdout).contains("FAIL"), "stdout: {}", text(&out.stdout));
    assert!(text(&out.stdout).contains("0 passed, 1 failed"), "stdout: {}", text(&out.stdout));
}

#[test]
fn conformance_that_passes_exits_zero_with_no_failure_on_stderr() {
    let vectors = scratch("passes");
    add_vector(&vectors, "area/passes", PASSING_CASE);
    let out = nrtsim(&["vectors", "--bless", "--vectors", vectors.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = nrtsim(&["conformance", "--backend", "sim", "--vectors", vectors.to_str().unwrap()]);
    assert!(out.status.success(), "{}{}", text(&out.stdout), text(&out.stderr));
    assert!(text(&out.stdout).contains("1 passed, 0 failed"), "{}", text(&out.stdout));
    assert!(!text(&out.stderr).contains("FAIL"), "{}", text(&out.stderr));
}

#[test]
fn run_vector_with_a_library_that_does_not_exist_fails_on_stderr() {
    let vectors = scratch("garbage");
    add_vector(&vectors, "area/passes", PASSING_CASE);
    let out = nrtsim(&[
        "run-vector",
        "--vectors",
        vectors.to_str().unwrap(),
        "--library",
        "/nonexistent/garbage.so",
        "area/passes",
    ]);
    assert!(!out.status.success(), "exit status {}", out.status);
    let stderr = text(&out.stderr);
    assert!(stderr.contains("area/passes"), "stderr: {stderr}");
    assert!(stderr.contains("/nonexistent/garbage.so"), "the library tried is named: {stderr}");
    // The JSON result is still on stdout for the parent process.
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(result["failure"].as_str().unwrap().contains("/nonexistent/garbage.so"));
}

#[test]
fn a_hand_edited_neff_table_makes_the_committed_model_neff_stale_and_it_is_not_run() {
    let vectors = scratch("stale");
    let case = r#"
description = "a vector whose model.neff was generated from another [neff] table"
[neff]
inputs = [{ name = "input0", dtype = "float32", shape = [4] }]
outputs = [{ name = "output0", dtype = "float32", shape = [4] }]
[[step]]
call = "load"
as = "m"
"#;
    let dir = add_vector(&vectors, "area/edited_by_hand", case);
    // What a bless of an earlier [neff] table would have left: a valid NEFF, of other shapes.
    let earlier = case.replace("shape = [4]", "shape = [8]");
    let earlier_vector = conformance::vector::Vector {
        name: "area/edited_by_hand".to_owned(),
        dir: dir.clone(),
        case: toml::from_str(&earlier).unwrap(),
        recorded: false,
    };
    let files = conformance::vector::generate_inputs(&earlier_vector).unwrap();
    std::fs::write(dir.join("model.neff"), &files["model.neff"]).unwrap();
    std::fs::write(dir.join("expected.trace"), "# golden\n").unwrap();

    let out = nrtsim(&["conformance", "--backend", "sim", "--vectors", vectors.to_str().unwrap()]);
    assert!(!out.status.success(), "a stale vector fails the run");
    let stderr = text(&out.stderr);
    assert!(stderr.contains("FAIL sim/area/edited_by_hand"), "stderr: {stderr}");
    assert!(stderr.contains("stale generated input area/edited_by_hand/model.neff"), "{stderr}");
    assert!(stderr.contains("cargo xtask vectors --bless"), "{stderr}");

    // After a bless the file is fresh, and that check passes.
    let out = nrtsim(&["vectors", "--bless", "--vectors", vectors.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = nrtsim(&["conformance", "--backend", "sim", "--vectors", vectors.to_str().unwrap()]);
    assert!(out.status.success(), "{}{}", text(&out.stdout), text(&out.stderr));
}

#[test]
fn an_expect_trace_claim_that_does_not_hold_fails_the_vector_without_the_golden_trace() {
    let vectors = scratch("claims");
    let case = r#"
description = "claims one execute where the step has none"
[[step]]
call = "get_version"
[[expect_trace]]
step = 1
starts_with = "execute("
count = 1
why = "a launch happens"
"#;
    add_vector(&vectors, "area/wrong_claim", case);
    let out = nrtsim(&[
        "conformance",
        "--backend",
        "sim",
        "--no-trace",
        "--vectors",
        vectors.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(
            "expect_trace (step 1): a launch happens: expected 1 line(s) starting with \"execute(\", got 0"
        ),
        "{stderr}"
    );
}

#[test]
fn bless_leaves_the_trace_of_a_vector_the_simulator_is_known_to_fail() {
    let vectors = scratch("known");
    let dir = add_vector(&vectors, "area/fails_on_purpose", FAILING_CASE);
    std::fs::write(
        vectors.join("expectations/sim.toml"),
        "[[known]]\nvector = \"area/fails_on_purpose\"\nreason = \"the simulator is wrong here\"\n",
    )
    .unwrap();
    std::fs::write(dir.join("expected.trace"), "# kept\n").unwrap();
    let out = nrtsim(&["vectors", "--bless", "--vectors", vectors.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(dir.join("expected.trace")).unwrap(), "# kept\n");
    // Without the entry, bless refuses, naming the vector.
    std::fs::remove_file(vectors.join("expectations/sim.toml")).unwrap();
    let out = nrtsim(&["vectors", "--bless", "--vectors", vectors.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("area/fails_on_purpose"), "{}", text(&out.stderr));
}

/// Copies the committed recorded vector `client_flow` (recording and kept bytes) to
/// `vectors/recorded/NAME`, with `edit` applied to the recording's text.
fn copy_recorded(vectors: &Path, name: &str, edit: impl Fn(&str) -> String) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../vectors/recorded/client_flow");
    let dir = vectors.join("recorded").join(name);
    let blobs = dir.join("recording.trace.blobs");
    std::fs::create_dir_all(&blobs).unwrap();
    for entry in std::fs::read_dir(source.join("recording.trace.blobs")).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, blobs.join(path.file_name().unwrap())).unwrap();
    }
    let text = std::fs::read_to_string(source.join("recording.trace")).unwrap();
    std::fs::write(dir.join("recording.trace"), edit(&text)).unwrap();
    dir
}

/// A promoted recording is a vector on `sim` and `capi`: a clean copy passes, a copy whose
/// recorded output bytes were changed fails on both backends naming the line and both texts,
/// and `--filter` selects recorded vectors by `backend/recorded/NAME`.
#[test]
fn a_recorded_vector_runs_on_sim_and_capi_and_a_planted_difference_fails_with_the_line() {
    let vectors = scratch("recorded");
    copy_recorded(&vectors, "clean", str::to_owned);
    let recorded = "tensor_read(t2, 0, 16) -> [00 00 00 40 00 00 80 40";
    let planted = "tensor_read(t2, 0, 16) -> [00 00 00 41 00 00 80 40";
    let dir = copy_recorded(&vectors, "planted", |text| {
        assert!(text.contains(recorded), "client_flow reads its output as expected here");
        text.replacen(recorded, planted, 1)
    });
    let text_now = std::fs::read_to_string(dir.join("recording.trace")).unwrap();
    let line = 1 + text_now.lines().position(|l| l.starts_with(planted)).unwrap();
    let dir_arg = vectors.to_str().unwrap();
    let run = |filter: &str| {
        nrtsim(&[
            "conformance",
            "--backend",
            "sim",
            "--backend",
            "capi",
            "--vectors",
            dir_arg,
            "--filter",
            filter,
        ])
    };

    let out = run("*/recorded/*");
    assert!(!out.status.success(), "a planted difference fails the run");
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert!(stdout.contains("2 passed, 2 failed"), "stdout: {stdout}\nstderr: {stderr}");
    for backend in ["sim", "capi"] {
        assert!(
            stderr.contains(&format!(
                "FAIL {backend}/recorded/planted: replay diverges from recording.trace at line \
                 {line}: recorded `{planted}"
            )),
            "stderr: {stderr}"
        );
        assert!(!stderr.contains(&format!("FAIL {backend}/recorded/clean")), "stderr: {stderr}");
    }
    assert!(stderr.contains("replayed `tensor_read(t2, 0, 16) -> [00 00 00 40"), "{stderr}");

    let out = run("*/recorded/clean");
    assert!(out.status.success(), "stdout: {}\nstderr: {}", text(&out.stdout), text(&out.stderr));
    assert!(text(&out.stdout).contains("2 passed, 0 failed"), "stdout: {}", text(&out.stdout));
}

#[test]
fn review_without_a_terminal_refuses_and_says_to_bless() {
    let vectors = scratch("review-no-tty");
    add_vector(&vectors, "area/passes", PASSING_CASE);
    let out = nrtsim(&["vectors", "review", "--vectors", vectors.to_str().unwrap()]);
    assert!(!out.status.success(), "a review without a terminal runs");
    let stderr = text(&out.stderr);
    assert!(stderr.contains("needs a terminal") && stderr.contains("--bless alone"), "{stderr}");
    assert!(!vectors.join("area/passes/expected.trace").exists(), "nothing was written");
    let out = nrtsim(&["vectors", "--bless", "--review", "--vectors", vectors.to_str().unwrap()]);
    assert!(text(&out.stderr).contains("needs a terminal"), "{}", text(&out.stderr));
}

#[test]
fn review_on_a_terminal_shows_the_diff_and_writes_what_is_accepted() {
    // util-linux's `script` gives the review a pseudo-terminal and types the answers.
    let script = Path::new("/usr/bin/script");
    if !script.exists() {
        assert!(std::env::var_os("CI").is_none(), "under CI the review needs /usr/bin/script");
        eprintln!("ignored: no /usr/bin/script to give the review a terminal");
        return;
    }
    let vectors = scratch("review-tty");
    for name in ["area/first", "area/second"] {
        add_vector(&vectors, name, PASSING_CASE);
    }
    let command =
        format!("{} vectors review --vectors {}", support::nrtsim_exe(), vectors.to_str().unwrap());
    let mut child = std::process::Command::new(script)
        .args(["-qec", &command, "/dev/null"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run script");
    use std::io::Write as _;
    child.stdin.take().expect("stdin").write_all(b"a\nr\n").expect("answer");
    let out = child.wait_with_output().expect("the review ends");
    let shown = text(&out.stdout);
    assert!(out.status.success(), "{shown}{}", text(&out.stderr));
    assert!(shown.contains("area/first") && shown.contains("vector that passes"), "{shown}");
    assert!(shown.contains("+++ b/area/first/expected.trace"), "{shown}");
    assert!(shown.contains("1 accepted, 1 rejected, 0 skipped"), "{shown}");
    let accepted = std::fs::read_to_string(vectors.join("area/first/expected.trace"));
    assert!(accepted.is_ok_and(|t| t.contains("get_version")), "the accepted trace is written");
    assert!(!vectors.join("area/second/expected.trace").exists(), "the rejected one is not");
}

#[test]
fn conformance_html_writes_the_review_page_with_links_to_the_vector() {
    let vectors = scratch("html");
    add_vector(&vectors, "area/fails_on_purpose", FAILING_CASE);
    let html = vectors.parent().unwrap().join("html");
    let out = nrtsim(&[
        "conformance",
        "--backend",
        "sim",
        "--vectors",
        vectors.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ]);
    assert!(!out.status.success(), "the vector fails on purpose");
    let page_path = html.join("index.html");
    let stdout = text(&out.stdout);
    assert!(stdout.contains(&format!("wrote {}", page_path.display())), "stdout: {stdout}");
    let page = std::fs::read_to_string(&page_path).unwrap();
    assert!(page.contains(">sim/area/fails_on_purpose</a>"), "{page}");
    assert!(page.contains("<a href=\"../vectors/area/fails_on_purpose/case.toml\">"), "{page}");
    assert!(page.contains("expected NRT_INVALID, got NRT_SUCCESS"), "{page}");
}
