//! How [`TracingRuntime`] forwards and records the calls of `nrt/nrt_experimental.h`.

use std::path::Path;

use super::{TracingRuntime, format_bytes, outcome, path_arg, tensor_info_text};
use crate::functions::LibnrtFunction;
use crate::runtime::{ModelId, NrtError, RuntimeExperimental, TensorInfo};

impl RuntimeExperimental for TracingRuntime {
    fn get_model_tensor_info(&self, model: ModelId) -> Result<Vec<TensorInfo>, NrtError> {
        let result = self.inner.get_model_tensor_info(model);
        self.trace.record_with(|names| {
            let call = format!(
                "{}({})",
                LibnrtFunction::nrt_get_model_tensor_info.trace_name(),
                names.model(model)
            );
            outcome(names, call, &result, |_, info| Some(tensor_info_text(info)))
        });
        result
    }

    fn get_model_instance_count(&self, model: ModelId) -> Result<u32, NrtError> {
        let result = self.inner.get_model_instance_count(model);
        self.model_count_line(LibnrtFunction::nrt_get_model_instance_count, model, &result);
        result
    }

    fn nrt_async_drain_queued_execs(&self, vnc: i32) -> Result<(), NrtError> {
        let result = self.inner.nrt_async_drain_queued_execs(vnc);
        self.unit(result, |_| {
            format!("{}({vnc})", LibnrtFunction::nrt_async_drain_queued_execs.trace_name())
        })
    }

    fn get_model_info(&self, model: ModelId) -> Result<u32, NrtError> {
        let result = self.inner.get_model_info(model);
        self.model_count_line(LibnrtFunction::nrt_get_model_info, model, &result);
        result
    }

    /// The address differs between backends by nature: traced as `<address>`.
    fn memcpy_to_device(&self, address: usize, bytes: &[u8]) -> Result<(), NrtError> {
        let result = self.inner.memcpy_to_device(address, bytes);
        self.unit(result, |_| {
            format!(
                "{}(<address>, {})",
                LibnrtFunction::nrt_memcpy_to_device.trace_name(),
                format_bytes(bytes)
            )
        })
    }

    fn barrier(&self, vnc: i32, rank: u32, world: u32) -> Result<(), NrtError> {
        let result = self.inner.barrier(vnc, rank, world);
        let function = LibnrtFunction::nrt_barrier;
        self.unit(result, |_| format!("{}({vnc}, {rank}, {world})", function.trace_name()))
    }

    fn all_gather(
        &self,
        vnc: i32,
        rank: u32,
        world: u32,
        input: &[u8],
    ) -> Result<Vec<u8>, NrtError> {
        let result = self.inner.all_gather(vnc, rank, world, input);
        self.trace.record_with(|names| {
            let call = format!(
                "{}({vnc}, {rank}, {world}, {})",
                LibnrtFunction::nrt_all_gather.trace_name(),
                format_bytes(input)
            );
            outcome(names, call, &result, |_, gathered| Some(format_bytes(gathered)))
        });
        result
    }

    fn trace_start(&self, trace_mem: bool) -> Result<(), NrtError> {
        let result = self.inner.trace_start(trace_mem);
        self.unit(result, |_| {
            format!("{}({trace_mem})", LibnrtFunction::nrt_trace_start.trace_name())
        })
    }

    fn trace_stop(&self, filename: Option<&Path>) -> Result<(), NrtError> {
        let result = self.inner.trace_stop(filename);
        self.unit(result, |_| {
            format!("{}({})", LibnrtFunction::nrt_trace_stop.trace_name(), path_arg(filename))
        })
    }
}
