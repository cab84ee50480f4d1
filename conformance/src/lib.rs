//! Conformance vectors and their runner.
//!
//! The product's main job: shared vectors check that binding, aliasing and validation behave the
//! same on every backend. A vector is data (`vectors/<area>/<name>/case.toml` and the files beside
//! it, see [`vector`] and [`spec`]), or a promoted recording of a real program's calls
//! (`vectors/recorded/<name>/recording.trace`, replayed by [`replay`]); the runner is a library, so the command line
//! (`nrtsim conformance`, `cargo xtask conformance`) and the test harness
//! (`cli/tests/vectors.rs`, one named test per backend × vector) share it.
//!
//! A run produces the normalised trace of every runtime call and binding event, compares it
//! with the golden trace line by line, and checks the hand-written expectations. Per-backend
//! lists of known differences ([`expectations`]) keep the comparison honest: an unlisted failure
//! and a listed pass both fail.
#![forbid(unsafe_code)]

pub mod backend;
pub mod bless;
pub mod bundle;
pub mod device;
pub mod expectations;
#[cfg(feature = "generate")]
pub mod generate;
pub mod glob;
pub mod html;
pub mod judge;
pub mod output_file;
pub mod replay;
pub mod report;
pub mod review;
pub mod runner;
pub mod settle;
pub mod spec;
pub mod suite;
pub mod vector;
