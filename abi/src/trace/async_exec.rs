//! How [`TracingRuntime`] forwards and records the calls of `nrt/nrt_async.h`.

use std::os::fd::OwnedFd;
use std::sync::Arc;

use super::{TracingRuntime, format_bytes, outcome};
use crate::functions::LibnrtFunction;
use crate::runtime::{
    AsyncReadBuffer, ModelId, NrtError, RuntimeAsync, SeqId, SetId, TensorId, TrackerId,
};
use crate::status::NrtStatus;

impl RuntimeAsync for TracingRuntime {
    fn nrta_error_tracker_create(&self, lnc: u32) -> Result<TrackerId, NrtError> {
        let result = self.inner.nrta_error_tracker_create(lnc);
        self.trace.record_with(|names| {
            let call = format!("{}({lnc})", LibnrtFunction::nrta_error_tracker_create.trace_name());
            outcome(names, call, &result, |names, &tracker| Some(names.tracker(tracker)))
        });
        result
    }

    fn nrta_error_tracker_destroy(&self, tracker: TrackerId) -> Result<(), NrtError> {
        let result = self.inner.nrta_error_tracker_destroy(tracker);
        self.unit(result, |names| {
            let function = LibnrtFunction::nrta_error_tracker_destroy;
            format!("{}({})", function.trace_name(), names.tracker(tracker))
        })
    }

    fn nrta_error_tracker_get_list(
        &self,
        tracker: TrackerId,
    ) -> Result<Vec<(SeqId, NrtStatus)>, NrtError> {
        let result = self.inner.nrta_error_tracker_get_list(tracker);
        self.trace.record_with(|names| {
            let function = LibnrtFunction::nrta_error_tracker_get_list;
            let call = format!("{}({})", function.trace_name(), names.tracker(tracker));
            outcome(names, call, &result, |names, errors| {
                let errors: Vec<String> = errors
                    .iter()
                    .map(|&(seq, status)| format!("{} {}", names.seq(seq), status.name()))
                    .collect();
                Some(format!("[{}]", errors.join(", ")))
            })
        });
        result
    }

    fn nrta_tensor_write(
        &self,
        tensor: TensorId,
        offset: u64,
        bytes: &[u8],
        queue: i32,
        tracker: Option<TrackerId>,
    ) -> Result<SeqId, NrtError> {
        let result = self.inner.nrta_tensor_write(tensor, offset, bytes, queue, tracker);
        self.trace.record_with(|names| {
            let call = format!(
                "{}({}, {offset}, {}, {queue}, {})",
                LibnrtFunction::nrta_tensor_write.trace_name(),
                names.tensor(tensor),
                format_bytes(bytes),
                names.maybe_tracker(tracker)
            );
            outcome(names, call, &result, |names, &seq| Some(names.seq(seq)))
        });
        result
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
        let result = self.inner.nrta_tensor_read(tensor, offset, size, queue, tracker, into);
        self.trace.record_with(|names| {
            let call = format!(
                "{}({}, {offset}, {size}, {queue}, {})",
                LibnrtFunction::nrta_tensor_read.trace_name(),
                names.tensor(tensor),
                names.maybe_tracker(tracker)
            );
            outcome(names, call, &result, |names, &seq| Some(names.seq(seq)))
        });
        result
    }

    fn nrta_execute_schedule(
        &self,
        model: ModelId,
        input_set: SetId,
        output_set: SetId,
        queue: i32,
        tracker: Option<TrackerId>,
    ) -> Result<SeqId, NrtError> {
        let result = self.inner.nrta_execute_schedule(model, input_set, output_set, queue, tracker);
        self.trace.record_with(|names| {
            let call = format!(
                "{}({}, {}, {}, {queue}, {})",
                LibnrtFunction::nrta_execute_schedule.trace_name(),
                names.model(model),
                names.set(input_set),
                names.set(output_set),
                names.maybe_tracker(tracker)
            );
            outcome(names, call, &result, |names, &seq| Some(names.seq(seq)))
        });
        result
    }

    /// Not traced: a caller polls it a number of times that depends on timing. A caller that
    /// waits records the outcome itself.
    fn nrta_is_completed(&self, seq: SeqId) -> Result<bool, NrtError> {
        self.inner.nrta_is_completed(seq)
    }

    fn nrta_get_completion_handle(&self, seq: SeqId) -> Result<OwnedFd, NrtError> {
        let result = self.inner.nrta_get_completion_handle(seq);
        // The descriptor's number is the process's own: only the status is traced.
        self.trace.record_with(|names| {
            let call = format!(
                "{}({})",
                LibnrtFunction::nrta_get_completion_handle.trace_name(),
                names.seq(seq)
            );
            outcome(names, call, &result, |_, _| None)
        });
        result
    }
}
