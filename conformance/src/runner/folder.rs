//! The folder of one run, for the files its steps name (profiles, traces): made on first use,
//! removed with the run's context.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A folder of one run, for the files its steps name (profiles); made on first use, removed
/// with the run's context.
#[derive(Default)]
pub(crate) struct RunFolder {
    path: std::cell::OnceCell<PathBuf>,
}

impl RunFolder {
    /// `relative` inside the run's folder, which is made on first use.
    pub(super) fn join(&self, relative: &str) -> Result<PathBuf, String> {
        if Path::new(relative).is_absolute() || relative.split('/').any(|part| part == "..") {
            return Err(format!(
                "file {relative:?} leaves the run's folder, expected a relative path inside it"
            ));
        }
        let dir = match self.path.get() {
            Some(dir) => dir,
            None => {
                static RUNS: AtomicU64 = AtomicU64::new(0);
                let n = RUNS.fetch_add(1, Ordering::Relaxed);
                let dir =
                    std::env::temp_dir().join(format!("nrtsim-run-{}-{n}", std::process::id()));
                // A folder left by an earlier process of the same id must not pass for this
                // run's output.
                let _ = std::fs::remove_dir_all(&dir);
                std::fs::create_dir_all(&dir).map_err(|err| {
                    format!("cannot make the run folder {}: {err}", dir.display())
                })?;
                self.path.get_or_init(|| dir)
            }
        };
        Ok(dir.join(relative))
    }
}

impl Drop for RunFolder {
    fn drop(&mut self) {
        if let Some(dir) = self.path.get() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}
