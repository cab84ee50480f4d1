//! `nrtsim/bind.h`: the binding layer (`bind`, libtorchneuron's rules) as a small C API, so that
//! a C++ TorchBind layer (the `nrtsim-torch` package) can give torch programs
//! `torch.classes.neuron.Model`, `SPMDModel` and `torch.ops.neuron.forward_v2` with every rule
//! still written once, in Rust.
//!
//! The models run on this library's own simulator, the one every `nrt_*` export of the process
//! uses, so a program that mixes torch objects with direct libnrt calls sees one device, as it
//! does with libtorchneuron over libnrt; or, when `NRTSIM_TORCH_LIBNRT` names a `libnrt.so.1`
//! (a real one on a Neuron instance), on that library through the `nrt` backend, with the same
//! rules (`nrtsim_bind_backend` says which).
//!
//! The C symbols are trampolines to these functions, versioned `NRTSIM_BIND_1` by `libnrt.map`
//! (see [`crate::symbols`]), as libnrt's are `NRT_2.0.0`.
//!
//! Conventions (the header says the same for C users):
//! - Every function returns an `nrtsim_bind_status_t`; on failure, `nrtsim_bind_last_error`
//!   gives this thread's message, which says what was expected and what came.
//! - Models and results are numbers from registries of their own, never addresses; a freed
//!   number stays invalid forever.
//! - Tensors cross as (`c10` scalar type index, shape, bytes). A forward's input bytes are lent
//!   to it for the call, read where they lie. `nrtsim_bind_forward` keeps its outputs, which the
//!   caller copies out (`nrtsim_bind_result_copy`); `nrtsim_bind_forward_into` reads them straight
//!   into buffers the caller's callback gives and writes donated inputs where they lie. C's memory
//!   is a Rust slice only inside such a call, behind one [`Lent`] per buffer, none overlapping
//!   another that is written.
//! - An SPMD model is made when it is first initialised or run (`bind::SpmdModel` loads with
//!   its weights); its constructor checks the NEFF and metaneff so that bad bytes fail there.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{CString, c_char, c_void};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use abi::dtype::ScalarType;
use abi::runtime::prelude::*;
use abi::runtime::{Framework, Runtime};
use bind::{
    BindError, ForwardOutput, HostTensor, LentBytes, Model, ModelOptions, OutputTensors, SpmdModel,
    Weights, Zeroed,
};

use super::guard;
use crate::handles::{global, lock};

/// Success.
const OK: i32 = 0;
/// A NULL pointer, an unknown number, an unknown scalar type or sizes that do not agree.
const INVALID_ARGUMENT: i32 = 1;
/// One of libtorchneuron's checks of an input failed (dtype, shape, count, ...).
const VALIDATE: i32 = 2;
/// The metaneff does not decode or does not describe a model the layer can bind.
const METANEFF: i32 = 3;
/// The NEFF does not load.
const LOAD: i32 = 4;
/// A runtime call failed at execute, write or read.
const RUNTIME: i32 = 5;
/// What the simulator does not model.
const UNSUPPORTED: i32 = 6;
/// A bug: a panic caught at the boundary.
const INTERNAL: i32 = 7;

thread_local! {
    /// This thread's last failure: its message.
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// Records `message` as this thread's last error and returns `status`.
fn fail(status: i32, message: impl Into<String>) -> i32 {
    let text = message.into().replace('\0', "\\0");
    let text = CString::new(text).unwrap_or_default();
    LAST_ERROR.with(|last| *last.borrow_mut() = text);
    status
}

/// The status and message of a binding-layer error.
fn bind_failure(error: &BindError) -> i32 {
    let status = match error {
        BindError::Rank { source, .. } => return fail(status_of(source), error.to_string()),
        other => status_of(other),
    };
    let prefix = match status {
        METANEFF => "the metaneff does not describe a model: ",
        LOAD => "the NEFF does not load: ",
        _ => "",
    };
    fail(status, format!("{prefix}{error}"))
}

fn status_of(error: &BindError) -> i32 {
    match error {
        BindError::Validate(_) => VALIDATE,
        BindError::Runtime { call: "load" | "load_collectives", .. } => LOAD,
        BindError::Runtime { .. } => RUNTIME,
        BindError::Metaneff(_)
        | BindError::Dtype { .. }
        | BindError::UnknownTensorType { .. }
        | BindError::AliasOutOfRange { .. }
        | BindError::MissingCheckpointKey { .. } => METANEFF,
        BindError::Rank { source, .. } => status_of(source),
        BindError::ThreadPanicked { .. } => INTERNAL,
        _ => INVALID_ARGUMENT,
    }
}

/// Runs a body under the panic guard; a panic is `INTERNAL` with a message.
fn call(name: &str, body: impl FnOnce() -> i32) -> i32 {
    const PANICKED: i32 = -1;
    match guard(name, PANICKED, body) {
        PANICKED => fail(INTERNAL, format!("{name} panicked, a bug of nrtsim (see stderr)")),
        status => status,
    }
}

/// A model of either kind.
enum Entry {
    Model(Box<Model>),
    Spmd(Spmd),
}

/// An SPMD model: the bytes and counts until the first initialise or forward makes it.
struct Spmd {
    neff: Vec<u8>,
    metaneff: Vec<u8>,
    local_ranks: i64,
    world_size: i64,
    made: Option<SpmdModel>,
}

impl Spmd {
    /// The model, made now with no weights if it was not made yet.
    fn model(&mut self, runtime: Arc<dyn Runtime>) -> Result<&mut SpmdModel, BindError> {
        if self.made.is_none() {
            self.made = Some(SpmdModel::new(
                runtime,
                &self.neff,
                &self.metaneff,
                self.local_ranks,
                self.world_size,
                ModelOptions::default(),
            )?);
        }
        Ok(self.made.as_mut().expect("made above"))
    }
}

/// What a forward returned, per rank.
struct Outcome {
    ranks: Vec<RankOutcome>,
}

/// One output of a result: what it is, and its bytes unless the caller's buffer holds them.
struct OutputOf {
    scalar_type: ScalarType,
    shape: Vec<i64>,
    n_bytes: usize,
    /// `None` after `nrtsim_bind_forward_into`: the output is in the caller's buffer.
    bytes: Option<HostTensor>,
}

struct RankOutcome {
    outputs: Vec<OutputOf>,
    /// The caller's inputs the launch wrote (donated to an output), by position, with their
    /// new value (`None` after `nrtsim_bind_forward_into`: written where the input lies);
    /// returned or not as outputs, the caller gets them back through these.
    updated: Vec<(usize, Option<HostTensor>)>,
    /// For each output, the position of the caller's input it shares storage with.
    alias: Vec<i64>,
    status: i32,
}

#[derive(Default)]
struct Registry {
    models: Mutex<HashMap<u64, Arc<Mutex<Entry>>>>,
    results: Mutex<HashMap<u64, Arc<Outcome>>>,
    next: AtomicU64,
}

fn registry() -> &'static Registry {
    static REGISTRY: std::sync::OnceLock<Registry> = std::sync::OnceLock::new();
    REGISTRY.get_or_init(|| Registry { next: AtomicU64::new(1), ..Registry::default() })
}

