//! The calls of `nrt/nrt_experimental.h` on [`SimRuntime`].

use std::sync::Arc;

use abi::functions::LibnrtFunction;
use abi::runtime::{ModelId, NrtError, RuntimeExperimental, TensorInfo};
use abi::status::NrtStatus;

use super::{SimRuntime, read_lock};
use crate::memory::write_bytes;

impl RuntimeExperimental for SimRuntime {
    fn get_model_tensor_info(&self, model: ModelId) -> Result<Vec<TensorInfo>, NrtError> {
        self.enter(LibnrtFunction::nrt_get_model_tensor_info)?;
        Ok(self.model(model)?.info.clone())
    }

    /// One: launches of a model on its core are serialised by the core's launch lock.
    fn get_model_instance_count(&self, model: ModelId) -> Result<u32, NrtError> {
        self.model_cores(LibnrtFunction::nrt_get_model_instance_count, model)?;
        Ok(1)
    }

    fn nrt_async_drain_queued_execs(&self, vnc: i32) -> Result<(), NrtError> {
        self.enter(LibnrtFunction::nrt_async_drain_queued_execs)?;
        match u32::try_from(vnc) {
            Ok(vnc) if vnc < self.visible_core_count() => Ok(self.queues.drain(vnc)?),
            _ => Err(NrtError::new(
                NrtStatus::Invalid,
                format!(
                    "vnc {vnc} does not exist, expected one below {}",
                    self.visible_core_count()
                ),
            )),
        }
    }

    /// Blocks until all `world` ranks have called it in this round ([`crate::collectives`]);
    /// [`NrtStatus::Timeout`] when a peer does not come within the timeout
    /// ([`SimRuntime::set_collective_timeout`]), [`NrtStatus::Invalid`] for a rank already
    /// waiting, or peers that brought an all-gather to the round.
    fn barrier(&self, vnc: i32, rank: u32, world: u32) -> Result<(), NrtError> {
        let function = LibnrtFunction::nrt_barrier;
        let communicator = self.collective(function, vnc.into(), rank, world)?;
        communicator
            .barrier(rank, self.collectives.timeout())
            .map_err(|err| NrtError::new(err.status(), format!("{function}: {err}")))
    }

    /// Blocks until all `world` ranks have brought their `input`, and returns the inputs
    /// concatenated in rank order; as `barrier`, [`NrtStatus::Invalid`] too when the ranks' sizes
    /// differ, and [`NrtStatus::Resource`] when the gathered bytes cannot be allocated.
    fn all_gather(
        &self,
        vnc: i32,
        rank: u32,
        world: u32,
        input: &[u8],
    ) -> Result<Vec<u8>, NrtError> {
        let function = LibnrtFunction::nrt_all_gather;
        let communicator = self.collective(function, vnc.into(), rank, world)?;
        communicator
            .all_gather(rank, input, self.collectives.timeout())
            .map_err(|err| NrtError::new(err.status(), format!("{function}: {err}")))
    }

    /// The legacy trace records every launch of every model, as an inspect session does; the
    /// simulator's event stream has no allocation events, so `trace_mem` adds nothing.
    fn trace_start(&self, _trace_mem: bool) -> Result<(), NrtError> {
        self.enter(LibnrtFunction::nrt_trace_start)?;
        self.profiling.start_legacy(&self.events)
    }

    /// Writes the legacy trace as a profile (`docs/sim-trace-format.md`); a NULL file name is
    /// `NRT_INVALID` and the trace goes on.
    fn trace_stop(&self, filename: Option<&std::path::Path>) -> Result<(), NrtError> {
        self.enter(LibnrtFunction::nrt_trace_stop)?;
        self.profiling.stop_legacy(&self.events, filename)
    }

    /// The model's first NeuronCore.
    fn get_model_info(&self, model: ModelId) -> Result<u32, NrtError> {
        let cores = self.model_cores(LibnrtFunction::nrt_get_model_info, model)?;
        cores.first().copied().ok_or_else(|| {
            NrtError::new(NrtStatus::Failure, format!("model {} occupies no NeuronCore", model.0))
        })
    }

    /// `nrt_memcpy_to_device`: copies `bytes` to the device memory at `address`, which must lie
    /// inside one device tensor's storage (an address `nrt_tensor_get_va` gave).
    ///
    /// # Errors
    /// The lifecycle statuses; [`NrtStatus::Invalid`] for a range that is not inside one device
    /// tensor.
    fn memcpy_to_device(&self, address: usize, bytes: &[u8]) -> Result<(), NrtError> {
        self.enter(LibnrtFunction::nrt_memcpy_to_device)?;
        let found = read_lock(&self.tensors).values().find_map(|tensor| {
            let view = tensor.view.as_ref()?;
            view.storage.core()?;
            let start = view.storage.address(view.offset);
            let offset = address.checked_sub(start)?;
            let end = offset.checked_add(bytes.len())?;
            (end <= view.size).then(|| (Arc::clone(tensor), offset))
        });
        let (tensor, offset) = found.ok_or_else(|| {
            NrtError::new(
                NrtStatus::Invalid,
                format!(
                    "{} bytes at {address:#x} are not inside a device tensor, expected an address from nrt_tensor_get_va",
                    bytes.len()
                ),
            )
        })?;
        let view = tensor.view()?;
        write_bytes(view.place(offset), bytes);
        self.count_device_traffic(&view.storage, true, bytes.len());
        Ok(())
    }
}
