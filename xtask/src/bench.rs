//! `cargo xtask bench [--runs N] [--filter S]`: every benchmark that has a peer, in one table.
//!
//! The benches that measure against a peer (XLA on CPU, Google's upb, memcpy, naive loops, the
//! direct libnrt call) print, besides their own lines, one `NRTSIM-BENCH {json}` line per figure:
//! `{"group","figure","ours_s","peer","peer_s","detail"}`, seconds per iteration, best of N. This
//! command makes sure the reference Python exists (as `cargo xtask test` does: the XLA and upb
//! peers live there), runs those benches in one `cargo bench` invocation per run (their own
//! output goes to standard error, as it comes), collects the lines and prints on standard output
//! one markdown table, `figure | ours | peer | ratio`, the ratio being peer time ÷ ours (above 1:
//! we are faster), with each group's geometric mean and worst figure. With `--runs N` the set runs
//! N times and each figure shows its N ratios and their geometric mean. The first line names the
//! CPU (model, cores, the SIMD features the kernels choose between), since only ratios measured on
//! one machine in one run compare. `--filter S` keeps the figures whose names or groups contain S
//! (and runs only those models: `NRTSIM_BENCH_FILTER`), so `--filter models` is the headline
//! models, quiet and with a core taken.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

use crate::test::{PYENV, REQUIREMENTS, ensure_venv};

/// The prefix of the lines this command collects.
pub(crate) const PREFIX: &str = "NRTSIM-BENCH ";

/// The benches with peers, by package: one `cargo bench` runs them all.
const BENCHES: &[(&str, &str)] = &[
    ("nrtsim-hlo", "models"),
    ("nrtsim-hlo", "vs_xla"),
    ("nrtsim-hlo", "gemm"),
    ("nrtsim-hlo", "interpreter"),
    ("nrtsim-abi", "decode"),
    ("nrtsim-record", "overhead"),
    ("nrtsim-sim", "runtime"),
    ("nrtsim-testkit", "bind"),
    ("nrtsim-cli", "nki"),
    ("nrtsim-cli", "torch"),
];

/// One figure of one run.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Record {
    pub group: String,
    pub figure: String,
    pub ours_s: f64,
    pub peer: String,
    pub peer_s: f64,
    pub detail: String,
}

impl Record {
    /// Peer time ÷ ours: above 1, we are faster.
    fn ratio(&self) -> f64 {
        self.peer_s / self.ours_s
    }
}

/// The record of an output line: `None` for a line that is not one, an error for a line with the
/// prefix that does not hold a valid record.
pub(crate) fn parse_line(line: &str) -> Option<Result<Record>> {
    let json = line.trim_end().strip_prefix(PREFIX)?;
    Some(parse_json(json).with_context(|| format!("bad benchmark line {line:?}")))
}

fn parse_json(json: &str) -> Result<Record> {
    let value: serde_json::Value = serde_json::from_str(json)?;
    let text = |key: &str| -> Result<String> {
        value[key].as_str().map(str::to_owned).with_context(|| format!("{key} is not a string"))
    };
    let seconds = |key: &str| -> Result<f64> {
        let s = value[key].as_f64().with_context(|| format!("{key} is not a number"))?;
        if !(s.is_finite() && s > 0.0) {
            bail!("{key} is {s}, not a positive time");
        }
        Ok(s)
    };
    Ok(Record {
        group: text("group")?,
        figure: text("figure")?,
        ours_s: seconds("ours_s")?,
        peer: text("peer")?,
        peer_s: seconds("peer_s")?,
        detail: value["detail"].as_str().unwrap_or_default().to_owned(),
    })
}

/// A time with a unit that keeps three or four significant digits.
fn format_seconds(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.2} ms", s * 1e3)
    } else if s >= 1e-6 {
        format!("{:.2} µs", s * 1e6)
    } else {
        format!("{:.1} ns", s * 1e9)
    }
}