fn new_id() -> u64 {
    registry().next.fetch_add(1, Ordering::Relaxed)
}

/// Registers a model and writes its number through `out`.
///
/// # Safety
/// `out` points at a writable `uint64_t`.
unsafe fn register(entry: Entry, out: *mut u64) -> i32 {
    let id = new_id();
    lock(&registry().models).insert(id, Arc::new(Mutex::new(entry)));
    // SAFETY: by the caller's contract.
    unsafe { *out = id };
    OK
}

fn entry(model: u64) -> Result<Arc<Mutex<Entry>>, i32> {
    lock(&registry().models).get(&model).cloned().ok_or_else(|| {
        fail(INVALID_ARGUMENT, format!("model {model} is not a live model of this library"))
    })
}

fn outcome(result: u64) -> Result<Arc<Outcome>, i32> {
    lock(&registry().results).get(&result).cloned().ok_or_else(|| {
        fail(INVALID_ARGUMENT, format!("result {result} is not a live result of this library"))
    })
}

/// The variable that puts the layer's models on a real libnrt: the library's path.
const LIBNRT_VAR: &str = "NRTSIM_TORCH_LIBNRT";

/// The layer's runtime: the library's own simulator, or, when [`LIBNRT_VAR`] names a
/// `libnrt.so.1`, that library through the `nrt` backend (opened once, and initialised as the
/// backend does). The simulator is initialised for PyTorch first if no one has (libtorchneuron
/// calls `nrt_init` itself before its first model; a program that already did keeps its own).
fn runtime() -> Result<Arc<dyn Runtime>, i32> {
    if let Some(path) = std::env::var_os(LIBNRT_VAR) {
        static REAL: std::sync::OnceLock<Result<Arc<dyn Runtime>, String>> =
            std::sync::OnceLock::new();
        return REAL
            .get_or_init(|| {
                nrt::NrtRuntime::open_path(std::path::Path::new(&path))
                    .map(|runtime| Arc::new(runtime) as Arc<dyn Runtime>)
                    .map_err(|error| {
                        format!("{LIBNRT_VAR}={}: {error}", std::path::Path::new(&path).display())
                    })
            })
            .clone()
            .map_err(|message| fail(LOAD, message));
    }
    let g = global().map_err(|status| {
        fail(RUNTIME, format!("the simulator is not configured (status {status}); see stderr"))
    })?;
    if !g.sim.is_initialized() {
        if let Err(error) = g.sim.init(Framework::Pytorch, "", "") {
            // Another thread may have initialised it meanwhile; only a failure that leaves it
            // uninitialised is one.
            if !g.sim.is_initialized() {
                return Err(fail(RUNTIME, format!("nrt_init failed: {error}")));
            }
        }
    }
    Ok(Arc::clone(&g.sim) as Arc<dyn Runtime>)
}

/// Which runtime the layer's models run on: `sim`, or `nrt PATH` for the libnrt that
/// `NRTSIM_TORCH_LIBNRT` names. A NUL-terminated string for the life of the process.
pub extern "C" fn nrtsim_bind_backend() -> *const c_char {
    static NAME: std::sync::OnceLock<CString> = std::sync::OnceLock::new();
    NAME.get_or_init(|| {
        let name = match std::env::var_os(LIBNRT_VAR) {
            Some(path) => format!("nrt {}", std::path::Path::new(&path).display()),
            None => "sim".to_owned(),
        };
        CString::new(name.replace('\0', "")).unwrap_or_default()
    })
    .as_ptr()
}

/// Refuses a NULL `data` said to hold `size` (non-zero) bytes.
fn not_null(data: *const c_void, size: usize, what: &str) -> Result<(), i32> {
    if data.is_null() {
        return Err(fail(INVALID_ARGUMENT, format!("{what} is NULL with a size of {size} bytes")));
    }
    Ok(())
}

/// `size` bytes at `data`, copied; an empty slice for size 0 (whatever `data` is).
///
/// # Safety
/// Unless `size` is 0, `data` points at `size` readable bytes.
unsafe fn bytes_of(data: *const c_void, size: usize, what: &str) -> Result<Vec<u8>, i32> {
    if size == 0 {
        return Ok(Vec::new());
    }
    not_null(data, size, what)?;
    let mut copy = Vec::new();
    copy.try_reserve_exact(size).map_err(|_| {
        fail(INVALID_ARGUMENT, format!("{what}: {size} bytes could not be allocated"))
    })?;
    // SAFETY: non-NULL, and `size` readable bytes by the caller's contract.
    copy.extend_from_slice(unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size) });
    Ok(copy)
}

/// One tensor as C gives it.
#[repr(C)]
pub struct nrtsim_bind_tensor_t {
    scalar_type: i32,
    ndim: i32,
    shape: *const i64,
    data: *const c_void,
    nbytes: usize,
}

/// A named tensor (a weight or a state, by `checkpoint_key`).
#[repr(C)]
pub struct nrtsim_bind_named_tensor_t {
    name: *const c_char,
    name_len: usize,
    tensor: nrtsim_bind_tensor_t,
}

/// One output as C reads it.
#[repr(C)]
pub struct nrtsim_bind_output_t {
    scalar_type: i32,
    ndim: i32,
    shape: *const i64,
    nbytes: usize,
    alias_input: i64,
    status: i32,
}

/// A C caller's bytes, used where they lie for the length of one forward: the forward makes
/// every tensor on them bytes of its own, or forgets it, before it returns ([`rank_outcome`]),
/// so none outlives the call.
struct Lent {
    data: *mut u8,
    len: usize,
    /// Whether the forward may write them (a donated input or an output buffer of
    /// `nrtsim_bind_forward_into`); made so only when no other lent buffer of the call overlaps
    /// them ([`overlaps`]).
    writable: bool,
}

// SAFETY: by the caller's contract the bytes are neither freed nor touched by the caller while
// the call that lent them runs; a forward's ranks use them from their own threads meanwhile,
// each `Lent` behind its storage's lock, and a writable one overlaps no other `Lent`.
unsafe impl Send for Lent {}
// SAFETY: as for `Send`: `&self` only reads, and writes need the storage's write lock.
unsafe impl Sync for Lent {}

impl LentBytes for Lent {
    fn bytes(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: non-NULL (checked where made) and `len` readable bytes for the call, by the
        // caller's contract; a writer of them holds `&mut self`, so none runs meanwhile.
        unsafe { std::slice::from_raw_parts(self.data, self.len) }
    }

