//! Replaying a recording: re-issue each call an `nrtsim record` trace holds on a `Runtime`
//! wrapped in `abi::trace::TracingRuntime`, and compare the line the replay writes with the
//! recorded one. The same normaliser wrote both, so the first line that differs is the first
//! divergence. Lines recorded by name only (`name(…)`) are not re-issued; `# memory` lines
//! (stores the program made through an address) are applied to the replaying runtime directly,
//! without a trace line.
//!
//! `nrtsim replay` is a command line over this module, and a promoted recording
//! (`vectors/recorded/NAME/recording.trace`) is a conformance vector that [`run_recorded`] runs
//! on any backend. The format is described in `vectors/README.md` ("Recordings").

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use abi::functions::LibnrtFunction;
use abi::runtime::prelude::*;
use abi::runtime::{
    AsyncReadBuffer, ExternalBuffer, Framework, ModelId, NrtError, Placement, SeqId, SetId,
    SharedBuffer, TensorId, TrackerId,
};
use abi::trace::parse::{self, Args, Bytes, Call, Line, ParseError, parse_name};
use abi::trace::{
    RECORDING_FORMAT_VERSION as FORMAT_VERSION, RECORDING_MAGIC as HEADER_MAGIC, Trace,
    TracingRuntime, format_bytes,
};
use anyhow::{Context as _, Result, bail};

use crate::runner::RunOutput;
use crate::vector::Vector;
use sim::capped::{CappedReadError, read_capped};

/// A header line naming something the recording cannot carry (`# limit KEY: TEXT`).
const LIMIT_PREFIX: &str = "# limit ";

/// How many recorded lines before a divergence are shown.
const CONTEXT_LINES: usize = 3;

/// The recording's file name inside a promoted vector.
pub const RECORDING_FILE: &str = "recording.trace";

/// A recording that cannot be replayed.
#[derive(Debug, thiserror::Error)]
pub enum RecordingError {
    /// A line outside the trace grammar.
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// Not a recording at all.
    #[error(
        "{path} is not an nrtsim recording: expected `{HEADER_MAGIC} {FORMAT_VERSION}` as its first line, found {found:?}"
    )]
    Foreign {
        /// The file.
        path: String,
        /// Its first line (up to 60 characters).
        found: String,
    },
    /// A recording of another format version.
    #[error("{path} is a recording of format version {found}, expected version {FORMAT_VERSION}")]
    Version {
        /// The file.
        path: String,
        /// The version it says.
        found: String,
    },
    /// The file ends inside a line.
    #[error(
        "{path} is truncated: line {line} has no end of line (the recording stopped mid-line): {text:?}"
    )]
    Truncated {
        /// The file.
        path: String,
        /// The last line's number.
        line: usize,
        /// The last line.
        text: String,
    },
    /// A call whose arguments do not fit its function.
    #[error("line {line}: expected {expected}, found {text:?}")]
    Syntax {
        /// The line number.
        line: usize,
        /// What the line should hold.
        expected: &'static str,
        /// What it holds.
        text: String,
    },
    /// Recorded bytes that were not kept beside the recording.
    #[error(
        "line {line}: the recorded bytes {shown} are missing, expected them in {path} (was the recording's .blobs folder copied with it?)"
    )]
    MissingBytes {
        /// The line number.
        line: usize,
        /// The bytes as recorded.
        shown: String,
        /// Where they were looked for.
        path: String,
    },
    /// Kept bytes that are not the recorded ones.
    #[error("line {line}: {path} holds {found}, expected the recorded {shown}")]
    WrongBytes {
        /// The line number.
        line: usize,
        /// The bytes as recorded.
        shown: String,
        /// The kept bytes, as the trace shows them.
        found: String,
        /// The kept file.
        path: String,
    },
    /// A kept blob larger than the read limit (or one that cannot be read).
    #[error("line {line}: {source}")]
    BlobRead {
        /// The line number.
        line: usize,
        /// Why the read failed, naming the limit and its flag.
        source: CappedReadError,
    },
    /// A handle no earlier line made.
    #[error("line {line}: {name} was never returned by an earlier call")]
    UnknownHandle {
        /// The line number.
        line: usize,
        /// The recorded handle.
        name: String,
    },
}

/// A recording, read and checked.
pub struct Recording {
    path: PathBuf,
    /// The most bytes a kept blob may hold (the limit the recording was read with).
    max_bytes: u64,
    /// (line number, line).
    entries: Vec<(usize, Line)>,
    lines: Vec<String>,
    header: Vec<String>,
}

