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
//!   sign the archive is not ours), and so is an archive whose entries together pass
//!   [`MAX_BUNDLE_BYTES`], checked on the header's size before a byte is read. Names are
//!   judged the same way: a GNU long name or a pax header claiming more than a name needs
//!   ([`MAX_MEMBER_NAME`], [`MAX_PAX_HEADER_BYTES`]) is refused unread, and an error shows only
//!   the start of a bad name.
//! - **Writing is deterministic**: members in a fixed order, mtime 0, mode 0644, so the same
//!   report gives the same bytes.
//! - The report is the source of truth; the trace members repeat what its details hold, for
//!   readers without nrtsim. [`read_bundle`] still reads them back, and checks they are named
//!   the way [`write_bundle`] names them.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::report::{Outcome, Report, ReportError};
use sim::capped::CappedReadError;

/// The report member.
pub const REPORT_MEMBER: &str = "report.json";
/// The metadata member.
pub const META_MEMBER: &str = "meta.json";
/// The folder of the trace members.
pub const TRACES_DIR: &str = "traces";
/// The most bytes the entries of a bundle may hold together, headers and names included (256 MiB).
pub const MAX_BUNDLE_BYTES: u64 = 256 << 20;
/// The default cap on a bundle's file (`nrtsim vectors settle --max-input-bytes`): what its
/// entries may hold unpacked, which a gzip of them does not pass by more than a few bytes per
/// 32 KiB.
pub const DEFAULT_MAX_BUNDLE_FILE_BYTES: u64 = MAX_BUNDLE_BYTES;
/// The longest member name read (4096 bytes, Linux's `PATH_MAX`); a GNU long-name header that
/// claims more is refused before its bytes are read.
pub const MAX_MEMBER_NAME: usize = 4096;
/// The largest pax header read: a name of [`MAX_MEMBER_NAME`] bytes with room to spare for the
/// records beside it.
pub const MAX_PAX_HEADER_BYTES: u64 = 8192;
/// A tar header block.
const TAR_BLOCK: u64 = 512;

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
    /// A member's name (or the header that carries it) longer than the bundle reader takes,
    /// judged from its header before the name is read.
    #[error(
        "{source_name}: {header} of {claimed} bytes is refused, expected at most {limit} bytes for a member's name"
    )]
    NameTooLong {
        /// The bundle.
        source_name: String,
        /// What claimed it: `a GNU long-name header`, `a pax header`, `a pax global header` or
        /// `a pax path`.
        header: &'static str,
        /// The bytes the header claims.
        claimed: u64,
        /// The most bytes taken.
        limit: u64,
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
    /// The entries hold more than [`MAX_BUNDLE_BYTES`] together (headers and names included).
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
    /// A member that is not a regular file (a link, a FIFO, a device…), which has no text to read.
    #[error("{source_name}: member {member:?} is {kind}, expected a regular file or a folder")]
    NotAFile {
        /// The bundle.
        source_name: String,
        /// The member's path (its start, when long).
        member: String,
        /// What it is: `a symbolic link`, `a FIFO`…
        kind: String,
    },
    /// Two members of one name: which one a reader takes would be a guess.
    #[error("{source_name}: member {member:?} is in the archive twice, expected each member once")]
    DuplicateMember {
        /// The bundle.
        source_name: String,
        /// The member's path (its start, when long).
        member: String,
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
    /// The bundle's file cannot be read, or is larger than its cap.
    #[error(transparent)]
    Read(#[from] CappedReadError),
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

/// Reads the bundle at `path` (`-` for standard input) through the capped reader, at most
/// `limit` bytes; `flag` is the option that sets `limit`, for the message.
///
/// # Errors
/// [`BundleError::Read`] when the file cannot be read or holds more than `limit` bytes, else
/// what [`decode`] says.
pub fn read_bundle(path: &Path, limit: u64, flag: &str) -> Result<Bundle, BundleError> {
    let bytes = sim::capped::read_capped(path, limit, flag)?;
    decode(&bytes, &path.display().to_string())
}

/// Reads a bundle from its bytes; `source_name` names it in errors.
///
/// The archive is walked header by header (the tar reader's raw mode), so that a GNU long name
/// or a pax header is judged by the size its header claims before a byte of it is read.
///
/// # Errors
/// A [`BundleError`]: not a gzip tar archive, a member path that is absolute or holds `..`, a
/// name longer than [`MAX_MEMBER_NAME`], an unexpected member, more than [`MAX_BUNDLE_BYTES`],
/// a member that is not text, a missing or bad `report.json` or `meta.json`.
pub fn decode(bytes: &[u8], source_name: &str) -> Result<Bundle, BundleError> {
    let archive_error =
        |source| BundleError::Archive { source_name: source_name.to_owned(), source };
    let malformed =
        |what: String| archive_error(std::io::Error::new(std::io::ErrorKind::InvalidData, what));
    let too_long = |header, claimed, limit| BundleError::NameTooLong {
        source_name: source_name.to_owned(),
        header,
        claimed,
        limit,
    };
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
    let mut report_text = None;
    let mut meta_text = None;
    let mut traces = BTreeMap::new();
    // Every header block, name and member counts, so that no archive costs more than the cap
    // however its bytes are split between headers, names and data.
    let mut total: u64 = 0;
    // What a GNU long-name or pax header says of the member that follows it.
    let mut pending: Option<NameHeader> = None;
    // The file members seen: a second one of a name is refused, not taken instead of the first.
    let mut members: BTreeSet<String> = BTreeSet::new();
    for entry in archive.entries().map_err(archive_error)?.raw(true) {
        let mut entry = entry.map_err(archive_error)?;
        let kind = entry.header().entry_type();
        let size = entry.size();
        total = total.saturating_add(TAR_BLOCK).saturating_add(size);
        if kind.is_gnu_longname() || kind.is_pax_local_extensions() {
            if pending.is_some() {
                return Err(malformed("two name headers describe one member".to_owned()));
            }
            let (header, limit) = if kind.is_gnu_longname() {
                // The name and its closing NUL.
                ("a GNU long-name header", MAX_MEMBER_NAME as u64 + 1)
            } else {
                ("a pax header", MAX_PAX_HEADER_BYTES)
            };
            if size > limit {
                return Err(too_long(header, size, limit));
            }
            let mut bytes = Vec::new();
            (&mut entry).take(limit).read_to_end(&mut bytes).map_err(archive_error)?;
            pending = Some(if kind.is_gnu_longname() {
                let end = bytes.iter().rposition(|&b| b != 0).map_or(0, |last| last + 1);
                bytes.truncate(end);
                NameHeader { name: Some(bytes), size: None }
            } else {
                pax_header(&bytes).map_err(malformed)?
            });
            continue;
        }
        if kind.is_pax_global_extensions() {
            // Archive-wide attributes (`git archive` writes its commit in one): nothing a bundle
            // reads, skipped unread within the bound of a pax header.
            if size > MAX_PAX_HEADER_BYTES {
                return Err(too_long("a pax global header", size, MAX_PAX_HEADER_BYTES));
            }
            continue;
        }
        let header = pending.take().unwrap_or_default();
        if let Some(pax_size) = header.size.filter(|&pax_size| pax_size != size) {
            // Readers that disagree on where a member ends see different archives.
            return Err(malformed(format!(
                "a pax size of {pax_size} bytes disagrees with its member's header, which says {size}"
            )));
        }
        let name_bytes = header.name.unwrap_or_else(|| entry.path_bytes().into_owned());
        // Only a pax path can pass the limit here: a GNU long name is checked above, and a
        // plain header holds at most 256 bytes.
        if name_bytes.len() > MAX_MEMBER_NAME {
            return Err(too_long("a pax path", name_bytes.len() as u64, MAX_MEMBER_NAME as u64));
        }
        let member = String::from_utf8_lossy(&name_bytes).into_owned();
        if !is_safe_member(&member) {
            return Err(BundleError::UnsafePath {
                source_name: source_name.to_owned(),
                member: shown_name(&member),
            });
        }
        if total > MAX_BUNDLE_BYTES {
            return Err(BundleError::TooLarge {
                source_name: source_name.to_owned(),
                member: shown_name(&member),
                total,
            });
        }
        if kind.is_dir() {
            continue;
        }
        if !kind.is_file() {
            return Err(BundleError::NotAFile {
                source_name: source_name.to_owned(),
                member: shown_name(&member),
                kind: entry_kind(kind),
            });
        }
        if !members.insert(member.clone()) {
            return Err(BundleError::DuplicateMember {
                source_name: source_name.to_owned(),
                member: shown_name(&member),
            });
        }
        let mut bytes = Vec::new();
        // The header's size is checked above; `take` keeps a lying header to it as well.
        (&mut entry).take(MAX_BUNDLE_BYTES).read_to_end(&mut bytes).map_err(archive_error)?;
        let text = String::from_utf8(bytes).map_err(|_| BundleError::NotText {
            source_name: source_name.to_owned(),
            member: shown_name(&member),
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
                member: shown_name(&member),
            });
        }
    }
    if pending.is_some() {
        return Err(malformed(
            "the archive ends after a name header, expected the member it names".to_owned(),
        ));
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

/// What a GNU long-name or pax header says of the member after it.
#[derive(Default)]
struct NameHeader {
    /// The member's name, when the header gives one.
    name: Option<Vec<u8>>,
    /// The member's size, when a pax header gives one.
    size: Option<u64>,
}

/// The `path` and `size` records of a pax header; the other records say nothing a bundle reads.
fn pax_header(bytes: &[u8]) -> Result<NameHeader, String> {
    let mut header = NameHeader::default();
    for record in tar::PaxExtensions::new(bytes) {
        let record = record.map_err(|e| format!("a pax header that does not parse: {e}"))?;
        match record.key_bytes() {
            b"path" => header.name = Some(record.value_bytes().to_vec()),
            b"size" => {
                let size = record.value().ok().and_then(|value| value.parse().ok());
                header.size = Some(size.ok_or("a pax size that is not a number of bytes")?);
            }
            _ => {}
        }
    }
    Ok(header)
}

/// What a tar entry that is not a file or a folder is, for errors.
fn entry_kind(kind: tar::EntryType) -> String {
    let name = match kind {
        tar::EntryType::Symlink => "a symbolic link",
        tar::EntryType::Link => "a hard link",
        tar::EntryType::Char => "a character device",
        tar::EntryType::Block => "a block device",
        tar::EntryType::Fifo => "a FIFO",
        tar::EntryType::Continuous => "a contiguous file",
        tar::EntryType::GNUSparse => "a GNU sparse file",
        tar::EntryType::GNULongLink => "a GNU long link name",
        other => return format!("an entry of type {:?}", char::from(other.as_byte())),
    };
    name.to_owned()
}

/// A member's name as errors show it: whole when short, else its start and its length, so a
/// hostile name never floods the terminal.
fn shown_name(member: &str) -> String {
    const SHOWN_CHARS: usize = 80;
    match member.char_indices().nth(SHOWN_CHARS) {
        None => member.to_owned(),
        Some((end, _)) => format!("{}… ({} bytes)", &member[..end], member.len()),
    }
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

    /// A gzip tar archive of raw headers: `(entry type, name in the header, claimed size,
    /// data)`. The data need not be as long as the header claims.
    fn headers_archive(entries: &[(tar::EntryType, &str, u64, &[u8])]) -> Vec<u8> {
        let mut raw = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        for (kind, name, size, data) in entries {
            let mut header = tar::Header::new_gnu();
            header.as_gnu_mut().unwrap().name[..name.len()].copy_from_slice(name.as_bytes());
            header.set_size(*size);
            header.set_mode(0o644);
            header.set_entry_type(*kind);
            header.set_cksum();
            raw.write_all(header.as_bytes()).unwrap();
            raw.write_all(data).unwrap();
            let padding = (512 - data.len() % 512) % 512;
            raw.write_all(&vec![0; padding]).unwrap();
        }
        raw.finish().unwrap()
    }

    /// One pax record, `LEN key=value\n`, its length counting itself.
    fn pax_record(key: &str, value: &str) -> Vec<u8> {
        let body = format!(" {key}={value}\n");
        let mut len = body.len() + 1;
        while format!("{len}{body}").len() != len {
            len += 1;
        }
        format!("{len}{body}").into_bytes()
    }

    #[test]
    fn a_long_name_header_claiming_gigabytes_is_refused_before_it_is_read() {
        // 4 GiB claimed, none of it there: the reader must judge the header, not read the name.
        for (kind, what, limit) in [
            (tar::EntryType::GNULongName, "a GNU long-name header", MAX_MEMBER_NAME as u64 + 1),
            (tar::EntryType::XHeader, "a pax header", MAX_PAX_HEADER_BYTES),
            (tar::EntryType::XGlobalHeader, "a pax global header", MAX_PAX_HEADER_BYTES),
        ] {
            let bytes = headers_archive(&[(kind, "././@LongLink", 4 << 30, b"")]);
            let error = decode(&bytes, "long.tar.gz").unwrap_err();
            assert!(
                matches!(error, BundleError::NameTooLong { claimed, .. } if claimed == 4 << 30),
                "{what}: {error:?}"
            );
            assert_eq!(
                error.to_string(),
                format!(
                    "long.tar.gz: {what} of 4294967296 bytes is refused, expected at most \
                     {limit} bytes for a member's name"
                )
            );
        }
        // A name one byte past the limit, really there, is refused too; one at it is read.
        let name = "a".repeat(MAX_MEMBER_NAME + 1);
        let bytes = headers_archive(&[(
            tar::EntryType::GNULongName,
            "././@LongLink",
            name.len() as u64 + 1,
            format!("{name}\0").as_bytes(),
        )]);
        let error = decode(&bytes, "b").unwrap_err();
        assert!(matches!(error, BundleError::NameTooLong { claimed: 4098, .. }), "{error:?}");
        let path = pax_record("path", &"p".repeat(MAX_MEMBER_NAME + 1));
        let bytes = headers_archive(&[
            (tar::EntryType::XHeader, "pax", path.len() as u64, &path),
            (tar::EntryType::Regular, "x", 0, b""),
        ]);
        let error = decode(&bytes, "b").unwrap_err();
        assert!(matches!(error, BundleError::NameTooLong { claimed: 4097, .. }), "{error:?}");
    }

    #[test]
    fn a_bad_name_is_shown_as_a_short_prefix_and_its_length() {
        let name = format!("notes/{}", "n".repeat(4000));
        let bytes = raw_archive_long(&name);
        let error = decode(&bytes, "b").unwrap_err();
        assert!(matches!(error, BundleError::UnexpectedMember { .. }), "{error:?}");
        let message = error.to_string();
        assert!(message.len() < 300, "{} bytes: {message}", message.len());
        assert!(message.contains(&format!("{}… (4006 bytes)", &name[..80])), "{message}");
        let name = format!("../{}", "u".repeat(4000));
        let message = decode(&raw_archive_long(&name), "b").unwrap_err().to_string();
        assert!(message.len() < 300, "{} bytes: {message}", message.len());
    }

    #[test]
    fn a_pax_path_names_its_member() {
        let report = report().to_json();
        let meta = serde_json::to_string(&BundleMeta::default()).unwrap();
        let path = pax_record("path", REPORT_MEMBER);
        let bytes = headers_archive(&[
            (tar::EntryType::XHeader, "pax", path.len() as u64, &path),
            (tar::EntryType::Regular, "ignored", report.len() as u64, report.as_bytes()),
            (tar::EntryType::Regular, META_MEMBER, meta.len() as u64, meta.as_bytes()),
        ]);
        let bundle = decode(&bytes, "pax.tar.gz").unwrap();
        assert_eq!(bundle.report.cases, self::report().cases);
        // A pax size that disagrees with the header's would make readers see different members.
        let size = pax_record("size", "1");
        let bytes = headers_archive(&[
            (tar::EntryType::XHeader, "pax", size.len() as u64, &size),
            (tar::EntryType::Regular, META_MEMBER, meta.len() as u64, meta.as_bytes()),
        ]);
        let error = decode(&bytes, "b").unwrap_err();
        assert!(error.to_string().contains("a pax size of 1 bytes disagrees"), "{error}");
    }

    /// A gzip tar archive of one empty member named `name` through a GNU long name.
    fn raw_archive_long(name: &str) -> Vec<u8> {
        let gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        let mut archive = tar::Builder::new(gzip);
        let mut header = tar::Header::new_gnu();
        header.set_size(0);
        header.set_mode(0o644);
        header.set_entry_type(tar::EntryType::Regular);
        // `append_data` refuses `..`; the long name is written as a GNU long-name entry by hand.
        let long = format!("{name}\0");
        let mut link = tar::Header::new_gnu();
        link.as_gnu_mut().unwrap().name[..13].copy_from_slice(b"././@LongLink");
        link.set_size(long.len() as u64);
        link.set_mode(0o644);
        link.set_entry_type(tar::EntryType::GNULongName);
        link.set_cksum();
        archive.append(&link, long.as_bytes()).unwrap();
        header.as_gnu_mut().unwrap().name[..5].copy_from_slice(b"short");
        header.set_cksum();
        archive.append(&header, &b""[..]).unwrap();
        archive.into_inner().unwrap().finish().unwrap()
    }

    #[test]
    fn a_member_twice_is_refused_not_taken_twice() {
        let report = report().to_json();
        let meta = serde_json::to_string(&BundleMeta::default()).unwrap();
        let bytes = raw_archive(&[
            (REPORT_MEMBER, report.as_bytes()),
            (META_MEMBER, meta.as_bytes()),
            (REPORT_MEMBER, b"{\"cases\": []}"),
        ]);
        let error = decode(&bytes, "twice.tar.gz").unwrap_err();
        assert!(
            matches!(error, BundleError::DuplicateMember { ref member, .. } if member == REPORT_MEMBER),
            "{error:?}"
        );
        assert_eq!(
            error.to_string(),
            "twice.tar.gz: member \"report.json\" is in the archive twice, expected each member once"
        );
        let trace = "traces/nrt/a/b.trace";
        let bytes = raw_archive(&[
            (REPORT_MEMBER, report.as_bytes()),
            (META_MEMBER, meta.as_bytes()),
            (trace, b"x"),
            (trace, b"y"),
        ]);
        let error = decode(&bytes, "b").unwrap_err();
        assert!(matches!(error, BundleError::DuplicateMember { .. }), "{error:?}");
    }

    #[test]
    fn links_fifos_and_devices_are_refused_by_name_not_read_as_empty_text() {
        let report = report().to_json();
        let meta = serde_json::to_string(&BundleMeta::default()).unwrap();
        for (kind, what) in [
            (tar::EntryType::Symlink, "a symbolic link"),
            (tar::EntryType::Link, "a hard link"),
            (tar::EntryType::Fifo, "a FIFO"),
            (tar::EntryType::Char, "a character device"),
            (tar::EntryType::Block, "a block device"),
        ] {
            let trace = "traces/nrt/area/name.trace";
            let bytes = headers_archive(&[
                (tar::EntryType::Regular, REPORT_MEMBER, report.len() as u64, report.as_bytes()),
                (tar::EntryType::Regular, META_MEMBER, meta.len() as u64, meta.as_bytes()),
                (kind, trace, 0, b""),
            ]);
            let error = decode(&bytes, "odd.tar.gz").unwrap_err();
            assert!(
                matches!(error, BundleError::NotAFile { ref member, .. } if member == trace),
                "{what}: {error:?}"
            );
            assert_eq!(
                error.to_string(),
                format!(
                    "odd.tar.gz: member \"{trace}\" is {what}, expected a regular file or a folder"
                )
            );
        }
        // A folder member is fine, and so is the same folder twice.
        let bytes = headers_archive(&[
            (tar::EntryType::Directory, "traces/", 0, b""),
            (tar::EntryType::Directory, "traces/", 0, b""),
            (tar::EntryType::Regular, REPORT_MEMBER, report.len() as u64, report.as_bytes()),
            (tar::EntryType::Regular, META_MEMBER, meta.len() as u64, meta.as_bytes()),
        ]);
        assert!(decode(&bytes, "b").is_ok());
    }

    #[test]
    fn the_meta_runtime_version_is_the_devices_whatever_backend_comes_first() {
        // `capi` and `sim` sort before `nrt` and answer too; the device (`nrt`) is the one asked
        // for, in the first run or a later one.
        let mut report = report();
        report.runs[0].runtime_versions = BTreeMap::from([
            ("capi".to_owned(), "nrtsim 0.1.0".to_owned()),
            ("nrt".to_owned(), "2.23.1.0 abc".to_owned()),
            ("sim".to_owned(), "nrtsim 0.1.0".to_owned()),
        ]);
        let bundle = decode(&encode(&report).unwrap(), "b").unwrap();
        assert_eq!(bundle.meta.runtime_version.as_deref(), Some("2.23.1.0 abc"));
        let device = report.runs[0].clone();
        report.runs[0].runtime_versions.remove("nrt");
        report.runs.push(device);
        assert_eq!(BundleMeta::of(&report).runtime_version.as_deref(), Some("2.23.1.0 abc"));
        // Without a device, the first backend that answered.
        report.runs.truncate(1);
        assert_eq!(BundleMeta::of(&report).runtime_version.as_deref(), Some("nrtsim 0.1.0"));
    }
}
