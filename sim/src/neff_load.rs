//! From NEFF bytes to a [`ModelDescription`]: the one place the simulator touches `abi::neff`.
//!
//! The NEFF reader (`abi::neff`) is being written on another branch; until it is merged,
//! [`describe_neff`] refuses every NEFF with `NRT_INVALID` and says why, and models load through
//! [`crate::SimRuntime::load_description`].

use abi::runtime::NrtError;
use abi::status::NrtStatus;

use crate::model::ModelDescription;

/// Parses a NEFF as libnrt's loader does and describes it for the simulator.
///
/// # Errors
/// Until `abi::neff` is merged: always [`NrtStatus::Invalid`].
pub fn describe_neff(neff: &[u8]) -> Result<ModelDescription, NrtError> {
    Err(NrtError::new(
        NrtStatus::Invalid,
        format!(
            "cannot parse a neff of {} bytes: the neff reader (abi::neff) is not merged into this build yet",
            neff.len()
        ),
    ))
}
