//! `nrtsim vectors settle`: turns a device's bundle ([`crate::bundle`]) into the vector changes
//! it implies.
//!
//! For each result of the settling backend (`nrt`, a device, by default):
//! - a guessed vector (`provenance = "guess: …"`) that **passed** becomes a fact: its provenance
//!   names the runtime version and the instance that confirmed it;
//! - a guessed vector that **differed** takes the device's answer: every step whose status in the
//!   device's trace differs from the golden one gets the device's status as its `expect`, the
//!   golden trace becomes the device's trace, and the provenance says the simulator must change
//!   (the simulator then fails the vector until a person changes it: that is intended);
//! - any other vector that differed gets a known-difference entry in
//!   `expectations/<backend>.toml`, its reason the device's first differing line.
//!
//! Both kinds of settled guess leave `GUESSES.md`.
//!
//! Design choices:
//! - **Textual edits.** `case.toml` is reviewed by people, so only the lines that change are
//!   rewritten (comments and layout stay); the edited text must still parse as a case, or
//!   nothing is written.
//! - **Idempotent.** A second run on the same bundle finds nothing to do: a settled guess is a
//!   fact, a refuted guess settled before (`fact: device answer …`, its golden trace beginning
//!   with the device's) needs no entry, and a listed vector is not proposed again.
//! - **Disagreement is for a person.** A merged report may hold a vector from several machines;
//!   when their answers differ, the vector is reported as unsettled and left as it is.
//! - **Only the vectors folder is written**, every path under it built from a checked
//!   `area/name`, and everything is worked out before the first file is written.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::bundle::Bundle;
use crate::expectations::{Expectations, ExpectationsError};
use crate::judge;
use crate::report::{CaseResult, Outcome};
use crate::spec::{CaseSpec, ProvenanceKind};
use crate::vector::TRACE_FILE;

/// The page that lists the guessed vectors.
pub const GUESSES_FILE: &str = "GUESSES.md";

/// What to settle, and where.
#[derive(Clone, Debug)]
pub struct SettleOptions {
    /// The vectors folder: the only folder written.
    pub vectors_dir: PathBuf,
    /// The backend whose results settle guesses (`nrt`, the device, in real use).
    pub backend: String,
    /// Work out and print the changes, write nothing.
    pub dry_run: bool,
}

/// One vector's change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Settled {
    /// A guess the device confirmed: its provenance is now this fact.
    Confirmed {
        /// `area/name`.
        vector: String,
        /// The new provenance.
        provenance: String,
    },
    /// A guess the device refuted: the vector now expects the device's answer.
    Refuted {
        /// `area/name`.
        vector: String,
        /// The new provenance.
        provenance: String,
        /// The steps whose expected status changed.
        steps: Vec<StepChange>,
        /// The first step whose golden lines were kept because the device's run stopped
        /// before it (at the failing step), if any.
        kept_from: Option<usize>,
    },
    /// A known-difference entry for the backend's expectations file.
    Proposed {
        /// `area/name`.
        vector: String,
        /// The entry, as appended to the file.
        entry: String,
    },
    /// A differing vector the bundle cannot settle; a person must look.
    Unsettled {
        /// `area/name`.
        vector: String,
        /// Why.
        reason: String,
    },
}

/// A step whose expected status became the device's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepChange {
    /// The step, from 1, as the trace numbers it.
    pub step: usize,
    /// The status the golden trace had, if it had one.
    pub was: Option<String>,
    /// The device's status.
    pub now: String,
}

/// What a settle did.
#[derive(Clone, Debug, Default)]
pub struct SettleOutcome {
    /// Each vector's change, in the report's order.
    pub changes: Vec<Settled>,
    /// The files written (or, on a dry run, that would be).
    pub written: Vec<PathBuf>,
}

impl SettleOutcome {
    /// How many vectors the bundle could not settle and a person must look at
    /// ([`Settled::Unsettled`]); `nrtsim vectors settle` exits 1 when there are any.
    pub fn left_for_a_person(&self) -> usize {
        self.changes.iter().filter(|c| matches!(c, Settled::Unsettled { .. })).count()
    }

