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
