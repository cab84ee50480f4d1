//! The calls of `nrt/nrt_async.h` on [`SimRuntime`].

use std::sync::Arc;

use abi::functions::LibnrtFunction;
use abi::runtime::{
    AsyncReadBuffer, ModelId, NrtError, RuntimeAsync, RuntimeNrt, SeqId, SetId, TensorId, TrackerId,
};
use abi::status::NrtStatus;

use super::SimRuntime;
use crate::async_queues::{AsyncError, ExecutionUnit, Job};

impl RuntimeAsync for SimRuntime {
    fn nrta_error_tracker_create(&self, lnc: u32) -> Result<TrackerId, NrtError> {
        self.enter(LibnrtFunction::nrta_error_tracker_create)?;
        Ok(TrackerId(self.queues.tracker_create(lnc)?))
    }

    fn nrta_error_tracker_destroy(&self, tracker: TrackerId) -> Result<(), NrtError> {
        if self.queues.tracker_destroy(tracker.0) {
            Ok(())
        } else {
            Err(AsyncError::NoSuchTracker(tracker.0).into())
        }
    }

    fn nrta_error_tracker_get_list(
        &self,
        tracker: TrackerId,
    ) -> Result<Vec<(SeqId, NrtStatus)>, NrtError> {
        let errors = self.queues.tracker_errors(tracker.0)?;
        Ok(errors.into_iter().map(|(seq, status)| (SeqId(seq), status)).collect())
    }

    /// The bytes are copied when the request is scheduled; the write runs as
    /// [`Runtime::tensor_write`](abi::runtime::RuntimeNrt::tensor_write) on the tensor's core's write queue.
    fn nrta_tensor_write(
        &self,
        tensor: TensorId,
        offset: u64,
        bytes: &[u8],
        queue: i32,
        tracker: Option<TrackerId>,
    ) -> Result<SeqId, NrtError> {
        self.enter(LibnrtFunction::nrta_tensor_write)?;
        let this = self.shared()?;
        let lnc = self.tensor_core(tensor)?.unwrap_or(0);
        let key = self.queues.key(lnc, ExecutionUnit::TensorWrite, queue.into())?;
        let offset = to_offset(offset)?;
        let mut owned = Vec::new();
        owned.try_reserve_exact(bytes.len()).map_err(|_| too_big(bytes.len()))?;
        owned.extend_from_slice(bytes);
        let job: Job = Box::new(move |_| this.tensor_write(tensor, offset, &owned));
        Ok(SeqId(self.queues.schedule(key, tracker.map(|t| t.0), job)?))
    }

    /// The read runs as [`Runtime::tensor_read`](abi::runtime::RuntimeNrt::tensor_read) on the tensor's core's read queue and fills
    /// `into` before the request completes.
    fn nrta_tensor_read(
        &self,
        tensor: TensorId,
        offset: u64,
        size: u64,
        queue: i32,
        tracker: Option<TrackerId>,
        into: Arc<AsyncReadBuffer>,
    ) -> Result<SeqId, NrtError> {
        self.enter(LibnrtFunction::nrta_tensor_read)?;
        let this = self.shared()?;
        let lnc = self.tensor_core(tensor)?.unwrap_or(0);
        let key = self.queues.key(lnc, ExecutionUnit::TensorRead, queue.into())?;
        let offset = to_offset(offset)?;
        let size = to_offset(size)?;
        let job: Job = Box::new(move |_| {
            let mut bytes = Vec::new();
            bytes.try_reserve_exact(size).map_err(|_| too_big(size))?;
            bytes.resize(size, 0);
            this.tensor_read(tensor, offset, &mut bytes)?;
            into.fill(bytes);
            Ok(())
        });
        Ok(SeqId(self.queues.schedule(key, tracker.map(|t| t.0), job)?))
    }

    /// The launch runs as [`Runtime::execute`](abi::runtime::RuntimeNrt::execute) on the model's first core's compute queue; a
    /// launch that completes with NaN (1003) is recorded in the tracker too.
    fn nrta_execute_schedule(
        &self,
        model: ModelId,
        input_set: SetId,
        output_set: SetId,
        queue: i32,
        tracker: Option<TrackerId>,
    ) -> Result<SeqId, NrtError> {
        let cores = self.model_cores(LibnrtFunction::nrta_execute_schedule, model)?;
        let this = self.shared()?;
        let lnc = cores.first().copied().unwrap_or(0);
        let key = self.queues.key(lnc, ExecutionUnit::Compute, queue.into())?;
        self.check_sets_of_a_scheduled_launch(
            LibnrtFunction::nrta_execute_schedule,
            input_set,
            output_set,
        )?;
        let job: Job = Box::new(move |_| match this.execute(model, input_set, output_set)? {
            NrtStatus::Success => Ok(()),
            status => Err(NrtError::new(status, "the launch completed with a warning")),
        });
        Ok(SeqId(self.queues.schedule(key, tracker.map(|t| t.0), job)?))
    }

    fn nrta_is_completed(&self, seq: SeqId) -> Result<bool, NrtError> {
        self.enter(LibnrtFunction::nrta_is_completed)?;
        Ok(self.queues.is_completed(seq.0)?)
    }

    /// The read end of a socket pair whose other end the queue drops when the request
    /// completes (so the descriptor polls readable: end of file).
    fn nrta_get_completion_handle(&self, seq: SeqId) -> Result<std::os::fd::OwnedFd, NrtError> {
        self.enter(LibnrtFunction::nrta_get_completion_handle)?;
        Ok(self.queues.completion_handle(seq.0)?)
    }
}

impl SimRuntime {
    /// This runtime as an `Arc`, for a job that runs later.
    fn shared(&self) -> Result<Arc<SimRuntime>, NrtError> {
        self.this.upgrade().ok_or_else(|| {
            NrtError::new(
                NrtStatus::Failure,
                "the async API needs a runtime made by SimRuntime::new_shared, this one was made by SimRuntime::new",
            )
        })
    }
}

/// A `u64` offset or size from a caller as `usize`.
fn to_offset(value: u64) -> Result<usize, NrtError> {
    usize::try_from(value).map_err(|_| {
        NrtError::new(NrtStatus::Invalid, format!("{value} does not fit in this host's size_t"))
    })
}

/// `NRT_RESOURCE` for host memory a request cannot get.
fn too_big(n_bytes: usize) -> NrtError {
    NrtError::new(
        NrtStatus::Resource,
        format!("cannot allocate {n_bytes} bytes of host memory for an async request"),
    )
}
