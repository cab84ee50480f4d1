//! The calls of `nrt/nrt_experimental.h` on [`NrtRuntime`], through the loaded library.

use std::path::Path;

use abi::dtype::NrtDtype;
use abi::functions::LibnrtFunction;
use abi::runtime::{ModelId, NrtError, RuntimeExperimental, TensorInfo, TensorUsage};
use abi::status::NrtStatus;

use super::{NrtRuntime, c_path, check, failed, optional};

impl RuntimeExperimental for NrtRuntime {
    fn get_model_tensor_info(&self, model: ModelId) -> Result<Vec<TensorInfo>, NrtError> {
        let raw = self
            .model(model)?
            .tensor_info()
            .map_err(|c| failed(LibnrtFunction::nrt_get_model_tensor_info, c))?;
        raw.into_iter()
            .map(|info| {
                let usage = TensorUsage::from_code(info.usage).ok_or_else(|| {
                    NrtError::new(
                        NrtStatus::Failure,
                        format!(
                            "nrt_get_model_tensor_info: usage {} is neither INPUT nor OUTPUT",
                            info.usage
                        ),
                    )
                })?;
                Ok(TensorInfo {
                    name: String::from_utf8_lossy(&info.name).into_owned(),
                    usage,
                    size: info.size,
                    dtype: NrtDtype::from_code(self.numbering, info.dtype),
                    shape: info.shape,
                })
            })
            .collect()
    }

    fn get_model_instance_count(&self, model: ModelId) -> Result<u32, NrtError> {
        let function = LibnrtFunction::nrt_get_model_instance_count;
        optional(function, self.model(model)?.count(function))
    }

    fn nrt_async_drain_queued_execs(&self, vnc: i32) -> Result<(), NrtError> {
        let function = LibnrtFunction::nrt_async_drain_queued_execs;
        optional(function, self.async_state.drain(&self.library, vnc))
    }

    fn get_model_info(&self, model: ModelId) -> Result<u32, NrtError> {
        optional(LibnrtFunction::nrt_get_model_info, self.model(model)?.info_vnc())
    }

    fn memcpy_to_device(&self, address: usize, bytes: &[u8]) -> Result<(), NrtError> {
        let function = LibnrtFunction::nrt_memcpy_to_device;
        let code = optional(function, self.library.memcpy_to_device(address, bytes).map(Ok))?;
        check(function, code)
    }

    fn barrier(&self, vnc: i32, rank: u32, world: u32) -> Result<(), NrtError> {
        let function = LibnrtFunction::nrt_barrier;
        let code = optional(function, self.library.barrier(vnc, rank, world).map(Ok))?;
        check(function, code)
    }

    fn all_gather(
        &self,
        vnc: i32,
        rank: u32,
        world: u32,
        input: &[u8],
    ) -> Result<Vec<u8>, NrtError> {
        optional(LibnrtFunction::nrt_all_gather, self.library.all_gather(vnc, rank, world, input))
    }

    fn trace_start(&self, trace_mem: bool) -> Result<(), NrtError> {
        let function = LibnrtFunction::nrt_trace_start;
        let code = optional(function, self.library.trace_start(trace_mem).map(Ok))?;
        check(function, code)
    }

    fn trace_stop(&self, filename: Option<&Path>) -> Result<(), NrtError> {
        let function = LibnrtFunction::nrt_trace_stop;
        let filename = filename.map(|path| c_path(function, path)).transpose()?;
        let code = optional(function, self.library.trace_stop(filename.as_deref()).map(Ok))?;
        check(function, code)
    }
}
