//! The 1024-byte NEFF header: field layout, the loader's gates, and the payload hash.
//!
//! Design choices:
//! - The header is parsed field by field from fixed offsets (docs/abi-facts.md §5) with plain
//!   `from_le_bytes`, no casts of memory, so any byte string is safe input.
//! - Gates run in a fixed order: length, package version, format version, feature bits, then
//!   the two size fields. Each test crafts a file that breaks exactly one gate, so the order only
//!   matters for files that break several; it is not known which libnrt checks first.
//! - The MD5 of package version 2 is stored as four 32-bit words, each byte-swapped; this module
//!   converts in both directions so the rest of the crate sees the plain digest. The SHA-256 of
//!   package version 1 is stored as is (no public source says otherwise).
//! - A hash mismatch maps to `NRT_INVALID`: the file is malformed, not from an unknown version.

use md5::{Digest, Md5};
use sha2::Sha256;

use super::NeffError;
use crate::hex::to_hex;

/// The length of the fixed header, and the usual `header_size`.
pub const HEADER_LEN: usize = 1024;
/// The newest `version_major` the loader accepts.
pub const MAX_VERSION_MAJOR: u64 = 2;
/// Feature bits that a version-2 loader refuses.
pub const FORBIDDEN_FEATURE_BITS_V2: u64 = 0x7FFF_FFFF_F800_0000;
/// The feature bit that marks a NEFF written by the simulator's compile target. It lies in
/// [`FORBIDDEN_FEATURE_BITS_V2`], so a real version-2 loader refuses the file at load
/// (`NRT_UNSUPPORTED_NEFF_VERSION`) instead of running a NEFF that holds no device program. This
/// crate accepts it only together with the [`SIMULATOR_TARGET_MEMBER`](super::SIMULATOR_TARGET_MEMBER)
/// member: [`NeffHeader::parse`] lets the bit pass, and [`Neff::parse`](super::Neff::parse)
/// refuses it when the member is absent.
pub const SIMULATOR_TARGET_FEATURE_BIT: u64 = 1 << 62;

const OFFSET_PKG_VERSION: usize = 0x000;
const OFFSET_HEADER_SIZE: usize = 0x008;
const OFFSET_DATA_SIZE: usize = 0x010;
const OFFSET_VERSION_MAJOR: usize = 0x018;
const OFFSET_VERSION_MINOR: usize = 0x020;
const OFFSET_BUILD_VERSION: usize = 0x028;
const LEN_BUILD_VERSION: usize = 128;
const OFFSET_NUM_TPB: usize = 0x0A8;
const OFFSET_HASH: usize = 0x0AC;
const LEN_HASH: usize = 32;
const OFFSET_UUID: usize = 0x0CC;
const LEN_UUID: usize = 16;
const OFFSET_NAME: usize = 0x0DC;
const LEN_NAME: usize = 256;
const OFFSET_REQUESTED_TPB_COUNT: usize = 0x1DC;
const OFFSET_TPB_PER_NODE: usize = 0x1E0;
const LEN_TPB_PER_NODE: usize = 64;
const OFFSET_FEATURE_BITS: usize = 0x220;
const OFFSET_LNC_SIZE: usize = 0x228;

/// The NEFF header, every field of docs/abi-facts.md §5.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NeffHeader {
    /// 1 = plain tar + SHA-256, 2 = gzip tar + MD5.
    pub pkg_version: u64,
    /// Where the payload starts (0x400 in every known file).
    pub header_size: u64,
    /// The payload length in bytes.
    pub data_size: u64,
    /// Format major version, accepted up to [`MAX_VERSION_MAJOR`].
    pub version_major: u64,
    /// Format minor version, not checked.
    pub version_minor: u64,
    /// The compiler's build string (up to the first NUL, lossily decoded).
    pub build_version: String,
    /// Number of TPBs (NeuronCores) the program was compiled for.
    pub num_tpb: u32,
    /// The stored hash field exactly as in the file (MD5 words byte-swapped for package 2).
    pub hash: [u8; LEN_HASH],
    /// The model uuid.
    pub uuid: [u8; LEN_UUID],
    /// The model name (up to the first NUL, lossily decoded).
    pub name: String,
    /// The requested TPB count.
    pub requested_tpb_count: u32,
    /// The raw `tpb_per_node` field.
    pub tpb_per_node: [u8; LEN_TPB_PER_NODE],
    /// Feature bits; with major 2, [`FORBIDDEN_FEATURE_BITS_V2`] must be clear.
    pub feature_bits: u64,
    /// Logical NeuronCore size (1 or 2).
    pub lnc_size: u32,
}

