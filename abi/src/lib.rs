//! The Neuron host↔device contract, as data and pure functions.
//!
//! A compiled model is two artifacts: a NEFF (the device program and its table of device
//! variables) and a metaneff (a small protobuf saying which host tensor fills which variable,
//! with what dtype and shape, and which outputs alias inputs). This crate describes both, plus the
//! tables that join them to the libnrt C API: dtypes and status codes.
//!
//! Design choices:
//! - **No IO, no threads and no `unsafe`.** Everything here takes bytes and returns values or
//!   typed errors, so every parser can be fuzzed and property-tested without a device or a file
//!   system. The binding layer, which runs threads, is the `bind` crate above this one.
//! - **The schema has one source of truth**, `proto/metaneff.proto`. The prost types in
//!   [`metaneff`] are generated from it by `cargo xtask codegen` with a pure-Rust protobuf
//!   compiler and committed; a test fails when they are stale.
//! - **Bytes are the interface.** Editing a metaneff ([`metaneff::edit`]) works on the wire form
//!   and keeps every byte it was not asked to change, unknown fields included, because the C++
//!   runtime keeps them too.
//! - **One table of libnrt functions** ([`functions`]): every layer that names a libnrt
//!   function (fault plans, traces, the typed calls of [`runtime::call`], the FFI symbol tables,
//!   the C exports, the headers' tests, the reference page) derives the list from it.
//! - **Public facts win over disassembly.** Where public sources contradict what was read from
//!   libtorchneuron's disassembly (status 1003, binding by name, `bytes` names, proto3 default
//!   omission), the code follows the public sources (`docs/abi-facts.md`) and the other reading is
//!   pinned by a test as a documented discrepancy (`docs/libtorchneuron.md`).
//! - **The contract builds alone.** The function table, the `Runtime` trait, traces, C layouts,
//!   statuses, dtypes and hex are always built and need three small crates (thiserror, half,
//!   sha2). The artifact codecs are default features that a backend can leave out: `metaneff`
//!   (the protobuf and the wire form beneath it: prost, prost-reflect, miette, serde_json) and
//!   `neff` (the container: flate2, tar, md-5, serde, serde_json, serde_path_to_error). `nrt` and
//!   the recorder build without either, so a program that loads libnrt links no codec.
#![forbid(unsafe_code)]

pub mod c_layout;
pub mod dtype;
pub mod functions;
pub mod hex;
#[cfg(feature = "metaneff")]
pub mod metaneff;
#[cfg(feature = "neff")]
pub mod neff;
pub mod runtime;
pub mod status;
pub mod trace;
#[cfg(feature = "metaneff")]
pub mod wire;