impl Recording {
    /// The header lines (what was recorded, where and when).
    pub fn header(&self) -> &[String] {
        &self.header
    }

    /// What the recorder says it could not record: the header's `# limit TEXT` lines, as TEXT.
    pub fn limits(&self) -> impl Iterator<Item = &str> {
        self.header.iter().filter_map(|line| line.strip_prefix(LIMIT_PREFIX))
    }

    /// The file it was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The default of [`read_recording`]'s `max_bytes`: 1 GiB, the NEFF's cap, since the largest
/// blob of a recording is the NEFF it loaded.
pub const DEFAULT_MAX_BYTES: u64 = 1 << 30;

/// The flag of `nrtsim replay` that sets [`read_recording`]'s `max_bytes`, for messages.
pub const MAX_BYTES_FLAG: &str = "--max-input-bytes";

/// Reads and checks a recording of at most `max_bytes` bytes, whose kept blobs are read later,
/// each at most `max_bytes` too.
///
/// # Errors
/// A [`RecordingError`] (in the `anyhow` chain) for a file that is not a recording of this
/// format version, is truncated or has a line that does not parse; an I/O error naming the file.
pub fn read_recording(path: &Path, max_bytes: u64) -> Result<Recording> {
    let shown = path.display().to_string();
    let bytes = read_capped(path, max_bytes, MAX_BYTES_FLAG)?;
    // A recorded program that died without exiting (killed, aborted) leaves its last whole line
    // followed by zeros (the recorder's mapped window, see its `sink` module): the recording
    // ends at the first zero byte, which no line contains.
    let bytes = bytes.split(|&byte| byte == 0).next().unwrap_or_default();
    let text = String::from_utf8_lossy(bytes);
    let first = text.lines().next().unwrap_or("");
    let Some(version) = first.strip_prefix(HEADER_MAGIC).map(str::trim) else {
        let found: String = first.chars().take(60).collect();
        return Err(RecordingError::Foreign { path: shown, found }.into());
    };
    if version != FORMAT_VERSION.to_string() {
        return Err(RecordingError::Version { path: shown, found: version.into() }.into());
    }
    let lines: Vec<String> = text.lines().map(str::to_owned).collect();
    if !text.ends_with('\n') {
        let last = lines.last().cloned().unwrap_or_default();
        return Err(RecordingError::Truncated { path: shown, line: lines.len(), text: last }.into());
    }
    let mut entries = Vec::new();
    let mut header = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        let entry = parse::parse_line(index + 1, line).map_err(RecordingError::from)?;
        if matches!(entry, Line::Comment) && header.len() == index {
            header.push(line.clone());
        }
        entries.push((index + 1, entry));
    }
    Ok(Recording { path: path.to_owned(), max_bytes, entries, lines, header })
}

/// The folder of a recording's kept bytes.
pub fn blobs_dir(recording: &Path) -> PathBuf {
    let mut dir = recording.as_os_str().to_owned();
    dir.push(".blobs");
    PathBuf::from(dir)
}

/// The bytes a traced byte argument stands for: inline hex, or a kept blob (named by its
/// digest, and checked to be the bytes recorded).
fn bytes_of(
    recording: &Path,
    max_bytes: u64,
    line: usize,
    bytes: &Bytes,
) -> Result<Vec<u8>, RecordingError> {
    let hash = match bytes {
        Bytes::Inline(bytes) => return Ok(bytes.clone()),
        Bytes::Digest { sha256, .. } => sha256,
    };
    let shown = bytes.to_string();
    let path = blobs_dir(recording).join(hash);
    let kept = read_capped(&path, max_bytes, MAX_BYTES_FLAG).map_err(|source| match source {
        CappedReadError::Io { .. } => RecordingError::MissingBytes {
            line,
            shown: shown.clone(),
            path: path.display().to_string(),
        },
        source => RecordingError::BlobRead { line, source },
    })?;
    let found = format_bytes(&kept);
    if found != shown {
        return Err(RecordingError::WrongBytes {
            line,
            shown,
            found,
            path: path.display().to_string(),
        });
    }
    Ok(kept)
}

