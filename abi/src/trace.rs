//! The canonical trace: every runtime call and binding event, normalised so that two backends'
//! traces compare line by line (DESIGN.md, "Conformance vectors").
//!
//! Design choices:
//! - **One mechanism for every caller.** [`TracingRuntime`] wraps any `Arc<dyn Runtime>` and is
//!   itself a [`Runtime`]: it forwards each call and records it. The binding layer
//!   (the `bind` crate) wraps its runtime in one when a trace is asked for, and the conformance
//!   runner wraps the runtime of its raw steps the same way, so both write the same lines.
//! - **Handles are renamed in order of first appearance**, per kind: tensors `t1, t2, …`, sets
//!   `s1, …`, models `m1, …`. Runtimes never reuse handles, so a name stays valid for the whole
//!   trace, and two backends that make the same calls give the same names.
//! - **Values that differ by nature are normalised**: a tensor's address is `<va>`, the version
//!   is `<version>`. Bytes are inline hex when at most [`INLINE_BYTES`] long, otherwise
//!   `<N bytes sha256:…>` with the first 16 hex digits of the SHA-256.
//! - **Statuses, not details.** A failed call is traced with its status name only; the detail
//!   text is for humans and differs between backends.
//! - **Deterministic.** No addresses, no times, no hash-map iteration: the only maps are lookups.
//! - **Concurrent work traces as if it ran in order.** Work that must run at once (the ranks of a
//!   collective launch, which wait for each other) records into [`Trace::fork`]s, and
//!   [`Trace::join`] appends them in a fixed order, naming the handles they named first as the
//!   one-after-another run would have: the text is the same, byte for byte.
//! - **Costs nothing when off**: the binding layer holds an `Option<Arc<Trace>>` and neither wraps
//!   its runtime nor formats a line when it is `None`.
//!
//! Line formats (the conformance goldens depend on them):
//! ```text
//! tensor_allocate(DEVICE, 0, 4096, "input0") -> t1 NRT_SUCCESS
//! add_tensor_to_tensor_set(s1, "input0", t1) -> NRT_SUCCESS
//! tensor_write(t1, 0, <4096 bytes sha256:0123456789abcdef>) -> NRT_SUCCESS
//! execute(m1, s1, s2) -> NRT_EXEC_COMPLETED_WITH_NUM_ERR
//! tensor_read(t3, 0, 4) -> [00 00 80 3f] NRT_SUCCESS
//! load(<1234 bytes sha256:0123456789abcdef>, -1, 1) -> NRT_INVALID
//! bind input 0 "input0" -> t1 var_id 1 MR_INPUT
//! rebind skipped input 0
//! alias output 0 = input 0 (shared storage)
//! validate error dtype input 0 "input0": Expected tensor.dtype() == dtype (expected Float, got Int)
//! status tolerated NRT_EXEC_COMPLETED_WITH_NUM_ERR
//! ```

use std::collections::HashMap;
use std::fmt::Write as _;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use sha2::{Digest, Sha256};

use crate::functions::LibnrtFunction;
use crate::runtime::{
    AsyncReadBuffer, ExternalBuffer, Framework, InspectConfig, InstanceInfo, ModelId, NrtError,
    NrtVersion, Placement, Runtime, SeqId, SetId, SysTraceConfig, SysTraceFetch, TensorId,
    TensorInfo, TensorReadBatch, TensorUsage, TensorWriteBatch, TrackerId, VncMemoryStats,
};
use crate::status::NrtStatus;

pub mod parse;

/// Byte strings up to this length are traced inline as hex; longer ones as a SHA-256 prefix.
pub const INLINE_BYTES: usize = 32;

/// A thread-safe recorder of trace lines, with the handle renaming state.
#[derive(Debug, Default)]
pub struct Trace {
    state: Mutex<TraceState>,
}

/// A handle of any kind, as the renaming state keys it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Handle {
    Tensor(TensorId),
    Set(SetId),
    Model(ModelId),
    Seq(SeqId),
    Tracker(TrackerId),
}

impl Handle {
    /// The name's prefix, and the index of the kind's counter.
    fn kind(self) -> (char, usize) {
        match self {
            Handle::Tensor(_) => ('t', 0),
            Handle::Set(_) => ('s', 1),
            Handle::Model(_) => ('m', 2),
            Handle::Seq(_) => ('q', 3),
            Handle::Tracker(_) => ('e', 4),
        }
    }
}

/// Stands in a fork's line for a handle the fork named first; a Unicode noncharacter (kept for a
/// program's internal use), which no traced name or value contains.
const PLACEHOLDER: char = '\u{fdd0}';

#[derive(Debug, Default)]
struct TraceState {
    lines: Vec<String>,
    /// The number of each handle, per kind: `t3` is the third tensor named.
    names: HashMap<Handle, usize>,
    /// How many handles of each kind have been named.
    counts: [usize; 5],
    /// In a fork: the handles it named first, in that order, written as placeholders until
    /// [`Trace::join`] names them.
    fork: Option<ForkNames>,
}

#[derive(Debug, Default)]
struct ForkNames {
    order: Vec<Handle>,
    index: HashMap<Handle, usize>,
}

/// Renames handles while a line is being written; see [`Trace::record_with`].
#[derive(Debug)]
pub struct Names<'trace> {
    state: &'trace mut TraceState,
}

impl Names<'_> {
    /// The name of `handle`, assigned on first use (a placeholder in a fork).
    fn name(&mut self, handle: Handle) -> String {
        let (prefix, kind) = handle.kind();
        if let Some(number) = self.state.names.get(&handle) {
            return format!("{prefix}{number}");
        }
        if let Some(fork) = &mut self.state.fork {
            let next = fork.order.len();
            let index = *fork.index.entry(handle).or_insert(next);
            if index == next {
                fork.order.push(handle);
            }
            return format!("{PLACEHOLDER}{index}{PLACEHOLDER}");
        }
        self.state.counts[kind] += 1;
        let number = self.state.counts[kind];
        self.state.names.insert(handle, number);
        format!("{prefix}{number}")
    }

    /// The trace name of a tensor (`t1`, …), assigned on first use.
    pub fn tensor(&mut self, tensor: TensorId) -> String {
        self.name(Handle::Tensor(tensor))
    }

    /// The trace name of a tensor set (`s1`, …), assigned on first use.
    pub fn set(&mut self, set: SetId) -> String {
        self.name(Handle::Set(set))
    }

    /// The trace name of a model (`m1`, …), assigned on first use.
    pub fn model(&mut self, model: ModelId) -> String {
        self.name(Handle::Model(model))
    }

    /// The trace name of an async request (`q1`, …), assigned on first use: sequence ids are
    /// each library's own encoding.
    pub fn seq(&mut self, seq: SeqId) -> String {
        self.name(Handle::Seq(seq))
    }

    /// The trace name of an error tracker (`e1`, …), assigned on first use.
    pub fn tracker(&mut self, tracker: TrackerId) -> String {
        self.name(Handle::Tracker(tracker))
    }

    /// An optional tracker, `-` for none.
    fn maybe_tracker(&mut self, tracker: Option<TrackerId>) -> String {
        tracker.map_or_else(|| "-".to_owned(), |tracker| self.tracker(tracker))
    }
}

