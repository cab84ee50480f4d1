//! The exported C functions of docs/abi-facts.md §4.
//!
//! Each is an ordinary Rust function with the C name and the table's signature; the exported
//! symbol `<c name>@@NRT_2.0.0` is a trampoline to it (see [`crate::symbols`]). Every body runs under [`guard`], so a Rust panic becomes `NRT_FAILURE` (or the
//! function's neutral value) and a line on stderr, never an unwind into C. Arguments are
//! checked in this order: NULL pointers (`NRT_INVALID`), then handles (`NRT_INVALID_HANDLE` for
//! one this library did not hand out, or released), then the simulator decides (lifecycle
//! gate, contract, faults).

// These functions are exported to C through `crate::symbols`, not to Rust.
#![allow(unreachable_pub)]

use std::borrow::Cow;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr;
use std::sync::Arc;

use abi::functions::LibnrtFunction as F;
use abi::runtime::prelude::*;
use abi::runtime::{Framework, ModelId, Placement, SetId, TensorId};

use crate::ffi::{CallerBuffer, InfoArray, NrtTensorInfoC, NrtVersionC, status_text, version_c};
use crate::handles::{Global, Kind, global};
use crate::status::{FAILURE, INVALID, SUCCESS};

pub use crate::async_api::*;
pub use crate::extended::*;
pub use crate::trace_api::*;

/// Runs `body`, turning a panic into `on_panic` and a message.
pub(crate) fn guard<R>(call: &str, on_panic: R, body: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(value) => value,
        Err(payload) => {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a non-text panic".to_owned());
            eprintln!("nrtsim: {call} panicked ({message}); returning its failure value");
            on_panic
        }
    }
}

