//! Device result bundles: one `.tar.gz` that carries a conformance run back from a machine.
//!
//! A bundle holds `report.json` (the [`Report`], as `--json` writes it), `meta.json` (the
//! [`BundleMeta`]: the runtime version, the instance type, the command line) and, for every
//! result that did not pass or skip, `traces/<backend>/<area>/<name>.trace` with the run's
//! trace lines, so a reviewer can read a device's answer with `tar` alone. `nrtsim vectors
//! settle` ([`crate::settle`]) turns one into vector changes.
//!
//! Design choices:
//! - **Reading is defensive**: a bundle comes from another machine. A member path that is
//!   absolute or holds `..` is refused (nothing is unpacked to disk, but a path like that is a
//!   sign the archive is not ours), and so is an archive whose members together pass
//!   [`MAX_BUNDLE_BYTES`], checked on the header's size before a byte is read.
//! - **Writing is deterministic**: members in a fixed order, mtime 0, mode 0644, so the same
//!   report gives the same bytes.
//! - The report is the source of truth; the trace members repeat what its details hold, for
//!   readers without nrtsim. [`read_bundle`] still reads them back, and checks they are named
//!   the way [`write_bundle`] names them.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::report::{Outcome, Report, ReportError};

/// The report member.
pub const REPORT_MEMBER: &str = "report.json";
/// The metadata member.
pub const META_MEMBER: &str = "meta.json";
/// The folder of the trace members.
pub const TRACES_DIR: &str = "traces";
/// The most bytes the members of a bundle may hold together (256 MiB).
pub const MAX_BUNDLE_BYTES: u64 = 256 << 20;

/// Where and how the bundled run was made, for a reader of `meta.json`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BundleMeta {
    /// What `nrt_get_version` said: the `nrt` backend's answer, else the first backend's that
    /// gave one.
    pub runtime_version: Option<String>,
    /// The machine's instance type, when known.
    pub instance_type: Option<String>,
    /// The command line of the run.
    pub command: Vec<String>,
    /// The version of the nrtsim that ran it.
    pub nrtsim_version: String,
    /// What wrote the bundle (`nrtsim conformance --bundle`).
    pub created_by: String,
}

impl BundleMeta {
    /// The metadata of `report`, from its first run (and the `nrt` runtime version of any run).
    pub fn of(report: &Report) -> BundleMeta {
        let first = report.runs.first();
        let nrt = report.runs.iter().find_map(|run| run.runtime_versions.get("nrt"));
        let any = report.runs.iter().find_map(|run| run.runtime_versions.values().next());
        BundleMeta {
            runtime_version: nrt.or(any).cloned(),
            instance_type: first.and_then(|run| run.instance_type.clone()),
            command: first.map(|run| run.command.clone()).unwrap_or_default(),
            nrtsim_version: env!("CARGO_PKG_VERSION").to_owned(),
            created_by: "nrtsim conformance --bundle".to_owned(),
        }
    }
}

/// A bundle, read back.
#[derive(Clone, Debug, PartialEq)]
pub struct Bundle {
    /// The run's report.
    pub report: Report,
    /// The run's metadata.
    pub meta: BundleMeta,
    /// The trace members: `backend/area/name` → its lines.
    pub traces: BTreeMap<String, Vec<String>>,
}