impl Trace {
    /// An empty trace.
    pub fn new() -> Trace {
        Trace::default()
    }

    fn lock(&self) -> MutexGuard<'_, TraceState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Appends a line that names no handle.
    pub fn record(&self, line: impl Into<String>) {
        self.lock().lines.push(line.into());
    }

    /// Appends the line `write` builds; handles it names through [`Names`] are renamed under the
    /// same lock, so the order of names is the order of lines even across threads.
    pub fn record_with(&self, write: impl FnOnce(&mut Names<'_>) -> String) {
        let mut state = self.lock();
        let line = write(&mut Names { state: &mut state });
        state.lines.push(line);
    }

    /// Every line so far, oldest first.
    pub fn lines(&self) -> Vec<String> {
        self.lock().lines.clone()
    }

    /// The lines joined with `\n`, with a trailing newline (empty for an empty trace).
    pub fn text(&self) -> String {
        let state = self.lock();
        let mut text = String::new();
        for line in &state.lines {
            text.push_str(line);
            text.push('\n');
        }
        text
    }

    /// Forgets every line (the handle names are kept, so later lines stay consistent).
    pub fn clear_lines(&self) {
        self.lock().lines.clear();
    }

    /// A trace for one of several pieces of work that run at once (the ranks of a collective
    /// launch), to be given back to [`Trace::join`]. It knows every name given so far; a handle
    /// it names first is written as a placeholder, since its name depends on what the other
    /// pieces name.
    pub fn fork(&self) -> Trace {
        let state = self.lock();
        Trace {
            state: Mutex::new(TraceState {
                lines: Vec::new(),
                names: state.names.clone(),
                counts: state.counts,
                fork: Some(ForkNames::default()),
            }),
        }
    }

    /// Appends the lines of `forks`, in the given order, exactly as if each fork's work had run
    /// here after the previous one's: the handles a fork named first are named now, in the order
    /// that fork first used them (or keep the name an earlier fork gave them).
    /// The forks' lines move here (a fork is left empty, its names kept).
    pub fn join<'f>(&self, forks: impl IntoIterator<Item = &'f Trace>) {
        let mut state = self.lock();
        for fork in forks {
            let (lines, order) = {
                let mut fork = fork.lock();
                let order = fork.fork.as_mut().map(|names| names.order.clone()).unwrap_or_default();
                (std::mem::take(&mut fork.lines), order)
            };
            let mut names = Names { state: &mut state };
            let finals: Vec<String> = order.into_iter().map(|handle| names.name(handle)).collect();
            for line in lines {
                let line = if line.contains(PLACEHOLDER) {
                    // `text PH index PH text …`: the odd pieces are placeholder indexes.
                    line.split(PLACEHOLDER)
                        .enumerate()
                        .map(|(piece, text)| match piece % 2 {
                            1 => text
                                .parse::<usize>()
                                .ok()
                                .and_then(|i| finals.get(i))
                                .map_or(text, String::as_str),
                            _ => text,
                        })
                        .collect()
                } else {
                    line
                };
                state.lines.push(line);
            }
        }
    }
}

/// Bytes as a trace argument: `[00 01 ff]` when at most [`INLINE_BYTES`] long, otherwise
/// `<N bytes sha256:first16hex>`.
pub fn format_bytes(bytes: &[u8]) -> String {
    if bytes.len() <= INLINE_BYTES {
        let mut text = String::with_capacity(2 + 3 * bytes.len());
        text.push('[');
        crate::hex::push_hex_spaced(&mut text, bytes);
        text.push(']');
        text
    } else {
        let digest = Sha256::digest(bytes);
        let mut text = format!("<{} bytes{DIGEST_TAG}", bytes.len());
        crate::hex::push_hex(&mut text, &digest[..DIGEST_PREFIX_BYTES]);
        text.push('>');
        text
    }
}

/// How many bytes of the SHA-256 a long byte string's argument shows (16 hex digits).
pub const DIGEST_PREFIX_BYTES: usize = 8;

/// What stands between the length and the digest in `<N bytes sha256:…>`.
pub(crate) const DIGEST_TAG: &str = " sha256:";

/// What stands between a call and its result: `name(args) -> RESULT`.
pub const RESULT_ARROW: &str = " -> ";

/// The arguments of a call recorded by name only (the recorder could not show them):
/// `name(…) -> STATUS`. A replay does not re-issue such a call.
pub const UNRECORDED_ARGS: &str = "…";

/// The start of a line recording stores a program made through a tensor's address:
/// `# memory TENSOR OFFSET BYTES`.
pub const MEMORY_PREFIX: &str = "# memory ";

/// The start of a line saying the program saw an async request complete: `# completed SEQ`.
pub const COMPLETED_PREFIX: &str = "# completed ";

/// A call line from its parts: `name(args) -> result`, or `name(args)` for a call without a
/// result (such as `close()`).
pub fn call_line(name: &str, args: &str, result: Option<&str>) -> String {
    let result_len = result.map_or(0, |result| RESULT_ARROW.len() + result.len());
    let mut line = String::with_capacity(name.len() + args.len() + 2 + result_len);
    line.push_str(name);
    line.push('(');
    line.push_str(args);
    line.push(')');
    if let Some(result) = result {
        line.push_str(RESULT_ARROW);
        line.push_str(result);
    }
    line
}

/// The `# memory TENSOR OFFSET BYTES` line, with the bytes as [`format_bytes`] shows them.
pub fn memory_line(tensor: &str, offset: usize, bytes: &[u8]) -> String {
    format!("{MEMORY_PREFIX}{tensor} {offset} {}", format_bytes(bytes))
}

/// The `# completed SEQ` line.
pub fn completed_line(seq: &str) -> String {
    format!("{COMPLETED_PREFIX}{seq}")
}

/// A caller-owned buffer argument as traced: `<N bytes buffer>` (its address differs by run).
pub fn buffer_text(n_bytes: u64) -> String {
    format!("<{n_bytes}{BUFFER_TAG}")
}

