//! Writing a file a user named, the one writer every command of `nrtsim` (and the runner's own
//! files) goes through, so that a path we write is never a way to write somewhere else.
//!
//! Design choices:
//! - **Write beside, then rename.** The bytes go to a temporary file in the output's folder,
//!   which is renamed over the output when complete, so a failed or interrupted write never
//!   leaves half a file under the output's name.
//! - **The temporary is created, never opened.** It is made with `create_new` (`O_CREAT |
//!   O_EXCL`), which fails on any existing name, a symbolic link included, without following it:
//!   POSIX specifies that `O_EXCL` with `O_CREAT` refuses a symbolic link wherever it points, so a
//!   link planted at the predictable name cannot redirect the write (`O_NOFOLLOW` would add
//!   nothing, and std has no portable spelling of it). A name that is taken is skipped for the
//!   next one, and what we did not create is never removed.
//! - **Only a regular file is replaced.** A symbolic link, FIFO, socket, device node or folder at
//!   the output's path is refused with an error naming what is there, checked before the write
//!   and again just before the rename: a rename would replace the node itself (as root,
//!   `--output /dev/null` would replace `/dev/null`). The second check narrows the window in which
//!   something can be swapped in to the rename itself; closing it entirely needs
//!   `renameat2`'s flags, which std does not offer.
//! - **Errors are `std::io::Error`**, with an [`OutputFileError`] inside for our own refusals, so
//!   every caller keeps its error type and names the path as before.

use std::ffi::{OsStr, OsString};
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Why a path cannot be written, besides what the system says.
#[derive(Debug, thiserror::Error)]
pub enum OutputFileError {
    /// Something other than a regular file is at the output path.
    #[error(
        "{path} is a {kind}, expected a regular file or no file (refusing to replace it)",
        path = .path.display()
    )]
    NotRegularFile {
        /// The output path.
        path: PathBuf,
        /// What is there: `symbolic link`, `FIFO`, `folder`, …
        kind: &'static str,
    },
    /// The path ends in no file name (`/`, `..`).
    #[error("{path} names no file, expected a path ending in a file name", path = .path.display())]
    NoFileName {
        /// The output path.
        path: PathBuf,
    },
    /// Every temporary name tried beside the output was taken.
    #[error(
        "no free temporary name beside {path} after {tries} tries, expected one (.NAME.PID.N.partial files are in the way)",
        path = .path.display()
    )]
    NoTemporaryName {
        /// The output path.
        path: PathBuf,
        /// How many names were tried.
        tries: usize,
    },
}

impl From<OutputFileError> for io::Error {
    fn from(error: OutputFileError) -> io::Error {
        let kind = match error {
            OutputFileError::NotRegularFile { .. } | OutputFileError::NoTemporaryName { .. } => {
                io::ErrorKind::AlreadyExists
            }
            OutputFileError::NoFileName { .. } => io::ErrorKind::InvalidInput,
        };
        io::Error::new(kind, error)
    }
}

/// How many temporary names are tried before giving up.
const TEMPORARY_TRIES: usize = 64;

/// Writes `bytes` to `path`, as described in the module docs.
///
/// # Errors
/// An [`OutputFileError`] (inside the `io::Error`) when the path is not a regular file or names
/// no file, or what the system said when the temporary cannot be created, written or renamed.
pub fn write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_with(path, |writer| writer.write_all(bytes))
}

/// Writes to `path` what `fill` writes to the (buffered) temporary file, for outputs streamed
/// rather than held whole; as [`write()`] otherwise.
///
/// # Errors
/// As [`write()`], and what `fill` returns.
pub fn write_with(
    path: &Path,
    fill: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>,
) -> io::Result<()> {
    check_replaceable(path)?;
    let (temporary, file) = create_temporary(path)?;
    let written = finish(path, &temporary, file, fill);
    if written.is_err() {
        // The temporary was created by us (create_new), so removing it removes nothing else.
        let _ = std::fs::remove_file(&temporary);
    }
    written
}

fn finish(
    path: &Path,
    temporary: &Path,
    file: File,
    fill: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>,
) -> io::Result<()> {
    let mut writer = BufWriter::new(file);
    fill(&mut writer)?;
    let file = writer.into_inner().map_err(io::IntoInnerError::into_error)?;
    file.sync_all()?;
    drop(file);
    check_replaceable(path)?;
    std::fs::rename(temporary, path)
}

