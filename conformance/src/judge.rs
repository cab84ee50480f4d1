//! Judging a vector's run: the hand-written expectations, then the golden trace.
//!
//! The [`crate::runner`] runs a vector's steps on a runtime and knows nothing of backends; a
//! [`Backend`] provides the runtime (in this process or a child) and calls the runner; this
//! module runs a vector on a backend and turns what happened into a [`CaseResult`], with the
//! per-backend known differences and the refutable guesses. So the dependencies go one way:
//! judge → backend → runner.

use std::time::Instant;

use crate::backend::Backend;
use crate::report::{CaseDetail, CaseResult, Outcome};
use crate::spec::{Provenance, ProvenanceKind};
use crate::vector::{TRACE_FILE, TRACE_HEADER, Vector};

/// How a run is judged.
#[derive(Clone, Copy, Debug)]
pub struct JudgeOptions {
    /// Compare the trace with the golden `expected.trace` (default true). Off, only the
    /// hand-written expectations judge the run: how much they catch alone is measured this way.
    pub compare_trace: bool,
}

impl Default for JudgeOptions {
    fn default() -> JudgeOptions {
        JudgeOptions { compare_trace: true }
    }
}

/// Runs `vector` on `backend` and judges it against the golden trace and the expectations.
pub fn judge(vector: &Vector, backend: &dyn Backend, known_reason: Option<&str>) -> CaseResult {
    judge_with(vector, backend, known_reason, JudgeOptions::default())
}

/// The backend that is a real device, where a guessed behaviour can be refuted.
pub const DEVICE_BACKEND: &str = "nrt";

/// [`judge`] with options.
pub fn judge_with(
    vector: &Vector,
    backend: &dyn Backend,
    known_reason: Option<&str>,
    options: JudgeOptions,
) -> CaseResult {
    let start = Instant::now();
    let mut result = CaseResult {
        vector: vector.name.clone(),
        backend: backend.name().to_owned(),
        outcome: Outcome::Skipped,
        duration: Default::default(),
        message: None,
        first_diff: None,
        run: 0,
        detail: None,
    };
    if !vector.runs_on(backend.name()) {
        return result;
    }
    // A generated input that no longer matches its hand-written source would test something
    // other than what case.toml says: refuse to run it, whatever the expectations list says.
    let stale = match crate::vector::stale_inputs(vector) {
        Ok(stale) if stale.is_empty() => None,
        Ok(stale) => Some(format!(
            "stale generated input{} {} (the hand-written files changed since they were \
             generated): run `cargo xtask vectors --bless` and review the diff",
            if stale.len() == 1 { "" } else { "s" },
            stale.iter().map(|f| format!("{}/{f}", vector.name)).collect::<Vec<_>>().join(", ")
        )),
        Err(error) => Some(format!("cannot generate the inputs: {error}")),
    };
    if let Some(message) = stale {
        result.outcome = Outcome::Failed;
        result.detail = Some(Box::new(detail(vector, &[], &[], std::slice::from_ref(&message))));
        result.message = Some(message);
        result.duration = start.elapsed();
        return result;
    }
    let output = backend.run(vector);
    // A recorded vector is judged by its recording (the replay's failure), not a golden trace.
    let golden = if vector.recorded { Ok(Vec::new()) } else { vector.read(TRACE_FILE) };
    let golden = golden.map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
    let expected_lines: Vec<String> = match &golden {
        Ok(text) => text.lines().filter(|l| !l.starts_with('#')).map(str::to_owned).collect(),
        Err(_) => Vec::new(),
    };
    let (message, first_diff) = match (&output.failure, golden) {
        (Some(failure), _) => (Some(failure.clone()), None),
        (None, Err(error)) => {
            (Some(format!("no golden trace: {error} (run `cargo xtask vectors --bless`)")), None)
        }
        (None, _) if !options.compare_trace || vector.recorded => (None, None),
        (None, Ok(golden)) => match first_difference(&golden, &output.trace) {
            Some(diff) => (Some("trace differs from expected.trace".to_owned()), Some(diff)),
            None => (None, None),
        },
    };
    result.duration = start.elapsed();
    let guess = vector.case.provenance.as_ref().filter(|p| p.kind == ProvenanceKind::Guess);
    let refutable = backend.name() == DEVICE_BACKEND && guess.is_some();
    result.outcome = match (message.is_some(), known_reason) {
        (false, None) => Outcome::Passed,
        (true, None) if refutable => Outcome::GuessRefuted,
        (true, None) => Outcome::Failed,
        (true, Some(_)) => Outcome::KnownDifference,
        (false, Some(_)) => Outcome::UnexpectedPass,
    };
    result.message = match result.outcome {
        Outcome::KnownDifference => known_reason.map(|r| format!("known difference: {r}")),
        Outcome::GuessRefuted => Some(format!(
            "guess refuted: the device differs from what the simulator guessed ({}): {}; pin \
             the device's behaviour in the vector and move it out of vectors/GUESSES.md",
            guess.map_or("", |p| p.note.as_str()),
            message.unwrap_or_default()
        )),
        Outcome::UnexpectedPass => Some(format!(
            "passes, but vectors/expectations/{}.toml lists it as a known difference: remove the entry",
            backend.name()
        )),
        _ => message,
    };
    result.first_diff = first_diff;
    if result.outcome != Outcome::Passed {
        let failures: Vec<String> = match &output.failure {
            Some(failure) => failure.lines().map(str::to_owned).collect(),
            None => Vec::new(),
        };
        result.detail = Some(Box::new(detail(vector, &expected_lines, &output.trace, &failures)));
    }
    result
}

