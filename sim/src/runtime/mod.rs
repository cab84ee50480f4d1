//! [`SimRuntime`]: the [`Runtime`](abi::runtime::Runtime) trait over simulated NeuronCores, one
//! file per public header for its implementation (`nrt.rs`, `experimental.rs`, `async_exec.rs`,
//! `profile.rs`, `sys_trace.rs`), each with the helpers only its calls use, and the state and
//! the helpers several headers share here. `nrt.h`'s two long paths have files of their own
//! under `nrt/`: loading (`load.rs`) and launching (`launch.rs`).
//!
//! Design choices:
//! - **Registries of `Arc`s behind short locks.** Tensors, sets and models live in hash maps keyed
//!   by handle; a call clones the `Arc`s it needs and drops the registry lock before moving any
//!   bytes, so a long DMA never blocks unrelated calls.
//! - **One launch lock per NeuronCore.** `execute` holds its core's launch lock from the first
//!   input DMA to the last output DMA: launches on one core are serialised, launches on different
//!   cores run in parallel (their HBM mutexes are distinct).
//! - **Slots.** At load every variable becomes a slot, a range of the core's HBM: staged kinds get
//!   their own block (constants copied in), virtual scratch a window of one shared scratchpad,
//!   inputs and outputs a staging block used for host and virtual tensors. A device tensor of the
//!   model's core is used in place instead: its range becomes the slot for that launch.
//! - **The I/O contract is checked in one place** ([`SimRuntime::resolve_io`]) and its statuses
//!   are chosen in one function (`contract_status`, in `nrt/launch.rs`), because the exact code
//!   for a missing name versus a too-small tensor is still to be pinned on a device.
//! - **Counters are atomics**, per model and per core: bytes moved to and from the device, DMA
//!   descriptors (one per [`DMA_DESCRIPTOR_BYTES`] of a contiguous move) and launches. Per core,
//!   `tensor_read`/`write` of device tensors count too, and a `tensor_copy` between a host and a
//!   device tensor; a `tensor_memset` and a device-to-device copy move no host bytes and do not
//!   count. Per model, only launches count.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{
    Arc, Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard, Weak,
};

use abi::dtype::DtypeNumbering;
use abi::functions::{LibnrtFunction, PreInit};
use abi::runtime::{ModelId, NrtError, SetId, TensorId, TensorInfo};
use abi::status::NrtStatus;
use abi::trace::name_text;

use crate::async_queues::AsyncQueues;
use crate::config::SimConfig;
use crate::device_program::DeviceProgram;
use crate::fault::{FaultInjector, FaultPlanError};
use crate::memory::{
    CoreMemory, DeviceBlock, Place, Storage, read_bytes, staging_buffer, write_bytes,
};
use crate::sys_trace::{Event, EventLog};

/// The largest transfer one simulated DMA descriptor carries.
pub const DMA_DESCRIPTOR_BYTES: u64 = 64 << 10;

/// The `detail` of [`RuntimeNrt::get_version`](abi::runtime::RuntimeNrt::get_version).
pub const VERSION_DETAIL: &str = "nrtsim simulated libnrt";

/// Why a [`SimRuntime`] could not be built.
#[derive(Debug, thiserror::Error)]
pub enum SimConfigError {
    /// The machine has no NeuronCore.
    #[error("n_cores is 0, expected at least 1 neuron core")]
    NoCores,
    /// The sparse HBM mapping could not be made.
    #[error("cannot map {bytes} bytes of hbm for neuron core {core}: {source}")]
    HbmMapping {
        /// The core.
        core: u32,
        /// The size asked for.
        bytes: u64,
        /// What the system said.
        source: std::io::Error,
    },
    /// The fault plan is invalid.
    #[error(transparent)]
    FaultPlan(#[from] FaultPlanError),
}

/// A snapshot of traffic counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TrafficCounters {
    /// Bytes moved from host memory to device memory.
    pub bytes_to_device: u64,
    /// Bytes moved from device memory to host memory.
    pub bytes_from_device: u64,
    /// DMA descriptors used for those moves.
    pub dma_descriptors: u64,
    /// Completed launches.
    pub launches: u64,
}

