//! The reader beside the writer: trace lines as types, in the grammar the rest of
//! [`crate::trace`] (and the C recorder, through its functions) writes.
//!
//! A line is one of:
//! ```text
//! name(args) -> result        a call: a function's trace name, its arguments, and what it gave
//! name(…) -> STATUS           a call recorded by name only
//! close()                     a call without a result
//! # memory TENSOR OFFSET BYTES
//! # completed SEQ
//! # anything else             a header or comment line
//! ```
//! [`parse_line`] reads one; the call's arguments are split at their top-level commas but left as
//! text, since what an argument means depends on the function. [`parse_bytes`] and
//! [`parse_name`] read the two argument forms that need more than a number or a handle: byte
//! strings (`[00 ff]` inline, `<N bytes sha256:…>` for long ones) and names (`"input0"`,
//! `b"i\xff"`). The function's name is resolved to a [`LibnrtFunction`] here, once, so a reader
//! matches on the enum and an unknown name is an error at the line that holds it.
//!
//! Every reader walks its text character by character, so any input, non-ASCII or cut short,
//! gives a value or a [`ParseError`], never a panic.

use std::collections::HashMap;
use std::sync::OnceLock;

use super::{
    BUFFER_TAG, COMPLETED_PREFIX, DIGEST_TAG, MEMORY_PREFIX, RESULT_ARROW, UNRECORDED_ARGS,
};
use crate::functions::LibnrtFunction;
use crate::hex::HexError;

/// A trace line that does not read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// The line (or one of its arguments) is not in the grammar.
    #[error("line {line}: expected {expected}, found {found:?}")]
    Syntax {
        /// The line number.
        line: usize,
        /// What should be there.
        expected: &'static str,
        /// What is there: the line, or the argument that does not read.
        found: String,
    },
    /// Inline bytes whose hex does not read.
    #[error("line {line}: expected hex bytes `[00 ff]`, found {found:?}: {source}")]
    Hex {
        /// The line number.
        line: usize,
        /// The argument.
        found: String,
        /// Where the hex goes wrong.
        source: HexError,
    },
    /// A call of a function the table does not have.
    #[error(
        "line {line}: expected the trace name of a libnrt function (such as execute), found {name:?}"
    )]
    UnknownFunction {
        /// The line number.
        line: usize,
        /// The name before `(`.
        name: String,
    },
}

/// One line of a trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Line {
    /// A call.
    Call(Call),
    /// `# memory TENSOR OFFSET BYTES`: stores the program made through the tensor's address.
    Memory {
        /// The tensor's trace name (`t1`).
        tensor: String,
        /// Where in the tensor the bytes start.
        offset: usize,
        /// The bytes stored.
        bytes: Bytes,
    },
    /// `# completed SEQ`: the program saw the async request complete here.
    Completed {
        /// The request's trace name (`q1`).
        seq: String,
    },
    /// Any other line starting with `#`: the header, or a comment.
    Comment,
}

/// A call line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    /// The function called.
    pub function: LibnrtFunction,
    /// Its arguments.
    pub args: Args,
    /// What follows ` -> `: a returned value and the status (`t1 NRT_SUCCESS`), or the status
    /// alone; `None` for a call traced without a result (`close()`).
    pub result: Option<String>,
}

impl Call {
    /// The handle or value the call returned, when it succeeded (`t3` of `-> t3 NRT_SUCCESS`).
    pub fn returned(&self) -> Option<&str> {
        let (value, status) = self.result.as_deref()?.split_once(' ')?;
        (status == "NRT_SUCCESS").then_some(value)
    }
}

/// The arguments of a call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Args {
    /// The argument texts, split at top-level commas and trimmed.
    Recorded(Vec<String>),
    /// [`UNRECORDED_ARGS`]: the call was recorded by name only.
    Unrecorded,
}

/// A byte-string argument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Bytes {
    /// `[00 01 ff]`: the bytes themselves.
    Inline(Vec<u8>),
    /// `<N bytes sha256:HASH>`: a long byte string by its length and the start of its SHA-256,
    /// in hex as written.
    Digest {
        /// The length.
        n_bytes: usize,
        /// The hex digits after `sha256:`.
        sha256: String,
    },
}

impl Bytes {
    /// The digest of a long byte string (the hex after `sha256:`), `None` for inline bytes.
    pub fn digest(&self) -> Option<&str> {
        match self {
            Bytes::Inline(_) => None,
            Bytes::Digest { sha256, .. } => Some(sha256),
        }
    }
}

/// The argument as traced: `[00 ff]` (whatever the length) or `<N bytes sha256:HASH>`.
impl std::fmt::Display for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Bytes::Inline(bytes) => write!(f, "[{}]", crate::hex::to_hex_spaced(bytes)),
            Bytes::Digest { n_bytes, sha256 } => write!(f, "<{n_bytes} bytes{DIGEST_TAG}{sha256}>"),
        }
    }
}