/// A byte-string argument of a call, read and resolved as [`bytes_of`] does.
fn bytes_arg(
    recording: &Path,
    max_bytes: u64,
    line: usize,
    text: &str,
) -> Result<Vec<u8>, RecordingError> {
    bytes_of(recording, max_bytes, line, &parse::parse_bytes(line, text)?)
}

/// The handles of a replay, by recorded name.
#[derive(Default)]
struct Handles {
    tensors: HashMap<String, TensorId>,
    sets: HashMap<String, SetId>,
    models: HashMap<String, ModelId>,
    seqs: HashMap<String, SeqId>,
    trackers: HashMap<String, TrackerId>,
    /// The buffers attached by the replay, by tensor name.
    buffers: HashMap<String, Arc<SharedBuffer>>,
}

/// The replay's handle for a recorded name. A name no earlier line made is a pointer the
/// program made up (or one the recorder could not follow): it is replayed as an id the
/// replaying runtime never handed out, counted down from the top so it never collides.
fn lookup<T: Copy>(
    map: &HashMap<String, T>,
    line: usize,
    name: &str,
    make: impl Fn(u64) -> T,
) -> Result<T, RecordingError> {
    if let Some(&id) = map.get(name) {
        return Ok(id);
    }
    let number: u64 = name
        .get(1..)
        .and_then(|digits| digits.parse().ok())
        .ok_or_else(|| RecordingError::UnknownHandle { line, name: name.into() })?;
    Ok(make(u64::MAX - number))
}

/// What a replayed call gave: whether it was re-issued, and the handle it made.
enum Issued {
    Skipped,
    Done,
    Tensor(Result<TensorId, NrtError>),
    Set(Result<SetId, NrtError>),
    Model(Result<ModelId, NrtError>),
    Seq(Result<SeqId, NrtError>),
    Tracker(Result<TrackerId, NrtError>),
}

impl Issued {
    /// The detail of a failed call that makes a handle.
    fn error(&self) -> Option<String> {
        match self {
            Issued::Tensor(Err(e))
            | Issued::Set(Err(e))
            | Issued::Model(Err(e))
            | Issued::Seq(Err(e))
            | Issued::Tracker(Err(e)) => Some(e.to_string()),
            _ => None,
        }
    }
}

struct Replayer<'a> {
    recording: &'a Path,
    /// The most bytes a kept blob may hold.
    max_bytes: u64,
    runtime: TracingRuntime,
    inner: Arc<dyn Runtime>,
    handles: Handles,
    /// The detail of the last failed replayed call, for the divergence report.
    last_error: Option<String>,
}

fn int<T: std::str::FromStr>(line: usize, text: &str) -> Result<T, RecordingError> {
    text.parse().map_err(|_| RecordingError::Syntax {
        line,
        expected: "a number",
        text: text.into(),
    })
}

/// A tracker argument: `-` for none.
fn optional_tracker(
    handles: &Handles,
    line: usize,
    text: &str,
) -> Result<Option<TrackerId>, RecordingError> {
    if text == "-" {
        return Ok(None);
    }
    lookup(&handles.trackers, line, text, TrackerId).map(Some)
}

/// How long a replay waits for a request the program saw complete.
const COMPLETION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// Keeps the detail of a failed call for the divergence report.
fn note<T>(slot: &mut Option<String>, result: &Result<T, NrtError>) {
    if let Err(error) = result {
        *slot = Some(error.to_string());
    }
}