#[derive(Default)]
struct Counters {
    bytes_to_device: AtomicU64,
    bytes_from_device: AtomicU64,
    dma_descriptors: AtomicU64,
    launches: AtomicU64,
}

impl Counters {
    fn dma(&self, to_device: bool, n_bytes: u64) {
        if n_bytes == 0 {
            return;
        }
        let counter = if to_device { &self.bytes_to_device } else { &self.bytes_from_device };
        counter.fetch_add(n_bytes, Ordering::Relaxed);
        self.dma_descriptors.fetch_add(n_bytes.div_ceil(DMA_DESCRIPTOR_BYTES), Ordering::Relaxed);
    }

    fn snapshot(&self) -> TrafficCounters {
        TrafficCounters {
            bytes_to_device: self.bytes_to_device.load(Ordering::Relaxed),
            bytes_from_device: self.bytes_from_device.load(Ordering::Relaxed),
            dma_descriptors: self.dma_descriptors.load(Ordering::Relaxed),
            launches: self.launches.load(Ordering::Relaxed),
        }
    }
}

const UNINITIALIZED: u8 = 0;
const INITIALIZED: u8 = 1;
const CLOSED: u8 = 2;

struct Core {
    memory: Arc<CoreMemory>,
    launch: Mutex<()>,
    counters: Counters,
}

/// The part of a tensor's storage it sees.
#[derive(Clone)]
struct View {
    storage: Arc<Storage>,
    offset: usize,
    size: usize,
}

impl View {
    fn place(&self, offset: usize) -> Place<'_> {
        Place::In(&self.storage, self.offset + offset)
    }
}

struct Tensor {
    /// The tensor's own name, for messages (lossy where its bytes are not UTF-8).
    name: String,
    view: Option<View>,
    /// Launches that wrote this tensor as an output (`nrt_tensor_check_output_completion`).
    completions: AtomicU64,
}

impl Tensor {
    fn size(&self) -> usize {
        self.view.as_ref().map_or(0, |view| view.size)
    }

    fn view(&self) -> Result<&View, NrtError> {
        self.view.as_ref().ok_or_else(|| {
            NrtError::new(
                NrtStatus::Invalid,
                format!(
                    "tensor {:?} has no storage, expected a buffer attached after allocate_empty",
                    self.name
                ),
            )
        })
    }
}

/// One input or output variable of a loaded model.
struct IoSlot {
    name: String,
    slot: usize,
    size: usize,
    dltype: Option<abi::dtype::Dltype>,
}

struct LoadedModel {
    name: String,
    core: u32,
    cores: Vec<u32>,
    /// Start of every slot in the core's HBM (staging blocks for inputs and outputs).
    slot_starts: Vec<usize>,
    inputs: Vec<IoSlot>,
    outputs: Vec<IoSlot>,
    program: Option<DeviceProgram>,
    /// The rendezvous and rank of a collective program loaded by `nrt_load_collectives`.
    group: Option<(Arc<crate::device_program::Rendezvous>, usize)>,
    info: Vec<TensorInfo>,
    counters: Counters,
    /// Everything staged at load; freed when the last launch using the model ends.
    _staged: Vec<DeviceBlock>,
}

/// The loads a collective instance is made of: the module's bytes and the world size.
type RendezvousKey = (Vec<u8>, u32);

/// A collective instance still being loaded: its rendezvous and the ranks loaded into it so far.
struct OpenGroup {
    rendezvous: Arc<crate::device_program::Rendezvous>,
    ranks: std::collections::BTreeSet<u32>,
}

fn read_lock<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

fn write_lock<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn check_range(name: &str, offset: usize, len: usize, size: usize) -> Result<(), NrtError> {
    match offset.checked_add(len) {
        Some(end) if end <= size => Ok(()),
        _ => Err(NrtError::new(
            NrtStatus::Invalid,
            format!(
                "range {offset}..{} of tensor {name:?} is out of bounds, expected within its {size} bytes",
                offset as u128 + len as u128
            ),
        )),
    }
}

/// The kinds of warning the simulator gives; the record holds one entry per kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WarningKind {
    /// A model without a device program: its outputs stay zero.
    OpaqueProgram,
    /// `nrt_tensor_check_output_completion` waited its full timeout for a tensor.
    CompletionWait,
    /// A device program failed at execute (what only the data can cause: a while loop over its
    /// limit, an array over the budget, a collective launch whose ranks did not meet).
    DeviceProgramFailed,
}