impl Default for NeffHeader {
    /// A version 2.0 header with every other field zero or empty.
    fn default() -> NeffHeader {
        NeffHeader {
            pkg_version: 2,
            header_size: HEADER_LEN as u64,
            data_size: 0,
            version_major: 2,
            version_minor: 0,
            build_version: String::new(),
            num_tpb: 1,
            hash: [0; LEN_HASH],
            uuid: [0; LEN_UUID],
            name: String::new(),
            requested_tpb_count: 0,
            tpb_per_node: [0; LEN_TPB_PER_NODE],
            feature_bits: 0,
            lnc_size: 1,
        }
    }
}

fn read_u64(bytes: &[u8], offset: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&bytes[offset..offset + 8]);
    u64::from_le_bytes(word)
}

fn read_u32(bytes: &[u8], offset: usize) -> u32 {
    let mut word = [0u8; 4];
    word.copy_from_slice(&bytes[offset..offset + 4]);
    u32::from_le_bytes(word)
}

fn read_array<const N: usize>(bytes: &[u8], offset: usize) -> [u8; N] {
    let mut array = [0u8; N];
    array.copy_from_slice(&bytes[offset..offset + N]);
    array
}

fn read_text(bytes: &[u8], offset: usize, len: usize) -> String {
    let field = &bytes[offset..offset + len];
    let end = field.iter().position(|&byte| byte == 0).unwrap_or(len);
    String::from_utf8_lossy(&field[..end]).into_owned()
}

fn write_text(
    out: &mut [u8],
    offset: usize,
    len: usize,
    field: &str,
    text: &str,
) -> Result<(), NeffError> {
    // One byte stays free for the terminating NUL, as C readers expect.
    if text.len() >= len || text.as_bytes().contains(&0) {
        return Err(NeffError::InvalidSpec {
            detail: format!(
                "header {field} must be at most {} bytes without NUL, found {} bytes",
                len - 1,
                text.len()
            ),
        });
    }
    out[offset..offset + text.len()].copy_from_slice(text.as_bytes());
    Ok(())
}

/// Swaps the bytes of each 32-bit word of an MD5 digest; the operation is its own inverse.
fn swap_md5_words(digest: &[u8]) -> [u8; 16] {
    let mut swapped = [0u8; 16];
    for (word_idx, word) in digest.chunks_exact(4).take(4).enumerate() {
        for (byte_idx, &byte) in word.iter().rev().enumerate() {
            swapped[word_idx * 4 + byte_idx] = byte;
        }
    }
    swapped
}