impl Replayer<'_> {
    /// Re-issues one call.
    fn issue(&mut self, line: usize, call: &Call) -> Result<Issued> {
        use LibnrtFunction as F;
        let function = call.function;
        let args = match &call.args {
            Args::Recorded(args) => args,
            Args::Unrecorded => return Ok(Issued::Skipped),
        };
        let argc = |n: usize| -> Result<(), RecordingError> {
            if args.len() == n {
                Ok(())
            } else {
                Err(RecordingError::Syntax {
                    line,
                    expected: "the recorded number of arguments",
                    text: format!("{}({})", function.trace_name(), args.join(", ")),
                })
            }
        };
        let mut error = None;
        let mut attached = None;
        let h = &self.handles;
        let rt = &self.runtime;
        let issued = match function {
            F::nrt_get_version => {
                let result = rt.get_version();
                note(&mut error, &result);
                Issued::Done
            }
            F::nrt_init => {
                argc(3)?;
                let framework = Framework::ALL
                    .iter()
                    .copied()
                    .find(|&f| abi::trace::framework_name(f) == args[0])
                    .unwrap_or(Framework::Invalid);
                let fw = String::from_utf8_lossy(&parse_name(line, &args[1])?).into_owned();
                let fal = String::from_utf8_lossy(&parse_name(line, &args[2])?).into_owned();
                let result = rt.init(framework, &fw, &fal);
                note(&mut error, &result);
                Issued::Done
            }
            F::nrt_close => {
                rt.close();
                Issued::Done
            }
            F::nrt_get_total_vnc_count | F::nrt_get_visible_vnc_count => {
                let result = if function == F::nrt_get_total_vnc_count {
                    rt.get_total_vnc_count()
                } else {
                    rt.get_visible_vnc_count()
                };
                note(&mut error, &result);
                Issued::Done
            }
            F::nrt_get_total_nc_count | F::nrt_get_visible_nc_count => {
                let result = if function == F::nrt_get_total_nc_count {
                    rt.get_total_nc_count()
                } else {
                    rt.get_visible_nc_count()
                };
                note(&mut error, &result);
                Issued::Done
            }
            F::nrt_get_model_nc_count
            | F::nrt_get_model_vnc_count
            | F::nrt_get_model_instance_count => {
                argc(1)?;
                let model = lookup(&h.models, line, &args[0], ModelId)?;
                let result = match function {
                    F::nrt_get_model_nc_count => rt.get_model_nc_count(model),
                    F::nrt_get_model_vnc_count => rt.get_model_vnc_count(model),
                    _ => rt.get_model_instance_count(model),
                };
                note(&mut error, &result);
                Issued::Done
            }
            F::nrt_tensor_allocate_slice => {
                argc(4)?;
                Issued::Tensor(rt.tensor_allocate_slice(
                    lookup(&h.tensors, line, &args[0], TensorId)?,
                    int(line, &args[1])?,
                    int(line, &args[2])?,
                    &parse_name(line, &args[3])?,
                ))
            }
            F::nrt_async_drain_queued_execs => {
                argc(1)?;
                let result = rt.nrt_async_drain_queued_execs(int(line, &args[0])?);
                note(&mut error, &result);
                Issued::Done
            }
            F::nrta_error_tracker_create => {
                argc(1)?;
                Issued::Tracker(rt.nrta_error_tracker_create(int(line, &args[0])?))
            }
            F::nrta_error_tracker_destroy => {
                argc(1)?;
                let tracker = lookup(&h.trackers, line, &args[0], TrackerId)?;
                let result = rt.nrta_error_tracker_destroy(tracker);
                note(&mut error, &result);
                Issued::Done
            }
            F::nrta_tensor_write => {
                argc(5)?;
                let bytes = bytes_arg(self.recording, self.max_bytes, line, &args[2])?;
                Issued::Seq(rt.nrta_tensor_write(
                    lookup(&h.tensors, line, &args[0], TensorId)?,
                    int(line, &args[1])?,
                    &bytes,
                    int(line, &args[3])?,
                    optional_tracker(h, line, &args[4])?,
                ))
            }
            F::nrta_tensor_read => {
                argc(5)?;
                Issued::Seq(rt.nrta_tensor_read(
                    lookup(&h.tensors, line, &args[0], TensorId)?,
                    int(line, &args[1])?,
                    int(line, &args[2])?,
                    int(line, &args[3])?,
                    optional_tracker(h, line, &args[4])?,
                    Arc::new(AsyncReadBuffer::new()),
                ))
            }
            F::nrta_execute_schedule => {
                argc(5)?;
                Issued::Seq(rt.nrta_execute_schedule(
                    lookup(&h.models, line, &args[0], ModelId)?,
                    lookup(&h.sets, line, &args[1], SetId)?,
                    lookup(&h.sets, line, &args[2], SetId)?,
                    int(line, &args[3])?,
                    optional_tracker(h, line, &args[4])?,
                ))
            }
            F::nrt_load => {
                argc(3)?;
                let neff = bytes_arg(self.recording, self.max_bytes, line, &args[0])?;
                Issued::Model(rt.load(&neff, int(line, &args[1])?, int(line, &args[2])?))
            }
            F::nrt_load_collectives => {
                argc(5)?;
                let neff = bytes_arg(self.recording, self.max_bytes, line, &args[0])?;
                Issued::Model(rt.load_collectives(
                    &neff,
                    int(line, &args[1])?,
                    int(line, &args[2])?,
                    int(line, &args[3])?,
                    int(line, &args[4])?,
                ))
            }
            F::nrt_unload => {
                argc(1)?;
                let result = rt.unload(lookup(&h.models, line, &args[0], ModelId)?);
                note(&mut error, &result);
                Issued::Done
            }
            F::nrt_get_model_tensor_info => {
                argc(1)?;
                let result = rt.get_model_tensor_info(lookup(&h.models, line, &args[0], ModelId)?);
                note(&mut error, &result);
                Issued::Done
            }
            F::nrt_allocate_tensor_set => Issued::Set(rt.allocate_tensor_set()),
            F::nrt_destroy_tensor_set => {
                argc(1)?;
                let result = rt.destroy_tensor_set(lookup(&h.sets, line, &args[0], SetId)?);
                note(&mut error, &result);
                Issued::Done
            }
            F::nrt_add_tensor_to_tensor_set => {
                argc(3)?;
                let result = rt.add_tensor_to_tensor_set(
                    lookup(&h.sets, line, &args[0], SetId)?,
                    &parse_name(line, &args[1])?,
                    lookup(&h.tensors, line, &args[2], TensorId)?,
                );
                note(&mut error, &result);
                Issued::Done
            }
            F::nrt_get_tensor_from_tensor_set => {
                argc(2)?;
                Issued::Tensor(rt.get_tensor_from_tensor_set(
                    lookup(&h.sets, line, &args[0], SetId)?,
                    &parse_name(line, &args[1])?,
                ))
            }
            F::nrt_tensor_allocate => {
                argc(4)?;
                let placement = Placement::ALL
                    .iter()
                    .copied()
                    .find(|&p| abi::trace::placement_name(p) == args[0])
                    .ok_or(RecordingError::Syntax {
                        line,
                        expected: "a placement (DEVICE, HOST, VIRTUAL)",
                        text: args[0].clone(),
                    })?;
                Issued::Tensor(rt.tensor_allocate(
                    placement,
                    int(line, &args[1])?,
                    int(line, &args[2])?,
                    &parse_name(line, &args[3])?,
                ))
            }
            F::nrt_tensor_allocate_empty => {
                argc(1)?;
                Issued::Tensor(rt.tensor_allocate_empty(&parse_name(line, &args[0])?))
            }
            F::nrt_tensor_attach_buffer => {
                argc(2)?;
                let size = parse::parse_buffer(line, &args[1])?;
                let buffer = Arc::new(SharedBuffer::zeroed(size));
                let tensor = lookup(&h.tensors, line, &args[0], TensorId)?;
                let result =
                    rt.tensor_attach_buffer(tensor, Arc::clone(&buffer) as Arc<dyn ExternalBuffer>);
                note(&mut error, &result);
                attached = Some((args[0].clone(), buffer));
                Issued::Done
            }
            F::nrt_tensor_free => {
                argc(1)?;
                let result = rt.tensor_free(lookup(&h.tensors, line, &args[0], TensorId)?);
                note(&mut error, &result);
                Issued::Done
            }
            F::nrt_tensor_get_size | F::nrt_tensor_get_va => {
                argc(1)?;
                let tensor = lookup(&h.tensors, line, &args[0], TensorId)?;
                let result = if function == F::nrt_tensor_get_size {
                    rt.tensor_get_size(tensor)
                } else {
                    rt.tensor_get_va(tensor)
                };
                note(&mut error, &result);
                Issued::Done
            }
            F::nrt_tensor_read => {
                argc(3)?;
                let size: usize = int(line, &args[2])?;
                let mut buf = Vec::new();
                buf.try_reserve_exact(size).context("allocating the read buffer")?;
                buf.resize(size, 0);
                let result = rt.tensor_read(
                    lookup(&h.tensors, line, &args[0], TensorId)?,
                    int(line, &args[1])?,
                    &mut buf,
                );
                note(&mut error, &result);
                Issued::Done
            }
            F::nrt_tensor_write => {
                argc(3)?;
                let bytes = bytes_arg(self.recording, self.max_bytes, line, &args[2])?;
                let result = rt.tensor_write(
                    lookup(&h.tensors, line, &args[0], TensorId)?,
                    int(line, &args[1])?,
                    &bytes,
                );
                note(&mut error, &result);
                Issued::Done
            }
            F::nrt_tensor_copy => {
                argc(5)?;
                let result = rt.tensor_copy(
                    lookup(&h.tensors, line, &args[0], TensorId)?,
                    int(line, &args[1])?,
                    lookup(&h.tensors, line, &args[2], TensorId)?,
                    int(line, &args[3])?,
                    int(line, &args[4])?,
                );
                note(&mut error, &result);
                Issued::Done
            }
            F::nrt_tensor_memset => {
                argc(4)?;
                let result = rt.tensor_memset(
                    lookup(&h.tensors, line, &args[0], TensorId)?,
                    int(line, &args[1])?,
                    int(line, &args[2])?,
                    int(line, &args[3])?,
                );
                note(&mut error, &result);
                Issued::Done
            }
            F::nrt_execute | F::nrt_execute_repeat => {
                argc(if function == F::nrt_execute { 3 } else { 4 })?;
                let model = lookup(&h.models, line, &args[0], ModelId)?;
                let input = lookup(&h.sets, line, &args[1], SetId)?;
                let output = lookup(&h.sets, line, &args[2], SetId)?;
                let result = if function == F::nrt_execute {
                    rt.execute(model, input, output)
                } else {
                    rt.execute_repeat(model, input, output, int(line, &args[3])?)
                };
                note(&mut error, &result);
                Issued::Done
            }
            _ => Issued::Skipped,
        };
        if let Some((name, buffer)) = attached {
            self.handles.buffers.insert(name, buffer);
        }
        self.last_error = error;
        Ok(issued)
    }

    /// Waits, at a `# completed` line, until the replay's request has completed too, so the
    /// calls after it see what the program saw.
    fn completed(&mut self, line: usize, seq: &str) -> Result<()> {
        let id = lookup(&self.handles.seqs, line, seq, SeqId)?;
        let start = std::time::Instant::now();
        loop {
            match self.inner.nrta_is_completed(id) {
                Ok(true) => return Ok(()),
                Ok(false) if start.elapsed() < COMPLETION_TIMEOUT => {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                Ok(false) => bail!(
                    "line {line}: {seq} did not complete within {} s on the replay",
                    COMPLETION_TIMEOUT.as_secs()
                ),
                Err(error) => bail!("line {line}: nrta_is_completed({seq}) failed: {error}"),
            }
        }
    }

    /// Applies a `# memory` line to the replaying runtime, untraced.
    fn memory(&mut self, line: usize, tensor: &str, offset: usize, bytes: &Bytes) -> Result<()> {
        let bytes = bytes_of(self.recording, self.max_bytes, line, bytes)?;
        let id = lookup(&self.handles.tensors, line, tensor, TensorId)?;
        self.inner
            .tensor_write(id, offset, &bytes)
            .with_context(|| format!("line {line}: applying the stores to {tensor}"))?;
        Ok(())
    }
}

