//! Conformance vectors and their runner.
//!
//! This crate hosts the `nrtsim` command-line tool; the vector runner arrives with the
//! conformance issue.
#![forbid(unsafe_code)]
