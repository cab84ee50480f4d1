//! Fuzz target: the `run --weights` reader against the `safetensors` crate (the body is `nrtsim_hlo_fuzz::safetensors`).
#![no_main]

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| nrtsim_hlo_fuzz::safetensors(bytes));
