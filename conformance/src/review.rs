//! Reviewing a bless vector by vector: each vector whose generated files would change is shown
//! as a diff under its description, and the reviewer accepts, rejects or skips it.
//!
//! `--bless` takes every change at once; `nrtsim vectors review` asks per vector, as `insta
//! review` does for snapshots. To show a vector's new golden trace the simulator must run on its
//! new generated inputs, so those are written first; a vector that is not accepted gets its old
//! files back, byte for byte (a file that did not exist is removed again). Hand-written files
//! are never written.

use std::io::{BufRead, Write};
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::backend::{Backend, SimBackend};
use crate::bless::BlessError;
use crate::expectations::Expectations;
use crate::judge;
use crate::vector::{self, TRACE_FILE, Vector};

/// What the reviewer said of one vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Write the vector's new generated files.
    Accept,
    /// Keep its old files: the change is wrong.
    Reject,
    /// Keep its old files for now, undecided.
    Skip,
    /// Keep this vector's old files and stop asking.
    Quit,
}

/// How a review went: the vectors by what became of them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReviewSummary {
    /// Accepted: their new files are written.
    pub accepted: Vec<String>,
    /// Rejected: their old files are kept.
    pub rejected: Vec<String>,
    /// Skipped, or not reached before quitting: still stale.
    pub skipped: Vec<String>,
    /// Failing an expectation of their `case.toml` on the simulator: nothing to bless, each with
    /// the failure.
    pub failing: Vec<String>,
}

impl ReviewSummary {
    /// `N accepted, N rejected, N skipped` (`, N failing on the simulator` when some were).
    pub fn line(&self) -> String {
        let mut line = format!(
            "{} accepted, {} rejected, {} skipped",
            self.accepted.len(),
            self.rejected.len(),
            self.skipped.len()
        );
        if !self.failing.is_empty() {
            line.push_str(&format!(", {} failing on the simulator", self.failing.len()));
        }
        line
    }
}

/// One generated file of a vector and its bytes before and after.
struct FileChange {
    file: &'static str,
    old: Option<Vec<u8>>,
    new: Vec<u8>,
}

/// Reviews every vector whose generated files are stale, asking on `output` and reading each
/// answer as a line of `input` (`a`, `r`, `s`, `q`; the end of the input is a quit).
///
/// # Errors
/// A [`BlessError`] when a vector cannot be read or generated, or a file cannot be written or
/// restored.
pub fn review(
    vectors_dir: &Path,
    input: &mut dyn BufRead,
    output: &mut dyn Write,
) -> Result<ReviewSummary, BlessError> {
    let vectors = vector::discover(vectors_dir)?;
    let known = Expectations::load(&vectors_dir.join("expectations"), "sim")?;
    let mut summary = ReviewSummary::default();
    let mut quit = false;
    for vector in &vectors {
        let inputs = vector::generate_inputs(vector)?;
        let mut changes: Vec<FileChange> = inputs
            .into_iter()
            .map(|(file, new)| FileChange { file, old: read(vector, file), new })
            .filter(|change| change.old.as_deref() != Some(change.new.as_slice()))
            .collect();
        if quit {
            if !changes.is_empty() || trace_is_stale(vector, &known) {
                summary.skipped.push(vector.name.clone());
            }
            continue;
        }
        // The new trace comes from a run on the new inputs: stage them.
        for change in &changes {
            write(vector, change.file, &change.new)?;
        }
        if vector.runs_on("sim") && !vector.recorded {
            let run = SimBackend.run(vector);
            match run.failure {
                Some(failure) if known.reason(&vector.name).is_none() => {
                    restore(vector, &changes)?;
                    summary.failing.push(format!("{}: {failure}", vector.name));
                    continue;
                }
                Some(_) => {}
                None => {
                    let new = judge::golden_text(&run.trace).into_bytes();
                    let old = read(vector, TRACE_FILE);
                    if old.as_deref() != Some(new.as_slice()) {
                        changes.push(FileChange { file: TRACE_FILE, old, new });
                    }
                }
            }
        }
        if changes.is_empty() {
            continue;
        }
        show(vector, &changes, output).map_err(|e| terminal(vectors_dir, e))?;
        let answer = ask(input, output).map_err(|e| terminal(vectors_dir, e))?;
        if answer == Answer::Accept {
            for change in &changes {
                write(vector, change.file, &change.new)?;
            }
            summary.accepted.push(vector.name.clone());
            continue;
        }
        restore(vector, &changes)?;
        match answer {
            Answer::Reject => summary.rejected.push(vector.name.clone()),
            Answer::Skip | Answer::Accept => summary.skipped.push(vector.name.clone()),
            Answer::Quit => {
                summary.skipped.push(vector.name.clone());
                quit = true;
            }
        }
    }
    Ok(summary)
}

