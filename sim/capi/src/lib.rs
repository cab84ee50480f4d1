//! The simulator behind libnrt's C ABI: this crate builds `libnrt.so.1`.
//!
//! Programs written for libnrt (C, C++, Python ctypes) run unchanged on a laptop against this
//! library, and the `nrt` backend, which opens libnrt at run time, is tested end to end by
//! pointing it here.
//!
//! Design choices:
//! - **The exact ABI.** Every function of docs/abi-facts.md §4 with its C signature, 4-byte enums, and
//!   the struct layouts checked at compile time (`nrt_tensor_info_t` 296 bytes, `nrt_version_t`
//!   224). The file has SONAME `libnrt.so.1` and its functions carry the ELF version
//!   `NRT_2.0.0`, so a binary linked against the real library resolves its symbols here
//!   (`symbols` explains how). `include/nrt/*.h` declares the same API for C users.
//! - **Every function of the public headers is exported**, one per entry of the function table
//!   (`abi::functions`); `symbols` checks each export's signature against the table at
//!   compile time. What a simulator cannot have (dma-buf fds, EFA, HBM mappings, microcode)
//!   returns `NRT_INVALID` and says why once under `NRTSIM_LOG=1`.
//! - **Handles are registry entries** (`handles`): numbers that encode the simulator's id and
//!   the kind, never addresses of Rust objects. A pointer this library did not hand out, one of
//!   the wrong kind, or one already released is `NRT_INVALID_HANDLE`; NULL is `NRT_INVALID`.
//!   Nothing a caller passes as a handle is dereferenced.
//! - **Raw memory crosses in five places only**: the NEFF bytes of `nrt_load`, the buffers of
//!   `nrt_tensor_read`/`write`, memory attached with `nrt_tensor_attach_buffer` (used in place,
//!   as libnrt does), the simulator's own storage exposed by `nrt_tensor_get_va`, and the arrays
//!   and structs this library fills for the caller. Each is an `unsafe` block with the C contract
//!   it relies on. Because `get_va` lets a caller pass pointers into simulator memory back to
//!   us, caller buffers are never made Rust slices: `read`/`write` stage the bytes and copy with
//!   `ptr::copy` (memmove), and attached buffers are reached the same way.
//! - **No panic crosses the boundary**: every body runs under `catch_unwind`; a panic is
//!   `NRT_FAILURE` (or NULL / 0 for functions without a status) and a line on stderr.
//! - **One simulator per process**, made on first use from environment variables (`config`),
//!   since a C caller cannot pass a Rust struct. libnrt's lifecycle applies: before `nrt_init`
//!   UNINITIALIZED, after `nrt_close` CLOSED. `nrt_init` after `nrt_close` starts the simulator
//!   again, as [`sim::SimRuntime`] allows: models are gone, tensors and sets stay; whether the
//!   real library allows it is not documented, so portable clients init once per process.
//! - **Validation is the simulator's.** This layer only turns C arguments into Rust values;
//!   the statuses are those [`sim::SimRuntime`] returns.

mod config;
mod exports;
mod ffi;
mod handles;
mod options;
mod symbols;

/// The raw status values this layer returns itself, named by the one status table.
mod status {
    use abi::status::NrtStatus;

    pub(crate) const SUCCESS: u32 = NrtStatus::Success.code();
    pub(crate) const FAILURE: u32 = NrtStatus::Failure.code();
    pub(crate) const INVALID: u32 = NrtStatus::Invalid.code();
    pub(crate) const INVALID_HANDLE: u32 = NrtStatus::InvalidHandle.code();
    pub(crate) const RESOURCE: u32 = NrtStatus::Resource.code();
}
