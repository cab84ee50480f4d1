//! Fuzz target: the conformance report reader, then merge, diff and JUnit of what it reads (the body is `nrtsim_hlo_fuzz::report_json`).
#![no_main]

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| nrtsim_hlo_fuzz::report_json(bytes));