/// Whether the vector's golden trace differs from a run on the simulator (its inputs fresh).
fn trace_is_stale(vector: &Vector, known: &Expectations) -> bool {
    if !vector.runs_on("sim") || vector.recorded || known.reason(&vector.name).is_some() {
        return false;
    }
    let run = SimBackend.run(vector);
    run.failure.is_none()
        && read(vector, TRACE_FILE).as_deref() != Some(judge::golden_text(&run.trace).as_bytes())
}

fn read(vector: &Vector, file: &str) -> Option<Vec<u8>> {
    std::fs::read(vector.dir.join(file)).ok()
}

fn write(vector: &Vector, file: &str, bytes: &[u8]) -> Result<(), BlessError> {
    let path = vector.dir.join(file);
    crate::output_file::write(&path, bytes).map_err(|source| BlessError::Io { path, source })
}

/// Puts back what the vector's changed files held before (removing those that did not exist).
fn restore(vector: &Vector, changes: &[FileChange]) -> Result<(), BlessError> {
    for change in changes {
        match &change.old {
            Some(old) => write(vector, change.file, old)?,
            // A file that did not exist is removed again; the trace, written only when
            // accepted, may not be there at all.
            None => {
                let path = vector.dir.join(change.file);
                match std::fs::remove_file(&path) {
                    Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                        return Err(BlessError::Io { path, source: error });
                    }
                    _ => {}
                }
            }
        }
    }
    Ok(())
}

fn terminal(vectors_dir: &Path, source: std::io::Error) -> BlessError {
    BlessError::Io { path: vectors_dir.to_path_buf(), source }
}

/// The vector's description, then each changed file: a text diff, or sizes and hashes for bytes.
fn show(vector: &Vector, changes: &[FileChange], out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, "\n━━ {} ━━", vector.name)?;
    writeln!(out, "{}", vector.case.description)?;
    if let Some(provenance) = &vector.case.provenance {
        writeln!(out, "provenance: {}", provenance.to_text())?;
    }
    for change in changes {
        let path = format!("{}/{}", vector.name, change.file);
        let old_text = change.old.as_deref().map(std::str::from_utf8);
        match (old_text, std::str::from_utf8(&change.new)) {
            (None | Some(Ok(_)), Ok(new)) if change.file == TRACE_FILE => {
                let old = old_text.and_then(Result::ok).unwrap_or("");
                let diff = similar::TextDiff::from_lines(old, new);
                write!(
                    out,
                    "{}",
                    diff.unified_diff()
                        .context_radius(3)
                        .header(&format!("a/{path}"), &format!("b/{path}"))
                )?;
            }
            _ => {
                let describe = |bytes: Option<&[u8]>| match bytes {
                    Some(bytes) => format!("{} bytes sha256:{}", bytes.len(), short_hash(bytes)),
                    None => "(none)".to_owned(),
                };
                writeln!(
                    out,
                    "{path}: {} -> {}",
                    describe(change.old.as_deref()),
                    describe(Some(&change.new))
                )?;
            }
        }
    }
    Ok(())
}

