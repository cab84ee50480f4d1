//! The trace file: its header, one line per call, the blobs beside it, and the handle
//! generations behind the names.
//!
//! # How lines reach the file, and what survives which death
//!
//! A line costs no system call: the file is mapped shared (`MAP_SHARED`, in windows of
//! [`WINDOW`] bytes, the file grown to the end of the window first) and each line is copied into
//! the mapping. The bytes are then the kernel's (the page cache), not the process's, so they
//! reach the file whatever becomes of the process:
//! - **a normal exit** (`exit`, returning from `main`, `dlclose` of the recorder): an `atexit`
//!   handler unmaps the window and truncates the file to its lines; a line recorded later (a
//!   client's own exit handler calling libnrt) is written with one `pwrite` each;
//! - **SIGKILL, abort, SIGSEGV, `_exit`**: no handler runs, nothing is lost but the line being
//!   copied at that instant; the file is every whole line so far, then zeros to the end of the
//!   window. A line's first byte is stored last (after a compiler fence; interrupts are precise),
//!   so a half-copied line starts with a zero byte and a recording always ends at its first zero
//!   byte: a reader keeps what comes before it (`conformance::replay` does). No signal handler
//!   is installed, so the client's own handlers and core dumps are undisturbed.
//! - **a machine crash** loses what the kernel had not written back, as any write would.
//!
//! Lines never contain a zero byte (one would be written `?`). A `fork` child records nothing
//! (its copy of the mapping is the parent's file, and its exit must not truncate it); it says so
//! once on stderr if it makes a libnrt call.

use std::collections::HashMap;
use std::ffi::c_int;
use std::fs::File;
use std::os::unix::fs::FileExt as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering, compiler_fence};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

use memmap2::{MmapMut, MmapOptions};

use abi::runtime::{ModelId, SeqId, SetId, TensorId, TrackerId};
use abi::trace::{Names, Trace};
use nrt::record::{Generations, Kind};

/// The environment variable naming the trace file (default `DEFAULT_OUT`).
pub const OUT_ENV: &str = "NRTSIM_RECORD_OUT";

/// The trace file written when [`OUT_ENV`] is unset.
const DEFAULT_OUT: &str = "nrtsim-record.trace";

pub use abi::trace::{RECORDING_FORMAT_VERSION as FORMAT_VERSION, RECORDING_MAGIC as HEADER_MAGIC};

/// What a recording cannot carry, each written in the header as `# limit KEY: TEXT`, so that a
/// replay can say what it did not check.
pub(crate) const LIMITS: &[&str] = &[
    "by-name: calls written `name(…)` (nrta_tensor_copy, nrta_get_sequence, the error lists of \
     error trackers, system-trace and profile options, collectives, calls with NULL outputs) \
     carry no arguments, so a replay does not re-issue them",
    "async-read: the bytes an nrta_tensor_read delivers are not recorded, so a replay does not \
     compare them (a later synchronous read of the tensor is compared)",
    "settings: the recorded machine's configuration (its NeuronCores, their memory, NEURON_RT_* \
     variables) is not recorded, so a replay runs with its backend's own settings",
];

/// One piece of a line that is not a call (a `# memory` line, a call recorded by name): text,
/// or a handle to name.
pub(crate) enum Part {
    /// Literal text.
    Text(std::borrow::Cow<'static, str>),
    /// A handle (named on first sight).
    Handle(Kind, u64),
}

/// How much of the file is mapped (and the file grown) at a time: one window per ~16 000 lines.
const WINDOW: usize = 1 << 20;

/// Room for a typical line and its newline, so that building it does not reallocate.
const LINE_CAPACITY: usize = 128;

/// Where lines go.
enum Log {
    /// Not recording: the file could not be made, or writing it failed.
    Off,
    /// The file mapped from `start` (its first `len - start` bytes are lines); `len` bytes of
    /// the file are lines, the rest of the window zeros.
    Mapped { file: File, window: MmapMut, start: u64, len: u64 },
    /// After the exit handler: the file is `len` bytes of lines, each new line one `pwrite`.
    Direct { file: File, len: u64 },
}

impl Log {
    fn create(path: &std::path::Path) -> std::io::Result<Log> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        Ok(Log::Direct { file, len: 0 })
    }

    /// Appends `line` (ending in `\n`, no zero byte).
    fn append(&mut self, line: &[u8]) -> std::io::Result<()> {
        match self {
            Log::Off => Ok(()),
            Log::Direct { file, len } => {
                file.write_all_at(line, *len)?;
                *len += line.len() as u64;
                Ok(())
            }
            Log::Mapped { file, window, start, len } => {
                let mut at = usize::try_from(*len - *start).unwrap_or(usize::MAX);
                if window.len().saturating_sub(at) < line.len() {
                    *window = map_window(file, *len, line.len())?;
                    *start = *len;
                    at = 0;
                }
                let Some((first, rest)) = line.split_first() else { return Ok(()) };
                let end = at + line.len();
                window[at + 1..end].copy_from_slice(rest);
                // The first byte last: a line cut short by the process's death starts with a
                // zero byte, so the recording ends before it.
                compiler_fence(Ordering::SeqCst);
                window[at] = *first;
                *len += line.len() as u64;
                Ok(())
            }
        }
    }

