//! The one FFI boundary of the `nrt` backend: the libnrt C declarations, the loaded library and
//! owned handles whose lifetimes make every call sound.
//!
//! The declarations are ours, written from the facts of docs/abi-facts.md §4 (x86-64 SysV); no header is
//! copied. Everything `unsafe` in the crate is in this file, and each block says why it holds.
//!
//! Soundness rests on ownership, not on checks:
//! - A raw handle exists only inside an owner ([`OwnedModel`], [`OwnedSet`], [`OwnedTensor`])
//!   built from a pointer the library returned, together with an `Arc` of that library, so a
//!   handle is never passed to another library or after the library is unloaded.
//! - Owners release their handle in `Drop` (`nrt_tensor_free`, `nrt_destroy_tensor_set`,
//!   `nrt_unload`), so a handle is released once and never used afterwards. Callers share
//!   owners through `Arc`, so a call in flight on one thread keeps its handle alive while another
//!   thread forgets it.
//! - A tensor set holds an `Arc` of every tensor it names, because libnrt keeps the raw pointer;
//!   the tensor is released only when no set can hand it to libnrt any more.
//! - Memory attached with `nrt_tensor_attach_buffer` is kept alive by the tensor (and by its
//!   slices) for as long as libnrt may touch it.
//!
//! Validation is libnrt's: arguments go through unchanged and the status comes back as a raw
//! `u32`, mapped to [`abi::status::NrtStatus`] in one place by the caller.
#![allow(unsafe_code)]

use std::collections::HashMap;
use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::marker::{PhantomData, PhantomPinned};
use std::mem::{offset_of, size_of};
use std::ptr::{self, NonNull};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use abi::c_layout::NrtVersionC;
use abi::functions::LibnrtFunction;
use abi::runtime::SharedBuffer;
use abi::status::NrtStatus;

/// `NRT_STATUS`: a 4-byte C enum, carried as its raw value.
pub(crate) type RawStatus = u32;

/// `NRT_SUCCESS`.
pub(crate) const SUCCESS: RawStatus = NrtStatus::Success.code();
/// `NRT_INVALID`, returned without a call only where a Rust value cannot be expressed in C (a
/// name with an interior NUL byte).
pub(crate) const INVALID: RawStatus = NrtStatus::Invalid.code();
/// `NRT_INVALID_HANDLE`, for an owner whose model was already unloaded.
pub(crate) const INVALID_HANDLE: RawStatus = NrtStatus::InvalidHandle.code();

/// `nrt_model_t`: opaque.
#[repr(C)]
pub(crate) struct NrtModel {
    _opaque: [u8; 0],
    _marker: PhantomData<(*mut u8, PhantomPinned)>,
}

/// `nrt_tensor_t`: opaque.
#[repr(C)]
pub(crate) struct NrtTensor {
    _opaque: [u8; 0],
    _marker: PhantomData<(*mut u8, PhantomPinned)>,
}

/// One tensor's ranges of a batched read: `(offset, buffer to fill)` each.
pub(crate) type ReadBatch<'a> = (Arc<OwnedTensor>, Vec<(usize, &'a mut [u8])>);

/// One tensor's operations of a batched write: `(offset, bytes)` each.
pub(crate) type WriteBatch<'a> = (Arc<OwnedTensor>, Vec<(usize, &'a [u8])>);

/// A batch as C sees it: the tensor, then `(offset, buffer, size)` of each operation.
type RawBatch = (*mut NrtTensor, Vec<(usize, *mut u8, usize)>);

/// Builds the `nrt_tensor_batch_t` array of `(tensor, [(offset, buffer, size)])` batches and
/// passes it with its length to `call`; `NRT_INVALID` without a call for a batch of more
/// operations than `num_ops` holds.
fn with_batches(
    batches: &[RawBatch],
    call: impl FnOnce(*const c_names::nrt_tensor_batch_t, u64) -> RawStatus,
) -> RawStatus {
    let mut ops = Vec::with_capacity(batches.len());
    for (_, batch_ops) in batches {
        let batch_ops: Vec<c_names::nrt_tensor_batch_op_t> = batch_ops
            .iter()
            .map(|&(offset, buffer, size)| c_names::nrt_tensor_batch_op_t {
                offset: offset as u64,
                size: size as u64,
                buffer: buffer.cast(),
            })
            .collect();
        ops.push(batch_ops);
    }
    let mut array = Vec::with_capacity(batches.len());
    for ((tensor, _), batch_ops) in batches.iter().zip(&ops) {
        let Ok(num_ops) = u32::try_from(batch_ops.len()) else { return INVALID };
        array.push(c_names::nrt_tensor_batch_t {
            tensor: tensor.cast_const().cast(),
            ops: batch_ops.as_ptr(),
            num_ops,
        });
    }
    call(array.as_ptr(), array.len() as u64)
}

/// `nrt_tensor_set_t` is `void` in C.
type NrtTensorSet = c_void;

/// `nrt_tensor_info_t`, declared once in `abi::c_layout`.
pub(crate) use abi::c_layout::NrtTensorInfoC as NrtTensorInfo;

/// `nrt_tensor_info_array_t`: a count followed by that many entries.
#[repr(C)]
pub(crate) struct NrtTensorInfoArray {
    tensor_count: u64,
    tensor_array: [NrtTensorInfo; 0],
}

const _: () = {
    // The entry layouts are checked in `abi::c_layout`; the array header here.
    assert!(offset_of!(NrtTensorInfoArray, tensor_array) == abi::c_layout::INFO_ARRAY_HEADER);
};

/// The C type names of the function table, as this module spells them: the defaults of
/// `abi::c_layout::c_types`, with the handles this module owns shadowed by its own types.
#[allow(non_camel_case_types, unused_imports)]
mod c_names {
    pub(super) use abi::c_layout::c_types::*;
    pub(super) use std::ffi::c_void;

    pub(super) type NRT_STATUS = super::RawStatus;
    pub(super) type nrt_model_t = super::NrtModel;
    pub(super) type nrt_tensor_t = super::NrtTensor;
    pub(super) type nrt_tensor_info_array_t = super::NrtTensorInfoArray;
}

/// The field type of one entry point: a function pointer, optional for a function that only
/// recent releases export.
macro_rules! entry_point_type {
    (Always, $f:ty) => { $f };
    (Optional, $f:ty) => { Option<$f> };
}

/// Resolves one entry point: a missing function every release exports is an error, a missing
/// recent one is `None`.
macro_rules! resolve_entry_point {
    (Always, $library:expr, $name:ident, $f:ty) => {
        resolve::<$f>($library, stringify!($name))?
    };
    (Optional, $library:expr, $name:ident, $f:ty) => {
        resolve::<$f>($library, stringify!($name)).ok()
    };
}

/// Whether an entry point was found.
macro_rules! entry_point_found {
    (Always, $field:expr) => {
        true
    };
    (Optional, $field:expr) => {
        $field.is_some()
    };
}

