//! Results of a conformance run, and their reports: the summary line, JUnit XML and JSON.
//!
//! A [`Report`] is what one run found, or several merged ([`merge`]): the [`RunInfo`] of each
//! run (the machine, the runtime versions, the shard, the command line) and one [`CaseResult`]
//! per backend × vector. Its JSON form ([`Report::to_json`], [`Report::from_json`]) is what
//! `nrtsim report` merges and compares and what a device bundle carries back; a case that did
//! not pass carries a [`CaseDetail`] with everything a reviewer needs to judge it without
//! running it again.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// How one vector went on one backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The trace and every expectation matched.
    Passed,
    /// Something did not match, and the vector is not listed as a known difference.
    Failed,
    /// It did not match, and the backend's expectations list it (with a reason).
    KnownDifference,
    /// It matched, but the backend's expectations list it: the list is stale.
    UnexpectedPass,
    /// A vector whose behaviour is a guess (`provenance = "guess: …"`) differs on a device:
    /// the device has refuted the simulator's guess. It fails the run, under its own name.
    GuessRefuted,
    /// The vector does not run on this backend.
    Skipped,
}

impl Outcome {
    /// Every outcome, in the order reports list them.
    pub const ALL: [Outcome; 6] = [
        Outcome::Failed,
        Outcome::GuessRefuted,
        Outcome::UnexpectedPass,
        Outcome::KnownDifference,
        Outcome::Passed,
        Outcome::Skipped,
    ];

    /// Whether this outcome fails the run.
    pub fn is_failure(self) -> bool {
        matches!(self, Outcome::Failed | Outcome::UnexpectedPass | Outcome::GuessRefuted)
    }

    /// The outcome's name in reports: `passed`, `failed`, `known_difference`,
    /// `unexpected_pass`, `guess_refuted`, `skipped`.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Passed => "passed",
            Outcome::Failed => "failed",
            Outcome::KnownDifference => "known_difference",
            Outcome::UnexpectedPass => "unexpected_pass",
            Outcome::GuessRefuted => "guess_refuted",
            Outcome::Skipped => "skipped",
        }
    }
}

/// The result of one vector on one backend.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CaseResult {
    /// `area/name`.
    pub vector: String,
    /// `sim`, `capi` or `nrt`.
    pub backend: String,
    /// What happened.
    pub outcome: Outcome,
    /// Wall time of the run.
    #[serde(rename = "seconds", with = "seconds")]
    pub duration: Duration,
    /// Why it failed (or the known reason), one line.
    pub message: Option<String>,
    /// The first differing trace line, as `line N: expected … / got …`.
    pub first_diff: Option<String>,
    /// The index in [`Report::runs`] of the run this result comes from (0 in a single run).
    #[serde(default)]
    pub run: usize,
    /// What a reviewer needs to judge a result that did not pass (none for a pass or a skip).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<Box<CaseDetail>>,
}

impl CaseResult {
    /// `backend/area/name`, the test name.
    pub fn id(&self) -> String {
        format!("{}/{}", self.backend, self.vector)
    }
}

/// Everything about a result that did not pass that a reviewer needs without running it again.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CaseDetail {
    /// The vector's `description`.
    pub description: String,
    /// The vector's `provenance` as written (`guess: …`, `fact: …`), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<String>,
    /// The hand-written expectations that failed, one per line (`step 2: expected …, got …`).
    #[serde(default)]
    pub failures: Vec<String>,
    /// The golden trace's lines, without its `#` header (empty for a recorded vector).
    #[serde(default)]
    pub expected: Vec<String>,
    /// The lines of this run's trace.
    #[serde(default)]
    pub actual: Vec<String>,
    /// The dtype of each tensor the vector's NEFF names (`input0` → `float32`), so that bytes in
    /// the trace can be shown as values.
    #[serde(default)]
    pub dtypes: BTreeMap<String, String>,
}

