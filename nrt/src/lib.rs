//! `NrtRuntime`: the libnrt C API, opened at run time, behind the [`abi`] contract.
//!
//! This is the backend that runs on a Neuron instance. Pointed at the simulator's
//! `libnrt.so.1` (`sim/capi`), it runs the whole FFI path on any laptop, which is how it is
//! tested.
//!
//! Design choices:
//! - **Opened at run time, never linked.** A machine without libnrt builds and runs everything
//!   else; opening it is a `Result`. The search order is `NRT_LIB_PATH`, then `libnrt.so.1`
//!   through the dynamic linker, then `/opt/aws/neuron/lib/libnrt.so.1` ([`search`]). A missing
//!   library or symbol is an [`NrtLoadError`] naming every candidate and reason. Nothing
//!   panics and nothing falls back to the simulator.
//! - **One FFI module.** All `unsafe` is in the `sys` module (`src/sys/`, one file per public
//!   header, holding both the header's C calls and the `Runtime` methods over them); this root
//!   denies it, and each header's file allows it only on the items that make the C calls. The C declarations are written from the facts of the ABI
//!   (docs/abi-facts.md §4), not copied from a header, and the struct layouts are checked at
//!   compile time (296 and 224 bytes).
//! - **libnrt validates, we translate.** Calls go through unchanged and statuses come back
//!   through one function, [`status_of`], with `Unknown(u32)` for codes from newer libraries.
//!   Rust checks nothing that libnrt checks; the only Rust-side refusals are those that keep
//!   raw pointers sound (a handle this runtime never gave out, a name with a NUL byte).
//! - **Ownership instead of trust.** Handles live in owners that free them on drop and are
//!   shared through `Arc`: a tensor named by a tensor set stays allocated in libnrt while the set
//!   can still hand it to a launch, even after the caller freed it.
//! - **Initialised on open, closed on drop**, as the issue asks: [`NrtRuntime::open`] calls
//!   `nrt_init(NO_FW, "", "")`. Conformance checks that drive the lifecycle themselves open with
//!   [`OpenOptions`] and `initialize: false`. libnrt initialises once per process; a harness
//!   keeps one runtime per process.
#![deny(unsafe_code)]

mod handles;
mod runtime;
pub mod search;
mod sys;

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use abi::dtype::DtypeNumbering;
use abi::functions::LibnrtFunction;
use abi::runtime::Framework;
use abi::status::NrtStatus;

pub use search::{LoadAttempt, NrtLoadError};
/// How a call of the real library is read back from its C arguments, for the recorder
/// (`nrtsim-record`): one entry per function, beside the C call its method makes.
pub mod record {
    pub use crate::sys::plans::plan;
    pub use crate::sys::record::*;
}

/// The status for a raw `NRT_STATUS` value; the one place codes become [`NrtStatus`].
pub fn status_of(code: u32) -> NrtStatus {
    NrtStatus::from_code(code)
}

/// Which library to open.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum LibrarySource {
    /// The search order of [`search::default_candidates`].
    #[default]
    Search,
    /// This file only.
    Path(PathBuf),
}

/// How [`NrtRuntime::open_with`] opens the library.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenOptions {
    /// Which library.
    pub library: LibrarySource,
    /// Whether to call `nrt_init(NO_FW, "", "")` once it is open.
    pub initialize: bool,
    /// How the library numbers `nrt_dtype_t`; `None`: decided from its version by
    /// [`DtypeNumbering::for_runtime_version`].
    pub dtype_numbering: Option<DtypeNumbering>,
}

impl Default for OpenOptions {
    /// Search, initialise, numbering from the version.
    fn default() -> OpenOptions {
        OpenOptions { library: LibrarySource::Search, initialize: true, dtype_numbering: None }
    }
}

/// The version `nrt_get_version` reported when the library was opened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LibraryVersion {
    /// Major, minor, patch, maintenance.
    pub numbers: [u64; 4],
    /// The free-form detail text.
    pub detail: String,
    /// The build's git hash.
    pub git_hash: String,
}

/// The libnrt C API, opened at run time.
pub struct NrtRuntime {
    library: Arc<sys::Library>,
    path: String,
    version: LibraryVersion,
    numbering: DtypeNumbering,
    next_id: AtomicU64,
    handles: handles::Handles,
    /// Async requests in flight and the error trackers made (`nrta_*`).
    async_state: sys::AsyncState,
    trackers: std::sync::Mutex<
        std::collections::HashMap<abi::runtime::TrackerId, Arc<sys::OwnedTracker>>,
    >,
}

impl std::fmt::Debug for NrtRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NrtRuntime")
            .field("path", &self.path)
            .field("version", &self.version)
            .field("numbering", &self.numbering)
            .finish_non_exhaustive()
    }
}