/// What follows the size in `<N bytes buffer>`.
pub(crate) const BUFFER_TAG: &str = " bytes buffer>";

/// A name as traced: a UTF-8 name as a quoted Rust string (`"input0"`), any other bytes as a
/// quoted byte string with escapes (`b"i\xff"`), so every name is shown exactly and the two
/// forms never collide.
pub fn name_text(name: &[u8]) -> String {
    match std::str::from_utf8(name) {
        Ok(text) => format!("{text:?}"),
        Err(_) => format!("b\"{}\"", name.escape_ascii()),
    }
}

/// The C name of a placement, as traced (`DEVICE`, `HOST`, `VIRTUAL`).
pub fn placement_name(placement: Placement) -> &'static str {
    match placement {
        Placement::Device => "DEVICE",
        Placement::Host => "HOST",
        Placement::Virtual => "VIRTUAL",
    }
}

/// The C name of a framework, as traced (`NO_FW`, `PYTORCH`, …).
pub fn framework_name(framework: Framework) -> &'static str {
    match framework {
        Framework::Invalid => "INVALID",
        Framework::NoFw => "NO_FW",
        Framework::Tensorflow => "TENSORFLOW",
        Framework::Pytorch => "PYTORCH",
        Framework::Mxnet => "MXNET",
        Framework::Precheck => "PRECHECK",
    }
}

/// Tensor info as traced: `[INPUT "input0" 16 FLOAT32 [4], …]`.
pub fn tensor_info_text(info: &[TensorInfo]) -> String {
    let entries: Vec<String> = info
        .iter()
        .map(|entry| {
            let usage = match entry.usage {
                TensorUsage::Input => "INPUT",
                TensorUsage::Output => "OUTPUT",
            };
            let dtype = entry.dtype.name().unwrap_or("UNKNOWN");
            format!("{usage} {:?} {} {dtype} {:?}", entry.name, entry.size, entry.shape)
        })
        .collect();
    format!("[{}]", entries.join(", "))
}

/// `call -> result STATUS` for a call that returns a value, `call -> STATUS` for a failure.
fn outcome<T>(
    names: &mut Names<'_>,
    call: String,
    result: &Result<T, NrtError>,
    show: impl FnOnce(&mut Names<'_>, &T) -> Option<String>,
) -> String {
    match result {
        Ok(value) => match show(names, value) {
            Some(shown) => format!("{call}{RESULT_ARROW}{shown} NRT_SUCCESS"),
            None => format!("{call}{RESULT_ARROW}NRT_SUCCESS"),
        },
        Err(error) => format!("{call}{RESULT_ARROW}{}", error.status.name()),
    }
}

/// The line of a launch: a completed launch shows its status (success or 1003), a failed one
/// the error's.
fn launch_line(call: &str, result: &Result<NrtStatus, NrtError>) -> String {
    let status = match result {
        Ok(status) => *status,
        Err(error) => error.status,
    };
    format!("{call}{RESULT_ARROW}{}", status.name())
}

/// A [`Runtime`] that forwards every call to another and records it in a [`Trace`].
pub struct TracingRuntime {
    inner: Arc<dyn Runtime>,
    trace: Arc<Trace>,
}

impl std::fmt::Debug for TracingRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TracingRuntime").finish_non_exhaustive()
    }
}

impl TracingRuntime {
    /// Wraps `inner`; every call is recorded in `trace`.
    pub fn new(inner: Arc<dyn Runtime>, trace: Arc<Trace>) -> TracingRuntime {
        TracingRuntime { inner, trace }
    }

    /// The trace calls are recorded in.
    pub fn trace(&self) -> &Arc<Trace> {
        &self.trace
    }

    /// The wrapped runtime.
    pub fn inner(&self) -> &Arc<dyn Runtime> {
        &self.inner
    }

    /// Records a call that returns no value.
    fn unit(
        &self,
        result: Result<(), NrtError>,
        call: impl FnOnce(&mut Names<'_>) -> String,
    ) -> Result<(), NrtError> {
        self.trace.record_with(|names| {
            let call = call(names);
            outcome(names, call, &result, |_, ()| None)
        });
        result
    }
}

impl Runtime for TracingRuntime {
    fn init(
        &self,
        framework: Framework,
        fw_version: &str,
        fal_version: &str,
    ) -> Result<(), NrtError> {
        let result = self.inner.init(framework, fw_version, fal_version);
        self.unit(result, |_| {
            format!(
                "{}({}, {fw_version:?}, {fal_version:?})",
                LibnrtFunction::nrt_init.trace_name(),
                framework_name(framework)
            )
        })
    }

    fn close(&self) {
        self.inner.close();
        self.trace.record(format!("{}()", LibnrtFunction::nrt_close.trace_name()));
    }

    fn load(&self, neff: &[u8], vnc: i32, vnc_count: i32) -> Result<ModelId, NrtError> {
        let result = self.inner.load(neff, vnc, vnc_count);
        self.trace.record_with(|names| {
            let call = format!(
                "{}({}, {vnc}, {vnc_count})",
                LibnrtFunction::nrt_load.trace_name(),
                format_bytes(neff)
            );
            outcome(names, call, &result, |names, &model| Some(names.model(model)))
        });
        result
    }

    fn load_collectives(
        &self,
        neff: &[u8],
        vnc: i32,
        vnc_count: i32,
        ctx_device_id: u32,
        ctx_device_count: u32,
    ) -> Result<ModelId, NrtError> {
        let result =
            self.inner.load_collectives(neff, vnc, vnc_count, ctx_device_id, ctx_device_count);
        self.trace.record_with(|names| {
            let call = format!(
                "{}({}, {vnc}, {vnc_count}, {ctx_device_id}, {ctx_device_count})",
                LibnrtFunction::nrt_load_collectives.trace_name(),
                format_bytes(neff)
            );
            outcome(names, call, &result, |names, &model| Some(names.model(model)))
        });
        result
    }

    fn unload(&self, model: ModelId) -> Result<(), NrtError> {
        let result = self.inner.unload(model);
        self.unit(result, |names| {
            format!("{}({})", LibnrtFunction::nrt_unload.trace_name(), names.model(model))
        })
    }

    fn execute(
        &self,
        model: ModelId,
        input_set: SetId,
        output_set: SetId,
    ) -> Result<NrtStatus, NrtError> {
        let result = self.inner.execute(model, input_set, output_set);
        self.trace.record_with(|names| {
            let call = format!(
                "{}({}, {}, {})",
                LibnrtFunction::nrt_execute.trace_name(),
                names.model(model),
                names.set(input_set),
                names.set(output_set)
            );
            launch_line(&call, &result)
        });
        result
    }