impl WarningKind {
    /// Whether this kind was printed already in this process (it is printed once per process,
    /// whatever the number of runtimes).
    fn printed(self) -> &'static AtomicBool {
        static OPAQUE_PROGRAM: AtomicBool = AtomicBool::new(false);
        static COMPLETION_WAIT: AtomicBool = AtomicBool::new(false);
        static DEVICE_PROGRAM_FAILED: AtomicBool = AtomicBool::new(false);
        match self {
            WarningKind::OpaqueProgram => &OPAQUE_PROGRAM,
            WarningKind::CompletionWait => &COMPLETION_WAIT,
            WarningKind::DeviceProgramFailed => &DEVICE_PROGRAM_FAILED,
        }
    }
}

/// One kind of warning seen by a runtime: its first message and how often it came.
#[derive(Debug)]
struct WarningRecord {
    kind: WarningKind,
    first_message: String,
    count: u64,
}

/// A simulated libnrt: NeuronCores with sparse HBM, tensors, sets, models and a device program.
pub struct SimRuntime {
    config: SimConfig,
    /// Why [`SimConfig::core_scope`] does not fit the machine, when it does not: `nrt_init`
    /// fails with it.
    scope_error: Option<crate::config::CoreScopeError>,
    lifecycle: AtomicU8,
    next_handle: AtomicU64,
    cores: Vec<Core>,
    tensors: RwLock<HashMap<TensorId, Arc<Tensor>>>,
    /// Sets map exact name bytes to tensors: names are bytes, as C strings are.
    sets: RwLock<HashMap<SetId, HashMap<Vec<u8>, TensorId>>>,
    models: RwLock<HashMap<ModelId, Arc<LoadedModel>>>,
    /// How many models each core holds; also serialises loads.
    occupancy: Mutex<Vec<u32>>,
    faults: FaultInjector,
    warnings: Mutex<Vec<WarningRecord>>,
    events: EventLog,
    /// The queues of the async API; their jobs hold [`SimRuntime::this`] while they wait.
    queues: AsyncQueues,
    /// This runtime, when it was made by [`SimRuntime::new_shared`] (the async API needs it).
    this: Weak<SimRuntime>,
    /// Launches of device programs, when recording is on ([`SimRuntime::record_launches`]).
    launch_log: Mutex<Option<Vec<crate::device_program::LaunchRecord>>>,
    /// The collective instances still missing a rank, oldest first, by module bytes and world
    /// size (see [`SimRuntime::join_group`]); a full instance lives only in its models.
    rendezvous: Mutex<HashMap<RendezvousKey, Vec<OpenGroup>>>,
    /// The profiler of `nrt_profile.h`.
    profiling: crate::profile::Profiling,
    /// The communicators of `nrt_barrier` and `nrt_all_gather`, by world size.
    collectives: crate::collectives::Collectives,
}

