//! Loading a module from bytes that may be either form: HLO text or a binary `HloModuleProto`.

use crate::DecodeError;
pub use crate::limits::{DEFAULT_MAX_COMPUTATIONS, DEFAULT_MAX_INSTRUCTIONS, LoadLimits};
use crate::proto::HloModuleProto;
use crate::text::{Stop, TextError};

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
    /// The module has more computations than [`LoadLimits::max_computations`].
    #[error(
        "the module has more than {limit} computations, expected at most {limit} (the computation limit)"
    )]
    TooManyComputations {
        /// The limit.
        limit: usize,
    },
    /// The module has more instructions, over all its computations, than
    /// [`LoadLimits::max_instructions`].
    #[error(
        "the module has more than {limit} instructions, expected at most {limit} (the instruction limit)"
    )]
    TooManyInstructions {
        /// The limit.
        limit: usize,
    },
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
    load_module_with_limits(bytes, &LoadLimits::default())
}

/// [`load_module`] under count limits. A binary proto is counted on the wire before it is
/// decoded, so a module over a limit costs no more memory than its bytes; HLO text is counted
/// as it is parsed, and the parse stops at the first computation or instruction past a limit,
/// so a text over a limit costs no more than the module at the limit.
///
/// # Errors
/// As [`load_module`], and [`LoadError::TooManyComputations`] or
/// [`LoadError::TooManyInstructions`] for a module past a limit.
pub fn load_module_with_limits(
    bytes: &[u8],
    limits: &LoadLimits,
) -> Result<HloModuleProto, LoadError> {
    if is_text(bytes) {
        let src = std::str::from_utf8(bytes)
            .map_err(|e| LoadError::NotUtf8 { offset: e.valid_up_to() })?;
        let src = src.strip_prefix('\u{feff}').unwrap_or(src);
        crate::text::parse_module_within(src, limits).map_err(|stop| match stop {
            Stop::Text(e) => LoadError::Text(e),
            Stop::TooManyComputations { limit } => LoadError::TooManyComputations { limit },
            Stop::TooManyInstructions { limit } => LoadError::TooManyInstructions { limit },
        })
    } else {
        if let Some((n_computations, n_instructions)) = count_on_the_wire(bytes) {
            check_counts(n_computations, n_instructions, limits)?;
        }
        Ok(crate::decode_module(bytes)?)
    }
}

fn check_counts(
    n_computations: usize,
    n_instructions: usize,
    limits: &LoadLimits,
) -> Result<(), LoadError> {
    if n_computations > limits.max_computations {
        return Err(LoadError::TooManyComputations { limit: limits.max_computations });
    }
    if n_instructions > limits.max_instructions {
        return Err(LoadError::TooManyInstructions { limit: limits.max_instructions });
    }
    Ok(())
}

/// The computations (`HloModuleProto` field 3) and their instructions
/// (`HloComputationProto` field 2) of a binary module, counted without decoding it; `None` when
/// the wire form is malformed, which the decoder then reports.
fn count_on_the_wire(bytes: &[u8]) -> Option<(usize, usize)> {
    let mut n_computations = 0usize;
    let mut n_instructions = 0usize;
    for (number, payload) in len_fields(bytes) {
        if number == 3 {
            n_computations += 1;
            for (inner, _) in len_fields(payload?) {
                n_instructions += usize::from(inner == 2);
            }
        }
    }
    Some((n_computations, n_instructions))
}

/// The length-delimited fields of a message as (field number, payload); other wire types are
/// skipped. A malformed field ends the walk (its payload `None`, then nothing more).
fn len_fields(bytes: &[u8]) -> impl Iterator<Item = (u64, Option<&[u8]>)> {
    let mut pos = 0usize;
    let mut done = false;
    std::iter::from_fn(move || {
        while !done && pos < bytes.len() {
            let Some(tag) = varint(bytes, &mut pos) else {
                done = true;
                return Some((0, None));
            };
            let skipped = match tag & 7 {
                0 => varint(bytes, &mut pos).map(|_| None),
                1 => advance(bytes, &mut pos, 8).map(|_| None),
                5 => advance(bytes, &mut pos, 4).map(|_| None),
                2 => varint(bytes, &mut pos)
                    .and_then(|len| usize::try_from(len).ok())
                    .and_then(|len| advance(bytes, &mut pos, len))
                    .map(Some),
                // Groups (3, 4) are not in the HLO schema; the decoder says what is wrong.
                _ => None,
            };
            match skipped {
                Some(Some(payload)) => return Some((tag >> 3, Some(payload))),
                Some(None) => {}
                None => {
                    done = true;
                    return Some((0, None));
                }
            }
        }
        None
    })
}

fn varint(bytes: &[u8], pos: &mut usize) -> Option<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *bytes.get(*pos)?;
        *pos += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return Some(value);
        }
    }
    None
}