    fn execute_repeat(
        &self,
        model: ModelId,
        input_set: SetId,
        output_set: SetId,
        repeat_count: i32,
    ) -> Result<NrtStatus, NrtError> {
        let result = self.inner.execute_repeat(model, input_set, output_set, repeat_count);
        self.trace.record_with(|names| {
            let call = format!(
                "{}({}, {}, {}, {repeat_count})",
                LibnrtFunction::nrt_execute_repeat.trace_name(),
                names.model(model),
                names.set(input_set),
                names.set(output_set)
            );
            launch_line(&call, &result)
        });
        result
    }

    fn allocate_tensor_set(&self) -> Result<SetId, NrtError> {
        let result = self.inner.allocate_tensor_set();
        self.trace.record_with(|names| {
            outcome(
                names,
                format!("{}()", LibnrtFunction::nrt_allocate_tensor_set.trace_name()),
                &result,
                |names, &set| Some(names.set(set)),
            )
        });
        result
    }

    fn destroy_tensor_set(&self, set: SetId) -> Result<(), NrtError> {
        let result = self.inner.destroy_tensor_set(set);
        self.unit(result, |names| {
            format!("{}({})", LibnrtFunction::nrt_destroy_tensor_set.trace_name(), names.set(set))
        })
    }

    fn add_tensor_to_tensor_set(
        &self,
        set: SetId,
        name: &[u8],
        tensor: TensorId,
    ) -> Result<(), NrtError> {
        let result = self.inner.add_tensor_to_tensor_set(set, name, tensor);
        self.unit(result, |names| {
            format!(
                "{}({}, {}, {})",
                LibnrtFunction::nrt_add_tensor_to_tensor_set.trace_name(),
                names.set(set),
                name_text(name),
                names.tensor(tensor)
            )
        })
    }

    fn get_tensor_from_tensor_set(&self, set: SetId, name: &[u8]) -> Result<TensorId, NrtError> {
        let result = self.inner.get_tensor_from_tensor_set(set, name);
        self.trace.record_with(|names| {
            let call = format!(
                "{}({}, {})",
                LibnrtFunction::nrt_get_tensor_from_tensor_set.trace_name(),
                names.set(set),
                name_text(name)
            );
            outcome(names, call, &result, |names, &tensor| Some(names.tensor(tensor)))
        });
        result
    }

    fn tensor_allocate(
        &self,
        placement: Placement,
        vnc: i32,
        size: usize,
        name: &[u8],
    ) -> Result<TensorId, NrtError> {
        let result = self.inner.tensor_allocate(placement, vnc, size, name);
        self.trace.record_with(|names| {
            let call = format!(
                "{}({}, {vnc}, {size}, {})",
                LibnrtFunction::nrt_tensor_allocate.trace_name(),
                placement_name(placement),
                name_text(name)
            );
            outcome(names, call, &result, |names, &tensor| Some(names.tensor(tensor)))
        });
        result
    }

    fn tensor_allocate_empty(&self, name: &[u8]) -> Result<TensorId, NrtError> {
        let result = self.inner.tensor_allocate_empty(name);
        self.trace.record_with(|names| {
            let call = format!(
                "{}({})",
                LibnrtFunction::nrt_tensor_allocate_empty.trace_name(),
                name_text(name)
            );
            outcome(names, call, &result, |names, &tensor| Some(names.tensor(tensor)))
        });
        result
    }

    fn tensor_attach_buffer(
        &self,
        tensor: TensorId,
        buffer: Arc<dyn ExternalBuffer>,
    ) -> Result<(), NrtError> {
        let n_bytes = buffer.len();
        let result = self.inner.tensor_attach_buffer(tensor, buffer);
        self.unit(result, |names| {
            format!(
                "{}({}, <{n_bytes} bytes buffer>)",
                LibnrtFunction::nrt_tensor_attach_buffer.trace_name(),
                names.tensor(tensor)
            )
        })
    }

    fn tensor_allocate_slice(
        &self,
        src: TensorId,
        offset: usize,
        size: usize,
        name: &[u8],
    ) -> Result<TensorId, NrtError> {
        let result = self.inner.tensor_allocate_slice(src, offset, size, name);
        self.trace.record_with(|names| {
            let call = format!(
                "{}({}, {offset}, {size}, {})",
                LibnrtFunction::nrt_tensor_allocate_slice.trace_name(),
                names.tensor(src),
                name_text(name)
            );
            outcome(names, call, &result, |names, &tensor| Some(names.tensor(tensor)))
        });
        result
    }

    fn tensor_free(&self, tensor: TensorId) -> Result<(), NrtError> {
        let result = self.inner.tensor_free(tensor);
        self.unit(result, |names| {
            format!("{}({})", LibnrtFunction::nrt_tensor_free.trace_name(), names.tensor(tensor))
        })
    }

    fn tensor_read(&self, tensor: TensorId, offset: usize, buf: &mut [u8]) -> Result<(), NrtError> {
        let result = self.inner.tensor_read(tensor, offset, buf);
        self.trace.record_with(|names| {
            let call = format!(
                "{}({}, {offset}, {})",
                LibnrtFunction::nrt_tensor_read.trace_name(),
                names.tensor(tensor),
                buf.len()
            );
            outcome(names, call, &result, |_, ()| Some(format_bytes(buf)))
        });
        result
    }

    fn tensor_write(&self, tensor: TensorId, offset: usize, bytes: &[u8]) -> Result<(), NrtError> {
        let result = self.inner.tensor_write(tensor, offset, bytes);
        self.unit(result, |names| {
            format!(
                "{}({}, {offset}, {})",
                LibnrtFunction::nrt_tensor_write.trace_name(),
                names.tensor(tensor),
                format_bytes(bytes)
            )
        })
    }

    fn tensor_copy(
        &self,
        src: TensorId,
        src_offset: usize,
        dst: TensorId,
        dst_offset: usize,
        size: usize,
    ) -> Result<(), NrtError> {
        let result = self.inner.tensor_copy(src, src_offset, dst, dst_offset, size);
        self.unit(result, |names| {
            format!(
                "{}({}, {src_offset}, {}, {dst_offset}, {size})",
                LibnrtFunction::nrt_tensor_copy.trace_name(),
                names.tensor(src),
                names.tensor(dst)
            )
        })
    }