    fn bytes_mut(&mut self) -> Option<&mut [u8]> {
        if !self.writable {
            return None;
        }
        if self.len == 0 {
            return Some(&mut []);
        }
        // SAFETY: non-NULL and `len` writable bytes for the call by the caller's contract; no
        // other `Lent` overlaps them (checked where made), and `&mut self` excludes this one's
        // readers.
        Some(unsafe { std::slice::from_raw_parts_mut(self.data, self.len) })
    }
}

/// Whether the byte ranges `(start, len)` `a` and `b` share a byte.
fn overlaps(a: (usize, usize), b: (usize, usize)) -> bool {
    a.1 > 0 && b.1 > 0 && a.0 < b.0.saturating_add(b.1) && b.0 < a.0.saturating_add(a.1)
}

/// How [`host_tensor`] takes the caller's bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Take {
    /// A copy, for tensors the model keeps (weights, states).
    Copy,
    /// Lent for the length of the call (a forward's inputs), writable or read only.
    Lend { writable: bool },
}

/// A host tensor from C's description, its bytes copied or lent.
///
/// # Safety
/// `tensor.shape` points at `ndim` values (unless 0) and `tensor.data` at `nbytes` bytes
/// (unless 0); lent bytes stay readable and unwritten until every tensor on them is dropped or
/// made owned.
unsafe fn host_tensor(
    tensor: &nrtsim_bind_tensor_t,
    what: &str,
    take: Take,
) -> Result<HostTensor, i32> {
    let scalar_type = u8::try_from(tensor.scalar_type)
        .ok()
        .and_then(ScalarType::from_index)
        .ok_or_else(|| {
            fail(
                INVALID_ARGUMENT,
                format!(
                    "{what}: scalar type {} is not a c10 scalar type this ABI knows",
                    tensor.scalar_type
                ),
            )
        })?;
    let ndim = usize::try_from(tensor.ndim)
        .map_err(|_| fail(INVALID_ARGUMENT, format!("{what}: ndim {} is negative", tensor.ndim)))?;
    let shape: Vec<i64> = if ndim == 0 {
        Vec::new()
    } else if tensor.shape.is_null() {
        return Err(fail(INVALID_ARGUMENT, format!("{what}: shape is NULL with ndim {ndim}")));
    } else {
        // SAFETY: non-NULL, `ndim` values by the caller's contract.
        unsafe { std::slice::from_raw_parts(tensor.shape, ndim) }.to_vec()
    };
    let made = if let (Take::Lend { writable }, 1..) = (take, tensor.nbytes) {
        not_null(tensor.data, tensor.nbytes, what)?;
        let lent = Lent { data: tensor.data.cast::<u8>().cast_mut(), len: tensor.nbytes, writable };
        HostTensor::lent(scalar_type, &shape, Box::new(lent))
    } else {
        // SAFETY: by the caller's contract.
        let bytes = unsafe { bytes_of(tensor.data, tensor.nbytes, what) }?;
        HostTensor::from_bytes(scalar_type, &shape, bytes)
    };
    made.map_err(|error| fail(INVALID_ARGUMENT, format!("{what}: {error}")))
}

/// The last error of the calling thread: a NUL-terminated message, valid until this thread's
/// next call of this API (empty before any failure).
pub extern "C" fn nrtsim_bind_last_error() -> *const c_char {
    LAST_ERROR.with(|last| last.borrow().as_ptr())
}

/// A model's NEFF and metaneff bytes, copied (the model keeps them).
///
/// # Safety
/// `neff` and `metaneff` point at their sizes' bytes.
unsafe fn model_bytes(
    neff: *const c_void,
    neff_size: usize,
    metaneff: *const c_void,
    metaneff_size: usize,
) -> Result<(Vec<u8>, Vec<u8>), i32> {
    // SAFETY: by the caller's contract.
    let neff = unsafe { bytes_of(neff, neff_size, "neff") }?;
    // SAFETY: by the caller's contract.
    let metaneff = unsafe { bytes_of(metaneff, metaneff_size, "metaneff") }?;
    Ok((neff, metaneff))
}

/// A model from NEFF and metaneff bytes (`torch.classes.neuron.Model(neff, metaneff)`).
///
/// # Safety
/// `neff` and `metaneff` point at their sizes' bytes; `out` at a writable `uint64_t`.
pub unsafe extern "C" fn nrtsim_bind_model_new(
    neff: *const c_void,
    neff_size: usize,
    metaneff: *const c_void,
    metaneff_size: usize,
    out: *mut u64,
) -> i32 {
    call("nrtsim_bind_model_new", || {
        if out.is_null() {
            return fail(INVALID_ARGUMENT, "out is NULL");
        }
        // SAFETY: by the caller's contract.
        let (neff, metaneff) =
            try_status!(unsafe { model_bytes(neff, neff_size, metaneff, metaneff_size) });
        let runtime = try_status!(runtime());
        match Model::new(runtime, &neff, &metaneff, ModelOptions::default()) {
            // SAFETY: `out` is non-NULL (checked above) and writable by the caller's contract.
            Ok(model) => unsafe { register(Entry::Model(Box::new(model)), out) },
            Err(error) => bind_failure(&error),
        }
    })
}

/// An SPMD model (`torch.classes.neuron.SPMDModel(neff, metaneff, local_ranks, world_size)`).
/// The metaneff is decoded and the NEFF read now; the ranks load at the first
/// `nrtsim_bind_spmd_initialize` or forward.
///
/// # Safety
/// As [`nrtsim_bind_model_new`].
pub unsafe extern "C" fn nrtsim_bind_spmd_model_new(
    neff: *const c_void,
    neff_size: usize,
    metaneff: *const c_void,
    metaneff_size: usize,
    local_ranks: i64,
    world_size: i64,
    out: *mut u64,
) -> i32 {
    call("nrtsim_bind_spmd_model_new", || {
        if out.is_null() {
            return fail(INVALID_ARGUMENT, "out is NULL");
        }
        // SAFETY: by the caller's contract.
        let (neff, metaneff) =
            try_status!(unsafe { model_bytes(neff, neff_size, metaneff, metaneff_size) });
        if local_ranks < 1 || world_size < local_ranks {
            return bind_failure(&BindError::InvalidRanks { local_ranks, world_size });
        }
        if let Err(error) = abi::metaneff::Decoded::decode(&metaneff) {
            return bind_failure(&BindError::Metaneff(error));
        }
        if let Err(error) = abi::neff::Neff::parse(&neff, &abi::neff::ReadOptions::default()) {
            return fail(LOAD, format!("the NEFF does not load: {error}"));
        }
        let spmd = Spmd { neff, metaneff, local_ranks, world_size, made: None };
        // SAFETY: `out` is non-NULL (checked above) and writable by the caller's contract.
        unsafe { register(Entry::Spmd(spmd), out) }
    })
}