/// A ratio with two decimals, or two significant digits below 0.1 (0.0013, not 0.00).
fn format_ratio(r: f64) -> String {
    let decimals = if r > 0.0 && r < 0.1 { (1.0 - r.log10().floor()) as usize } else { 2 };
    format!("{r:.decimals$}")
}

fn geomean(values: &[f64]) -> f64 {
    (values.iter().map(|v| v.ln()).sum::<f64>() / values.len() as f64).exp()
}

/// The markdown table of `runs` (each run's records in the order the benches printed them).
/// Figures are keyed by group, figure and peer, in the order first seen, grouped; a figure's
/// times are its best over the runs, its ratio the geometric mean of its per-run ratios.
pub(crate) fn table(runs: &[Vec<Record>]) -> String {
    // (group, figure, peer) → (detail, ratios, best ours, best peer), in first-seen order.
    type Key = (String, String, String);
    let mut order: Vec<Key> = Vec::new();
    let mut figures: BTreeMap<Key, (String, Vec<f64>, f64, f64)> = BTreeMap::new();
    for record in runs.iter().flatten() {
        let key = (record.group.clone(), record.figure.clone(), record.peer.clone());
        let entry = figures.entry(key.clone()).or_insert_with(|| {
            order.push(key);
            (record.detail.clone(), Vec::new(), f64::INFINITY, f64::INFINITY)
        });
        entry.1.push(record.ratio());
        entry.2 = entry.2.min(record.ours_s);
        entry.3 = entry.3.min(record.peer_s);
    }
    let mut groups: Vec<&str> = Vec::new();
    for (group, _, _) in &order {
        if !groups.contains(&group.as_str()) {
            groups.push(group);
        }
    }
    let several = runs.len() > 1;
    let mut out = String::new();
    if several {
        out.push_str(
            "| figure | ours | peer | ratio | ratios per run |\n|---|---:|---:|---:|---|\n",
        );
    } else {
        out.push_str("| figure | ours | peer | ratio |\n|---|---:|---:|---:|\n");
    }
    for group in groups {
        let mut means = Vec::new();
        for key in order.iter().filter(|key| key.0 == group) {
            let (detail, ratios, ours, peer) = &figures[key];
            let mean = geomean(ratios);
            means.push((key.1.as_str(), mean));
            let name = if detail.is_empty() {
                format!("{group}/{}", key.1)
            } else {
                format!("{group}/{} ({detail})", key.1)
            };
            let peer = format!("{} {}", key.2, format_seconds(*peer));
            let (ours, mean) = (format_seconds(*ours), format_ratio(mean));
            out.push_str(&format!("| {name} | {ours} | {peer} | {mean} |"));
            if several {
                let each: Vec<String> = ratios.iter().map(|&r| format_ratio(r)).collect();
                out.push_str(&format!(" {} |", each.join(", ")));
            }
            out.push('\n');
        }
        let ratios: Vec<f64> = means.iter().map(|m| m.1).collect();
        let worst = means.iter().min_by(|a, b| a.1.total_cmp(&b.1)).expect("a group has figures");
        out.push_str(&format!(
            "| **{group}: geometric mean** (worst {} {}) | | | **{}** |{}\n",
            worst.0,
            format_ratio(worst.1),
            format_ratio(geomean(&ratios)),
            if several { " |" } else { "" }
        ));
    }
    out
}

/// One line naming the CPU from `/proc/cpuinfo`'s text: model, logical cores, and which of the
/// SIMD features the kernels choose between it has.
pub(crate) fn cpu_summary(cpuinfo: &str) -> String {
    let field = |name: &str| {
        cpuinfo.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            (key.trim() == name).then(|| value.trim().to_owned())
        })
    };
    let model = field("model name")
        .or_else(|| field("CPU part").map(|part| format!("CPU part {part}")))
        .unwrap_or_else(|| "unknown CPU".to_owned());
    let cores = cpuinfo
        .lines()
        .filter(|line| line.split_once(':').is_some_and(|(key, _)| key.trim() == "processor"))
        .count();
    // x86 lists `flags`, aarch64 `Features` (where NEON is `asimd`).
    let flags = field("flags").or_else(|| field("Features")).unwrap_or_default();
    let flags: Vec<&str> = flags.split_whitespace().collect();
    let features: Vec<String> =
        [("avx2", "avx2"), ("avx512f", "avx512f"), ("fma", "fma"), ("asimd", "neon")]
            .iter()
            .map(
                |&(flag, name)| {
                    if flags.contains(&flag) { format!("{name} yes") } else { format!("{name} no") }
                },
            )
            .collect();
    format!("CPU: {model}, {cores} logical cores; {}", features.join(", "))
}

