//! Fuzz target: device bundles, then `settle` of what they hold (a dry run) (the body is `nrtsim_hlo_fuzz::bundle`).
#![no_main]

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| nrtsim_hlo_fuzz::bundle(bytes));
