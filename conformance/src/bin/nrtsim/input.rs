//! Reading a command's input file with a size cap, so an endless or huge input (`/dev/zero`, a
//! pipe that never closes) is an error naming the limit instead of reading until memory runs out.
//!
//! A regular file larger than the limit is refused from its metadata, before any byte is read; a
//! stream (standard input, a device, a pipe) is read up to one byte past the limit.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use anyhow::{Context, Result};

/// The default cap on a metaneff (`--max-input-bytes`): far above real metaneffs, whose largest
/// part is the serialized HLO module.
pub(crate) const DEFAULT_MAX_METANEFF_BYTES: u64 = 256 << 20;

/// The default cap on a NEFF for `inspect` (`--max-input-bytes`).
pub(crate) const DEFAULT_MAX_NEFF_BYTES: u64 = 4 << 30;

/// The default cap on an HLO module or `.npy` input of `nrtsim hlo` (4 GiB, as for a NEFF: a
/// module carries its constants).
pub(crate) const DEFAULT_MAX_HLO_BYTES: u64 = 4 << 30;

/// The name of the flag that raises the cap, for messages.
pub(crate) const FLAG: &str = "--max-input-bytes";

/// Reads `path` (`-` for standard input), at most `limit` bytes.
///
/// # Errors
/// When the input cannot be read, or holds more than `limit` bytes (the message names the limit
/// and the flag that raises it).
pub(crate) fn read_capped(path: &Path, limit: u64) -> Result<Vec<u8>> {
    read_capped_with_flag(path, limit, FLAG)
}

/// [`read_capped`] for a command with several inputs, whose caps have flags of their own.
///
/// # Errors
/// As [`read_capped`], the message naming `flag`.
pub(crate) fn read_capped_with_flag(path: &Path, limit: u64, flag: &str) -> Result<Vec<u8>> {
    let too_large = || {
        anyhow::anyhow!(
            "{} is larger than the input limit of {limit} bytes, expected at most that; raise \
             the limit with {flag}",
            path.display()
        )
    };
    let reader: Box<dyn Read> = if path == Path::new("-") {
        Box::new(std::io::stdin().lock())
    } else {
        let file = File::open(path).with_context(|| format!("reading {}", path.display()))?;
        let metadata = file.metadata().with_context(|| format!("reading {}", path.display()))?;
        if metadata.is_file() && metadata.len() > limit {
            return Err(too_large());
        }
        Box::new(file)
    };
    let mut bytes = Vec::new();
    reader
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .with_context(|| format!("reading {}", path.display()))?;
    if bytes.len() as u64 > limit {
        return Err(too_large());
    }
    Ok(bytes)
}