fn short_hash(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// Asks until a known answer comes; the end of the input is a quit.
fn ask(input: &mut dyn BufRead, out: &mut dyn Write) -> std::io::Result<Answer> {
    loop {
        write!(out, "accept [a], reject [r], skip [s], quit [q]? ")?;
        out.flush()?;
        let mut line = String::new();
        if input.read_line(&mut line)? == 0 {
            writeln!(out)?;
            return Ok(Answer::Quit);
        }
        match line.trim() {
            "a" | "accept" => return Ok(Answer::Accept),
            "r" | "reject" => return Ok(Answer::Reject),
            "s" | "skip" => return Ok(Answer::Skip),
            "q" | "quit" => return Ok(Answer::Quit),
            other => writeln!(out, "{other:?}: expected a, r, s or q")?,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch vectors folder with three vectors whose traces are stale (edited by hand).
    fn scratch(label: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir()
            .join(format!("nrtsim-review-{}-{label}", std::process::id()))
            .join("vectors");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("expectations")).unwrap();
        for name in ["one", "two", "three"] {
            let vector = dir.join("area").join(name);
            std::fs::create_dir_all(&vector).unwrap();
            std::fs::write(
                vector.join("case.toml"),
                format!("description = \"vector {name}\"\n[[step]]\ncall = \"get_version\"\n"),
            )
            .unwrap();
            std::fs::write(vector.join(TRACE_FILE), "# old\nold line\n").unwrap();
        }
        dir
    }

    fn trace(dir: &Path, name: &str) -> String {
        std::fs::read_to_string(dir.join("area").join(name).join(TRACE_FILE)).unwrap()
    }

    #[test]
    fn each_vector_is_accepted_rejected_or_skipped_as_answered() {
        let dir = scratch("answers");
        // Vectors are reviewed in name order: one, three, two. An unknown answer is asked again.
        let mut input: &[u8] = b"a\nwhat\nr\ns\n";
        let mut shown = Vec::new();
        let summary = review(&dir, &mut input, &mut shown).expect("the review runs");
        assert_eq!(summary.accepted, ["area/one"]);
        assert_eq!(summary.rejected, ["area/three"]);
        assert_eq!(summary.skipped, ["area/two"]);
        assert_eq!(summary.line(), "1 accepted, 1 rejected, 1 skipped");
        let shown = String::from_utf8(shown).unwrap();
        assert!(shown.contains("━━ area/one ━━\nvector one\n"), "{shown}");
        assert!(shown.contains("-old line\n"), "the old line is shown removed: {shown}");
        assert!(shown.contains("+init(NO_FW, \"\", \"\") -> NRT_SUCCESS\n"), "{shown}");
        assert!(shown.contains("\"what\": expected a, r, s or q"), "{shown}");
        assert!(trace(&dir, "one").contains("get_version"), "accepted: the new trace");
        assert_eq!(trace(&dir, "two"), "# old\nold line\n", "skipped: the old trace");
        assert_eq!(trace(&dir, "three"), "# old\nold line\n", "rejected: the old trace");
        // Only the accepted vector is fresh now.
        let stale = crate::bless::sync(&dir, false).expect("a check");
        assert_eq!(stale, ["area/three/expected.trace", "area/two/expected.trace"]);
    }

    #[test]
    fn the_end_of_the_input_quits_and_leaves_the_rest_stale() {
        let dir = scratch("quit");
        let mut input: &[u8] = b"a\n";
        let summary = review(&dir, &mut input, &mut Vec::new()).expect("the review runs");
        assert_eq!(summary.accepted, ["area/one"]);
        assert_eq!(summary.skipped, ["area/three", "area/two"]);
        assert_eq!(trace(&dir, "two"), "# old\nold line\n");
        // Nothing stale: nothing asked.
        let mut all: &[u8] = b"a\na\n";
        review(&dir, &mut all, &mut Vec::new()).expect("accept the rest");
        let mut none: &[u8] = b"";
        let mut shown = Vec::new();
        let summary = review(&dir, &mut none, &mut shown).expect("a fresh review");
        assert_eq!(summary, ReviewSummary::default());
        assert!(shown.is_empty(), "{}", String::from_utf8_lossy(&shown));
    }
}
