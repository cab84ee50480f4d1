//! HLO text, the form XLA prints with `HloModule::ToString` / jax's `as_hlo_text()`.
//!
//! [`parse_module`] reads what XLA prints, old style (`%name`, typed operands
//! `f32[4]{0} %x`, computation signatures `%c (a: f32[]) -> f32[]`) and new style (bare names,
//! untyped operands, `name {`). [`print_module`] writes the new style, which XLA's parser reads
//! too. Parse and print are each other's inverse on what they produce: for any module `m` that
//! prints, `parse(print(m))` prints as `print(m)`; and a parsed module is reproduced exactly by
//! parsing its print.
//!
//! Choices worth knowing:
//! - Ids are assigned as XLA's own parser assigns them: computations are numbered from 0 in text
//!   order and instruction `i` of computation `c` gets id `c << 32 | i`. The text's own ids (the
//!   `.N` suffixes) are only names.
//! - Names are scoped to their computation; an operand may be defined later in the text than its
//!   user (the order is kept, and [`crate::validate`] rejects a cycle). In the module, as in
//!   XLA's, instruction names are one namespace (XLA's proto reader refuses a name used twice):
//!   the parser renames as XLA's parser does, a repeated `x` becoming `x.1`
//!   (`names::InstructionNames`), and the printer writes the names the parser will give.
//! - An unknown opcode is a parse error naming it, since attributes are read according to the
//!   opcode. An unknown attribute is skipped (XLA adds them every release), as are `sharding`
//!   and the header's `is_scheduled`, `num_partitions`, etc.; `backend_config` is kept as bytes,
//!   whether quoted or raw JSON in braces, and printed quoted.
//! - The parser fills in what XLA's parser fills in (the default comparison type of `compare`,
//!   all-DEFAULT operand precisions of `dot` and `convolution`, group counts of 1, one dynamic
//!   flag per dimension, `p0, p1, ...` in the entry layout), and the printer leaves those out, as
//!   XLA's does; and, when the text has no `entry_computation_layout`, the module's host program
//!   shape, derived from the entry computation as XLA's parser derives it (XLA's readers refuse a
//!   proto without one), which the printer then writes as the entry layout; `tests/text_xla.rs` holds both to XLA's output.
//! - Constants elided by XLA's printer (`constant({...})`) are an error: their values are lost.
//! - Literal values are written in logical (row-major index) order and stored in the proto in the
//!   physical order of the literal's layout, as XLA stores them.
//! - Floats are written as XLA writes them (C's `%g` with the digits the type needs); one
//!   deliberate difference in reading: XLA's lexer takes `-0` for the integer 0 and so loses the
//!   sign of a negative-zero constant, which we keep. (XLA also reads the smallest f8e8m0fnu,
//!   2^-127, printed as `5.9e-39`, back as 2^-126; we read it back as 2^-127.)
//! - Constants of every element type are read and written, sub-byte ones (s1..s4, u1..u4,
//!   f4e2m1fn) one element per byte, masked to their width, as XLA stores them.

mod error;
mod float;
mod literal;
mod names;
mod parse;
mod print;

pub use error::{PrintError, TextError};
pub(crate) use literal::element_count;
pub use parse::parse_module;
pub(crate) use parse::{COMPARISON_TYPES, DIRECTIONS};
pub(crate) use parse::{Stop, parse_module_within};
pub use print::{PrintOptions, print_module, print_module_with};

/// A shape as the text writes it (`f32[2,3]{1,0}`), or its element type's number when the text
/// has no name for it.
pub(crate) fn shape_text(shape: &crate::proto::ShapeProto) -> String {
    let mut out = String::new();
    match print::shape(&mut out, shape) {
        Ok(()) => out,
        Err(_) => format!("a shape of element type {}", shape.element_type),
    }
}