/// Where and how a run was made.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunInfo {
    /// The report file this run was read from, set by [`merge`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The version of the nrtsim that ran it.
    #[serde(default)]
    pub nrtsim_version: String,
    /// What `nrt_get_version` said on each backend that answers it (`nrt` → `2.23.1.0 …`).
    #[serde(default)]
    pub runtime_versions: BTreeMap<String, String>,
    /// The machine's EC2 instance type (`trn1.2xlarge`), or its product name elsewhere.
    #[serde(default)]
    pub instance_type: Option<String>,
    /// The shard this run was, when it was one.
    #[serde(default)]
    pub shard: Option<Shard>,
    /// The command line.
    #[serde(default)]
    pub command: Vec<String>,
}

impl RunInfo {
    /// This process's run: its version, command line and machine; no runtime versions yet.
    pub fn this_process(shard: Option<Shard>) -> RunInfo {
        RunInfo {
            source: None,
            nrtsim_version: env!("CARGO_PKG_VERSION").to_owned(),
            runtime_versions: BTreeMap::new(),
            instance_type: instance_type(),
            shard,
            command: std::env::args().collect(),
        }
    }
}

/// The machine's product name as the firmware gives it (an EC2 instance type on EC2), if any.
pub fn instance_type() -> Option<String> {
    let name = std::fs::read_to_string("/sys/devices/virtual/dmi/id/product_name").ok()?;
    let name = name.trim();
    (!name.is_empty()).then(|| name.to_owned())
}

/// One of `count` deterministic parts of the vectors: `index` of `count`, from 1.
///
/// A vector belongs to the shard its name's hash picks (FNV-1a of `area/name`, modulo `count`),
/// so adding a vector never moves the others between shards, and every backend of a vector runs
/// in the same shard.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Shard {
    /// Which part, 1 ..= `count`.
    pub index: u32,
    /// How many parts.
    pub count: u32,
}

/// A `--shard` that is not `K/N` with 1 ≤ K ≤ N.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("shard {given:?}: expected K/N with 1 <= K <= N, such as 2/4")]
pub struct ShardError {
    /// What was given.
    pub given: String,
}

impl std::str::FromStr for Shard {
    type Err = ShardError;