/// The detail of a result that did not pass: the vector's own words, both traces, and the dtype
/// of every tensor its NEFF declares.
fn detail(
    vector: &Vector,
    expected: &[String],
    actual: &[String],
    failures: &[String],
) -> CaseDetail {
    let case = &vector.case;
    let dtypes = case
        .neff
        .iter()
        .flat_map(|neff| neff.inputs.iter().chain(&neff.outputs))
        .map(|tensor| (tensor.name.clone(), tensor.dtype.0.name().to_owned()))
        .collect();
    CaseDetail {
        description: case.description.clone(),
        provenance: case.provenance.as_ref().map(Provenance::to_text),
        failures: failures.to_vec(),
        expected: expected.to_vec(),
        actual: actual.to_vec(),
        dtypes,
    }
}

/// The golden trace text for a run's lines.
pub fn golden_text(lines: &[String]) -> String {
    let mut text = String::from(TRACE_HEADER);
    text.push('\n');
    for line in lines {
        text.push_str(line);
        text.push('\n');
    }
    text
}

/// The first line where `golden` and `lines` differ, as `line N: expected … / got …`.
pub fn first_difference(golden: &str, lines: &[String]) -> Option<String> {
    let expected: Vec<&str> = golden.lines().filter(|l| !l.starts_with('#')).collect();
    let longest = expected.len().max(lines.len());
    (0..longest).find_map(|i| {
        let want = expected.get(i).copied();
        let got = lines.get(i).map(String::as_str);
        (want != got).then(|| {
            format!(
                "line {}: expected `{}`, got `{}`",
                i + 1,
                want.unwrap_or("<end of trace>"),
                got.unwrap_or("<end of trace>")
            )
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::RunOutput;

    /// A backend that runs nothing and answers with a fixed output.
    struct Fixed(RunOutput);

    impl Backend for Fixed {
        fn name(&self) -> &'static str {
            "sim"
        }

        fn run(&self, _: &Vector) -> RunOutput {
            RunOutput { trace: self.0.trace.clone(), failure: self.0.failure.clone() }
        }
    }

    /// A small committed vector and its golden trace lines.
    fn vector() -> (Vector, Vec<String>) {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../vectors");
        let vector = crate::vector::discover(&root)
            .expect("the vectors are discovered")
            .into_iter()
            .find(|v| v.name == "lifecycle/init_twice_is_invalid")
            .expect("the vector is committed");
        let golden = String::from_utf8(vector.read(TRACE_FILE).expect("its golden trace"))
            .expect("a text trace");
        let lines = golden.lines().filter(|l| !l.starts_with('#')).map(str::to_owned).collect();
        (vector, lines)
    }

    fn outcome(vector: &Vector, trace: Vec<String>, known: Option<&str>) -> CaseResult {
        judge(vector, &Fixed(RunOutput { trace, failure: None }), known)
    }

    #[test]
    fn a_run_is_judged_by_its_whole_trace_and_the_known_differences() {
        let (vector, golden) = vector();
        assert!(!golden.is_empty(), "the vector's golden trace has lines");
        assert_eq!(outcome(&vector, golden.clone(), None).outcome, Outcome::Passed);
        // A listed known difference that passes is stale.
        let stale = outcome(&vector, golden.clone(), Some("a reason"));
        assert_eq!(stale.outcome, Outcome::UnexpectedPass);
        let differs = outcome(&vector, Vec::new(), Some("a reason"));
        assert_eq!(differs.outcome, Outcome::KnownDifference);
        // An empty trace, one line short and one line extra all differ from the golden trace.
        let mut short = golden.clone();
        short.pop();
        let mut long = golden.clone();
        long.push("execute(m) -> 0".to_owned());
        for trace in [Vec::new(), short, long] {
            let result = outcome(&vector, trace.clone(), None);
            assert_eq!(result.outcome, Outcome::Failed, "{trace:?}");
            assert_eq!(result.message.as_deref(), Some("trace differs from expected.trace"));
        }
        // A result that did not pass carries what a reviewer needs; a pass carries nothing.
        assert_eq!(outcome(&vector, golden.clone(), None).detail, None);
        let detail = outcome(&vector, vec!["x".to_owned()], None).detail.expect("a detail");
        assert_eq!(detail.description, vector.case.description);
        assert!(detail.provenance.as_deref().is_some_and(|p| p.starts_with("guess: ")));
        assert_eq!(
            (detail.expected.clone(), detail.actual.clone()),
            (golden.clone(), owned(&["x"]))
        );
        // Without the trace comparison only the expectations judge.
        let lenient = JudgeOptions { compare_trace: false };
        let fixed = Fixed(RunOutput { trace: Vec::new(), failure: None });
        assert_eq!(judge_with(&vector, &fixed, None, lenient).outcome, Outcome::Passed);
        let failing = Fixed(RunOutput { trace: golden, failure: Some("step 1: no".to_owned()) });
        let result = judge(&vector, &failing, None);
        assert_eq!(
            (result.outcome, result.message.as_deref()),
            (Outcome::Failed, Some("step 1: no"))
        );
        assert_eq!(result.detail.expect("a detail").failures, ["step 1: no"]);
    }

    fn owned(lines: &[&str]) -> Vec<String> {
        lines.iter().map(|&l| l.to_owned()).collect()
    }

    #[test]
    fn a_failure_names_the_dtype_of_every_tensor_of_its_neff() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../vectors");
        let vector = crate::vector::discover(&root)
            .expect("the vectors are discovered")
            .into_iter()
            .find(|v| v.name == "numerics/binding_tolerates_1003_and_returns_outputs")
            .expect("the vector is committed");
        let detail = outcome(&vector, Vec::new(), None).detail.expect("a detail");
        let dtypes: Vec<(&str, &str)> =
            detail.dtypes.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(dtypes, [("input0", "float32"), ("output0", "float32")]);
    }

    #[test]
    fn an_equal_trace_has_no_difference() {
        let lines = owned(&["== step 1: execute", "execute(m) -> 0"]);
        assert_eq!(first_difference(&golden_text(&lines), &lines), None);
    }

    #[test]
    fn extra_lines_after_the_golden_trace_are_a_difference() {
        // An injected bug: the comparison once stopped at the end of expected.trace.
        let golden = golden_text(&owned(&["== step 1: execute", "execute(m) -> 0"]));
        let run = owned(&["== step 1: execute", "execute(m) -> 0", "execute(m) -> 0"]);
        assert_eq!(
            first_difference(&golden, &run).as_deref(),
            Some("line 3: expected `<end of trace>`, got `execute(m) -> 0`")
        );
    }

    #[test]
    fn a_run_that_ends_early_is_a_difference() {
        let golden = golden_text(&owned(&["== step 1: execute", "execute(m) -> 0"]));
        let run = owned(&["== step 1: execute"]);
        assert_eq!(
            first_difference(&golden, &run).as_deref(),
            Some("line 2: expected `execute(m) -> 0`, got `<end of trace>`")
        );
        assert_eq!(
            first_difference(&golden, &[]).as_deref(),
            Some("line 1: expected `== step 1: execute`, got `<end of trace>`")
        );
    }

    #[test]
    fn step_markers_and_the_header_are_compared_as_lines() {
        // Only `#` lines (the header) are left out of the comparison: a step marker is a line.
        let golden = golden_text(&owned(&["== step 1: execute", "x"]));
        assert!(golden.starts_with('#'), "the header is a comment");
        assert_eq!(
            first_difference(&golden, &owned(&["x"])).as_deref(),
            Some("line 1: expected `== step 1: execute`, got `x`")
        );
    }
}
