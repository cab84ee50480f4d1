//! Loading a model for `nrt_load` and `nrt_load_collectives`: parsing the NEFF, choosing the
//! cores, staging every variable into a slot of the core's HBM, and joining the collective
//! group of a ranked load.

use std::collections::HashMap;
use std::sync::Arc;

use abi::functions::LibnrtFunction;
use abi::runtime::{ModelId, NrtError, TensorInfo, TensorUsage};
use abi::status::NrtStatus;

use crate::device_program::{DeviceProgram, IoVar};
use crate::memory::{Place, write_bytes};
use crate::model::{ModelDescription, SlotKind};
use crate::runtime::{
    Counters, IoSlot, LoadedModel, OpenGroup, RendezvousKey, SimRuntime, WarningKind, lock,
    write_lock,
};
use crate::sys_trace::Event;

impl SimRuntime {
    /// Parses a NEFF; one that carries no device program gets the one
    /// [`SimConfig::hlo_source`](crate::config::SimConfig::hlo_source) has for it, if any.
    pub(super) fn describe(&self, neff: &[u8]) -> Result<ModelDescription, NrtError> {
        let mut description =
            crate::neff_load::describe_neff_with_limits(neff, &self.config.load_limits)?;
        if description.hlo.is_none() {
            if let Some(source) = &self.config.hlo_source {
                let found = source
                    .lookup(neff)
                    .map_err(|err| NrtError::new(NrtStatus::Invalid, err.to_string()))?;
                if let Some((hlo, origin)) = found {
                    description.hlo = Some(hlo);
                    description.hlo_origin = origin;
                }
            }
        }
        Ok(description)
    }

    /// Loads an in-memory model description, as [`Runtime::load`](abi::runtime::RuntimeNrt::load) does after parsing a NEFF.
    ///
    /// # Errors
    /// As [`Runtime::load`](abi::runtime::RuntimeNrt::load): lifecycle statuses, [`NrtStatus::Invalid`] for a bad description or
    /// device program, [`NrtStatus::LoadNotEnoughNc`], [`NrtStatus::Resource`].
    pub fn load_description(
        &self,
        description: &ModelDescription,
        vnc: i32,
        vnc_count: i32,
    ) -> Result<ModelId, NrtError> {
        self.enter(LibnrtFunction::nrt_load)?;
        self.load_checked(description, vnc, vnc_count)
    }

    pub(super) fn load_checked(
        &self,
        description: &ModelDescription,
        vnc: i32,
        vnc_count: i32,
    ) -> Result<ModelId, NrtError> {
        self.load_ranked(description, vnc, vnc_count, None)
    }

    /// As `load_checked`; `rank` is `(ctx_device_id, ctx_device_count)` of `nrt_load_collectives`.
    pub(super) fn load_ranked(
        &self,
        description: &ModelDescription,
        vnc: i32,
        vnc_count: i32,
        rank: Option<(u32, u32)>,
    ) -> Result<ModelId, NrtError> {
        let mut occupancy = lock(&self.occupancy);
        let first = pick_cores(&occupancy, vnc, vnc_count)?;
        let count = if vnc_count == -1 { 1 } else { vnc_count as u32 };
        let start_ns = self.events.now_ns();
        let mut loaded = self.stage(description, first, count)?;
        if let (Some(program), Some((id, world))) = (&loaded.program, rank) {
            if program.is_collective() && world > 1 {
                let group = self.join_group((program.source().to_vec(), world), id);
                loaded.group = Some((group, id as usize));
            }
        }
        for core in &loaded.cores {
            occupancy[*core as usize] += 1;
        }
        let id = ModelId(self.next_id());
        write_lock(&self.models).insert(id, Arc::new(loaded));
        self.events.record(Event {
            kind: "model_load",
            nc: first,
            start_ns,
            end_ns: self.events.now_ns(),
            model: Some(id.0),
            bytes: None,
            status: None,
        });
        Ok(id)
    }

    /// The rendezvous rank `rank` of a new collective load joins: the oldest instance of the
    /// module and world size that has no rank `rank` yet, else a new one. So the `k`-th load of
    /// each rank makes the `k`-th instance, as libnrt pairs the ranks of `nrt_load_collectives`
    /// calls in the order each rank makes them, and two copies of one model (two `SpmdModel`s of
    /// one NEFF) launched at once meet only their own ranks.
    fn join_group(&self, key: RendezvousKey, rank: u32) -> Arc<crate::device_program::Rendezvous> {
        let world = key.1;
        let mut registry = lock(&self.rendezvous);
        let open = registry.entry(key).or_default();
        let index = match open.iter().position(|group| !group.ranks.contains(&rank)) {
            Some(index) => index,
            None => {
                open.push(OpenGroup {
                    rendezvous: Arc::new(crate::device_program::Rendezvous::new(world as usize)),
                    ranks: std::collections::BTreeSet::new(),
                });
                open.len() - 1
            }
        };
        open[index].ranks.insert(rank);
        let rendezvous = Arc::clone(&open[index].rendezvous);
        if open[index].ranks.len() == world as usize {
            open.remove(index);
        }
        rendezvous
    }