    fn tensor_memset(
        &self,
        tensor: TensorId,
        offset: u64,
        value: i32,
        size: usize,
    ) -> Result<(), NrtError> {
        let result = self.inner.tensor_memset(tensor, offset, value, size);
        self.unit(result, |names| {
            format!(
                "{}({}, {offset}, {value}, {size})",
                LibnrtFunction::nrt_tensor_memset.trace_name(),
                names.tensor(tensor)
            )
        })
    }

    fn tensor_get_size(&self, tensor: TensorId) -> Result<usize, NrtError> {
        let result = self.inner.tensor_get_size(tensor);
        self.trace.record_with(|names| {
            let call = format!(
                "{}({})",
                LibnrtFunction::nrt_tensor_get_size.trace_name(),
                names.tensor(tensor)
            );
            outcome(names, call, &result, |_, size| Some(size.to_string()))
        });
        result
    }

    fn tensor_get_va(&self, tensor: TensorId) -> Result<usize, NrtError> {
        let result = self.inner.tensor_get_va(tensor);
        self.trace.record_with(|names| {
            let call = format!(
                "{}({})",
                LibnrtFunction::nrt_tensor_get_va.trace_name(),
                names.tensor(tensor)
            );
            outcome(names, call, &result, |_, _| Some("<va>".to_owned()))
        });
        result
    }

    fn get_model_tensor_info(&self, model: ModelId) -> Result<Vec<TensorInfo>, NrtError> {
        let result = self.inner.get_model_tensor_info(model);
        self.trace.record_with(|names| {
            let call = format!(
                "{}({})",
                LibnrtFunction::nrt_get_model_tensor_info.trace_name(),
                names.model(model)
            );
            outcome(names, call, &result, |_, info| Some(tensor_info_text(info)))
        });
        result
    }

    fn get_version(&self) -> Result<NrtVersion, NrtError> {
        let result = self.inner.get_version();
        self.trace.record_with(|names| {
            outcome(
                names,
                format!("{}()", LibnrtFunction::nrt_get_version.trace_name()),
                &result,
                |_, _| Some("<version>".to_owned()),
            )
        });
        result
    }

    fn get_total_vnc_count(&self) -> Result<u32, NrtError> {
        let result = self.inner.get_total_vnc_count();
        self.trace.record_with(|names| {
            outcome(
                names,
                format!("{}()", LibnrtFunction::nrt_get_total_vnc_count.trace_name()),
                &result,
                |_, count| Some(count.to_string()),
            )
        });
        result
    }

    fn get_visible_vnc_count(&self) -> Result<u32, NrtError> {
        let result = self.inner.get_visible_vnc_count();
        self.trace.record_with(|names| {
            outcome(
                names,
                format!("{}()", LibnrtFunction::nrt_get_visible_vnc_count.trace_name()),
                &result,
                |_, count| Some(count.to_string()),
            )
        });
        result
    }

    fn get_total_nc_count(&self) -> Result<u32, NrtError> {
        let result = self.inner.get_total_nc_count();
        self.count_line(LibnrtFunction::nrt_get_total_nc_count, String::new(), &result);
        result
    }

    fn get_visible_nc_count(&self) -> Result<u32, NrtError> {
        let result = self.inner.get_visible_nc_count();
        self.count_line(LibnrtFunction::nrt_get_visible_nc_count, String::new(), &result);
        result
    }

    fn get_model_nc_count(&self, model: ModelId) -> Result<u32, NrtError> {
        let result = self.inner.get_model_nc_count(model);
        self.model_count_line(LibnrtFunction::nrt_get_model_nc_count, model, &result);
        result
    }

    fn get_model_vnc_count(&self, model: ModelId) -> Result<u32, NrtError> {
        let result = self.inner.get_model_vnc_count(model);
        self.model_count_line(LibnrtFunction::nrt_get_model_vnc_count, model, &result);
        result
    }

    fn get_model_instance_count(&self, model: ModelId) -> Result<u32, NrtError> {
        let result = self.inner.get_model_instance_count(model);
        self.model_count_line(LibnrtFunction::nrt_get_model_instance_count, model, &result);
        result
    }

    fn sys_trace_get_event_types(&self) -> Result<Vec<String>, NrtError> {
        let result = self.inner.sys_trace_get_event_types();
        self.sys_trace_line(LibnrtFunction::nrt_sys_trace_get_event_types, String::new(), &result);
        result
    }

    fn sys_trace_start(&self, config: &SysTraceConfig) -> Result<(), NrtError> {
        let result = self.inner.sys_trace_start(config);
        let args = format!(
            "max_events_per_nc {:?}, disabled_ncs {:?}, disabled_event_types {:?}",
            config.max_events_per_nc, config.disabled_ncs, config.disabled_event_types
        );
        self.sys_trace_line(LibnrtFunction::nrt_sys_trace_start, args, &result);
        result
    }

    fn sys_trace_fetch_events(&self, fetch: &SysTraceFetch) -> Result<String, NrtError> {
        let result = self.inner.sys_trace_fetch_events(fetch);
        let args = format!("max_events_per_nc {:?}, nc {:?}", fetch.max_events_per_nc, fetch.nc);
        self.sys_trace_line(LibnrtFunction::nrt_sys_trace_fetch_events, args, &result);
        result
    }

    fn sys_trace_stop(&self) -> Result<(), NrtError> {
        let result = self.inner.sys_trace_stop();
        self.sys_trace_line(LibnrtFunction::nrt_sys_trace_stop, String::new(), &result);
        result
    }

    fn nrta_error_tracker_create(&self, lnc: u32) -> Result<TrackerId, NrtError> {
        let result = self.inner.nrta_error_tracker_create(lnc);
        self.trace.record_with(|names| {
            let call = format!("{}({lnc})", LibnrtFunction::nrta_error_tracker_create.trace_name());
            outcome(names, call, &result, |names, &tracker| Some(names.tracker(tracker)))
        });
        result
    }

    fn nrta_error_tracker_destroy(&self, tracker: TrackerId) -> Result<(), NrtError> {
        let result = self.inner.nrta_error_tracker_destroy(tracker);
        self.unit(result, |names| {
            let function = LibnrtFunction::nrta_error_tracker_destroy;
            format!("{}({})", function.trace_name(), names.tracker(tracker))
        })
    }

    fn nrta_error_tracker_get_list(
        &self,
        tracker: TrackerId,
    ) -> Result<Vec<(SeqId, NrtStatus)>, NrtError> {
        let result = self.inner.nrta_error_tracker_get_list(tracker);
        self.trace.record_with(|names| {
            let function = LibnrtFunction::nrta_error_tracker_get_list;
            let call = format!("{}({})", function.trace_name(), names.tracker(tracker));
            outcome(names, call, &result, |names, errors| {
                let errors: Vec<String> = errors
                    .iter()
                    .map(|&(seq, status)| format!("{} {}", names.seq(seq), status.name()))
                    .collect();
                Some(format!("[{}]", errors.join(", ")))
            })
        });
        result
    }