impl NeffHeader {
    /// Parses the header of a whole NEFF file and applies every header gate, except that the
    /// [`SIMULATOR_TARGET_FEATURE_BIT`] passes here (the member check needs the payload).
    ///
    /// # Errors
    /// [`NeffError::TooShort`], [`NeffError::UnsupportedPackageVersion`],
    /// [`NeffError::UnsupportedVersionMajor`], [`NeffError::ForbiddenFeatureBits`],
    /// [`NeffError::HeaderSizeTooLarge`] or [`NeffError::DataSizeTooLarge`].
    pub fn parse(bytes: &[u8]) -> Result<NeffHeader, NeffError> {
        if bytes.len() < HEADER_LEN {
            return Err(NeffError::TooShort { n_bytes: bytes.len() });
        }
        let header = NeffHeader {
            pkg_version: read_u64(bytes, OFFSET_PKG_VERSION),
            header_size: read_u64(bytes, OFFSET_HEADER_SIZE),
            data_size: read_u64(bytes, OFFSET_DATA_SIZE),
            version_major: read_u64(bytes, OFFSET_VERSION_MAJOR),
            version_minor: read_u64(bytes, OFFSET_VERSION_MINOR),
            build_version: read_text(bytes, OFFSET_BUILD_VERSION, LEN_BUILD_VERSION),
            num_tpb: read_u32(bytes, OFFSET_NUM_TPB),
            hash: read_array(bytes, OFFSET_HASH),
            uuid: read_array(bytes, OFFSET_UUID),
            name: read_text(bytes, OFFSET_NAME, LEN_NAME),
            requested_tpb_count: read_u32(bytes, OFFSET_REQUESTED_TPB_COUNT),
            tpb_per_node: read_array(bytes, OFFSET_TPB_PER_NODE),
            feature_bits: read_u64(bytes, OFFSET_FEATURE_BITS),
            lnc_size: read_u32(bytes, OFFSET_LNC_SIZE),
        };
        if !matches!(header.pkg_version, 1 | 2) {
            return Err(NeffError::UnsupportedPackageVersion { pkg_version: header.pkg_version });
        }
        if header.version_major > MAX_VERSION_MAJOR {
            return Err(NeffError::UnsupportedVersionMajor { version_major: header.version_major });
        }
        // The simulator-target bit is checked against the members by `Neff::parse`.
        let forbidden =
            header.feature_bits & FORBIDDEN_FEATURE_BITS_V2 & !SIMULATOR_TARGET_FEATURE_BIT;
        if header.version_major == 2 && forbidden != 0 {
            return Err(NeffError::ForbiddenFeatureBits {
                feature_bits: header.feature_bits,
                forbidden,
            });
        }
        header.payload(bytes)?;
        Ok(header)
    }

    /// Whether the header carries [`SIMULATOR_TARGET_FEATURE_BIT`] under the version-2 gate.
    pub fn is_simulator_target(&self) -> bool {
        self.version_major == 2 && self.feature_bits & SIMULATOR_TARGET_FEATURE_BIT != 0
    }

    /// The payload bytes of `file` (the whole NEFF this header came from).
    ///
    /// # Errors
    /// [`NeffError::HeaderSizeTooLarge`] or [`NeffError::DataSizeTooLarge`] when the size fields
    /// do not fit the file.
    pub fn payload<'file>(&self, file: &'file [u8]) -> Result<&'file [u8], NeffError> {
        let n_bytes = file.len();
        let start = usize::try_from(self.header_size)
            .ok()
            .filter(|&start| start < n_bytes)
            .ok_or(NeffError::HeaderSizeTooLarge { header_size: self.header_size, n_bytes })?;
        let too_large = NeffError::DataSizeTooLarge {
            header_size: self.header_size,
            data_size: self.data_size,
            n_bytes,
        };
        let end = usize::try_from(self.data_size)
            .ok()
            .and_then(|data_size| start.checked_add(data_size))
            .filter(|&end| end <= n_bytes)
            .ok_or(too_large)?;
        Ok(&file[start..end])
    }

    /// The digest stored in the header, in plain digest byte order, for this package version.
    pub fn stored_digest(&self) -> Vec<u8> {
        match self.pkg_version {
            2 => swap_md5_words(&self.hash[..16]).to_vec(),
            _ => self.hash.to_vec(),
        }
    }

    /// Checks `payload` against the stored hash: MD5 for package version 2, SHA-256 otherwise.
    ///
    /// # Errors
    /// [`NeffError::HashMismatch`] with both digests in hex.
    pub fn check_hash(&self, payload: &[u8]) -> Result<(), NeffError> {
        let (algorithm, actual) = payload_digest(self.pkg_version, payload);
        let expected = self.stored_digest();
        if actual == expected {
            Ok(())
        } else {
            Err(NeffError::HashMismatch {
                algorithm,
                expected: to_hex(&expected),
                actual: to_hex(&actual),
            })
        }
    }

    /// Encodes the header into its 1024 bytes, every field as it is (no size or hash is filled).
    ///
    /// # Errors
    /// [`NeffError::InvalidSpec`] when `name` or `build_version` does not fit its field.
    pub fn encode(&self) -> Result<[u8; HEADER_LEN], NeffError> {
        let mut out = [0u8; HEADER_LEN];
        out[OFFSET_PKG_VERSION..][..8].copy_from_slice(&self.pkg_version.to_le_bytes());
        out[OFFSET_HEADER_SIZE..][..8].copy_from_slice(&self.header_size.to_le_bytes());
        out[OFFSET_DATA_SIZE..][..8].copy_from_slice(&self.data_size.to_le_bytes());
        out[OFFSET_VERSION_MAJOR..][..8].copy_from_slice(&self.version_major.to_le_bytes());
        out[OFFSET_VERSION_MINOR..][..8].copy_from_slice(&self.version_minor.to_le_bytes());
        write_text(
            &mut out,
            OFFSET_BUILD_VERSION,
            LEN_BUILD_VERSION,
            "build_version",
            &self.build_version,
        )?;
        out[OFFSET_NUM_TPB..][..4].copy_from_slice(&self.num_tpb.to_le_bytes());
        out[OFFSET_HASH..][..LEN_HASH].copy_from_slice(&self.hash);
        out[OFFSET_UUID..][..LEN_UUID].copy_from_slice(&self.uuid);
        write_text(&mut out, OFFSET_NAME, LEN_NAME, "name", &self.name)?;
        out[OFFSET_REQUESTED_TPB_COUNT..][..4]
            .copy_from_slice(&self.requested_tpb_count.to_le_bytes());
        out[OFFSET_TPB_PER_NODE..][..LEN_TPB_PER_NODE].copy_from_slice(&self.tpb_per_node);
        out[OFFSET_FEATURE_BITS..][..8].copy_from_slice(&self.feature_bits.to_le_bytes());
        out[OFFSET_LNC_SIZE..][..4].copy_from_slice(&self.lnc_size.to_le_bytes());
        Ok(out)
    }
}

