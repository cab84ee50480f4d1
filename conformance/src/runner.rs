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

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use abi::dtype::{ScalarType, decode_elements, encode_element};
use abi::hex::to_hex_spaced;
use abi::metaneff::edit::{self, ConfigFlag};
use abi::runtime::{
    Framework, ModelId, Placement, Runtime, SetId, SharedBuffer, TensorId, TensorInfo,
    TensorReadBatch, TensorWriteBatch,
};
use abi::status::NrtStatus;
use abi::trace::{Trace, TracingRuntime, format_bytes};
use bind::{BindError, HostTensor, LoadStatus, Model, ModelOptions, SpmdModel};

use crate::backend::Backend;
use crate::report::{CaseResult, Outcome};
use crate::spec::{Elements, ExpectedError, ProvenanceKind, Step, TensorValue, TraceExpectation};
use crate::vector::{METANEFF_FILE, NEFF_FILE, TRACE_FILE, TRACE_HEADER, Vector};

/// What a run produced.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct RunOutput {
    /// The trace lines.
    pub trace: Vec<String>,
    /// The first failed expectation, if any.
    pub failure: Option<String>,
}

/// Runs `vector` on `backend` and returns the trace and the first failed expectation.
pub fn run(vector: &Vector, backend: &dyn Backend) -> RunOutput {
    backend.run(vector)
}

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
        models: BTreeMap::new(),
        bind_models: BTreeMap::new(),
        outputs: BTreeMap::new(),
        buffers: Vec::new(),
        device_target: device_target.map(str::to_owned),
        substituted: std::cell::RefCell::new(Vec::new()),
        requests: AsyncLabels::default(),
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
            trace.record(format!("== step {}: {}", index + 1, step_name(step)));
            if let Err(message) = context.step(step) {
                failure = Some(format!("step {} ({}): {message}", index + 1, step_name(step)));
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
    let output = run(vector, backend);
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

/// The step's `call` name: serde's tag is the snake_case of the variant, and Debug's first word
/// is the variant.
fn step_name(step: &Step) -> String {
    variant_snake_name(&format!("{step:?}"))
}

/// `SomeVariant { … }` (a Debug rendering) → `some_variant`.
fn variant_snake_name(debug: &str) -> String {
    let variant = debug.split([' ', '{', '(']).next().unwrap_or("unknown");
    let mut name = String::new();
    for (i, c) in variant.chars().enumerate() {
        if c.is_uppercase() {
            if i > 0 {
                name.push('_');
            }
            name.extend(c.to_lowercase());
        } else {
            name.push(c);
        }
    }
    name
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
}

/// Labels of the async API (`nrta_*` steps).
#[derive(Default)]
struct AsyncLabels {
    trackers: BTreeMap<String, abi::runtime::TrackerId>,
    seqs: BTreeMap<String, abi::runtime::SeqId>,
    reads: BTreeMap<String, Arc<abi::runtime::AsyncReadBuffer>>,
}

type StepResult = Result<(), String>;

impl Context<'_> {
    /// The tracker a step names, if any.
    fn tracker_label(
        &self,
        tracker: &Option<String>,
    ) -> Result<Option<abi::runtime::TrackerId>, String> {
        tracker
            .as_ref()
            .map(|name| label(&self.requests.trackers, name, "error tracker"))
            .transpose()
    }

    /// Checks a scheduling's status and labels its request.
    fn scheduled(
        &mut self,
        result: Result<abi::runtime::SeqId, abi::runtime::NrtError>,
        as_name: &Option<String>,
        expect: &Option<String>,
    ) -> StepResult {
        check_status(&result, expect)?;
        if let (Ok(seq), Some(name)) = (result, as_name) {
            self.requests.seqs.insert(name.clone(), seq);
        }
        Ok(())
    }
}

/// Checks a call's status against the step's `expect` (default success).
fn check_status<T>(
    result: &Result<T, abi::runtime::NrtError>,
    expect: &Option<String>,
) -> StepResult {
    let got = match result {
        Ok(_) => NrtStatus::Success,
        Err(error) => error.status,
    };
    expect_status(got, expect)
}

fn expect_status(got: NrtStatus, expect: &Option<String>) -> StepResult {
    let want = match expect {
        None => NrtStatus::Success,
        Some(name) => NrtStatus::from_name(name)
            .ok_or_else(|| format!("unknown status {name:?} in case.toml"))?,
    };
    if got == want { Ok(()) } else { Err(format!("expected {}, got {}", want.name(), got.name())) }
}

fn label<T: Copy>(map: &BTreeMap<String, T>, name: &str, what: &str) -> Result<T, String> {
    map.get(name).copied().ok_or_else(|| format!("no {what} labelled {name:?} in an earlier step"))
}

fn placement(name: &Option<String>) -> Result<Placement, String> {
    match name.as_deref().unwrap_or("DEVICE") {
        "DEVICE" => Ok(Placement::Device),
        "HOST" => Ok(Placement::Host),
        "VIRTUAL" => Ok(Placement::Virtual),
        other => Err(format!("unknown placement {other:?}: expected DEVICE, HOST or VIRTUAL")),
    }
}