/// Releases a model (unloading it); the number is invalid afterwards.
pub extern "C" fn nrtsim_bind_model_free(model: u64) -> i32 {
    call("nrtsim_bind_model_free", || match lock(&registry().models).remove(&model) {
        Some(_) => OK,
        None => {
            fail(INVALID_ARGUMENT, format!("model {model} is not a live model of this library"))
        }
    })
}

/// Runs `body` on a plain model; an SPMD model is refused naming `what`.
fn with_model(
    model: u64,
    what: &str,
    body: impl FnOnce(&mut Model) -> Result<(), BindError>,
) -> i32 {
    let entry = try_status!(entry(model));
    let mut entry = lock(&entry);
    match &mut *entry {
        Entry::Model(model) => match body(model) {
            Ok(()) => OK,
            Err(error) => bind_failure(&error),
        },
        Entry::Spmd(_) => {
            fail(INVALID_ARGUMENT, format!("{what} is a method of Model, not of SPMDModel"))
        }
    }
}

/// `load` (1), `blocking_load` (2) or `unload` (3). An SPMD model takes `unload` only.
pub extern "C" fn nrtsim_bind_model_action(model: u64, action: i32) -> i32 {
    call("nrtsim_bind_model_action", || {
        if action == 3 {
            let entry = try_status!(entry(model));
            let mut entry = lock(&entry);
            let result = match &mut *entry {
                Entry::Model(model) => model.unload(),
                Entry::Spmd(spmd) => spmd.made.take().map_or(Ok(()), |mut made| made.unload()),
            };
            return match result {
                Ok(()) => OK,
                Err(error) => bind_failure(&error),
            };
        }
        match action {
            1 => with_model(model, "load", Model::load),
            2 => with_model(model, "blocking_load", Model::blocking_load),
            _ => fail(
                INVALID_ARGUMENT,
                format!("action {action}: expected 1 (load), 2 (blocking_load) or 3 (unload)"),
            ),
        }
    })
}

/// `set_async_load` (1), `set_lazy_load` (2) or `set_dynamic_batching` (3) with a boolean.
pub extern "C" fn nrtsim_bind_model_set_flag(model: u64, flag: i32, value: i32) -> i32 {
    call("nrtsim_bind_model_set_flag", || {
        let value = value != 0;
        match flag {
            1 => with_model(model, "set_async_load", |m| m.set_async_load(value)),
            2 => with_model(model, "set_lazy_load", |m| m.set_lazy_load(value)),
            3 => with_model(model, "set_dynamic_batching", |m| m.set_dynamic_batching(value)),
            _ => fail(
                INVALID_ARGUMENT,
                format!(
                    "flag {flag}: expected 1 (async_load), 2 (lazy_load) or 3 (dynamic_batching)"
                ),
            ),
        }
    })
}

/// `n` values at `values` (NULL allowed for none).
///
/// # Safety
/// Unless `n` is 0, `values` points at `n` readable values.
unsafe fn int_list(values: *const i64, n: usize, what: &str) -> Result<Vec<i64>, i32> {
    if n == 0 {
        return Ok(Vec::new());
    }
    if values.is_null() {
        return Err(fail(INVALID_ARGUMENT, format!("{what} is NULL with {n} values")));
    }
    // SAFETY: by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(values, n) }.to_vec())
}

/// `set_dynamic_batching_mixed(inputs, outputs)`: one flag per input and per output.
///
/// # Safety
/// `inputs` and `outputs` point at their counts' values.
pub unsafe extern "C" fn nrtsim_bind_model_set_dynamic_batching_mixed(
    model: u64,
    inputs: *const i64,
    n_inputs: usize,
    outputs: *const i64,
    n_outputs: usize,
) -> i32 {
    call("nrtsim_bind_model_set_dynamic_batching_mixed", || {
        // SAFETY: by the caller's contract.
        let (inputs, outputs) = match unsafe {
            (int_list(inputs, n_inputs, "inputs"), int_list(outputs, n_outputs, "outputs"))
        } {
            (Ok(inputs), Ok(outputs)) => (inputs, outputs),
            (Err(status), _) | (_, Err(status)) => return status,
        };
        with_model(model, "set_dynamic_batching_mixed", |m| {
            m.set_dynamic_batching_mixed(&inputs, &outputs)
        })
    })
}

/// `set_neuron_devices(start, count)`.
pub extern "C" fn nrtsim_bind_model_set_neuron_devices(model: u64, start: i64, count: i64) -> i32 {
    call("nrtsim_bind_model_set_neuron_devices", || {
        with_model(model, "set_neuron_devices", |m| m.set_neuron_devices(start, count))
    })
}

/// `load_collectives(vnc, vnc_count, ctx_device_id, ctx_device_count)`.
pub extern "C" fn nrtsim_bind_model_load_collectives(
    model: u64,
    vnc: i64,
    vnc_count: i64,
    ctx_device_id: i64,
    ctx_device_count: i64,
) -> i32 {
    call("nrtsim_bind_model_load_collectives", || {
        with_model(model, "load_collectives", |m| {
            m.load_collectives(vnc, vnc_count, ctx_device_id, ctx_device_count)
        })
    })
}

/// `instance_count()`: 1 for a loaded (or loading) model, 0 otherwise; an SPMD model counts its
/// loaded ranks.
///
/// # Safety
/// `out` points at a writable `int64_t`.
pub unsafe extern "C" fn nrtsim_bind_model_instance_count(model: u64, out: *mut i64) -> i32 {
    call("nrtsim_bind_model_instance_count", || {
        if out.is_null() {
            return fail(INVALID_ARGUMENT, "out is NULL");
        }
        let entry = try_status!(entry(model));
        let count = match &*lock(&entry) {
            Entry::Model(model) => model.instance_count(),
            Entry::Spmd(spmd) => spmd.made.as_ref().map_or(0, |m| m.local_ranks() as i64),
        };
        // SAFETY: checked non-NULL; writable by the caller's contract.
        unsafe { *out = count };
        OK
    })
}