    fn nrta_tensor_write(
        &self,
        tensor: TensorId,
        offset: u64,
        bytes: &[u8],
        queue: i32,
        tracker: Option<TrackerId>,
    ) -> Result<SeqId, NrtError> {
        let result = self.inner.nrta_tensor_write(tensor, offset, bytes, queue, tracker);
        self.trace.record_with(|names| {
            let call = format!(
                "{}({}, {offset}, {}, {queue}, {})",
                LibnrtFunction::nrta_tensor_write.trace_name(),
                names.tensor(tensor),
                format_bytes(bytes),
                names.maybe_tracker(tracker)
            );
            outcome(names, call, &result, |names, &seq| Some(names.seq(seq)))
        });
        result
    }

    fn nrta_tensor_read(
        &self,
        tensor: TensorId,
        offset: u64,
        size: u64,
        queue: i32,
        tracker: Option<TrackerId>,
        into: Arc<AsyncReadBuffer>,
    ) -> Result<SeqId, NrtError> {
        let result = self.inner.nrta_tensor_read(tensor, offset, size, queue, tracker, into);
        self.trace.record_with(|names| {
            let call = format!(
                "{}({}, {offset}, {size}, {queue}, {})",
                LibnrtFunction::nrta_tensor_read.trace_name(),
                names.tensor(tensor),
                names.maybe_tracker(tracker)
            );
            outcome(names, call, &result, |names, &seq| Some(names.seq(seq)))
        });
        result
    }

    fn nrta_execute_schedule(
        &self,
        model: ModelId,
        input_set: SetId,
        output_set: SetId,
        queue: i32,
        tracker: Option<TrackerId>,
    ) -> Result<SeqId, NrtError> {
        let result = self.inner.nrta_execute_schedule(model, input_set, output_set, queue, tracker);
        self.trace.record_with(|names| {
            let call = format!(
                "{}({}, {}, {}, {queue}, {})",
                LibnrtFunction::nrta_execute_schedule.trace_name(),
                names.model(model),
                names.set(input_set),
                names.set(output_set),
                names.maybe_tracker(tracker)
            );
            outcome(names, call, &result, |names, &seq| Some(names.seq(seq)))
        });
        result
    }

    /// Not traced: a caller polls it a number of times that depends on timing. A caller that
    /// waits records the outcome itself.
    fn nrta_is_completed(&self, seq: SeqId) -> Result<bool, NrtError> {
        self.inner.nrta_is_completed(seq)
    }

    fn nrt_async_drain_queued_execs(&self, vnc: i32) -> Result<(), NrtError> {
        let result = self.inner.nrt_async_drain_queued_execs(vnc);
        self.unit(result, |_| {
            format!("{}({vnc})", LibnrtFunction::nrt_async_drain_queued_execs.trace_name())
        })
    }

    fn get_vnc_memory_stats(&self, vnc: u32) -> Result<VncMemoryStats, NrtError> {
        let result = self.inner.get_vnc_memory_stats(vnc);
        // The byte counts differ between backends by nature (allocation granules, what a
        // device reserves): only the status is traced.
        self.trace.record_with(|names| {
            let call = format!("{}({vnc})", LibnrtFunction::nrt_get_vnc_memory_stats.trace_name());
            outcome(names, call, &result, |_, _| Some("<stats>".to_owned()))
        });
        result
    }

    fn tensor_read_batch(
        &self,
        batches: &[TensorReadBatch],
        untracked: bool,
    ) -> Result<Vec<Vec<u8>>, NrtError> {
        let result = self.inner.tensor_read_batch(batches, untracked);
        self.trace.record_with(|names| {
            let mut args = String::new();
            for batch in batches {
                let ranges: Vec<String> =
                    batch.ranges.iter().map(|(offset, size)| format!("{offset}+{size}")).collect();
                let _ = write!(args, "{} [{}], ", names.tensor(batch.tensor), ranges.join(" "));
            }
            let call = format!(
                "{}({args}{untracked})",
                LibnrtFunction::nrt_tensor_read_batch.trace_name()
            );
            outcome(names, call, &result, |_, read| {
                let read: Vec<String> = read.iter().map(|bytes| format_bytes(bytes)).collect();
                (!read.is_empty()).then(|| read.join(" "))
            })
        });
        result
    }

    fn tensor_write_batch(
        &self,
        batches: &[TensorWriteBatch],
        untracked: bool,
    ) -> Result<(), NrtError> {
        let result = self.inner.tensor_write_batch(batches, untracked);
        self.unit(result, |names| {
            let mut args = String::new();
            for batch in batches {
                let ops: Vec<String> = batch
                    .ops
                    .iter()
                    .map(|(offset, bytes)| format!("{offset}:{}", format_bytes(bytes)))
                    .collect();
                let _ = write!(args, "{} [{}], ", names.tensor(batch.tensor), ops.join(" "));
            }
            format!("{}({args}{untracked})", LibnrtFunction::nrt_tensor_write_batch.trace_name())
        })
    }

    fn tensor_check_output_completion(
        &self,
        tensor: TensorId,
        timeout_us: i64,
        expected: u64,
    ) -> Result<(), NrtError> {
        let result = self.inner.tensor_check_output_completion(tensor, timeout_us, expected);
        self.unit(result, |names| {
            format!(
                "{}({}, {timeout_us}, {expected})",
                LibnrtFunction::nrt_tensor_check_output_completion.trace_name(),
                names.tensor(tensor)
            )
        })
    }

    fn tensor_reset_output_completion(&self, tensor: TensorId) -> Result<(), NrtError> {
        let result = self.inner.tensor_reset_output_completion(tensor);
        self.unit(result, |names| {
            format!(
                "{}({})",
                LibnrtFunction::nrt_tensor_reset_output_completion.trace_name(),
                names.tensor(tensor)
            )
        })
    }

    fn get_model_info(&self, model: ModelId) -> Result<u32, NrtError> {
        let result = self.inner.get_model_info(model);
        self.model_count_line(LibnrtFunction::nrt_get_model_info, model, &result);
        result
    }

