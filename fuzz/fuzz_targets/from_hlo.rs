//! Fuzz target: `metaneff from-hlo` on any module; what it writes decodes (the body is `nrtsim_hlo_fuzz::from_hlo`).
#![no_main]

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| nrtsim_hlo_fuzz::from_hlo(bytes));