impl std::fmt::Debug for SimRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimRuntime").field("config", &self.config).finish_non_exhaustive()
    }
}
impl SimRuntime {
    /// A simulated machine as `config` describes it (uninitialized: call [`RuntimeNrt::init`](abi::runtime::RuntimeNrt::init)).
    ///
    /// # Errors
    /// [`SimConfigError`] for zero cores, an invalid fault plan, or an HBM mapping the system
    /// refuses.
    pub fn new(config: SimConfig) -> Result<SimRuntime, SimConfigError> {
        if config.n_cores == 0 {
            return Err(SimConfigError::NoCores);
        }
        config.fault_plan.validate()?;
        // A scope that does not fit the machine leaves no visible core, and `nrt_init` fails
        // with the reason, as libnrt's `nrt_init` does; the total counts still work.
        let (visible, scope_error) = match config.core_scope.resolve(config.n_cores) {
            Ok(visible) => (visible, None),
            Err(err) => (0..0, Some(err)),
        };
        // The process's vnc `i` is machine core `visible.start + i`; the simulated cores are
        // alike, so only the count of visible ones is kept.
        let cores = (0..u32::try_from(visible.len()).unwrap_or(u32::MAX))
            .map(|core| {
                let memory =
                    CoreMemory::new(core, config.hbm_bytes_per_core).map_err(|source| {
                        SimConfigError::HbmMapping {
                            core,
                            bytes: config.hbm_bytes_per_core,
                            source,
                        }
                    })?;
                Ok(Core {
                    memory: Arc::new(memory),
                    launch: Mutex::new(()),
                    counters: Counters::default(),
                })
            })
            .collect::<Result<Vec<Core>, SimConfigError>>()?;
        let config_cores = u32::try_from(cores.len()).unwrap_or(u32::MAX);
        let collective_timeout = config.collective_timeout;
        Ok(SimRuntime {
            faults: FaultInjector::new(&config.fault_plan),
            occupancy: Mutex::new(vec![0; cores.len()]),
            config,
            scope_error,
            lifecycle: AtomicU8::new(UNINITIALIZED),
            next_handle: AtomicU64::new(1),
            cores,
            tensors: RwLock::new(HashMap::new()),
            sets: RwLock::new(HashMap::new()),
            models: RwLock::new(HashMap::new()),
            warnings: Mutex::new(Vec::new()),
            events: EventLog::new(),
            queues: AsyncQueues::new(config_cores),
            this: Weak::new(),
            launch_log: Mutex::new(None),
            rendezvous: Mutex::new(HashMap::new()),
            profiling: crate::profile::Profiling::default(),
            collectives: crate::collectives::Collectives::new(collective_timeout),
        })
    }

    /// [`SimRuntime::new`], shared: the runtime knows its own `Arc`, so the async API
    /// (`nrta_*`, whose requests run later on worker threads) can keep it alive for them.
    ///
    /// # Errors
    /// As [`SimRuntime::new`].
    pub fn new_shared(config: SimConfig) -> Result<Arc<SimRuntime>, SimConfigError> {
        let runtime = SimRuntime::new(config)?;
        Ok(Arc::new_cyclic(|this| SimRuntime { this: this.clone(), ..runtime }))
    }

    /// The configuration the runtime was built with.
    pub fn config(&self) -> &SimConfig {
        &self.config
    }

    /// The NeuronCores this process sees (`nrt_get_visible_nc_count`): those of
    /// [`SimConfig::core_scope`], numbered from vnc 0; none when the scope does not fit.
    pub fn visible_core_count(&self) -> u32 {
        u32::try_from(self.cores.len()).unwrap_or(u32::MAX)
    }

    /// The `nrt_dtype_t` numbering of the imitated release (what a C layer writes into
    /// `nrt_tensor_info_t.dtype`).
    pub fn dtype_numbering(&self) -> DtypeNumbering {
        self.config.release.dtype_numbering
    }

    /// Traffic of one loaded model's launches; `None` for an unknown or unloaded model.
    pub fn model_counters(&self, model: ModelId) -> Option<TrafficCounters> {
        read_lock(&self.models).get(&model).map(|loaded| loaded.counters.snapshot())
    }

    /// Traffic of one NeuronCore (launches and device-tensor reads and writes); `None` for a core
    /// that does not exist.
    pub fn core_counters(&self, vnc: u32) -> Option<TrafficCounters> {
        self.cores.get(vnc as usize).map(|core| core.counters.snapshot())
    }

    /// The NeuronCores a loaded model occupies, first core first (`nrt_get_model_vnc_count`,
    /// `nrt_get_model_info`), after the lifecycle gate and fault plan of `function`.
    ///
    /// # Errors
    /// The lifecycle statuses, an injected status, or [`NrtStatus::InvalidHandle`] for an
    /// unknown model.
    pub fn model_cores(
        &self,
        function: LibnrtFunction,
        model: ModelId,
    ) -> Result<Vec<u32>, NrtError> {
        self.enter(function)?;
        Ok(self.model(model)?.cores.clone())
    }