/// Whether the replayed line matches the recorded one. Functions without a status in C
/// (releases, `close`) are compared up to their result: the recorder cannot see one.
fn matches(function: LibnrtFunction, recorded: &str, replayed: &str) -> bool {
    use LibnrtFunction as F;
    if recorded == replayed {
        return true;
    }
    let without_result =
        |text: &str| text.rsplit_once(" -> ").map_or(text, |(call, _)| call).to_owned();
    let same_call = without_result(recorded) == without_result(replayed);
    match function {
        F::nrt_tensor_free | F::nrt_destroy_tensor_set | F::nrta_error_tracker_destroy => same_call,
        // `nrt_tensor_get_size` says it failed only by returning 0.
        F::nrt_tensor_get_size => {
            same_call
                && recorded.ends_with(" -> 0 NRT_SUCCESS")
                && !replayed.ends_with("NRT_SUCCESS")
        }
        // `nrt_tensor_get_va` says it failed only by returning NULL, traced NRT_INVALID.
        F::nrt_tensor_get_va => {
            same_call && recorded.ends_with(" -> NRT_INVALID") && !replayed.ends_with("NRT_SUCCESS")
        }
        _ => false,
    }
}

/// The first line where a replay differs from its recording.
#[derive(Clone, Debug)]
pub struct Divergence {
    /// The line number in the recording (1-based).
    pub line: usize,
    /// The recorded line.
    pub recorded: String,
    /// What the replay wrote instead.
    pub replayed: String,
    /// The whole report: the lines before it, both lines, and what the replay said.
    pub report: String,
}