    /// Maps the file from its end, when it is written directly; unmapped (the error returned),
    /// it stays written directly.
    fn map(&mut self) -> std::io::Result<()> {
        if let Log::Direct { file, len } = self {
            let window = map_window(file, *len, 0)?;
            if let Log::Direct { file, len } = std::mem::replace(self, Log::Off) {
                *self = Log::Mapped { file, window, start: len, len };
            }
        }
        Ok(())
    }

    /// Unmaps the window and truncates the file to its lines; later lines are written directly.
    fn finish(&mut self) -> std::io::Result<()> {
        match std::mem::replace(self, Log::Off) {
            Log::Mapped { file, window, len, .. } => {
                drop(window);
                file.set_len(len)?;
                *self = Log::Direct { file, len };
                Ok(())
            }
            other => {
                *self = other;
                Ok(())
            }
        }
    }
}

/// Grows `file` to `from` plus a window (at least `need` bytes) and maps that window.
fn map_window(file: &File, from: u64, need: usize) -> std::io::Result<MmapMut> {
    let size = need.max(WINDOW);
    let end = from
        .checked_add(size as u64)
        .ok_or_else(|| std::io::Error::other("the trace file would exceed 2^64 bytes"))?;
    file.set_len(end)?;
    // SAFETY: the file is ours (created and truncated by this process) and grown to cover the
    // window; no one else is expected to change it while it is written. A fork child stops
    // using the mapping (`FORKED`).
    unsafe { MmapOptions::new().offset(from).len(size).populate().map_mut(file) }
}

/// Set in a `fork` child: it records nothing.
static FORKED: AtomicBool = AtomicBool::new(false);

/// Whether the fork child was told it records nothing.
static FORK_TOLD: AtomicBool = AtomicBool::new(false);

extern "C" fn in_fork_child() {
    FORKED.store(true, Ordering::Relaxed);
}

extern "C" fn at_exit() {
    if FORKED.load(Ordering::Relaxed) {
        return;
    }
    if let Some(sink) = SINK.get() {
        let mut sink = sink.lock().unwrap_or_else(PoisonError::into_inner);
        let result = sink.log.finish();
        sink.failed(result);
    }
}

unsafe extern "C" {
    fn atexit(handler: extern "C" fn()) -> c_int;
    fn pthread_atfork(
        prepare: Option<extern "C" fn()>,
        parent: Option<extern "C" fn()>,
        child: Option<extern "C" fn()>,
    ) -> c_int;
}

struct Sink {
    log: Log,
    blobs: PathBuf,
    trace: Trace,
    /// Live pointers and their generation numbers (what `Names` renames).
    live: HashMap<(Kind, u64), u64>,
    next: u64,
    complained: bool,
    /// The blobs already kept (no file system look-up per call).
    kept: std::collections::HashSet<String>,
}

static SINK: OnceLock<Mutex<Sink>> = OnceLock::new();

/// The sink; `None` in a fork child (whose parent may have held the lock at the fork).
fn sink() -> Option<MutexGuard<'static, Sink>> {
    if FORKED.load(Ordering::Relaxed) {
        if !FORK_TOLD.swap(true, Ordering::Relaxed) {
            eprintln!("nrtsim-record: a forked child's libnrt calls are not recorded");
        }
        return None;
    }
    Some(
        SINK.get_or_init(|| Mutex::new(Sink::open()))
            .lock()
            .unwrap_or_else(PoisonError::into_inner),
    )
}

fn instance_type() -> String {
    std::fs::read_to_string("/sys/devices/virtual/dmi/id/product_name")
        .ok()
        .map(|name| name.trim().replace(char::is_whitespace, "_"))
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "unknown".to_owned())
}

