//! Replaying a recording: re-issue each call an `nrtsim record` trace holds on a `Runtime`
//! wrapped in `abi::trace::TracingRuntime`, and compare the line the replay writes with the
//! recorded one. A call is re-issued as its typed call (`abi::runtime::call::Call`), read back
//! from the recorded arguments, so this module knows no function by name. The same normaliser wrote both, so the first line that differs is the first
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
use abi::runtime::call::{Call as TypedCall, CallError, Issued, MadeHandle, Resolve};
use abi::runtime::prelude::*;
use abi::runtime::{ModelId, SeqId, SetId, TensorId, TrackerId};
use abi::trace::parse::{self, Args, Bytes, Call, Line, ParseError};
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

pub use crate::vector::RECORDING_FILE;

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

/// What a recorded call's arguments stand for on the replay: the handles by their recorded
/// names ([`lookup`]), byte strings inline or kept beside the recording ([`bytes_of`]).
struct Resolver<'a> {
    recording: &'a Path,
    max_bytes: u64,
    handles: &'a Handles,
    line: usize,
}

impl Resolver<'_> {
    fn handle<T: Copy>(
        &self,
        map: &HashMap<String, T>,
        name: &str,
        make: impl Fn(u64) -> T,
    ) -> Result<T, CallError> {
        lookup(map, self.line, name, make).map_err(|error| CallError::Resolve(Box::new(error)))
    }
}

impl Resolve for Resolver<'_> {
    fn tensor(&mut self, name: &str) -> Result<TensorId, CallError> {
        self.handle(&self.handles.tensors, name, TensorId)
    }

    fn set(&mut self, name: &str) -> Result<SetId, CallError> {
        self.handle(&self.handles.sets, name, SetId)
    }

    fn model(&mut self, name: &str) -> Result<ModelId, CallError> {
        self.handle(&self.handles.models, name, ModelId)
    }

    fn seq(&mut self, name: &str) -> Result<SeqId, CallError> {
        self.handle(&self.handles.seqs, name, SeqId)
    }

    fn tracker(&mut self, name: &str) -> Result<TrackerId, CallError> {
        self.handle(&self.handles.trackers, name, TrackerId)
    }

    fn bytes(&mut self, text: &str) -> Result<Vec<u8>, CallError> {
        bytes_arg(self.recording, self.max_bytes, self.line, text).map_err(|error| match error {
            RecordingError::Parse(error) => CallError::Parse(error),
            error => CallError::Resolve(Box::new(error)),
        })
    }
}

/// How long a replay waits for a request the program saw complete.
const COMPLETION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

impl Replayer<'_> {
    /// Re-issues one call: its recorded arguments read back into the typed call, which is
    /// issued on the tracing runtime. `None` for a call recorded by name only, or of a function
    /// with no `Runtime` method.
    fn issue(&mut self, line: usize, call: &Call) -> Result<Option<Issued>> {
        let Args::Recorded(args) = &call.args else { return Ok(None) };
        let mut resolver = Resolver {
            recording: self.recording,
            max_bytes: self.max_bytes,
            handles: &self.handles,
            line,
        };
        let typed = match TypedCall::parse(call.function, line, args, &mut resolver) {
            Ok(typed) => typed,
            Err(CallError::Parse(error)) => return Err(RecordingError::from(error).into()),
            Err(CallError::Resolve(error)) => return Err(anyhow::anyhow!(error)),
        };
        Ok(typed.map(|typed| typed.issue(&self.runtime)))
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

/// Whether the replayed line matches the recorded one. A function without a status in C (a
/// release, `close`) is compared up to its result, which the recorder cannot see; one that
/// returns a size or a pointer says it failed only by returning 0 or NULL, which the recorder
/// writes `-> 0 NRT_SUCCESS` (a size) or `-> NRT_INVALID` (a pointer), so such a line matches
/// any failure of the same call.
fn matches(function: LibnrtFunction, recorded: &str, replayed: &str) -> bool {
    if recorded == replayed {
        return true;
    }
    let without_result =
        |text: &str| text.rsplit_once(" -> ").map_or(text, |(call, _)| call).to_owned();
    let same_call = without_result(recorded) == without_result(replayed);
    let failed = !replayed.ends_with("NRT_SUCCESS");
    match function.info().returns {
        None => same_call,
        Some("NRT_STATUS") => false,
        Some("usize") => same_call && failed && recorded.ends_with(" -> 0 NRT_SUCCESS"),
        // A pointer.
        Some(_) => same_call && failed && recorded.ends_with(" -> NRT_INVALID"),
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
        let Some(issued) = issued else {
            outcome.skipped += 1;
            let name = call.function.trace_name().to_owned();
            *outcome.skipped_by_name.entry(name).or_default() += 1;
            continue;
        };
        outcome.issued += 1;
        if let Some(error) = &issued.error {
            replayer.last_error = Some(error.to_string());
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
        let (Some(made), Some(name)) = (issued.made, call.returned().map(str::to_owned)) else {
            continue;
        };
        let handles = &mut replayer.handles;
        match made {
            MadeHandle::Tensor(id) => {
                handles.tensors.insert(name, id);
            }
            MadeHandle::Set(id) => {
                handles.sets.insert(name, id);
            }
            MadeHandle::Model(id) => {
                handles.models.insert(name, id);
            }
            MadeHandle::Seq(id) => {
                handles.seqs.insert(name, id);
            }
            MadeHandle::Tracker(id) => {
                handles.trackers.insert(name, id);
            }
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
