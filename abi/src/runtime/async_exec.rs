//! [`RuntimeAsync`]: the methods of `nrt/nrt_async.h` (`nrta_*`: error trackers, scheduled
//! tensor copies and launches, completion).
//!
//! The async API's memory is the backend's: a write takes the bytes and a read delivers into an
//! [`AsyncReadBuffer`] once the request has completed.

use std::os::fd::OwnedFd;
use std::sync::Arc;

use super::{
    AsyncReadBuffer, ModelId, NrtError, SeqId, SetId, TensorId, TrackerId, declare::runtime_trait,
};
use crate::status::NrtStatus;
use crate::trace::format::Untraced;

runtime_trait! {
    /// The functions of `nrt/nrt_async.h`, one method each; see [`Runtime`](super::Runtime).
    pub trait RuntimeAsync {
        /// `nrta_error_tracker_create`: a tracker for the failed requests of NeuronCore `lnc`.
        ///
        /// # Errors
        /// [`NrtStatus::Invalid`] for a NeuronCore that does not exist; the lifecycle statuses.
        fn nrta_error_tracker_create(&self, lnc: u32) -> Result<TrackerId, NrtError>
            => nrta_error_tracker_create;

        /// `nrta_error_tracker_destroy`. A release, like C's `void`.
        ///
        /// # Errors
        /// [`NrtStatus::InvalidHandle`] for an unknown tracker (the C function ignores it).
        fn nrta_error_tracker_destroy(&self, tracker: TrackerId) -> Result<(), NrtError>
            => nrta_error_tracker_destroy;

        /// `nrta_error_tracker_get_list`: the failed requests so far, in completion order.
        ///
        /// # Errors
        /// [`NrtStatus::InvalidHandle`] for an unknown tracker.
        fn nrta_error_tracker_get_list(
            &self,
            tracker: TrackerId,
        ) -> Result<Vec<(SeqId, NrtStatus)>, NrtError> => nrta_error_tracker_get_list;

        /// `nrta_tensor_write`: schedules a copy of `bytes` into the tensor from `offset`; the
        /// backend keeps the bytes until the request completes.
        ///
        /// # Errors
        /// [`NrtStatus::InvalidHandle`] for an unknown tensor or tracker, [`NrtStatus::Invalid`]
        /// for a bad queue; a failure of the copy itself goes to the tracker.
        fn nrta_tensor_write(
            &self,
            tensor: TensorId,
            offset: u64,
            bytes: &[u8],
            queue: i32,
            tracker: Option<TrackerId>,
        ) -> Result<SeqId, NrtError> => nrta_tensor_write;

        /// `nrta_tensor_read`: schedules a read of `size` bytes from `offset`; `into` holds them
        /// once the request has completed (and stays empty if it failed).
        ///
        /// # Errors
        /// As [`RuntimeAsync::nrta_tensor_write`].
        fn nrta_tensor_read(
            &self,
            tensor: TensorId,
            offset: u64,
            size: u64,
            queue: i32,
            tracker: Option<TrackerId>,
            into: Arc<AsyncReadBuffer> as Untraced,
        ) -> Result<SeqId, NrtError> => nrta_tensor_read;

        /// `nrta_execute_schedule`: schedules `nrt_execute` on the model's compute queue.
        ///
        /// # Errors
        /// [`NrtStatus::InvalidHandle`] for an unknown model, set or tracker,
        /// [`NrtStatus::Invalid`] for a queue other than 0; a failed launch goes to the tracker.
        fn nrta_execute_schedule(
            &self,
            model: ModelId,
            input_set: SetId,
            output_set: SetId,
            queue: i32,
            tracker: Option<TrackerId>,
        ) -> Result<SeqId, NrtError> => nrta_execute_schedule;

        /// `nrta_is_completed`.
        ///
        /// # Errors
        /// [`NrtStatus::Invalid`] for a sequence id never issued.
        // A caller polls it a number of times that depends on timing; a caller that waits records
        // the outcome itself.
        fn nrta_is_completed(&self, seq: SeqId) -> Result<bool, NrtError> => nrta_is_completed, untraced;

        /// `nrta_get_completion_handle`: a descriptor that becomes readable when request `seq`
        /// has completed (use it with `poll` only); dropping it closes it, as the header asks.
        ///
        /// # Errors
        /// [`NrtStatus::Invalid`] for a sequence id never issued; the lifecycle statuses.
        fn nrta_get_completion_handle(&self, seq: SeqId) -> Result<OwnedFd, NrtError>
            => nrta_get_completion_handle;
    }
}