/// The function whose trace name is `name`.
pub fn function_of(name: &str) -> Option<LibnrtFunction> {
    static BY_TRACE_NAME: OnceLock<HashMap<&'static str, LibnrtFunction>> = OnceLock::new();
    let table = BY_TRACE_NAME.get_or_init(|| {
        LibnrtFunction::ALL.iter().map(|&function| (function.trace_name(), function)).collect()
    });
    table.get(name).copied()
}

/// Reads line number `line` (for errors), `text`, without its end of line.
///
/// # Errors
/// [`ParseError::Syntax`] for a line outside the grammar, naming what was expected;
/// [`ParseError::UnknownFunction`] for a call of a name the function table lacks;
/// [`ParseError::Hex`] for a `# memory` line whose bytes do not read.
pub fn parse_line(line: usize, text: &str) -> Result<Line, ParseError> {
    let syntax = |expected| ParseError::Syntax { line, expected, found: text.into() };
    if let Some(rest) = text.strip_prefix(MEMORY_PREFIX) {
        let mut words = rest.splitn(3, ' ');
        let (Some(tensor), Some(offset), Some(bytes)) = (words.next(), words.next(), words.next())
        else {
            return Err(syntax("`# memory TENSOR OFFSET BYTES`"));
        };
        let offset = offset.parse().map_err(|_| syntax("a byte offset after the tensor"))?;
        let bytes = parse_bytes(line, bytes)?;
        return Ok(Line::Memory { tensor: tensor.into(), offset, bytes });
    }
    if let Some(seq) = text.strip_prefix(COMPLETED_PREFIX) {
        return Ok(Line::Completed { seq: seq.trim().into() });
    }
    if text.starts_with('#') {
        return Ok(Line::Comment);
    }
    let (name, after_name) =
        text.split_once('(').ok_or_else(|| syntax("a call `name(args) -> result`"))?;
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(syntax("a function name before `(`"));
    }
    let (args, after_args) =
        split_at_close_paren(after_name).ok_or_else(|| syntax("a `)` closing the arguments"))?;
    let result = if after_args.is_empty() || after_args.starts_with(" #") {
        None
    } else {
        let result = after_args
            .strip_prefix(RESULT_ARROW)
            .ok_or_else(|| syntax("` -> RESULT` or the end of the line after `)`"))?;
        Some(result.to_owned())
    };
    let function =
        function_of(name).ok_or_else(|| ParseError::UnknownFunction { line, name: name.into() })?;
    let args =
        if args == UNRECORDED_ARGS { Args::Unrecorded } else { Args::Recorded(split_args(args)) };
    Ok(Line::Call(Call { function, args, result }))
}

/// `text` cut at the `)` that closes an argument list whose `(` came just before it (a `)`
/// inside a quoted name does not count): the arguments, and what follows the `)`.
fn split_at_close_paren(text: &str) -> Option<(&str, &str)> {
    let mut quoted = false;
    let mut escaped = false;
    for (index, c) in text.char_indices() {
        if quoted {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                quoted = false;
            }
        } else if c == '"' {
            quoted = true;
        } else if c == ')' {
            // `index` is where a one-byte `)` starts, so both halves are whole characters.
            return Some((&text[..index], &text[index + 1..]));
        }
    }
    None
}

/// Splits `a, "b, c", [d e], <f g>` at the top-level commas (not inside quotes, brackets or
/// angle brackets), each argument trimmed. No text is no arguments.
pub fn split_args(text: &str) -> Vec<String> {
    let mut args = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    let mut quoted = false;
    let mut escaped = false;
    for c in text.chars() {
        if quoted {
            current.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                quoted = false;
            }
            continue;
        }
        match c {
            '"' => {
                quoted = true;
                current.push(c);
            }
            '[' | '<' => {
                depth += 1;
                current.push(c);
            }
            ']' | '>' => {
                depth = depth.saturating_sub(1);
                current.push(c);
            }
            ',' if depth == 0 => args.push(std::mem::take(&mut current).trim().to_owned()),
            _ => current.push(c),
        }
    }
    if !current.trim().is_empty() || !args.is_empty() {
        args.push(current.trim().to_owned());
    }
    args
}

