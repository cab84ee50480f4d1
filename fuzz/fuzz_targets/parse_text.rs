//! Fuzz target: HLO text parsing; whatever parses must print, the print must be a fixed point,
//! and parsing the print must give back the same module.
#![no_main]

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| {
    let Ok(src) = std::str::from_utf8(bytes) else { return };
    if let Ok(module) = hlo::text::parse_module(src) {
        let printed = hlo::text::print_module(&module).expect("a parsed module prints");
        let again = hlo::text::parse_module(&printed).expect("a printed module parses");
        assert_eq!(hlo::text::print_module(&again).expect("prints again"), printed);
        assert!(
            hlo::encode_module(&again) == hlo::encode_module(&module),
            "parsing the print gives another module"
        );
    }
});