/// The model's NEFF (`which` 0) or current metaneff (`which` 1) bytes: with `dst` NULL, their
/// size in `*size`; otherwise copied into `dst`, which must hold exactly `*size` bytes.
///
/// # Safety
/// `size` points at a `size_t`; `dst` is NULL or points at `*size` writable bytes.
pub unsafe extern "C" fn nrtsim_bind_model_bytes(
    model: u64,
    which: i32,
    dst: *mut c_void,
    size: *mut usize,
) -> i32 {
    call("nrtsim_bind_model_bytes", || {
        if size.is_null() {
            return fail(INVALID_ARGUMENT, "size is NULL");
        }
        let entry = try_status!(entry(model));
        let entry = lock(&entry);
        let bytes: &[u8] = match (&*entry, which) {
            (Entry::Model(model), 0) => model.neff(),
            (Entry::Model(model), 1) => model.metaneff(),
            (Entry::Spmd(spmd), 0) => &spmd.neff,
            (Entry::Spmd(spmd), 1) => &spmd.metaneff,
            _ => {
                return fail(
                    INVALID_ARGUMENT,
                    format!("which {which}: expected 0 (neff) or 1 (metaneff)"),
                );
            }
        };
        if dst.is_null() {
            // SAFETY: checked non-NULL; writable by the caller's contract.
            unsafe { *size = bytes.len() };
            return OK;
        }
        // SAFETY: checked non-NULL; readable by the caller's contract.
        let given = unsafe { *size };
        if given != bytes.len() {
            return fail(
                INVALID_ARGUMENT,
                format!("dst holds {given} bytes, expected {}", bytes.len()),
            );
        }
        // SAFETY: `dst` holds `given` writable bytes by the caller's contract; the source is
        // Rust memory, which C does not alias.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst.cast::<u8>(), given) };
        OK
    })
}

/// A forward's inputs: the tensors of each list, lent, and where each lies in the caller's
/// memory (`(address, length)`).
struct Lists {
    tensors: Vec<Vec<HostTensor>>,
    ranges: Vec<Vec<(usize, usize)>>,
}

/// Reads `counts[r]` tensors per list from one concatenated array, each lent to the forward;
/// the ones at a position of `written` (the donated inputs of `nrtsim_bind_forward_into`) are
/// lent writable unless another input shares a byte with them.
///
/// # Safety
/// `tensors` points at `Σ counts` descriptions, each as [`host_tensor`] requires; `counts` at
/// `n_lists` values.
unsafe fn tensor_lists(
    tensors: *const nrtsim_bind_tensor_t,
    counts: *const usize,
    n_lists: usize,
    written: &[usize],
) -> Result<Lists, i32> {
    if n_lists == 0 || counts.is_null() {
        return Err(fail(INVALID_ARGUMENT, "expected at least one list of inputs, got none"));
    }
    // SAFETY: by the caller's contract.
    let counts = unsafe { std::slice::from_raw_parts(counts, n_lists) };
    let total = counts
        .iter()
        .try_fold(0usize, |sum, &n| sum.checked_add(n))
        .ok_or_else(|| fail(INVALID_ARGUMENT, "the input counts add up past the address space"))?;
    if total > 0 && tensors.is_null() {
        return Err(fail(INVALID_ARGUMENT, format!("inputs is NULL with {total} tensors")));
    }
    let described = if total == 0 {
        &[][..]
    } else {
        // SAFETY: non-NULL, `total` descriptions by the caller's contract.
        unsafe { std::slice::from_raw_parts(tensors, total) }
    };
    let range = |tensor: &nrtsim_bind_tensor_t| (tensor.data as usize, tensor.nbytes);
    let mut lists = Lists { tensors: Vec::with_capacity(n_lists), ranges: Vec::new() };
    let mut at = 0;
    for (list, &n) in counts.iter().enumerate() {
        let mut tensors_of_list = Vec::with_capacity(n.min(4096));
        let mut ranges_of_list = Vec::with_capacity(n.min(4096));
        for position in 0..n {
            let tensor = &described[at];
            let what = if n_lists == 1 {
                format!("input {position}")
            } else {
                format!("rank {list} input {position}")
            };
            let writable = written.contains(&position)
                && described.iter().enumerate().all(|(other, described)| {
                    other == at || !overlaps(range(tensor), range(described))
                });
            // SAFETY: by the caller's contract.
            tensors_of_list.push(unsafe { host_tensor(tensor, &what, Take::Lend { writable }) }?);
            ranges_of_list.push(range(tensor));
            at += 1;
        }
        lists.tensors.push(tensors_of_list);
        lists.ranges.push(ranges_of_list);
    }
    Ok(lists)
}

/// The callback of `nrtsim_bind_forward_into` (`nrtsim_bind_allocate_fn` in C): a buffer of `nbytes` writable bytes for the
/// output at `index` of `rank`'s list, of `scalar_type` and `shape` (`ndim` values), or NULL.
pub type AllocateFn = Option<Allocate>;

/// [`AllocateFn`]'s function.
pub type Allocate = unsafe extern "C" fn(
    context: *mut c_void,
    rank: usize,
    index: usize,
    scalar_type: i32,
    ndim: i32,
    shape: *const i64,
    nbytes: usize,
) -> *mut c_void;

/// The caller's outputs for `nrtsim_bind_forward_into`: each from its callback, lent writable
/// to the forward after a check that it overlaps no input and no other output.
struct CallerOutputs {
    allocate: Allocate,
    context: *mut c_void,
    /// The byte ranges of the inputs and of the buffers given so far; the lock also makes the
    /// ranks' calls of the callback one at a time.
    taken: Mutex<Vec<(usize, usize)>>,
}

// SAFETY: `context` is only passed to the callback, and every call holds `taken`'s lock, so the
// callback runs on one thread at a time, as the header promises.
unsafe impl Sync for CallerOutputs {}

impl OutputTensors for CallerOutputs {
    /// The caller's buffer for an output, from one call of the callback, lent writable (an
    /// empty output's answer is not used: nothing is written through it).
    fn output(
        &self,
        rank: usize,
        index: usize,
        scalar_type: ScalarType,
        shape: &[i64],
    ) -> Result<HostTensor, BindError> {
        let refuse = |actual: String| BindError::OutputTensor {
            index,
            expected: format!("{scalar_type} {shape:?}"),
            actual,
        };
        let n_bytes = scalar_type
            .n_bytes(shape)
            .ok()
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| refuse("a size past the address space".to_owned()))?;
        let mut taken = lock(&self.taken);
        let ndim = i32::try_from(shape.len()).map_err(|_| refuse("too many dimensions".into()))?;
        // SAFETY: the callback's contract is the header's; the shape outlives the call.
        let data = unsafe {
            (self.allocate)(
                self.context,
                rank,
                index,
                i32::from(scalar_type.index()),
                ndim,
                shape.as_ptr(),
                n_bytes,
            )
        };
        if n_bytes == 0 {
            let empty = Lent { data: std::ptr::null_mut(), len: 0, writable: true };
            return Ok(HostTensor::lent(scalar_type, shape, Box::new(empty))?);
        }
        if data.is_null() {
            return Err(refuse("NULL from the allocate callback".to_owned()));
        }
        let range = (data as usize, n_bytes);
        if taken.iter().any(|&other| overlaps(range, other)) {
            return Err(refuse(format!(
                "a buffer at {data:p} sharing bytes with an input or another output"
            )));
        }
        taken.push(range);
        let lent = Lent { data: data.cast::<u8>(), len: n_bytes, writable: true };
        Ok(HostTensor::lent(scalar_type, shape, Box::new(lent))?)
    }
}