    /// `settled N guesses as facts, M refuted, K proposed known differences`, and `, L left for
    /// a person` when some are.
    pub fn summary_line(&self) -> String {
        let count = |f: fn(&Settled) -> bool| self.changes.iter().filter(|c| f(c)).count();
        let confirmed = count(|c| matches!(c, Settled::Confirmed { .. }));
        let refuted = count(|c| matches!(c, Settled::Refuted { .. }));
        let proposed = count(|c| matches!(c, Settled::Proposed { .. }));
        let unsettled = self.left_for_a_person();
        let mut line = format!(
            "settled {confirmed} guesses as facts, {refuted} refuted, {proposed} proposed known differences"
        );
        if unsettled != 0 {
            line.push_str(&format!(", {unsettled} left for a person"));
        }
        line
    }
}

/// A bundle that cannot be settled against a vectors folder.
#[derive(Debug, thiserror::Error)]
pub enum SettleError {
    /// A file cannot be read or written.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The bundle names a vector in a form that is not `area/name`.
    #[error(
        "the bundle names vector {vector:?}, expected area/name of letters, digits, `_`, `-` and `.` (not leading)"
    )]
    BadVectorName {
        /// The name given.
        vector: String,
    },
    /// The bundle names a vector this folder does not have.
    #[error("the bundle names vector {vector}, expected a folder {}", .dir.display())]
    NoSuchVector {
        /// `area/name`.
        vector: String,
        /// The folder looked for.
        dir: PathBuf,
    },
    /// A `case.toml` that does not parse, before or after the edit.
    #[error("{}: {message}", .path.display())]
    Case {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A textual edit found no place to make it.
    #[error("{}: {message}", .path.display())]
    Edit {
        /// The file.
        path: PathBuf,
        /// What was looked for and not found.
        message: String,
    },
    /// The backend's expectations file does not parse.
    #[error(transparent)]
    Expectations(#[from] ExpectationsError),
}

/// Files as they will be: read from the disk once, then from the edits made so far.
struct Pending {
    files: BTreeMap<PathBuf, (Option<String>, String)>,
}

impl Pending {
    fn read(&mut self, path: &Path) -> Result<Option<String>, SettleError> {
        if let Some((_, text)) = self.files.get(path) {
            return Ok(Some(text.clone()));
        }
        match std::fs::read_to_string(path) {
            Ok(text) => {
                self.files.insert(path.to_path_buf(), (Some(text.clone()), text.clone()));
                Ok(Some(text))
            }
            Err(source) if source.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(SettleError::Io { path: path.to_path_buf(), source }),
        }
    }

    fn write(&mut self, path: &Path, text: String) {
        let entry = self.files.entry(path.to_path_buf()).or_insert((None, String::new()));
        entry.1 = text;
    }

    /// The files whose text changed.
    fn changed(&self) -> impl Iterator<Item = (&PathBuf, &String)> {
        self.files
            .iter()
            .filter(|(_, (old, new))| old.as_ref() != Some(new))
            .map(|(path, (_, new))| (path, new))
    }
}

/// Settles `bundle` against the vectors in `options.vectors_dir`.
///
/// # Errors
/// A [`SettleError`]: a vector the folder lacks or a name that is not `area/name`, a file that
/// cannot be read or written, a `case.toml` that does not parse (or would not after the edit),
/// an expectations file that does not parse. Nothing is written when one is found.
pub fn settle(bundle: &Bundle, options: &SettleOptions) -> Result<SettleOutcome, SettleError> {
    let mut pending = Pending { files: BTreeMap::new() };
    let expectations_dir = options.vectors_dir.join("expectations");
    let known = Expectations::load(&expectations_dir, &options.backend)?;
    let mut outcome = SettleOutcome::default();
    let cases: Vec<&CaseResult> =
        bundle.report.cases.iter().filter(|c| c.backend == options.backend).collect();
    let mut seen = BTreeSet::new();
    for case in &cases {
        if !seen.insert(case.vector.as_str()) {
            continue;
        }
        // A merged report can hold the vector from several machines: they must agree, or a
        // person decides which answer the vector pins.
        let other = cases.iter().find(|c| c.vector == case.vector && answer(c) != answer(case));
        if let Some(other) = other {
            let reason = format!(
                "the runs disagree: {} on {}, {} on {}",
                case.outcome.name(),
                device_run(bundle, case),
                other.outcome.name(),
                device_run(bundle, other)
            );
            outcome.changes.push(Settled::Unsettled { vector: case.vector.clone(), reason });
            continue;
        }
        if let Some(change) = settle_case(bundle, case, options, &known, &mut pending)? {
            outcome.changes.push(change);
        }
    }
    for (path, text) in pending.changed() {
        if !options.dry_run {
            crate::output_file::write(path, text.as_bytes())
                .map_err(|source| SettleError::Io { path: path.clone(), source })?;
        }
        outcome.written.push(path.clone());
    }
    Ok(outcome)
}

/// What a run answered for a vector: its outcome and its trace.
fn answer(case: &CaseResult) -> (Outcome, Option<&[String]>) {
    (case.outcome, case.detail.as_ref().map(|d| d.actual.as_slice()))
}

/// Where the device's run was made: `<runtime version> on <instance>`.
fn device_run(bundle: &Bundle, case: &CaseResult) -> String {
    let run = bundle.report.run_of(case);
    let version = run
        .and_then(|r| r.runtime_versions.get(&case.backend))
        .or(bundle.meta.runtime_version.as_ref())
        .map_or("an unnamed runtime version", String::as_str);
    let instance = run
        .and_then(|r| r.instance_type.as_ref())
        .or(bundle.meta.instance_type.as_ref())
        .map_or("an unnamed instance", String::as_str);
    format!("{version} on {instance}")
}

fn settle_case(
    bundle: &Bundle,
    case: &CaseResult,
    options: &SettleOptions,
    known: &Expectations,
    pending: &mut Pending,
) -> Result<Option<Settled>, SettleError> {
    let differed = matches!(case.outcome, Outcome::Failed | Outcome::GuessRefuted);
    if !differed && case.outcome != Outcome::Passed {
        return Ok(None);
    }
    let vector = case.vector.clone();
    check_name(&vector)?;
    let dir = options.vectors_dir.join(&vector);
    if !dir.is_dir() {
        return Err(SettleError::NoSuchVector { vector, dir });
    }
    let case_path = dir.join("case.toml");
    let case_text = pending.read(&case_path)?;
    // A recorded vector has no case.toml, and no provenance.
    let provenance = match &case_text {
        Some(text) => parse_case(&case_path, text)?.provenance,
        None => None,
    };
    let settled_by_device = provenance
        .as_ref()
        .is_some_and(|p| p.kind == ProvenanceKind::Fact && p.note.starts_with(DEVICE_ANSWER));
    let guess = provenance.filter(|p| p.kind == ProvenanceKind::Guess).map(|p| p.note);
    let run = device_run(bundle, case);
    match (guess, case_text) {
        (Some(note), Some(text)) if !differed => {
            let provenance = format!("fact: {run}: {note}");
            let edited = replace_provenance(&case_path, &text, &provenance)?;
            check_edit(&case_path, &edited)?;
            pending.write(&case_path, edited);
            remove_guess_row(options, &vector, pending)?;
            Ok(Some(Settled::Confirmed { vector, provenance }))
        }
        (Some(note), Some(text)) => {
            let Some(actual) = actual_lines(bundle, case) else {
                let reason = "the bundle holds no trace of the device's run".to_owned();
                return Ok(Some(Settled::Unsettled { vector, reason }));
            };
            let trace_path = dir.join(TRACE_FILE);
            let golden = golden_lines(pending.read(&trace_path)?.as_deref(), case);
            if golden == actual {
                let failures = case.detail.as_ref().map(|d| d.failures.join("; "));
                let reason = format!(
                    "the device's trace is the golden trace, only a hand-written expectation failed: {}",
                    failures.filter(|f| !f.is_empty()).or(case.message.clone()).unwrap_or_default()
                );
                return Ok(Some(Settled::Unsettled { vector, reason }));
            }
            let steps = status_changes(&golden, &actual);
            let mut edited = text;
            for change in &steps {
                edited = set_step_expect(&case_path, &edited, change.step, &change.now)?;
            }
            let provenance =
                format!("fact: {DEVICE_ANSWER} {run}; the simulator must change: {note}");
            edited = replace_provenance(&case_path, &edited, &provenance)?;
            check_edit(&case_path, &edited)?;
            let (trace, kept_from) = device_trace(&golden, &actual);
            pending.write(&case_path, edited);
            pending.write(&trace_path, judge::golden_text(&trace));
            remove_guess_row(options, &vector, pending)?;
            Ok(Some(Settled::Refuted { vector, provenance, steps, kept_from }))
        }
        _ if !differed => Ok(None),
        _ => {
            if known.reason(&vector).is_some() {
                return Ok(None);
            }
            let actual = actual_lines(bundle, case).unwrap_or_default();
            let golden = golden_lines(pending.read(&dir.join(TRACE_FILE))?.as_deref(), case);
            // A refuted guess settled before: its golden trace is the device's as far as the
            // device's run went.
            if settled_by_device && !actual.is_empty() && golden.starts_with(&actual) {
                return Ok(None);
            }
            let reason = match first_difference(&golden, &actual) {
                Some((line, _, got)) if got == END => format!(
                    "on {run} the device's trace ends before trace line {line}: {}",
                    case.message.as_deref().unwrap_or("the run stopped")
                ),
                Some((line, expected, got)) => format!(
                    "on {run} the device gives `{got}` at trace line {line}, where the golden trace has `{expected}`"
                ),
                // The traces agree (or the device's is missing): the run's message says why
                // it failed.
                None => format!(
                    "on {run}: {}",
                    case.message.as_deref().unwrap_or("the vector differs on the device")
                ),
            };
            let entry = format!(
                "[[known]]\nvector = {}\nreason = {}\n",
                toml_string(&vector),
                toml_string(&reason)
            );
            let path =
                options.vectors_dir.join("expectations").join(format!("{}.toml", case.backend));
            let mut text = pending.read(&path)?.unwrap_or_default();
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(&entry);
            pending.write(&path, text);
            Ok(Some(Settled::Proposed { vector, entry }))
        }
    }
}

/// Refuses a name that is not `area/name` of plain parts, so every path built from it stays
/// in the vectors folder.
fn check_name(vector: &str) -> Result<(), SettleError> {
    let plain = |part: &str| {
        !part.is_empty()
            && !part.starts_with('.')
            && part.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    };
    let parts: Vec<&str> = vector.split('/').collect();
    if parts.len() == 2 && parts.iter().all(|p| plain(p)) {
        Ok(())
    } else {
        Err(SettleError::BadVectorName { vector: vector.to_owned() })
    }
}

fn parse_case(path: &Path, text: &str) -> Result<CaseSpec, SettleError> {
    toml::from_str(text)
        .map_err(|e| SettleError::Case { path: path.to_path_buf(), message: e.to_string() })
}

/// The edited text must parse as a case and hold a fact.
fn check_edit(path: &Path, text: &str) -> Result<(), SettleError> {
    let case = parse_case(path, text).map_err(|error| SettleError::Case {
        path: path.to_path_buf(),
        message: format!("the settled case.toml would not parse, nothing written: {error}"),
    })?;
    if case.provenance.is_none_or(|p| p.kind != ProvenanceKind::Fact) {
        return Err(SettleError::Edit {
            path: path.to_path_buf(),
            message: "the settled case.toml would not hold a `fact:` provenance".to_owned(),
        });
    }
    Ok(())
}

/// The device's trace lines: the report's detail, else the bundle's trace member.
fn actual_lines(bundle: &Bundle, case: &CaseResult) -> Option<Vec<String>> {
    let from_detail = case.detail.as_ref().map(|d| d.actual.clone()).filter(|l| !l.is_empty());
    from_detail.or_else(|| bundle.traces.get(&case.id()).cloned()).filter(|lines| !lines.is_empty())
}

/// The golden lines, without the `#` header: the vector's file as it is now, else what the run
/// compared against.
fn golden_lines(file: Option<&str>, case: &CaseResult) -> Vec<String> {
    match file {
        Some(text) => text.lines().filter(|l| !l.starts_with('#')).map(str::to_owned).collect(),
        None => case.detail.as_ref().map(|d| d.expected.clone()).unwrap_or_default(),
    }
}

/// What [`first_difference`] gives for a line past the end of a trace.
const END: &str = "<end>";

/// The start of the note of a provenance that a refuted guess gets.
const DEVICE_ANSWER: &str = "device answer";

/// The golden trace a refuted guess gets: the device's lines, then, when the device's run
/// stopped early (at the failing expectation), the golden lines of the steps it did not reach;
/// and the first of those steps, if any. A later device run checks them like any other line.
fn device_trace(golden: &[String], actual: &[String]) -> (Vec<String>, Option<usize>) {
    let last = step_statuses(actual).keys().next_back().copied().unwrap_or(0);
    let rest = golden.iter().position(|line| step_number(line).is_some_and(|n| n > last));
    match rest {
        Some(at) => {
            let mut lines = actual.to_vec();
            lines.extend_from_slice(&golden[at..]);
            (lines, step_number(&golden[at]))
        }
        None => (actual.to_vec(), None),
    }
}

/// The step number of a `== step N: call` line.
fn step_number(line: &str) -> Option<usize> {
    let rest = line.strip_prefix("== step ")?;
    rest.split(':').next()?.trim().parse().ok()
}

/// The first differing line, from 1: `(line, expected, got)`.
fn first_difference(golden: &[String], actual: &[String]) -> Option<(usize, String, String)> {
    let longest = golden.len().max(actual.len());
    let at = |lines: &[String], i: usize| lines.get(i).cloned().unwrap_or_else(|| END.into());
    (0..longest)
        .find(|&i| golden.get(i) != actual.get(i))
        .map(|i| (i + 1, at(golden, i), at(actual, i)))
}

/// Each step's status in a trace: the last `NRT_…` token of the first line of the step (after
/// its `== step N: …` line) that has one.
pub fn step_statuses(lines: &[String]) -> BTreeMap<usize, Option<String>> {
    let mut statuses = BTreeMap::new();
    let mut current = None;
    for line in lines {
        if line.starts_with("== step ") {
            current = step_number(line);
            if let Some(step) = current {
                statuses.insert(step, None);
            }
            continue;
        }
        if let Some(slot) = current.and_then(|step| statuses.get_mut(&step)) {
            if slot.is_none() {
                *slot = last_status(line);
            }
        }
    }
    statuses
}

fn last_status(line: &str) -> Option<String> {
    line.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .rfind(|token| token.starts_with("NRT_"))
        .map(str::to_owned)
}

/// The steps whose status differs between the golden and the device's trace.
fn status_changes(golden: &[String], actual: &[String]) -> Vec<StepChange> {
    let golden = step_statuses(golden);
    step_statuses(actual)
        .into_iter()
        .filter_map(|(step, now)| {
            let was = golden.get(&step).cloned().flatten();
            let now = now?;
            (was.as_ref() != Some(&now)).then_some(StepChange { step, was, now })
        })
        .collect()
}

/// The key of a `key = value` line, if it is one.
fn key_of(line: &str) -> Option<&str> {
    let (key, _) = line.split_once('=')?;
    let key = key.trim();
    (!key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')).then_some(key)
}

/// Whether a line is a table header (`[neff]`, `[[step]]`), not a line of an array.
fn is_table_header(line: &str) -> bool {
    let line = line.trim();
    line.starts_with('[')
        && line.trim_start_matches('[').starts_with(|c: char| c.is_ascii_alphabetic())
}

/// `text` with the top-level `provenance` line set to `provenance`.
fn replace_provenance(path: &Path, text: &str, provenance: &str) -> Result<String, SettleError> {
    let mut lines: Vec<String> = text.split_inclusive('\n').map(str::to_owned).collect();
    let top = lines.iter().position(|l| is_table_header(l)).unwrap_or(lines.len());
    let at =
        lines[..top].iter().position(|l| key_of(l) == Some("provenance")).ok_or_else(|| {
            SettleError::Edit {
                path: path.to_path_buf(),
                message: "expected a top-level `provenance = …` line, found none".to_owned(),
            }
        })?;
    lines[at] = replaced_line(&lines[at], "provenance", provenance);
    Ok(lines.concat())
}

/// `line` as `key = "value"`, keeping its indentation and its line ending.
fn replaced_line(line: &str, key: &str, value: &str) -> String {
    let indent: String = line.chars().take_while(|c| *c == ' ' || *c == '\t').collect();
    let ending = if line.ends_with("\r\n") {
        "\r\n"
    } else if line.ends_with('\n') {
        "\n"
    } else {
        ""
    };
    format!("{indent}{key} = {}{ending}", toml_string(value))
}

/// `text` with step `step` (from 1) expecting `status`: its `expect` line rewritten, or one
/// added after its `call` line.
fn set_step_expect(
    path: &Path,
    text: &str,
    step: usize,
    status: &str,
) -> Result<String, SettleError> {
    let mut lines: Vec<String> = text.split_inclusive('\n').map(str::to_owned).collect();
    let headers: Vec<usize> =
        lines.iter().enumerate().filter(|(_, l)| l.trim() == "[[step]]").map(|(i, _)| i).collect();
    let Some(&start) = headers.get(step.wrapping_sub(1)) else {
        return Err(SettleError::Edit {
            path: path.to_path_buf(),
            message: format!(
                "the device's trace has a step {step}, expected one of the {} [[step]] tables",
                headers.len()
            ),
        });
    };
    let end = lines[start + 1..]
        .iter()
        .position(|l| is_table_header(l))
        .map_or(lines.len(), |i| start + 1 + i);
    if let Some(at) = (start + 1..end).find(|&i| key_of(&lines[i]) == Some("expect")) {
        lines[at] = replaced_line(&lines[at], "expect", status);
    } else {
        let after = (start + 1..end).find(|&i| key_of(&lines[i]) == Some("call")).unwrap_or(start);
        if !lines[after].ends_with('\n') {
            lines[after].push('\n');
        }
        lines.insert(after + 1, format!("expect = {}\n", toml_string(status)));
    }
    Ok(lines.concat())
}

/// Drops the vector's row from `GUESSES.md`, when the page has one.
fn remove_guess_row(
    options: &SettleOptions,
    vector: &str,
    pending: &mut Pending,
) -> Result<(), SettleError> {
    let path = options.vectors_dir.join(GUESSES_FILE);
    let Some(text) = pending.read(&path)? else { return Ok(()) };
    let row = format!("| `{vector}` |");
    let kept: String = text.split_inclusive('\n').filter(|l| !l.starts_with(&row)).collect();
    pending.write(&path, kept);
    Ok(())
}

/// A TOML basic string.
fn toml_string(text: &str) -> String {
    let mut quoted = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            '\n' => quoted.push_str("\\n"),
            '\t' => quoted.push_str("\\t"),
            c if c.is_control() => quoted.push_str(&format!("\\u{:04X}", c as u32)),
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_owned).collect()
    }

    #[test]
    fn a_steps_status_is_the_last_status_of_its_first_call_line() {
        let trace = lines(
            "init(NO_FW, \"\", \"\") -> NRT_SUCCESS\n== step 1: tensor_allocate\n\
             tensor_allocate(DEVICE, 0, 8, \"a\") -> t1 NRT_SUCCESS\n== step 2: init\n\
             init(NO_FW, \"\", \"\") -> NRT_INVALID\n== step 3: get_version\n",
        );
        let statuses = step_statuses(&trace);
        assert_eq!(statuses[&1].as_deref(), Some("NRT_SUCCESS"));
        assert_eq!(statuses[&2].as_deref(), Some("NRT_INVALID"));
        assert_eq!(statuses[&3], None);
    }

    #[test]
    fn the_expect_line_of_a_step_is_rewritten_or_added_and_nothing_else_moves() {
        let path = Path::new("case.toml");
        let text = "description = \"d\"\n# why\nprovenance = \"guess: g\"\n[sim]\ncores = 1\n\
                    [[step]]\ncall = \"init\"\nexpect = \"NRT_INVALID\" # the guess\n\
                    [[step]]\ncall = \"get_version\"\n";
        let edited = set_step_expect(path, text, 1, "NRT_SUCCESS").unwrap();
        assert_eq!(
            edited,
            "description = \"d\"\n# why\nprovenance = \"guess: g\"\n[sim]\ncores = 1\n\
             [[step]]\ncall = \"init\"\nexpect = \"NRT_SUCCESS\"\n\
             [[step]]\ncall = \"get_version\"\n"
        );
        let edited = set_step_expect(path, text, 2, "NRT_FAILURE").unwrap();
        assert!(edited.ends_with("call = \"get_version\"\nexpect = \"NRT_FAILURE\"\n"), "{edited}");
        let error = set_step_expect(path, text, 3, "NRT_FAILURE").unwrap_err().to_string();
        assert_eq!(
            error,
            "case.toml: the device's trace has a step 3, expected one of the 2 [[step]] tables"
        );
        let edited = replace_provenance(path, text, "fact: \"x\"").unwrap();
        assert!(edited.contains("# why\nprovenance = \"fact: \\\"x\\\"\"\n[sim]"), "{edited}");
    }

    #[test]
    fn runs_that_disagree_on_a_guess_leave_it_to_a_person_and_write_nothing() {
        use std::time::Duration;

        use crate::bundle::BundleMeta;
        use crate::report::{CaseDetail, Report, RunInfo};

        let root =
            std::env::temp_dir().join(format!("nrtsim-settle-disagree-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let dir = root.join("lifecycle/init_twice_is_invalid");
        std::fs::create_dir_all(&dir).unwrap();
        let case_text =
            "description = \"d\"\nprovenance = \"guess: g\"\n[[step]]\ncall = \"init\"\n";
        std::fs::write(dir.join("case.toml"), case_text).unwrap();
        let run = |instance: &str| RunInfo {
            instance_type: Some(instance.to_owned()),
            runtime_versions: BTreeMap::from([("nrt".to_owned(), "2.23.1.0".to_owned())]),
            ..RunInfo::default()
        };
        let passed = CaseResult {
            vector: "lifecycle/init_twice_is_invalid".to_owned(),
            backend: "nrt".to_owned(),
            outcome: Outcome::Passed,
            duration: Duration::ZERO,
            message: None,
            first_diff: None,
            run: 0,
            detail: None,
        };
        let refuted = CaseResult {
            outcome: Outcome::GuessRefuted,
            run: 1,
            detail: Some(Box::new(CaseDetail {
                actual: lines("init(NO_FW, \"\", \"\") -> NRT_SUCCESS"),
                ..CaseDetail::default()
            })),
            ..passed.clone()
        };
        let mut report = Report::new(run("trn1.2xlarge"), vec![passed, refuted]);
        report.runs.push(run("trn2.48xlarge"));
        let bundle = Bundle { report, meta: BundleMeta::default(), traces: BTreeMap::new() };
        let options =
            SettleOptions { vectors_dir: root.clone(), backend: "nrt".to_owned(), dry_run: false };
        let outcome = settle(&bundle, &options).unwrap();
        assert_eq!(
            outcome.changes,
            [Settled::Unsettled {
                vector: "lifecycle/init_twice_is_invalid".to_owned(),
                reason: "the runs disagree: passed on 2.23.1.0 on trn1.2xlarge, guess_refuted on 2.23.1.0 on trn2.48xlarge".to_owned(),
            }]
        );
        assert!(outcome.written.is_empty());
        assert_eq!(std::fs::read_to_string(dir.join("case.toml")).unwrap(), case_text);
        assert_eq!(
            outcome.summary_line(),
            "settled 0 guesses as facts, 0 refuted, 0 proposed known differences, 1 left for a person"
        );
        assert_eq!(outcome.left_for_a_person(), 1);
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn names_that_could_leave_the_vectors_folder_are_refused() {
        for name in ["../x", "a/../../b", "/abs/x", "a/b/c", "a", ".hidden/x", "a/"] {
            assert!(check_name(name).is_err(), "{name}");
        }
        assert!(check_name("lifecycle/init_twice_is_invalid").is_ok());
    }
}
