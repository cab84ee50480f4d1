//! Launching a loaded model for `nrt_execute` and `nrt_execute_repeat`: the I/O contract
//! (checked in one place, its statuses chosen in one function), binding tensors to slots, and
//! running the device program under the core's launch lock.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use abi::functions::LibnrtFunction;
use abi::runtime::{ModelId, NrtError, SetId, TensorId};
use abi::status::NrtStatus;

use crate::device_program::{LaunchError, holds_nan};
use crate::memory::{Place, Storage, copy_bytes};
use crate::runtime::{IoSlot, LoadedModel, SimRuntime, Tensor, View, WarningKind, lock, read_lock};
use crate::sys_trace::Event;

/// The tensors bound to a model's inputs and outputs, in slot order.
type BoundTensors = (Vec<Arc<Tensor>>, Vec<Arc<Tensor>>);

/// The status for a broken I/O contract at execute. Public documentation says NRT_INVALID for a
/// mismatch; whether a missing name and a too-small tensor get different codes on a device is
/// still to be pinned, so both go through this one function.
fn contract_status(_breach: ContractBreach) -> NrtStatus {
    NrtStatus::Invalid
}

#[derive(Clone, Copy)]
enum ContractBreach {
    MissingName,
    TooSmall,
    OtherCore,
    NoStorage,
}

impl SimRuntime {
    /// The tensors bound to a model's inputs and outputs, checked against its I/O contract.
    fn resolve_io(
        &self,
        function: LibnrtFunction,
        model: &LoadedModel,
        input_set: SetId,
        output_set: SetId,
    ) -> Result<BoundTensors, NrtError> {
        // Any entry, not only the model's names: libnrt's set holds the pointers of all of them.
        for (set, which) in [(input_set, "input"), (output_set, "output")] {
            self.check_no_freed_member(function, set, which)?;
        }
        let sets = read_lock(&self.sets);
        let inputs = sets.get(&input_set).ok_or_else(|| SimRuntime::unknown_set(input_set))?;
        let outputs = sets.get(&output_set).ok_or_else(|| SimRuntime::unknown_set(output_set))?;
        let tensors = read_lock(&self.tensors);
        let bind = |slots: &[IoSlot], set: &HashMap<Vec<u8>, TensorId>, which: &str| {
            slots
                .iter()
                .map(|slot| {
                    let breach = |breach: ContractBreach, detail: String| {
                        NrtError::new(
                            contract_status(breach),
                            format!("model {:?}, {which} {:?}: {detail}", model.name, slot.name),
                        )
                    };
                    let Some(id) = set.get(slot.name.as_bytes()) else {
                        // A zero-byte output has nothing to write: a caller that binds no tensor
                        // for it (nkipy makes empty results on the host and binds none) launches.
                        // The simulator's compile target keeps such a variable only when every
                        // result is empty, since a NEFF needs one output.
                        if which == "output" && slot.size == 0 {
                            return Ok(Arc::new(Tensor {
                                name: slot.name.clone(),
                                view: None,
                                completions: AtomicU64::new(0),
                            }));
                        }
                        return Err(breach(
                            ContractBreach::MissingName,
                            format!("the {which} set has no tensor of that name"),
                        ));
                    };
                    // `nrt_tensor_free` frees a tensor at once, in a set or not: libnrt's set
                    // holds the caller's pointer, which must stay valid until the set is
                    // destroyed, and does not keep the tensor alive. Where libnrt would launch
                    // with a dangling pointer, the simulator refuses the released handle.
                    let tensor = tensors.get(id).ok_or_else(|| {
                        NrtError::new(
                            NrtStatus::InvalidHandle,
                            format!(
                                "model {:?}, {which} {:?}: tensor {} was freed (nrt_tensor_free) while still in the {which} set, expected it allocated until the set is destroyed or the name re-added",
                                model.name, slot.name, id.0
                            ),
                        )
                    })?;
                    let view = tensor.view.as_ref().ok_or_else(|| {
                        breach(ContractBreach::NoStorage, "the tensor has no storage".to_owned())
                    })?;
                    if view.size < slot.size {
                        return Err(breach(
                            ContractBreach::TooSmall,
                            format!(
                                "tensor is {} bytes, expected at least the variable's {}",
                                view.size, slot.size
                            ),
                        ));
                    }
                    if let Some(core) = view.storage.core() {
                        if core != model.core {
                            return Err(breach(
                                ContractBreach::OtherCore,
                                format!(
                                    "tensor is on neuron core {core}, expected the model's core {}",
                                    model.core
                                ),
                            ));
                        }
                    }
                    Ok(Arc::clone(tensor))
                })
                .collect::<Result<Vec<Arc<Tensor>>, NrtError>>()
        };
        Ok((bind(&model.inputs, inputs, "input")?, bind(&model.outputs, outputs, "output")?))
    }

