//! Fuzz target: `load_module` (either form, sniffed) followed by structural validation.
#![no_main]

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| {
    if let Ok(module) = hlo::load_module(bytes) {
        let _ = hlo::validate(&module);
    }
});