/// What `cargo xtask bench` was asked.
pub(crate) struct Options {
    pub runs: usize,
    pub filter: Option<String>,
}

/// Runs the benches once and returns the records they printed; their output goes to stderr.
fn run_once(
    root: &Path,
    python: &Result<PathBuf, String>,
    options: &Options,
) -> Result<Vec<Record>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut command = Command::new(&cargo);
    command.current_dir(root).arg("bench");
    let mut packages: Vec<&str> = BENCHES.iter().map(|&(package, _)| package).collect();
    packages.dedup();
    for package in packages {
        command.args(["--package", package]);
    }
    for (_, bench) in BENCHES {
        command.args(["--bench", bench]);
    }
    if let Ok(python) = python {
        command.env("NRTSIM_PYTHON", python);
    }
    if let Some(filter) = &options.filter {
        command.env("NRTSIM_BENCH_FILTER", filter);
    }
    let mut child = command.stdout(Stdio::piped()).spawn().context("running cargo bench")?;
    let mut records = Vec::new();
    if let Some(stdout) = child.stdout.take() {
        for line in BufReader::new(stdout).lines() {
            let line = line.context("reading cargo bench's output")?;
            eprintln!("{line}");
            if let Some(record) = parse_line(&line) {
                records.push(record?);
            }
        }
    }
    let status = child.wait().context("waiting for cargo bench")?;
    if !status.success() {
        bail!(
            "cargo bench failed ({status}); a bench that checks its answers found a wrong one, or one did not build"
        );
    }
    Ok(records)
}