    /// One launch: inputs in, program, outputs out. The caller holds the core's launch lock.
    fn launch(
        &self,
        model: &LoadedModel,
        inputs: &[Arc<Tensor>],
        outputs: &[Arc<Tensor>],
    ) -> NrtStatus {
        let core = &self.cores[model.core as usize];
        let memory = &core.memory;
        let mut starts = model.slot_starts.clone();
        let in_place = |tensor: &Tensor| match &tensor.view {
            Some(View { storage, offset, .. }) => match &**storage {
                Storage::Device(block) => Some(block.offset as usize + offset),
                _ => None,
            },
            None => None,
        };
        for (slot, tensor) in model.inputs.iter().zip(inputs) {
            match in_place(tensor) {
                Some(start) => starts[slot.slot] = start,
                None => {
                    if let Some(view) = &tensor.view {
                        copy_bytes(
                            view.place(0),
                            Place::Core(memory, starts[slot.slot]),
                            slot.size,
                        );
                        model.counters.dma(true, slot.size as u64);
                        core.counters.dma(true, slot.size as u64);
                    }
                }
            }
        }
        for (slot, tensor) in model.outputs.iter().zip(outputs) {
            if let Some(start) = in_place(tensor) {
                starts[slot.slot] = start;
            }
        }
        let mut status = NrtStatus::Success;
        {
            let mut bytes = memory.lock_bytes();
            match &model.program {
                Some(program) => {
                    let recording = lock(&self.launch_log).is_some();
                    let mut args = Vec::new();
                    // The arguments are read from device memory once, straight into the
                    // interpreter's storage, and the results written back once.
                    let hbm: &[u8] = &bytes;
                    let read = |io: usize, len: usize| {
                        let start = starts[model.inputs[io].slot];
                        let arg = &hbm[start..start + len];
                        if recording {
                            args.push(arg.to_vec());
                        }
                        arg
                    };
                    let result = program.read_inputs(read).and_then(|inputs| match &model.group {
                        Some((group, rank)) => group
                            .join(program, *rank, inputs, self.config.collective_timeout)
                            .map_err(|err| {
                                if group.is_closed() {
                                    status = NrtStatus::Closed;
                                }
                                err.unwrap_or_else(|| {
                                    status = NrtStatus::Timeout;
                                    LaunchError::Failed(format!(
                                        "rank {rank}: the other ranks of the collective launch did not come within {:?}",
                                        self.config.collective_timeout
                                    ))
                                })
                            }),
                        None => program.run(inputs),
                    });
                    let result = match (recording, result) {
                        (true, Ok(written)) => written.to_bytes().map(|results| {
                            let record = crate::device_program::LaunchRecord {
                                model: model.name.clone(),
                                hlo: program.source().to_vec(),
                                args,
                                results: results.into_iter().map(|(_, data)| data).collect(),
                                collective: model
                                    .group
                                    .as_ref()
                                    .map(|(group, rank)| (*rank, group.world())),
                            };
                            if let Some(log) = lock(&self.launch_log).as_mut() {
                                log.push(record);
                            }
                            written
                        }),
                        (_, result) => result,
                    };
                    match result.and_then(|written| {
                        written.write_into(&mut bytes, |io| starts[model.outputs[io].slot])
                    }) {
                        Ok(()) => {}
                        Err(detail) => {
                            // A run over a launch limit is what libnrt reports for an execution
                            // past its execution timeout (docs/limits.md).
                            if matches!(detail, LaunchError::OverLimit { .. }) {
                                status = NrtStatus::Timeout;
                            }
                            self.warn(WarningKind::DeviceProgramFailed, || {
                                format!(
                                    "model {:?}: the device program failed: {detail}",
                                    model.name
                                )
                            });
                            if status == NrtStatus::Success {
                                status = NrtStatus::Failure;
                            }
                        }
                    }
                }
                None => {
                    for slot in &model.outputs {
                        let start = starts[slot.slot];
                        bytes[start..start + slot.size].fill(0);
                    }
                }
            }
            if self.config.numerical_errors {
                let nan = model.outputs.iter().any(|slot| {
                    let start = starts[slot.slot];
                    slot.dltype
                        .is_some_and(|dltype| holds_nan(dltype, &bytes[start..start + slot.size]))
                });
                if nan {
                    status = NrtStatus::ExecCompletedWithNumErr;
                }
            }
        }
        // A failed launch leaves every output as it was, staged copies included: the caller
        // must not see stale device bytes as results.
        let completed = status.is_completed();
        for (slot, tensor) in model.outputs.iter().zip(outputs) {
            if completed && in_place(tensor).is_none() {
                if let Some(view) = &tensor.view {
                    copy_bytes(Place::Core(memory, starts[slot.slot]), view.place(0), slot.size);
                    model.counters.dma(false, slot.size as u64);
                    core.counters.dma(false, slot.size as u64);
                }
            }
        }
        for tensor in outputs {
            tensor.completions.fetch_add(1, Ordering::Release);
        }
        model.counters.launches.fetch_add(1, Ordering::Relaxed);
        core.counters.launches.fetch_add(1, Ordering::Relaxed);
        status
    }