    /// An unloaded rank leaves the instance it was loading into, if that one is still missing
    /// ranks, so the rank's next load fills the same instance.
    pub(super) fn leave_group(&self, group: &Arc<crate::device_program::Rendezvous>, rank: usize) {
        let mut registry = lock(&self.rendezvous);
        for open in registry.values_mut() {
            if let Some(index) =
                open.iter().position(|candidate| Arc::ptr_eq(&candidate.rendezvous, group))
            {
                open[index].ranks.remove(&(rank as u32));
                if open[index].ranks.is_empty() {
                    open.remove(index);
                }
            }
        }
        registry.retain(|_, open| !open.is_empty());
    }

    fn stage(
        &self,
        description: &ModelDescription,
        core: u32,
        count: u32,
    ) -> Result<LoadedModel, NrtError> {
        let invalid = |detail: String| {
            NrtError::new(NrtStatus::Invalid, format!("model {:?}: {detail}", description.name))
        };
        for io in description.inputs.iter().chain(&description.outputs) {
            io.check().map_err(|err| invalid(err.to_string()))?;
        }
        let memory = &self.cores[core as usize].memory;
        let mut names: HashMap<&str, usize> = HashMap::new();
        for (idx, var) in description.vars.iter().enumerate() {
            if names.insert(var.name.as_str(), idx).is_some() {
                return Err(invalid(format!("variable name {:?} appears twice", var.name)));
            }
        }
        let to_usize = |value: u64, what: &str| {
            usize::try_from(value)
                .map_err(|_| invalid(format!("{what} {value} does not fit in memory")))
        };
        let mut staged = Vec::new();
        let mut slot_starts = vec![0usize; description.vars.len()];
        // Virtual scratch windows share one scratchpad sized to cover every window.
        let mut scratchpad_size = 0u64;
        for var in description.vars.iter().filter(|var| var.kind == SlotKind::VirtualTmpBuf) {
            let end = var
                .backing_variable_off
                .unwrap_or(0)
                .checked_add(var.size)
                .ok_or_else(|| invalid(format!("virtual variable {:?} overflows", var.name)))?;
            scratchpad_size = scratchpad_size.max(end);
        }
        let scratchpad = if scratchpad_size > 0 {
            let block = memory.allocate(scratchpad_size, 0)?;
            let start = block.offset;
            staged.push(block);
            Some(start)
        } else {
            None
        };
        for (idx, var) in description.vars.iter().enumerate() {
            let start = match var.kind {
                SlotKind::VirtualTmpBuf => {
                    scratchpad.unwrap_or(0) + var.backing_variable_off.unwrap_or(0)
                }
                SlotKind::Ptr | SlotKind::List | SlotKind::PtrTable | SlotKind::Remote => 0,
                SlotKind::Buffer => {
                    let constant = var.constant.as_ref().ok_or_else(|| {
                        invalid(format!("constant variable {:?} has no data", var.name))
                    })?;
                    if constant.len() as u64 > var.size {
                        return Err(invalid(format!(
                            "constant {:?} holds {} bytes, expected at most its size {}",
                            var.name,
                            constant.len(),
                            var.size
                        )));
                    }
                    let block = memory.allocate(var.size, var.alignment.unwrap_or(0))?;
                    let start = block.offset;
                    write_bytes(Place::Core(memory, to_usize(start, "offset")?), constant);
                    self.cores[core as usize].counters.dma(true, constant.len() as u64);
                    staged.push(block);
                    start
                }
                SlotKind::Sb
                | SlotKind::BufferStaged
                | SlotKind::TmpBuf
                | SlotKind::Input
                | SlotKind::Output => {
                    let block = memory.allocate(var.size, var.alignment.unwrap_or(0))?;
                    let start = block.offset;
                    staged.push(block);
                    start
                }
            };
            slot_starts[idx] = to_usize(start, "offset")?;
        }
        let dltype_of = |name: &str| description.io(name).and_then(|io| io.dltype);
        let io_slots = |kind: SlotKind, signature: &[crate::model::IoDescription]| {
            let mut order: Vec<usize> = signature
                .iter()
                .filter_map(|io| names.get(io.name.as_str()).copied())
                .filter(|&idx| description.vars[idx].kind == kind)
                .collect();
            let mut rest: Vec<usize> = (0..description.vars.len())
                .filter(|idx| description.vars[*idx].kind == kind && !order.contains(idx))
                .collect();
            rest.sort_by_key(|&idx| description.vars[idx].var_id);
            order.extend(rest);
            order
                .into_iter()
                .map(|idx| {
                    let var = &description.vars[idx];
                    Ok(IoSlot {
                        name: var.name.clone(),
                        slot: idx,
                        size: to_usize(var.size, "size")?,
                        dltype: dltype_of(&var.name),
                    })
                })
                .collect::<Result<Vec<IoSlot>, NrtError>>()
        };
        let inputs = io_slots(SlotKind::Input, &description.inputs)?;
        let outputs = io_slots(SlotKind::Output, &description.outputs)?;
        let program = match &description.hlo {
            Some(hlo) => {
                let vars = |slots: &[IoSlot]| -> Vec<IoVar> {
                    slots
                        .iter()
                        .map(|slot| IoVar {
                            name: slot.name.clone(),
                            size: slot.size,
                            dltype: slot.dltype,
                        })
                        .collect()
                };
                let origin = if description.hlo_origin.is_empty() {
                    format!("neff member {}", crate::device_program::HLO_MEMBER)
                } else {
                    description.hlo_origin.clone()
                };
                let mut program = DeviceProgram::compile_bound(
                    hlo,
                    &origin,
                    &vars(&inputs),
                    &vars(&outputs),
                    description.binding,
                    &self.config.load_limits.hlo,
                )
                .map_err(|err| invalid(err.to_string()))?;
                program.set_run_limits(&self.config.run_limits());
                Some(program)
            }
            None => {
                self.warn(WarningKind::OpaqueProgram, || format!(
                    "model {:?} carries no HLO device program (no {} member, nothing from {}): it is opaque to the simulator, so its outputs stay zero",
                    description.name,
                    crate::device_program::HLO_MEMBER,
                    crate::config::HLO_ENV
                ));
                None
            }
        };
        let info_of = |slot: &IoSlot, usage: TensorUsage| {
            let io = description.io(&slot.name);
            TensorInfo {
                name: slot.name.clone(),
                usage,
                size: slot.size,
                dtype: io
                    .and_then(|io| io.dltype)
                    .and_then(|dltype| dltype.nrt_dtype())
                    .unwrap_or(abi::dtype::NrtDtype::Invalid),
                shape: io
                    .map(|io| io.shape.iter().map(|&dim| u32::try_from(dim).unwrap_or(0)).collect())
                    .unwrap_or_default(),
            }
        };
        let info = inputs
            .iter()
            .map(|slot| info_of(slot, TensorUsage::Input))
            .chain(outputs.iter().map(|slot| info_of(slot, TensorUsage::Output)))
            .collect();
        Ok(LoadedModel {
            name: description.name.clone(),
            core,
            cores: (core..core + count).collect(),
            slot_starts,
            inputs,
            outputs,
            program,
            group: None,
            info,
            counters: Counters::default(),
            _staged: staged,
        })
    }
}