    /// The address differs between backends by nature: traced as `<address>`.
    fn memcpy_to_device(&self, address: usize, bytes: &[u8]) -> Result<(), NrtError> {
        let result = self.inner.memcpy_to_device(address, bytes);
        self.unit(result, |_| {
            format!(
                "{}(<address>, {})",
                LibnrtFunction::nrt_memcpy_to_device.trace_name(),
                format_bytes(bytes)
            )
        })
    }

    // Instance information and profiling: paths are traced as `<path>` (they name a folder of
    // the run), and what the calls return or write is checked by the vectors' expectations.

    fn get_instance_info(&self) -> Result<InstanceInfo, NrtError> {
        let result = self.inner.get_instance_info();
        // The instance is the machine's on a device and configured on the simulator: only the
        // status is traced.
        self.sys_trace_line(LibnrtFunction::nrt_get_instance_info, String::new(), &result);
        result
    }

    fn profile_start(&self, model: ModelId, filename: Option<&Path>) -> Result<(), NrtError> {
        let result = self.inner.profile_start(model, filename);
        self.unit(result, |names| {
            format!(
                "{}({}, {})",
                LibnrtFunction::nrt_profile_start.trace_name(),
                names.model(model),
                path_arg(filename)
            )
        })
    }

    fn profile_stop(&self, filename: Option<&Path>) -> Result<(), NrtError> {
        let result = self.inner.profile_stop(filename);
        self.unit(result, |_| {
            format!("{}({})", LibnrtFunction::nrt_profile_stop.trace_name(), path_arg(filename))
        })
    }

    fn profile_continuous_start(&self) -> Result<(), NrtError> {
        let result = self.inner.profile_continuous_start();
        self.unit(result, |_| {
            format!("{}(NULL)", LibnrtFunction::nrt_profile_continuous_start.trace_name())
        })
    }

    fn profile_continuous_save(&self, vnc: u32, output_dir: &Path) -> Result<(), NrtError> {
        let result = self.inner.profile_continuous_save(vnc, output_dir);
        self.unit(result, |_| {
            format!("{}({vnc}, <path>)", LibnrtFunction::nrt_profile_continuous_save.trace_name())
        })
    }

    fn profile_continuous_stop(&self) -> Result<(), NrtError> {
        let result = self.inner.profile_continuous_stop();
        self.unit(result, |_| {
            format!("{}()", LibnrtFunction::nrt_profile_continuous_stop.trace_name())
        })
    }

    fn inspect_begin_with_options(&self, config: &InspectConfig) -> Result<(), NrtError> {
        let result = self.inner.inspect_begin_with_options(config);
        self.unit(result, |_| {
            format!(
                "{}(session_id {:?}, output_dir {}, enable_inspect {:?}, enable_inspect_on_fail {:?})",
                LibnrtFunction::nrt_inspect_begin_with_options.trace_name(),
                config.session_id,
                path_arg(config.output_dir.as_deref()),
                config.enable_inspect,
                config.enable_inspect_on_fail
            )
        })
    }

    fn inspect_stop(&self) -> Result<(), NrtError> {
        let result = self.inner.inspect_stop();
        self.unit(result, |_| format!("{}()", LibnrtFunction::nrt_inspect_stop.trace_name()))
    }

    fn build_global_comm(&self, vnc: i32, rank: u32, world: u32) -> Result<(), NrtError> {
        let result = self.inner.build_global_comm(vnc, rank, world);
        let function = LibnrtFunction::nrt_build_global_comm;
        self.unit(result, |_| format!("{}({vnc}, {rank}, {world})", function.trace_name()))
    }

    fn cc_global_comm_init(&self, vnc: u32, rank: u32, world: u32) -> Result<(), NrtError> {
        let result = self.inner.cc_global_comm_init(vnc, rank, world);
        let function = LibnrtFunction::nrt_cc_global_comm_init;
        self.unit(result, |_| format!("{}({vnc}, {rank}, {world})", function.trace_name()))
    }

    fn barrier(&self, vnc: i32, rank: u32, world: u32) -> Result<(), NrtError> {
        let result = self.inner.barrier(vnc, rank, world);
        let function = LibnrtFunction::nrt_barrier;
        self.unit(result, |_| format!("{}({vnc}, {rank}, {world})", function.trace_name()))
    }

    fn all_gather(
        &self,
        vnc: i32,
        rank: u32,
        world: u32,
        input: &[u8],
    ) -> Result<Vec<u8>, NrtError> {
        let result = self.inner.all_gather(vnc, rank, world, input);
        self.trace.record_with(|names| {
            let call = format!(
                "{}({vnc}, {rank}, {world}, {})",
                LibnrtFunction::nrt_all_gather.trace_name(),
                format_bytes(input)
            );
            outcome(names, call, &result, |_, gathered| Some(format_bytes(gathered)))
        });
        result
    }

    // What these calls return (descriptors, addresses, PCI names) is the machine's own: only
    // the status is traced, and addresses are `<address>`.

    fn get_dmabuf_fd(&self, va: usize, size: u64) -> Result<i32, NrtError> {
        let result = self.inner.get_dmabuf_fd(va, size);
        let args = format!("<address>, {size}");
        self.sys_trace_line(LibnrtFunction::nrt_get_dmabuf_fd, args, &result);
        result
    }

    fn get_hbm_mmap_va(&self, device_id: i32, hbm_idx: i32) -> Result<(usize, usize), NrtError> {
        let result = self.inner.get_hbm_mmap_va(device_id, hbm_idx);
        let args = format!("{device_id}, {hbm_idx}");
        self.sys_trace_line(LibnrtFunction::nrt_get_hbm_mmap_va, args, &result);
        result
    }

    fn get_attached_efa_bdf(&self, va: usize) -> Result<String, NrtError> {
        let result = self.inner.get_attached_efa_bdf(va);
        let args = "<address>".to_owned();
        self.sys_trace_line(LibnrtFunction::nrt_get_attached_efa_bdf, args, &result);
        result
    }

    fn trace_start(&self, trace_mem: bool) -> Result<(), NrtError> {
        let result = self.inner.trace_start(trace_mem);
        self.unit(result, |_| {
            format!("{}({trace_mem})", LibnrtFunction::nrt_trace_start.trace_name())
        })
    }

    fn trace_stop(&self, filename: Option<&Path>) -> Result<(), NrtError> {
        let result = self.inner.trace_stop(filename);
        self.unit(result, |_| {
            format!("{}({})", LibnrtFunction::nrt_trace_stop.trace_name(), path_arg(filename))
        })
    }

