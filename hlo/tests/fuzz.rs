//! The parsers' fuzz targets, run on stable as plain tests: random and mutated inputs to
//! `decode_module`, `text::parse_module`, `load_module` + `validate` and `print_module` must
//! never panic (errors are fine), and a binary module that validates and prints must print as
//! text that parses. The same bodies are the cargo-fuzz targets in `fuzz/`.
//!
//! `HLO_FUZZ_CASES` sets the number of cases per target (default 8000, so 24000 in all).

mod corpus;
mod support;

use std::fs;

use support::Rng;

fn cases() -> usize {
    std::env::var("HLO_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(8000)
}

/// Everything a fuzzer can reach from bytes, in one place; it must return, whatever the input.
fn exercise(bytes: &[u8]) {
    if let Ok(m) = hlo::decode_module(bytes) {
        // What validation accepts and prints, the parser must read back.
        if hlo::validate(&m).is_ok()
            && let Ok(printed) = hlo::text::print_module(&m)
            && let Err(e) = hlo::text::parse_module(&printed)
        {
            panic!("a validated module's print does not parse: {e}\n{printed}");
        }
    }
    if let Ok(src) = std::str::from_utf8(bytes)
        && let Ok(m) = hlo::text::parse_module(src)
    {
        let _ = hlo::validate(&m);
        let printed = hlo::text::print_module(&m).expect("a parsed module prints");
        let again = hlo::text::parse_module(&printed).expect("a printed module parses");
        assert_eq!(hlo::text::print_module(&again).unwrap(), printed, "print is not a fixed point");
        assert!(
            hlo::encode_module(&again) == hlo::encode_module(&m),
            "parsing the print gives another module:\n{printed}"
        );
    }
    if let Ok(m) = hlo::load_module(bytes) {
        let _ = hlo::validate(&m);
    }
}

fn seeds() -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let mut texts = Vec::new();
    let mut binaries = Vec::new();
    for case in corpus::cases("fixtures") {
        texts.extend(["module.hlo", "old.hlo"].map(|file| fs::read(case.file(file)).unwrap()));
        binaries.extend(["jax.pb", "xla.pb"].map(|file| fs::read(case.file(file)).unwrap()));
    }
    let mut rng = Rng::new(7);
    for _ in 0..32 {
        let m = support::module(&mut rng);
        texts.push(hlo::text::print_module(&m).unwrap().into_bytes());
        binaries.push(hlo::encode_module(&m));
    }
    (texts, binaries)
}

#[test]
fn mutated_text_never_panics() {
    let (texts, _) = seeds();
    let mut rng = Rng::new(1);
    for _ in 0..cases() {
        let seed = rng.pick(&texts).clone();
        exercise(&support::mutate(&mut rng, &seed));
    }
}

#[test]
fn mutated_binary_never_panics() {
    let (_, binaries) = seeds();
    let mut rng = Rng::new(2);
    for _ in 0..cases() {
        let seed = rng.pick(&binaries).clone();
        exercise(&support::mutate(&mut rng, &seed));
    }
}

#[test]
fn random_bytes_never_panic() {
    let mut rng = Rng::new(3);
    let alphabet = b"HloModule ENTRY ROOT f32[]{}(),=%x.1 parameter constant add -inf\n\"\\";
    for k in 0..cases() {
        let len = rng.below(200);
        let bytes: Vec<u8> = if k % 2 == 0 {
            (0..len).map(|_| rng.next() as u8).collect()
        } else {
            // Text-like bytes reach deeper into the parser than uniform noise.
            let mut v = b"HloModule m\nENTRY e {\n".to_vec();
            v.extend((0..len).map(|_| *rng.pick(alphabet)));
            v
        };
        exercise(&bytes);
    }
}
