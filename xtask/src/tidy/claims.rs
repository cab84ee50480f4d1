//! ARCHITECTURE.md's claims about where input and output happen and which way a crate's modules
//! depend on each other, checked over the product's own code (test code excluded):
//! - `abi` does no IO and spawns no thread: it names no file, socket, process, environment
//!   variable or thread;
//! - a product crate reads a file (`fs::read`, `fs::read_to_string`, `File::open`) only in the
//!   files listed in [`RAW_READS`], each with the reason it may: every other input goes through
//!   `sim::capped::read_capped`, so a new direct read is a tidy failure until it is capped or
//!   listed here with its reason;
//! - conformance's modules depend one way, judge → backend → runner: `runner` names neither
//!   `judge` nor `backend`, and `backend` does not name `judge`;
//! - a function another crate can call (`pub fn`) fails with a typed error, never a bare
//!   `String`.

/// The product's crates (their `src` folders are checked).
const PRODUCT: [&str; 12] = [
    "abi/",
    "bind/",
    "check/",
    "cli/",
    "conformance/",
    "hlo/",
    "nki/",
    "nrt/",
    "nrt/record/",
    "sim/",
    "sim/capi/",
    "sim/compile/",
];

/// What `abi` must not name outside its tests. Built with `concat!` so this file does not match
/// itself.
const ABI_IO: [&str; 7] = [
    concat!("std::", "fs"),
    concat!("std::", "net"),
    concat!("std::", "process"),
    concat!("File", "::"),
    concat!("env::", "var"),
    concat!("thread::", "spawn"),
    concat!("thread::", "Builder"),
];

/// Direct file reads. Built with `concat!` so this file does not match itself.
const READS: [&str; 3] =
    [concat!("fs::read", "("), concat!("fs::read_to", "_string("), concat!("File::", "open(")];

/// The files of the product that read files directly, and why each may.
pub(super) const RAW_READS: [(&str, &str); 14] = [
    ("sim/src/capped.rs", "the capped reader itself"),
    ("cli/src/input.rs", "the `.npy` opener reads a header and leaves the data to be streamed"),
    ("cli/src/run.rs", "streams an opened `.npy` input's data into its tensor in chunks"),
    ("cli/src/record.rs", "counts the lines of the trace a run wrote, streaming"),
    ("hlo/src/eval/par.rs", "the kernel's `/proc` and `/sys` files: the load and the CPUs"),
    ("nrt/record/src/sink.rs", "the instance type from `/sys`"),
    ("conformance/src/report.rs", "the instance type from `/sys`"),
    ("conformance/src/device.rs", "a device NEFF and manifest that `compile` wrote, and `/sys`"),
    ("conformance/src/vector.rs", "a vector's own files, which `bless` writes"),
    ("conformance/src/bless.rs", "a vector's golden trace, compared before it is rewritten"),
    ("conformance/src/review.rs", "a vector's generated files, compared before a rewrite"),
    ("conformance/src/expectations.rs", "a backend's reviewed list of known failures"),
    ("conformance/src/settle.rs", "a vector's `case.toml`, which `settle` edits"),
    ("conformance/src/runner/profile.rs", "the profile files the runtime under test wrote"),
];

/// The broken claims of one Rust file (`relative` to the workspace root); none outside the
/// product's `src` folders.
pub(super) fn check_file(relative: &str, text: &str) -> Vec<String> {
    let in_product = PRODUCT.iter().any(|krate| relative.starts_with(&format!("{krate}src/")));
    let Some(code) = production_code(relative, text).filter(|_| in_product) else {
        return Vec::new();
    };
    let mut problems = string_errors(relative, code);
    let lines =
        code.lines().enumerate().map(|(n, line)| (n + 1, line.split("//").next().unwrap_or("")));
    for (number, line) in lines {
        if relative.starts_with("abi/") {
            if let Some(word) = ABI_IO.iter().find(|word| line.contains(*word)) {
                problems.push(format!(
                    "{relative}:{number}: `abi` does no IO, but this names `{word}`"
                ));
            }
        }
        if let Some(read) = READS.iter().find(|read| line.contains(*read)) {
            if !RAW_READS.iter().any(|(file, _)| *file == relative) {
                problems.push(format!(
                    "{relative}:{number}: reads a file directly (`{read}`); read inputs with \
                     `sim::capped::read_capped`, or list this file with its reason in \
                     xtask/src/tidy/claims.rs"
                ));
            }
        }
        let names = |module: &str| {
            [
                format!("crate::{module}"),
                format!("super::{module}"),
                format!("super::super::{module}"),
            ]
            .iter()
            .any(|path| line.contains(path.as_str()))
        };
        let layer = if relative.starts_with("conformance/src/runner") {
            Some(("runner", &["judge", "backend"][..]))
        } else if relative == "conformance/src/backend.rs" {
            Some(("backend", &["judge"][..]))
        } else {
            None
        };
        if let Some((from, above)) = layer {
            for module in above.iter().filter(|module| names(module)) {
                problems.push(format!(
                    "{relative}:{number}: conformance depends judge → backend → runner, but \
                     `{from}` names `{module}`"
                ));
            }
        }
    }
    problems
}