fn advance<'a>(bytes: &'a [u8], pos: &mut usize, len: usize) -> Option<&'a [u8]> {
    let end = pos.checked_add(len).filter(|&end| end <= bytes.len())?;
    let payload = &bytes[*pos..end];
    *pos = end;
    Some(payload)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A module whose entry adds 1 to its parameter `n_adds` times, with `n_callees` extra
    /// computations: `n_adds + 3` instructions in the entry, two in each callee.
    fn module_text(n_adds: usize, n_callees: usize) -> String {
        let mut text = String::from("HloModule m\n\n");
        for k in 0..n_callees {
            text +=
                &format!("add{k} {{\n  a = f32[] parameter(0)\n  ROOT b = f32[] negate(a)\n}}\n\n");
        }
        text += "ENTRY e {\n  x0 = f32[] parameter(0)\n  one = f32[] constant(1)\n";
        for k in 0..n_adds {
            text += &format!("  x{} = f32[] add(x{k}, one)\n", k + 1);
        }
        text += &format!("  ROOT r = f32[] negate(x{n_adds})\n}}\n");
        text
    }

    fn limits(max_computations: usize, max_instructions: usize) -> LoadLimits {
        LoadLimits { max_computations, max_instructions }
    }

    #[test]
    fn instructions_at_the_limit_load_and_one_more_is_refused_in_both_forms() {
        let text = module_text(10, 0);
        let binary = crate::encode_module(&load_module(text.as_bytes()).expect("the text parses"));
        for bytes in [text.as_bytes(), &binary[..]] {
            assert!(load_module_with_limits(bytes, &limits(1, 13)).is_ok());
            let refused = load_module_with_limits(bytes, &limits(1, 12));
            assert!(
                matches!(refused, Err(LoadError::TooManyInstructions { limit: 12 })),
                "{refused:?}"
            );
        }
    }

    #[test]
    fn computations_at_the_limit_load_and_one_more_is_refused_in_both_forms() {
        let text = module_text(0, 3);
        let binary = crate::encode_module(&load_module(text.as_bytes()).expect("the text parses"));
        for bytes in [text.as_bytes(), &binary[..]] {
            assert!(load_module_with_limits(bytes, &limits(4, 100)).is_ok());
            let refused = load_module_with_limits(bytes, &limits(3, 100));
            assert!(
                matches!(refused, Err(LoadError::TooManyComputations { limit: 3 })),
                "{refused:?}"
            );
        }
    }

    /// The parser counts as it goes: once the limit is reached, the next instruction (or
    /// computation) is refused before it is read, so text past the limit is never parsed. The
    /// tails here do not parse, and the count error comes all the same.
    #[test]
    fn text_past_a_limit_is_refused_before_the_rest_is_parsed() {
        let text = module_text(10, 0);
        let cut = text.find("  ROOT r").expect("the thirteenth instruction");
        let garbage = format!("{}  ((( this is not HLO", &text[..cut]);
        let not_parsed = load_module_with_limits(garbage.as_bytes(), &limits(1, 13));
        assert!(matches!(not_parsed, Err(LoadError::Text(_))), "{not_parsed:?}");
        let refused = load_module_with_limits(garbage.as_bytes(), &limits(1, 12));
        assert!(
            matches!(refused, Err(LoadError::TooManyInstructions { limit: 12 })),
            "{refused:?}"
        );

        let text = module_text(0, 3);
        let cut = text.find("add2 {").expect("the third callee");
        let garbage = format!("{}add2 {{ ((( this is not HLO", &text[..cut]);
        let not_parsed = load_module_with_limits(garbage.as_bytes(), &limits(3, 100));
        assert!(matches!(not_parsed, Err(LoadError::Text(_))), "{not_parsed:?}");
        let refused = load_module_with_limits(garbage.as_bytes(), &limits(2, 100));
        assert!(matches!(refused, Err(LoadError::TooManyComputations { limit: 2 })), "{refused:?}");
    }

    /// Empty instructions cost two bytes each on the wire and a whole message each decoded:
    /// a binary module past the limit is refused from its wire form, before any is decoded.
    #[test]
    fn a_binary_module_of_empty_instructions_is_refused_before_decoding() {
        let n = 1000;
        let computation: Vec<u8> = std::iter::repeat_n([0x12u8, 0x00], n).flatten().collect();
        let mut module = vec![0x1a];
        let mut len = computation.len();
        while len >= 0x80 {
            module.push((len as u8) | 0x80);
            len >>= 7;
        }
        module.push(len as u8);
        module.extend(&computation);
        assert_eq!(count_on_the_wire(&module), Some((1, n)));
        let refused = load_module_with_limits(&module, &limits(10, n - 1));
        assert!(matches!(refused, Err(LoadError::TooManyInstructions { .. })), "{refused:?}");
    }

    #[test]
    fn the_default_limits_are_the_documented_ones() {
        assert_eq!(LoadLimits::default(), limits(100_000, 500_000));
    }
}
