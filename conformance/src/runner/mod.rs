//! Runs one vector on one backend and compares what happened with what was expected.
//!
//! Every runtime call goes through a [`TracingRuntime`] over the backend, and binding-level steps
//! use `bind` over that same traced runtime with the trace switched on, so the trace holds
//! every call with its normalised arguments and status plus the layer's binding, aliasing and
//! validation events. Before each step the runner writes a `== step N: call` marker, so a golden
//! trace reads as a story a reviewer can follow.
//!
//! Two kinds of checks, kept apart: the hand-written expectations of `case.toml` (statuses, error
//! kinds and messages, output values, shared storage) are checked as the steps run, and the whole
//! trace is compared with the golden `expected.trace` afterwards. A failed expectation stops the
//! vector (later steps would only report its consequences).

mod binding;
mod collectives;
mod folder;
mod info;
mod libnrt;
mod lifecycle;
mod nrta;
mod profile;
mod sys_trace;
mod tensors;
mod values;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use abi::runtime::prelude::*;
use abi::runtime::{Framework, ModelId, SetId, SharedBuffer, TensorId};
use abi::status::NrtStatus;
use abi::trace::{Trace, TracingRuntime, format_bytes};
use bind::{HostTensor, Model};

use crate::spec::{Status, Step, TraceExpectation, for_each_step};
use crate::vector::{NEFF_FILE, Vector};

/// What a run produced; defined with the child-process harness that carries it between
/// processes, so the runner and every child share one definition.
pub use sim::child::RunOutput;

/// Runs `vector` on a fresh, uninitialised `runtime` in this process.
pub fn run_on(vector: &Vector, runtime: Arc<dyn Runtime>) -> RunOutput {
    run_on_target(vector, runtime, None)
}

/// As [`run_on`], but with `device_target` the vector's `model.neff` is replaced by its device
/// NEFF for that target ([`crate::device::device_neff`]), as the `nrt` backend does; the trace
/// shows the `model.neff` argument, so it stays comparable with the golden one.
pub fn run_on_target(
    vector: &Vector,
    runtime: Arc<dyn Runtime>,
    device_target: Option<&str>,
) -> RunOutput {
    let trace = Arc::new(Trace::new());
    let traced: Arc<dyn Runtime> = Arc::new(TracingRuntime::new(runtime.clone(), trace.clone()));
    let mut context = Context {
        vector,
        raw: runtime.clone(),
        runtime: traced,
        trace: trace.clone(),
        tensors: BTreeMap::new(),
        sets: BTreeMap::new(),
        addresses: BTreeMap::new(),
        models: BTreeMap::new(),
        bind_models: BTreeMap::new(),
        outputs: BTreeMap::new(),
        buffers: Vec::new(),
        device_target: device_target.map(str::to_owned),
        substituted: std::cell::RefCell::new(Vec::new()),
        requests: AsyncLabels::default(),
        folder: folder::RunFolder::default(),
    };
    let mut failure = None;
    if vector.case.auto_init.unwrap_or(true) {
        if let Err(error) = context.runtime.init(Framework::NoFw, "", "") {
            failure = Some(format!("init failed: {error}"));
        }
    }
    if failure.is_none() {
        for (index, step) in vector.case.steps.iter().enumerate() {
            context.settle();
            trace.record(format!("== step {}: {}", index + 1, step.call()));
            if let Err(message) = context.step(step) {
                failure = Some(format!("step {} ({}): {message}", index + 1, step.call()));
                break;
            }
        }
    }
    // Models and tensors go before the runtime closes; closing is not part of the trace.
    let substituted = context.substituted.take();
    drop(context);
    runtime.close();
    let mut lines = trace.lines();
    for (device, own) in &substituted {
        for line in &mut lines {
            if line.contains(device.as_str()) {
                *line = line.replace(device.as_str(), own);
            }
        }
    }
    if failure.is_none() {
        failure = vector.case.expect_trace.iter().find_map(|want| check_trace(&lines, want).err());
    }
    RunOutput { trace: lines, failure }
}