    fn from_str(text: &str) -> Result<Shard, ShardError> {
        let error = || ShardError { given: text.to_owned() };
        let (index, count) = text.split_once('/').ok_or_else(error)?;
        let index: u32 = index.trim().parse().map_err(|_| error())?;
        let count: u32 = count.trim().parse().map_err(|_| error())?;
        if index == 0 || index > count {
            return Err(error());
        }
        Ok(Shard { index, count })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Serialize for Shard {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Shard {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Shard, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl Shard {
    /// Whether the vector `area/name` is in this shard.
    pub fn contains(self, vector: &str) -> bool {
        fnv1a(vector.as_bytes()) % u64::from(self.count) == u64::from(self.index - 1)
    }
}

/// The 64-bit FNV-1a hash: small, stable across platforms and releases, and enough to spread
/// names evenly over a few shards.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Durations as seconds (a float) in JSON.
mod seconds {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(duration: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(duration.as_secs_f64())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let seconds = f64::deserialize(d)?;
        Duration::try_from_secs_f64(seconds).map_err(|_| {
            serde::de::Error::custom(format!(
                "seconds {seconds}: expected a finite, non-negative number"
            ))
        })
    }
}

/// Counts of a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    /// Passed, including known differences.
    pub passed: usize,
    /// Failed, including unexpected passes.
    pub failed: usize,
    /// Not run on that backend.
    pub skipped: usize,
}

/// Counts the results.
pub fn summarize(results: &[CaseResult]) -> Summary {
    let mut summary = Summary::default();
    for result in results {
        match result.outcome {
            Outcome::Passed | Outcome::KnownDifference => summary.passed += 1,
            Outcome::Failed | Outcome::UnexpectedPass | Outcome::GuessRefuted => {
                summary.failed += 1
            }
            Outcome::Skipped => summary.skipped += 1,
        }
    }
    summary
}

/// The closing line: `N passed, N failed` (`, N skipped` when some were).
pub fn summary_line(summary: Summary) -> String {
    let mut line = format!("{} passed, {} failed", summary.passed, summary.failed);
    if summary.skipped > 0 {
        let _ = write!(line, ", {} skipped", summary.skipped);
    }
    line
}

/// One run's or several merged runs' results.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The counts (written for readers; recomputed from the cases when read).
    #[serde(default)]
    pub summary: Summary,
    /// Each run, in the order merged; a case's [`CaseResult::run`] indexes it.
    #[serde(default)]
    pub runs: Vec<RunInfo>,
    /// One result per backend × vector.
    pub cases: Vec<CaseResult>,
}

/// A report that cannot be read, or runs that cannot be merged.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The JSON is not a report.
    #[error("{source_name}: not an nrtsim conformance report: {message}")]
    Json {
        /// The file (or what it was read from).
        source_name: String,
        /// What is wrong, with the JSON path.
        message: String,
    },
    /// A case names a run the report does not have.
    #[error("{source_name}: case {case} names run {run}, but the report has {runs} run(s)")]
    NoSuchRun {
        /// The file.
        source_name: String,
        /// The case's id.
        case: String,
        /// The run index given.
        run: usize,
        /// How many runs there are.
        runs: usize,
    },
    /// The same backend × vector on the same kind of machine twice in one report: a report holds
    /// each once, so which one counts would be a guess.
    #[error(
        "{source_name}: case {case}{} is listed twice, expected each backend × vector once per \
         machine",
        .instance.as_ref().map(|i| format!(" on {i}")).unwrap_or_default()
    )]
    DuplicateCase {
        /// The file.
        source_name: String,
        /// The case's id.
        case: String,
        /// The instance type of its run, when the run names one.
        instance: Option<String>,
    },
    /// The same backend × vector on the same kind of machine in two of the merged reports.
    #[error(
        "{case}{} is in both {first} and {second}: a merge takes each vector once per backend \
         and machine (are two shards the same, or one report given twice?)",
        .instance.as_ref().map(|i| format!(" on {i}")).unwrap_or_default()
    )]
    Duplicate {
        /// The case's id.
        case: String,
        /// The instance type of both runs.
        instance: Option<String>,
        /// The report it was first seen in.
        first: String,
        /// The report it was seen in again.
        second: String,
    },
}

impl Report {
    /// A single run's report.
    pub fn new(run: RunInfo, cases: Vec<CaseResult>) -> Report {
        let mut report = Report { summary: Summary::default(), runs: vec![run], cases };
        report.summary = summarize(&report.cases);
        report
    }

    /// The report as pretty JSON (ends with a newline).
    pub fn to_json(&self) -> String {
        let mut report = self.clone();
        report.summary = summarize(&report.cases);
        serde_json::to_string_pretty(&report).unwrap_or_default() + "\n"
    }

    /// Reads a report's JSON; `source_name` names it in errors and becomes each run's
    /// [`RunInfo::source`] where none is set. A report written before runs were recorded gets
    /// one run that says nothing.
    ///
    /// # Errors
    /// [`ReportError::Json`] with the JSON path of the problem,
    /// [`ReportError::NoSuchRun`] for a case whose run index is out of range, or
    /// [`ReportError::DuplicateCase`] for a backend × vector listed twice for one kind of
    /// machine.
    pub fn from_json(text: &str, source_name: &str) -> Result<Report, ReportError> {
        let mut deserializer = serde_json::Deserializer::from_str(text);
        let mut report: Report =
            serde_path_to_error::deserialize(&mut deserializer).map_err(|e| ReportError::Json {
                source_name: source_name.to_owned(),
                message: e.to_string(),
            })?;
        if report.runs.is_empty() {
            report.runs.push(RunInfo::default());
        }
        for run in &mut report.runs {
            run.source.get_or_insert_with(|| source_name.to_owned());
        }
        if let Some(case) = report.cases.iter().find(|c| c.run >= report.runs.len()) {
            return Err(ReportError::NoSuchRun {
                source_name: source_name.to_owned(),
                case: case.id(),
                run: case.run,
                runs: report.runs.len(),
            });
        }
        // Read twice, a case would count twice, `diff` would compare it with itself and `merge`
        // would call the file a duplicate of itself: the report is refused instead.
        let mut seen = BTreeSet::new();
        for case in &report.cases {
            let key = report.key(case);
            if seen.contains(&key) {
                return Err(ReportError::DuplicateCase {
                    source_name: source_name.to_owned(),
                    case: case.id(),
                    instance: key.2,
                });
            }
            seen.insert(key);
        }
        report.summary = summarize(&report.cases);
        Ok(report)
    }

