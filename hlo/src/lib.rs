//! XLA HLO, the simulator's device-program language.
//!
//! torch-neuronx lowers a model to an `HloModuleProto`, stores it in the metaneff's
//! `serialized_graph_def`, and hands the same module to `neuronx-cc`. This crate reads that module
//! (our own declaration of the subset of XLA's schema that we need, and XLA's text form), and
//! evaluates its entry computation over byte buffers, matching XLA on CPU.
//!
//! The crate is pure and safe: it does no IO, and everything it is given is untrusted input that
//! gets a typed error rather than a panic.
#![forbid(unsafe_code)]

pub mod dtype;
pub mod eval;
pub mod proto;

use prost::Message as _;

/// Why bytes are not an `HloModuleProto`.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// Zero bytes: a valid encoding of the empty message, but never a module anyone wrote.
    #[error("expected an encoded HloModuleProto, got 0 bytes")]
    Empty,
    /// The protobuf wire form is malformed or does not match the schema.
    #[error("malformed HloModuleProto ({len} bytes): {source}")]
    Malformed {
        /// The length of the input.
        len: usize,
        /// prost's description, which names the field where decoding failed.
        source: prost::DecodeError,
    },
}

/// Decodes a binary (protobuf wire form) `HloModuleProto`, as XLA's
/// `HloModuleProto::SerializeAsString` writes it.
///
/// Fields this crate does not declare are skipped. Nothing is checked beyond the wire form: use
/// [`validate`] for the structure (ids, the entry computation, cycles).
///
/// # Errors
/// [`DecodeError::Empty`] for no bytes, [`DecodeError::Malformed`] for anything prost cannot
/// decode (truncated input, wrong wire types, invalid UTF-8 in a string, nesting deeper than
/// prost's recursion limit).
pub fn decode_module(bytes: &[u8]) -> Result<proto::HloModuleProto, DecodeError> {
    if bytes.is_empty() {
        return Err(DecodeError::Empty);
    }
    proto::HloModuleProto::decode(bytes)
        .map_err(|source| DecodeError::Malformed { len: bytes.len(), source })
}

/// Encodes a module to the protobuf wire form (the inverse of [`decode_module`]).
pub fn encode_module(module: &proto::HloModuleProto) -> Vec<u8> {
    module.encode_to_vec()
}

pub mod text;

mod limits;
mod load;
mod opcodes;
mod validate;

pub use eval::carries_nki_program;
pub use load::{
    DEFAULT_MAX_COMPUTATIONS, DEFAULT_MAX_INSTRUCTIONS, LoadError, LoadLimits, is_text,
    load_module, load_module_with_limits,
};
pub use validate::{ValidateError, validate};
