//! The calls of `nrt_experimental.h`: model tensor information and the model's core, copies to
//! device addresses, the collectives over ranks (barrier, all-gather) and the legacy trace.
//!
//! `nrt_get_model_instance_count` shares [`OwnedModel::count`] with the counts of `nrt.h`, and
//! draining a core's async requests is [`super::AsyncState::drain`], with the other requests.
//!
//! Below the calls, `RuntimeExperimental` for `NrtRuntime`: the methods of `nrt_experimental.h` over them.
#![deny(unsafe_code)]

use std::ffi::{CStr, c_void};
use std::mem::size_of;
use std::path::Path;
use std::ptr;

use abi::dtype::{DtypeNumbering, NrtDtype};
use abi::functions::LibnrtFunction;
use abi::runtime::{ModelId, NrtError, RuntimeExperimental, TensorInfo, TensorUsage};
use abi::status::NrtStatus;

use super::nrt::ModelCount;
use crate::NrtRuntime;
use crate::runtime::{c_path, check, failed, optional};

use super::{
    Library, NrtTensorInfo, NrtTensorInfoArray, OwnedModel, RawStatus, SUCCESS, c_array_bytes,
    c_names, owned,
};

/// One `nrt_tensor_info_t`, copied out.
pub(crate) struct RawTensorInfo {
    pub(crate) name: Vec<u8>,
    pub(crate) usage: u32,
    pub(crate) size: usize,
    pub(crate) dtype: u32,
    pub(crate) shape: Vec<u32>,
}

impl RawTensorInfo {
    /// The entries of an `nrt_tensor_info_array_t`, copied out.
    ///
    /// # Safety
    /// `array` is an array libnrt made (`tensor_count` entries after the count, each `shape`
    /// pointing at `ndim` integers or NULL) and not yet freed.
    #[allow(unsafe_code)]
    unsafe fn copy_all(array: *const NrtTensorInfoArray) -> Vec<RawTensorInfo> {
        // SAFETY: the caller's contract; entries are read unaligned, as a recorded call's
        // array is the client's pointer.
        unsafe {
            let count = ptr::addr_of!((*array).tensor_count).read_unaligned() as usize;
            let first = ptr::addr_of!((*array).tensor_array).cast::<NrtTensorInfo>();
            (0..count)
                .map(|i| {
                    let info = first.add(i).read_unaligned();
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
                .collect()
        }
    }

    /// The entry as a method returns it, with `usage` (which the caller read from
    /// [`RawTensorInfo::usage`]) and element types numbered as `numbering` says.
    fn info(self, usage: TensorUsage, numbering: DtypeNumbering) -> TensorInfo {
        TensorInfo {
            name: String::from_utf8_lossy(&self.name).into_owned(),
            usage,
            size: self.size,
            dtype: NrtDtype::from_code(numbering, self.dtype),
            shape: self.shape,
        }
    }
}

#[allow(unsafe_code)]
impl Library {
    /// `nrt_memcpy_to_device` of `bytes` to the device address `address`; `None` when the
    /// library does not export it. libnrt judges the address.
    pub(crate) fn memcpy_to_device(&self, address: usize, bytes: &[u8]) -> Option<RawStatus> {
        let function = self.functions.nrt_memcpy_to_device?;
        // SAFETY: `bytes` is readable for its length during the call; the destination is a
        // device address libnrt checks (it is never dereferenced on this side).
        Some(unsafe { function(address as *mut c_void, bytes.as_ptr().cast(), bytes.len()) })
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
}

#[allow(unsafe_code)]
impl OwnedModel {
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
        // SAFETY: libnrt returned the array, valid until it is passed to
        // `nrt_free_model_tensor_info`, below.
        let entries = unsafe { RawTensorInfo::copy_all(array.as_ptr()) };
        // SAFETY: `array` came from `nrt_get_model_tensor_info` and is freed exactly once; no
        // reference into it survives (the entries were copied).
        let status = unsafe { (self.library.functions.nrt_free_model_tensor_info)(array.as_ptr()) };
        if status != SUCCESS {
            return Err(status);
        }
        Ok(entries)
    }
}

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
                Ok(info.info(usage, self.numbering))
            })
            .collect()
    }

    fn get_model_instance_count(&self, model: ModelId) -> Result<u32, NrtError> {
        let which = ModelCount::Instance;
        optional(which.function(), self.model(model)?.count(which))
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

/// How the recorder reads the calls of `nrt_experimental.h` (see [`super::record`]).
#[allow(unsafe_code)]
pub(crate) mod recorded {
    use abi::runtime::TensorUsage;
    use abi::runtime::call::calls;

    use super::super::NrtTensorInfoArray;
    use super::super::record::Read::Nothing;
    use super::super::record::{
        Call, Decoded, Effect, by_name, count, decoded, failure, out_word, plans,
    };
    use super::RawTensorInfo;

    plans! {
        nrt_get_model_instance_count => decoded(Nothing, &[0, 1], get_model_instance_count),
        nrt_get_model_tensor_info => decoded(Nothing, &[0, 1], get_model_tensor_info),
        nrt_async_drain_queued_execs => decoded(Nothing, &[], async_drain_queued_execs),

        // Recorded by name and status only; a replay does not re-issue them.
        // An address of this process.
        nrt_memcpy_to_device => by_name(Nothing),
        // Collectives: their peers are other processes, not in this recording.
        nrt_barrier
        | nrt_all_gather => by_name(Nothing),
        // The legacy trace: a path a line does not carry.
        nrt_trace_start
        | nrt_trace_stop => by_name(Nothing),
        // Results that depend on what the device did.
        nrt_get_model_info => by_name(Nothing),
        // No `Runtime` method, so nothing to re-issue: helpers.
        nrt_free_model_tensor_info
        | nrt_get_libnccl_net
        | nrt_set_pool_eng_ucode
        | nrt_register_async_exec_callback => by_name(Nothing),
    }

    unsafe fn get_model_instance_count(call: &mut Call<'_, '_, '_>) -> Decoded {
        let typed = calls::nrt_get_model_instance_count { model: call.model(0) };
        // SAFETY: a `uint32_t *`.
        unsafe { count(call, typed, 1) }
    }

    unsafe fn get_model_tensor_info(call: &mut Call<'_, '_, '_>) -> Decoded {
        let output = if call.ok() {
            // SAFETY: an `nrt_tensor_info_array_t **` the library filled.
            let array = unsafe { out_word(call.args[1]) } as usize as *const NrtTensorInfoArray;
            let entries = if array.is_null() {
                Vec::new()
            } else {
                // SAFETY: the array the library made, which the client frees only by a later
                // call.
                unsafe { RawTensorInfo::copy_all(array) }
            };
            let numbering = call.numbering;
            Ok(entries
                .into_iter()
                .map(|entry| {
                    let usage = TensorUsage::from_code(entry.usage).unwrap_or(TensorUsage::Output);
                    entry.info(usage, numbering)
                })
                .collect())
        } else {
            Err(failure(call.result))
        };
        let typed = calls::nrt_get_model_tensor_info { model: call.model(0) };
        call.line(typed, output, Effect::None)
    }

    fn async_drain_queued_execs(call: &mut Call<'_, '_, '_>) -> Decoded {
        let typed = calls::nrt_async_drain_queued_execs { vnc: call.args[0] as i32 };
        let output = call.status();
        call.line(typed, output, Effect::None)
    }
}