    /// The run a case comes from.
    pub fn run_of(&self, case: &CaseResult) -> Option<&RunInfo> {
        self.runs.get(case.run)
    }

    /// The key a case is merged and compared by: backend, vector and the machine it ran on.
    fn key(&self, case: &CaseResult) -> (String, String, Option<String>) {
        let instance = self.run_of(case).and_then(|r| r.instance_type.clone());
        (case.backend.clone(), case.vector.clone(), instance)
    }
}

/// Merges reports (of shards, or of several machines) into one: every run kept, every case
/// once, in the order one unsharded run would list them (backends in the order first seen,
/// vectors by name within each).
///
/// # Errors
/// [`ReportError::Duplicate`] naming both sources when a backend × vector on the same instance
/// type is in two reports.
pub fn merge(reports: Vec<Report>) -> Result<Report, ReportError> {
    let mut merged = Report::default();
    let mut seen: BTreeMap<(String, String, Option<String>), String> = BTreeMap::new();
    let mut backends: Vec<String> = Vec::new();
    for report in reports {
        let offset = merged.runs.len();
        for case in &report.cases {
            let key = report.key(case);
            let source = report
                .run_of(case)
                .and_then(|r| r.source.clone())
                .unwrap_or_else(|| "a report".to_owned());
            if let Some(first) = seen.get(&key) {
                return Err(ReportError::Duplicate {
                    case: case.id(),
                    instance: key.2,
                    first: first.clone(),
                    second: source,
                });
            }
            seen.insert(key, source);
            if !backends.contains(&case.backend) {
                backends.push(case.backend.clone());
            }
        }
        merged.runs.extend(report.runs);
        merged.cases.extend(
            report.cases.into_iter().map(|case| CaseResult { run: case.run + offset, ..case }),
        );
    }
    let rank = |backend: &str| backends.iter().position(|b| b == backend).unwrap_or(usize::MAX);
    merged.cases.sort_by(|a, b| {
        (rank(&a.backend), &a.vector, a.run).cmp(&(rank(&b.backend), &b.vector, b.run))
    });
    merged.summary = summarize(&merged.cases);
    Ok(merged)
}

/// A case whose outcome differs between two reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutcomeChange {
    /// `backend/area/name`, with ` on <instance>` when the run names one.
    pub case: String,
    /// The outcome in the old report; `None` when the case is new.
    pub old: Option<Outcome>,
    /// The outcome in the new report; `None` when the case is gone.
    pub new: Option<Outcome>,
}

impl std::fmt::Display for OutcomeChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = |o: Option<Outcome>| o.map_or("(absent)", Outcome::name);
        write!(f, "{}: {} -> {}", self.case, name(self.old), name(self.new))
    }
}

