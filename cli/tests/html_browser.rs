//! The HTML review report in a real browser: a hand-built report with a failing and a known
//! difference case goes through `nrtsim report merge --html`, headless Chromium loads the page,
//! and the test reads the DOM after the page's script ran (the matrix counts, the marked
//! differing line, a decoded f32 value, a filter taken from the address), then saves a
//! screenshot under the target folder for a person to look at.
//!
//! It needs Debian's `chromium` (`/usr/bin/chromium`; `.ci/run` installs it). Without it the
//! trial is reported ignored with the reason; under CI (`CI` set) it fails instead.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use conformance::report::{CaseDetail, CaseResult, Outcome, Report, RunInfo};
use libtest_mimic::{Arguments, Failed, Trial};

mod support;
use support::{Scratch, nrtsim, stderr, stdout};

const CHROMIUM: &str = "/usr/bin/chromium";

fn lines(text: &[&str]) -> Vec<String> {
    text.iter().map(|l| (*l).to_owned()).collect()
}

fn case(vector: &str, backend: &str, outcome: Outcome) -> CaseResult {
    CaseResult {
        vector: vector.to_owned(),
        backend: backend.to_owned(),
        outcome,
        duration: Duration::from_millis(4),
        message: None,
        first_diff: None,
        run: 0,
        detail: None,
    }
}

/// Two lifecycle vectors on `sim` (one passes, one fails: its output reads 1.5 where 2.5 was
/// expected, and it has a line too many), a known difference on `capi`.
fn report() -> Report {
    let expected = lines(&[
        "init(NO_FW, \"\", \"\") -> NRT_SUCCESS",
        "== step 1: tensor_allocate",
        "tensor_allocate(DEVICE, 0, 8, \"input0\") -> t1 NRT_SUCCESS",
        "== step 2: tensor_write",
        "tensor_write(t1, 0, [00 00 c0 3f 00 00 20 40]) -> NRT_SUCCESS",
        "== step 3: model_forward",
        "output 0 Float [2] [00 00 20 40 00 00 80 40]",
        "tensor_free(t1) -> NRT_SUCCESS",
    ]);
    let mut actual = expected.clone();
    actual[6] = "output 0 Float [2] [00 00 c0 3f 00 00 80 40]".to_owned();
    actual.insert(7, "tensor_read(t1, 0, 8) -> [00 00 c0 3f 00 00 20 40] NRT_SUCCESS".to_owned());
    let mut failing = case("lifecycle/output_is_the_sum", "sim", Outcome::Failed);
    failing.message = Some("trace differs from expected.trace <b>not bold</b>".to_owned());
    failing.first_diff = Some("line 7".to_owned());
    failing.detail = Some(Box::new(CaseDetail {
        description: "the output is the sum of the inputs".to_owned(),
        provenance: Some("guess: the sum is computed in f32".to_owned()),
        failures: vec!["step 3: expected output 0 = [2.5, 4], got [1.5, 4]".to_owned()],
        expected,
        actual,
        dtypes: BTreeMap::from([("input0".to_owned(), "float32".to_owned())]),
    }));
    let mut known = case("tensors/read_past_the_end", "capi", Outcome::KnownDifference);
    known.message = Some("libnrt answers NRT_INVALID here (known)".to_owned());
    known.detail = Some(Box::new(CaseDetail {
        description: "a read past the end is refused".to_owned(),
        ..CaseDetail::default()
    }));
    let run = RunInfo {
        nrtsim_version: "0.1.0".to_owned(),
        instance_type: Some("trn1.2xlarge".to_owned()),
        runtime_versions: BTreeMap::from([("capi".to_owned(), "2.28.0.0".to_owned())]),
        command: vec!["nrtsim".to_owned(), "conformance".to_owned()],
        ..RunInfo::default()
    };
    Report::new(
        run,
        vec![
            case("lifecycle/init_then_close", "sim", Outcome::Passed),
            failing,
            case("lifecycle/init_then_close", "capi", Outcome::Passed),
            known,
        ],
    )
}

/// Headless Chromium with a fresh profile and nothing that reaches the network.
fn chromium(profile: &Path) -> Command {
    let mut command = Command::new(CHROMIUM);
    command.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ]);
    command.arg(format!("--user-data-dir={}", profile.display()));
    command
}

/// The DOM of `url` after its scripts ran.
fn dump_dom(profile: &Path, url: &str) -> Result<String, Failed> {
    let out = chromium(profile).arg("--dump-dom").arg(url).output()?;
    if !out.status.success() {
        return Err(format!("chromium --dump-dom {url}: {}\n{}", out.status, stderr(&out)).into());
    }
    Ok(stdout(&out))
}

fn check(condition: bool, what: &str, dom: &str) -> Result<(), Failed> {
    if condition { Ok(()) } else { Err(format!("{what}; the DOM was:\n{dom}").into()) }
}

