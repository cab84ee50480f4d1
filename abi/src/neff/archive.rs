//! The NEFF payload: a gzip stream over a tar (package 2) or a plain tar (package 1).
//!
//! Design choices:
//! - **One byte budget for everything.** The decompressed stream is read through
//!   `Read::take(limit + 1)`; when the reader asks for byte `limit + 1`, the read stops and the
//!   error says the limit was hit. Each entry's declared size is checked against what is left of
//!   the budget before its buffer is allocated, so the sum of all allocations never exceeds the
//!   budget, whatever the tar headers claim.
//! - **Each member is copied exactly once**, from the decoder into its own buffer, which an
//!   [`Arc`] then shares with whoever needs it.
//! - **The whole stream is consumed**, after the tar's end marker too, so a damaged gzip trailer
//!   (CRC or length) is detected rather than ignored.
//! - **Names are checked before types**: an absolute or `..` name is refused even on a symlink
//!   or directory entry, since nothing good can come of such an archive. Directory entries and
//!   other non-regular entries (links, PAX global headers) are skipped; a leading `./` is
//!   stripped. PAX and GNU long names are resolved by the `tar` crate.
//! - **Writing is deterministic.** Members are sorted; every member gets a PAX header with its
//!   `path` (as Python's PAX writer would for long names, and so the PAX reading path is always
//!   exercised), mode 0644, owner and group `nobody` (65534), mtime 0; gzip has mtime 0, OS
//!   byte 255 and level 6 in the pure-Rust deflate backend, so bytes do not depend on the machine.

use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::sync::Arc;

use flate2::{Compression, GzBuilder, read::GzDecoder};

use super::NeffError;

/// One regular file of the NEFF's tar.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    data: Arc<Vec<u8>>,
}

impl Member {
    /// A member holding `data`.
    pub fn new(data: Vec<u8>) -> Member {
        Member { data: Arc::new(data) }
    }

    /// The member's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.data
    }

    /// The member's size in bytes.
    pub fn size(&self) -> u64 {
        self.data.len() as u64
    }

    /// A shared handle on the bytes, without copying them.
    pub fn shared(&self) -> Arc<Vec<u8>> {
        Arc::clone(&self.data)
    }
}

/// Reads the members of a payload.
pub(crate) fn read_payload(
    pkg_version: u64,
    payload: &[u8],
    max_payload_bytes: u64,
    max_members: usize,
) -> Result<BTreeMap<String, Member>, NeffError> {
    if pkg_version == 2 {
        read_tar(GzDecoder::new(payload), "gzip tar", max_payload_bytes, max_members)
    } else {
        read_tar(payload, "tar", max_payload_bytes, max_members)
    }
}

fn read_tar<R: Read>(
    stream: R,
    format: &'static str,
    max_payload_bytes: u64,
    max_members: usize,
) -> Result<BTreeMap<String, Member>, NeffError> {
    let bounded = stream.take(max_payload_bytes.saturating_add(1));
    let mut archive = tar::Archive::new(bounded);
    let result = read_entries(&mut archive, max_payload_bytes, max_members);
    let mut bounded = archive.into_inner();
    let corrupt_or_too_large = |error: io::Error, bounded: &io::Take<R>| {
        if bounded.limit() == 0 {
            NeffError::PayloadTooLarge { limit: max_payload_bytes }
        } else {
            NeffError::CorruptPayload { format, detail: error.to_string() }
        }
    };
    let members = match result {
        Ok(members) => members,
        Err(EntryError::Neff(error)) => return Err(error),
        Err(EntryError::Io(error)) => return Err(corrupt_or_too_large(error, &bounded)),
    };
    // Drain what follows the tar's end marker so the gzip trailer is verified.
    if let Err(error) = io::copy(&mut bounded, &mut io::sink()) {
        return Err(corrupt_or_too_large(error, &bounded));
    }
    if bounded.limit() == 0 {
        return Err(NeffError::PayloadTooLarge { limit: max_payload_bytes });
    }
    Ok(members)
}

enum EntryError {
    Neff(NeffError),
    Io(io::Error),
}

impl From<io::Error> for EntryError {
    fn from(error: io::Error) -> EntryError {
        EntryError::Io(error)
    }
}

fn read_entries<R: Read>(
    archive: &mut tar::Archive<R>,
    max_payload_bytes: u64,
    max_members: usize,
) -> Result<BTreeMap<String, Member>, EntryError> {
    let mut members = BTreeMap::new();
    for entry in archive.entries()? {
        let mut entry = entry?;
        let raw_name = entry.path_bytes().into_owned();
        let Some(name) = member_name(&raw_name).map_err(EntryError::Neff)? else {
            continue;
        };
        let entry_type = entry.header().entry_type();
        if !(entry_type.is_file() || entry_type.is_contiguous()) {
            continue;
        }
        if members.len() == max_members {
            return Err(EntryError::Neff(NeffError::TooManyMembers { limit: max_members }));
        }
        let declared = entry.size();
        let remaining = max_payload_bytes.saturating_sub(entry.raw_file_position());
        if declared > remaining {
            return Err(EntryError::Neff(NeffError::PayloadTooLarge { limit: max_payload_bytes }));
        }
        // Bounded by the budget check above, so a lying header cannot ask for more than the
        // caller agreed to decompress.
        let capacity = usize::try_from(declared).unwrap_or(usize::MAX);
        let mut data = Vec::with_capacity(capacity);
        entry.read_to_end(&mut data)?;
        if members.insert(name.clone(), Member::new(data)).is_some() {
            return Err(EntryError::Neff(NeffError::DuplicateMember { name }));
        }
    }
    Ok(members)
}

