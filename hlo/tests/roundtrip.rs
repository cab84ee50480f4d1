//! Property: for random modules, printing is a fixed point of parse-then-print, and parsing a
//! print gives the module the next parse gives; and the same for every HLO text of the test
//! corpora (`hlo/tests`, `vectors/`), each also without its `entry_computation_layout`, which
//! the parser then derives.

mod corpus;
mod support;

use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn print_parse_print_is_stable(seed in any::<u64>()) {
        let module = support::module(&mut support::Rng::new(seed));
        let first = hlo::text::print_module(&module).map_err(|e| TestCaseError::fail(format!("print: {e}")))?;
        let parsed = hlo::text::parse_module(&first).map_err(|e| TestCaseError::fail(format!("parse: {e}\n{first}")))?;
        let second = hlo::text::print_module(&parsed).map_err(|e| TestCaseError::fail(format!("print again: {e}")))?;
        prop_assert_eq!(&second, &first);
        let reparsed = hlo::text::parse_module(&second).map_err(|e| TestCaseError::fail(format!("parse again: {e}")))?;
        prop_assert!(hlo::encode_module(&reparsed) == hlo::encode_module(&parsed), "parse of the print differs");
        // The binary form carries everything the text does.
        let decoded = hlo::decode_module(&hlo::encode_module(&parsed)).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(hlo::text::print_module(&decoded).map_err(|e| TestCaseError::fail(e.to_string()))?, first);
    }

    /// Without `entry_computation_layout` the parser derives the entry layout from the entry
    /// computation; the derived layout must print and parse back as itself too.
    #[test]
    fn a_print_without_its_entry_layout_is_a_fixed_point(seed in any::<u64>()) {
        let module = support::module(&mut support::Rng::new(seed));
        let printed = hlo::text::print_module(&module).map_err(|e| TestCaseError::fail(format!("print: {e}")))?;
        fixed_point(&without_entry_layout(&printed)).map_err(TestCaseError::fail)?;
    }
}

/// Checks that `text`, if it parses, is a fixed point: its print parses, prints as itself, and
/// parses to the module `text` parsed to.
fn fixed_point(text: &str) -> Result<(), String> {
    let Ok(parsed) = hlo::text::parse_module(text) else { return Ok(()) };
    let printed = hlo::text::print_module(&parsed).map_err(|e| format!("print: {e}\n{text}"))?;
    let again = hlo::text::parse_module(&printed).map_err(|e| format!("parse: {e}\n{printed}"))?;
    let printed_again =
        hlo::text::print_module(&again).map_err(|e| format!("print again: {e}\n{printed}"))?;
    if printed_again != printed {
        return Err(format!("print is not a fixed point:\n{printed}\n---\n{printed_again}"));
    }
    if hlo::encode_module(&again) != hlo::encode_module(&parsed) {
        return Err(format!(
            "parsing the print gives another module:\n{:?}\n---\n{:?}",
            parsed.host_program_shape, again.host_program_shape
        ));
    }
    Ok(())
}

/// `text` with the header's `entry_computation_layout={...}` left out (braces matched).
fn without_entry_layout(text: &str) -> String {
    const KEY: &str = ", entry_computation_layout={";
    let Some(start) = text.find(KEY) else { return text.to_string() };
    let mut depth = 1;
    for (offset, c) in text[start + KEY.len()..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            _ => {}
        }
        if depth == 0 {
            let end = start + KEY.len() + offset + 1;
            return format!("{}{}", &text[..start], &text[end..]);
        }
    }
    text.to_string()
}

#[test]
fn every_corpus_text_is_a_fixed_point_with_and_without_its_entry_layout() {
    let mut files = corpus::files_under(&corpus::root().join("tests"), &[".hlo"]);
    files.extend(corpus::files_under(&corpus::root().join("../vectors"), &[".hlo"]));
    let mut texts = 0;
    for path in &files {
        let bytes = std::fs::read(path).expect("a corpus file reads");
        let Ok(text) = std::str::from_utf8(&bytes) else { continue };
        if !hlo::is_text(&bytes) || hlo::text::parse_module(text).is_err() {
            continue;
        }
        texts += 1;
        for variant in [text.to_string(), without_entry_layout(text)] {
            if let Err(why) = fixed_point(&variant) {
                panic!("{}: {why}", path.display());
            }
        }
    }
    assert!(texts >= 150, "only {texts} corpus texts parse");
}