    /// The gate of `function`, then the checks every collective makes: `vnc` names a core of
    /// this machine, and `rank` belongs to the world of `world` ranks.
    fn collective(
        &self,
        function: LibnrtFunction,
        vnc: i64,
        rank: u32,
        world: u32,
    ) -> Result<Arc<crate::collectives::Communicator>, NrtError> {
        self.enter(function)?;
        if vnc < 0 || vnc >= i64::from(self.visible_core_count()) {
            return Err(NrtError::new(
                NrtStatus::Invalid,
                format!(
                    "{function}: vnc {vnc} is not a NeuronCore (expected 0..{})",
                    self.visible_core_count()
                ),
            ));
        }
        self.collectives
            .communicator(rank, world)
            .map_err(|err| NrtError::new(err.status(), format!("{function}: {err}")))
    }

    /// How long a rank of `nrt_barrier` or `nrt_all_gather` waits for its peers before it fails
    /// with `NRT_TIMEOUT`, from now on ([`SimConfig::collective_timeout`] until set here).
    pub fn set_collective_timeout(&self, timeout: std::time::Duration) {
        self.collectives.set_timeout(timeout);
    }

    /// The event stream: system-trace capture and profiles (`nrt_sys_trace_*`, `nrt_profile_*`).
    pub fn events(&self) -> &EventLog {
        &self.events
    }