/// The outcome of a replay.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The first divergence, if any.
    pub divergence: Option<Divergence>,
    /// Calls re-issued.
    pub issued: usize,
    /// Calls recorded by name only, not re-issued.
    pub skipped: usize,
    /// Those calls by name, with how many of each.
    pub skipped_by_name: std::collections::BTreeMap<String, usize>,
}

impl Outcome {
    /// What this replay did not check, one sentence each: the recording's own limits (its
    /// `# limit` header lines), then each call recorded by name only that it did not re-issue.
    pub fn unchecked(&self, recording: &Recording) -> Vec<String> {
        let limits = recording.limits().map(str::to_owned);
        let calls = self.skipped_by_name.iter().map(|(name, count)| {
            let calls = if *count == 1 { "call" } else { "calls" };
            format!("{name}: {count} {calls} recorded by name only, not re-issued")
        });
        limits.chain(calls).collect()
    }
}

/// Replays `recording` on `inner` (fresh and uninitialised: the recording initialises it), up
/// to the first divergence.
///
/// # Errors
/// A [`RecordingError`] for a line that cannot be re-issued (bad arguments, missing bytes, an
/// unknown handle where one is needed), or a replayed request that never completes.
pub fn replay_on(recording: &Recording, inner: Arc<dyn Runtime>) -> Result<Outcome> {
    let trace = Arc::new(Trace::new());
    let mut replayer = Replayer {
        recording: &recording.path,
        max_bytes: recording.max_bytes,
        runtime: TracingRuntime::new(Arc::clone(&inner), Arc::clone(&trace)),
        inner,
        handles: Handles::default(),
        last_error: None,
    };
    let mut outcome =
        Outcome { divergence: None, issued: 0, skipped: 0, skipped_by_name: Default::default() };
    for (line, entry) in &recording.entries {
        let call = match entry {
            Line::Comment => continue,
            Line::Memory { tensor, offset, bytes } => {
                replayer.memory(*line, tensor, *offset, bytes)?;
                continue;
            }
            Line::Completed { seq } => {
                replayer.completed(*line, seq)?;
                continue;
            }
            Line::Call(call) => call,
        };
        let text = &recording.lines[line - 1];
        replayer.last_error = None;
        let issued = replayer.issue(*line, call)?;
        let produced = trace.lines();
        trace.clear_lines();
        if matches!(issued, Issued::Skipped) {
            outcome.skipped += 1;
            let name = call.function.trace_name().to_owned();
            *outcome.skipped_by_name.entry(name).or_default() += 1;
            continue;
        }
        outcome.issued += 1;
        if let Some(detail) = issued.error() {
            replayer.last_error = Some(detail);
        }
        let replayed = produced.join(" | ");
        if !matches(call.function, text, &replayed) {
            outcome.divergence = Some(Divergence {
                line: *line,
                recorded: text.clone(),
                report: divergence_report(recording, *line, &replayed, &replayer),
                replayed,
            });
            break;
        }
        let made = call.returned().map(str::to_owned);
        let handles = &mut replayer.handles;
        match (issued, made) {
            (Issued::Tensor(Ok(id)), Some(name)) => {
                handles.tensors.insert(name, id);
            }
            (Issued::Set(Ok(id)), Some(name)) => {
                handles.sets.insert(name, id);
            }
            (Issued::Model(Ok(id)), Some(name)) => {
                handles.models.insert(name, id);
            }
            (Issued::Seq(Ok(id)), Some(name)) => {
                handles.seqs.insert(name, id);
            }
            (Issued::Tracker(Ok(id)), Some(name)) => {
                handles.trackers.insert(name, id);
            }
            _ => {}
        }
    }
    Ok(outcome)
}