/// The table of entry points and its loader, expanded from the one function table
/// (`abi::for_each_libnrt_function!`), so a signature and its symbol name cannot drift apart.
macro_rules! nrt_functions {
    ($(
        $name:ident = $header:ident [$pre:ident, $fault:ident, $avail:ident]
            fn($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)?;
    )*) => {
        /// The resolved entry points, one field per C function. Valid while the
        /// `libloading::Library` they came from is loaded, which [`Library`] guarantees by owning
        /// both.
        struct Functions {
            $($name: entry_point_type!($avail, unsafe extern "C" fn($($ty),*) $(-> $ret)?),)*
        }

        impl Functions {
            /// Resolves every symbol; the first missing one that every release exports is the
            /// error.
            fn resolve(library: &libloading::Library) -> Result<Functions, (&'static str, String)> {
                Ok(Functions {
                    $($name: resolve_entry_point!(
                        $avail, library, $name, unsafe extern "C" fn($($ty),*) $(-> $ret)?
                    ),)*
                })
            }

            /// Whether the library exports `function`.
            fn exports(&self, function: LibnrtFunction) -> bool {
                match function {
                    $(LibnrtFunction::$name => entry_point_found!($avail, self.$name),)*
                }
            }
        }
    };
}

use c_names::*;

abi::for_each_libnrt_function!(nrt_functions);

mod asynchronous;
pub(crate) use asynchronous::{AsyncState, OwnedTracker};

/// Resolves `name` as a function pointer of type `F`.
fn resolve<F: Copy>(
    library: &libloading::Library,
    name: &'static str,
) -> Result<F, (&'static str, String)> {
    let mut symbol = Vec::with_capacity(name.len() + 1);
    symbol.extend_from_slice(name.as_bytes());
    symbol.push(0);
    // SAFETY: `F` is the signature the function table gives for `name` (the table is checked
    // against our headers and against the simulator's exports); the pointer is copied out and
    // only used while `library` stays loaded (both live in one `Library`).
    let found = unsafe { library.get::<F>(&symbol) };
    found.map(|symbol| *symbol).map_err(|err| (name, err.to_string()))
}

/// Why one candidate library could not be used.
pub(crate) enum OpenFailure {
    /// `dlopen` refused it (not found, wrong architecture, missing dependency).
    NotLoaded(String),
    /// It loaded, but lacks a symbol.
    MissingSymbol {
        /// The first missing symbol.
        symbol: &'static str,
        /// What `dlsym` said.
        reason: String,
    },
}

/// A loaded libnrt and its resolved entry points.
pub(crate) struct Library {
    functions: Functions,
    // Declared last, so it is dropped after everything that could still call into it.
    _library: libloading::Library,
}

impl Library {
    /// Loads `candidate` (a path, or a bare file name for the dynamic linker's search) and
    /// resolves every entry point of the function table (those of recent releases only when
    /// present).
    pub(crate) fn open(candidate: &str) -> Result<Arc<Library>, OpenFailure> {
        // SAFETY: loading runs the library's initialisers. The candidates are libnrt (or the
        // simulator exporting its ABI), whose initialisers are trusted not to break Rust
        // invariants; this is the irreducible trust every dlopen-based binding places in the
        // library it loads.
        let library = unsafe { libloading::Library::new(candidate) }
            .map_err(|err| OpenFailure::NotLoaded(err.to_string()))?;
        let functions = Functions::resolve(&library)
            .map_err(|(symbol, reason)| OpenFailure::MissingSymbol { symbol, reason })?;
        Ok(Arc::new(Library { functions, _library: library }))
    }

    /// `nrt_init`.
    pub(crate) fn init(&self, framework: u32, fw_version: &CStr, fal_version: &CStr) -> RawStatus {
        // SAFETY: both strings are NUL-terminated and outlive the call; the framework is a plain
        // integer that libnrt validates.
        unsafe { (self.functions.nrt_init)(framework, fw_version.as_ptr(), fal_version.as_ptr()) }
    }

    /// Whether the library exports `function`.
    pub(crate) fn exports(&self, function: LibnrtFunction) -> bool {
        self.functions.exports(function)
    }

    /// `nrt_close`.
    pub(crate) fn close(&self) {
        // SAFETY: no arguments; libnrt gates later calls itself.
        unsafe { (self.functions.nrt_close)() }
    }

    /// `nrt_load` (`collectives`: `nrt_load_collectives` with `(ctx_device_id,
    /// ctx_device_count)`).
    pub(crate) fn load(
        self: &Arc<Self>,
        neff: &[u8],
        vnc: i32,
        vnc_count: i32,
        collectives: Option<(u32, u32)>,
    ) -> Result<OwnedModel, RawStatus> {
        let mut model: *mut NrtModel = ptr::null_mut();
        let data = neff.as_ptr().cast::<c_void>();
        let status = match collectives {
            // SAFETY: `neff` is readable for `neff.len()` bytes during the call and libnrt does
            // not keep the pointer (it parses the NEFF before returning); `model` is a valid
            // out-pointer.
            None => unsafe {
                (self.functions.nrt_load)(data, neff.len(), vnc, vnc_count, &mut model)
            },
            // SAFETY: as above.
            Some((id, count)) => unsafe {
                (self.functions.nrt_load_collectives)(
                    data,
                    neff.len(),
                    vnc,
                    vnc_count,
                    id,
                    count,
                    &mut model,
                )
            },
        };
        let model = owned(status, model)?;
        Ok(OwnedModel { library: Arc::clone(self), model, unloaded: RwLock::new(false) })
    }

    /// `nrt_allocate_tensor_set`.
    pub(crate) fn allocate_tensor_set(self: &Arc<Self>) -> Result<OwnedSet, RawStatus> {
        let mut set: *mut NrtTensorSet = ptr::null_mut();
        // SAFETY: `set` is a valid out-pointer.
        let status = unsafe { (self.functions.nrt_allocate_tensor_set)(&mut set) };
        let set = owned(status, set)?;
        Ok(OwnedSet { library: Arc::clone(self), set, members: Mutex::new(HashMap::new()) })
    }

    /// `nrt_tensor_allocate`.
    pub(crate) fn tensor_allocate(
        self: &Arc<Self>,
        placement: u32,
        vnc: i32,
        size: usize,
        name: &CStr,
        tag: u64,
    ) -> Result<OwnedTensor, RawStatus> {
        let mut tensor: *mut NrtTensor = ptr::null_mut();
        // SAFETY: `name` is NUL-terminated and outlives the call; `tensor` is a valid
        // out-pointer; placement and sizes are integers libnrt validates.
        let status = unsafe {
            (self.functions.nrt_tensor_allocate)(placement, vnc, size, name.as_ptr(), &mut tensor)
        };
        Ok(self.own_tensor(owned(status, tensor)?, tag, None))
    }

    /// `nrt_tensor_allocate_empty`.
    pub(crate) fn tensor_allocate_empty(
        self: &Arc<Self>,
        name: &CStr,
        tag: u64,
    ) -> Result<OwnedTensor, RawStatus> {
        let mut tensor: *mut NrtTensor = ptr::null_mut();
        // SAFETY: `name` is NUL-terminated and outlives the call; `tensor` is a valid
        // out-pointer.
        let status =
            unsafe { (self.functions.nrt_tensor_allocate_empty)(name.as_ptr(), &mut tensor) };
        Ok(self.own_tensor(owned(status, tensor)?, tag, None))
    }