    /// Why `function` cannot exist on a simulator; `None` for a function it models.
    pub fn unsupported_reason(function: LibnrtFunction) -> Option<&'static str> {
        Unsupported::ALL
            .iter()
            .find(|unsupported| unsupported.function() == function)
            .map(|unsupported| unsupported.reason())
    }

    /// The NeuronCore whose memory holds a tensor's storage; `None` for host, virtual and
    /// attached memory, and for a tensor without storage.
    ///
    /// # Errors
    /// [`NrtStatus::InvalidHandle`] for an unknown tensor.
    pub fn tensor_core(&self, tensor: TensorId) -> Result<Option<u32>, NrtError> {
        Ok(self.tensor(tensor)?.view.as_ref().and_then(|view| view.storage.core()))
    }

    /// Device bytes allocated on a NeuronCore (in 64-byte granules); `None` for a core that does
    /// not exist.
    pub fn device_bytes_in_use(&self, vnc: u32) -> Option<u64> {
        self.cores.get(vnc as usize).map(|core| core.memory.bytes_in_use())
    }

    /// [`Runtime::tensor_write`](abi::runtime::RuntimeNrt::tensor_write) for bytes a caller cannot lend as a slice: C memory that may
    /// overlap the simulator's own storage (a pointer from `nrt_tensor_get_va`). Checks exactly
    /// as `tensor_write` does; then `fill` copies the caller's `len` bytes into a staging buffer
    /// of the simulator's, which is written to the tensor, so the move behaves like `memmove`.
    ///
    /// # Errors
    /// As [`Runtime::tensor_write`](abi::runtime::RuntimeNrt::tensor_write), and [`NrtStatus::Resource`] when the staging buffer cannot
    /// be allocated.
    pub fn tensor_write_staged(
        &self,
        tensor: TensorId,
        offset: usize,
        len: usize,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<(), NrtError> {
        self.enter(LibnrtFunction::nrt_tensor_write)?;
        let tensor = self.tensor(tensor)?;
        let view = tensor.view()?;
        check_range(&tensor.name, offset, len, view.size)?;
        let mut staged = staging_buffer(LibnrtFunction::nrt_tensor_write.name(), len)?;
        fill(&mut staged);
        write_bytes(view.place(offset), &staged);
        self.count_device_traffic(&view.storage, true, len);
        Ok(())
    }

    /// Starts recording every launch of a device program: its module, arguments and results
    /// (for cross-checks of the simulator's results against another evaluator).
    pub fn record_launches(&self) {
        lock(&self.launch_log).get_or_insert_with(Vec::new);
    }

    /// The launches recorded since [`SimRuntime::record_launches`], oldest first.
    pub fn launches(&self) -> Vec<crate::device_program::LaunchRecord> {
        lock(&self.launch_log).clone().unwrap_or_default()
    }

    /// [`Runtime::tensor_read`](abi::runtime::RuntimeNrt::tensor_read) into memory a caller cannot lend as a slice (see
    /// [`SimRuntime::tensor_write_staged`]): the bytes are read into a staging buffer, which
    /// `drain` copies out.
    ///
    /// # Errors
    /// As [`Runtime::tensor_read`](abi::runtime::RuntimeNrt::tensor_read), and [`NrtStatus::Resource`] when the staging buffer cannot
    /// be allocated.
    pub fn tensor_read_staged(
        &self,
        tensor: TensorId,
        offset: usize,
        len: usize,
        drain: impl FnOnce(&[u8]),
    ) -> Result<(), NrtError> {
        self.enter(LibnrtFunction::nrt_tensor_read)?;
        let tensor = self.tensor(tensor)?;
        let view = tensor.view()?;
        check_range(&tensor.name, offset, len, view.size)?;
        let mut staged = staging_buffer(LibnrtFunction::nrt_tensor_read.name(), len)?;
        read_bytes(view.place(offset), &mut staged);
        self.count_device_traffic(&view.storage, false, len);
        drain(&staged);
        Ok(())
    }

    /// One message per kind of warning seen so far (the first occurrence's), oldest kind first.
    /// The record is bounded by the number of kinds: a warning repeated on every load is counted,
    /// not kept again (see [`SimRuntime::warning_count`]).
    pub fn warnings(&self) -> Vec<String> {
        lock(&self.warnings).iter().map(|record| record.first_message.clone()).collect()
    }

    /// How many warnings were raised in all, repeats included.
    pub fn warning_count(&self) -> u64 {
        lock(&self.warnings).iter().map(|record| record.count).sum()
    }

    /// Records a warning of `kind`; the first of each kind in the process goes to stderr (when
    /// configured), later ones only raise the count.
    fn warn(&self, kind: WarningKind, message: impl FnOnce() -> String) {
        let mut records = lock(&self.warnings);
        if let Some(record) = records.iter_mut().find(|record| record.kind == kind) {
            record.count += 1;
            return;
        }
        let message = message();
        if self.config.warnings_to_stderr && !kind.printed().swap(true, Ordering::Relaxed) {
            eprintln!("nrtsim warning: {message}");
        }
        records.push(WarningRecord { kind, first_message: message, count: 1 });
    }

    fn next_id(&self) -> u64 {
        self.next_handle.fetch_add(1, Ordering::Relaxed)
    }

    /// Whether `nrt_init` has run and `nrt_close` has not since.
    pub fn is_initialized(&self) -> bool {
        self.lifecycle.load(Ordering::Acquire) == INITIALIZED
    }

    /// The one lifecycle gate, from the function table's pre-init rule: a
    /// [`PreInit::Gated`] function is `NRT_UNINITIALIZED` before `nrt_init` and `NRT_CLOSED`
    /// after `nrt_close`; a [`PreInit::Required`] one is `NRT_INVALID` once the runtime is
    /// initialized; the others pass in every state. The C layer calls it for the functions it
    /// serves without the simulator.
    ///
    /// # Errors
    /// The lifecycle status, as above.
    pub fn gate(&self, function: LibnrtFunction) -> Result<(), NrtError> {
        let state = self.lifecycle.load(Ordering::Acquire);
        match (function.info().pre_init, state) {
            (PreInit::Gated, INITIALIZED) => Ok(()),
            (PreInit::Gated, UNINITIALIZED) => Err(NrtError::new(
                NrtStatus::Uninitialized,
                format!("{function} called before nrt_init"),
            )),
            (PreInit::Gated, _) => {
                Err(NrtError::new(NrtStatus::Closed, format!("{function} called after nrt_close")))
            }
            (PreInit::Required, INITIALIZED) => Err(NrtError::new(
                NrtStatus::Invalid,
                format!("{function} called after nrt_init, expected it before"),
            )),
            (PreInit::Required | PreInit::Allowed | PreInit::Ungated, _) => Ok(()),
        }
    }

    /// The lifecycle gate, then the fault plan (for a function the table marks faultable).
    ///
    /// # Errors
    /// The lifecycle status, or an injected one.
    pub fn enter(&self, function: LibnrtFunction) -> Result<(), NrtError> {
        self.gate(function)?;
        if function.is_faultable() { self.faults.check(function) } else { Ok(()) }
    }

    fn tensor(&self, tensor: TensorId) -> Result<Arc<Tensor>, NrtError> {
        read_lock(&self.tensors).get(&tensor).cloned().ok_or_else(|| {
            NrtError::new(NrtStatus::InvalidHandle, format!("tensor {} is not allocated", tensor.0))
        })
    }

    fn model(&self, model: ModelId) -> Result<Arc<LoadedModel>, NrtError> {
        read_lock(&self.models).get(&model).cloned().ok_or_else(|| {
            NrtError::new(NrtStatus::InvalidHandle, format!("model {} is not loaded", model.0))
        })
    }

    fn unknown_set(set: SetId) -> NrtError {
        NrtError::new(NrtStatus::InvalidHandle, format!("tensor set {} is not allocated", set.0))
    }

    fn count_device_traffic(&self, storage: &Storage, to_device: bool, n_bytes: usize) {
        if let Some(core) = storage.core() {
            self.cores[core as usize].counters.dma(to_device, n_bytes as u64);
            let now = self.events.now_ns();
            self.events.record(Event {
                kind: if to_device { "dma_to_device" } else { "dma_from_device" },
                nc: core,
                start_ns: now,
                end_ns: now,
                model: None,
                bytes: Some(n_bytes as u64),
                status: None,
            });
        }
    }

    /// What a launch scheduled to run later (`nrta_execute_schedule`) is checked for when it is
    /// scheduled: both sets exist and name no tensor freed since it was added (the rest of the
    /// I/O contract is checked when it runs). The C layer, which schedules on queues of its own,
    /// calls this too, so both refuse such a launch before it is queued.
    ///
    /// # Errors
    /// [`NrtStatus::InvalidHandle`] naming the freed tensor, its set and its name; an unknown
    /// set's status.
    pub fn check_sets_of_a_scheduled_launch(
        &self,
        function: LibnrtFunction,
        input_set: SetId,
        output_set: SetId,
    ) -> Result<(), NrtError> {
        for (set, which) in [(input_set, "input"), (output_set, "output")] {
            self.check_no_freed_member(function, set, which)?;
        }
        Ok(())
    }

    /// `set` exists and names no tensor freed since it was added.
    fn check_no_freed_member(
        &self,
        function: LibnrtFunction,
        set: SetId,
        which: &str,
    ) -> Result<(), NrtError> {
        let sets = read_lock(&self.sets);
        let entries = sets.get(&set).ok_or_else(|| SimRuntime::unknown_set(set))?;
        let tensors = read_lock(&self.tensors);
        match entries.iter().find(|(_, id)| !tensors.contains_key(id)) {
            Some((name, id)) => Err(NrtError::new(
                NrtStatus::InvalidHandle,
                format!(
                    "{function}: tensor {} was freed (nrt_tensor_free) while still in the {which} set under {}, expected it allocated until the set is destroyed or the name re-added",
                    id.0,
                    name_text(name)
                ),
            )),
            None => Ok(()),
        }
    }
}

