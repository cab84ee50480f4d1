//! Fuzz target: binary `HloModuleProto` decoding, then validation and printing of what decodes;
//! what validation accepts and prints, the parser must read back.
#![no_main]

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| {
    if let Ok(module) = hlo::decode_module(bytes) {
        let valid = hlo::validate(&module).is_ok();
        if let Ok(printed) = hlo::text::print_module(&module)
            && valid
        {
            hlo::text::parse_module(&printed).expect("a validated module's print parses");
        }
    }
});