    fn own_tensor(
        self: &Arc<Self>,
        tensor: NonNull<NrtTensor>,
        tag: u64,
        buffer: Option<Arc<SharedBuffer>>,
    ) -> OwnedTensor {
        OwnedTensor { library: Arc::clone(self), tensor, tag, buffer: Mutex::new(buffer) }
    }

    /// `nrt_get_version`, with the size of our 224-byte struct.
    pub(crate) fn get_version(&self) -> Result<RawVersion, RawStatus> {
        let mut version = NrtVersionC {
            major: 0,
            minor: 0,
            patch: 0,
            maintenance: 0,
            detail: [0; 128],
            git_hash: [0; 64],
        };
        // SAFETY: `version` is a writable `nrt_version_t` of exactly the size passed.
        let status =
            unsafe { (self.functions.nrt_get_version)(&mut version, size_of::<NrtVersionC>()) };
        if status != SUCCESS {
            return Err(status);
        }
        Ok(RawVersion {
            major: version.major,
            minor: version.minor,
            patch: version.patch,
            maintenance: version.maintenance,
            detail: c_array_bytes(&version.detail),
            git_hash: c_array_bytes(&version.git_hash),
        })
    }

    /// `nrt_get_total_vnc_count`.
    pub(crate) fn get_total_vnc_count(&self) -> Result<u32, RawStatus> {
        let mut count = 0u32;
        // SAFETY: `count` is a valid out-pointer.
        let status = unsafe { (self.functions.nrt_get_total_vnc_count)(&mut count) };
        if status == SUCCESS { Ok(count) } else { Err(status) }
    }

    /// `nrt_get_visible_vnc_count`.
    pub(crate) fn get_visible_vnc_count(&self) -> Result<u32, RawStatus> {
        let mut count = 0u32;
        // SAFETY: `count` is a valid out-pointer.
        let status = unsafe { (self.functions.nrt_get_visible_vnc_count)(&mut count) };
        if status == SUCCESS { Ok(count) } else { Err(status) }
    }

    /// `nrt_get_total_nc_count`; `None` when the library does not export it.
    pub(crate) fn get_total_nc_count(&self) -> Option<Result<u32, RawStatus>> {
        let function = self.functions.nrt_get_total_nc_count?;
        let mut count = 0u32;
        // SAFETY: `count` is a valid out-pointer; the signature is the table's.
        let status = unsafe { function(&mut count) };
        Some(if status == SUCCESS { Ok(count) } else { Err(status) })
    }

    /// `nrt_get_visible_nc_count`; `None` when the library does not export it.
    pub(crate) fn get_visible_nc_count(&self) -> Option<Result<u32, RawStatus>> {
        let function = self.functions.nrt_get_visible_nc_count?;
        let mut count = 0u32;
        // SAFETY: `count` is a valid out-pointer; the signature is the table's.
        let status = unsafe { function(&mut count) };
        Some(if status == SUCCESS { Ok(count) } else { Err(status) })
    }

    /// `nrt_get_vnc_memory_stats` (bytes used, bytes limit); `None` when the library does not
    /// export it.
    pub(crate) fn get_vnc_memory_stats(&self, vnc: u32) -> Option<Result<(u64, u64), RawStatus>> {
        let function = self.functions.nrt_get_vnc_memory_stats?;
        let mut stats = nrt_vnc_memory_stats_t { bytes_used: 0, bytes_limit: 0 };
        let mut written = 0usize;
        // SAFETY: `stats` has `size_of` writable bytes and `written` is a valid out-pointer.
        let status =
            unsafe { function(vnc, &mut stats, size_of::<nrt_vnc_memory_stats_t>(), &mut written) };
        Some(if status == SUCCESS {
            Ok((stats.bytes_used as u64, stats.bytes_limit as u64))
        } else {
            Err(status)
        })
    }

    /// `nrt_memcpy_to_device` of `bytes` to the device address `address`; `None` when the
    /// library does not export it. libnrt judges the address.
    pub(crate) fn memcpy_to_device(&self, address: usize, bytes: &[u8]) -> Option<RawStatus> {
        let function = self.functions.nrt_memcpy_to_device?;
        // SAFETY: `bytes` is readable for its length during the call; the destination is a
        // device address libnrt checks (it is never dereferenced on this side).
        Some(unsafe { function(address as *mut c_void, bytes.as_ptr().cast(), bytes.len()) })
    }