/// Refuses a path that holds anything but a regular file (not following a symbolic link).
fn check_replaceable(path: &Path) -> io::Result<()> {
    let file_type = match std::fs::symlink_metadata(path) {
        Ok(metadata) => metadata.file_type(),
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(error) => return Err(error),
    };
    let kind = if file_type.is_file() {
        return Ok(());
    } else if file_type.is_symlink() {
        "symbolic link"
    } else if file_type.is_dir() {
        "folder"
    } else if file_type.is_fifo() {
        "FIFO"
    } else if file_type.is_socket() {
        "socket"
    } else if file_type.is_block_device() {
        "block device"
    } else if file_type.is_char_device() {
        "character device"
    } else {
        "file of unknown type"
    };
    Err(OutputFileError::NotRegularFile { path: path.to_owned(), kind }.into())
}

/// Creates a fresh temporary file beside `path`: `.NAME.PID.N.partial`, N counting the process's
/// temporaries, skipping names that are taken.
fn create_temporary(path: &Path) -> io::Result<(PathBuf, File)> {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    create_temporary_numbered(path, || COUNTER.fetch_add(1, Ordering::Relaxed))
}

/// [`create_temporary`] with the numbers N drawn from `next`.
fn create_temporary_numbered(
    path: &Path,
    mut next: impl FnMut() -> usize,
) -> io::Result<(PathBuf, File)> {
    let name =
        path.file_name().ok_or_else(|| OutputFileError::NoFileName { path: path.to_owned() })?;
    let folder = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    for _ in 0..TEMPORARY_TRIES {
        let temporary = folder.join(temporary_name(name, next()));
        match OpenOptions::new().write(true).create_new(true).open(&temporary) {
            Ok(file) => return Ok((temporary, file)),
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
            Err(error) => return Err(error),
        }
    }
    Err(OutputFileError::NoTemporaryName { path: path.to_owned(), tries: TEMPORARY_TRIES }.into())
}

/// `.NAME.PID.N.partial`.
fn temporary_name(name: &OsStr, n: usize) -> OsString {
    let mut temporary = OsString::from(".");
    temporary.push(name);
    temporary.push(format!(".{}.{n}.partial", std::process::id()));
    temporary
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    fn scratch(label: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("nrtsim-output-file-{}-{label}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn refusal_kind(error: &io::Error) -> Option<&'static str> {
        match error.get_ref()?.downcast_ref::<OutputFileError>()? {
            OutputFileError::NotRegularFile { kind, .. } => Some(kind),
            _ => None,
        }
    }

    #[test]
    fn a_link_planted_at_the_temporary_name_is_skipped_not_followed() {
        let dir = scratch("planted");
        let target = dir.join("target");
        std::fs::write(&target, b"precious").unwrap();
        let output = dir.join("out.neff");
        let name = output.file_name().unwrap();
        for n in 0..3 {
            symlink(&target, dir.join(temporary_name(name, n))).unwrap();
        }
        let mut n = 0;
        let (temporary, mut file) = create_temporary_numbered(&output, || {
            n += 1;
            n - 1
        })
        .unwrap();
        assert_eq!(temporary, dir.join(temporary_name(name, 3)));
        file.write_all(b"new").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"precious");
        for n in 0..3 {
            let link = dir.join(temporary_name(name, n));
            assert!(std::fs::symlink_metadata(link).unwrap().file_type().is_symlink());
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn only_a_regular_file_or_nothing_is_replaced() {
        let dir = scratch("kinds");
        let target = dir.join("target");
        std::fs::write(&target, b"precious").unwrap();
        let link = dir.join("link");
        symlink(&target, &link).unwrap();
        let fifo = dir.join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(made.success());
        let folder = dir.join("folder");
        std::fs::create_dir(&folder).unwrap();
        for (path, kind) in [(&link, "symbolic link"), (&fifo, "FIFO"), (&folder, "folder")] {
            let error = write(path, b"new").unwrap_err();
            assert_eq!(refusal_kind(&error), Some(kind), "{error}");
            assert!(error.to_string().contains("expected a regular file"), "{error}");
        }
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
        assert_eq!(std::fs::read(&target).unwrap(), b"precious");

        write(&target, b"replaced").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"replaced");
        let fresh = dir.join("fresh");
        write(&fresh, b"made").unwrap();
        assert_eq!(std::fs::read(&fresh).unwrap(), b"made");
        let mut names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["fifo", "folder", "fresh", "link", "target"]);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_failed_write_leaves_neither_output_nor_temporary() {
        let dir = scratch("failed");
        let output = dir.join("out");
        let error = write_with(&output, |writer| {
            writer.write_all(b"half")?;
            Err(io::Error::other("the producer failed"))
        })
        .unwrap_err();
        assert_eq!(error.to_string(), "the producer failed");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
