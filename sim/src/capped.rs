//! Reading an input file with a size cap, the one reader every command of `nrtsim`, the replay
//! of a recording and the simulator's own `NRTSIM_HLO` go through, so an endless or huge input
//! (`/dev/zero`, a FIFO that never closes, a sparse file of terabytes) is an error naming the
//! limit instead of reading until memory runs out.
//!
//! Design choices:
//! - **A regular file is judged by its metadata**: one larger than the limit is refused before
//!   any byte is read, and the buffer for one within it is reserved once, fallibly.
//! - **A stream** (standard input, a device, a pipe) has no length: it is read in chunks into a
//!   buffer that grows with what arrived, never past `limit + 1` bytes, and refused as soon as
//!   byte `limit + 1` comes. So no input ever costs more than its cap.
//! - **The error names the flag** that raises the limit and its value, because the one who reads
//!   it has to pass that flag (`--max-input-bytes`, or a command's own for each of its inputs).

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

/// Why a capped read failed.
#[derive(Debug, thiserror::Error)]
pub enum CappedReadError {
    /// The input holds more bytes than the limit.
    #[error("{path} is larger than {flag} ({limit} bytes); pass a larger {flag} to read it")]
    TooLarge {
        /// The input, as shown to the user.
        path: String,
        /// The flag that sets the limit.
        flag: String,
        /// The limit in bytes.
        limit: u64,
    },
    /// The input could not be opened or read.
    #[error("reading {path}: {source}")]
    Io {
        /// The input.
        path: String,
        /// What the system said.
        source: io::Error,
    },
    /// The buffer for an input within the limit could not be allocated.
    #[error("reading {path}: {n_bytes} bytes do not fit in memory, expected room for them")]
    OutOfMemory {
        /// The input.
        path: String,
        /// The size asked for.
        n_bytes: u64,
    },
}

/// The size of one read from a stream, and the first size of its buffer.
const CHUNK: usize = 64 << 10;

/// Reads `path` (`-` for standard input), at most `limit` bytes; `flag` is the option that sets
/// `limit`, for the message.
///
/// # Errors
/// [`CappedReadError::TooLarge`] when the input holds more than `limit` bytes, `Io` when it
/// cannot be read, `OutOfMemory` when its buffer cannot be allocated.
pub fn read_capped(path: &Path, limit: u64, flag: &str) -> Result<Vec<u8>, CappedReadError> {
    let shown = || path.display().to_string();
    let too_large = || CappedReadError::TooLarge { path: shown(), flag: flag.to_owned(), limit };
    let io_error = |source| CappedReadError::Io { path: shown(), source };
    if path == Path::new("-") {
        return read_stream(&mut io::stdin().lock(), limit, Vec::new()).map_err(
            |stop| match stop {
                Stop::TooLarge => too_large(),
                Stop::OutOfMemory(n_bytes) => {
                    CappedReadError::OutOfMemory { path: shown(), n_bytes }
                }
                Stop::Io(source) => io_error(source),
            },
        );
    }
    let mut file = File::open(path).map_err(io_error)?;
    let metadata = file.metadata().map_err(io_error)?;
    let mut bytes = Vec::new();
    if metadata.is_file() {
        if metadata.len() > limit {
            return Err(too_large());
        }
        // The file may still grow while it is read; the stream reader below keeps the cap.
        let n_bytes = metadata.len();
        let reserve = usize::try_from(n_bytes).ok().and_then(|n| bytes.try_reserve_exact(n).ok());
        if reserve.is_none() {
            return Err(CappedReadError::OutOfMemory { path: shown(), n_bytes });
        }
    }
    read_stream(&mut file, limit, bytes).map_err(|stop| match stop {
        Stop::TooLarge => too_large(),
        Stop::OutOfMemory(n_bytes) => CappedReadError::OutOfMemory { path: shown(), n_bytes },
        Stop::Io(source) => io_error(source),
    })
}

enum Stop {
    TooLarge,
    OutOfMemory(u64),
    Io(io::Error),
}

/// Reads `reader` to its end into `bytes`, refusing byte `limit + 1`. The buffer doubles as data
/// arrives (as `read_to_end` grows it) but never beyond `limit + 1` bytes.
fn read_stream(reader: &mut dyn Read, limit: u64, mut bytes: Vec<u8>) -> Result<Vec<u8>, Stop> {
    // One byte more than the limit is the most ever held: seeing it is what proves the input
    // too large.
    let most = usize::try_from(limit).unwrap_or(usize::MAX).saturating_add(1);
    let mut chunk = vec![0; CHUNK];
    loop {
        let room = most - bytes.len();
        let want = room.min(CHUNK);
        let n = match reader.read(&mut chunk[..want]) {
            Ok(0) => return Ok(bytes),
            Ok(n) => n,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(Stop::Io(error)),
        };
        if bytes.len() + n > bytes.capacity() {
            let grown = bytes.capacity().saturating_mul(2).max(CHUNK).min(most);
            let extra = grown.max(bytes.len() + n) - bytes.len();
            bytes
                .try_reserve_exact(extra)
                .map_err(|_| Stop::OutOfMemory((bytes.len() + extra) as u64))?;
        }
        bytes.extend_from_slice(&chunk[..n]);
        if bytes.len() as u64 > limit {
            return Err(Stop::TooLarge);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader of endless zeros that counts what it handed out.
    struct Zeros(u64);

    impl Read for Zeros {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            buf.fill(0);
            self.0 += buf.len() as u64;
            Ok(buf.len())
        }
    }

    #[test]
    fn an_endless_stream_is_refused_after_one_byte_past_the_limit() {
        let mut zeros = Zeros(0);
        let result = read_stream(&mut zeros, 100_000, Vec::new());
        assert!(matches!(result, Err(Stop::TooLarge)));
        assert_eq!(zeros.0, 100_001, "read exactly one byte past the limit");
    }

    #[test]
    fn a_stream_at_the_limit_is_read_whole() {
        let data = vec![7u8; 200_000];
        let bytes = read_stream(&mut &data[..], 200_000, Vec::new()).ok();
        assert_eq!(bytes.as_deref(), Some(&data[..]));
        let short = read_stream(&mut &data[..], 199_999, Vec::new());
        assert!(matches!(short, Err(Stop::TooLarge)));
    }

    #[test]
    fn a_stream_buffer_never_outgrows_the_limit() {
        let data = vec![1u8; 150_000];
        let bytes = read_stream(&mut &data[..], 150_000, Vec::new()).unwrap_or_default();
        assert_eq!(bytes.len(), 150_000);
        assert!(bytes.capacity() <= 150_001, "capacity {}", bytes.capacity());
    }

    #[test]
    fn an_over_cap_regular_file_is_refused_from_its_length_with_the_flag() {
        let dir = std::env::temp_dir().join(format!("nrtsim-capped-{}", std::process::id()));
        std::fs::create_dir_all(&dir).ok();
        let path = dir.join("sparse.bin");
        let file = File::create(&path).map(|file| file.set_len(1 << 40));
        assert!(file.is_ok(), "{file:?}");
        let error = read_capped(&path, 1 << 20, "--max-input-bytes").err().map(|e| e.to_string());
        std::fs::remove_dir_all(&dir).ok();
        let expected = format!(
            "{} is larger than --max-input-bytes (1048576 bytes); pass a larger \
             --max-input-bytes to read it",
            path.display()
        );
        assert_eq!(error.as_deref(), Some(expected.as_str()));
    }
}