    pub(super) fn execute_n(
        &self,
        function: LibnrtFunction,
        model: ModelId,
        input_set: SetId,
        output_set: SetId,
        repeat_count: u32,
    ) -> Result<NrtStatus, NrtError> {
        self.gate(function)?;
        // A fault that injects a completed status (0 or 1003) still runs the launch.
        let injected = self.faults.injected(function);
        if let Some(status) = injected.filter(|status| !status.is_completed()) {
            return Err(NrtError::new(status, format!("injected fault in {function}")));
        }
        let loaded = self.model(model)?;
        let (inputs, outputs) = self.resolve_io(function, &loaded, input_set, output_set)?;
        let _launch = lock(&self.cores[loaded.core as usize].launch);
        let mut status = NrtStatus::Success;
        for _ in 0..repeat_count {
            let start_ns = self.events.now_ns();
            let launched = self.launch(&loaded, &inputs, &outputs);
            self.events.record(Event {
                kind: "nc_exec_running",
                nc: loaded.core,
                start_ns,
                end_ns: self.events.now_ns(),
                model: Some(model.0),
                bytes: None,
                status: Some(launched.name()),
            });
            if launched == NrtStatus::ExecCompletedWithNumErr {
                status = NrtStatus::ExecCompletedWithNumErr;
            }
            // A launch whose program failed (the warning says why) or whose collective peers
            // never came wrote no outputs: the caller must not read them as results.
            if !launched.is_completed() {
                return Err(NrtError::new(
                    launched,
                    format!(
                        "{function}: the launch of model {:?} failed ({}); its outputs are not written",
                        loaded.name,
                        launched.name()
                    ),
                ));
            }
        }
        if injected == Some(NrtStatus::ExecCompletedWithNumErr) {
            status = NrtStatus::ExecCompletedWithNumErr;
        }
        Ok(status)
    }
}
