//! [`RuntimeProfile`]: the methods of `nrt/nrt_profile.h` (model profiles, continuous profiling and
//! inspect sessions). The option objects of the C API are Rust values here
//! ([`InspectConfig`], a folder path), so one method stands for a whole allocate–set–call–free
//! sequence.

use std::path::Path;

// Named by the doc links only.
use super::{InspectConfig, ModelId, NrtError, declare::runtime_trait};
#[cfg(doc)]
use crate::status::NrtStatus;

runtime_trait! {
    /// The functions of `nrt/nrt_profile.h`, one method per call sequence; see
    /// [`Runtime`](super::Runtime).
    pub trait RuntimeProfile {
        /// `nrt_profile_start`: records the launches of `model` until
        /// [`RuntimeProfile::profile_stop`]; `filename` is where the profile goes when the stop
        /// names none (`None`: NULL).
        ///
        /// # Errors
        /// An unknown model; [`NrtStatus::Invalid`] while a profile is recorded; the lifecycle
        /// statuses.
        fn profile_start(&self, model: ModelId, filename: Option<&Path>) -> Result<(), NrtError>
            => nrt_profile_start;

        /// `nrt_profile_stop`: writes the profile to `filename` (`None`: the name given at start).
        ///
        /// # Errors
        /// [`NrtStatus::Invalid`] without a model profile or without any file name; a file that
        /// cannot be written; the lifecycle statuses.
        fn profile_stop(&self, filename: Option<&Path>) -> Result<(), NrtError> => nrt_profile_stop;

        /// `nrt_profile_continuous_start` with NULL options: from now on the latest launch of each
        /// NeuronCore can be saved.
        ///
        /// # Errors
        /// [`NrtStatus::Invalid`] while a profile is recorded; the lifecycle statuses.
        fn profile_continuous_start(&self) -> Result<(), NrtError> => nrt_profile_continuous_start, by_hand;

        /// `nrt_profile_continuous_options_allocate`, `…_set_output_dir(output_dir)`,
        /// `nrt_profile_continuous_save(vnc, options)`, then `…_options_free`: saves the latest
        /// launch on `vnc` into `output_dir`.
        ///
        /// # Errors
        /// [`NrtStatus::Invalid`] without continuous profiling or a launch on `vnc`; the lifecycle
        /// statuses.
        fn profile_continuous_save(&self, vnc: u32, output_dir: &Path) -> Result<(), NrtError>
            => nrt_profile_continuous_save;

        /// `nrt_profile_continuous_stop`.
        ///
        /// # Errors
        /// [`NrtStatus::Invalid`] without continuous profiling; the lifecycle statuses.
        fn profile_continuous_stop(&self) -> Result<(), NrtError> => nrt_profile_continuous_stop;

        /// `nrt_inspect_config_allocate`, the setters `config` asks for,
        /// `nrt_inspect_begin_with_options`, then `nrt_inspect_config_free`.
        ///
        /// # Errors
        /// [`NrtStatus::Invalid`] while a profile is recorded; the lifecycle statuses.
        fn inspect_begin_with_options(&self, config: &InspectConfig) -> Result<(), NrtError>
            => nrt_inspect_begin_with_options;

        /// `nrt_inspect_stop`: writes what was recorded since the begin into the output folder.
        ///
        /// # Errors
        /// [`NrtStatus::Invalid`] without an inspect session; the lifecycle statuses.
        fn inspect_stop(&self) -> Result<(), NrtError> => nrt_inspect_stop;
    }
}