mod async_exec;
mod experimental;
mod nrt;
mod profile;
mod sys_trace;

/// The functions a simulator cannot have, each with the reason it gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unsupported {
    /// `nrt_get_dmabuf_fd`.
    DmabufFd,
    /// `nrt_get_hbm_mmap_va`.
    HbmMmapVa,
    /// `nrt_get_attached_efa_bdf`.
    AttachedEfaBdf,
}

impl Unsupported {
    /// Every one.
    pub(crate) const ALL: &'static [Unsupported] =
        &[Unsupported::DmabufFd, Unsupported::HbmMmapVa, Unsupported::AttachedEfaBdf];

    /// The libnrt function.
    pub(crate) fn function(self) -> LibnrtFunction {
        match self {
            Unsupported::DmabufFd => LibnrtFunction::nrt_get_dmabuf_fd,
            Unsupported::HbmMmapVa => LibnrtFunction::nrt_get_hbm_mmap_va,
            Unsupported::AttachedEfaBdf => LibnrtFunction::nrt_get_attached_efa_bdf,
        }
    }

    /// Why a simulator cannot have it.
    pub(crate) fn reason(self) -> &'static str {
        match self {
            Unsupported::DmabufFd => "no dma-buf exists without a Neuron device",
            Unsupported::HbmMmapVa => "simulated HBM cannot be mapped into the caller",
            Unsupported::AttachedEfaBdf => "no EFA device is attached to a simulated device",
        }
    }
}
