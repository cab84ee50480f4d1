//! The calls of `nrt/nrt_async.h` on [`NrtRuntime`], through the loaded library.

use std::sync::Arc;

use abi::functions::LibnrtFunction;
use abi::runtime::{
    AsyncReadBuffer, ModelId, NrtError, RuntimeAsync, SeqId, SetId, TensorId, TrackerId,
};
use abi::status::NrtStatus;

use super::{NrtRuntime, host_block, lock, optional, unknown_tracker};
use crate::status_of;
use crate::sys;

impl RuntimeAsync for NrtRuntime {
    fn nrta_error_tracker_create(&self, lnc: u32) -> Result<TrackerId, NrtError> {
        let function = LibnrtFunction::nrta_error_tracker_create;
        let tracker = optional(function, sys::OwnedTracker::create(&self.library, lnc))?;
        let id = TrackerId(self.next_id());
        lock(&self.trackers).insert(id, Arc::new(tracker));
        Ok(id)
    }

    fn nrta_error_tracker_destroy(&self, tracker: TrackerId) -> Result<(), NrtError> {
        // The tracker is destroyed when the last request naming it is released.
        lock(&self.trackers).remove(&tracker).map(drop).ok_or_else(|| unknown_tracker(tracker))
    }

    fn nrta_error_tracker_get_list(
        &self,
        tracker: TrackerId,
    ) -> Result<Vec<(SeqId, NrtStatus)>, NrtError> {
        let function = LibnrtFunction::nrta_error_tracker_get_list;
        let errors = optional(function, self.tracker(tracker)?.errors())?;
        Ok(errors
            .into_iter()
            .map(|(seq, code)| (SeqId(seq), status_of(u32::try_from(code).unwrap_or(u32::MAX))))
            .collect())
    }

    fn nrta_tensor_write(
        &self,
        tensor: TensorId,
        offset: u64,
        bytes: &[u8],
        queue: i32,
        tracker: Option<TrackerId>,
    ) -> Result<SeqId, NrtError> {
        let function = LibnrtFunction::nrta_tensor_write;
        let tensor = self.tensor(tensor)?;
        let tracker = tracker.map(|id| self.tracker(id)).transpose()?;
        let mut block = host_block(bytes.len())?;
        block.copy_from_slice(bytes);
        let scheduled = self.async_state.tensor_write(&tensor, offset, block, queue, tracker);
        optional(function, scheduled).map(SeqId)
    }

    fn nrta_tensor_read(
        &self,
        tensor: TensorId,
        offset: u64,
        size: u64,
        queue: i32,
        tracker: Option<TrackerId>,
        into: Arc<AsyncReadBuffer>,
    ) -> Result<SeqId, NrtError> {
        let function = LibnrtFunction::nrta_tensor_read;
        let tensor = self.tensor(tensor)?;
        let tracker = tracker.map(|id| self.tracker(id)).transpose()?;
        let size = usize::try_from(size).map_err(|_| {
            NrtError::new(
                NrtStatus::Invalid,
                format!("{function}: size {size} does not fit in size_t"),
            )
        })?;
        let block = host_block(size)?;
        let scheduled = self.async_state.tensor_read(&tensor, offset, block, queue, tracker, into);
        optional(function, scheduled).map(SeqId)
    }

    fn nrta_execute_schedule(
        &self,
        model: ModelId,
        input_set: SetId,
        output_set: SetId,
        queue: i32,
        tracker: Option<TrackerId>,
    ) -> Result<SeqId, NrtError> {
        let function = LibnrtFunction::nrta_execute_schedule;
        let model = self.model(model)?;
        let (input, output) = (self.set(input_set)?, self.set(output_set)?);
        self.check_members(function, &input, "input")?;
        self.check_members(function, &output, "output")?;
        let tracker = tracker.map(|id| self.tracker(id)).transpose()?;
        let scheduled = self.async_state.execute(&model, &input, &output, queue, tracker);
        optional(function, scheduled).map(SeqId)
    }

    fn nrta_is_completed(&self, seq: SeqId) -> Result<bool, NrtError> {
        let function = LibnrtFunction::nrta_is_completed;
        optional(function, self.async_state.is_completed(&self.library, seq.0))
    }

    fn nrta_get_completion_handle(&self, seq: SeqId) -> Result<std::os::fd::OwnedFd, NrtError> {
        let function = LibnrtFunction::nrta_get_completion_handle;
        optional(function, self.library.get_completion_handle(seq.0))
    }
}
