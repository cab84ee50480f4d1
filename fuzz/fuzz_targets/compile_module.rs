//! Fuzz target: the compile target on any module; what it writes, the simulator loads (the body is `nrtsim_hlo_fuzz::compile_module`).
#![no_main]

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| nrtsim_hlo_fuzz::compile_module(bytes));
