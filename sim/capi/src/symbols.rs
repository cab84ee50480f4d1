//! The exported symbols, derived from the one function table.
//!
//! For every function of `abi::for_each_libnrt_function!` this module
//! - checks at compile time that [`crate::exports`] defines it with the table's exact signature
//!   (a missing or mistyped export is a build error, not a missing symbol at a client's link);
//! - defines the C symbol itself as a one-instruction trampoline (a tail jump) to that Rust
//!   function, with `abi::c_trampoline!` (whose documentation says why a trampoline); the
//!   library's `libnrt.map` versions the symbols `NRT_2.0.0` and makes everything else local.

#![allow(non_camel_case_types, unused_imports)]

/// The C type names of the table as this library spells them: handles are `void` (they are
/// registry numbers, never dereferenced), the rest the defaults of `abi::c_layout::c_types`.
mod c_names {
    pub(super) use abi::c_layout::c_types::*;
    pub(super) use std::ffi::c_void;

    pub(super) type nrt_model_t = c_void;
    pub(super) type nrt_tensor_t = c_void;
    pub(super) type nrt_cc_context_t = c_void;
    pub(super) type nrta_error_tracker_t = c_void;
    pub(super) type nrt_sys_trace_config_t = c_void;
    pub(super) type nrt_sys_trace_fetch_options_t = c_void;
    pub(super) type nrt_profile_continuous_options_t = c_void;
    pub(super) type nrt_inspect_config_t = c_void;
    pub(super) type nrt_async_sendrecv_comm_t = c_void;
    pub(super) type nrt_async_sendrecv_request_t = c_void;
    pub(super) type nrt_tensor_info_array_t = abi::c_layout::NrtTensorInfoC;
}

use c_names::*;

macro_rules! export_functions {
    ($(
        $name:ident = $header:ident [$pre:ident, $fault:ident, $avail:ident]
            fn($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)?;
    )*) => {$(
        const _: unsafe extern "C" fn($($ty),*) $(-> $ret)? = crate::exports::$name;
        abi::c_trampoline!($name => crate::exports::$name);
    )*};
}

abi::for_each_libnrt_function!(export_functions);

/// The trampolines of nrtsim's own binding-layer API (`include/nrtsim/bind.h`), versioned
/// `NRTSIM_BIND_1` by `libnrt.map`, for the reason `abi::c_trampoline!` gives: an unversioned
/// `#[no_mangle]` export is at the mercy of how each linker merges rustc's version script with
/// ours (zig's linker, which the wheels use, made them local).
macro_rules! export_bind {
    ($($name:ident),* $(,)?) => {$(
        abi::c_trampoline!($name => crate::exports::bind::$name);
    )*};
}

export_bind!(
    nrtsim_bind_backend,
    nrtsim_bind_last_error,
    nrtsim_bind_model_new,
    nrtsim_bind_spmd_model_new,
    nrtsim_bind_model_free,
    nrtsim_bind_model_action,
    nrtsim_bind_model_set_flag,
    nrtsim_bind_model_set_dynamic_batching_mixed,
    nrtsim_bind_model_set_neuron_devices,
    nrtsim_bind_model_load_collectives,
    nrtsim_bind_model_instance_count,
    nrtsim_bind_model_bytes,
    nrtsim_bind_forward,
    nrtsim_bind_forward_into,
    nrtsim_bind_spmd_initialize,
    nrtsim_bind_result_size,
    nrtsim_bind_result_output,
    nrtsim_bind_result_copy,
    nrtsim_bind_result_updated_count,
    nrtsim_bind_result_updated_position,
    nrtsim_bind_result_copy_updated,
    nrtsim_bind_result_free,
);
