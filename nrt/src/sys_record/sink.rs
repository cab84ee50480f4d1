//! The trace file: its header, one flushed line per call, the blobs beside it, and the handle
//! generations behind the names.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

use abi::runtime::{ModelId, SeqId, SetId, TensorId, TrackerId};
use abi::trace::{Names, Trace};

/// The environment variable naming the trace file (default `DEFAULT_OUT`).
pub const OUT_ENV: &str = "NRTSIM_RECORD_OUT";

/// The trace file written when [`OUT_ENV`] is unset.
const DEFAULT_OUT: &str = "nrtsim-record.trace";

/// The first word of a recording's first line: `# nrtsim-trace VERSION`.
pub const HEADER_MAGIC: &str = "# nrtsim-trace";

/// The version of the recorded format; a replay refuses any other.
pub const FORMAT_VERSION: u32 = 1;

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

/// The kinds of handle renamed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    Tensor,
    Set,
    Model,
    /// An `nrta_seq_t` (a value, not a pointer).
    Seq,
    /// An `nrta_error_tracker_t *`.
    Tracker,
}

/// One piece of a line: text, or a handle to name.
pub(crate) enum Part {
    /// Literal text.
    Text(String),
    /// A handle the call reads (named on first sight).
    Handle(Kind, u64),
    /// A handle the call made (always a new name).
    New(Kind, u64),
    /// A handle the call released (named, then forgotten).
    Released(Kind, u64),
}

struct Sink {
    file: Option<File>,
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

fn sink() -> MutexGuard<'static, Sink> {
    SINK.get_or_init(|| Mutex::new(Sink::open())).lock().unwrap_or_else(PoisonError::into_inner)
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
            file: None,
            blobs: PathBuf::from(blobs),
            trace: Trace::new(),
            live: HashMap::new(),
            next: 0,
            complained: false,
            kept: std::collections::HashSet::new(),
        };
        match File::create(&path) {
            Ok(file) => sink.file = Some(file),
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
            format!("# runtime {}", crate::lines::runtime_version()),
            format!("# instance {}", instance_type()),
            format!("# library {library}"),
        ];
        for line in header.into_iter().chain(LIMITS.iter().map(|limit| format!("# limit {limit}")))
        {
            sink.write_line(&line);
        }
        sink
    }

    fn write_line(&mut self, line: &str) {
        let Some(file) = &mut self.file else { return };
        let mut text = String::with_capacity(line.len() + 1);
        text.push_str(line);
        text.push('\n');
        if let Err(error) = file.write_all(text.as_bytes()).and_then(|()| file.flush()) {
            if !self.complained {
                eprintln!("nrtsim-record: writing the trace failed: {error}; recording stops");
                self.complained = true;
            }
            self.file = None;
        }
    }

    fn generation(&mut self, kind: Kind, pointer: u64, new: bool) -> u64 {
        if !new {
            if let Some(&generation) = self.live.get(&(kind, pointer)) {
                return generation;
            }
        }
        self.next += 1;
        self.live.insert((kind, pointer), self.next);
        self.next
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

/// Whether `pointer` of `kind` has a name (was seen and not released).
pub(crate) fn known(kind: Kind, pointer: u64) -> bool {
    sink().live.contains_key(&(kind, pointer))
}

/// Writes one line made of `parts` (handles named in order), flushed.
pub(crate) fn record(parts: Vec<Part>) {
    let mut sink = sink();
    let mut resolved = Vec::with_capacity(parts.len());
    for part in parts {
        resolved.push(match part {
            Part::Text(text) => Err(text),
            Part::Handle(kind, pointer) => Ok((kind, sink.generation(kind, pointer, false))),
            Part::New(kind, pointer) => Ok((kind, sink.generation(kind, pointer, true))),
            Part::Released(kind, pointer) => {
                let generation = sink.generation(kind, pointer, false);
                sink.live.remove(&(kind, pointer));
                Ok((kind, generation))
            }
        });
    }
    sink.trace.record_with(|names| {
        let mut line = String::new();
        for part in resolved {
            match part {
                Err(text) => line.push_str(&text),
                Ok((kind, generation)) => line.push_str(&name(names, kind, generation)),
            }
        }
        line
    });
    let lines = sink.trace.lines();
    sink.trace.clear_lines();
    for line in lines {
        sink.write_line(&line);
    }
}

/// Keeps `bytes` (longer than the inline limit) beside the trace as `FILE.blobs/HASH`, where
/// `HASH` is the 16 hex digits the line shows.
pub(crate) fn keep_blob(bytes: &[u8], shown: &str) {
    let Some(hash) = shown.rsplit("sha256:").next().map(|rest| rest.trim_end_matches('>')) else {
        return;
    };
    let mut sink = sink();
    if sink.file.is_none() {
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