/// A bundle that cannot be written or read.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    /// The file cannot be read or written.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The bytes are not a gzip-compressed tar archive (or end before it does).
    #[error(
        "{source_name}: expected a gzip-compressed tar archive, got one that fails to read: {source}"
    )]
    Archive {
        /// The bundle.
        source_name: String,
        /// What the decompressor or the tar reader said.
        source: std::io::Error,
    },
    /// A member the bundle must have is not in it.
    #[error("{source_name}: expected a member {member}, the archive has none")]
    MissingMember {
        /// The bundle.
        source_name: String,
        /// The member.
        member: &'static str,
    },
    /// A member path that could leave the folder it is read into.
    #[error("{source_name}: member {member:?} is refused, expected a relative path without `..`")]
    UnsafePath {
        /// The bundle.
        source_name: String,
        /// The member's path as written.
        member: String,
    },
    /// A member that is neither the report, the metadata nor a trace named as a bundle names one.
    #[error(
        "{source_name}: member {member:?} is unexpected, expected {REPORT_MEMBER}, {META_MEMBER} or {TRACES_DIR}/<backend>/<area>/<name>.trace"
    )]
    UnexpectedMember {
        /// The bundle.
        source_name: String,
        /// The member's path.
        member: String,
    },
    /// The members hold more than [`MAX_BUNDLE_BYTES`] together.
    #[error(
        "{source_name}: member {member} would bring the bundle to {total} bytes, expected at most {MAX_BUNDLE_BYTES}"
    )]
    TooLarge {
        /// The bundle.
        source_name: String,
        /// The member that passed the limit.
        member: String,
        /// The bytes the members up to it hold.
        total: u64,
    },
    /// A member that is not UTF-8 text.
    #[error("{source_name}: member {member} is not UTF-8 text")]
    NotText {
        /// The bundle.
        source_name: String,
        /// The member.
        member: String,
    },
    /// `meta.json` is not bundle metadata.
    #[error("{source_name}: {META_MEMBER} is not bundle metadata: {source}")]
    Meta {
        /// The bundle.
        source_name: String,
        /// What serde said, with the line.
        source: serde_json::Error,
    },
    /// `report.json` is not a report.
    #[error(transparent)]
    Report(#[from] ReportError),
}

/// The trace member of a case: `traces/<backend>/<area>/<name>.trace`.
pub fn trace_member(backend: &str, vector: &str) -> String {
    format!("{TRACES_DIR}/{backend}/{vector}.trace")
}

/// The bundle of `report`, as bytes.
///
/// # Errors
/// [`BundleError::Io`] (naming `<memory>`) if the archive cannot be built.
pub fn encode(report: &Report) -> Result<Vec<u8>, BundleError> {
    let io = |source| BundleError::Io { path: PathBuf::from("<memory>"), source };
    let meta = serde_json::to_string_pretty(&BundleMeta::of(report)).unwrap_or_default() + "\n";
    let mut members: Vec<(String, Vec<u8>)> = vec![
        (REPORT_MEMBER.to_owned(), report.to_json().into_bytes()),
        (META_MEMBER.to_owned(), meta.into_bytes()),
    ];
    for case in &report.cases {
        if matches!(case.outcome, Outcome::Passed | Outcome::Skipped) {
            continue;
        }
        let Some(detail) = &case.detail else { continue };
        let mut text = String::new();
        for line in &detail.actual {
            text.push_str(line);
            text.push('\n');
        }
        members.push((trace_member(&case.backend, &case.vector), text.into_bytes()));
    }
    let gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut archive = tar::Builder::new(gzip);
    for (name, bytes) in &members {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(0);
        header.set_entry_type(tar::EntryType::Regular);
        archive.append_data(&mut header, name, bytes.as_slice()).map_err(io)?;
    }
    let gzip = archive.into_inner().map_err(io)?;
    gzip.finish().map_err(io)
}

/// Writes the bundle of `report` to `path`.
///
/// # Errors
/// [`BundleError::Io`] naming the file.
pub fn write_bundle(path: &Path, report: &Report) -> Result<(), BundleError> {
    let bytes = encode(report)?;
    let io = |source| BundleError::Io { path: path.to_path_buf(), source };
    crate::output_file::write(path, &bytes).map_err(io)
}

/// Reads the bundle at `path`.
///
/// # Errors
/// [`BundleError::Io`] when the file cannot be read, else what [`decode`] says.
pub fn read_bundle(path: &Path) -> Result<Bundle, BundleError> {
    let bytes = std::fs::read(path)
        .map_err(|source| BundleError::Io { path: path.to_path_buf(), source })?;
    decode(&bytes, &path.display().to_string())
}

