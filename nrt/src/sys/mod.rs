//! The one FFI boundary of the `nrt` backend: the libnrt C declarations, the loaded library and
//! owned handles whose lifetimes make every call sound.
//!
//! The declarations are ours, written from the facts of docs/abi-facts.md §4 (x86-64 SysV); no header is
//! copied. Everything `unsafe` in the crate is in this module, and each block says why it holds.
//! This file holds the library, its entry points, the owners of handles and the marshalling
//! several headers share; the calls themselves are in one file per public header, each with the
//! `Runtime` supertrait of that header for [`crate::NrtRuntime`] over its calls, so a function's
//! C call and its method sit side by side; below them, each file's `recorded` module says how the
//! recorder reads those functions' calls back from their raw C arguments ([`record`]). Those
//! files deny `unsafe` and allow it only on the items that make the C calls or read a recorded
//! call's pointers, so the methods (status mapping, handle bookkeeping) are safe code as the
//! compiler checks it. The files have the stems the other layers use: `nrt.rs` (`nrt.h`), `experimental.rs` (`nrt_experimental.h`),
//! `async_exec.rs` (`nrt_async.h`), `profile.rs` (`nrt_profile.h`), `sys_trace.rs`
//! (`nrt_sys_trace.h`), `status.rs` (`nrt_status.h`) and `version.rs` (`nrt_version.h`).
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
use std::ffi::{CString, c_char};
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use abi::functions::LibnrtFunction;
use abi::runtime::SharedBuffer;
use abi::status::NrtStatus;

/// `NRT_SUCCESS`.
pub(crate) const SUCCESS: RawStatus = NrtStatus::Success.code();

/// `NRT_INVALID`, returned without a call only where a Rust value cannot be expressed in C (a
/// name with an interior NUL byte).
pub(crate) const INVALID: RawStatus = NrtStatus::Invalid.code();

/// `NRT_INVALID_HANDLE`, for an owner whose model was already unloaded.
pub(crate) const INVALID_HANDLE: RawStatus = NrtStatus::InvalidHandle.code();

/// The C type names of the function table, as this module spells them: the defaults of
/// `abi::c_layout::c_types`, with the handles this module owns shadowed by its own types, which
/// are declared here (and used by the module under their Rust names).
#[allow(non_camel_case_types, unused_imports)]
mod c_names {
    use std::marker::{PhantomData, PhantomPinned};
    use std::mem::offset_of;

    pub(super) use abi::c_layout::c_types::*;
    pub(super) use std::ffi::c_void;

    /// `NRT_STATUS`: a 4-byte C enum, carried as its raw value.
    pub(crate) type RawStatus = u32;

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

    /// `nrt_tensor_set_t` is `void` in C.
    pub(super) type NrtTensorSet = c_void;

    /// `nrt_tensor_info_t`, declared once in `abi::c_layout`.
    pub(crate) use abi::c_layout::NrtTensorInfoC as NrtTensorInfo;

    /// `nrt_tensor_info_array_t`: a count followed by that many entries.
    #[repr(C)]
    pub(crate) struct NrtTensorInfoArray {
        pub(in crate::sys) tensor_count: u64,
        pub(in crate::sys) tensor_array: [NrtTensorInfo; 0],
    }

    const _: () = {
        // The entry layouts are checked in `abi::c_layout`; the array header here.
        assert!(offset_of!(NrtTensorInfoArray, tensor_array) == abi::c_layout::INFO_ARRAY_HEADER);
    };

    pub(super) type NRT_STATUS = RawStatus;
    pub(super) type nrt_model_t = NrtModel;
    pub(super) type nrt_tensor_t = NrtTensor;
    pub(super) type nrt_tensor_info_array_t = NrtTensorInfoArray;
}

use c_names::NrtTensorSet;
pub(crate) use c_names::{NrtModel, NrtTensor, NrtTensorInfo, NrtTensorInfoArray, RawStatus};

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

mod async_exec;
mod experimental;
mod nrt;
pub(crate) mod plans;
mod profile;
pub(crate) mod record;
mod status;
mod sys_trace;
mod version;

pub(crate) use async_exec::{AsyncState, OwnedTracker};

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

    /// Whether the library exports `function`.
    pub(crate) fn exports(&self, function: LibnrtFunction) -> bool {
        self.functions.exports(function)
    }

    fn own_tensor(
        self: &Arc<Self>,
        tensor: NonNull<NrtTensor>,
        tag: u64,
        buffer: Option<Arc<SharedBuffer>>,
    ) -> OwnedTensor {
        OwnedTensor { library: Arc::clone(self), tensor, tag, buffer: Mutex::new(buffer) }
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