impl Sink {
    fn open() -> Sink {
        let path = std::env::var_os(OUT_ENV)
            .filter(|value| !value.is_empty())
            .map_or_else(|| PathBuf::from(DEFAULT_OUT), PathBuf::from);
        let mut blobs = path.clone().into_os_string();
        blobs.push(".blobs");
        let mut sink = Sink {
            log: Log::Off,
            blobs: PathBuf::from(blobs),
            trace: Trace::new(),
            live: HashMap::new(),
            next: 0,
            complained: false,
            kept: std::collections::HashSet::new(),
        };
        match Log::create(&path) {
            Ok(log) => sink.log = log,
            Err(error) => {
                eprintln!("nrtsim-record: cannot write {}: {error}; not recording", path.display());
                sink.complained = true;
            }
        }
        let library = match crate::real::describe() {
            Ok(path) => path.to_owned(),
            Err(why) => format!("none ({why})"),
        };
        let header = [
            format!("{HEADER_MAGIC} {FORMAT_VERSION}"),
            format!("# runtime {}", crate::real::runtime_version()),
            format!("# instance {}", instance_type()),
            format!("# library {library}"),
        ];
        // The header is written directly, so a recording has its header even if mapping fails.
        for line in header.into_iter().chain(LIMITS.iter().map(|limit| format!("# limit {limit}")))
        {
            sink.write_line(line);
        }
        if !matches!(sink.log, Log::Off) {
            // SAFETY: plain C registrations of handlers that never unwind; registered once (the
            // sink is made once per process).
            let registered = unsafe {
                pthread_atfork(None, None, Some(in_fork_child)) == 0 && atexit(at_exit) == 0
            };
            // Without the handlers or the mapping, every line is one `pwrite`.
            if registered {
                if let Err(error) = sink.log.map() {
                    eprintln!(
                        "nrtsim-record: cannot map {}: {error}; each line is one system call",
                        path.display()
                    );
                }
            }
        }
        sink
    }

    /// Stops recording after a failed write, saying so once.
    fn failed(&mut self, result: std::io::Result<()>) {
        if let Err(error) = result {
            if !self.complained {
                eprintln!("nrtsim-record: writing the trace failed: {error}; recording stops");
                self.complained = true;
            }
            self.log = Log::Off;
        }
    }

    fn write_line(&mut self, line: String) {
        let mut line = line.into_bytes();
        if line.contains(&0) {
            line.iter_mut().filter(|byte| **byte == 0).for_each(|byte| *byte = b'?');
        }
        line.push(b'\n');
        let result = self.log.append(&line);
        self.failed(result);
    }
}

fn name(names: &mut Names<'_>, kind: Kind, generation: u64) -> String {
    match kind {
        Kind::Tensor => names.tensor(TensorId(generation)),
        Kind::Set => names.set(SetId(generation)),
        Kind::Model => names.model(ModelId(generation)),
        Kind::Seq => names.seq(SeqId(generation)),
        Kind::Tracker => names.tracker(TrackerId(generation)),
    }
}

/// Writes the line `write` makes from the generations of its handles, naming them through
/// `names`; nothing when it makes none. Runs under the sink's lock: `write` calls nothing that
/// records.
pub(crate) fn record_line(
    write: impl FnOnce(&mut Generations<'_>, &mut Names<'_>) -> Option<String>,
) {
    let Some(mut guard) = sink() else { return };
    let sink = &mut *guard;
    let mut generations = Generations::new(&mut sink.live, &mut sink.next);
    let mut line = None;
    sink.trace.record_with(|names| {
        line = write(&mut generations, names);
        String::new()
    });
    sink.trace.clear_lines();
    if let Some(line) = line {
        sink.write_line(line);
    }
}

/// Writes one line made of `parts` (handles named in order).
pub(crate) fn record(parts: Vec<Part>) {
    record_line(|generations, names| {
        let mut line = String::with_capacity(LINE_CAPACITY);
        for part in parts {
            let (kind, generation) = match part {
                Part::Text(text) => {
                    line.push_str(&text);
                    continue;
                }
                Part::Handle(kind, pointer) => (kind, generations.read(kind, pointer)),
            };
            line.push_str(&name(names, kind, generation));
        }
        Some(line)
    });
}

/// Input bytes as traced; kept beside the trace when too long to be inline.
pub(crate) fn input_bytes(bytes: &[u8]) -> String {
    let shown = abi::trace::format_bytes(bytes);
    if bytes.len() > abi::trace::INLINE_BYTES {
        keep_blob(bytes, &shown);
    }
    shown
}

/// Keeps `bytes` (longer than the inline limit) beside the trace as `FILE.blobs/HASH`, where
/// `HASH` is the 16 hex digits the line shows.
pub(crate) fn keep_blob(bytes: &[u8], shown: &str) {
    let Some(hash) = shown.rsplit("sha256:").next().map(|rest| rest.trim_end_matches('>')) else {
        return;
    };
    let Some(mut sink) = sink() else { return };
    if matches!(sink.log, Log::Off) {
        return;
    }
    if sink.kept.contains(hash) {
        return;
    }
    let path = sink.blobs.join(hash);
    if path.exists() {
        sink.kept.insert(hash.to_owned());
        return;
    }
    let result = std::fs::create_dir_all(&sink.blobs).and_then(|()| {
        let staged = sink.blobs.join(format!(".{hash}.{}", std::process::id()));
        std::fs::write(&staged, bytes)?;
        std::fs::rename(&staged, &path)
    });
    match result {
        Ok(()) => {
            sink.kept.insert(hash.to_owned());
        }
        Err(error) if !sink.complained => {
            eprintln!(
                "nrtsim-record: keeping a buffer in {} failed: {error}",
                sink.blobs.display()
            );
            sink.complained = true;
        }
        Err(_) => {}
    }
}