/// Runs a status-returning body with the global simulator.
pub(crate) fn with_global(call: &str, body: impl FnOnce(&'static Global) -> u32) -> u32 {
    guard(call, FAILURE, || match global() {
        Ok(g) => body(g),
        Err(status) => status,
    })
}

/// Early return of a failing status from a `Result<T, u32>`.
macro_rules! try_status {
    ($e:expr) => {
        match $e {
            Ok(value) => value,
            Err(status) => return status,
        }
    };
}

/// A C string as text (bytes that are not UTF-8 are replaced); `None` for NULL.
///
/// # Safety
/// `text` is NULL or points at a NUL-terminated string that stays valid for `'a`.
unsafe fn c_text<'a>(text: *const c_char) -> Option<Cow<'a, str>> {
    if text.is_null() {
        return None;
    }
    // SAFETY: non-NULL and NUL-terminated by the caller's contract.
    Some(unsafe { CStr::from_ptr(text) }.to_string_lossy())
}

/// A C string's bytes, exactly (names are bytes: two names that differ only in bytes that are
/// not UTF-8 stay two names); `None` for NULL.
///
/// # Safety
/// `text` is NULL or points at a NUL-terminated string that stays valid for `'a`.
unsafe fn c_bytes<'a>(text: *const c_char) -> Option<&'a [u8]> {
    if text.is_null() {
        return None;
    }
    // SAFETY: non-NULL and NUL-terminated by the caller's contract.
    Some(unsafe { CStr::from_ptr(text) }.to_bytes())
}

/// Writes a handle through a caller's out-pointer (checked non-NULL before).
///
/// # Safety
/// `out` points at writable storage for one pointer.
unsafe fn put(out: *mut *mut c_void, handle: usize) {
    // SAFETY: by the caller's contract.
    unsafe { *out = handle as *mut c_void }
}

/// `nrt_init`. NULL version strings are read as empty: they are informational.
///
/// # Safety
/// The strings are NULL or NUL-terminated.
pub unsafe extern "C" fn nrt_init(
    framework: u32,
    fw_version: *const c_char,
    fal_version: *const c_char,
) -> u32 {
    with_global(F::nrt_init.name(), |g| {
        let Some(framework) = Framework::from_code(framework) else { return INVALID };
        // SAFETY: the caller passes NULL or C strings.
        let (fw, fal) = unsafe { (c_text(fw_version), c_text(fal_version)) };
        g.status(
            F::nrt_init.name(),
            g.sim.init(framework, &fw.unwrap_or_default(), &fal.unwrap_or_default()),
        )
    })
}

/// `nrt_close`. Later gated calls return `NRT_CLOSED`; `nrt_init` may open the simulator again
/// (models are gone, tensors and sets stay valid), as the simulator does.
///
/// # Safety
/// None beyond the C ABI.
pub unsafe extern "C" fn nrt_close() {
    guard(F::nrt_close.name(), (), || {
        if let Ok(g) = global() {
            g.sim.close();
        }
    })
}

fn load(
    call: &str,
    g: &Global,
    neff: *const c_void,
    size: usize,
    model: *mut *mut c_void,
    load: impl FnOnce(&[u8]) -> Result<ModelId, abi::runtime::NrtError>,
) -> u32 {
    if neff.is_null() || model.is_null() {
        return INVALID;
    }
    // SAFETY: `neff` points at `size` readable bytes (the C contract); they are only read
    // during this call.
    let bytes = unsafe { std::slice::from_raw_parts(neff.cast::<u8>(), size) };
    match load(bytes) {
        Ok(id) => {
            // SAFETY: `model` is non-NULL and points at the caller's handle variable.
            unsafe { put(model, g.register(Kind::Model, id.0)) };
            SUCCESS
        }
        Err(err) => g.failed(call, &err),
    }
}

/// `nrt_load`.
///
/// # Safety
/// `neff` points at `size` readable bytes; `model` at writable storage for a handle.
pub unsafe extern "C" fn nrt_load(
    neff: *const c_void,
    size: usize,
    vnc: i32,
    vnc_count: i32,
    model: *mut *mut c_void,
) -> u32 {
    with_global(F::nrt_load.name(), |g| {
        load(F::nrt_load.name(), g, neff, size, model, |bytes| g.sim.load(bytes, vnc, vnc_count))
    })
}

/// `nrt_load_collectives`.
///
/// # Safety
/// As [`nrt_load`].
pub unsafe extern "C" fn nrt_load_collectives(
    neff: *const c_void,
    size: usize,
    vnc: i32,
    vnc_count: i32,
    ctx_device_id: u32,
    ctx_device_count: u32,
    model: *mut *mut c_void,
) -> u32 {
    with_global(F::nrt_load_collectives.name(), |g| {
        load(F::nrt_load_collectives.name(), g, neff, size, model, |bytes| {
            g.sim.load_collectives(bytes, vnc, vnc_count, ctx_device_id, ctx_device_count)
        })
    })
}

/// `nrt_unload`; the handle is released when the simulator unloads the model.
///
/// # Safety
/// None: the handle is looked up, never dereferenced.
pub unsafe extern "C" fn nrt_unload(model: *mut c_void) -> u32 {
    with_global(F::nrt_unload.name(), |g| {
        let id = try_status!(g.lookup(Kind::Model, model as usize));
        let status = g.status(F::nrt_unload.name(), g.sim.unload(ModelId(id)));
        if status == SUCCESS {
            g.release(Kind::Model, model as usize);
        }
        status
    })
}

fn execute(
    call: &str,
    g: &Global,
    model: usize,
    input: usize,
    output: usize,
    repeat: Option<c_int>,
) -> u32 {
    let model = ModelId(try_status!(g.lookup(Kind::Model, model)));
    let input = SetId(try_status!(g.lookup(Kind::Set, input)));
    let output = SetId(try_status!(g.lookup(Kind::Set, output)));
    let result = match repeat {
        None => g.sim.execute(model, input, output),
        Some(count) => g.sim.execute_repeat(model, input, output, count),
    };
    match result {
        Ok(status) => status.code(),
        Err(err) => g.failed(call, &err),
    }
}

/// `nrt_execute`: `NRT_SUCCESS`, or `NRT_EXEC_COMPLETED_WITH_NUM_ERR` (1003) with the outputs
/// written, or a failure.
///
/// # Safety
/// None: handles are looked up, never dereferenced.
pub unsafe extern "C" fn nrt_execute(
    model: *mut c_void,
    input: *const c_void,
    output: *mut c_void,
) -> u32 {
    with_global(F::nrt_execute.name(), |g| {
        execute(F::nrt_execute.name(), g, model as usize, input as usize, output as usize, None)
    })
}

/// `nrt_execute_repeat`.
///
/// # Safety
/// None: handles are looked up, never dereferenced.
pub unsafe extern "C" fn nrt_execute_repeat(
    model: *mut c_void,
    input: *const c_void,
    output: *mut c_void,
    repeat_count: c_int,
) -> u32 {
    with_global(F::nrt_execute_repeat.name(), |g| {
        execute(
            F::nrt_execute_repeat.name(),
            g,
            model as usize,
            input as usize,
            output as usize,
            Some(repeat_count),
        )
    })
}

/// `nrt_allocate_tensor_set`.
///
/// # Safety
/// `set` points at writable storage for a handle.
pub unsafe extern "C" fn nrt_allocate_tensor_set(set: *mut *mut c_void) -> u32 {
    with_global(F::nrt_allocate_tensor_set.name(), |g| {
        if set.is_null() {
            return INVALID;
        }
        match g.sim.allocate_tensor_set() {
            Ok(id) => {
                // SAFETY: non-NULL, the caller's handle variable.
                unsafe { put(set, g.register(Kind::Set, id.0)) };
                SUCCESS
            }
            Err(err) => g.failed(F::nrt_allocate_tensor_set.name(), &err),
        }
    })
}

/// `nrt_destroy_tensor_set`: forgets the set (not its tensors) and sets `*set` to NULL. An
/// unknown handle is ignored.
///
/// # Safety
/// `set` is NULL or points at the caller's handle variable.
pub unsafe extern "C" fn nrt_destroy_tensor_set(set: *mut *mut c_void) {
    guard(F::nrt_destroy_tensor_set.name(), (), || {
        let Ok(g) = global() else { return };
        if set.is_null() {
            return;
        }
        // SAFETY: non-NULL, the caller's handle variable.
        let handle = unsafe { *set } as usize;
        if let Some(id) = g.release(Kind::Set, handle) {
            let _ = g.sim.destroy_tensor_set(SetId(id));
        }
        // SAFETY: as above.
        unsafe { *set = ptr::null_mut() };
    })
}

/// `nrt_add_tensor_to_tensor_set`: adds or replaces `name`.
///
/// # Safety
/// `name` is NULL or a C string.
pub unsafe extern "C" fn nrt_add_tensor_to_tensor_set(
    set: *mut c_void,
    name: *const c_char,
    tensor: *mut c_void,
) -> u32 {
    with_global(F::nrt_add_tensor_to_tensor_set.name(), |g| {
        // SAFETY: NULL or a C string.
        let Some(name) = (unsafe { c_bytes(name) }) else { return INVALID };
        let set = SetId(try_status!(g.lookup(Kind::Set, set as usize)));
        let tensor = TensorId(try_status!(g.lookup(Kind::Tensor, tensor as usize)));
        g.status(
            F::nrt_add_tensor_to_tensor_set.name(),
            g.sim.add_tensor_to_tensor_set(set, name, tensor),
        )
    })
}

/// `nrt_get_tensor_from_tensor_set`: `NRT_FAILURE` for a missing name.
///
/// # Safety
/// `name` is NULL or a C string; `tensor` is NULL or points at writable storage for a handle.
pub unsafe extern "C" fn nrt_get_tensor_from_tensor_set(
    set: *mut c_void,
    name: *const c_char,
    tensor: *mut *mut c_void,
) -> u32 {
    with_global(F::nrt_get_tensor_from_tensor_set.name(), |g| {
        // SAFETY: NULL or a C string.
        let Some(name) = (unsafe { c_bytes(name) }) else { return INVALID };
        if tensor.is_null() {
            return INVALID;
        }
        let set = SetId(try_status!(g.lookup(Kind::Set, set as usize)));
        match g.sim.get_tensor_from_tensor_set(set, name) {
            Ok(id) => {
                // SAFETY: non-NULL, the caller's handle variable. The handle of a tensor freed
                // since it was added is not registered, so using it is NRT_INVALID_HANDLE.
                unsafe { put(tensor, crate::handles::encode(Kind::Tensor, id.0)) };
                SUCCESS
            }
            Err(err) => g.failed(F::nrt_get_tensor_from_tensor_set.name(), &err),
        }
    })
}

fn new_tensor(
    call: &str,
    g: &Global,
    out: *mut *mut c_void,
    made: Result<TensorId, abi::runtime::NrtError>,
) -> u32 {
    match made {
        Ok(id) => {
            // SAFETY: `out` was checked non-NULL by the caller of this function and is the C
            // caller's handle variable.
            unsafe { put(out, g.register(Kind::Tensor, id.0)) };
            SUCCESS
        }
        Err(err) => g.failed(call, &err),
    }
}

/// `nrt_tensor_allocate`. A NULL name is an empty name.
///
/// # Safety
/// `name` is NULL or a C string; `tensor` is NULL or points at writable storage for a handle.
pub unsafe extern "C" fn nrt_tensor_allocate(
    placement: u32,
    vnc: c_int,
    size: usize,
    name: *const c_char,
    tensor: *mut *mut c_void,
) -> u32 {
    with_global(F::nrt_tensor_allocate.name(), |g| {
        let Some(placement) = Placement::from_code(placement) else { return INVALID };
        if tensor.is_null() {
            return INVALID;
        }
        // SAFETY: NULL or a C string.
        let name = unsafe { c_bytes(name) }.unwrap_or_default();
        new_tensor(
            F::nrt_tensor_allocate.name(),
            g,
            tensor,
            g.sim.tensor_allocate(placement, vnc, size, name),
        )
    })
}

/// `nrt_tensor_allocate_empty`. A NULL name is an empty name.
///
/// # Safety
/// As [`nrt_tensor_allocate`].
pub unsafe extern "C" fn nrt_tensor_allocate_empty(
    name: *const c_char,
    tensor: *mut *mut c_void,
) -> u32 {
    with_global(F::nrt_tensor_allocate_empty.name(), |g| {
        if tensor.is_null() {
            return INVALID;
        }
        // SAFETY: NULL or a C string.
        let name = unsafe { c_bytes(name) }.unwrap_or_default();
        new_tensor(
            F::nrt_tensor_allocate_empty.name(),
            g,
            tensor,
            g.sim.tensor_allocate_empty(name),
        )
    })
}

/// `nrt_tensor_attach_buffer`: the tensor uses the caller's memory in place.
///
/// # Safety
/// `buffer` points at `size` bytes that the caller keeps readable, writable and in place while
/// the tensor (or a slice of it) exists.
pub unsafe extern "C" fn nrt_tensor_attach_buffer(
    tensor: *mut c_void,
    buffer: *mut c_void,
    size: usize,
) -> u32 {
    with_global(F::nrt_tensor_attach_buffer.name(), |g| {
        if buffer.is_null() {
            return INVALID;
        }
        let id = TensorId(try_status!(g.lookup(Kind::Tensor, tensor as usize)));
        // SAFETY: the caller keeps `size` bytes at `buffer` alive and in place (this
        // function's contract, libnrt's for attached buffers).
        let memory = unsafe { CallerBuffer::new(buffer as usize, size) };
        g.status(
            F::nrt_tensor_attach_buffer.name(),
            g.sim.tensor_attach_buffer(id, Arc::new(memory)),
        )
    })
}

/// `nrt_tensor_allocate_slice`. A NULL name is an empty name.
///
/// # Safety
/// `name` is NULL or a C string; `slice` is NULL or points at writable storage for a handle.
pub unsafe extern "C" fn nrt_tensor_allocate_slice(
    source: *const c_void,
    offset: usize,
    size: usize,
    name: *const c_char,
    slice: *mut *mut c_void,
) -> u32 {
    with_global(F::nrt_tensor_allocate_slice.name(), |g| {
        if slice.is_null() {
            return INVALID;
        }
        let source = TensorId(try_status!(g.lookup(Kind::Tensor, source as usize)));
        // SAFETY: NULL or a C string.
        let name = unsafe { c_bytes(name) }.unwrap_or_default();
        let made = g.sim.tensor_allocate_slice(source, offset, size, name);
        new_tensor(F::nrt_tensor_allocate_slice.name(), g, slice, made)
    })
}

/// `nrt_tensor_free`: releases the handle and sets `*tensor` to NULL; storage shared with
/// slices lives on. An unknown handle is ignored.
///
/// # Safety
/// `tensor` is NULL or points at the caller's handle variable.
pub unsafe extern "C" fn nrt_tensor_free(tensor: *mut *mut c_void) {
    guard(F::nrt_tensor_free.name(), (), || {
        let Ok(g) = global() else { return };
        if tensor.is_null() {
            return;
        }
        // SAFETY: non-NULL, the caller's handle variable.
        let handle = unsafe { *tensor } as usize;
        if let Some(id) = g.release(Kind::Tensor, handle) {
            let _ = g.sim.tensor_free(TensorId(id));
        }
        // SAFETY: as above.
        unsafe { *tensor = ptr::null_mut() };
    })
}

/// `nrt_tensor_read`.
///
/// # Safety
/// `buffer` points at `size` writable bytes.
pub unsafe extern "C" fn nrt_tensor_read(
    tensor: *const c_void,
    buffer: *mut c_void,
    offset: usize,
    size: usize,
) -> u32 {
    with_global(F::nrt_tensor_read.name(), |g| {
        if buffer.is_null() {
            return INVALID;
        }
        let id = TensorId(try_status!(g.lookup(Kind::Tensor, tensor as usize)));
        // `buffer` may point into simulator memory (from `nrt_tensor_get_va`), so it is never
        // made a slice: the bytes are staged and moved with an overlap-safe copy.
        let read = g.sim.tensor_read_staged(id, offset, size, |staged| {
            // SAFETY: `buffer` points at `size` writable bytes (the C contract) for this call;
            // `ptr::copy` allows them to overlap anything, the staging buffer is our own.
            unsafe { ptr::copy(staged.as_ptr(), buffer.cast::<u8>(), staged.len()) }
        });
        g.status(F::nrt_tensor_read.name(), read)
    })
}

/// `nrt_tensor_write`.
///
/// # Safety
/// `buffer` points at `size` readable bytes.
pub unsafe extern "C" fn nrt_tensor_write(
    tensor: *mut c_void,
    buffer: *const c_void,
    offset: usize,
    size: usize,
) -> u32 {
    with_global(F::nrt_tensor_write.name(), |g| {
        if buffer.is_null() {
            return INVALID;
        }
        let id = TensorId(try_status!(g.lookup(Kind::Tensor, tensor as usize)));
        // As in `nrt_tensor_read`: staged, never a slice over caller memory.
        let written = g.sim.tensor_write_staged(id, offset, size, |staged| {
            // SAFETY: `buffer` points at `size` readable bytes (the C contract) for this call;
            // `ptr::copy` allows them to overlap anything.
            unsafe { ptr::copy(buffer.cast::<u8>(), staged.as_mut_ptr(), staged.len()) }
        });
        g.status(F::nrt_tensor_write.name(), written)
    })
}

/// `nrt_tensor_copy`.
///
/// # Safety
/// None: handles are looked up, never dereferenced.
pub unsafe extern "C" fn nrt_tensor_copy(
    source: *const c_void,
    source_offset: usize,
    destination: *mut c_void,
    destination_offset: usize,
    size: usize,
) -> u32 {
    with_global(F::nrt_tensor_copy.name(), |g| {
        let source = TensorId(try_status!(g.lookup(Kind::Tensor, source as usize)));
        let destination = TensorId(try_status!(g.lookup(Kind::Tensor, destination as usize)));
        let copied =
            g.sim.tensor_copy(source, source_offset, destination, destination_offset, size);
        g.status(F::nrt_tensor_copy.name(), copied)
    })
}

/// `nrt_tensor_memset`.
///
/// # Safety
/// None: the handle is looked up, never dereferenced.
pub unsafe extern "C" fn nrt_tensor_memset(
    tensor: *mut c_void,
    offset: u64,
    value: c_int,
    size: usize,
) -> u32 {
    with_global(F::nrt_tensor_memset.name(), |g| {
        let id = TensorId(try_status!(g.lookup(Kind::Tensor, tensor as usize)));
        g.status(F::nrt_tensor_memset.name(), g.sim.tensor_memset(id, offset, value, size))
    })
}

/// `nrt_tensor_get_size`: 0 for a handle this library does not know.
///
/// # Safety
/// None: the handle is looked up, never dereferenced.
pub unsafe extern "C" fn nrt_tensor_get_size(tensor: *const c_void) -> usize {
    guard(F::nrt_tensor_get_size.name(), 0, || {
        let Ok(g) = global() else { return 0 };
        let Ok(id) = g.lookup(Kind::Tensor, tensor as usize) else { return 0 };
        g.sim.tensor_get_size(TensorId(id)).unwrap_or(0)
    })
}

/// `nrt_tensor_get_va`: the address of the tensor's simulated storage (or of the attached
/// buffer); NULL for an unknown handle or a tensor without storage.
///
/// # Safety
/// None: the handle is looked up, never dereferenced.
pub unsafe extern "C" fn nrt_tensor_get_va(tensor: *const c_void) -> *mut c_void {
    guard(F::nrt_tensor_get_va.name(), ptr::null_mut(), || {
        let Ok(g) = global() else { return ptr::null_mut() };
        let Ok(id) = g.lookup(Kind::Tensor, tensor as usize) else { return ptr::null_mut() };
        match g.sim.tensor_get_va(TensorId(id)) {
            Ok(address) => address as *mut c_void,
            Err(err) => {
                g.failed(F::nrt_tensor_get_va.name(), &err);
                ptr::null_mut()
            }
        }
    })
}

/// `nrt_get_model_tensor_info`: allocates the array (inputs, then outputs); the caller frees
/// it with `nrt_free_model_tensor_info`.
///
/// # Safety
/// `info` is NULL or points at writable storage for a pointer.
pub unsafe extern "C" fn nrt_get_model_tensor_info(
    model: *mut c_void,
    info: *mut *mut NrtTensorInfoC,
) -> u32 {
    with_global(F::nrt_get_model_tensor_info.name(), |g| {
        if info.is_null() {
            return INVALID;
        }
        let id = ModelId(try_status!(g.lookup(Kind::Model, model as usize)));
        match g.sim.get_model_tensor_info(id) {
            Ok(infos) => {
                let address = g.keep_info(InfoArray::new(&infos, g.sim.dtype_numbering()));
                // SAFETY: non-NULL, the caller's pointer variable.
                unsafe { *info = address as *mut NrtTensorInfoC };
                SUCCESS
            }
            Err(err) => g.failed(F::nrt_get_model_tensor_info.name(), &err),
        }
    })
}

/// `nrt_free_model_tensor_info`: `NRT_INVALID` for NULL, `NRT_INVALID_HANDLE` for an array this
/// library did not hand out or already freed.
///
/// # Safety
/// None: the address is looked up, never dereferenced.
pub unsafe extern "C" fn nrt_free_model_tensor_info(info: *mut NrtTensorInfoC) -> u32 {
    with_global(F::nrt_free_model_tensor_info.name(), |g| g.free_info(info as usize))
}

/// `nrt_get_version`: works before `nrt_init`. `size` must be at least the 224 bytes of
/// `nrt_version_t`.
///
/// # Safety
/// `version` is NULL or points at `size` writable bytes.
pub unsafe extern "C" fn nrt_get_version(version: *mut NrtVersionC, size: usize) -> u32 {
    with_global(F::nrt_get_version.name(), |g| {
        if version.is_null() || size < size_of::<NrtVersionC>() {
            return INVALID;
        }
        match g.sim.get_version() {
            Ok(found) => {
                // SAFETY: non-NULL and at least `size_of::<NrtVersionC>()` writable bytes; the C
                // struct has the same alignment (8) as this one.
                unsafe { ptr::write_unaligned(version, version_c(&found)) };
                SUCCESS
            }
            Err(err) => g.failed(F::nrt_get_version.name(), &err),
        }
    })
}

fn count(
    call: &str,
    g: &Global,
    out: *mut u32,
    counted: Result<u32, abi::runtime::NrtError>,
) -> u32 {
    if out.is_null() {
        return INVALID;
    }
    match counted {
        Ok(n) => {
            // SAFETY: non-NULL, the caller's variable.
            unsafe { *out = n };
            SUCCESS
        }
        Err(err) => g.failed(call, &err),
    }
}

/// `nrt_get_total_vnc_count`: works before `nrt_init`.
///
/// # Safety
/// `count` is NULL or points at a writable `uint32_t`.
pub unsafe extern "C" fn nrt_get_total_vnc_count(out: *mut u32) -> u32 {
    with_global(F::nrt_get_total_vnc_count.name(), |g| {
        if out.is_null() {
            return INVALID;
        }
        count(F::nrt_get_total_vnc_count.name(), g, out, g.sim.get_total_vnc_count())
    })
}

/// `nrt_get_visible_vnc_count`.
///
/// # Safety
/// `count` is NULL or points at a writable `uint32_t`.
pub unsafe extern "C" fn nrt_get_visible_vnc_count(out: *mut u32) -> u32 {
    with_global(F::nrt_get_visible_vnc_count.name(), |g| {
        if out.is_null() {
            return INVALID;
        }
        count(F::nrt_get_visible_vnc_count.name(), g, out, g.sim.get_visible_vnc_count())
    })
}

/// `nrt_get_status_as_str`: the bare identifier (`"NRT_EXEC_COMPLETED_WITH_NUM_ERR"`), static;
/// `"NRT_STATUS_UNKNOWN"` for a code no table knows.
///
/// # Safety
/// None.
pub unsafe extern "C" fn nrt_get_status_as_str(status: u32) -> *const c_char {
    guard(F::nrt_get_status_as_str.name(), crate::ffi::UNKNOWN_STATUS.as_ptr(), || {
        status_text(status).as_ptr()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_the_failure_value_and_does_not_unwind() {
        let status = guard("nrt_test", FAILURE, || -> u32 { panic!("a bug in the simulator") });
        assert_eq!(status, FAILURE);
        let address = guard("nrt_test", ptr::null_mut::<c_void>(), || panic!("another bug"));
        assert!(address.is_null());
        assert_eq!(guard("nrt_test", FAILURE, || SUCCESS), SUCCESS);
    }
}