/// Reads a bundle from its bytes; `source_name` names it in errors.
///
/// # Errors
/// A [`BundleError`]: not a gzip tar archive, a member path that is absolute or holds `..`, an
/// unexpected member, more than [`MAX_BUNDLE_BYTES`], a member that is not text, a missing or
/// bad `report.json` or `meta.json`.
pub fn decode(bytes: &[u8], source_name: &str) -> Result<Bundle, BundleError> {
    let archive_error =
        |source| BundleError::Archive { source_name: source_name.to_owned(), source };
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
    let mut report_text = None;
    let mut meta_text = None;
    let mut traces = BTreeMap::new();
    let mut total: u64 = 0;
    for entry in archive.entries().map_err(archive_error)? {
        let mut entry = entry.map_err(archive_error)?;
        let member = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        if !is_safe_member(&member) {
            return Err(BundleError::UnsafePath { source_name: source_name.to_owned(), member });
        }
        if entry.header().entry_type().is_dir() {
            continue;
        }
        total = total.saturating_add(entry.size());
        if total > MAX_BUNDLE_BYTES {
            return Err(BundleError::TooLarge {
                source_name: source_name.to_owned(),
                member,
                total,
            });
        }
        let mut bytes = Vec::new();
        // The header's size is checked above; `take` keeps a lying header to it as well.
        (&mut entry).take(MAX_BUNDLE_BYTES).read_to_end(&mut bytes).map_err(archive_error)?;
        let text = String::from_utf8(bytes).map_err(|_| BundleError::NotText {
            source_name: source_name.to_owned(),
            member: member.clone(),
        })?;
        if member == REPORT_MEMBER {
            report_text = Some(text);
        } else if member == META_MEMBER {
            meta_text = Some(text);
        } else if let Some(id) = trace_id(&member) {
            traces.insert(id.to_owned(), text.lines().map(str::to_owned).collect());
        } else {
            return Err(BundleError::UnexpectedMember {
                source_name: source_name.to_owned(),
                member,
            });
        }
    }
    let missing =
        |member| BundleError::MissingMember { source_name: source_name.to_owned(), member };
    let report_text = report_text.ok_or_else(|| missing(REPORT_MEMBER))?;
    let report = Report::from_json(&report_text, &format!("{source_name}:{REPORT_MEMBER}"))?;
    let meta_text = meta_text.ok_or_else(|| missing(META_MEMBER))?;
    let meta = serde_json::from_str(&meta_text)
        .map_err(|source| BundleError::Meta { source_name: source_name.to_owned(), source })?;
    Ok(Bundle { report, meta, traces })
}

/// Whether a member path is relative and stays inside the folder it would be read into.
fn is_safe_member(member: &str) -> bool {
    !member.is_empty()
        && !member.starts_with('/')
        && !member.contains('\\')
        && member.split('/').all(|part| part != "..")
}

