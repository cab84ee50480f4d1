//! Loading a module from bytes that may be either form: HLO text or a binary `HloModuleProto`.

use crate::DecodeError;
use crate::proto::HloModuleProto;
use crate::text::TextError;

/// Why bytes could not be loaded as a module.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The bytes look like HLO text (they start with `HloModule`) but do not parse.
    #[error("HLO text: {0}")]
    Text(#[from] TextError),
    /// The bytes look like HLO text but are not UTF-8.
    #[error("HLO text: invalid UTF-8 at byte {offset}")]
    NotUtf8 {
        /// Offset of the first invalid byte.
        offset: usize,
    },
    /// The bytes are taken for a binary proto, and it does not decode.
    #[error("binary HloModuleProto: {0}")]
    Binary(#[from] DecodeError),
}

/// Whether `bytes` is HLO text: after whitespace and `//` or `/* */` comments, it starts with
/// the word `HloModule`. A binary `HloModuleProto` starts with a field tag, never with `H`
/// followed by `loModule` in practice (XLA writes field 1, `name`, first: byte 0x0a).
pub fn is_text(bytes: &[u8]) -> bool {
    // Editors on some systems start UTF-8 files with a byte-order mark.
    let mut rest = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
    loop {
        let trimmed = rest.trim_ascii_start();
        if let Some(after) = trimmed.strip_prefix(b"//") {
            rest = after.iter().position(|&b| b == b'\n').map_or(&[][..], |k| &after[k..]);
        } else if let Some(after) = trimmed.strip_prefix(b"/*") {
            rest = after.windows(2).position(|w| w == b"*/").map_or(&[][..], |k| &after[k + 2..]);
        } else {
            return trimmed.starts_with(b"HloModule");
        }
    }
}

/// Loads a module from HLO text or a binary `HloModuleProto`, telling them apart with
/// [`is_text`]. The result is not validated: call [`crate::validate`].
///
/// # Errors
/// [`LoadError`], saying which form the bytes were taken for and why they failed.
pub fn load_module(bytes: &[u8]) -> Result<HloModuleProto, LoadError> {
    if is_text(bytes) {
        let src = std::str::from_utf8(bytes)
            .map_err(|e| LoadError::NotUtf8 { offset: e.valid_up_to() })?;
        Ok(crate::text::parse_module(src.strip_prefix('\u{feff}').unwrap_or(src))?)
    } else {
        Ok(crate::decode_module(bytes)?)
    }
}