/// Where a forward's outputs go.
#[derive(Clone, Copy)]
enum Delivery<'a> {
    /// Kept in the result, for `nrtsim_bind_result_copy`.
    Keep,
    /// Into the caller's buffers, and donated inputs written where they lie.
    Into(&'a CallerOutputs),
}

/// A rank's outcome: which of `inputs` each output shares storage with (donation), or -1, and
/// the donated inputs. Nothing in it refers to lent memory: with [`Delivery::Keep`] every tensor
/// is kept with bytes of its own; with [`Delivery::Into`] outputs with bytes of the layer's own
/// (a state's value) are written into a buffer of the caller's too, and a donated input that
/// could not be written where it lies (another input shared its bytes) is copied back there
/// (`caller`: where each input lies).
fn rank_outcome(
    output: ForwardOutput,
    inputs: &[HostTensor],
    caller: &[(usize, usize)],
    donated: &[usize],
    (rank, delivery): (usize, Delivery<'_>),
) -> Result<RankOutcome, i32> {
    let mut outputs = Vec::with_capacity(output.outputs.len());
    let mut alias = Vec::with_capacity(output.outputs.len());
    for (index, out) in output.outputs.iter().enumerate() {
        let donor = inputs.iter().position(|input| out.shares_storage_with(input));
        let bytes = match delivery {
            Delivery::Keep => Some(out.owned()),
            Delivery::Into(made) => {
                if donor.is_none() && !out.is_lent() {
                    let into = made
                        .output(rank, index, out.scalar_type(), out.shape())
                        .map_err(|error| bind_failure(&error))?;
                    out.with_bytes(|bytes| into.write_bytes(bytes)).map_err(|error| {
                        fail(INVALID_ARGUMENT, format!("output {index}: {error}"))
                    })?;
                }
                None
            }
        };
        outputs.push(OutputOf {
            scalar_type: out.scalar_type(),
            shape: out.shape().to_vec(),
            n_bytes: out.n_bytes(),
            bytes,
        });
        alias.push(donor.map_or(-1, |p| p as i64));
    }
    let mut updated = Vec::with_capacity(donated.len());
    for &position in donated {
        let Some(input) = inputs.get(position) else { continue };
        let bytes = match delivery {
            Delivery::Keep => Some(input.owned()),
            Delivery::Into(_) => {
                if !input.is_lent() {
                    let (address, len) = caller[position];
                    input.with_bytes(|bytes| {
                        let n = bytes.len().min(len);
                        // SAFETY: the caller's input buffer, writable by the contract of
                        // `nrtsim_bind_forward_into`, and no longer lent to anything: the
                        // forward is over. The source is Rust memory C does not alias.
                        unsafe {
                            std::ptr::copy_nonoverlapping(bytes.as_ptr(), address as *mut u8, n)
                        }
                    });
                }
                None
            }
        };
        updated.push((position, bytes));
    }
    Ok(RankOutcome { outputs, updated, alias, status: output.status.code() as i32 })
}

/// The forward both entry points run: lends the inputs, runs the model, and registers the
/// outcome as a result.
///
/// # Safety
/// As [`nrtsim_bind_forward`], and for `Delivery::Into` as [`nrtsim_bind_forward_into`].
unsafe fn forward(
    model: u64,
    inputs: *const nrtsim_bind_tensor_t,
    counts: *const usize,
    n_lists: usize,
    delivery: Delivery<'_>,
) -> Result<u64, i32> {
    let entry = entry(model)?;
    let mut entry = lock(&entry);
    let donated = match &mut *entry {
        Entry::Model(model) => model.donated_inputs(),
        Entry::Spmd(spmd) => spmd.model(runtime()?).map_err(|e| bind_failure(&e))?.donated_inputs(),
    };
    let written = match delivery {
        Delivery::Keep => &[][..],
        Delivery::Into(_) => &donated[..],
    };
    // SAFETY: by the caller's contract.
    let lists = unsafe { tensor_lists(inputs, counts, n_lists, written) }?;
    if let Delivery::Into(made) = delivery {
        lock(&made.taken).extend(lists.ranges.iter().flatten().copied());
    }
    let made: &dyn OutputTensors = match delivery {
        Delivery::Keep => &Zeroed,
        Delivery::Into(made) => made,
    };
    let ranks = match &mut *entry {
        Entry::Model(model) => {
            if lists.tensors.len() != 1 {
                return Err(fail(
                    INVALID_ARGUMENT,
                    format!("a Model takes one list of inputs, got {}", lists.tensors.len()),
                ));
            }
            let output = model.forward_into(&lists.tensors[0], made);
            let output = output.map_err(|error| bind_failure(&error))?;
            vec![rank_outcome(
                output,
                &lists.tensors[0],
                &lists.ranges[0],
                &donated,
                (0, delivery),
            )?]
        }
        Entry::Spmd(spmd) => {
            let made_model = spmd.model(runtime()?).map_err(|error| bind_failure(&error))?;
            let ranks = made_model.local_ranks();
            // One list is given to every rank (`forward`), or each rank has its own.
            let list_of = |rank: usize| if lists.tensors.len() == 1 { 0 } else { rank };
            let per_rank: Vec<Vec<HostTensor>> = if lists.tensors.len() == 1 && ranks > 1 {
                vec![lists.tensors[0].clone(); ranks]
            } else {
                lists.tensors.clone()
            };
            // Every rank's inputs are checked before any rank launches: the ranks of a
            // collective program wait for each other, so a rank refused at its own check
            // would leave the others waiting out the collective timeout.
            if per_rank.len() == ranks {
                made_model.validate(&per_rank).map_err(|error| bind_failure(&error))?;
            }
            let outputs = made_model.forward_ranked_into(&per_rank, made);
            let outputs = outputs.map_err(|error| bind_failure(&error))?;
            let mut outcomes = Vec::with_capacity(outputs.len());
            for (rank, (output, inputs)) in outputs.into_iter().zip(&per_rank).enumerate() {
                let caller = &lists.ranges[list_of(rank)];
                outcomes.push(rank_outcome(output, inputs, caller, &donated, (rank, delivery))?);
            }
            outcomes
        }
    };
    let id = new_id();
    lock(&registry().results).insert(id, Arc::new(Outcome { ranks }));
    Ok(id)
}

/// A forward. For a `Model`, one list (`n_lists` 1): `forward_v2`. For an `SPMDModel`, one list
/// given to every rank (`forward`) or one per local rank (`forward_ranked`). The outputs are a
/// result to read with `nrtsim_bind_result_*` and free.
///
/// The inputs' bytes are lent to the forward, not copied ([`Take::Lend`]): read where they lie,
/// never written, and referred to by nothing once it returns.
///
/// # Safety
/// `inputs` points at `Σ counts` tensor descriptions, `counts` at `n_lists` values, `result`
/// at a writable `uint64_t`; each input's data stays readable and unwritten until it returns.
pub unsafe extern "C" fn nrtsim_bind_forward(
    model: u64,
    inputs: *const nrtsim_bind_tensor_t,
    counts: *const usize,
    n_lists: usize,
    result: *mut u64,
) -> i32 {
    call("nrtsim_bind_forward", || {
        if result.is_null() {
            return fail(INVALID_ARGUMENT, "result is NULL");
        }
        // SAFETY: by the caller's contract.
        let id = try_status!(unsafe { forward(model, inputs, counts, n_lists, Delivery::Keep) });
        // SAFETY: checked non-NULL; writable by the caller's contract.
        unsafe { *result = id };
        OK
    })
}

/// A forward, as [`nrtsim_bind_forward`], that reads every output it returns into a buffer
/// `allocate` gives (called once per such output, one call at a time) and writes each donated
/// input where it lies, as on a device, where the donated buffer is the input's own. The result
/// describes the outputs and names the inputs written; it holds no bytes to copy.
///
/// # Safety
/// As [`nrtsim_bind_forward`], except that each donated input's data must be writable, and is
/// written; `allocate` returns NULL or `nbytes` writable bytes that stay untouched by the caller
/// until the call returns, and does not unwind.
pub unsafe extern "C" fn nrtsim_bind_forward_into(
    model: u64,
    inputs: *const nrtsim_bind_tensor_t,
    counts: *const usize,
    n_lists: usize,
    allocate: AllocateFn,
    context: *mut c_void,
    result: *mut u64,
) -> i32 {
    call("nrtsim_bind_forward_into", || {
        if result.is_null() {
            return fail(INVALID_ARGUMENT, "result is NULL");
        }
        let Some(allocate) = allocate else {
            return fail(INVALID_ARGUMENT, "allocate is NULL, expected a callback");
        };
        let made = CallerOutputs { allocate, context, taken: Mutex::new(Vec::new()) };
        let delivery = Delivery::Into(&made);
        // SAFETY: by the caller's contract.
        let id = try_status!(unsafe { forward(model, inputs, counts, n_lists, delivery) });
        // SAFETY: checked non-NULL; writable by the caller's contract.
        unsafe { *result = id };
        OK
    })
}

/// `SPMDModel.initialize(states, weights, start_rank)`: each rank's states and weights by
/// `checkpoint_key` (`counts[r]` named tensors for rank `r`, concatenated), then every rank loads.
/// `start_rank` must be 0: ranks of one group across processes are not modelled.
///
/// # Safety
/// `entries` points at `Σ counts` named tensors, each name at `name_len` bytes; `counts` at
/// `n_ranks` values.
pub unsafe extern "C" fn nrtsim_bind_spmd_initialize(
    model: u64,
    entries: *const nrtsim_bind_named_tensor_t,
    counts: *const usize,
    n_ranks: usize,
    start_rank: i64,
) -> i32 {
    call("nrtsim_bind_spmd_initialize", || {
        if start_rank != 0 {
            return fail(
                UNSUPPORTED,
                format!(
                    "start_rank {start_rank}: the simulator runs every rank of a group in one \
                     process, so expected 0"
                ),
            );
        }
        if n_ranks > 0 && counts.is_null() {
            return fail(INVALID_ARGUMENT, "counts is NULL");
        }
        let counts: &[usize] = if n_ranks == 0 {
            &[]
        } else {
            // SAFETY: non-NULL (checked above), `n_ranks` values by the caller's contract.
            unsafe { std::slice::from_raw_parts(counts, n_ranks) }
        };
        let mut rank_weights = Vec::with_capacity(n_ranks);
        let mut at = 0usize;
        for (rank, &n) in counts.iter().enumerate() {
            let mut weights = Weights::new();
            for _ in 0..n {
                if entries.is_null() {
                    return fail(INVALID_ARGUMENT, "entries is NULL");
                }
                // SAFETY: inside the array by the caller's contract.
                let named = unsafe { &*entries.add(at) };
                at += 1;
                // SAFETY: by the caller's contract.
                let name =
                    match unsafe { bytes_of(named.name.cast(), named.name_len, "a weight's name") }
                    {
                        Ok(name) => name,
                        Err(status) => return status,
                    };
                let what = format!("rank {rank} weight {:?}", String::from_utf8_lossy(&name));
                // SAFETY: by the caller's contract.
                let tensor = try_status!(unsafe { host_tensor(&named.tensor, &what, Take::Copy) });
                weights.insert(name, tensor);
            }
            rank_weights.push(weights);
        }
        let entry = try_status!(entry(model));
        let mut entry = lock(&entry);
        let Entry::Spmd(spmd) = &mut *entry else {
            return fail(INVALID_ARGUMENT, "initialize is a method of SPMDModel, not of Model");
        };
        let runtime = try_status!(runtime());
        if let Some(mut old) = spmd.made.take() {
            if let Err(error) = old.unload() {
                return bind_failure(&error);
            }
        }
        match SpmdModel::with_rank_weights(
            runtime,
            &spmd.neff,
            &spmd.metaneff,
            spmd.local_ranks,
            spmd.world_size,
            ModelOptions::default(),
            &rank_weights,
        ) {
            Ok(made) => {
                spmd.made = Some(made);
                OK
            }
            Err(error) => bind_failure(&error),
        }
    })
}

/// The number of ranks (1 for a `Model`) and of outputs per rank of a result.
///
/// # Safety
/// `n_ranks` and `n_outputs` point at writable `size_t`s.
pub unsafe extern "C" fn nrtsim_bind_result_size(
    result: u64,
    n_ranks: *mut usize,
    n_outputs: *mut usize,
) -> i32 {
    call("nrtsim_bind_result_size", || {
        if n_ranks.is_null() || n_outputs.is_null() {
            return fail(INVALID_ARGUMENT, "n_ranks or n_outputs is NULL");
        }
        let outcome = try_status!(outcome(result));
        // SAFETY: checked non-NULL; writable by the caller's contract.
        unsafe {
            *n_ranks = outcome.ranks.len();
            *n_outputs = outcome.ranks.first().map_or(0, |rank| rank.outputs.len());
        }
        OK
    })
}

fn output_of(
    outcome: &Outcome,
    rank: usize,
    index: usize,
) -> Result<(&RankOutcome, &OutputOf), i32> {
    let rank_outcome = outcome.ranks.get(rank).ok_or_else(|| {
        fail(INVALID_ARGUMENT, format!("rank {rank}: the result has {} ranks", outcome.ranks.len()))
    })?;
    let tensor = rank_outcome.outputs.get(index).ok_or_else(|| {
        fail(
            INVALID_ARGUMENT,
            format!("output {index}: rank {rank} has {} outputs", rank_outcome.outputs.len()),
        )
    })?;
    Ok((rank_outcome, tensor))
}

/// Describes output `index` of `rank`: scalar type, shape (valid until the result is freed),
/// size, the position of the input it aliases (-1 for none) and the launch status (0, or 1003
/// when the launch completed with numerical errors).
///
/// # Safety
/// `out` points at a writable `nrtsim_bind_output_t`.
pub unsafe extern "C" fn nrtsim_bind_result_output(
    result: u64,
    rank: usize,
    index: usize,
    out: *mut nrtsim_bind_output_t,
) -> i32 {
    call("nrtsim_bind_result_output", || {
        if out.is_null() {
            return fail(INVALID_ARGUMENT, "out is NULL");
        }
        let outcome = try_status!(outcome(result));
        let (rank_outcome, output) = try_status!(output_of(&outcome, rank, index));
        let description = nrtsim_bind_output_t {
            scalar_type: i32::from(output.scalar_type.index()),
            ndim: output.shape.len() as i32,
            // The shape lives in the outcome, which the registry keeps until the result is freed.
            shape: output.shape.as_ptr(),
            nbytes: output.n_bytes,
            alias_input: rank_outcome.alias[index],
            status: rank_outcome.status,
        };
        // SAFETY: checked non-NULL; writable by the caller's contract.
        unsafe { out.write(description) };
        OK
    })
}

/// Copies `tensor`'s bytes into `dst`, which must hold exactly as many (`what` names the tensor
/// in the error); `None`: the forward wrote them into the caller's memory already.
///
/// # Safety
/// Unless `nbytes` is 0, `dst` is NULL or points at `nbytes` writable bytes.
unsafe fn copy_out(
    tensor: Option<&HostTensor>,
    what: &str,
    dst: *mut c_void,
    nbytes: usize,
) -> i32 {
    let Some(tensor) = tensor else {
        return fail(
            INVALID_ARGUMENT,
            format!(
                "{what} is in the caller's memory already (the result of \
                 nrtsim_bind_forward_into); there is nothing to copy"
            ),
        );
    };
    if nbytes != tensor.n_bytes() {
        return fail(
            INVALID_ARGUMENT,
            format!("dst holds {nbytes} bytes, {what} has {}", tensor.n_bytes()),
        );
    }
    if nbytes == 0 {
        return OK;
    }
    if dst.is_null() {
        return fail(INVALID_ARGUMENT, "dst is NULL");
    }
    tensor.with_bytes(|bytes| {
        // SAFETY: `dst` holds `nbytes` writable bytes by the caller's contract; the source is
        // Rust memory C does not alias.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst.cast::<u8>(), nbytes) }
    });
    OK
}

/// Copies output `index` of `rank` into `dst`, which holds exactly its `nbytes`.
///
/// # Safety
/// `dst` points at `nbytes` writable bytes.
pub unsafe extern "C" fn nrtsim_bind_result_copy(
    result: u64,
    rank: usize,
    index: usize,
    dst: *mut c_void,
    nbytes: usize,
) -> i32 {
    call("nrtsim_bind_result_copy", || {
        let outcome = try_status!(outcome(result));
        let (_, output) = try_status!(output_of(&outcome, rank, index));
        // SAFETY: by the caller's contract.
        unsafe { copy_out(output.bytes.as_ref(), &format!("output {index}"), dst, nbytes) }
    })
}

/// How many of `rank`'s inputs the launch wrote (donated to an output).
///
/// # Safety
/// `n` points at a writable `size_t`.
pub unsafe extern "C" fn nrtsim_bind_result_updated_count(
    result: u64,
    rank: usize,
    n: *mut usize,
) -> i32 {
    call("nrtsim_bind_result_updated_count", || {
        if n.is_null() {
            return fail(INVALID_ARGUMENT, "n is NULL");
        }
        let outcome = try_status!(outcome(result));
        let Some(rank_outcome) = outcome.ranks.get(rank) else {
            return fail(
                INVALID_ARGUMENT,
                format!("rank {rank}: the result has {} ranks", outcome.ranks.len()),
            );
        };
        // SAFETY: checked non-NULL; writable by the caller's contract.
        unsafe { *n = rank_outcome.updated.len() };
        OK
    })
}

/// The `k`-th input of `rank` the launch wrote, looked up for the two functions below.
fn updated_of(result: u64, rank: usize, k: usize) -> Result<(usize, Option<HostTensor>), i32> {
    let outcome = outcome(result)?;
    outcome
        .ranks
        .get(rank)
        .and_then(|r| r.updated.get(k))
        .cloned()
        .ok_or_else(|| fail(INVALID_ARGUMENT, format!("rank {rank} has no updated input {k}")))
}

/// The position, in the caller's list, of the `k`-th input of `rank` the launch wrote.
///
/// # Safety
/// `position` points at a writable `size_t`.
pub unsafe extern "C" fn nrtsim_bind_result_updated_position(
    result: u64,
    rank: usize,
    k: usize,
    position: *mut usize,
) -> i32 {
    call("nrtsim_bind_result_updated_position", || {
        if position.is_null() {
            return fail(INVALID_ARGUMENT, "position is NULL");
        }
        match updated_of(result, rank, k) {
            Ok((at, _)) => {
                // SAFETY: checked non-NULL; writable by the caller's contract.
                unsafe { *position = at };
                OK
            }
            Err(status) => status,
        }
    })
}

/// Copies the new bytes of the `k`-th input of `rank` the launch wrote into `dst`, which holds
/// exactly `nbytes` (the input's size).
///
/// # Safety
/// `dst` points at `nbytes` writable bytes.
pub unsafe extern "C" fn nrtsim_bind_result_copy_updated(
    result: u64,
    rank: usize,
    k: usize,
    dst: *mut c_void,
    nbytes: usize,
) -> i32 {
    call("nrtsim_bind_result_copy_updated", || {
        let (at, tensor) = try_status!(updated_of(result, rank, k));
        // SAFETY: by the caller's contract.
        unsafe { copy_out(tensor.as_ref(), &format!("input {at}"), dst, nbytes) }
    })
}

/// Releases a result; its number and shapes are invalid afterwards.
pub extern "C" fn nrtsim_bind_result_free(result: u64) -> i32 {
    call("nrtsim_bind_result_free", || match lock(&registry().results).remove(&result) {
        Some(_) => OK,
        None => {
            fail(INVALID_ARGUMENT, format!("result {result} is not a live result of this library"))
        }
    })
}