    /// `nrt_tensor_read_batch` into the caller's buffers: `(tensor, [(offset, buffer)])` per
    /// batch; `None` when the library does not export it.
    pub(crate) fn tensor_read_batch(
        &self,
        batches: &mut [ReadBatch<'_>],
        untracked: bool,
    ) -> Option<RawStatus> {
        let function = self.functions.nrt_tensor_read_batch?;
        let ops = batches.iter_mut().map(|(tensor, ops)| {
            let ops =
                ops.iter_mut().map(|(offset, buffer)| (*offset, buffer.as_mut_ptr(), buffer.len()));
            (tensor.tensor.as_ptr(), ops.collect::<Vec<_>>())
        });
        let ops: Vec<_> = ops.collect();
        Some(with_batches(&ops, |array, count| {
            // SAFETY: `array` has `count` entries whose operations point at buffers writable for
            // their sizes (the caller's `&mut [u8]`, borrowed for this call) and at live tensors.
            unsafe { function(array, count, untracked) }
        }))
    }

    /// `nrt_tensor_write_batch` from the caller's bytes: `(tensor, [(offset, bytes)])` per
    /// batch; `None` when the library does not export it.
    pub(crate) fn tensor_write_batch(
        &self,
        batches: &[WriteBatch<'_>],
        untracked: bool,
    ) -> Option<RawStatus> {
        let function = self.functions.nrt_tensor_write_batch?;
        let ops = batches.iter().map(|(tensor, ops)| {
            // libnrt only reads the buffers of a write; the C field is not const.
            let ops =
                ops.iter().map(|(offset, bytes)| (*offset, bytes.as_ptr().cast_mut(), bytes.len()));
            (tensor.tensor.as_ptr(), ops.collect::<Vec<_>>())
        });
        let ops: Vec<_> = ops.collect();
        Some(with_batches(&ops, |array, count| {
            // SAFETY: `array` has `count` entries whose operations point at buffers readable for
            // their sizes (the caller's slices, borrowed for this call) and at live tensors.
            unsafe { function(array, count, untracked) }
        }))
    }

    /// `nrt_sys_trace_get_event_types`, copied into Rust, then
    /// `nrt_sys_trace_free_event_types`; `None` when the library lacks either.
    pub(crate) fn sys_trace_event_types(&self) -> Option<Result<Vec<String>, RawStatus>> {
        let get = self.functions.nrt_sys_trace_get_event_types?;
        let free = self.functions.nrt_sys_trace_free_event_types?;
        let mut array: *mut *const c_char = ptr::null_mut();
        let mut count = 0usize;
        // SAFETY: both out-pointers are valid; the signature is the table's.
        let status = unsafe { get(&mut array, &mut count) };
        if status != SUCCESS {
            return Some(Err(status));
        }
        if array.is_null() {
            return Some(Ok(Vec::new()));
        }
        // SAFETY: libnrt returned `count` NUL-terminated strings, valid until they are passed
        // to `nrt_sys_trace_free_event_types`, below; they are copied out before.
        let names = unsafe {
            (0..count)
                .map(|i| *array.add(i))
                .filter(|name| !name.is_null())
                .map(|name| CStr::from_ptr(name).to_string_lossy().into_owned())
                .collect()
        };
        // SAFETY: the array and count libnrt returned, released once.
        unsafe { free(array, count) };
        Some(Ok(names))
    }

    /// `nrt_sys_trace_config_allocate`, the setters, `nrt_sys_trace_start`, then
    /// `nrt_sys_trace_config_free`; `None` when the library lacks one of them.
    pub(crate) fn sys_trace_start(
        &self,
        max_events_per_nc: Option<u64>,
        disabled_ncs: &[u32],
        disabled_event_types: &[CString],
    ) -> Option<Result<(), RawStatus>> {
        let functions = &self.functions;
        let allocate = functions.nrt_sys_trace_config_allocate?;
        let free = functions.nrt_sys_trace_config_free?;
        let set_max = functions.nrt_sys_trace_config_set_max_events_per_nc?;
        let set_nc = functions.nrt_sys_trace_config_set_capture_enabled_for_nc?;
        let set_type = functions.nrt_sys_trace_config_set_capture_enabled_for_event_type?;
        let start = functions.nrt_sys_trace_start?;
        let mut config: *mut nrt_sys_trace_config_t = ptr::null_mut();
        // SAFETY: a valid out-pointer; the signatures are the table's.
        let status = unsafe { allocate(&mut config) };
        if status != SUCCESS || config.is_null() {
            return Some(Err(if status == SUCCESS { INVALID } else { status }));
        }
        // SAFETY: `config` is the object libnrt allocated, used until it is freed at the end;
        // the event type names are NUL-terminated and outlive the calls.
        let status = unsafe {
            let mut status = SUCCESS;
            if let Some(max) = max_events_per_nc {
                set_max(config, max);
            }
            for &nc in disabled_ncs {
                set_nc(config, nc, false);
            }
            for kind in disabled_event_types {
                if status == SUCCESS {
                    status = set_type(config, kind.as_ptr(), false);
                }
            }
            if status == SUCCESS {
                status = start(config);
            }
            free(config);
            status
        };
        Some(if status == SUCCESS { Ok(()) } else { Err(status) })
    }

    /// `nrt_sys_trace_fetch_options_allocate`, its setters, `nrt_sys_trace_fetch_events`, the
    /// JSON copied into Rust, `nrt_sys_trace_buffer_free` and `nrt_sys_trace_fetch_options_free`;
    /// `None` when the library lacks one of them.
    pub(crate) fn sys_trace_fetch(
        &self,
        max_events_per_nc: Option<u64>,
        nc: Option<u64>,
    ) -> Option<Result<String, RawStatus>> {
        let functions = &self.functions;
        let allocate = functions.nrt_sys_trace_fetch_options_allocate?;
        let free_options = functions.nrt_sys_trace_fetch_options_free?;
        let set_max = functions.nrt_sys_trace_fetch_options_set_max_events_per_nc?;
        let set_nc = functions.nrt_sys_trace_fetch_options_set_nc_idx?;
        let fetch = functions.nrt_sys_trace_fetch_events?;
        let free_buffer = functions.nrt_sys_trace_buffer_free?;
        let mut options: *mut nrt_sys_trace_fetch_options_t = ptr::null_mut();
        // SAFETY: a valid out-pointer; the signatures are the table's.
        let status = unsafe { allocate(&mut options) };
        if status != SUCCESS || options.is_null() {
            return Some(Err(if status == SUCCESS { INVALID } else { status }));
        }
        let mut buffer: *mut c_char = ptr::null_mut();
        let mut size = 0usize;
        // SAFETY: `options` is the object libnrt allocated, freed once at the end; the buffer
        // libnrt returns holds `size` bytes until `nrt_sys_trace_buffer_free`, and is copied
        // out before that.
        let result = unsafe {
            if let Some(max) = max_events_per_nc {
                set_max(options, max);
            }
            if let Some(nc) = nc {
                set_nc(options, nc);
            }
            let status = fetch(&mut buffer, &mut size, options);
            let result = if status != SUCCESS {
                Err(status)
            } else if buffer.is_null() {
                Ok(String::new())
            } else {
                let bytes = std::slice::from_raw_parts(buffer.cast::<u8>(), size);
                let text = String::from_utf8_lossy(bytes).into_owned();
                free_buffer(buffer);
                Ok(text)
            };
            free_options(options);
            result
        };
        Some(result)
    }

    /// `nrt_sys_trace_stop`; `None` when the library lacks it.
    pub(crate) fn sys_trace_stop(&self) -> Option<Result<(), RawStatus>> {
        let stop = self.functions.nrt_sys_trace_stop?;
        // SAFETY: no arguments.
        let status = unsafe { stop() };
        Some(if status == SUCCESS { Ok(()) } else { Err(status) })
    }

    /// `nrt_get_instance_info` into a whole `nrt_instance_info_t`, its names copied up to their
    /// NUL; `None` when the library lacks it.
    pub(crate) fn get_instance_info(
        &self,
    ) -> Option<Result<abi::runtime::InstanceInfo, RawStatus>> {
        let function = self.functions.nrt_get_instance_info?;
        let mut info =
            nrt_instance_info_t { family: 0, size: 0, arch_name: [0; 16], device_revision: [0; 8] };
        // SAFETY: `info` has `size_of` writable bytes; the signature is the table's.
        let status = unsafe { function(&mut info, size_of::<nrt_instance_info_t>()) };
        if status != SUCCESS {
            return Some(Err(status));
        }
        let text = |chars: &[c_char]| {
            let bytes: Vec<u8> = chars.iter().map(|&c| c as u8).take_while(|&b| b != 0).collect();
            String::from_utf8_lossy(&bytes).into_owned()
        };
        Some(Ok(abi::runtime::InstanceInfo {
            family: info.family,
            size: info.size,
            arch_name: text(&info.arch_name),
            device_revision: text(&info.device_revision),
        }))
    }

    /// `nrt_profile_stop(filename)` (NULL for `None`); `None` when the library lacks it.
    pub(crate) fn profile_stop(&self, filename: Option<&CStr>) -> Option<RawStatus> {
        let stop = self.functions.nrt_profile_stop?;
        // SAFETY: NULL or a NUL-terminated string that outlives the call.
        Some(unsafe { stop(filename.map_or(ptr::null(), CStr::as_ptr)) })
    }

    /// `nrt_profile_continuous_start(NULL)`; `None` when the library lacks it.
    pub(crate) fn profile_continuous_start(&self) -> Option<RawStatus> {
        let start = self.functions.nrt_profile_continuous_start?;
        // SAFETY: NULL options are the library's defaults.
        Some(unsafe { start(ptr::null_mut()) })
    }

    /// `nrt_profile_continuous_options_allocate`, `…_set_output_dir`,
    /// `nrt_profile_continuous_save(vnc, options)`, then `…_options_free`; `None` when the
    /// library lacks one of them.
    pub(crate) fn profile_continuous_save(&self, vnc: u32, output_dir: &CStr) -> Option<RawStatus> {
        let functions = &self.functions;
        let allocate = functions.nrt_profile_continuous_options_allocate?;
        let set_dir = functions.nrt_profile_continuous_options_set_output_dir?;
        let save = functions.nrt_profile_continuous_save?;
        let free = functions.nrt_profile_continuous_options_free?;
        let mut options: *mut nrt_profile_continuous_options_t = ptr::null_mut();
        // SAFETY: a valid out-pointer; the signatures are the table's.
        let status = unsafe { allocate(&mut options) };
        if status != SUCCESS || options.is_null() {
            return Some(if status == SUCCESS { INVALID } else { status });
        }
        // SAFETY: `options` is the object libnrt allocated, freed once at the end; the folder
        // name is NUL-terminated and outlives the calls.
        let status = unsafe {
            let mut status = set_dir(options, output_dir.as_ptr());
            if status == SUCCESS {
                status = save(vnc, options);
            }
            free(options);
            status
        };
        Some(status)
    }

    /// `nrt_profile_continuous_stop`; `None` when the library lacks it.
    pub(crate) fn profile_continuous_stop(&self) -> Option<RawStatus> {
        let stop = self.functions.nrt_profile_continuous_stop?;
        // SAFETY: no arguments.
        Some(unsafe { stop() })
    }

    /// `nrt_inspect_config_allocate`, the setters asked for, `nrt_inspect_begin_with_options`,
    /// then `nrt_inspect_config_free`; `None` when the library lacks one of them.
    pub(crate) fn inspect_begin_with_options(
        &self,
        session_id: Option<c_int>,
        output_dir: Option<&CStr>,
        enable_inspect: Option<bool>,
        enable_inspect_on_fail: Option<bool>,
    ) -> Option<RawStatus> {
        let functions = &self.functions;
        let allocate = functions.nrt_inspect_config_allocate?;
        let set_session = functions.nrt_inspect_config_set_session_id?;
        let set_dir = functions.nrt_inspect_config_set_output_dir?;
        let set_inspect = functions.nrt_inspect_config_set_enable_inspect?;
        let set_on_fail = functions.nrt_inspect_config_set_enable_inspect_on_fail?;
        let begin = functions.nrt_inspect_begin_with_options?;
        let free = functions.nrt_inspect_config_free?;
        let mut config: *mut nrt_inspect_config_t = ptr::null_mut();
        // SAFETY: a valid out-pointer; the signatures are the table's.
        let status = unsafe { allocate(&mut config) };
        if status != SUCCESS || config.is_null() {
            return Some(if status == SUCCESS { INVALID } else { status });
        }
        // SAFETY: `config` is the object libnrt allocated, freed once at the end; the folder
        // name is NUL-terminated and outlives the calls.
        let status = unsafe {
            let mut status = SUCCESS;
            if let Some(id) = session_id {
                status = set_session(config, id);
            }
            if let (SUCCESS, Some(dir)) = (status, output_dir) {
                status = set_dir(config, dir.as_ptr());
            }
            if let (SUCCESS, Some(on)) = (status, enable_inspect) {
                status = set_inspect(config, on);
            }
            if let (SUCCESS, Some(on)) = (status, enable_inspect_on_fail) {
                status = set_on_fail(config, on);
            }
            if status == SUCCESS {
                status = begin(config);
            }
            free(config);
            status
        };
        Some(status)
    }

    /// `nrt_inspect_stop`; `None` when the library lacks it.
    pub(crate) fn inspect_stop(&self) -> Option<RawStatus> {
        let stop = self.functions.nrt_inspect_stop?;
        // SAFETY: no arguments.
        Some(unsafe { stop() })
    }

    /// `nrt_get_dmabuf_fd` of device memory at `va`; `None` when the library lacks it.
    pub(crate) fn get_dmabuf_fd(&self, va: usize, size: u64) -> Option<Result<i32, RawStatus>> {
        let function = self.functions.nrt_get_dmabuf_fd?;
        let mut fd: c_int = -1;
        // SAFETY: the address is a number libnrt judges; `fd` is a valid out-pointer.
        let status = unsafe { function(va as u64, size, &mut fd) };
        Some(if status == SUCCESS { Ok(fd) } else { Err(status) })
    }

    /// `nrt_get_hbm_mmap_va`: the mapping's address (as a number, never dereferenced here) and
    /// size; `None` when the library lacks it.
    pub(crate) fn get_hbm_mmap_va(
        &self,
        device_id: c_int,
        hbm_idx: c_int,
    ) -> Option<Result<(usize, usize), RawStatus>> {
        let function = self.functions.nrt_get_hbm_mmap_va?;
        let mut address: *mut c_void = ptr::null_mut();
        let mut size = 0usize;
        // SAFETY: both out-pointers are valid; the signature is the table's.
        let status = unsafe { function(device_id, hbm_idx, &mut address, &mut size) };
        Some(if status == SUCCESS { Ok((address as usize, size)) } else { Err(status) })
    }

    /// `nrt_get_attached_efa_bdf` of device memory at `va` into a 64-byte buffer, copied up to
    /// its NUL; `None` when the library lacks it.
    pub(crate) fn get_attached_efa_bdf(&self, va: usize) -> Option<Result<String, RawStatus>> {
        let function = self.functions.nrt_get_attached_efa_bdf?;
        let mut buffer = [0 as c_char; 64];
        let mut len = buffer.len();
        // SAFETY: the address is a number libnrt judges; `buffer` has `len` writable bytes and
        // `len` is a valid in/out pointer.
        let status = unsafe { function(va as *const c_void, buffer.as_mut_ptr(), &mut len) };
        if status != SUCCESS {
            return Some(Err(status));
        }
        let bytes: Vec<u8> = buffer.iter().map(|&c| c as u8).take_while(|&b| b != 0).collect();
        Some(Ok(String::from_utf8_lossy(&bytes).into_owned()))
    }

    /// `nrta_get_completion_handle`: the descriptor libnrt hands over, owned (closed on drop,
    /// as the header asks); `None` when the library lacks it.
    pub(crate) fn get_completion_handle(
        &self,
        seq: u64,
    ) -> Option<Result<std::os::fd::OwnedFd, RawStatus>> {
        use std::os::fd::FromRawFd as _;
        let function = self.functions.nrta_get_completion_handle?;
        let mut fd: c_int = -1;
        // SAFETY: a valid out-pointer; any sequence id is a valid argument.
        let status = unsafe { function(seq, &mut fd) };
        if status != SUCCESS {
            return Some(Err(status));
        }
        if fd < 0 {
            return Some(Err(INVALID));
        }
        // SAFETY: on success libnrt returned a new, open descriptor that the caller owns and
        // must close; nothing else holds it.
        Some(Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) }))
    }

    /// `nrt_build_global_comm`; `None` when the library lacks it.
    pub(crate) fn build_global_comm(&self, vnc: i32, rank: u32, world: u32) -> Option<RawStatus> {
        let function = self.functions.nrt_build_global_comm?;
        // SAFETY: plain value arguments.
        Some(unsafe { function(vnc, rank, world) })
    }

    /// `nrt_cc_global_comm_init`; `None` when the library lacks it.
    pub(crate) fn cc_global_comm_init(&self, vnc: u32, rank: u32, world: u32) -> Option<RawStatus> {
        let function = self.functions.nrt_cc_global_comm_init?;
        // SAFETY: plain value arguments.
        Some(unsafe { function(vnc, rank, world) })
    }

    /// `nrt_barrier`; `None` when the library lacks it.
    pub(crate) fn barrier(&self, vnc: i32, rank: u32, world: u32) -> Option<RawStatus> {
        let function = self.functions.nrt_barrier?;
        // SAFETY: plain value arguments.
        Some(unsafe { function(vnc, rank, world) })
    }

    /// `nrt_all_gather` of `input` into a buffer of `world × input.len()` bytes; `None` when the
    /// library lacks it. Sizes that do not fit the C arguments or memory are libnrt's `NRT_INVALID`
    /// / `NRT_RESOURCE` here, decided before any call.
    pub(crate) fn all_gather(
        &self,
        vnc: i32,
        rank: u32,
        world: u32,
        input: &[u8],
    ) -> Option<Result<Vec<u8>, RawStatus>> {
        let function = self.functions.nrt_all_gather?;
        let Ok(size) = u32::try_from(input.len()) else {
            return Some(Err(NrtStatus::Invalid.code()));
        };
        let Some(total) = input.len().checked_mul(world as usize) else {
            return Some(Err(NrtStatus::Invalid.code()));
        };
        let mut output = Vec::new();
        if output.try_reserve_exact(total).is_err() {
            return Some(Err(NrtStatus::Resource.code()));
        }
        output.resize(total, 0u8);
        let mut staged = input.to_vec();
        // SAFETY: `staged` has `size` readable bytes and `output` `world × size` writable ones,
        // both owned here and alive for the call.
        let status = unsafe {
            function(
                vnc,
                rank,
                world,
                size,
                staged.as_mut_ptr().cast::<c_void>(),
                output.as_mut_ptr().cast::<c_void>(),
            )
        };
        Some(if status == SUCCESS { Ok(output) } else { Err(status) })
    }

    /// `nrt_trace_start`; `None` when the library lacks it.
    pub(crate) fn trace_start(&self, trace_mem: bool) -> Option<RawStatus> {
        let start = self.functions.nrt_trace_start?;
        // SAFETY: a plain value argument.
        Some(unsafe { start(trace_mem) })
    }

    /// `nrt_trace_stop(filename)` (NULL for `None`); `None` when the library lacks it.
    pub(crate) fn trace_stop(&self, filename: Option<&CStr>) -> Option<RawStatus> {
        let stop = self.functions.nrt_trace_stop?;
        // SAFETY: NULL or a NUL-terminated string that outlives the call.
        Some(unsafe { stop(filename.map_or(ptr::null(), CStr::as_ptr)) })
    }

    /// `nrt_get_status_as_str`, copied into Rust; `None` when the library returns NULL.
    pub(crate) fn status_as_str(&self, status: RawStatus) -> Option<String> {
        // SAFETY: any integer is a valid argument.
        let text = unsafe { (self.functions.nrt_get_status_as_str)(status) };
        if text.is_null() {
            return None;
        }
        // SAFETY: libnrt returns a NUL-terminated static string for every status.
        let text = unsafe { CStr::from_ptr(text) };
        Some(text.to_string_lossy().into_owned())
    }
}