/// The report of a divergence at `line`: the recorded lines before it, both lines, and the
/// detail of the replay's last failure.
fn divergence_report(
    recording: &Recording,
    line: usize,
    replayed: &str,
    replayer: &Replayer<'_>,
) -> String {
    let mut report = String::new();
    let _ = writeln!(report, "first divergence at line {line} of {}:", recording.path.display());
    let start = line.saturating_sub(CONTEXT_LINES + 1).max(recording.header.len());
    for number in start + 1..line {
        let _ = writeln!(report, "    {number:>5}  {}", recording.lines[number - 1]);
    }
    let _ = writeln!(report, "  recorded  {}", recording.lines[line - 1]);
    let _ = writeln!(report, "  replayed  {replayed}");
    if let Some(detail) = &replayer.last_error {
        let _ = writeln!(report, "  the replay said: {detail}");
    }
    report
}

/// Copies a recording and the bytes it needs to `VECTORS/recorded/NAME/`.
///
/// # Errors
/// The name is invalid, the folder exists, or a file cannot be copied.
pub fn promote(recording: &Recording, vectors: &Path, name: &str) -> Result<PathBuf> {
    let dir = promoted_dir(vectors, name)?;
    let blobs = dir.join(format!("{RECORDING_FILE}.blobs"));
    std::fs::create_dir_all(&blobs).with_context(|| format!("creating {}", blobs.display()))?;
    let source_blobs = blobs_dir(&recording.path);
    for (_, entry) in &recording.entries {
        let hashes: Vec<String> = match entry {
            Line::Call(Call { args: Args::Recorded(args), .. }) => args
                .iter()
                .filter_map(|arg| {
                    let bytes = parse::parse_bytes(0, arg).ok()?;
                    bytes.digest().map(str::to_owned)
                })
                .collect(),
            Line::Memory { bytes, .. } => bytes.digest().map(str::to_owned).into_iter().collect(),
            Line::Call(_) | Line::Comment | Line::Completed { .. } => Vec::new(),
        };
        for hash in hashes {
            let from = source_blobs.join(&hash);
            if from.is_file() {
                std::fs::copy(&from, blobs.join(&hash))
                    .with_context(|| format!("copying {}", from.display()))?;
            }
        }
    }
    std::fs::copy(&recording.path, dir.join(RECORDING_FILE))
        .with_context(|| format!("copying {}", recording.path.display()))?;
    Ok(dir)
}

