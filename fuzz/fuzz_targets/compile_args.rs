//! Fuzz target: neuronx-cc's command line, NUL-separated arguments (the body is `nrtsim_hlo_fuzz::compile_args`).
#![no_main]

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| nrtsim_hlo_fuzz::compile_args(bytes));