/// The target folder cargo built `nrtsim` in (`target/debug/nrtsim` → `target`).
fn target_dir() -> PathBuf {
    let exe = Path::new(env!("CARGO_BIN_EXE_nrtsim"));
    exe.ancestors().nth(2).map_or_else(|| PathBuf::from("target"), Path::to_path_buf)
}

fn the_report_reads_right_in_chromium() -> Result<(), Failed> {
    let scratch = Scratch::new("html-browser");
    let json = scratch.write("run.json", report().to_json().as_bytes());
    let dir = scratch.join("html");
    let out = nrtsim(&[
        "report",
        "merge",
        json.to_str().ok_or("a UTF-8 scratch path")?,
        "--html",
        dir.to_str().ok_or("a UTF-8 scratch path")?,
    ]);
    let page = dir.join("index.html");
    if !out.status.success() || !stdout(&out).contains(&format!("wrote {}", page.display())) {
        return Err(
            format!("nrtsim report merge --html: {}\n{}", stdout(&out), stderr(&out)).into()
        );
    }
    let url = format!("file://{}", page.display());
    let profile = scratch.join("profile");

    let dom = dump_dom(&profile, &url)?;
    // The page's script ran: it marks the body with the filter it applied.
    check(dom.contains("<body data-filter=\"all\">"), "the filter script did not run", &dom)?;
    check(
        dom.contains(
            "data-area=\"lifecycle\" data-backend=\"sim\" data-failed=\"1\" \
             data-guess_refuted=\"0\" data-unexpected_pass=\"0\" data-known_difference=\"0\" \
             data-passed=\"1\"",
        ),
        "the lifecycle × sim cell does not count 1 failed and 1 passed",
        &dom,
    )?;
    check(
        dom.contains("data-area=\"tensors\" data-backend=\"capi\" data-failed=\"0\" data-guess_refuted=\"0\" data-unexpected_pass=\"0\" data-known_difference=\"1\""),
        "the tensors × capi cell does not count 1 known difference",
        &dom,
    )?;
    // Two rows differ: the output line (values changed) and the inserted read.
    check(dom.matches("<tr class=\"diff\">").count() == 2, "not exactly 2 marked rows", &dom)?;
    check(
        dom.contains("output 0 Float [2] [00 00 c0 3f 00 00 80 40]</code><div class=\"values\">= Float [1.5, 4]</div>"),
        "the actual output's bytes are not shown as the f32 values 1.5, 4",
        &dom,
    )?;
    check(
        dom.contains("= Float [2.5, 4]"),
        "the expected output's bytes are not shown as 2.5, 4",
        &dom,
    )?;
    check(
        dom.contains("max abs error 1, max rel error 0.4"),
        "the output line's errors are not |1.5 - 2.5| = 1 and 1 / 2.5 = 0.4",
        &dom,
    )?;
    check(
        dom.contains("&lt;b&gt;not bold&lt;/b&gt;") && !dom.contains("<b>not bold</b>"),
        "the message's markup is not escaped",
        &dom,
    )?;

    // A filter in the address hides the known difference.
    let dom = dump_dom(&profile, &format!("{url}#filter=failed"))?;
    check(dom.contains("<span id=\"shown\">1</span>"), "the failed filter shows not 1 case", &dom)?;
    check(
        dom.contains("id=\"capi--tensors--read_past_the_end\" data-outcome=\"known_difference\" data-stale=\"false\" hidden=\"\""),
        "the failed filter does not hide the known difference",
        &dom,
    )?;

    let screenshot = target_dir().join("html-report.png");
    let _ = std::fs::remove_file(&screenshot);
    let out = chromium(&profile)
        .arg(format!("--screenshot={}", screenshot.display()))
        .arg("--window-size=1400,2000")
        .arg(&url)
        .output()?;
    if !out.status.success() || !screenshot.is_file() {
        return Err(format!("chromium --screenshot: {}\n{}", out.status, stderr(&out)).into());
    }
    println!("screenshot of the HTML report: {}", screenshot.display());
    Ok(())
}

fn main() {
    let args = Arguments::from_args();
    let name = "the_report_reads_right_in_chromium";
    let trial = if Path::new(CHROMIUM).is_file() {
        Trial::test(name, the_report_reads_right_in_chromium)
    } else {
        let reason = format!("{CHROMIUM} not found: install Debian's chromium package");
        eprintln!("html_browser: {reason}");
        // Under CI the browser test must run; elsewhere it is ignored, with the reason above.
        let required = std::env::var_os("CI").is_some();
        Trial::test(name, move || Err(reason.clone().into())).with_ignored_flag(!required)
    };
    libtest_mimic::run(&args, vec![trial]).exit();
}