/// A byte-string argument: `[00 ff]` (as [`crate::hex::parse_hex_spaced`] reads it) or
/// `<N bytes sha256:HASH>`.
///
/// # Errors
/// [`ParseError::Hex`] for brackets around something other than spaced hex bytes,
/// [`ParseError::Syntax`] for any other text.
pub fn parse_bytes(line: usize, text: &str) -> Result<Bytes, ParseError> {
    if let Some(hex) = text.strip_prefix('[').and_then(|rest| rest.strip_suffix(']')) {
        return crate::hex::parse_hex_spaced(hex)
            .map(Bytes::Inline)
            .map_err(|source| ParseError::Hex { line, found: text.into(), source });
    }
    let syntax = || ParseError::Syntax {
        line,
        expected: "bytes `[..]` or `<N bytes sha256:HASH>`",
        found: text.into(),
    };
    let (n_bytes, sha256) = text
        .strip_prefix('<')
        .and_then(|rest| rest.strip_suffix('>'))
        .and_then(|rest| rest.split_once(" bytes"))
        .and_then(|(n_bytes, rest)| Some((n_bytes, rest.strip_prefix(DIGEST_TAG)?)))
        .ok_or_else(syntax)?;
    let n_bytes = n_bytes.parse().map_err(|_| syntax())?;
    if sha256.is_empty() || !sha256.bytes().all(|byte| byte.is_ascii_hexdigit()) {
        return Err(syntax());
    }
    Ok(Bytes::Digest { n_bytes, sha256: sha256.into() })
}

/// A caller-owned buffer argument, `<N bytes buffer>`, as its size.
///
/// # Errors
/// [`ParseError::Syntax`] for any other text.
pub fn parse_buffer(line: usize, text: &str) -> Result<usize, ParseError> {
    text.strip_prefix('<')
        .and_then(|rest| rest.strip_suffix(BUFFER_TAG))
        .and_then(|n_bytes| n_bytes.parse().ok())
        .ok_or_else(|| ParseError::Syntax {
            line,
            expected: "`<N bytes buffer>`",
            found: text.into(),
        })
}