/// The cases whose outcome changed from `old` to `new`, including cases only one of them has,
/// in `new`'s order (then the removed ones in `old`'s).
pub fn diff(old: &Report, new: &Report) -> Vec<OutcomeChange> {
    let label = |report: &Report, case: &CaseResult| {
        let key = report.key(case);
        match key.2 {
            Some(instance) => format!("{} on {instance}", case.id()),
            None => case.id(),
        }
    };
    let old_by_key: BTreeMap<_, _> = old.cases.iter().map(|c| (old.key(c), c)).collect();
    let new_by_key: BTreeMap<_, _> = new.cases.iter().map(|c| (new.key(c), c)).collect();
    let mut changes = Vec::new();
    for case in &new.cases {
        let before = old_by_key.get(&new.key(case)).map(|c| c.outcome);
        if before != Some(case.outcome) {
            changes.push(OutcomeChange {
                case: label(new, case),
                old: before,
                new: Some(case.outcome),
            });
        }
    }
    for case in &old.cases {
        if !new_by_key.contains_key(&old.key(case)) {
            changes.push(OutcomeChange {
                case: label(old, case),
                old: Some(case.outcome),
                new: None,
            });
        }
    }
    changes
}

/// The results as JUnit XML, one `testsuite` per backend.
pub fn to_junit(results: &[CaseResult]) -> String {
    let mut backends: Vec<&str> = results.iter().map(|r| r.backend.as_str()).collect();
    backends.dedup();
    backends.sort_unstable();
    backends.dedup();
    let mut xml = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"nrtsim conformance\">\n",
    );
    for backend in backends {
        let cases: Vec<&CaseResult> = results.iter().filter(|r| r.backend == backend).collect();
        let summary = summarize(&cases.iter().map(|&c| c.clone()).collect::<Vec<_>>());
        let seconds: f64 = cases.iter().map(|c| c.duration.as_secs_f64()).sum();
        let _ = writeln!(
            xml,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" skipped=\"{}\" time=\"{seconds:.3}\">",
            escape(backend),
            cases.len(),
            summary.failed,
            summary.skipped
        );
        for case in cases {
            let _ = write!(
                xml,
                "    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3}\"",
                escape(backend),
                escape(&case.vector),
                case.duration.as_secs_f64()
            );
            let detail = [case.message.as_deref(), case.first_diff.as_deref()]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join("\n");
            match case.outcome {
                Outcome::Passed | Outcome::KnownDifference => xml.push_str("/>\n"),
                Outcome::Skipped => xml.push_str("><skipped/></testcase>\n"),
                Outcome::Failed | Outcome::UnexpectedPass | Outcome::GuessRefuted => {
                    let _ = writeln!(
                        xml,
                        "><failure message=\"{}\">{}</failure></testcase>",
                        escape(case.message.as_deref().unwrap_or("failed")),
                        escape(&detail)
                    );
                }
            }
        }
        xml.push_str("  </testsuite>\n");
    }
    xml.push_str("</testsuites>\n");
    xml
}

fn escape(text: &str) -> String {
    escape_markup(text)
}

