//! The metaneff protobuf: types, descriptor, text format and lossless edits.

#[rustfmt::skip]
#[allow(missing_docs, unreachable_pub, clippy::all, clippy::pedantic)]
mod generated;

pub use generated::*;

/// The encoded `FileDescriptorSet` of `abi/proto/metaneff.proto`, for reflection.
pub const DESCRIPTOR_SET: &[u8] = include_bytes!("metaneff.fds.bin");