impl NrtRuntime {
    /// Finds libnrt (`NRT_LIB_PATH`, `libnrt.so.1`, `/opt/aws/neuron/lib/libnrt.so.1`) and
    /// initialises it with `nrt_init(NO_FW, "", "")`.
    ///
    /// # Errors
    /// [`NrtLoadError::NotFound`] listing every candidate when none loads,
    /// [`NrtLoadError::MissingSymbol`] for a library without the C API,
    /// [`NrtLoadError::Call`] when `nrt_get_version` or `nrt_init` fails.
    pub fn open() -> Result<NrtRuntime, NrtLoadError> {
        NrtRuntime::open_with(&OpenOptions::default())
    }

    /// Opens the library at `path` only, and initialises it.
    ///
    /// # Errors
    /// As [`NrtRuntime::open`], with `path` the only candidate.
    pub fn open_path(path: &Path) -> Result<NrtRuntime, NrtLoadError> {
        NrtRuntime::open_with(&OpenOptions {
            library: LibrarySource::Path(path.to_owned()),
            ..OpenOptions::default()
        })
    }

    /// Opens a library as `options` say.
    ///
    /// # Errors
    /// As [`NrtRuntime::open`].
    pub fn open_with(options: &OpenOptions) -> Result<NrtRuntime, NrtLoadError> {
        let candidates = match &options.library {
            LibrarySource::Search => search::default_candidates(),
            LibrarySource::Path(path) => vec![path.clone()],
        };
        NrtRuntime::open_first(&candidates, options)
    }

    /// Opens the first of `candidates` that loads (`options.library` is not used).
    ///
    /// # Errors
    /// As [`NrtRuntime::open`].
    pub fn open_first(
        candidates: &[PathBuf],
        options: &OpenOptions,
    ) -> Result<NrtRuntime, NrtLoadError> {
        let mut tried = Vec::new();
        for candidate in candidates {
            let name = search::display(candidate);
            match sys::Library::open(&name) {
                Ok(library) => return NrtRuntime::start(library, name, options),
                Err(sys::OpenFailure::NotLoaded(reason)) => {
                    tried.push(LoadAttempt { candidate: name, reason })
                }
                Err(sys::OpenFailure::MissingSymbol { symbol, reason }) => {
                    return Err(NrtLoadError::MissingSymbol { library: name, symbol, reason });
                }
            }
        }
        Err(NrtLoadError::NotFound { tried })
    }

    fn start(
        library: Arc<sys::Library>,
        path: String,
        options: &OpenOptions,
    ) -> Result<NrtRuntime, NrtLoadError> {
        let failed = |call: LibnrtFunction, code| NrtLoadError::Call {
            library: path.clone(),
            call: call.name(),
            status: status_of(code),
        };
        let raw =
            library.get_version().map_err(|code| failed(LibnrtFunction::nrt_get_version, code))?;
        let version = LibraryVersion {
            numbers: [raw.major, raw.minor, raw.patch, raw.maintenance],
            detail: raw.detail,
            git_hash: raw.git_hash,
        };
        if options.initialize {
            let empty = CString::default();
            let code = library.init(Framework::NoFw.code(), &empty, &empty);
            if code != sys::SUCCESS {
                return Err(failed(LibnrtFunction::nrt_init, code));
            }
        }
        let [major, minor, ..] = version.numbers;
        let numbering = options
            .dtype_numbering
            .unwrap_or_else(|| DtypeNumbering::for_runtime_version(major, minor));
        Ok(NrtRuntime {
            library,
            path,
            version,
            numbering,
            next_id: AtomicU64::new(1),
            handles: handles::Handles::default(),
            async_state: sys::AsyncState::default(),
            trackers: std::sync::Mutex::new(std::collections::HashMap::new()),
        })
    }

    /// Whether the opened library exports `function` (always true for the functions every
    /// supported release has; the library was refused otherwise).
    pub fn exports(&self, function: abi::functions::LibnrtFunction) -> bool {
        self.library.exports(function)
    }

    /// The file (or name) the library was opened from.
    pub fn library_path(&self) -> &str {
        &self.path
    }

    /// What `nrt_get_version` reported when the library was opened.
    pub fn library_version(&self) -> &LibraryVersion {
        &self.version
    }

    /// The `nrt_dtype_t` numbering used to read tensor infos.
    pub fn dtype_numbering(&self) -> DtypeNumbering {
        self.numbering
    }

    /// What the library's `nrt_get_status_as_str` says for `status`; `None` when it returns
    /// NULL.
    pub fn status_text(&self, status: NrtStatus) -> Option<String> {
        self.library.status_as_str(status.code())
    }
}

impl Drop for NrtRuntime {
    /// Releases the async requests libnrt has completed (leaking the host blocks of any still in
    /// flight), frees every tensor, destroys every set and unloads every model still held, then
    /// calls `nrt_close`.
    fn drop(&mut self) {
        self.async_state.abandon(&self.library);
        self.trackers.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clear();
        self.handles.release_all();
        self.library.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_of_keeps_every_code() {
        assert_eq!(status_of(0), NrtStatus::Success);
        assert_eq!(status_of(1003), NrtStatus::ExecCompletedWithNumErr);
        assert_eq!(status_of(8), NrtStatus::Unknown(8));
        assert_eq!(status_of(4242).code(), 4242);
    }
}
