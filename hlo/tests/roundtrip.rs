//! Property: for random modules, printing is a fixed point of parse-then-print, and parsing a
//! print gives the module the next parse gives.

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
}
