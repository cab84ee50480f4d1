//! Raw steps of the async API (`nrta_*`).

use std::sync::Arc;

use super::values::{encode_values, hex};
use super::{Context, StepResult, check_status, label};
use crate::spec::{
    NrtaDrainStep, NrtaErrorTrackerCreateStep, NrtaErrorTrackerGetListStep,
    NrtaExecuteScheduleStep, NrtaReadResultStep, NrtaTensorReadStep, NrtaTensorWriteStep,
    NrtaWaitStep, Status,
};

impl Context<'_> {
    /// The tracker a step names, if any.
    fn tracker_label(
        &self,
        tracker: &Option<String>,
    ) -> Result<Option<abi::runtime::TrackerId>, String> {
        tracker
            .as_ref()
            .map(|name| label(&self.requests.trackers, name, "error tracker"))
            .transpose()
    }

    /// Checks a scheduling's status and labels its request.
    fn scheduled(
        &mut self,
        result: Result<abi::runtime::SeqId, abi::runtime::NrtError>,
        as_name: &Option<String>,
        expect: &Option<Status>,
    ) -> StepResult {
        check_status(&result, expect)?;
        if let (Ok(seq), Some(name)) = (result, as_name) {
            self.requests.seqs.insert(name.clone(), seq);
        }
        Ok(())
    }

    /// The `nrta_error_tracker_create` step.
    pub(super) fn nrta_error_tracker_create(
        &mut self,
        step: &NrtaErrorTrackerCreateStep,
    ) -> StepResult {
        let rt = self.runtime.clone();
        let NrtaErrorTrackerCreateStep { lnc, label: as_name, expect } = step;
        let result = rt.nrta_error_tracker_create(lnc.unwrap_or(0));
        check_status(&result, expect)?;
        if let Ok(tracker) = result {
            self.requests.trackers.insert(as_name.clone(), tracker);
        }
        Ok(())
    }

    /// The `nrta_tensor_write` step.
    pub(super) fn nrta_tensor_write(&mut self, step: &NrtaTensorWriteStep) -> StepResult {
        let rt = self.runtime.clone();
        let NrtaTensorWriteStep { tensor, offset, data, queue, tracker, label: as_name, expect } =
            step;
        let bytes = encode_values(data.dtype.0, &data.values)?;
        let tracker = self.tracker_label(tracker)?;
        let tensor = label(&self.tensors, tensor, "tensor")?;
        let result =
            rt.nrta_tensor_write(tensor, offset.unwrap_or(0), &bytes, queue.unwrap_or(0), tracker);
        self.scheduled(result, as_name, expect)
    }

    /// The `nrta_tensor_read` step.
    pub(super) fn nrta_tensor_read(&mut self, step: &NrtaTensorReadStep) -> StepResult {
        let rt = self.runtime.clone();
        let NrtaTensorReadStep { tensor, offset, size, queue, tracker, label: as_name, expect } =
            step;
        let tracker = self.tracker_label(tracker)?;
        let tensor = label(&self.tensors, tensor, "tensor")?;
        let into = Arc::new(abi::runtime::AsyncReadBuffer::new());
        let result = rt.nrta_tensor_read(
            tensor,
            offset.unwrap_or(0),
            *size,
            queue.unwrap_or(0),
            tracker,
            Arc::clone(&into),
        );
        if let Some(name) = as_name {
            self.requests.reads.insert(name.clone(), into);
        }
        self.scheduled(result, as_name, expect)
    }

    /// The `nrta_execute_schedule` step.
    pub(super) fn nrta_execute_schedule(&mut self, step: &NrtaExecuteScheduleStep) -> StepResult {
        let rt = self.runtime.clone();
        let NrtaExecuteScheduleStep {
            model,
            inputs,
            outputs,
            queue,
            tracker,
            label: as_name,
            expect,
        } = step;
        let tracker = self.tracker_label(tracker)?;
        let result = rt.nrta_execute_schedule(
            label(&self.models, model, "model")?,
            label(&self.sets, inputs, "tensor set")?,
            label(&self.sets, outputs, "tensor set")?,
            queue.unwrap_or(0),
            tracker,
        );
        self.scheduled(result, as_name, expect)
    }

    /// The `nrta_wait` step.
    pub(super) fn nrta_wait(&mut self, step: &NrtaWaitStep) -> StepResult {
        let NrtaWaitStep { request } = step;
        let seq = label(&self.requests.seqs, request, "async request")?;
        // Polled on the backend itself: how many polls it takes is timing, not behaviour.
        let start = std::time::Instant::now();
        loop {
            match self.raw.nrta_is_completed(seq) {
                Ok(true) => break,
                Ok(false) if start.elapsed() < std::time::Duration::from_secs(10) => {
                    std::thread::sleep(std::time::Duration::from_micros(100));
                }
                Ok(false) => {
                    return Err(format!("request {request} did not complete in 10 s"));
                }
                Err(err) => return Err(format!("nrta_is_completed of {request}: {err}")),
            }
        }
        self.trace.record_with(|names| format!("wait {} -> completed", names.seq(seq)));
        Ok(())
    }

    /// The `nrta_read_result` step.
    pub(super) fn nrta_read_result(&mut self, step: &NrtaReadResultStep) -> StepResult {
        let NrtaReadResultStep { request, expect_values } = step;
        let into = self
            .requests
            .reads
            .get(request)
            .ok_or_else(|| format!("no async read labelled {request:?} in an earlier step"))?;
        let want = encode_values(expect_values.dtype.0, &expect_values.values)?;
        match into.bytes() {
            Some(got) if got == want => Ok(()),
            Some(got) => {
                Err(format!("async read {request} gave {}, expected {}", hex(&got), hex(&want)))
            }
            None => Err(format!("async read {request} has no bytes, expected a completed read")),
        }
    }

    /// The `nrta_drain` step.
    pub(super) fn nrta_drain(&mut self, step: &NrtaDrainStep) -> StepResult {
        let rt = self.runtime.clone();
        let NrtaDrainStep { vnc, expect } = step;
        check_status(&rt.nrt_async_drain_queued_execs(vnc.unwrap_or(0)), expect)
    }

    /// The `nrta_error_tracker_get_list` step.
    pub(super) fn nrta_error_tracker_get_list(
        &mut self,
        step: &NrtaErrorTrackerGetListStep,
    ) -> StepResult {
        let rt = self.runtime.clone();
        let NrtaErrorTrackerGetListStep { tracker, expect_failed, expect } = step;
        let tracker = label(&self.requests.trackers, tracker, "error tracker")?;
        let result = rt.nrta_error_tracker_get_list(tracker);
        check_status(&result, expect)?;
        let Ok(errors) = result else { return Ok(()) };
        let mut want = Vec::new();
        for (request, status) in expect_failed {
            want.push((label(&self.requests.seqs, request, "async request")?, status.0.name()));
        }
        want.sort();
        let mut got: Vec<_> = errors.iter().map(|(seq, status)| (*seq, status.name())).collect();
        got.sort();
        if got == want {
            Ok(())
        } else {
            Err(format!("failed requests {got:?}, expected {want:?}"))
        }
    }
}
