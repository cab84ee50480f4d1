//! `nrtsim conformance --shard` and `nrtsim report merge|diff` from the outside: the shards of a
//! run merge into that run, a report given twice is refused naming both files, and a diff lists
//! what changed with exit status 1.

use std::path::{Path, PathBuf};

mod support;
use support::{Scratch, nrtsim, stderr, stdout};

fn committed_vectors() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../vectors")
}

/// Runs the committed vectors on `sim` (one shard of them when given), writing `--json` to `out`.
fn run_sim(out: &Path, shard: Option<&str>) {
    let vectors = committed_vectors();
    let mut args = vec!["conformance", "--backend", "sim", "--vectors", vectors.to_str().unwrap()];
    args.extend(["--json", out.to_str().unwrap()]);
    if let Some(shard) = shard {
        args.extend(["--shard", shard]);
    }
    let output = nrtsim(&args);
    assert!(output.status.success(), "{}{}", stdout(&output), stderr(&output));
}

/// `(backend, vector, outcome)` of each case, in the report's order.
fn cases(report: &serde_json::Value) -> Vec<(String, String, String)> {
    report["cases"]
        .as_array()
        .expect("a cases array")
        .iter()
        .map(|c| {
            let field = |name: &str| c[name].as_str().expect(name).to_owned();
            (field("backend"), field("vector"), field("outcome"))
        })
        .collect()
}

fn read(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("the report")).expect("JSON")
}

#[test]
fn three_shards_merged_are_the_unsharded_run() {
    let dir = Scratch::new("shards");
    let full = dir.join("full.json");
    run_sim(&full, None);
    let shards: Vec<PathBuf> = (1..=3).map(|k| dir.join(format!("shard{k}.json"))).collect();
    let mut sizes = Vec::new();
    for (k, path) in shards.iter().enumerate() {
        let shard = format!("{}/3", k + 1);
        run_sim(path, Some(&shard));
        let report = read(path);
        assert_eq!(report["runs"][0]["shard"], shard.as_str(), "the report names its shard");
        sizes.push(cases(&report).len());
    }
    let total = cases(&read(&full)).len();
    assert!(total > 100, "the committed suite has its vectors: {total}");
    assert_eq!(sizes.iter().sum::<usize>(), total, "every vector is in exactly one shard");
    assert!(sizes.iter().all(|&n| n > total / 6), "the shards are not lopsided: {sizes:?}");

    let merged = dir.join("merged.json");
    let junit = dir.join("merged.xml");
    let mut args = vec!["report", "merge"];
    args.extend(shards.iter().map(|p| p.to_str().unwrap()));
    args.extend(["--json", merged.to_str().unwrap(), "--junit", junit.to_str().unwrap()]);
    let output = nrtsim(&args);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stdout(&output).contains(&format!("merged: {total} passed, 0 failed")),
        "{}",
        stdout(&output)
    );
    assert!(stdout(&output).contains("shard 2/3"), "each run is listed: {}", stdout(&output));
    let merged_report = read(&merged);
    assert_eq!(cases(&merged_report), cases(&read(&full)), "merged shards = one unsharded run");
    assert_eq!(merged_report["runs"].as_array().map(Vec::len), Some(3));
    let xml = std::fs::read_to_string(&junit).expect("the JUnit report");
    assert!(xml.contains(&format!("tests=\"{total}\" failures=\"0\"")), "{xml}");

    // The same shard twice is refused, naming both files.
    let first = shards[0].to_str().unwrap();
    let output = nrtsim(&["report", "merge", first, first]);
    assert!(!output.status.success(), "a duplicate merges");
    let message = stderr(&output);
    assert!(message.contains(&format!("is in both {first} and {first}")), "{message}");

    // Nothing changed between the full run and the merged shards.
    let output = nrtsim(&["report", "diff", full.to_str().unwrap(), merged.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stdout(&output));
    assert!(stdout(&output).contains("0 case(s) changed outcome"), "{}", stdout(&output));
}

#[test]
fn a_diff_lists_each_changed_outcome_and_exits_1() {
    let dir = Scratch::new("diff");
    let old = dir.join("old.json");
    let new = dir.join("new.json");
    let case = |vector: &str, outcome: &str| {
        format!(
            r#"{{"vector": "{vector}", "backend": "sim", "outcome": "{outcome}", "seconds": 0.1,
            "message": null, "first_diff": null}}"#
        )
    };
    let report = |cases: &[String]| format!("{{\"cases\": [{}]}}", cases.join(","));
    std::fs::write(&old, report(&[case("a/x", "passed"), case("a/y", "passed")])).unwrap();
    std::fs::write(&new, report(&[case("a/x", "passed"), case("a/y", "guess_refuted")])).unwrap();
    let output = nrtsim(&["report", "diff", old.to_str().unwrap(), new.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
    assert_eq!(
        stdout(&output).lines().next(),
        Some("sim/a/y: passed -> guess_refuted"),
        "{}",
        stdout(&output)
    );
    // A file that is not a report is an error naming it and the field.
    std::fs::write(&new, "{\"cases\": 3}").unwrap();
    let output = nrtsim(&["report", "diff", old.to_str().unwrap(), new.to_str().unwrap()]);
    assert!(!output.status.success());
    let message = stderr(&output);
    assert!(
        message.contains("not an nrtsim conformance report") && message.contains("cases"),
        "{message}"
    );
}