/// The handle a call returned, or its failing status (a NULL handle with success is a failure
/// of the library, reported as `NRT_FAILURE`).
fn owned<T>(status: RawStatus, handle: *mut T) -> Result<NonNull<T>, RawStatus> {
    if status != SUCCESS {
        return Err(status);
    }
    NonNull::new(handle).ok_or(1)
}

/// The bytes of a fixed C `char` array up to its first NUL (or all of it).
fn c_array_bytes(array: &[c_char]) -> Vec<u8> {
    array.iter().map(|&c| c as u8).take_while(|&b| b != 0).collect()
}

/// `nrt_version_t`, copied out.
pub(crate) struct RawVersion {
    pub(crate) major: u64,
    pub(crate) minor: u64,
    pub(crate) patch: u64,
    pub(crate) maintenance: u64,
    pub(crate) detail: Vec<u8>,
    pub(crate) git_hash: Vec<u8>,
}

/// One `nrt_tensor_info_t`, copied out.
pub(crate) struct RawTensorInfo {
    pub(crate) name: Vec<u8>,
    pub(crate) usage: u32,
    pub(crate) size: usize,
    pub(crate) dtype: u32,
    pub(crate) shape: Vec<u32>,
}

/// A loaded model; unloaded on drop unless [`OwnedModel::unload`] succeeded.
pub(crate) struct OwnedModel {
    library: Arc<Library>,
    model: NonNull<NrtModel>,
    /// Whether `nrt_unload` succeeded. Calls hold the read side, so unloading waits for
    /// launches in flight and no launch starts on an unloaded model.
    unloaded: RwLock<bool>,
}