/// A name argument as the bytes it stands for: a quoted string with Rust's escapes
/// (`"input0"`, `"a\u{1b}"`) or a quoted byte string (`b"i\xff"`), as
/// [`super::name_text`] writes them.
///
/// # Errors
/// [`ParseError::Syntax`] for text that is not quoted or holds an escape outside those forms.
pub fn parse_name(line: usize, text: &str) -> Result<Vec<u8>, ParseError> {
    let syntax = || ParseError::Syntax { line, expected: "a quoted name", found: text.into() };
    let (inner, raw) = match text.strip_prefix("b\"") {
        Some(rest) => (rest.strip_suffix('"').ok_or_else(syntax)?, true),
        None => (
            text.strip_prefix('"').and_then(|rest| rest.strip_suffix('"')).ok_or_else(syntax)?,
            false,
        ),
    };
    let mut out = Vec::with_capacity(inner.len());
    let mut chars = inner.chars();
    let mut buffer = [0; 4];
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.extend_from_slice(c.encode_utf8(&mut buffer).as_bytes());
            continue;
        }
        match chars.next().ok_or_else(syntax)? {
            'n' => out.push(b'\n'),
            't' => out.push(b'\t'),
            'r' => out.push(b'\r'),
            '0' => out.push(0),
            '\\' => out.push(b'\\'),
            '"' => out.push(b'"'),
            '\'' => out.push(b'\''),
            'x' if raw => {
                let mut digit = || {
                    chars
                        .next()
                        .and_then(|c| u8::try_from(c).ok())
                        .and_then(crate::hex::digit_value)
                        .ok_or_else(syntax)
                };
                let high = digit()?;
                let low = digit()?;
                out.push((high << 4) | low);
            }
            'u' => {
                if chars.next() != Some('{') {
                    return Err(syntax());
                }
                let mut code = 0u32;
                let mut digits = 0;
                loop {
                    let c = chars.next().ok_or_else(syntax)?;
                    if c == '}' && digits > 0 {
                        break;
                    }
                    let value = u8::try_from(c)
                        .ok()
                        .and_then(crate::hex::digit_value)
                        .ok_or_else(syntax)?;
                    digits += 1;
                    // Six digits are the most a scalar value needs.
                    if digits > 6 {
                        return Err(syntax());
                    }
                    code = (code << 4) | u32::from(value);
                }
                let c = char::from_u32(code).ok_or_else(syntax)?;
                out.extend_from_slice(c.encode_utf8(&mut buffer).as_bytes());
            }
            _ => return Err(syntax()),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_split_at_top_level_commas_only() {
        assert_eq!(
            split_args(r#"s1, "a, b\"c", [00 01], <4 bytes buffer>, 7"#),
            ["s1", r#""a, b\"c""#, "[00 01]", "<4 bytes buffer>", "7"]
        );
        assert!(split_args("").is_empty());
    }

    #[test]
    fn a_call_line_parses_into_function_arguments_and_result() {
        match parse_line(3, r#"add_tensor_to_tensor_set(s1, "x)y", t1) -> NRT_SUCCESS"#) {
            Ok(Line::Call(Call { function, args: Args::Recorded(args), result })) => {
                assert_eq!(function, LibnrtFunction::nrt_add_tensor_to_tensor_set);
                assert_eq!(args, ["s1", r#""x)y""#, "t1"]);
                assert_eq!(result.as_deref(), Some("NRT_SUCCESS"));
            }
            other => panic!("not a call: {other:?}"),
        }
        let error = parse_line(4, "# memory t1 x [00]").unwrap_err();
        assert_eq!(
            error.to_string(),
            "line 4: expected a byte offset after the tensor, found \"# memory t1 x [00]\""
        );
    }

    #[test]
    fn a_call_recorded_by_name_only_has_no_arguments_to_reissue() {
        let line = parse_line(1, "nrta_tensor_copy(…) -> NRT_SUCCESS").unwrap();
        let Line::Call(call) = line else { panic!("not a call: {line:?}") };
        assert_eq!(call.function, LibnrtFunction::nrta_tensor_copy);
        assert_eq!(call.args, Args::Unrecorded);
        let line = parse_line(1, "get_status_as_str(…) # missing in the real library").unwrap();
        let Line::Call(call) = line else { panic!("not a call: {line:?}") };
        assert_eq!(call.result, None);
    }

    #[test]
    fn the_returned_handle_is_the_value_of_a_success() {
        let returned = |text| match parse_line(1, text) {
            Ok(Line::Call(call)) => call.returned().map(str::to_owned),
            other => panic!("not a call: {other:?}"),
        };
        assert_eq!(returned("allocate_tensor_set() -> s3 NRT_SUCCESS").as_deref(), Some("s3"));
        assert_eq!(returned("allocate_tensor_set() -> NRT_RESOURCE"), None);
        assert_eq!(returned("close()"), None);
    }

    #[test]
    fn an_unknown_function_is_an_error_naming_it() {
        assert_eq!(
            parse_line(7, "tensor_frobnicate(t1) -> NRT_SUCCESS"),
            Err(ParseError::UnknownFunction { line: 7, name: "tensor_frobnicate".into() })
        );
        // Trace names drop `nrt_`, so the C name is not one.
        assert!(matches!(
            parse_line(1, "nrt_execute(m1, s1, s2) -> NRT_SUCCESS"),
            Err(ParseError::UnknownFunction { .. })
        ));
    }

    #[test]
    fn every_function_is_found_by_its_trace_name() {
        for &function in LibnrtFunction::ALL {
            assert_eq!(function_of(function.trace_name()), Some(function));
        }
    }

    #[test]
    fn text_after_the_arguments_is_a_result_or_a_comment() {
        assert_eq!(
            parse_line(2, "close() x").unwrap_err().to_string(),
            "line 2: expected ` -> RESULT` or the end of the line after `)`, found \"close() x\""
        );
        assert_eq!(
            parse_line(2, "close(").unwrap_err().to_string(),
            "line 2: expected a `)` closing the arguments, found \"close(\""
        );
    }

    #[test]
    fn bytes_read_inline_or_as_a_digest() {
        assert_eq!(parse_bytes(1, "[00 ff]"), Ok(Bytes::Inline(vec![0, 0xff])));
        assert_eq!(parse_bytes(1, "[]"), Ok(Bytes::Inline(Vec::new())));
        assert_eq!(
            parse_bytes(1, "<33 bytes sha256:7f9c9e31ac8256ca>"),
            Ok(Bytes::Digest { n_bytes: 33, sha256: "7f9c9e31ac8256ca".into() })
        );
        assert_eq!(
            parse_bytes(5, "[0g]").unwrap_err().to_string(),
            "line 5: expected hex bytes `[00 ff]`, found \"[0g]\": expected a hex digit at byte 1, found 'g'"
        );
        for bad in ["<x bytes sha256:ab>", "<3 bytes sha256:>", "<3 bytes sha256:xy>", "00", "<3>"]
        {
            assert!(matches!(parse_bytes(1, bad), Err(ParseError::Syntax { .. })), "{bad}");
        }
    }

    #[test]
    fn names_read_in_both_quoted_forms() {
        assert_eq!(parse_name(1, r#""input0""#), Ok(b"input0".to_vec()));
        assert_eq!(parse_name(1, r#"b"i\xff""#), Ok(b"i\xff".to_vec()));
        assert_eq!(parse_name(1, r#""a\u{1b}\n""#), Ok(b"a\x1b\n".to_vec()));
        for bad in
            ["input0", r#""a"#, r#"b"\x4""#, r#""\xff""#, r#""\u{}""#, r#""\u{110000}""#, r#""\q""#]
        {
            assert!(parse_name(1, bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_buffer_reads_as_its_size() {
        assert_eq!(parse_buffer(1, "<4096 bytes buffer>"), Ok(4096));
        assert!(parse_buffer(1, "<x bytes buffer>").is_err());
    }
}
