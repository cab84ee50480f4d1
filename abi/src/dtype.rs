//! Element types across the host↔device boundary, and the byte sizes they imply.
//!
//! Six vocabularies name the element type of one tensor, and this module joins them:
//! - the metaneff [`DataType`] (declared here, not by the generated metaneff code, which refers
//!   to it, so the contract builds without prost; the only copy in the crate; the wire value is
//!   an `i32` that may be unknown, so every lookup has a `_raw` twin taking the `i32`);
//! - the torch [`ScalarType`] libtorchneuron allocates host tensors with, through its
//!   [`PROTO_AT_DTYPE_MAP`];
//! - the libnrt [`NrtDtype`] (`nrt_dtype_t`), whose numbering changed between runtime releases, so
//!   every code lookup takes a [`DtypeNumbering`];
//! - the neff.json [`Dltype`] strings the compiler writes;
//! - the XLA primitive type names ([`XlaPrimitiveType`]) producers map to metaneff types through
//!   their own tables ([`Producer`]);
//! - the `.npy` descrs ([`NpyType`]) that inputs and outputs are read and written with.
//!
//! Design choices:
//! - **Each table is declared once.** A small macro per vocabulary declares the enum and all of
//!   its columns in one row (code, name, size, mappings), so the columns cannot disagree; the
//!   metaneff map is one `const` array in key order that the lookups search.
//! - **Lookups that can miss say so.** A missing row is a [`DtypeError`] naming the value when the
//!   input came from outside (a wire `i32`, a string); a plain `Option` when the absence is a
//!   documented fact of the tables (there is no `nrt_dtype_t` for bool or float64).
//! - **Sizes never wrap.** [`n_bytes`] computes `item_size × Π shape` in `u64` with checked
//!   arithmetic; a negative dimension and an overflow are errors, a zero dimension makes the size
//!   zero even when the other dimensions would overflow, and an empty shape is a scalar.
//! - **Reverse directions are chosen, not guessed.** Where two keys collapse into one value
//!   (metaneff BYTE and UINT8 both give torch Byte), the reverse mapping picks the one producers
//!   write (UINT8) and the choice is documented where it is made.
//!
//! `PROTO_AT_DTYPE_MAP` is read from fifteen immediates in libtorchneuron's code, ending in
//! `0x10`: the first fourteen are the values in key order and the `0x10` is the key 16 itself
//! (`movl $0x10`), so UNDEFINED (0), STRING (4) and 11 have no entry (docs/abi-facts.md §2); a
//! test pins the fourteen immediates against [`PROTO_AT_DTYPE_MAP`].

mod data_type;
mod dltype;
mod element;
mod error;
mod lookup;
mod npy;
mod nrt_dtype;
mod producer;
mod scalar_type;
mod size;

pub use data_type::{DataType, UnknownDataType};
pub use dltype::Dltype;
pub use element::{
    bf16_bits_to_f32, decode_elements, encode_element, f16_bits_to_f32, f32_to_bf16_bits,
    f32_to_f16_bits,
};
pub use error::{DtypeError, describe_data_type};
pub use lookup::{
    dltype_of, dltype_of_raw, item_size_of, item_size_of_raw, nrt_dtype_of, nrt_dtype_of_raw,
    scalar_type_of, scalar_type_of_raw,
};
pub use npy::NpyType;
pub use nrt_dtype::{DtypeNumbering, NrtDtype};
pub use producer::{Producer, XlaPrimitiveType};
pub use scalar_type::{PROTO_AT_DTYPE_MAP, ScalarType};
pub use size::{n_bytes, n_bytes_of_raw, n_bytes_with_batch, n_bytes_with_item_size, n_elements};