/// Escapes text for XML and HTML content and attribute values: `& < > " '` as entities, and
/// every character XML 1.0 does not allow in a document at all (control characters other than
/// tab, newline and carriage return, U+FFFE, U+FFFF) as its Rust escape text, `\u{1b}`.
///
/// XML has no way to carry those characters, not even as a numeric reference (`&#27;` is
/// refused by a conforming parser), so they are spelled out for the reader instead of dropped.
pub(crate) fn escape_markup(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if c < ' ' || c == '\u{fffe}' || c == '\u{ffff}' => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(vector: &str, backend: &str, outcome: Outcome) -> CaseResult {
        CaseResult {
            vector: vector.to_owned(),
            backend: backend.to_owned(),
            outcome,
            duration: Duration::from_millis(5),
            message: (outcome == Outcome::Failed)
                .then(|| "trace differs <here> & \"there\"".to_owned()),
            first_diff: None,
            run: 0,
            detail: None,
        }
    }

    fn run(source: &str, instance: Option<&str>, shard: Option<&str>) -> RunInfo {
        RunInfo {
            source: Some(source.to_owned()),
            instance_type: instance.map(str::to_owned),
            shard: shard.map(|s| s.parse().expect("a shard")),
            ..RunInfo::default()
        }
    }

    #[test]
    fn the_summary_counts_known_differences_as_passed_and_stale_lists_as_failed() {
        let results = [
            result("a/x", "sim", Outcome::Passed),
            result("a/y", "sim", Outcome::Failed),
            result("a/x", "capi", Outcome::KnownDifference),
            result("a/y", "capi", Outcome::UnexpectedPass),
            result("a/z", "capi", Outcome::Skipped),
        ];
        let summary = summarize(&results);
        assert_eq!(summary, Summary { passed: 2, failed: 2, skipped: 1 });
        assert_eq!(summary_line(summary), "2 passed, 2 failed, 1 skipped");
        assert_eq!(
            summary_line(Summary { passed: 3, failed: 0, skipped: 0 }),
            "3 passed, 0 failed"
        );
    }

    #[test]
    fn junit_escapes_and_counts_per_backend() {
        let results =
            [result("a/x", "sim", Outcome::Passed), result("a/y", "sim", Outcome::Failed)];
        let xml = to_junit(&results);
        assert!(
            xml.contains("<testsuite name=\"sim\" tests=\"2\" failures=\"1\" skipped=\"0\""),
            "{xml}"
        );
        assert!(
            xml.contains("message=\"trace differs &lt;here&gt; &amp; &quot;there&quot;\""),
            "{xml}"
        );
    }

    #[test]
    fn junit_is_well_formed_xml_whatever_the_messages_hold() {
        // The parser is a strict one: it refuses the numeric reference the writer once made.
        assert!(roxmltree::Document::parse("<a>&#27;</a>").is_err());
        let mut failed = result("a/\u{1}y", "sim", Outcome::Failed);
        failed.message =
            Some("colour \u{1b}[31mred\u{1b}[0m, nul \0, bell \u{7} & <tag>".to_owned());
        failed.first_diff = Some("line 1: \u{fffe}\u{ffff} tab\there\nnext \u{1f600}".to_owned());
        let xml = to_junit(&[result("a/x", "sim", Outcome::Passed), failed]);
        let document = roxmltree::Document::parse(&xml).unwrap_or_else(|e| panic!("{e}: {xml}"));
        let failure = document
            .descendants()
            .find(|node| node.has_tag_name("failure"))
            .expect("a failure element");
        assert_eq!(
            failure.attribute("message"),
            Some("colour \\u{1b}[31mred\\u{1b}[0m, nul \\u{0}, bell \\u{7} & <tag>")
        );
        let text = failure.text().expect("the failure's detail");
        assert!(text.ends_with("line 1: \\u{fffe}\\u{ffff} tab\there\nnext \u{1f600}"), "{text:?}");
        let case = failure.parent().expect("its testcase");
        assert_eq!(case.attribute("name"), Some("a/\\u{1}y"));
    }

    #[test]
    fn the_json_report_has_the_documented_shape_and_reads_back() {
        let mut failed = result("a/y", "sim", Outcome::GuessRefuted);
        failed.first_diff = Some("line 2: expected `a`, got `b`".to_owned());
        failed.detail = Some(Box::new(CaseDetail {
            description: "d".to_owned(),
            provenance: Some("guess: g".to_owned()),
            failures: vec!["step 1: no".to_owned()],
            expected: vec!["a".to_owned()],
            actual: vec!["b".to_owned()],
            dtypes: [("input0".to_owned(), "float32".to_owned())].into(),
        }));
        let report = Report::new(
            run("r.json", Some("trn1.2xlarge"), Some("2/3")),
            vec![result("a/x", "sim", Outcome::Passed), failed],
        );
        let json = report.to_json();
        let value: serde_json::Value = serde_json::from_str(&json).expect("JSON");
        assert_eq!(value["summary"], serde_json::json!({"passed": 1, "failed": 1, "skipped": 0}));
        assert_eq!(value["runs"][0]["shard"], "2/3");
        assert_eq!(value["runs"][0]["instance_type"], "trn1.2xlarge");
        assert_eq!(value["cases"][0]["outcome"], "passed");
        assert_eq!(value["cases"][0]["seconds"], 0.005);
        assert!(value["cases"][0].get("detail").is_none(), "a pass has no detail: {json}");
        assert_eq!(value["cases"][1]["outcome"], "guess_refuted");
        assert_eq!(value["cases"][1]["detail"]["dtypes"]["input0"], "float32");
        assert_eq!(value["cases"][1]["detail"]["actual"][0], "b");
        assert_eq!(Report::from_json(&json, "other.json").expect("reads back"), report);
    }

    #[test]
    fn a_report_that_is_not_one_is_a_typed_error_naming_the_field() {
        let error = Report::from_json("{\"cases\": [{\"vector\": 3}]}", "bad.json")
            .expect_err("a number is not a vector name");
        let text = error.to_string();
        assert!(text.starts_with("bad.json: not an nrtsim conformance report"), "{text}");
        assert!(text.contains("cases[0].vector"), "{text}");
        let outcome = r#"{"cases": [{"vector": "a/x", "backend": "sim", "outcome": "fine",
            "seconds": 1, "message": null, "first_diff": null}]}"#;
        let text = Report::from_json(outcome, "o.json").expect_err("unknown outcome").to_string();
        assert!(text.contains("cases[0].outcome") && text.contains("fine"), "{text}");
        let negative = outcome.replace("\"fine\"", "\"passed\"").replace("1,", "-1,");
        let text = Report::from_json(&negative, "n.json").expect_err("negative").to_string();
        assert!(text.contains("non-negative"), "{text}");
        let far = outcome.replace("\"fine\"", "\"passed\"").replace("null}", "null, \"run\": 4}");
        let error = Report::from_json(&far, "f.json").expect_err("no such run");
        assert_eq!(
            error.to_string(),
            "f.json: case sim/a/x names run 4, but the report has 1 run(s)"
        );
        // A report from before runs were recorded reads as one run from its file.
        let old = Report::from_json(&outcome.replace("\"fine\"", "\"passed\""), "old.json")
            .expect("an old report");
        assert_eq!(old.runs[0].source.as_deref(), Some("old.json"));
    }

    #[test]
    fn shards_parse_and_split_the_vectors_by_name_not_by_position() {
        assert_eq!("2/4".parse::<Shard>(), Ok(Shard { index: 2, count: 4 }));
        for bad in ["0/4", "5/4", "4", "a/b", "1/0", ""] {
            let error = bad.parse::<Shard>().expect_err(bad);
            assert_eq!(
                error.to_string(),
                format!("shard {bad:?}: expected K/N with 1 <= K <= N, such as 2/4")
            );
        }
        // FNV-1a's published test values: the empty string and "a".
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        let names: Vec<String> = (0..200).map(|i| format!("area/vector_{i}")).collect();
        let shards: Vec<Shard> = (1..=3).map(|index| Shard { index, count: 3 }).collect();
        for name in &names {
            let holders = shards.iter().filter(|s| s.contains(name)).count();
            assert_eq!(holders, 1, "{name} is in exactly one shard");
        }
        for shard in &shards {
            let size = names.iter().filter(|n| shard.contains(n)).count();
            assert!((40..=95).contains(&size), "shard {shard} holds {size} of 200");
        }
        assert!(Shard { index: 1, count: 1 }.contains("any/name"));
    }

    #[test]
    fn merged_shards_are_one_run_in_vector_order_and_duplicates_name_both_files() {
        let mut a = Report::new(
            run("a.json", None, Some("1/2")),
            vec![result("x/b", "sim", Outcome::Passed), result("x/b", "capi", Outcome::Failed)],
        );
        let b = Report::new(
            run("b.json", None, Some("2/2")),
            vec![
                result("x/a", "sim", Outcome::Passed),
                result("x/c", "sim", Outcome::Skipped),
                result("x/a", "capi", Outcome::Passed),
            ],
        );
        let merged = merge(vec![a.clone(), b.clone()]).expect("disjoint shards merge");
        let order: Vec<(String, usize)> = merged.cases.iter().map(|c| (c.id(), c.run)).collect();
        assert_eq!(
            order,
            [
                ("sim/x/a".to_owned(), 1),
                ("sim/x/b".to_owned(), 0),
                ("sim/x/c".to_owned(), 1),
                ("capi/x/a".to_owned(), 1),
                ("capi/x/b".to_owned(), 0),
            ]
        );
        assert_eq!(merged.runs.len(), 2);
        assert_eq!(merged.summary, Summary { passed: 3, failed: 1, skipped: 1 });
        let error = merge(vec![b.clone(), a.clone(), b.clone()]).expect_err("b twice");
        assert_eq!(
            error.to_string(),
            "sim/x/a is in both b.json and b.json: a merge takes each vector once per backend and \
             machine (are two shards the same, or one report given twice?)"
        );
        // The same vectors on two kinds of instance are two results, not a duplicate.
        a.runs[0].instance_type = Some("trn1.2xlarge".to_owned());
        let mut a2 = a.clone();
        a2.runs[0].instance_type = Some("trn2.48xlarge".to_owned());
        a2.runs[0].source = Some("a2.json".to_owned());
        assert_eq!(merge(vec![a.clone(), a2]).expect("two machines").cases.len(), 4);
        let mut same = a.clone();
        same.runs[0].source = Some("again.json".to_owned());
        let error = merge(vec![a, same]).expect_err("same machine");
        assert!(
            error.to_string().contains("sim/x/b on trn1.2xlarge is in both a.json and again.json"),
            "{error}"
        );
    }

    #[test]
    fn a_diff_lists_changed_new_and_gone_cases() {
        let old = Report::new(
            run("old.json", None, None),
            vec![
                result("x/a", "sim", Outcome::Passed),
                result("x/b", "sim", Outcome::Passed),
                result("x/gone", "sim", Outcome::Passed),
            ],
        );
        let new = Report::new(
            run("new.json", None, None),
            vec![
                result("x/a", "sim", Outcome::Passed),
                result("x/b", "sim", Outcome::Failed),
                result("x/new", "sim", Outcome::Skipped),
            ],
        );
        let lines: Vec<String> = diff(&old, &new).iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            [
                "sim/x/b: passed -> failed",
                "sim/x/new: (absent) -> skipped",
                "sim/x/gone: passed -> (absent)",
            ]
        );
        assert!(diff(&old, &old).is_empty());
    }

    #[test]
    fn a_report_holding_a_case_twice_is_refused_naming_it() {
        let twice = Report::new(
            run("r.json", None, None),
            vec![
                result("x/a", "sim", Outcome::Passed),
                result("x/b", "sim", Outcome::Passed),
                result("x/a", "sim", Outcome::Failed),
            ],
        );
        let error = Report::from_json(&twice.to_json(), "twice.json").expect_err("x/a twice");
        assert!(
            matches!(&error, ReportError::DuplicateCase { case, .. } if case == "sim/x/a"),
            "{error:?}"
        );
        assert_eq!(
            error.to_string(),
            "twice.json: case sim/x/a is listed twice, expected each backend × vector once per \
             machine"
        );
        // The same vector from two machines of one merged report is two cases, not one twice.
        let mut two_machines = twice.clone();
        two_machines.cases.remove(1);
        two_machines.runs = vec![
            run("a.json", Some("trn1.2xlarge"), None),
            run("b.json", Some("trn2.48xlarge"), None),
        ];
        two_machines.cases[1].run = 1;
        let read = Report::from_json(&two_machines.to_json(), "m.json").expect("two machines");
        assert_eq!(read.cases.len(), 2);
        // So the same machine twice is refused, naming it.
        two_machines.runs[1].instance_type = Some("trn1.2xlarge".to_owned());
        let error = Report::from_json(&two_machines.to_json(), "m.json").expect_err("one machine");
        assert!(
            error.to_string().contains("case sim/x/a on trn1.2xlarge is listed twice"),
            "{error}"
        );
    }
}
