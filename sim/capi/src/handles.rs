//! The process-wide simulator and the registry of handles given to C.
//!
//! A handle given to C (`nrt_model_t *`, `nrt_tensor_t *`, `nrt_tensor_set_t *`,
//! `nrt_tensor_info_array_t *`) is a number, not an address: the simulator's id and the kind of
//! object, above a fixed high base that is not a canonical x86-64 address, so no handle can
//! collide with real memory and a C program that dereferences one faults at once instead of
//! corrupting something. A handle is accepted only while it is in the registry, and with the
//! kind it was made for; the simulator never reuses ids, so a freed handle stays invalid forever.
//! Nothing a caller passes as a handle is ever dereferenced.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use abi::c_layout::c_types::nrta_error_t;
use abi::functions::LibnrtFunction;
use abi::runtime::NrtError;
use sim::SimRuntime;
use sim::async_queues::AsyncQueues;

use crate::config;
use crate::ffi::InfoArray;
use crate::status;

/// The kinds of handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    Tensor = 1,
    Set = 2,
    Model = 3,
    /// `nrta_error_tracker_t`.
    ErrorTracker = 4,
    /// `nrt_sys_trace_config_t`.
    TraceConfig = 5,
    /// `nrt_sys_trace_fetch_options_t`.
    FetchOptions = 6,
    /// `nrt_profile_continuous_options_t`.
    ContinuousOptions = 7,
    /// `nrt_inspect_config_t`.
    InspectConfig = 8,
}

/// The top 16 bits of every handle: `0x4E52` ("NR"), which makes the value a non-canonical
/// address on x86-64.
const BASE: usize = 0x4E52 << 48;

/// Ids must fit below the base once shifted past the kind.
const MAX_ID: u64 = (1 << 44) - 1;

/// The handle value for object `id` of `kind`.
pub(crate) fn encode(kind: Kind, id: u64) -> usize {
    debug_assert!(id <= MAX_ID);
    BASE | ((id & MAX_ID) as usize) << 4 | kind as usize
}

/// The id inside a handle value (only meaningful for a registered handle).
fn decode(handle: usize) -> u64 {
    ((handle & !BASE) >> 4) as u64
}

/// The simulator and the handles given out.
pub(crate) struct Global {
    /// Shared with the binding layer's models (`exports::bind`), which hold it as a runtime.
    pub(crate) sim: Arc<SimRuntime>,
    /// Print each failing call's detail on stderr (`NRTSIM_LOG=1`).
    log_errors: bool,
    live: Mutex<HashSet<usize>>,
    infos: Mutex<HashMap<usize, InfoArray>>,
    /// The unsupported functions already explained under `NRTSIM_LOG`.
    explained: Mutex<HashSet<LibnrtFunction>>,
    /// The queues of the `nrta_*` API.
    pub(crate) queues: AsyncQueues,
    /// The error list each tracker last handed out, alive until the next one or its destroy.
    pub(crate) error_lists: Mutex<HashMap<u64, Box<[nrta_error_t]>>>,
    /// `nrt_register_async_exec_callback`'s callback and parameter (an address).
    pub(crate) exec_callback: Mutex<Option<(ExecCallback, usize)>>,
}

/// The callback of `nrt_register_async_exec_callback`: `(params, model_id, vnc, job_id, status)`.
pub(crate) type ExecCallback = unsafe extern "C" fn(*mut std::ffi::c_void, u32, u32, u64, u32);

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

static GLOBAL: OnceLock<Result<Global, String>> = OnceLock::new();

/// The process's simulator, made on first use from the environment; a bad configuration is
/// `NRT_INVALID` for every call (the reason is printed once, when it is first read).
pub(crate) fn global() -> Result<&'static Global, u32> {
    let made = GLOBAL.get_or_init(|| {
        let lookup = |name: &str| std::env::var(name).ok();
        let made = config::config_from(lookup)
            .map_err(|err| err.to_string())
            .and_then(|config| SimRuntime::new(config).map_err(|err| err.to_string()))
            .map(|sim| Global {
                log_errors: std::env::var("NRTSIM_LOG").is_ok_and(|value| value.trim() == "1"),
                live: Mutex::new(HashSet::new()),
                infos: Mutex::new(HashMap::new()),
                queues: AsyncQueues::new(sim.visible_core_count()),
                explained: Mutex::new(HashSet::new()),
                error_lists: Mutex::new(HashMap::new()),
                exec_callback: Mutex::new(None),
                sim: Arc::new(sim),
            });
        if let Err(reason) = &made {
            eprintln!("nrtsim: the simulated libnrt is not configured: {reason}");
        }
        made
    });
    made.as_ref().map_err(|_| status::INVALID)
}

impl Global {
    /// Registers object `id` of `kind` and returns its handle.
    pub(crate) fn register(&self, kind: Kind, id: u64) -> usize {
        let handle = encode(kind, id);
        lock(&self.live).insert(handle);
        handle
    }

    /// The id behind `handle`: `NRT_INVALID` for NULL, `NRT_INVALID_HANDLE` for anything this
    /// library did not hand out as a `kind`, or has released.
    pub(crate) fn lookup(&self, kind: Kind, handle: usize) -> Result<u64, u32> {
        if handle == 0 {
            return Err(status::INVALID);
        }
        let live = lock(&self.live).contains(&handle);
        if live && handle & 0xF == kind as usize {
            Ok(decode(handle))
        } else {
            Err(status::INVALID_HANDLE)
        }
    }