/// The algorithm name and digest of a payload for a package version.
fn payload_digest(pkg_version: u64, payload: &[u8]) -> (&'static str, Vec<u8>) {
    match pkg_version {
        2 => ("md5", Md5::digest(payload).to_vec()),
        _ => ("sha256", Sha256::digest(payload).to_vec()),
    }
}

/// Builds a whole NEFF file from a header and a payload already in the package's format:
/// `header_size` becomes 1024, `data_size` the payload length, and the hash field the payload's
/// digest (MD5 words byte-swapped for package 2). Every other field is taken from `header`.
///
/// # Errors
/// [`NeffError::InvalidSpec`] when a text field does not fit.
pub fn assemble_neff(header: &NeffHeader, payload: &[u8]) -> Result<Vec<u8>, NeffError> {
    let mut header = header.clone();
    header.header_size = HEADER_LEN as u64;
    header.data_size = payload.len() as u64;
    let (_, digest) = payload_digest(header.pkg_version, payload);
    header.hash = [0; LEN_HASH];
    if header.pkg_version == 2 {
        header.hash[..16].copy_from_slice(&swap_md5_words(&digest));
    } else {
        header.hash.copy_from_slice(&digest);
    }
    let mut file = Vec::with_capacity(HEADER_LEN + payload.len());
    file.extend_from_slice(&header.encode()?);
    file.extend_from_slice(payload);
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn md5_words_are_stored_byte_swapped() {
        let digest = [0xef, 0xe9, 0xb3, 0xbc, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12];
        let stored = swap_md5_words(&digest);
        assert_eq!(&stored[..8], &[0xbc, 0xb3, 0xe9, 0xef, 4, 3, 2, 1]);
        assert_eq!(swap_md5_words(&stored), digest);
    }

    #[test]
    fn header_fields_survive_encode_and_parse() {
        let header = NeffHeader {
            data_size: 1,
            version_minor: 7,
            build_version: "2.23".to_owned(),
            num_tpb: 2,
            name: "file.neff".to_owned(),
            requested_tpb_count: 3,
            feature_bits: 0x209c00,
            lnc_size: 2,
            ..NeffHeader::default()
        };
        let mut file = header.encode().expect("fits").to_vec();
        file.push(0);
        assert_eq!(NeffHeader::parse(&file).expect("valid"), header);
    }
}