fn framework(name: &Option<String>) -> Result<Framework, String> {
    Ok(match name.as_deref().unwrap_or("NO_FW") {
        "INVALID" => Framework::Invalid,
        "NO_FW" => Framework::NoFw,
        "TENSORFLOW" => Framework::Tensorflow,
        "PYTORCH" => Framework::Pytorch,
        "MXNET" => Framework::Mxnet,
        "PRECHECK" => Framework::Precheck,
        other => return Err(format!("unknown framework {other:?}")),
    })
}

fn scalar_type(name: &str) -> Result<ScalarType, String> {
    ScalarType::from_name(name).map_err(|e| e.to_string())
}

fn encode_values(scalar_type: ScalarType, values: &[f64]) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::with_capacity(values.len() * scalar_type.item_size() as usize);
    for &value in values {
        encode_element(scalar_type, value, &mut bytes).map_err(|e| e.to_string())?;
    }
    Ok(bytes)
}

fn parse_hex(hex: &str) -> Result<Vec<u8>, String> {
    let digits: String = hex.chars().filter(|c| !c.is_whitespace()).collect();
    if digits.len() % 2 != 0 {
        return Err(format!("hex {hex:?} has an odd number of digits"));
    }
    (0..digits.len())
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(&digits[i..i + 2], 16)
                .map_err(|_| format!("bad hex {:?}", &digits[i..i + 2]))
        })
        .collect()
}

/// The bytes of a [`TensorValue`].
fn value_bytes(value: &TensorValue) -> Result<(ScalarType, Vec<u8>), String> {
    let scalar_type = scalar_type(&value.dtype)?;
    let n_elements = abi::dtype::n_elements(&value.shape).map_err(|e| e.to_string())? as usize;
    let bytes = match (&value.values, value.fill, &value.hex) {
        (Some(values), None, None) => {
            if values.len() != n_elements {
                return Err(format!(
                    "{} values for shape {:?}, expected {n_elements}",
                    values.len(),
                    value.shape
                ));
            }
            encode_values(scalar_type, values)?
        }
        (None, Some(fill), None) => encode_values(scalar_type, &vec![fill; n_elements])?,
        (None, None, Some(text)) => parse_hex(text)?,
        (None, None, None) => encode_values(scalar_type, &vec![0.0; n_elements])?,
        _ => return Err("give at most one of values, fill and hex".to_owned()),
    };
    Ok((scalar_type, bytes))
}

fn host_tensor(value: &TensorValue) -> Result<HostTensor, String> {
    let (scalar_type, bytes) = value_bytes(value)?;
    HostTensor::from_bytes(scalar_type, &value.shape, bytes).map_err(|e| e.to_string())
}

/// Whether two byte strings hold the same elements (any NaN equals any NaN; raw bytes for types
/// without number conversion).
fn same_elements(scalar_type: ScalarType, want: &[u8], got: &[u8]) -> bool {
    match (decode_elements(scalar_type, want), decode_elements(scalar_type, got)) {
        (Some(a), Some(b)) => {
            a.len() == b.len()
                && a.iter().zip(&b).all(|(x, y)| x == y || (x.is_nan() && y.is_nan()))
        }
        _ => want == got,
    }
}

/// Compares an output with the expected value: dtype, shape and elements (NaN equals NaN).
fn check_tensor(what: &str, got: &HostTensor, want: &TensorValue) -> StepResult {
    let (want_type, want_bytes) = value_bytes(want)?;
    if got.scalar_type() != want_type || got.shape() != want.shape.as_slice() {
        return Err(format!(
            "{what}: expected {} {:?}, got {} {:?}",
            want_type.name(),
            want.shape,
            got.scalar_type().name(),
            got.shape()
        ));
    }
    let got_bytes = got.to_bytes();
    if same_elements(want_type, &want_bytes, &got_bytes) {
        Ok(())
    } else {
        let show = |bytes: &[u8]| match decode_elements(want_type, bytes) {
            Some(values) => format!("{values:?}"),
            None => to_hex_spaced(bytes),
        };
        Err(format!("{what}: expected {}, got {}", show(&want_bytes), show(&got_bytes)))
    }
}

/// Compares `nrt_get_model_tensor_info` entries with the expected ones, in order.
fn check_tensor_info(got: &[TensorInfo], want: &[crate::spec::ExpectedTensorInfo]) -> StepResult {
    let show = |info: &TensorInfo| {
        format!("{} {} {}", info.name, format!("{:?}", info.usage).to_uppercase(), info.size)
    };
    let same = got.len() == want.len()
        && got.iter().zip(want).all(|(g, w)| {
            g.name == w.name
                && format!("{:?}", g.usage).eq_ignore_ascii_case(&w.usage)
                && w.size.is_none_or(|size| size == g.size)
        });
    if same {
        return Ok(());
    }
    let want: Vec<String> = want
        .iter()
        .map(|w| {
            format!("{} {} {}", w.name, w.usage, w.size.map_or("*".to_owned(), |s| s.to_string()))
        })
        .collect();
    Err(format!(
        "tensor info [{}], expected [{}]",
        got.iter().map(show).collect::<Vec<_>>().join(", "),
        want.join(", ")
    ))
}

