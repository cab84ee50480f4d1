//! Fuzz target: the metaneff view and `Decoded` against prost's decode (the body is `nrtsim_hlo_fuzz::metaneff_view`).
#![no_main]

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| nrtsim_hlo_fuzz::metaneff_view(bytes));