/// `backend/area/name` of a trace member `traces/<backend>/<area>/<name>.trace`.
fn trace_id(member: &str) -> Option<&str> {
    let id = member.strip_prefix(TRACES_DIR)?.strip_prefix('/')?.strip_suffix(".trace")?;
    let parts: Vec<&str> = id.split('/').collect();
    (parts.len() == 3 && parts.iter().all(|p| !p.is_empty() && *p != ".")).then_some(id)
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::time::Duration;

    use super::*;
    use crate::report::{CaseDetail, CaseResult, RunInfo};

    fn report() -> Report {
        let run = RunInfo {
            runtime_versions: BTreeMap::from([("nrt".to_owned(), "2.23.1.0 abc".to_owned())]),
            instance_type: Some("trn1.2xlarge".to_owned()),
            command: vec!["nrtsim".to_owned(), "conformance".to_owned()],
            ..RunInfo::default()
        };
        let failed = CaseResult {
            vector: "lifecycle/init_twice_is_invalid".to_owned(),
            backend: "nrt".to_owned(),
            outcome: Outcome::GuessRefuted,
            duration: Duration::from_millis(5),
            message: Some("guess refuted".to_owned()),
            first_diff: None,
            run: 0,
            detail: Some(Box::new(CaseDetail {
                actual: vec!["init(NO_FW, \"\", \"\") -> NRT_SUCCESS".to_owned()],
                ..CaseDetail::default()
            })),
        };
        let passed = CaseResult {
            vector: "execute/runs".to_owned(),
            outcome: Outcome::Passed,
            detail: None,
            ..failed.clone()
        };
        // Past the 100 bytes of a plain tar name: written and read through GNU long names.
        let long = CaseResult {
            vector: format!("area/{}", "a_long_vector_name_".repeat(6)),
            ..failed.clone()
        };
        Report::new(run, vec![failed, passed, long])
    }

    /// A gzip tar archive of `members` with their names written as given (no checks).
    fn raw_archive(members: &[(&str, &[u8])]) -> Vec<u8> {
        let gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        let mut archive = tar::Builder::new(gzip);
        for (name, bytes) in members {
            let mut header = tar::Header::new_old();
            header.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
            header.set_size(bytes.len() as u64);
            header.set_mode(0o644);
            header.set_entry_type(tar::EntryType::Regular);
            header.set_cksum();
            archive.append(&header, *bytes).unwrap();
        }
        archive.into_inner().unwrap().finish().unwrap()
    }

    #[test]
    fn a_bundle_reads_back_its_report_meta_and_the_traces_of_differing_cases() {
        let bytes = encode(&report()).unwrap();
        assert_eq!(bytes, encode(&report()).unwrap(), "the same report gives the same bytes");
        let bundle = decode(&bytes, "b.tar.gz").unwrap();
        assert_eq!(bundle.report.cases, report().cases);
        assert_eq!(bundle.meta.runtime_version.as_deref(), Some("2.23.1.0 abc"));
        assert_eq!(bundle.meta.instance_type.as_deref(), Some("trn1.2xlarge"));
        assert_eq!(bundle.meta.command, ["nrtsim", "conformance"]);
        assert_eq!(bundle.meta.created_by, "nrtsim conformance --bundle");
        let traces: Vec<&str> = bundle.traces.keys().map(String::as_str).collect();
        let long = format!("nrt/area/{}", "a_long_vector_name_".repeat(6));
        assert_eq!(
            traces,
            [long.as_str(), "nrt/lifecycle/init_twice_is_invalid"],
            "no trace for a pass"
        );
        assert_eq!(
            bundle.traces["nrt/lifecycle/init_twice_is_invalid"],
            ["init(NO_FW, \"\", \"\") -> NRT_SUCCESS"]
        );
    }

    #[test]
    fn a_truncated_gzip_is_an_archive_error() {
        let bytes = encode(&report()).unwrap();
        let error = decode(&bytes[..bytes.len() / 2], "cut.tar.gz").unwrap_err();
        assert!(matches!(error, BundleError::Archive { .. }), "{error:?}");
        let message = error.to_string();
        assert!(
            message.starts_with("cut.tar.gz: expected a gzip-compressed tar archive"),
            "{message}"
        );
        let error = decode(b"not gzip at all", "text.tar.gz").unwrap_err();
        assert!(matches!(error, BundleError::Archive { .. }), "{error:?}");
    }

    #[test]
    fn a_member_that_climbs_out_or_is_absolute_is_refused() {
        for name in ["../x", "traces/../../x", "/etc/passwd"] {
            let bytes = raw_archive(&[(name, b"x")]);
            let error = decode(&bytes, "evil.tar.gz").unwrap_err();
            match &error {
                BundleError::UnsafePath { member, .. } => assert_eq!(member, name),
                other => panic!("{name}: expected UnsafePath, got {other:?}"),
            }
            assert!(error.to_string().contains("expected a relative path without `..`"), "{error}");
        }
    }

    #[test]
    fn missing_members_and_strangers_are_named() {
        let bytes = raw_archive(&[(META_MEMBER, b"{}")]);
        let error = decode(&bytes, "b").unwrap_err().to_string();
        assert_eq!(error, "b: expected a member report.json, the archive has none");
        let bytes = raw_archive(&[("notes.txt", b"hello")]);
        let error = decode(&bytes, "b").unwrap_err();
        assert!(
            matches!(error, BundleError::UnexpectedMember { ref member, .. } if member == "notes.txt")
        );
        let bytes = raw_archive(&[(REPORT_MEMBER, b"{ not json")]);
        let error = decode(&bytes, "b").unwrap_err();
        assert!(matches!(error, BundleError::Report(_)), "{error:?}");
    }

    #[test]
    fn members_past_the_size_cap_are_refused_before_they_are_read() {
        // A header that claims more than the cap; its bytes are never there, and need not be.
        let mut raw = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let mut header = tar::Header::new_gnu();
        header.set_path(REPORT_MEMBER).unwrap();
        header.set_size(MAX_BUNDLE_BYTES + 1);
        header.set_mode(0o644);
        header.set_cksum();
        raw.write_all(header.as_bytes()).unwrap();
        let bytes = raw.finish().unwrap();
        let error = decode(&bytes, "big").unwrap_err();
        assert!(matches!(error, BundleError::TooLarge { .. }), "{error:?}");
        assert!(error.to_string().contains("expected at most 268435456"), "{error}");
    }
}