// SAFETY: the handle is an opaque token that libnrt accepts from any thread (libnrt is
// thread-safe); Rust never dereferences it, and `unloaded` orders unload after every call.
unsafe impl Send for OwnedModel {}
// SAFETY: as for `Send`; every method takes `&self` and synchronises through `unloaded`.
unsafe impl Sync for OwnedModel {}

impl OwnedModel {
    fn live(&self) -> Result<std::sync::RwLockReadGuard<'_, bool>, RawStatus> {
        let guard = self.unloaded.read().unwrap_or_else(PoisonError::into_inner);
        if *guard { Err(INVALID_HANDLE) } else { Ok(guard) }
    }

    /// `nrt_execute` (`repeat`: `nrt_execute_repeat` with that count).
    pub(crate) fn execute(
        &self,
        input: &OwnedSet,
        output: &OwnedSet,
        repeat: Option<i32>,
    ) -> RawStatus {
        let _live = match self.live() {
            Ok(guard) => guard,
            Err(status) => return status,
        };
        let (model, input, output) = (self.model.as_ptr(), input.set.as_ptr(), output.set.as_ptr());
        match repeat {
            // SAFETY: the model is loaded (checked under the read lock held until the call
            // returns) and both sets are live: their owners are borrowed for the call, and every
            // tensor they name is kept alive by them.
            None => unsafe { (self.library.functions.nrt_execute)(model, input, output) },
            // SAFETY: as above.
            Some(count) => unsafe {
                (self.library.functions.nrt_execute_repeat)(model, input, output, count)
            },
        }
    }

    /// A count of the loaded model: `nrt_get_model_nc_count`, `nrt_get_model_vnc_count` or
    /// `nrt_get_model_instance_count`; `None` when the library does not export it.
    pub(crate) fn count(&self, which: LibnrtFunction) -> Option<Result<u32, RawStatus>> {
        let functions = &self.library.functions;
        let mut count = 0u32;
        let call = |count: &mut u32| -> Option<RawStatus> {
            // SAFETY: the model is loaded (read lock held by the caller below); `count` is a
            // valid out-pointer; the signatures are the table's.
            unsafe {
                Some(match which {
                    LibnrtFunction::nrt_get_model_nc_count => {
                        functions.nrt_get_model_nc_count?(self.model.as_ptr(), count)
                    }
                    LibnrtFunction::nrt_get_model_vnc_count => {
                        functions.nrt_get_model_vnc_count?(self.model.as_ptr(), count)
                    }
                    LibnrtFunction::nrt_get_model_instance_count => {
                        functions.nrt_get_model_instance_count?(self.model.as_ptr(), count)
                    }
                    _ => return None,
                })
            }
        };
        let live = match self.live() {
            Ok(live) => live,
            Err(status) => return Some(Err(status)),
        };
        let status = call(&mut count)?;
        drop(live);
        Some(if status == SUCCESS { Ok(count) } else { Err(status) })
    }

    /// `nrt_profile_start` of the loaded model with `filename` (NULL for `None`); `None` when
    /// the library does not export it.
    pub(crate) fn profile_start(&self, filename: Option<&CStr>) -> Option<RawStatus> {
        let start = self.library.functions.nrt_profile_start?;
        let live = match self.live() {
            Ok(live) => live,
            Err(status) => return Some(status),
        };
        // SAFETY: the model is loaded (read lock held); the name is NULL or NUL-terminated and
        // outlives the call; the signature is the table's.
        let status =
            unsafe { start(self.model.as_ptr(), filename.map_or(ptr::null(), CStr::as_ptr)) };
        drop(live);
        Some(status)
    }

    /// `nrt_get_model_info` of the loaded model: its `vnc`; `None` when the library does not
    /// export it.
    pub(crate) fn info_vnc(&self) -> Option<Result<u32, RawStatus>> {
        let function = self.library.functions.nrt_get_model_info?;
        let mut info = c_names::nrt_model_info_t { vnc: 0 };
        let mut written = 0usize;
        let live = match self.live() {
            Ok(live) => live,
            Err(status) => return Some(Err(status)),
        };
        // SAFETY: the model is loaded (read lock held); `info` has `size_of` writable bytes and
        // `written` is a valid out-pointer; the signature is the table's.
        let status = unsafe {
            function(
                self.model.as_ptr(),
                &mut info,
                size_of::<c_names::nrt_model_info_t>(),
                &mut written,
            )
        };
        drop(live);
        Some(if status == SUCCESS { Ok(info.vnc) } else { Err(status) })
    }

    /// `nrt_get_model_tensor_info` then `nrt_free_model_tensor_info`, with the entries copied
    /// out in between.
    pub(crate) fn tensor_info(&self) -> Result<Vec<RawTensorInfo>, RawStatus> {
        let _live = self.live()?;
        let mut array: *mut NrtTensorInfoArray = ptr::null_mut();
        // SAFETY: the model is loaded (read lock held); `array` is a valid out-pointer.
        let status = unsafe {
            (self.library.functions.nrt_get_model_tensor_info)(self.model.as_ptr(), &mut array)
        };
        let array = owned(status, array)?;
        // SAFETY: libnrt returned an array of `tensor_count` entries that stays valid until it
        // is passed to `nrt_free_model_tensor_info`, below; each entry's `shape` points at
        // `ndim` integers (or is NULL when `ndim` is 0).
        let entries = unsafe {
            let count = (*array.as_ptr()).tensor_count as usize;
            let first = ptr::addr_of!((*array.as_ptr()).tensor_array).cast::<NrtTensorInfo>();
            (0..count)
                .map(|i| {
                    let info = &*first.add(i);
                    let shape = if info.shape.is_null() || info.ndim == 0 {
                        Vec::new()
                    } else {
                        std::slice::from_raw_parts(info.shape, info.ndim as usize).to_vec()
                    };
                    RawTensorInfo {
                        name: c_array_bytes(&info.name),
                        usage: info.usage,
                        size: info.size,
                        dtype: info.dtype,
                        shape,
                    }
                })
                .collect::<Vec<_>>()
        };
        // SAFETY: `array` came from `nrt_get_model_tensor_info` and is freed exactly once; no
        // reference into it survives (the entries were copied).
        let status = unsafe { (self.library.functions.nrt_free_model_tensor_info)(array.as_ptr()) };
        if status != SUCCESS {
            return Err(status);
        }
        Ok(entries)
    }

    /// `nrt_unload`. On failure the model stays loaded and this owner stays usable.
    pub(crate) fn unload(&self) -> RawStatus {
        let mut unloaded = self.unloaded.write().unwrap_or_else(PoisonError::into_inner);
        if *unloaded {
            return INVALID_HANDLE;
        }
        // SAFETY: the model is loaded and no call is in flight on it (write lock held).
        let status = unsafe { (self.library.functions.nrt_unload)(self.model.as_ptr()) };
        if status == SUCCESS {
            *unloaded = true;
        }
        status
    }
}