/// `cargo xtask bench`.
pub(crate) fn run(root: &Path, options: &Options) -> Result<()> {
    if options.runs == 0 {
        bail!("--runs must be at least 1");
    }
    let python = match std::env::var_os("NRTSIM_PYTHON") {
        Some(path) => Ok(PathBuf::from(path)),
        None => ensure_venv(root, REQUIREMENTS, PYENV).map_err(|e| format!("{e:#}")),
    };
    if let Err(why) = &python {
        eprintln!(
            "xtask bench: no reference Python ({why}); the XLA and upb figures will be missing"
        );
    }
    let mut runs = Vec::new();
    for run in 1..=options.runs {
        eprintln!("xtask bench: run {run} of {}", options.runs);
        let mut records = run_once(root, &python, options)?;
        if let Some(filter) = &options.filter {
            records.retain(|record| {
                record.figure.contains(filter.as_str()) || record.group.contains(filter.as_str())
            });
        }
        runs.push(records);
    }
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    println!("{}", cpu_summary(&cpuinfo));
    println!();
    if runs.iter().all(Vec::is_empty) {
        bail!("no bench printed a {PREFIX}line");
    }
    print!("{}", table(&runs));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(group: &str, figure: &str, ours_s: f64, peer: &str, peer_s: f64) -> Record {
        let (group, figure, peer) = (group.to_owned(), figure.to_owned(), peer.to_owned());
        Record { group, figure, ours_s, peer, peer_s, detail: String::new() }
    }

    #[test]
    fn bench_lines_are_parsed_and_other_lines_skipped() {
        let line = r#"NRTSIM-BENCH {"group":"models","figure":"mlp_f32","ours_s":0.0125,"peer":"xla","peer_s":0.01,"detail":"gemm=avx2"}"#;
        let parsed = parse_line(line).expect("a bench line").expect("valid");
        let expected = Record {
            detail: "gemm=avx2".into(),
            ..record("models", "mlp_f32", 0.0125, "xla", 0.01)
        };
        assert_eq!(parsed, expected);
        assert!((parsed.ratio() - 0.8).abs() < 1e-12);
        assert!(parse_line("mlp_f32 ours=1.0 xla=2.0").is_none());
        assert!(parse_line("   Running benches/models.rs").is_none());
    }

    #[test]
    fn a_bench_line_without_a_positive_time_is_an_error() {
        for bad in [
            r#"NRTSIM-BENCH {"group":"g","figure":"f","ours_s":0,"peer":"xla","peer_s":1,"detail":""}"#,
            r#"NRTSIM-BENCH {"group":"g","figure":"f","peer":"xla","peer_s":1}"#,
            r#"NRTSIM-BENCH {"group":"g","figure":"f","ours_s":"1","peer":"xla","peer_s":1}"#,
            "NRTSIM-BENCH not json",
        ] {
            assert!(parse_line(bad).expect("has the prefix").is_err(), "{bad}");
        }
    }

    #[test]
    fn one_run_makes_one_row_per_figure_and_a_mean_per_group() {
        // Ratios 2 and 0.5 (mean 1), then 4 (a group of one), then 0.0013 (two digits kept).
        let run = vec![
            record("models", "a", 0.010, "xla", 0.020),
            record("models", "b", 0.002, "xla", 0.001),
            record("sim", "dma", 4e-6, "memcpy", 16e-6),
            record("reduce", "argmax", 1.0, "xla", 0.0013),
        ];
        let expected = "\
| figure | ours | peer | ratio |
|---|---:|---:|---:|
| models/a | 10.00 ms | xla 20.00 ms | 2.00 |
| models/b | 2.00 ms | xla 1.00 ms | 0.50 |
| **models: geometric mean** (worst b 0.50) | | | **1.00** |
| sim/dma | 4.00 µs | memcpy 16.00 µs | 4.00 |
| **sim: geometric mean** (worst dma 4.00) | | | **4.00** |
| reduce/argmax | 1.00 s | xla 1.30 ms | 0.0013 |
| **reduce: geometric mean** (worst argmax 0.0013) | | | **0.0013** |
";
        assert_eq!(table(&[run]), expected);
    }

    #[test]
    fn several_runs_show_each_ratio_and_their_mean_with_the_best_times() {
        let runs = vec![
            vec![record("kernels", "dot", 2.0, "naive", 2.0)],
            vec![Record {
                detail: "gemm=avx2".into(),
                ..record("kernels", "dot", 1.0, "naive", 4.0)
            }],
        ];
        let expected = "\
| figure | ours | peer | ratio | ratios per run |
|---|---:|---:|---:|---|
| kernels/dot | 1.00 s | naive 2.00 s | 2.00 | 1.00, 4.00 |
| **kernels: geometric mean** (worst dot 2.00) | | | **2.00** | |
";
        assert_eq!(table(&runs), expected);
    }

    #[test]
    fn the_cpu_line_names_the_model_cores_and_simd_features() {
        let x86 = "processor\t: 0\nmodel name\t: AMD EPYC 7B13\nflags\t\t: fpu sse2 avx2 fma\n\n\
                   processor\t: 1\nmodel name\t: AMD EPYC 7B13\nflags\t\t: fpu sse2 avx2 fma\n";
        assert_eq!(
            cpu_summary(x86),
            "CPU: AMD EPYC 7B13, 2 logical cores; avx2 yes, avx512f no, fma yes, neon no"
        );
        let arm = "processor\t: 0\nFeatures\t: fp asimd evtstrm\nCPU part\t: 0xd0c\n";
        assert_eq!(
            cpu_summary(arm),
            "CPU: CPU part 0xd0c, 1 logical cores; avx2 no, avx512f no, fma no, neon yes"
        );
    }
}
