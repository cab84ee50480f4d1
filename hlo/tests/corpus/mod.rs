//! The one finder of the data-driven tests' files: the HLO cases (`tests/cases`), the XLA
//! fixtures (`tests/fixtures`), nkipy's modules and the vectors' programs. Each test names a
//! folder and the endings of the files it runs; the finder walks the folder, sorts what it finds
//! (so trials run and fail in one order everywhere) and refuses an empty corpus, since a test
//! over no files would pass for a folder that moved.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The crate's folder.
pub(crate) fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The files under `tests/<folder>` (recursively) whose names end with one of `endings`, sorted.
///
/// # Panics
/// When there is none: a corpus that vanished must fail its tests, not pass them.
pub(crate) fn corpus(folder: &str, endings: &[&str]) -> Vec<PathBuf> {
    let dir = root().join("tests").join(folder);
    let files = files_under(&dir, endings);
    assert!(!files.is_empty(), "no {endings:?} files under {}", dir.display());
    files
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
