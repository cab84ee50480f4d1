//! The caps on what `nrtsim`'s commands read, and the reader they read through
//! ([`conformance::capped`]): an endless or huge input (`/dev/zero`, a pipe that never closes)
//! is an error naming the limit and its flag instead of reading until memory runs out.
//!
//! The defaults are chosen so that a laptop can honour them: no single file is read past 1 GiB
//! unless a flag says so, since a command holds what it reads in memory (and some inputs cost a
//! small multiple of their size once parsed).

use std::path::Path;

use anyhow::Result;

/// The default cap on a metaneff: far above real metaneffs (kilobytes of tensor descriptions;
/// the largest part is the serialized HLO module, which holds no weights in torch-neuronx's
/// files), and a quarter of the NEFF's since a parsed metaneff costs more per byte than a NEFF.
pub(crate) const DEFAULT_MAX_METANEFF_BYTES: u64 = 256 << 20;

/// The default cap on a NEFF: 1 GiB, the same as the NEFF reader's decompression budget
/// (`abi::neff::DEFAULT_MAX_PAYLOAD_BYTES`), so a file the reader could not unpack is not read
/// either. torch-neuronx NEFFs take their weights as inputs and are far smaller.
pub(crate) const DEFAULT_MAX_NEFF_BYTES: u64 = 1 << 30;

/// The default cap on an HLO module or a `.npy` input of `nrtsim hlo`: 1 GiB, as for a NEFF (a
/// module carries its constants, an array is its data).
pub(crate) const DEFAULT_MAX_HLO_BYTES: u64 = 1 << 30;

/// The default cap on each file `nrtsim run` reads (NEFF, metaneff, `--hlo`, `.npy` inputs,
/// `.safetensors` weights): 1 GiB. A weights file of a large model is bigger; pass
/// `--max-input-bytes` for it, knowing the whole file is held in memory.
pub(crate) const DEFAULT_MAX_RUN_BYTES: u64 = 1 << 30;

/// The name of the flag that raises the cap, for messages.
pub(crate) const FLAG: &str = "--max-input-bytes";

/// Reads `path` (`-` for standard input), at most `limit` bytes (set by `--max-input-bytes`).
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
    Ok(conformance::capped::read_capped(path, limit, flag)?)
}

/// The process's peak resident memory in bytes (`VmHWM` of `/proc/self/status`), where the
/// system reports it (Linux).
pub(crate) fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find_map(|line| line.strip_prefix("VmHWM:"))?;
    let kib: u64 = line.trim().strip_suffix("kB")?.trim().parse().ok()?;
    kib.checked_mul(1024)
}
