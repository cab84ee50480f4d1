//! [`RuntimeExperimental`]: the methods of `nrt/nrt_experimental.h` (model introspection, the
//! direct device copy, the in-process collectives, draining the async queues, the legacy trace).
//!
//! Collectives over the ranks of one process: `vnc` is the rank's NeuronCore, `rank` its global
//! rank (`g_device_id`), `world` the global count of ranks (`g_device_count`).

use std::path::Path;

// Named by the doc links only.
use super::{ModelId, NrtError, TensorInfo, declare::runtime_trait};
#[cfg(doc)]
use crate::status::NrtStatus;
use crate::trace::format::Opaque;

runtime_trait! {
    /// The functions of `nrt/nrt_experimental.h`, one method each; see [`Runtime`](super::Runtime).
    pub trait RuntimeExperimental {
        /// `nrt_get_model_tensor_info`: the model's inputs, then its outputs. Dropping the `Vec` is
        /// `nrt_free_model_tensor_info`.
        ///
        /// # Errors
        /// [`NrtStatus::InvalidHandle`] for an unknown model.
        fn get_model_tensor_info(&self, model: ModelId) -> Result<Vec<TensorInfo>, NrtError>
            => nrt_get_model_tensor_info;

        /// `nrt_get_model_instance_count`: how many threads may usefully call `nrt_execute` on the
        /// model at once.
        ///
        /// # Errors
        /// As [`RuntimeNrt::get_model_nc_count`](super::RuntimeNrt::get_model_nc_count).
        fn get_model_instance_count(&self, model: ModelId) -> Result<u32, NrtError>
            => nrt_get_model_instance_count;

        /// `nrt_memcpy_to_device`: copies `bytes` to the device memory at `address` (inside a
        /// device tensor, an address from
        /// [`RuntimeNrt::tensor_get_va`](super::RuntimeNrt::tensor_get_va)).
        ///
        /// # Errors
        /// An address range that is not device memory; the lifecycle statuses; a library without
        /// the function.
        // The address differs between backends by nature.
        fn memcpy_to_device(
            &self,
            address: usize as Opaque("<address>"),
            bytes: &[u8],
        ) -> Result<(), NrtError> => nrt_memcpy_to_device;

        /// `nrt_get_model_info`: the NeuronCore a loaded model starts on (`nrt_model_info_t`'s
        /// `vnc`).
        ///
        /// # Errors
        /// An unknown model; the lifecycle statuses; a library without the function.
        fn get_model_info(&self, model: ModelId) -> Result<u32, NrtError> => nrt_get_model_info;

        /// `nrt_async_drain_queued_execs`: blocks until every request scheduled on `vnc` has
        /// completed.
        ///
        /// # Errors
        /// [`NrtStatus::Invalid`] for a NeuronCore that does not exist; the lifecycle statuses.
        fn nrt_async_drain_queued_execs(&self, vnc: i32) -> Result<(), NrtError>
            => nrt_async_drain_queued_execs;

        /// `nrt_barrier`: returns once every rank of the world has called it in this round.
        ///
        /// # Errors
        /// As [`RuntimeNrt::build_global_comm`](super::RuntimeNrt::build_global_comm);
        /// [`NrtStatus::Timeout`] when a peer does not come.
        fn barrier(&self, vnc: i32, rank: u32, world: u32) -> Result<(), NrtError> => nrt_barrier;

        /// `nrt_all_gather`: every rank's `input`, concatenated in rank order (`world ×
        /// input.len()` bytes), once every rank has brought its own.
        ///
        /// # Errors
        /// As [`RuntimeExperimental::barrier`]; [`NrtStatus::Invalid`] when the ranks' sizes
        /// differ.
        fn all_gather(
            &self,
            vnc: i32,
            rank: u32,
            world: u32,
            input: &[u8],
        ) -> Result<Vec<u8>, NrtError> => nrt_all_gather;

        /// `nrt_trace_start`: the legacy trace of every NeuronCore, with memory allocations when
        /// `trace_mem`.
        ///
        /// # Errors
        /// [`NrtStatus::Invalid`] while a trace or profile is recorded; the lifecycle statuses.
        fn trace_start(&self, trace_mem: bool) -> Result<(), NrtError> => nrt_trace_start;

        /// `nrt_trace_stop`: writes the legacy trace to `filename` (`None`: NULL) and ends it.
        ///
        /// # Errors
        /// [`NrtStatus::Invalid`] without a trace started or without a file name; a file that
        /// cannot be written; the lifecycle statuses.
        fn trace_stop(&self, filename: Option<&Path>) -> Result<(), NrtError> => nrt_trace_stop;
    }
}