/// The member name for a raw tar path: `None` for a directory, an error for an unsafe name.
fn member_name(raw_name: &[u8]) -> Result<Option<String>, NeffError> {
    let unsafe_name =
        || NeffError::UnsafeMemberName { name: String::from_utf8_lossy(raw_name).into_owned() };
    let name = std::str::from_utf8(raw_name).map_err(|_| unsafe_name())?;
    check_member_name(name).map_err(|_| unsafe_name())?;
    let mut name = name;
    while let Some(rest) = name.strip_prefix("./") {
        name = rest;
    }
    if name.is_empty() || name == "." || name.ends_with('/') {
        return Ok(None);
    }
    Ok(Some(name.to_owned()))
}

/// Refuses absolute names, `..` components and NUL bytes.
fn check_member_name(name: &str) -> Result<(), NeffError> {
    let is_unsafe_name = name.starts_with('/')
        || name.starts_with('\\')
        || name.contains('\0')
        || name.split(['/', '\\']).any(|component| component == "..");
    if is_unsafe_name { Err(NeffError::UnsafeMemberName { name: name.to_owned() }) } else { Ok(()) }
}

/// Writes members as a NEFF payload: a gzip tar for package 2, a plain tar for package 1.
/// Members are written in name order whatever the order given.
///
/// # Errors
/// [`NeffError::UnsafeMemberName`] for an absolute, `..`, empty or directory-like name,
/// [`NeffError::DuplicateMember`] for a repeated one.
pub fn write_payload(pkg_version: u64, members: &[(&str, &[u8])]) -> Result<Vec<u8>, NeffError> {
    let mut sorted: Vec<&(&str, &[u8])> = members.iter().collect();
    sorted.sort_by(|left, right| left.0.cmp(right.0));
    for pair in sorted.windows(2) {
        if pair[0].0 == pair[1].0 {
            return Err(NeffError::DuplicateMember { name: pair[0].0.to_owned() });
        }
    }
    for (name, _) in &sorted {
        check_member_name(name)?;
        if name.is_empty() || name.starts_with("./") || name.ends_with('/') {
            return Err(NeffError::UnsafeMemberName { name: (*name).to_owned() });
        }
    }
    let write_error = |error: io::Error| NeffError::InvalidSpec {
        detail: format!("writing the tar failed: {error}"),
    };
    if pkg_version == 2 {
        let encoder =
            GzBuilder::new().mtime(0).operating_system(255).write(Vec::new(), Compression::new(6));
        let encoder = write_tar(encoder, &sorted).map_err(write_error)?;
        encoder.finish().map_err(write_error)
    } else {
        write_tar(Vec::new(), &sorted).map_err(write_error)
    }
}

fn write_tar<W: Write>(out: W, members: &[&(&str, &[u8])]) -> io::Result<W> {
    let mut builder = tar::Builder::new(out);
    for (name, data) in members {
        let record = pax_record("path", name);
        let pax_name = format!("PaxHeaders/{name}");
        let pax_header = ustar_header(&pax_name, tar::EntryType::XHeader, record.len() as u64);
        builder.append(&pax_header, record.as_bytes())?;
        let header = ustar_header(name, tar::EntryType::Regular, data.len() as u64);
        builder.append(&header, *data)?;
    }
    builder.into_inner()
}

/// A ustar header with the fixed owner, mode and time. Names longer than the 100-byte field are
/// cut (at a character boundary); the PAX `path` record before each entry carries the full name.
fn ustar_header(name: &str, entry_type: tar::EntryType, size: u64) -> tar::Header {
    let mut header = tar::Header::new_ustar();
    header.set_entry_type(entry_type);
    header.set_size(size);
    header.set_mode(0o644);
    header.set_uid(65534);
    header.set_gid(65534);
    header.set_mtime(0);
    // Both names are ASCII and 6 bytes, well inside the 32-byte fields, so these cannot fail.
    let _ = header.set_username("nobody");
    let _ = header.set_groupname("nobody");
    let mut cut = name.len().min(99);
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    let field = &mut header.as_old_mut().name;
    field.fill(0);
    field[..cut].copy_from_slice(&name.as_bytes()[..cut]);
    header.set_cksum();
    header
}

/// One PAX record, `"<len> <key>=<value>\n"`, where `<len>` counts the whole record itself.
fn pax_record(key: &str, value: &str) -> String {
    let body_len = key.len() + value.len() + 3; // space, '=', newline
    let mut total = body_len + 1;
    while total != body_len + total.to_string().len() {
        total = body_len + total.to_string().len();
    }
    format!("{total} {key}={value}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pax_record_length_counts_itself() {
        assert_eq!(pax_record("path", "a"), "9 path=a\n");
        let long = "x".repeat(95);
        let record = pax_record("path", &long);
        assert_eq!(record.len().to_string(), record.split(' ').next().unwrap_or_default());
    }

    #[test]
    fn leading_dot_slash_is_stripped_and_directories_skipped() {
        assert_eq!(
            member_name(b"./sg00/def.json").ok().flatten().as_deref(),
            Some("sg00/def.json")
        );
        assert_eq!(member_name(b"./sg00/").ok().flatten(), None);
        assert_eq!(member_name(b"./").ok().flatten(), None);
        assert!(member_name(b"a/../../etc").is_err());
        assert!(member_name(b"/etc/passwd").is_err());
    }
}
