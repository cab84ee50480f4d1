//! The caps on what `nrtsim`'s commands read, the reader they read through ([`sim::capped`]),
//! and the one opener of `.npy` inputs: an endless or huge input (`/dev/zero`, a pipe that never
//! closes) is an error naming the limit and its flag instead of reading until memory runs out.
//!
//! The defaults are chosen so that a laptop can honour them: no single file is read past 1 GiB
//! unless a flag says so, since a command holds what it reads in memory (and some inputs cost a
//! small multiple of their size once parsed).

use std::fs::File;
use std::io::Read as _;
use std::path::Path;

use abi::neff::npy::{self, NpyHeader};
use anyhow::{Context as _, Result};

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
    Ok(sim::capped::read_capped(path, limit, flag)?)
}

/// How much of a regular `.npy` file is read for its header: numpy pads headers to 64 bytes and
/// writes them far shorter than this.
const NPY_HEADER_PREFIX: u64 = 1 << 20;

/// An `.npy` input opened by [`open_npy`], its header parsed.
pub(crate) enum OpenedNpy {
    /// Standard input or another stream, read whole within the cap.
    Whole { header: NpyHeader, bytes: Vec<u8> },
    /// A regular file within the cap, left open after its first bytes: `prefix` holds the
    /// header and the start of the data (at most [`NPY_HEADER_PREFIX`] bytes of the file), so
    /// the data need not be read twice; `len` is the file's length.
    File { header: NpyHeader, len: u64, prefix: Vec<u8>, file: File },
}

/// Opens the `.npy` input `path` (`-` for standard input) of at most `limit` bytes (set by
/// `--max-input-bytes`) and parses its header; `context` names the input in the messages. A
/// regular file is judged by its length and only its first bytes are read; any other input is
/// read whole through [`read_capped`].
///
/// # Errors
/// When the input cannot be read, holds more than `limit` bytes, or has no valid header.
pub(crate) fn open_npy(path: &Path, context: &str, limit: u64) -> Result<OpenedNpy> {
    let regular = path != Path::new("-") && std::fs::metadata(path).is_ok_and(|m| m.is_file());
    if !regular {
        let bytes = read_capped(path, limit)?;
        let header = npy::parse_header(context, &bytes)?;
        return Ok(OpenedNpy::Whole { header, bytes });
    }
    let reading = || format!("reading {}", path.display());
    let file = File::open(path).with_context(reading)?;
    let len = file.metadata().with_context(reading)?.len();
    if len > limit {
        let path = path.display().to_string();
        return Err(
            sim::capped::CappedReadError::TooLarge { path, flag: FLAG.to_owned(), limit }.into()
        );
    }
    let mut prefix = Vec::new();
    (&file).take(len.min(NPY_HEADER_PREFIX)).read_to_end(&mut prefix).with_context(reading)?;
    let header = npy::parse_header_prefix(context, &prefix, len)?;
    Ok(OpenedNpy::File { header, len, prefix, file })
}

/// The process's peak resident memory in bytes (`VmHWM` of `/proc/self/status`), where the
/// system reports it (Linux).
pub(crate) fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find_map(|line| line.strip_prefix("VmHWM:"))?;
    let kib: u64 = line.trim().strip_suffix("kB")?.trim().parse().ok()?;
    kib.checked_mul(1024)
}