/// The kind of a binding error, as vectors name it.
fn error_kind(error: &BindError) -> String {
    if let Some(validate) = error.as_validate() {
        return validate.kind.name().to_owned();
    }
    if error.as_runtime().is_some() {
        return "runtime".to_owned();
    }
    match variant_snake_name(&format!("{error:?}")).as_str() {
        // Not to be confused with the validate check of the same name.
        "dtype" => "unsupported_dtype".to_owned(),
        other => other.to_owned(),
    }
}

/// Checks a binding-level result against `expect_error`, tracing the error either way.
fn check_bind<T>(
    trace: &Trace,
    result: Result<T, BindError>,
    expected: &Option<ExpectedError>,
) -> Result<Option<T>, String> {
    match (result, expected) {
        (Ok(value), None) => Ok(Some(value)),
        (Ok(_), Some(want)) => Err(format!("expected error kind {}, got success", want.kind)),
        (Err(error), want) => {
            let kind = error_kind(&error);
            let status = error.as_runtime().map(|(_, e)| e.status.name());
            trace.record(format!(
                "error {kind}{}",
                status.as_ref().map(|s| format!(" {s}")).unwrap_or_default()
            ));
            let Some(want) = want else {
                return Err(format!("unexpected error: {error}"));
            };
            if kind != want.kind {
                return Err(format!("expected error kind {}, got {kind}: {error}", want.kind));
            }
            if let Some(message) = &want.message {
                let got = error
                    .as_validate()
                    .map(|v| v.message.to_owned())
                    .or_else(|| error.as_runtime().map(|(m, _)| m.to_owned()));
                if got.as_deref() != Some(message.as_str()) {
                    return Err(format!("expected message {message:?}, got {got:?} ({error})"));
                }
            }
            if let Some(part) = &want.message_contains {
                let rendered = error.to_string();
                if !rendered.contains(part.as_str()) {
                    return Err(format!(
                        "expected the error to contain {part:?}, got {rendered:?}"
                    ));
                }
            }
            if let Some(status) = &want.status {
                expect_status(
                    error.as_runtime().map_or(NrtStatus::Success, |(_, e)| e.status),
                    &Some(status.clone()),
                )?;
            }
            Ok(None)
        }
    }
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
                let device = crate::device::device_neff(self.vector, target)?;
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

    fn step(&mut self, step: &Step) -> StepResult {
        let rt = self.runtime.clone();
        match step {
            Step::Init { framework: fw, expect } => {
                check_status(&rt.init(framework(fw)?, "", ""), expect)
            }
            Step::Close {} => {
                rt.close();
                Ok(())
            }
            Step::Load { neff, vnc, vnc_count, label: name, expect } => {
                let bytes = self.file(neff, NEFF_FILE)?;
                let result = rt.load(&bytes, vnc.unwrap_or(-1), vnc_count.unwrap_or(1));
                check_status(&result, expect)?;
                if let (Ok(model), Some(name)) = (result, name) {
                    self.models.insert(name.clone(), model);
                }
                Ok(())
            }
            Step::LoadCollectives {
                neff,
                vnc,
                vnc_count,
                ctx_device_id,
                ctx_device_count,
                label: name,
                expect,
            } => {
                let bytes = self.file(neff, NEFF_FILE)?;
                let result = rt.load_collectives(
                    &bytes,
                    vnc.unwrap_or(-1),
                    vnc_count.unwrap_or(1),
                    *ctx_device_id,
                    *ctx_device_count,
                );
                check_status(&result, expect)?;
                if let (Ok(model), Some(name)) = (result, name) {
                    self.models.insert(name.clone(), model);
                }
                Ok(())
            }
            Step::Unload { model, expect } => {
                check_status(&rt.unload(label(&self.models, model, "model")?), expect)
            }
            Step::Execute { model, inputs, outputs, repeat, expect } => {
                let model = label(&self.models, model, "model")?;
                let inputs = label(&self.sets, inputs, "tensor set")?;
                let outputs = label(&self.sets, outputs, "tensor set")?;
                let result = match repeat {
                    Some(count) => rt.execute_repeat(model, inputs, outputs, *count),
                    None => rt.execute(model, inputs, outputs),
                };
                let got = match &result {
                    Ok(status) => *status,
                    Err(error) => error.status,
                };
                expect_status(got, expect)
            }
            Step::AllocateTensorSet { label: name } => {
                let set = rt.allocate_tensor_set().map_err(|e| e.to_string())?;
                self.sets.insert(name.clone(), set);
                Ok(())
            }
            Step::DestroyTensorSet { set, expect } => {
                check_status(&rt.destroy_tensor_set(label(&self.sets, set, "tensor set")?), expect)
            }
            Step::AddTensorToTensorSet { set, name, tensor, expect } => {
                let set = label(&self.sets, set, "tensor set")?;
                let tensor = label(&self.tensors, tensor, "tensor")?;
                check_status(&rt.add_tensor_to_tensor_set(set, name.as_bytes(), tensor), expect)
            }
            Step::GetTensorFromTensorSet { set, name, label: as_name, expect } => {
                let result = rt.get_tensor_from_tensor_set(
                    label(&self.sets, set, "tensor set")?,
                    name.as_bytes(),
                );
                check_status(&result, expect)?;
                if let (Ok(tensor), Some(as_name)) = (result, as_name) {
                    self.tensors.insert(as_name.clone(), tensor);
                }
                Ok(())
            }
            Step::TensorAllocate { placement: p, vnc, size, name, label: as_name, expect } => {
                let result = rt.tensor_allocate(
                    placement(p)?,
                    vnc.unwrap_or(0),
                    *size,
                    (name.as_deref().unwrap_or(as_name)).as_bytes(),
                );
                check_status(&result, expect)?;
                if let Ok(tensor) = result {
                    self.tensors.insert(as_name.clone(), tensor);
                }
                Ok(())
            }
            Step::TensorAllocateEmpty { name, label: as_name } => {
                let tensor = rt
                    .tensor_allocate_empty((name.as_deref().unwrap_or(as_name)).as_bytes())
                    .map_err(|e| e.to_string())?;
                self.tensors.insert(as_name.clone(), tensor);
                Ok(())
            }
            Step::TensorAttachBuffer { tensor, size, expect } => {
                let buffer = Arc::new(SharedBuffer::zeroed(*size));
                self.buffers.push(buffer.clone());
                check_status(
                    &rt.tensor_attach_buffer(label(&self.tensors, tensor, "tensor")?, buffer),
                    expect,
                )
            }
            Step::TensorAllocateSlice { tensor, offset, size, name, label: as_name, expect } => {
                let source = label(&self.tensors, tensor, "tensor")?;
                let result = rt.tensor_allocate_slice(
                    source,
                    *offset,
                    *size,
                    (name.as_deref().unwrap_or(as_name)).as_bytes(),
                );
                check_status(&result, expect)?;
                if let Ok(slice) = result {
                    self.tensors.insert(as_name.clone(), slice);
                }
                Ok(())
            }
            Step::TensorFree { tensor, expect } => {
                check_status(&rt.tensor_free(label(&self.tensors, tensor, "tensor")?), expect)
            }
            Step::TensorWrite { tensor, offset, data, expect } => {
                let bytes = encode_values(scalar_type(&data.dtype)?, &data.values)?;
                check_status(
                    &rt.tensor_write(
                        label(&self.tensors, tensor, "tensor")?,
                        offset.unwrap_or(0),
                        &bytes,
                    ),
                    expect,
                )
            }
            Step::TensorRead { tensor, offset, size, expect_values, expect } => {
                let mut buffer = vec![0u8; *size];
                let result = rt.tensor_read(
                    label(&self.tensors, tensor, "tensor")?,
                    offset.unwrap_or(0),
                    &mut buffer,
                );
                check_status(&result, expect)?;
                match (result, expect_values) {
                    (Ok(()), Some(Elements { dtype, values })) => {
                        let scalar_type = scalar_type(dtype)?;
                        let want = encode_values(scalar_type, values)?;
                        if same_elements(scalar_type, &want, &buffer) {
                            Ok(())
                        } else {
                            Err(format!(
                                "read {}, expected {}",
                                to_hex_spaced(&buffer),
                                to_hex_spaced(&want)
                            ))
                        }
                    }
                    _ => Ok(()),
                }
            }
            Step::TensorCopy { src, src_offset, dst, dst_offset, size, expect } => {
                let src = label(&self.tensors, src, "tensor")?;
                let dst = label(&self.tensors, dst, "tensor")?;
                check_status(
                    &rt.tensor_copy(
                        src,
                        src_offset.unwrap_or(0),
                        dst,
                        dst_offset.unwrap_or(0),
                        *size,
                    ),
                    expect,
                )
            }
            Step::TensorMemset { tensor, offset, value, size, expect } => check_status(
                &rt.tensor_memset(
                    label(&self.tensors, tensor, "tensor")?,
                    offset.unwrap_or(0),
                    *value,
                    *size,
                ),
                expect,
            ),
            Step::TensorGetSize { tensor, expect_size, expect } => {
                let result = rt.tensor_get_size(label(&self.tensors, tensor, "tensor")?);
                check_status(&result, expect)?;
                match (result, expect_size) {
                    (Ok(got), Some(want)) if got != *want => {
                        Err(format!("size {got}, expected {want}"))
                    }
                    _ => Ok(()),
                }
            }
            Step::GetModelTensorInfo { model, expect_info, expect } => {
                let result = rt.get_model_tensor_info(label(&self.models, model, "model")?);
                check_status(&result, expect)?;
                match (result, expect_info) {
                    (Ok(got), Some(want)) => check_tensor_info(&got, want),
                    _ => Ok(()),
                }
            }
            Step::GetVersion {} => rt.get_version().map(|_| ()).map_err(|e| e.to_string()),
            Step::GetVncCount { expect, expect_count } => {
                for (what, result) in
                    [("total", rt.get_total_vnc_count()), ("visible", rt.get_visible_vnc_count())]
                {
                    check_status(&result, expect).map_err(|e| format!("{what} count: {e}"))?;
                    if let (Ok(got), Some(want)) = (result, expect_count) {
                        if got != *want {
                            return Err(format!("{what} count {got}, expected {want}"));
                        }
                    }
                }
                Ok(())
            }
            Step::ModelLoadStatus { model, expect } => {
                let got = match self.model(model)?.load_status() {
                    LoadStatus::Unloaded => "unloaded",
                    LoadStatus::Loading => "loading",
                    LoadStatus::Loaded => "loaded",
                };
                self.trace.record(format!("model {model} {got}"));
                if !["unloaded", "loading", "loaded"].contains(&expect.as_str()) {
                    return Err(format!(
                        "unknown load status {expect:?}: expected unloaded, loading or loaded"
                    ));
                }
                if got == expect {
                    Ok(())
                } else {
                    Err(format!("model is {got}, expected {expect}"))
                }
            }
            Step::ModelNew { label: as_name, neff, metaneff, weights, expect_error } => {
                let neff = self.file(neff, NEFF_FILE)?;
                let metaneff = self.file(metaneff, METANEFF_FILE)?;
                let mut options =
                    ModelOptions { trace: Some(self.trace.clone()), ..ModelOptions::default() };
                for (key, value) in weights {
                    options.weights.insert(key.as_bytes().to_vec(), host_tensor(value)?);
                }
                let result = Model::new(self.raw.clone(), &neff, &metaneff, options);
                if let Some(model) = check_bind(&self.trace, result, expect_error)? {
                    self.bind_models.insert(as_name.clone(), model);
                }
                Ok(())
            }
            Step::ModelLoad { model, action, expect_error } => {
                let trace = self.trace.clone();
                let model = self.model(model)?;
                let result = match action.as_deref().unwrap_or("load") {
                    "load" => model.load(),
                    "blocking_load" => model.blocking_load(),
                    "unload" => model.unload(),
                    other => {
                        return Err(format!(
                            "unknown action {other:?}: expected load, blocking_load or unload"
                        ));
                    }
                };
                check_bind(&trace, result, expect_error).map(|_| ())
            }
            Step::ModelSet { model, setter, value, inputs, outputs, expect_error } => {
                let trace = self.trace.clone();
                let model = self.model(model)?;
                let flag = || value.ok_or_else(|| format!("{setter} needs `value`"));
                let result = match setter.as_str() {
                    "set_async_load" => model.set_async_load(flag()?),
                    "set_lazy_load" => model.set_lazy_load(flag()?),
                    "set_dynamic_batching" => model.set_dynamic_batching(flag()?),
                    "set_dynamic_batching_mixed" => model.set_dynamic_batching_mixed(
                        inputs.as_deref().unwrap_or_default(),
                        outputs.as_deref().unwrap_or_default(),
                    ),
                    other => return Err(format!("unknown setter {other:?}")),
                };
                check_bind(&trace, result, expect_error)?;
                trace.record(format!("metaneff after {setter} {}", format_bytes(model.metaneff())));
                Ok(())
            }
            Step::ModelForward {
                model,
                inputs,
                reuse,
                label: as_name,
                expect_outputs,
                expect_status: want_status,
                expect_error,
                expect_shared,
            } => {
                let mut tensors = Vec::with_capacity(inputs.len());
                for value in inputs {
                    tensors.push(match &value.device {
                        Some(tensor) => HostTensor::on_device(
                            scalar_type(&value.dtype)?,
                            &value.shape,
                            label(&self.tensors, tensor, "tensor")?,
                        )
                        .map_err(|e| e.to_string())?,
                        None => host_tensor(value)?,
                    });
                }
                for (index, source) in reuse {
                    let index: usize = index
                        .parse()
                        .map_err(|_| format!("reuse key {index:?} is not an input index"))?;
                    let tensor = self
                        .outputs
                        .get(source)
                        .ok_or_else(|| format!("no output labelled {source:?}"))?;
                    if index > tensors.len() {
                        return Err(format!(
                            "reuse index {index} past the {} inputs",
                            tensors.len()
                        ));
                    }
                    tensors.insert(index, tensor.clone());
                }
                let result = self.model(model)?.forward(&tensors);
                let Some(forward) = check_bind(&self.trace, result, expect_error)? else {
                    return Ok(());
                };
                expect_status(forward.status, want_status)?;
                for (index, output) in forward.outputs.iter().enumerate() {
                    self.trace.record(format!(
                        "output {index} {} {:?} {}",
                        output.scalar_type().name(),
                        output.shape(),
                        format_bytes(&output.to_bytes())
                    ));
                    if let Some(as_name) = as_name {
                        self.outputs.insert(format!("{as_name}.{index}"), output.clone());
                    }
                }
                if let Some(want) = expect_outputs {
                    if want.len() != forward.outputs.len() {
                        return Err(format!(
                            "{} outputs, expected {}",
                            forward.outputs.len(),
                            want.len()
                        ));
                    }
                    for (index, (got, want)) in forward.outputs.iter().zip(want).enumerate() {
                        check_tensor(&format!("output {index}"), got, want)?;
                    }
                }
                for (output, &input) in expect_shared {
                    let output_index: usize = output.parse().map_err(|_| {
                        format!("expect_shared key {output:?} is not an output index")
                    })?;
                    let got = forward
                        .outputs
                        .get(output_index)
                        .ok_or_else(|| format!("no output {output_index}"))?;
                    let source = tensors.get(input).ok_or_else(|| format!("no input {input}"))?;
                    if !got.shares_storage_with(source) {
                        return Err(format!(
                            "output {output_index} does not share storage with input {input}"
                        ));
                    }
                }
                Ok(())
            }
            Step::SpmdForward { local_ranks, world_size, inputs, expect_outputs, expect_error } => {
                let neff = self.file(&None, NEFF_FILE)?;
                let metaneff = self.file(&None, METANEFF_FILE)?;
                let options =
                    ModelOptions { trace: Some(self.trace.clone()), ..ModelOptions::default() };
                // `expect_error` may be met by the construction or by the forward.
                let mut spmd = match SpmdModel::new(
                    self.raw.clone(),
                    &neff,
                    &metaneff,
                    *local_ranks,
                    *world_size,
                    options,
                ) {
                    Ok(spmd) => spmd,
                    Err(error) => {
                        return check_bind::<()>(&self.trace, Err(error), expect_error).map(|_| ());
                    }
                };
                let per_rank = inputs
                    .iter()
                    .map(|rank| rank.iter().map(host_tensor).collect::<Result<Vec<_>, _>>())
                    .collect::<Result<Vec<_>, _>>()?;
                let Some(outputs) =
                    check_bind(&self.trace, spmd.forward_ranked(&per_rank), expect_error)?
                else {
                    return Ok(());
                };
                if let Some(want) = expect_outputs {
                    for (rank, (got, want)) in outputs.iter().zip(want).enumerate() {
                        for (index, (got, want)) in got.outputs.iter().zip(want).enumerate() {
                            check_tensor(&format!("rank {rank} output {index}"), got, want)?;
                        }
                    }
                }
                Ok(())
            }
            Step::MetaneffEdit { edit: which, input_hex, value, expect_hex } => {
                let bytes = match input_hex {
                    Some(text) => parse_hex(text)?,
                    None => self.file(&None, METANEFF_FILE)?,
                };
                let edited = match which.as_str() {
                    "set_async_load" => {
                        edit::set_config_flag(&bytes, ConfigFlag::AsyncLoad, *value)
                    }
                    "set_lazy_load" => edit::set_config_flag(&bytes, ConfigFlag::LazyLoad, *value),
                    "set_return_aliases" => {
                        edit::set_config_flag(&bytes, ConfigFlag::ReturnAliases, *value)
                    }
                    "set_dynamic_batching" => {
                        edit::set_allow_dynamic_batch_size(&bytes, |_, _| Some(*value))
                    }
                    other => return Err(format!("unknown edit {other:?}")),
                }
                .map_err(|e| e.to_string())?;
                self.trace.record(format!("metaneff {which} {value} -> {}", format_bytes(&edited)));
                let want = parse_hex(expect_hex)?;
                if edited == want {
                    Ok(())
                } else {
                    Err(format!(
                        "edit gave {}, expected {}",
                        to_hex_spaced(&edited),
                        to_hex_spaced(&want)
                    ))
                }
            }
            Step::MetaneffBytes { expect_hex } => {
                let bytes = self.file(&None, METANEFF_FILE)?;
                self.trace.record(format!("metaneff {}", format_bytes(&bytes)));
                let want = parse_hex(expect_hex)?;
                if bytes == want {
                    Ok(())
                } else {
                    Err(format!(
                        "metaneff.pb is {}, expected {}",
                        to_hex_spaced(&bytes),
                        to_hex_spaced(&want)
                    ))
                }
            }
            Step::GetCoreCounts { expect } => {
                let counts = [
                    rt.get_total_nc_count(),
                    rt.get_total_vnc_count(),
                    rt.get_visible_nc_count(),
                    rt.get_visible_vnc_count(),
                ];
                for count in &counts {
                    check_status(count, expect)?;
                }
                if let [Ok(total_nc), Ok(total), Ok(visible_nc), Ok(visible)] = counts {
                    if total_nc != total || visible_nc != visible || visible > total {
                        return Err(format!(
                            "counts total {total_nc}/{total}, visible {visible_nc}/{visible}, \
                             expected equal totals, equal visible counts, visible <= total"
                        ));
                    }
                }
                Ok(())
            }
            Step::GetModelCounts { model, expect_vnc_count, expect } => {
                let model = label(&self.models, model, "model")?;
                let nc = rt.get_model_nc_count(model);
                let vnc = rt.get_model_vnc_count(model);
                let instances = rt.get_model_instance_count(model);
                check_status(&nc, expect)?;
                check_status(&vnc, expect)?;
                check_status(&instances, expect)?;
                match (nc, vnc, instances, expect_vnc_count) {
                    (Ok(nc), Ok(vnc), _, Some(want)) if nc != *want || vnc != *want => {
                        Err(format!("model occupies {nc} nc / {vnc} vnc, expected {want}"))
                    }
                    (_, _, Ok(0), _) => Err("model instance count 0, expected at least 1".into()),
                    _ => Ok(()),
                }
            }
            Step::SysTraceGetEventTypes { expect_includes, expect } => {
                let types = rt.sys_trace_get_event_types();
                check_status(&types, expect)?;
                match types {
                    Ok(types) => match expect_includes.iter().find(|want| !types.contains(want)) {
                        Some(missing) => Err(format!(
                            "event types {types:?}, expected them to include {missing:?}"
                        )),
                        None => Ok(()),
                    },
                    Err(_) => Ok(()),
                }
            }
            Step::SysTraceStart { max_events_per_nc, disable_ncs, disable_event_types, expect } => {
                let config = abi::runtime::SysTraceConfig {
                    max_events_per_nc: *max_events_per_nc,
                    disabled_ncs: disable_ncs.clone(),
                    disabled_event_types: disable_event_types.clone(),
                };
                check_status(&rt.sys_trace_start(&config), expect)
            }
            Step::SysTraceFetchEvents { max_events_per_nc, nc, expect_event_counts, expect } => {
                let fetch =
                    abi::runtime::SysTraceFetch { max_events_per_nc: *max_events_per_nc, nc: *nc };
                let fetched = rt.sys_trace_fetch_events(&fetch);
                check_status(&fetched, expect)?;
                let Ok(json) = fetched else { return Ok(()) };
                if expect_event_counts.is_empty() {
                    return Ok(());
                }
                let value: serde_json::Value = serde_json::from_str(&json)
                    .map_err(|err| format!("fetched events are not JSON ({err}): {json}"))?;
                let events = value["events"].as_array().ok_or_else(|| {
                    format!("fetched JSON has no events array, expected one: {json}")
                })?;
                for (kind, want) in expect_event_counts {
                    let got = events.iter().filter(|event| event["type"] == kind.as_str()).count();
                    if got != *want {
                        return Err(format!("{got} {kind} events fetched, expected {want}"));
                    }
                }
                Ok(())
            }
            Step::SysTraceStop { expect } => check_status(&rt.sys_trace_stop(), expect),
            Step::NrtaErrorTrackerCreate { lnc, label: as_name, expect } => {
                let result = rt.nrta_error_tracker_create(lnc.unwrap_or(0));
                check_status(&result, expect)?;
                if let Ok(tracker) = result {
                    self.requests.trackers.insert(as_name.clone(), tracker);
                }
                Ok(())
            }
            Step::NrtaTensorWrite {
                tensor,
                offset,
                data,
                queue,
                tracker,
                label: as_name,
                expect,
            } => {
                let bytes = encode_values(scalar_type(&data.dtype)?, &data.values)?;
                let tracker = self.tracker_label(tracker)?;
                let tensor = label(&self.tensors, tensor, "tensor")?;
                let result = rt.nrta_tensor_write(
                    tensor,
                    offset.unwrap_or(0),
                    &bytes,
                    queue.unwrap_or(0),
                    tracker,
                );
                self.scheduled(result, as_name, expect)
            }
            Step::NrtaTensorRead {
                tensor,
                offset,
                size,
                queue,
                tracker,
                label: as_name,
                expect,
            } => {
                let tracker = self.tracker_label(tracker)?;
                let tensor = label(&self.tensors, tensor, "tensor")?;
                let into = Arc::new(abi::runtime::AsyncReadBuffer::new());
                let result = rt.nrta_tensor_read(
                    tensor,
                    offset.unwrap_or(0),
                    *size,
                    queue.unwrap_or(0),
                    tracker,
                    Arc::clone(&into),
                );
                if let Some(name) = as_name {
                    self.requests.reads.insert(name.clone(), into);
                }
                self.scheduled(result, as_name, expect)
            }
            Step::NrtaExecuteSchedule {
                model,
                inputs,
                outputs,
                queue,
                tracker,
                label: as_name,
                expect,
            } => {
                let tracker = self.tracker_label(tracker)?;
                let result = rt.nrta_execute_schedule(
                    label(&self.models, model, "model")?,
                    label(&self.sets, inputs, "tensor set")?,
                    label(&self.sets, outputs, "tensor set")?,
                    queue.unwrap_or(0),
                    tracker,
                );
                self.scheduled(result, as_name, expect)
            }
            Step::NrtaWait { request } => {
                let seq = label(&self.requests.seqs, request, "async request")?;
                // Polled on the backend itself: how many polls it takes is timing, not behaviour.
                let start = std::time::Instant::now();
                loop {
                    match self.raw.nrta_is_completed(seq) {
                        Ok(true) => break,
                        Ok(false) if start.elapsed() < std::time::Duration::from_secs(10) => {
                            std::thread::sleep(std::time::Duration::from_micros(100));
                        }
                        Ok(false) => {
                            return Err(format!("request {request} did not complete in 10 s"));
                        }
                        Err(err) => return Err(format!("nrta_is_completed of {request}: {err}")),
                    }
                }
                self.trace.record_with(|names| format!("wait {} -> completed", names.seq(seq)));
                Ok(())
            }
            Step::NrtaReadResult { request, expect_values } => {
                let into = self.requests.reads.get(request).ok_or_else(|| {
                    format!("no async read labelled {request:?} in an earlier step")
                })?;
                let want =
                    encode_values(scalar_type(&expect_values.dtype)?, &expect_values.values)?;
                match into.bytes() {
                    Some(got) if got == want => Ok(()),
                    Some(got) => Err(format!(
                        "async read {request} gave {}, expected {}",
                        to_hex_spaced(&got),
                        to_hex_spaced(&want)
                    )),
                    None => {
                        Err(format!("async read {request} has no bytes, expected a completed read"))
                    }
                }
            }
            Step::NrtaDrain { vnc, expect } => {
                check_status(&rt.nrt_async_drain_queued_execs(vnc.unwrap_or(0)), expect)
            }
            Step::NrtaErrorTrackerGetList { tracker, expect_failed, expect } => {
                let tracker = label(&self.requests.trackers, tracker, "error tracker")?;
                let result = rt.nrta_error_tracker_get_list(tracker);
                check_status(&result, expect)?;
                let Ok(errors) = result else { return Ok(()) };
                let mut want = Vec::new();
                for (request, status) in expect_failed {
                    want.push((
                        label(&self.requests.seqs, request, "async request")?,
                        status.clone(),
                    ));
                }
                want.sort();
                let mut got: Vec<_> =
                    errors.iter().map(|(seq, status)| (*seq, status.name())).collect();
                got.sort();
                if got == want {
                    Ok(())
                } else {
                    Err(format!("failed requests {got:?}, expected {want:?}"))
                }
            }
            Step::GetVncMemoryStats { vnc, expect_used_at_least, expect } => {
                let stats = rt.get_vnc_memory_stats(*vnc);
                check_status(&stats, expect)?;
                match (stats, expect_used_at_least) {
                    (Ok(stats), _) if stats.bytes_used > stats.bytes_limit => Err(format!(
                        "{} bytes used of a {} byte limit, expected at most the limit",
                        stats.bytes_used, stats.bytes_limit
                    )),
                    (Ok(stats), Some(least)) if stats.bytes_used < *least => Err(format!(
                        "{} bytes used on vnc {vnc}, expected at least {least}",
                        stats.bytes_used
                    )),
                    _ => Ok(()),
                }
            }
            Step::TensorWriteBatch { untracked, batches, expect } => {
                let mut calls = Vec::new();
                for batch in batches {
                    let mut ops = Vec::new();
                    for op in &batch.ops {
                        let bytes = encode_values(scalar_type(&op.data.dtype)?, &op.data.values)?;
                        ops.push((op.offset.unwrap_or(0), bytes));
                    }
                    let tensor = label(&self.tensors, &batch.tensor, "tensor")?;
                    calls.push(TensorWriteBatch { tensor, ops });
                }
                check_status(&rt.tensor_write_batch(&calls, *untracked), expect)
            }
            Step::TensorReadBatch { untracked, batches, expect } => {
                let mut calls = Vec::new();
                for batch in batches {
                    let ranges =
                        batch.ranges.iter().map(|range| (range.offset.unwrap_or(0), range.size));
                    let tensor = label(&self.tensors, &batch.tensor, "tensor")?;
                    calls.push(TensorReadBatch { tensor, ranges: ranges.collect() });
                }
                let result = rt.tensor_read_batch(&calls, *untracked);
                check_status(&result, expect)?;
                let Ok(read) = result else { return Ok(()) };
                let ranges = batches.iter().flat_map(|batch| &batch.ranges);
                if read.len() != ranges.clone().count() {
                    return Err(format!(
                        "{} ranges read, expected {}",
                        read.len(),
                        ranges.clone().count()
                    ));
                }
                for (index, (range, got)) in ranges.zip(&read).enumerate() {
                    let Some(Elements { dtype, values }) = &range.expect_values else { continue };
                    let scalar_type = scalar_type(dtype)?;
                    let want = encode_values(scalar_type, values)?;
                    if !same_elements(scalar_type, &want, got) {
                        return Err(format!(
                            "range {index} read {}, expected {}",
                            to_hex_spaced(got),
                            to_hex_spaced(&want)
                        ));
                    }
                }
                Ok(())
            }
            Step::TensorCheckOutputCompletion { tensor, timeout_us, expected_count, expect } => {
                let tensor = label(&self.tensors, tensor, "tensor")?;
                check_status(
                    &rt.tensor_check_output_completion(
                        tensor,
                        timeout_us.unwrap_or(0),
                        *expected_count,
                    ),
                    expect,
                )
            }
            Step::TensorResetOutputCompletion { tensor, expect } => {
                let tensor = label(&self.tensors, tensor, "tensor")?;
                check_status(&rt.tensor_reset_output_completion(tensor), expect)
            }
            Step::GetModelInfo { model, expect_vnc, expect } => {
                let result = rt.get_model_info(label(&self.models, model, "model")?);
                check_status(&result, expect)?;
                match (result, expect_vnc) {
                    (Ok(vnc), Some(want)) if vnc != *want => {
                        Err(format!("model {model} starts on vnc {vnc}, expected {want}"))
                    }
                    _ => Ok(()),
                }
            }
            Step::MemcpyToDevice { tensor, offset, data, expect } => {
                let bytes = encode_values(scalar_type(&data.dtype)?, &data.values)?;
                let va = rt
                    .tensor_get_va(label(&self.tensors, tensor, "tensor")?)
                    .map_err(|err| format!("nrt_tensor_get_va of {tensor}: {err}"))?;
                let offset = offset.unwrap_or(0);
                let address = va.checked_add(offset).ok_or_else(|| {
                    format!(
                        "address {va:#x} + offset {offset} overflows, expected a smaller offset"
                    )
                })?;
                check_status(&rt.memcpy_to_device(address, &bytes), expect)
            }
        }
    }
}
