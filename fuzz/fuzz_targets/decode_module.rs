//! Fuzz target: binary `HloModuleProto` decoding, then validation and printing of what decodes.
#![no_main]

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| {
    if let Ok(module) = hlo::decode_module(bytes) {
        let _ = hlo::validate(&module);
        let _ = hlo::text::print_module(&module);
    }
});
