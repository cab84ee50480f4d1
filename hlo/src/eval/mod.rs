//! temporary
#![allow(dead_code, missing_docs)]
pub(crate) mod elementwise;
pub(crate) mod shape_ops;
pub(crate) mod tensor;
#[derive(Debug)]
pub(crate) enum Fail { Internal(String), Alloc { bytes: u64 } }
