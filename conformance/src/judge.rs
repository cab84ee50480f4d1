//! Judging a vector's run: the hand-written expectations, then the golden trace.
//!
//! The [`crate::runner`] runs a vector's steps on a runtime and knows nothing of backends; a
//! [`Backend`] provides the runtime (in this process or a child) and calls the runner; this
//! module runs a vector on a backend and turns what happened into a [`CaseResult`], with the
//! per-backend known differences and the refutable guesses. So the dependencies go one way:
//! judge → backend → runner.

use std::time::Instant;

use crate::backend::Backend;
use crate::report::{CaseResult, Outcome};
use crate::spec::ProvenanceKind;
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
        result.message = Some(message);
        result.duration = start.elapsed();
        return result;
    }
    let output = backend.run(vector);
    // A recorded vector is judged by its recording (the replay's failure), not a golden trace.
    let golden = if vector.recorded { Ok(Vec::new()) } else { vector.read(TRACE_FILE) };
    let golden = golden.map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
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
    result
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