    fn nrta_get_completion_handle(&self, seq: SeqId) -> Result<OwnedFd, NrtError> {
        let result = self.inner.nrta_get_completion_handle(seq);
        // The descriptor's number is the process's own: only the status is traced.
        self.trace.record_with(|names| {
            let call = format!(
                "{}({})",
                LibnrtFunction::nrta_get_completion_handle.trace_name(),
                names.seq(seq)
            );
            outcome(names, call, &result, |_, _| None)
        });
        result
    }
}

/// A path argument as traced: `<path>`, or `NULL` for none.
fn path_arg(path: Option<&Path>) -> &'static str {
    if path.is_some() { "<path>" } else { "NULL" }
}

impl TracingRuntime {
    /// `name(args) -> STATUS` for a call whose result is the library's own (system-trace event
    /// names and JSON, the instance, descriptors and addresses), so only the status is traced.
    fn sys_trace_line<T>(
        &self,
        function: LibnrtFunction,
        args: String,
        result: &Result<T, NrtError>,
    ) {
        self.trace.record_with(|names| {
            let call = format!("{}({args})", function.trace_name());
            outcome(names, call, result, |_, _| None)
        });
    }

    /// `name(args) -> COUNT STATUS` for a call returning a count.
    fn count_line(&self, function: LibnrtFunction, args: String, result: &Result<u32, NrtError>) {
        self.trace.record_with(|names| {
            let call = format!("{}({args})", function.trace_name());
            outcome(names, call, result, |_, count| Some(count.to_string()))
        });
    }

    /// A count of one model, with the model renamed as in the rest of the trace.
    fn model_count_line(
        &self,
        function: LibnrtFunction,
        model: ModelId,
        result: &Result<u32, NrtError>,
    ) {
        self.trace.record_with(|names| {
            let call = format!("{}({})", function.trace_name(), names.model(model));
            outcome(names, call, result, |_, count| Some(count.to_string()))
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_are_inline_up_to_32_then_hashed() {
        assert_eq!(format_bytes(&[]), "[]");
        assert_eq!(format_bytes(&[0, 0, 0x80, 0x3f]), "[00 00 80 3f]");
        let inline = format_bytes(&[0xab; 32]);
        assert!(inline.starts_with("[ab ab") && inline.ends_with("ab]"), "{inline}");
        // SHA-256 of 33 zero bytes starts with 7f9c9e31ac8256ca.
        assert_eq!(format_bytes(&[0; 33]), "<33 bytes sha256:7f9c9e31ac8256ca>");
    }

    #[test]
    fn handles_are_renamed_per_kind_in_order_of_first_appearance() {
        let trace = Trace::new();
        trace.record_with(|names| {
            format!(
                "{} {} {}",
                names.tensor(TensorId(40)),
                names.set(SetId(7)),
                names.tensor(TensorId(3))
            )
        });
        trace.record_with(|names| {
            format!("{} {}", names.tensor(TensorId(40)), names.model(ModelId(99)))
        });
        assert_eq!(trace.lines(), vec!["t1 s1 t2".to_owned(), "t1 m1".to_owned()]);
        assert_eq!(trace.text(), "t1 s1 t2\nt1 m1\n");
    }

    /// One rank's work: lines naming handles known before the ranks started (tensor 1, model 1)
    /// and handles of its own (tensors 100 + rank, a set), one shared by every rank (tensor 500),
    /// a handle twice in one line, and a line naming nothing.
    fn rank_work(trace: &Trace, rank: u64) {
        trace.record_with(|names| {
            format!("write {} {}", names.tensor(TensorId(1)), names.tensor(TensorId(100 + rank)))
        });
        trace.record(format!("event of rank {rank}"));
        trace.record_with(|names| {
            let own = names.tensor(TensorId(100 + rank));
            format!("exec {} {} {own}={own}", names.model(ModelId(1)), names.set(SetId(10 + rank)))
        });
        trace.record_with(|names| format!("shared {}", names.tensor(TensorId(500))));
    }

    fn started() -> Trace {
        let trace = Trace::new();
        trace.record_with(|names| {
            format!("load {} {}", names.tensor(TensorId(1)), names.model(ModelId(1)))
        });
        trace
    }

    /// The reference: ranks `0..ranks` run one after another on one trace.
    fn one_after_another(ranks: u64) -> Trace {
        let trace = started();
        for rank in 0..ranks {
            rank_work(&trace, rank);
        }
        trace
    }

    #[test]
    fn joined_forks_read_as_the_one_after_another_run_whatever_order_they_ran_in() {
        let sequential = one_after_another(3);
        let forked = started();
        let forks: Vec<Trace> = (0..3).map(|_| forked.fork()).collect();
        for rank in [2, 0, 1] {
            rank_work(&forks[rank as usize], rank);
        }
        assert_eq!(forked.lines().len(), 1, "nothing reaches the parent before the join");
        forked.join(&forks);
        assert_eq!(forked.text(), sequential.text());
        // The handles the ranks named first got the names of the one-after-another run.
        let text = sequential.text();
        for expected in ["write t1 t2", "exec m1 s1 t2=t2", "shared t3", "write t1 t4", "shared t3"]
        {
            assert!(text.contains(expected), "{expected} in\n{text}");
        }
        // Names given by the join are the parent's from now on.
        forked.record_with(|names| names.tensor(TensorId(102)));
        assert_eq!(forked.lines().last().map(String::as_str), Some("t5"));
    }

    #[test]
    fn ranks_on_threads_trace_as_in_rank_order() {
        let sequential = one_after_another(8);
        let forked = started();
        let forks: Vec<Trace> = (0..8).map(|_| forked.fork()).collect();
        std::thread::scope(|scope| {
            for (rank, fork) in forks.iter().enumerate() {
                scope.spawn(move || rank_work(fork, rank as u64));
            }
        });
        forked.join(&forks);
        assert_eq!(forked.text(), sequential.text());
    }

    #[test]
    fn a_fork_of_a_fork_and_a_second_join_stay_in_order() {
        let sequential = one_after_another(4);
        let forked = started();
        let outer: Vec<Trace> = (0..2).map(|_| forked.fork()).collect();
        // Outer fork 1 runs ranks 2 and 3 on forks of its own; outer fork 0 runs rank 0, is
        // joined, then runs rank 1 (a fork's lines after a join still name consistently).
        let inner: Vec<Trace> = (0..2).map(|_| outer[1].fork()).collect();
        rank_work(&inner[1], 3);
        rank_work(&inner[0], 2);
        outer[1].join(&inner);
        rank_work(&outer[0], 0);
        forked.join(&outer[..1]);
        rank_work(&outer[0], 1);
        forked.join([&outer[0], &outer[1]]);
        assert_eq!(forked.text(), sequential.text());
    }
}