/// The trace lines of step `step` (1-based): those after its `== step N:` marker and before
/// the next marker.
fn step_lines(lines: &[String], step: usize) -> impl Iterator<Item = &String> {
    let marker = format!("== step {step}: ");
    lines
        .iter()
        .skip_while(move |l| !l.starts_with(&marker))
        .skip(1)
        .take_while(|l| !l.starts_with("== step "))
}

/// Checks one `[[expect_trace]]` claim.
fn check_trace(lines: &[String], want: &TraceExpectation) -> StepResult {
    let matches = |line: &&String| {
        want.starts_with.as_deref().is_none_or(|p| line.starts_with(p))
            && want.contains.as_deref().is_none_or(|c| line.contains(c))
    };
    let got = step_lines(lines, want.step).filter(matches).count();
    if got == want.count {
        return Ok(());
    }
    let pattern = [
        want.starts_with.as_ref().map(|p| format!("starting with {p:?}")),
        want.contains.as_ref().map(|c| format!("containing {c:?}")),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(" and ");
    Err(format!(
        "expect_trace (step {}): {}: expected {} line(s) {pattern}, got {got}",
        want.step, want.why, want.count
    ))
}

struct Context<'a> {
    vector: &'a Vector,
    /// The backend itself: the binding layer traces its own calls (into the same trace, so
    /// handle names stay consistent), and must not be handed the traced runtime too.
    raw: Arc<dyn Runtime>,
    /// The backend behind a [`TracingRuntime`], for raw steps.
    runtime: Arc<dyn Runtime>,
    trace: Arc<Trace>,
    tensors: BTreeMap<String, TensorId>,
    sets: BTreeMap<String, SetId>,
    /// Tensor addresses labelled by `tensor_get_va` steps.
    addresses: BTreeMap<String, usize>,
    models: BTreeMap<String, ModelId>,
    bind_models: BTreeMap<String, Model>,
    outputs: BTreeMap<String, HostTensor>,
    /// Buffers attached to tensors: they must outlive the tensors.
    buffers: Vec<Arc<SharedBuffer>>,
    /// The target whose device NEFF replaces `model.neff` (the `nrt` backend).
    device_target: Option<String>,
    /// Trace arguments of device NEFFs loaded, and the `model.neff` argument each stands for.
    substituted: std::cell::RefCell<Vec<(String, String)>>,
    /// Labels of the async API's trackers and requests.
    requests: AsyncLabels,
    /// The folder for the files of profiling steps.
    folder: folder::RunFolder,
}

/// Labels of the async API (`nrta_*` steps).
#[derive(Default)]
struct AsyncLabels {
    trackers: BTreeMap<String, abi::runtime::TrackerId>,
    seqs: BTreeMap<String, abi::runtime::SeqId>,
    reads: BTreeMap<String, Arc<abi::runtime::AsyncReadBuffer>>,
}

type StepResult = Result<(), String>;