/// The first core of a load: `vnc = -1` takes the first run of `vnc_count` cores holding no
/// model; an explicit `vnc` may share cores with other models but must exist.
fn pick_cores(occupancy: &[u32], vnc: i32, vnc_count: i32) -> Result<u32, NrtError> {
    let n_cores = occupancy.len();
    let count = match vnc_count {
        -1 => 1,
        n if n >= 1 => n as usize,
        n => {
            return Err(NrtError::new(
                NrtStatus::Invalid,
                format!("vnc_count {n} is invalid, expected -1 or at least 1"),
            ));
        }
    };
    let not_enough = |detail: String| NrtError::new(NrtStatus::LoadNotEnoughNc, detail);
    match vnc {
        -1 => (0..n_cores)
            .find(|&first| {
                first + count <= n_cores && occupancy[first..first + count].iter().all(|&n| n == 0)
            })
            .map(|first| first as u32)
            .ok_or_else(|| {
                let free = occupancy.iter().filter(|&&n| n == 0).count();
                not_enough(format!(
                    "the model needs {count} free neuron cores in a row, {free} of {n_cores} are free"
                ))
            }),
        v if v >= 0 => {
            if v as usize + count > n_cores {
                return Err(not_enough(format!(
                    "the model needs neuron cores {v}..{}, the machine has {n_cores}",
                    v as usize + count
                )));
            }
            Ok(v as u32)
        }
        v => Err(NrtError::new(NrtStatus::Invalid, format!("vnc {v} is invalid, expected -1 or a core index"))),
    }
}