impl Drop for OwnedModel {
    fn drop(&mut self) {
        // A model still loaded when its last owner goes is unloaded; the status has nowhere to
        // go (after `nrt_close` it is CLOSED, and libnrt has released the model itself).
        let _ = self.unload();
    }
}

/// A tensor set and the tensors it names, kept alive while libnrt holds their pointers.
pub(crate) struct OwnedSet {
    library: Arc<Library>,
    set: NonNull<NrtTensorSet>,
    members: Mutex<HashMap<Vec<u8>, Arc<OwnedTensor>>>,
}

// SAFETY: an opaque token libnrt accepts from any thread; the membership map is behind a mutex.
unsafe impl Send for OwnedSet {}
// SAFETY: as for `Send`.
unsafe impl Sync for OwnedSet {}

impl OwnedSet {
    /// `nrt_add_tensor_to_tensor_set`; on success the set keeps `tensor` alive under `name`.
    pub(crate) fn add(&self, name: &CStr, tensor: &Arc<OwnedTensor>) -> RawStatus {
        let mut members = self.members.lock().unwrap_or_else(PoisonError::into_inner);
        // SAFETY: the set and the tensor are live (their owners are borrowed); `name` is
        // NUL-terminated. The set keeps the tensor's owner for as long as it may use the pointer.
        let status = unsafe {
            (self.library.functions.nrt_add_tensor_to_tensor_set)(
                self.set.as_ptr(),
                name.as_ptr(),
                tensor.tensor.as_ptr(),
            )
        };
        if status == SUCCESS {
            members.insert(name.to_bytes().to_vec(), Arc::clone(tensor));
        }
        status
    }

    /// The names this set was given, each with its tensor's tag (no call into libnrt).
    pub(crate) fn member_tags(&self) -> Vec<(Vec<u8>, u64)> {
        let members = self.members.lock().unwrap_or_else(PoisonError::into_inner);
        members.iter().map(|(name, tensor)| (name.clone(), tensor.tag)).collect()
    }

    /// `nrt_get_tensor_from_tensor_set`: the tag of the tensor libnrt returns, or `None` when
    /// it is not one this set was given (a library bug).
    pub(crate) fn get(&self, name: &CStr) -> Result<Option<u64>, RawStatus> {
        let members = self.members.lock().unwrap_or_else(PoisonError::into_inner);
        let mut tensor: *mut NrtTensor = ptr::null_mut();
        // SAFETY: the set is live; `name` is NUL-terminated; `tensor` is a valid out-pointer and
        // the pointer returned is only compared, never dereferenced.
        let status = unsafe {
            (self.library.functions.nrt_get_tensor_from_tensor_set)(
                self.set.as_ptr(),
                name.as_ptr(),
                &mut tensor,
            )
        };
        if status != SUCCESS {
            return Err(status);
        }
        Ok(members
            .get(name.to_bytes())
            .filter(|owner| owner.tensor.as_ptr() == tensor)
            .map(|owner| owner.tag))
    }
}