/// The folder of promoted vector `name`, refused when the name is not a plain identifier or
/// the folder exists.
///
/// # Errors
/// A message naming what is wrong.
pub fn promoted_dir(vectors: &Path, name: &str) -> Result<PathBuf> {
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        bail!("vector name {name:?} is invalid, expected letters, digits and `_`");
    }
    let dir = vectors.join("recorded").join(name);
    if dir.exists() {
        bail!("{} exists already; promote never writes over a vector", dir.display());
    }
    Ok(dir)
}

/// Runs a recorded vector (`vector.recording` is set) on a fresh, uninitialised `runtime`: a
/// divergence, or a recording that cannot be replayed, is the run's failure, naming the first
/// differing line. The trace is the replay's own, up to that line.
pub fn run_recorded(vector: &Vector, runtime: Arc<dyn Runtime>) -> RunOutput {
    let path = vector.dir.join(RECORDING_FILE);
    let outcome =
        read_recording(&path, DEFAULT_MAX_BYTES).and_then(|r| replay_on(&r, Arc::clone(&runtime)));
    runtime.close();
    let failure = match outcome {
        Err(error) => Some(format!("cannot replay {RECORDING_FILE}: {error:#}")),
        Ok(Outcome { divergence: None, .. }) => None,
        Ok(Outcome { divergence: Some(d), .. }) => Some(format!(
            "replay diverges from {RECORDING_FILE} at line {}: recorded `{}`, replayed `{}`",
            d.line, d.recorded, d.replayed
        )),
    };
    RunOutput { trace: Vec::new(), failure }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// Any bytes the trace writes inline read back as the same bytes.
        #[test]
        fn inline_bytes_read_back(bytes in proptest::collection::vec(any::<u8>(), 0..=32)) {
            let shown = format_bytes(&bytes);
            prop_assert_eq!(bytes_arg(Path::new("/nonexistent"), DEFAULT_MAX_BYTES, 1, &shown).expect("inline"), bytes);
        }
    }

    #[test]
    fn a_garbled_line_is_refused_with_the_grammar_message() {
        let error = RecordingError::from(parse::parse_line(4, "# memory t1 x [00]").unwrap_err());
        assert_eq!(
            error.to_string(),
            "line 4: expected a byte offset after the tensor, found \"# memory t1 x [00]\""
        );
    }

    #[test]
    fn a_made_up_handle_replays_as_an_id_never_handed_out() {
        let known = HashMap::from([("t1".to_owned(), TensorId(40))]);
        assert_eq!(lookup(&known, 1, "t1", TensorId).unwrap(), TensorId(40));
        assert_eq!(lookup(&known, 1, "t7", TensorId).unwrap(), TensorId(u64::MAX - 7));
        assert!(lookup(&known, 1, "tx", TensorId).is_err());
    }
}
