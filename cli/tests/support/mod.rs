//! What the command-line tests share: the built `nrtsim`, its output as text, and scratch folders.
#![allow(dead_code, unreachable_pub)]

use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The `nrtsim` binary cargo built for these tests.
pub fn nrtsim_exe() -> &'static str {
    env!("CARGO_BIN_EXE_nrtsim")
}

/// Runs `nrtsim` with `args` and waits for it.
pub fn nrtsim(args: &[&str]) -> Output {
    Command::new(nrtsim_exe()).args(args).output().expect("run the nrtsim binary")
}

/// Bytes a command printed, as text (invalid UTF-8 replaced).
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// What a command printed on standard output.
pub fn stdout(output: &Output) -> String {
    text(&output.stdout)
}

/// What a command printed on standard error.
pub fn stderr(output: &Output) -> String {
    text(&output.stderr)
}

/// A fresh, empty folder for one test, removed (with everything in it) when dropped. Its name
/// holds the test binary, the process and `label`, so tests running at once never share one.
pub struct Scratch {
    root: PathBuf,
    /// The folder the test works in: the root, or a folder inside it ([`Scratch::inside`]).
    path: PathBuf,
}

impl Scratch {
    /// The folder `nrtsim-<test binary>-<process>-<label>` under the system temp folder, emptied.
    pub fn new(label: &str) -> Scratch {
        let name = format!("nrtsim-{}-{}-{label}", env!("CARGO_CRATE_NAME"), std::process::id());
        let root = std::env::temp_dir().join(name);
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).expect("create the scratch folder");
        Scratch { path: root.clone(), root }
    }

    /// The same scratch, working in its new folder `relative` (such as `vectors/expectations`
    /// made, `vectors` worked in: pass the folder to work in and the ones to make under it).
    pub fn inside(mut self, relative: &str, make: &[&str]) -> Scratch {
        self.path = self.root.join(relative);
        std::fs::create_dir_all(&self.path).expect("create a scratch subfolder");
        for folder in make {
            std::fs::create_dir_all(self.path.join(folder)).expect("create a scratch subfolder");
        }
        self
    }

    /// Writes `bytes` to the file `name` in the folder and returns its path.
    pub fn write(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.path.join(name);
        std::fs::write(&path, bytes).expect("write a scratch file");
        path
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Deref for Scratch {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// A fresh scratch folder for one test (see [`Scratch`]).
pub fn scratch(label: &str) -> Scratch {
    Scratch::new(label)
}

/// Runs `python -m unittest -v MODULE` as `command` sets it up; the log (its stderr) when the
/// module ran at least one test and every test passed, else the reason with the log.
pub fn unittest_log(mut command: Command, python: &Path, module: &str) -> Result<String, String> {
    let output = command
        .args(["-m", "unittest", "-v", module])
        .output()
        .map_err(|e| format!("running {}: {e}", python.display()))?;
    let log = String::from_utf8_lossy(&output.stderr).into_owned();
    if !output.status.success() {
        return Err(format!("python -m unittest {module} failed:\n{log}"));
    }
    // unittest's last lines: "Ran N tests in Ts" then "OK"; a file that ran nothing proves nothing.
    if !log.contains("\nOK") || log.contains("Ran 0 tests") {
        return Err(format!("python -m unittest {module} ran no test:\n{log}"));
    }
    Ok(log)
}

/// One trial per Python test module, each run by `run` with the Python `pyref` finds with
/// `modules` (`check` names the search in its message); ignored without one, failed under CI.
pub fn python_trials(
    check: &str,
    modules: &[&str],
    files: &[&'static str],
    run: fn(&Path, &str) -> Result<(), libtest_mimic::Failed>,
) -> Vec<libtest_mimic::Trial> {
    let found = pyref::find_for(check, modules);
    let ignored = pyref::ignored(&found);
    files
        .iter()
        .map(|&module| {
            let found = found.clone();
            libtest_mimic::Trial::test(module, move || match &found {
                Ok(python) => run(python, module),
                Err(reason) => Err(reason.clone().into()),
            })
            .with_ignored_flag(ignored)
        })
        .collect()
}
