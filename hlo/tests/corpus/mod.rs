//! The one finder of the data-driven tests' files, as wasmtime's `tests/wast.rs` is one runner
//! for every `.wast`.
//!
//! Every corpus of `hlo` has the layout the conformance vectors have: a folder per case, holding
//! a header file `case.toml` and the files the header describes. The corpora are the
//! interpreter's hand-written cases (`tests/cases/<name>/`: `module.hlo`), the modules jax wrote
//! (`tests/fixtures/<name>/`: `module.hlo`, `old.hlo`, `jax.pb`, `xla.pb`) and the committed XLA
//! cross-check cases (`tests/xla/fixtures/<name>/`: `module.hlo`, `module.pb`, `optimized.pb`,
//! the inputs and XLA's outputs as `.npy`). What the header's keys mean is the business of the
//! test that reads the corpus; the finder only reads it as TOML.
//!
//! [`cases`] lists a corpus sorted by name, so trials run and fail in one order everywhere, and
//! refuses an empty corpus, since a test over no cases would pass for a folder that moved.
//! [`files_under`] is for the tests that read every module of the tree (nkipy's modules and the
//! vectors' programs included) whatever its folder.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The crate's folder.
pub(crate) fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// One case of a corpus: a folder holding `case.toml`.
#[derive(Clone)]
pub(crate) struct Case {
    /// The folder's name, which names the case's trials.
    pub(crate) name: String,
    pub(crate) folder: PathBuf,
    /// `case.toml`, parsed.
    pub(crate) header: toml::Table,
}

impl Case {
    /// Reads the case in `folder`.
    ///
    /// # Errors
    /// When `folder` has no readable `case.toml`, or it is not TOML.
    pub(crate) fn open(folder: &Path) -> Result<Case, String> {
        let path = folder.join("case.toml");
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let header = text.parse::<toml::Table>().map_err(|e| format!("{}: {e}", path.display()))?;
        let name = folder.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        Ok(Case { name, folder: folder.to_path_buf(), header })
    }

    /// The path of the case's file `name`.
    pub(crate) fn file(&self, name: &str) -> PathBuf {
        self.folder.join(name)
    }
}

/// The cases of `tests/<folder>`, sorted by name: every folder directly in it, each of which must
/// hold a `case.toml`. Files beside the folders (an export script, a README) are not cases.
///
/// # Panics
/// When there is no case, or a folder has no readable `case.toml`: a corpus that vanished or a
/// case that lost its header must fail its tests, not pass them.
pub(crate) fn cases(folder: &str) -> Vec<Case> {
    let dir = root().join("tests").join(folder);
    let entries =
        std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("the corpus {}: {e}", dir.display()));
    let mut folders: Vec<PathBuf> = entries
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.is_dir())
        .collect();
    folders.sort();
    assert!(!folders.is_empty(), "no case folders under {}", dir.display());
    folders.iter().map(|folder| Case::open(folder).unwrap_or_else(|e| panic!("{e}"))).collect()
}

/// The files under `dir` (recursively; none when it does not exist) whose names end with one of
/// `endings`, sorted.
pub(crate) fn files_under(dir: &Path, endings: &[&str]) -> Vec<PathBuf> {
    fn walk(dir: &Path, endings: &[&str], out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                walk(&path, endings, out);
            } else if path
                .file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| endings.iter().any(|ending| name.ends_with(ending)))
            {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, endings, &mut out);
    out.sort();
    out
}
