//! Where libnrt is looked for, and the typed errors of opening it.
//!
//! The order is fixed and short: `NRT_LIB_PATH` (a file, or a folder holding `libnrt.so.1`),
//! then `libnrt.so.1` through the dynamic linker's search (`LD_LIBRARY_PATH`, the cache, the
//! default folders), then the Neuron SDK's install folder. Every candidate that fails is kept
//! with its reason, so the error says exactly what was tried. There is no fall-back to the
//! simulator: a test that wants the simulator points `NRT_LIB_PATH` (or
//! [`crate::NrtRuntime::open_path`]) at it.

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};

use abi::status::NrtStatus;

/// The environment variable naming the library (or its folder) to open first.
pub const NRT_LIB_PATH: &str = "NRT_LIB_PATH";

/// The library's SONAME, looked up through the dynamic linker's search path.
pub const SONAME: &str = "libnrt.so.1";

/// Where the Neuron SDK installs the library.
pub const SDK_LIBRARY: &str = "/opt/aws/neuron/lib/libnrt.so.1";

/// One library that could not be used, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadAttempt {
    /// The path or file name handed to the dynamic loader.
    pub candidate: String,
    /// What went wrong with it.
    pub reason: String,
}

impl fmt::Display for LoadAttempt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.candidate, self.reason)
    }
}

/// Opening libnrt failed.
#[derive(Clone, Debug, thiserror::Error)]
pub enum NrtLoadError {
    /// No candidate could be loaded.
    #[error("libnrt could not be loaded; tried {}", list(.tried))]
    NotFound {
        /// Every candidate, in search order, with its reason.
        tried: Vec<LoadAttempt>,
    },
    /// A library loaded but lacks a function of the C API subset.
    #[error("{library} is not a usable libnrt: symbol {symbol} is missing ({reason})")]
    MissingSymbol {
        /// The library that loaded.
        library: String,
        /// The first missing symbol.
        symbol: &'static str,
        /// What the dynamic loader said.
        reason: String,
    },
    /// The library loaded, but `nrt_init` (or `nrt_get_version`) failed.
    #[error("{library} loaded, but {call} returned {status}")]
    Call {
        /// The library that loaded.
        library: String,
        /// The C function that failed.
        call: &'static str,
        /// Its status.
        status: NrtStatus,
    },
}

fn list(tried: &[LoadAttempt]) -> String {
    if tried.is_empty() {
        return "nothing".to_owned();
    }
    tried.iter().map(LoadAttempt::to_string).collect::<Vec<_>>().join(", ")
}

/// The candidates, in order, given the value of `NRT_LIB_PATH` (`None` or empty: unset). A
/// folder stands for `libnrt.so.1` inside it.
pub fn candidates(nrt_lib_path: Option<OsString>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(value) = nrt_lib_path.filter(|value| !value.is_empty()) {
        let path = PathBuf::from(value);
        out.push(if path.is_dir() { path.join(SONAME) } else { path });
    }
    out.push(PathBuf::from(SONAME));
    out.push(PathBuf::from(SDK_LIBRARY));
    out
}

/// The candidates for this process's environment.
pub fn default_candidates() -> Vec<PathBuf> {
    candidates(std::env::var_os(NRT_LIB_PATH))
}

/// How a candidate path is written in errors and reports.
pub(crate) fn display(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_order_is_env_then_soname_then_sdk() {
        assert_eq!(candidates(None), [PathBuf::from(SONAME), PathBuf::from(SDK_LIBRARY)]);
        assert_eq!(candidates(Some(OsString::new())).len(), 2, "an empty value is unset");
        let explicit = candidates(Some("/x/libnrt.so.1".into()));
        assert_eq!(explicit[0], PathBuf::from("/x/libnrt.so.1"));
        assert_eq!(explicit.len(), 3);
        let folder = candidates(Some(std::env::temp_dir().into_os_string()));
        assert_eq!(folder[0], std::env::temp_dir().join(SONAME));
    }

    #[test]
    fn not_found_lists_every_candidate_with_its_reason() {
        let err = NrtLoadError::NotFound {
            tried: vec![
                LoadAttempt { candidate: "a.so".into(), reason: "no such file".into() },
                LoadAttempt { candidate: "b.so".into(), reason: "wrong ELF class".into() },
            ],
        };
        assert_eq!(
            err.to_string(),
            "libnrt could not be loaded; tried a.so (no such file), b.so (wrong ELF class)"
        );
    }
}