/// The `pub fn`s of `code` whose error type is a bare `String`.
fn string_errors(relative: &str, code: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("pub fn ") {
        let start = code.len() - rest.len() + at;
        let signature = &code[start..];
        let end = signature.find(['{', ';']).unwrap_or(signature.len());
        let compact: String =
            signature[..end].split("where").next().unwrap_or("").split_whitespace().collect();
        if compact.contains("->Result<") && compact.ends_with(",String>") {
            let number = code[..start].lines().count() + 1;
            problems.push(format!(
                "{relative}:{number}: a `pub fn` fails with a bare `String`; give it a typed error"
            ));
        }
        rest = &rest[at + "pub fn ".len()..];
    }
    problems
}

/// The part of a source file that is not test code: none for a test file, else the text
/// before its first `#[cfg(test)]` (test modules close the files that have them).
fn production_code<'a>(relative: &str, text: &'a str) -> Option<&'a str> {
    let test_file = relative.ends_with("/tests.rs")
        || relative.contains("/tests/")
        || relative.contains("/benches/")
        || relative.contains("/examples/");
    if test_file {
        return None;
    }
    Some(text.split("#[cfg(test)]").next().unwrap_or(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each claim's check fails on code that breaks it, and only there.
    #[test]
    fn each_claim_fails_on_code_that_breaks_it() {
        let read = concat!("let text = std::fs::read_to", "_string(path)?;");
        let io = concat!("use std::", "fs;\nstd::thread::", "spawn(|| ());");
        let cases: [(&str, String, usize); 8] = [
            ("abi/src/wire.rs", io.to_owned(), 2),
            ("abi/src/wire.rs", format!("#[cfg(test)]\nmod tests {{ {io} }}"), 0),
            ("abi/src/metaneff/view/tests.rs", io.to_owned(), 0),
            ("cli/src/new_command.rs", read.to_owned(), 1),
            ("sim/src/capped.rs", read.to_owned(), 0),
            ("conformance/src/runner/tensors.rs", "use crate::judge::Verdict;".to_owned(), 1),
            ("conformance/src/backend.rs", "use crate::runner::run;".to_owned(), 0),
            ("conformance/src/backend.rs", "super::judge::judge(v)".to_owned(), 1),
        ];
        for (relative, text, expected) in cases {
            let problems = check_file(relative, &text);
            assert_eq!(problems.len(), expected, "{relative}: {text}\n{problems:#?}");
        }
        let string_error = "pub fn parse(\n    text: &str,\n) -> Result<Vec<u8>, String> {\n}\n";
        let problems = check_file("sim/src/new.rs", string_error);
        assert_eq!(problems.len(), 1, "{problems:#?}");
        assert!(problems[0].starts_with("sim/src/new.rs:1: a `pub fn` fails with a bare `String`"));
        for fine in [
            "pub(crate) fn parse(text: &str) -> Result<u8, String> {}",
            "pub fn parse(text: &str) -> Result<String, ParseError> {}",
            "fn parse(text: &str) -> Result<u8, String> {}",
        ] {
            assert!(check_file("sim/src/new.rs", fine).is_empty(), "{fine}");
        }
        let problems = check_file("cli/src/new_command.rs", read);
        assert!(problems[0].starts_with("cli/src/new_command.rs:1: reads a file directly"));
    }

    /// Every file the list allows exists and still reads a file, so the list cannot outlive its
    /// reasons.
    #[test]
    fn every_listed_raw_read_is_still_there() {
        let root = crate::workspace_root();
        for (file, _) in RAW_READS {
            let text = std::fs::read_to_string(root.join(file)).unwrap();
            let code = production_code(file, &text).unwrap();
            assert!(READS.iter().any(|read| code.contains(read)), "{file} no longer reads a file");
        }
    }
}
