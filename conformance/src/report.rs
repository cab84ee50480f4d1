//! Results of a conformance run, and their reports: the summary line, JUnit XML and JSON.

use std::fmt::Write as _;
use std::time::Duration;

use serde_json::json;

/// How one vector went on one backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
    /// Whether this outcome fails the run.
    pub fn is_failure(self) -> bool {
        matches!(self, Outcome::Failed | Outcome::UnexpectedPass | Outcome::GuessRefuted)
    }

    fn name(self) -> &'static str {
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
#[derive(Clone, Debug)]
pub struct CaseResult {
    /// `area/name`.
    pub vector: String,
    /// `sim`, `capi` or `nrt`.
    pub backend: String,
    /// What happened.
    pub outcome: Outcome,
    /// Wall time of the run.
    pub duration: Duration,
    /// Why it failed (or the known reason), one line.
    pub message: Option<String>,
    /// The first differing trace line, as `line N: expected … / got …`.
    pub first_diff: Option<String>,
}

impl CaseResult {
    /// `backend/area/name`, the test name.
    pub fn id(&self) -> String {
        format!("{}/{}", self.backend, self.vector)
    }
}

/// Counts of a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
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

/// The results as one JSON document.
pub fn to_json(results: &[CaseResult]) -> String {
    let cases: Vec<_> = results
        .iter()
        .map(|r| {
            json!({
                "vector": r.vector,
                "backend": r.backend,
                "outcome": r.outcome.name(),
                "seconds": r.duration.as_secs_f64(),
                "message": r.message,
                "first_diff": r.first_diff,
            })
        })
        .collect();
    let summary = summarize(results);
    let document = json!({
        "summary": { "passed": summary.passed, "failed": summary.failed, "skipped": summary.skipped },
        "cases": cases,
    });
    serde_json::to_string_pretty(&document).unwrap_or_default() + "\n"
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
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => {
                let _ = write!(out, "&#{};", c as u32);
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
        let json = to_json(&results);
        assert!(json.contains("\"outcome\": \"failed\""), "{json}");
    }
}