    /// Removes `handle` from the registry; its id when it was live and of `kind`. The check and
    /// the removal are one step under one lock, so of several threads releasing one handle
    /// exactly one gets the id.
    pub(crate) fn release(&self, kind: Kind, handle: usize) -> Option<u64> {
        if handle == 0 || handle & 0xF != kind as usize {
            return None;
        }
        lock(&self.live).remove(&handle).then(|| decode(handle))
    }

    /// Keeps a tensor-info array until `nrt_free_model_tensor_info`; returns its address.
    pub(crate) fn keep_info(&self, array: InfoArray) -> usize {
        let address = array.address();
        lock(&self.infos).insert(address, array);
        address
    }

    /// Frees a tensor-info array handed out by [`Global::keep_info`].
    pub(crate) fn free_info(&self, address: usize) -> u32 {
        if address == 0 {
            return status::INVALID;
        }
        let removed = lock(&self.infos).remove(&address);
        if removed.is_some() { status::SUCCESS } else { status::INVALID_HANDLE }
    }

    /// The C status of a call's result (logged when `NRTSIM_LOG=1`).
    pub(crate) fn status(&self, call: &str, result: Result<(), NrtError>) -> u32 {
        match result {
            Ok(()) => status::SUCCESS,
            Err(err) => self.failed(call, &err),
        }
    }

    /// The lifecycle gate and fault plan of `function` (the simulator's one gate), as a C status.
    pub(crate) fn enter(&self, function: LibnrtFunction) -> Result<(), u32> {
        self.sim.enter(function).map_err(|err| self.failed(function.name(), &err))
    }

    /// `NRT_INVALID` for a function the simulator cannot provide, after its gate; the reason is
    /// printed once per function when `NRTSIM_LOG=1`.
    pub(crate) fn unsupported(&self, function: LibnrtFunction, why: &str) -> u32 {
        if let Err(status) = self.enter(function) {
            return status;
        }
        if self.log_errors && lock(&self.explained).insert(function) {
            eprintln!(
                "nrtsim: {function} is not supported by the simulator ({why}); it returns NRT_INVALID"
            );
        }
        status::INVALID
    }

    /// The C status of a call to a function [`SimRuntime::unsupported_reason`] names, which
    /// the simulator refuses after its gate; the refusal is printed once per function when
    /// `NRTSIM_LOG=1`, any other failure as [`Global::failed`] prints it.
    pub(crate) fn unsupported_result<T>(
        &self,
        function: LibnrtFunction,
        result: Result<T, NrtError>,
    ) -> u32 {
        match result {
            Ok(_) => status::SUCCESS,
            Err(err) if err.status == abi::status::NrtStatus::Invalid => {
                if self.log_errors && lock(&self.explained).insert(function) {
                    eprintln!("nrtsim: {}; it returns NRT_INVALID", err.detail);
                }
                status::INVALID
            }
            Err(err) => self.failed(function.name(), &err),
        }
    }

    /// The C status of a failed call (logged when `NRTSIM_LOG=1`).
    pub(crate) fn failed(&self, call: &str, err: &NrtError) -> u32 {
        if self.log_errors {
            eprintln!("nrtsim: {call}: {err}");
        }
        err.status.code()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_carry_id_and_kind_above_the_canonical_range() {
        for kind in [Kind::Tensor, Kind::Set, Kind::Model] {
            for id in [0, 1, 77, MAX_ID] {
                let handle = encode(kind, id);
                assert_eq!(decode(handle), id);
                assert_eq!(handle & 0xF, kind as usize);
                assert!(handle >= BASE, "{handle:#x}");
            }
        }
        assert_ne!(encode(Kind::Tensor, 5), encode(Kind::Set, 5));
    }

    /// Threads releasing the same handles at once: each handle is released exactly once, so the
    /// simulator's object is freed once and a double free is seen as a stale handle.
    #[test]
    fn concurrent_releases_of_one_handle_succeed_exactly_once() {
        const N_HANDLES: u64 = 20_000;
        const N_THREADS: usize = 4;
        let sim = SimRuntime::new(sim::SimConfig::default()).expect("a default simulator");
        let global = Global {
            log_errors: false,
            live: Mutex::new(HashSet::new()),
            infos: Mutex::new(HashMap::new()),
            queues: AsyncQueues::new(sim.visible_core_count()),
            explained: Mutex::new(HashSet::new()),
            error_lists: Mutex::new(HashMap::new()),
            exec_callback: Mutex::new(None),
            sim: Arc::new(sim),
        };
        let handles: Vec<usize> =
            (0..N_HANDLES).map(|id| global.register(Kind::Tensor, id)).collect();
        let start = std::sync::Barrier::new(N_THREADS);
        let released: Vec<Vec<u64>> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..N_THREADS)
                .map(|_| {
                    scope.spawn(|| {
                        start.wait();
                        handles
                            .iter()
                            .filter_map(|&handle| global.release(Kind::Tensor, handle))
                            .collect::<Vec<u64>>()
                    })
                })
                .collect();
            workers.into_iter().map(|worker| worker.join().expect("no panic")).collect()
        });
        let mut all: Vec<u64> = released.into_iter().flatten().collect();
        let total = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(total, all.len(), "{} handles were released twice", total - all.len());
        assert_eq!(all.len() as u64, N_HANDLES, "every handle is released once");
        assert_eq!(global.lookup(Kind::Tensor, handles[0]), Err(status::INVALID_HANDLE));
    }
}
