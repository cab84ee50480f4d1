//! The trace grammar's writer and reader agree: every line kind `abi::trace` writes reads back
//! as the values it was written from (a proptest round trip), and the reader and `abi::hex`
//! give `Ok` or `Err`, never a panic, on thousands of mutated, truncated and random lines.

use abi::functions::LibnrtFunction;
use abi::trace::parse::{Args, Bytes, Call, Line, parse_bytes, parse_line, parse_name};
use abi::trace::{
    INLINE_BYTES, UNRECORDED_ARGS, call_line, completed_line, format_bytes, memory_line, name_text,
};
use proptest::prelude::*;

/// The bytes a written argument should read back as.
fn expected_bytes(bytes: &[u8]) -> Bytes {
    if bytes.len() <= INLINE_BYTES {
        Bytes::Inline(bytes.to_vec())
    } else {
        match parse_bytes(1, &format_bytes(bytes)) {
            Ok(digest @ Bytes::Digest { .. }) => digest,
            other => panic!("a long byte string is a digest, got {other:?}"),
        }
    }
}

fn function() -> impl Strategy<Value = LibnrtFunction> {
    proptest::sample::select(LibnrtFunction::ALL)
}

proptest! {
    /// A call with handle, number, name and byte arguments reads back as its parts.
    #[test]
    fn a_written_call_reads_back_as_its_function_arguments_and_result(
        function in function(),
        number in any::<i64>(),
        name in proptest::collection::vec(any::<u8>(), 0..24),
        bytes in proptest::collection::vec(any::<u8>(), 0..48),
        returned in proptest::option::of(1u32..1000),
    ) {
        let args = [format!("t{number}"), number.to_string(), name_text(&name), format_bytes(&bytes)];
        let result = returned.map(|n| format!("s{n} NRT_SUCCESS"));
        let text = call_line(function.trace_name(), &args.join(", "), result.as_deref());
        let line = parse_line(9, &text).expect("a written call reads");
        let Line::Call(call) = line else { panic!("not a call: {line:?}") };
        prop_assert_eq!(call.function, function);
        prop_assert_eq!(&call.args, &Args::Recorded(args.to_vec()));
        prop_assert_eq!(call.returned().map(str::to_owned), returned.map(|n| format!("s{n}")));
        prop_assert_eq!(&call.result, &result);
        prop_assert_eq!(parse_name(9, &args[2]).expect("a written name reads"), name);
        let read = parse_bytes(9, &args[3]).expect("written bytes read");
        prop_assert_eq!(read.to_string(), format_bytes(&bytes));
        prop_assert_eq!(read, expected_bytes(&bytes));
    }

    /// A call recorded by name only reads back as such.
    #[test]
    fn a_written_unrecorded_call_reads_back_without_arguments(function in function()) {
        let text = call_line(function.trace_name(), UNRECORDED_ARGS, Some("NRT_SUCCESS"));
        let expected = Line::Call(Call {
            function,
            args: Args::Unrecorded,
            result: Some("NRT_SUCCESS".to_owned()),
        });
        prop_assert_eq!(parse_line(1, &text), Ok(expected));
    }

    /// `# memory` and `# completed` lines read back as their values.
    #[test]
    fn written_memory_and_completed_lines_read_back(
        tensor in 1u32..10_000,
        offset in any::<usize>(),
        bytes in proptest::collection::vec(any::<u8>(), 0..48),
        seq in 1u32..10_000,
    ) {
        let tensor = format!("t{tensor}");
        let expected = Line::Memory { tensor: tensor.clone(), offset, bytes: expected_bytes(&bytes) };
        prop_assert_eq!(parse_line(1, &memory_line(&tensor, offset, &bytes)), Ok(expected));
        let seq = format!("q{seq}");
        prop_assert_eq!(parse_line(1, &completed_line(&seq)), Ok(Line::Completed { seq }));
    }

    /// Packed and spaced hex read back as the bytes written.
    #[test]
    fn written_hex_reads_back(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        prop_assert_eq!(abi::hex::parse_hex(&abi::hex::to_hex(&bytes)), Ok(bytes.clone()));
        prop_assert_eq!(abi::hex::parse_hex_spaced(&abi::hex::to_hex_spaced(&bytes)), Ok(bytes));
    }
}