/// The runner's dispatch, expanded from the step list inside `impl Runner`: each step is run by
/// the method named as its call (raw `Runtime` steps in `lifecycle`, `tensors`, `info`,
/// `sys_trace`, `nrta`, …, binding-level steps in `binding`).
macro_rules! dispatch {
    ($($(#[$doc:meta])* $call:ident => $variant:ident($fields:ident),)*) => {
        /// Runs one step by the method named as its call.
        fn step(&mut self, step: &Step) -> StepResult {
            match step {
                $(Step::$variant(step) => self.$call(step),)*
            }
        }
    };
}
/// Checks a call's status against the step's `expect` (default success).
fn check_status<T>(
    result: &Result<T, abi::runtime::NrtError>,
    expect: &Option<Status>,
) -> StepResult {
    let got = match result {
        Ok(_) => NrtStatus::Success,
        Err(error) => error.status,
    };
    expect_status(got, expect)
}

/// Checks a status against the step's `expect` (default success).
fn expect_status(got: NrtStatus, expect: &Option<Status>) -> StepResult {
    let want = expect.map_or(NrtStatus::Success, |Status(status)| status);
    if got == want { Ok(()) } else { Err(format!("expected {}, got {}", want.name(), got.name())) }
}

fn label<T: Copy>(map: &BTreeMap<String, T>, name: &str, what: &str) -> Result<T, String> {
    map.get(name).copied().ok_or_else(|| format!("no {what} labelled {name:?} in an earlier step"))
}

impl Context<'_> {
    /// Lets every background load (`async_load`) finish before the next step marker is written,
    /// so the trace does not depend on thread timing. Async loading stays observable: the model
    /// reports `loading` until a forward collects the load (`model_load_status`), and the
    /// binding layer traces that wait (`background load joined`).
    fn settle(&self) {
        let deadline = Instant::now() + std::time::Duration::from_secs(60);
        while self.bind_models.values().any(|m| !m.background_load_finished())
            && Instant::now() < deadline
        {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    fn file(&self, name: &Option<String>, default: &str) -> Result<Vec<u8>, String> {
        let file = name.as_deref().unwrap_or(default);
        let own = self.vector.read(file).map_err(|e| e.to_string())?;
        match &self.device_target {
            Some(target) if file == NEFF_FILE => {
                let device =
                    crate::device::device_neff(self.vector, target).map_err(|e| e.to_string())?;
                self.substituted.borrow_mut().push((format_bytes(&device), format_bytes(&own)));
                Ok(device)
            }
            _ => Ok(own),
        }
    }

    fn model(&mut self, name: &str) -> Result<&mut Model, String> {
        self.bind_models
            .get_mut(name)
            .ok_or_else(|| format!("no model labelled {name:?} in an earlier step"))
    }

    for_each_step!(dispatch);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A trace of two steps: step 1 has two `execute(` lines, step 2 one.
    fn lines() -> Vec<String> {
        [
            "load(m) -> 0",
            "== step 1: execute",
            "execute(m, in, out) -> 0",
            "execute(m, in, out) -> 0",
            "tensor_read(out) -> 0",
            "== step 2: execute",
            "execute(m, in2, out) -> 1003",
        ]
        .map(str::to_owned)
        .to_vec()
    }

    fn claim(
        step: usize,
        starts_with: Option<&str>,
        contains: Option<&str>,
        count: usize,
    ) -> TraceExpectation {
        TraceExpectation {
            step,
            starts_with: starts_with.map(str::to_owned),
            contains: contains.map(str::to_owned),
            count,
            why: "the test's claim".to_owned(),
        }
    }

    #[test]
    fn a_count_claim_holds_only_for_exactly_that_many_lines() {
        let lines = lines();
        assert_eq!(check_trace(&lines, &claim(1, Some("execute("), None, 2)), Ok(()));
        // Fewer and more than there are both fail (an injected bug once let "more" pass).
        for count in [0, 1, 3] {
            let error = check_trace(&lines, &claim(1, Some("execute("), None, count)).unwrap_err();
            assert_eq!(
                error,
                format!(
                    "expect_trace (step 1): the test's claim: expected {count} line(s) starting \
                     with \"execute(\", got 2"
                )
            );
        }
    }

    #[test]
    fn a_count_of_zero_fails_when_a_line_matches() {
        let lines = lines();
        assert_eq!(check_trace(&lines, &claim(2, None, Some("1003"), 0)).map_err(drop), Err(()));
        assert_eq!(check_trace(&lines, &claim(1, None, Some("1003"), 0)), Ok(()));
    }

    #[test]
    fn a_claim_counts_the_lines_of_its_own_step_only() {
        let lines = lines();
        // Step 2 has one execute line; step 1's two and the load before step 1 are not its.
        assert_eq!(check_trace(&lines, &claim(2, Some("execute("), None, 1)), Ok(()));
        assert_eq!(check_trace(&lines, &claim(1, Some("load("), None, 0)), Ok(()));
        assert_eq!(check_trace(&lines, &claim(1, Some("tensor_read("), None, 1)), Ok(()));
        assert_eq!(check_trace(&lines, &claim(3, Some("execute("), None, 0)), Ok(()));
    }

    #[test]
    fn a_line_must_match_both_starts_with_and_contains() {
        let lines = lines();
        assert_eq!(check_trace(&lines, &claim(1, Some("execute("), Some("in,"), 2)), Ok(()));
        // Starts right, contains wrong, and the other way round: neither counts.
        assert_eq!(check_trace(&lines, &claim(1, Some("execute("), Some("in2"), 0)), Ok(()));
        assert_eq!(check_trace(&lines, &claim(1, Some("tensor_read("), Some("in,"), 0)), Ok(()));
    }
}
