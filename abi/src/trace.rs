//! The canonical trace: every runtime call and binding event, normalised so that two backends'
//! traces compare line by line (the conformance vectors, `vectors/README.md`).
//!
//! Design choices:
//! - **One mechanism for every caller.** [`TracingRuntime`] wraps any `Arc<dyn Runtime>` and is
//!   itself a [`Runtime`](crate::runtime::Runtime): it forwards each call and records it. The
//!   binding layer (the `bind` crate) wraps its runtime in one when a trace is asked for, and the
//!   conformance runner wraps the runtime of its raw steps the same way, so both write the same
//!   lines.
//! - **Its lines are derived, not written.** Each method of [`TracingRuntime`] comes from the
//!   method's declaration in `runtime/<stem>.rs` (`runtime/declare.rs`): every argument is
//!   written by its type's `TraceArg` and every success by its type's `TraceResult`
//!   (`trace/format.rs`), and a declaration annotates only a line its types do not give. The
//!   arguments no annotation describes are listed in `trace/by_hand.rs`.
//! - **One writer.** The same declaration gives each typed call (`runtime::call`) its line, and
//!   both go through `call_text`, so the recorder, which writes a real program's calls as
//!   typed calls, writes exactly what [`TracingRuntime`] writes for the same call.
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
use std::path::Path;
use std::sync::{Mutex, MutexGuard, PoisonError};

use sha2::{Digest, Sha256};

use crate::runtime::{
    Framework, ModelId, Placement, SeqId, SetId, TensorId, TensorInfo, TensorUsage, TrackerId,
};

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

/// The first word of a recording's first line: `# nrtsim-trace VERSION` (the recorder writes it,
/// replay checks it).
pub const RECORDING_MAGIC: &str = "# nrtsim-trace";

/// The recording format version the recorder writes and replay reads.
pub const RECORDING_FORMAT_VERSION: u32 = 1;

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

pub(crate) mod by_hand;
pub(crate) mod format;
pub(crate) mod tracing;

pub use tracing::TracingRuntime;

/// A path argument as traced: `<path>`, or `NULL` for none.
fn path_arg(path: Option<&Path>) -> &'static str {
    if path.is_some() { "<path>" } else { "NULL" }
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