impl Drop for OwnedSet {
    fn drop(&mut self) {
        let mut set = self.set.as_ptr();
        // SAFETY: the set is live and released exactly once, here; the member tensors are
        // dropped afterwards (fields drop after this body), so libnrt never sees them freed
        // while the set still names them.
        unsafe { (self.library.functions.nrt_destroy_tensor_set)(&mut set) }
    }
}

/// A tensor; `nrt_tensor_free` runs when its last owner (the runtime's table, a set, a call in
/// flight) lets go.
pub(crate) struct OwnedTensor {
    library: Arc<Library>,
    tensor: NonNull<NrtTensor>,
    /// The caller's name for this tensor (the runtime's `TensorId`).
    pub(crate) tag: u64,
    /// Caller memory libnrt reads and writes in place: kept alive with the tensor.
    buffer: Mutex<Option<Arc<SharedBuffer>>>,
}

// SAFETY: an opaque token libnrt accepts from any thread; the buffer is behind a mutex and
// `SharedBuffer` is `Send + Sync`.
unsafe impl Send for OwnedTensor {}
// SAFETY: as for `Send`.
unsafe impl Sync for OwnedTensor {}

impl OwnedTensor {
    /// `nrt_tensor_attach_buffer` over the caller's buffer, kept alive by this tensor.
    pub(crate) fn attach_buffer(&self, buffer: Arc<SharedBuffer>) -> RawStatus {
        let mut kept = self.buffer.lock().unwrap_or_else(PoisonError::into_inner);
        let (address, len) = (buffer.as_mut_ptr().cast::<c_void>(), buffer.byte_len());
        // SAFETY: the tensor is live. `address` and `len` come from the `SharedBuffer` itself
        // (not from a trait a caller implements): `len` interior-mutable bytes of one boxed slice
        // that never moves and may be written through a shared reference while it lives; this
        // tensor keeps `buffer` (and its slices keep a clone) for as long as libnrt may touch the
        // memory.
        let status = unsafe {
            (self.library.functions.nrt_tensor_attach_buffer)(self.tensor.as_ptr(), address, len)
        };
        if status == SUCCESS {
            *kept = Some(buffer);
        }
        status
    }

    /// `nrt_tensor_allocate_slice`.
    pub(crate) fn allocate_slice(
        &self,
        offset: usize,
        size: usize,
        name: &CStr,
        tag: u64,
    ) -> Result<OwnedTensor, RawStatus> {
        let mut slice: *mut NrtTensor = ptr::null_mut();
        // SAFETY: the source tensor is live; `name` is NUL-terminated; `slice` is a valid
        // out-pointer.
        let status = unsafe {
            (self.library.functions.nrt_tensor_allocate_slice)(
                self.tensor.as_ptr(),
                offset,
                size,
                name.as_ptr(),
                &mut slice,
            )
        };
        let slice = owned(status, slice)?;
        let buffer = self.buffer.lock().unwrap_or_else(PoisonError::into_inner).clone();
        Ok(self.library.own_tensor(slice, tag, buffer))
    }

    /// `nrt_tensor_check_output_completion`; `None` when the library does not export it.
    pub(crate) fn check_output_completion(
        &self,
        timeout_us: i64,
        expected: u64,
    ) -> Option<RawStatus> {
        let function = self.library.functions.nrt_tensor_check_output_completion?;
        // SAFETY: the tensor is live; the signature is the table's.
        Some(unsafe { function(self.tensor.as_ptr(), timeout_us, expected) })
    }

    /// `nrt_tensor_reset_output_completion`; `None` when the library does not export it.
    pub(crate) fn reset_output_completion(&self) -> Option<RawStatus> {
        let function = self.library.functions.nrt_tensor_reset_output_completion?;
        // SAFETY: the tensor is live; the signature is the table's.
        Some(unsafe { function(self.tensor.as_ptr()) })
    }

    /// `nrt_tensor_read` into `buf`.
    pub(crate) fn read(&self, offset: usize, buf: &mut [u8]) -> RawStatus {
        // SAFETY: the tensor is live; `buf` is writable for `buf.len()` bytes during the call.
        unsafe {
            (self.library.functions.nrt_tensor_read)(
                self.tensor.as_ptr(),
                buf.as_mut_ptr().cast(),
                offset,
                buf.len(),
            )
        }
    }

    /// `nrt_tensor_write` from `bytes`.
    pub(crate) fn write(&self, offset: usize, bytes: &[u8]) -> RawStatus {
        // SAFETY: the tensor is live; `bytes` is readable for its length during the call.
        unsafe {
            (self.library.functions.nrt_tensor_write)(
                self.tensor.as_ptr(),
                bytes.as_ptr().cast(),
                offset,
                bytes.len(),
            )
        }
    }

    /// `nrt_tensor_copy` from this tensor to `dst`.
    pub(crate) fn copy_to(
        &self,
        src_offset: usize,
        dst: &OwnedTensor,
        dst_offset: usize,
        size: usize,
    ) -> RawStatus {
        // SAFETY: both tensors are live (owners borrowed); libnrt checks the ranges.
        unsafe {
            (self.library.functions.nrt_tensor_copy)(
                self.tensor.as_ptr(),
                src_offset,
                dst.tensor.as_ptr(),
                dst_offset,
                size,
            )
        }
    }

    /// `nrt_tensor_memset`.
    pub(crate) fn memset(&self, offset: u64, value: i32, size: usize) -> RawStatus {
        // SAFETY: the tensor is live; libnrt checks the range.
        unsafe {
            (self.library.functions.nrt_tensor_memset)(self.tensor.as_ptr(), offset, value, size)
        }
    }

    /// `nrt_tensor_get_size`.
    pub(crate) fn size(&self) -> usize {
        // SAFETY: the tensor is live.
        unsafe { (self.library.functions.nrt_tensor_get_size)(self.tensor.as_ptr()) }
    }

    /// `nrt_tensor_get_va`, as an integer (never dereferenced here).
    pub(crate) fn va(&self) -> usize {
        // SAFETY: the tensor is live; the result is only converted to an integer.
        unsafe { (self.library.functions.nrt_tensor_get_va)(self.tensor.as_ptr()) as usize }
    }
}

impl Drop for OwnedTensor {
    fn drop(&mut self) {
        let mut tensor = self.tensor.as_ptr();
        // SAFETY: the tensor is live and released exactly once, here: no set names it any more
        // (sets hold an owner) and no call is in flight (calls borrow an owner). The attached
        // buffer is dropped after this body, once libnrt has let go of it.
        unsafe { (self.library.functions.nrt_tensor_free)(&mut tensor) }
    }
}

/// A C string for a name; a name with an interior NUL cannot reach C and is `NRT_INVALID`.
pub(crate) fn c_name(name: &[u8]) -> Result<CString, RawStatus> {
    CString::new(name).map_err(|_| INVALID)
}