#[test]
fn comment_and_header_lines_read_as_comments() {
    for text in ["# nrtsim-trace 1", "# limit by-name: calls written `name(…)`", "#"] {
        assert_eq!(parse_line(1, text), Ok(Line::Comment), "{text}");
    }
}

/// A small deterministic generator (xorshift64*), so the fuzz lines are the same every run.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Characters the grammar gives meaning to, plus non-ASCII ones.
const PIECES: &[&str] = &[
    "(",
    ")",
    "[",
    "]",
    "<",
    ">",
    "\"",
    "b\"",
    "\\",
    "\\x",
    "\\u{",
    "}",
    ",",
    " ",
    " -> ",
    "#",
    "# memory ",
    "# completed ",
    "…",
    "é",
    "ü",
    "\u{fdd0}",
    "0",
    "f",
    "g",
    "t1",
    " bytes sha256:",
    " bytes buffer>",
    "NRT_SUCCESS",
    "\n",
];

/// Valid lines of every kind, the seeds of the mutations.
fn seeds() -> Vec<String> {
    vec![
        call_line("tensor_allocate", "DEVICE, 0, 4096, \"input0\"", Some("t1 NRT_SUCCESS")),
        call_line("add_tensor_to_tensor_set", "s1, b\"i\\xff\", t1", Some("NRT_SUCCESS")),
        call_line(
            "tensor_write",
            &format!("t1, 0, {}", format_bytes(&[7; 40])),
            Some("NRT_SUCCESS"),
        ),
        call_line("tensor_read", "t3, 0, 4", Some("[00 00 80 3f] NRT_SUCCESS")),
        call_line("tensor_attach_buffer", "t1, <64 bytes buffer>", Some("NRT_SUCCESS")),
        call_line("init", "NO_FW, \"a\\u{1b}\", \"\"", Some("NRT_SUCCESS")),
        call_line("nrta_tensor_copy", UNRECORDED_ARGS, Some("NRT_SUCCESS")),
        call_line("close", "", None),
        memory_line("t2", 16, &[1, 2, 3]),
        memory_line("t2", 0, &[9; 33]),
        completed_line("q1"),
        "# nrtsim-trace 1".to_owned(),
    ]
}

/// Reads `text` with every reader; each must return, whatever the text.
fn read_everything(text: &str) {
    let _ = parse_line(1, text);
    let _ = parse_bytes(1, text);
    let _ = parse_name(1, text);
    let _ = abi::trace::parse::parse_buffer(1, text);
    let _ = abi::trace::parse::split_args(text);
    let _ = abi::hex::parse_hex(text);
    let _ = abi::hex::parse_hex_spaced(text);
}

#[test]
fn every_prefix_of_every_valid_line_reads_or_is_refused_without_panicking() {
    for seed in seeds() {
        for (end, _) in seed.char_indices().chain([(seed.len(), ' ')]) {
            read_everything(&seed[..end]);
        }
    }
}

#[test]
fn mutated_and_random_lines_read_or_are_refused_without_panicking() {
    let seeds = seeds();
    let mut random = XorShift(0x9e37_79b9_7f4a_7c15);
    for _ in 0..20_000 {
        let mut chars: Vec<String> =
            seeds[random.below(seeds.len())].chars().map(String::from).collect();
        for _ in 0..1 + random.below(4) {
            let at = random.below(chars.len() + 1);
            match random.below(3) {
                0 => chars.insert(at, PIECES[random.below(PIECES.len())].to_owned()),
                1 if at < chars.len() => {
                    chars.remove(at);
                }
                _ if at < chars.len() => chars[at] = PIECES[random.below(PIECES.len())].to_owned(),
                _ => {}
            }
        }
        read_everything(&chars.concat());
    }
    for _ in 0..5_000 {
        let length = random.below(24);
        let text: String =
            (0..length).map(|_| PIECES[random.below(PIECES.len())]).collect::<Vec<_>>().concat();
        read_everything(&text);
    }
}
