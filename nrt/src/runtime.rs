//! What the [`Runtime`] methods of [`NrtRuntime`] share: the lookups in its handle tables
//! (`crate::handles`), so that raw pointers never leave this crate, and the mapping of a call's
//! status ([`status_of`]) to an error. The
//! methods themselves are beside their C calls, in the `sys` file of their header: each is one
//! call, its status mapped here.
//!
//! The only refusals made here, without calling libnrt, are those that keep pointers sound:
//! - a handle this runtime did not give out, or already released, is `NRT_INVALID_HANDLE`
//!   (libnrt would be handed a dangling pointer);
//! - a name with a NUL byte is `NRT_INVALID` (it cannot be written as a C string);
//! - a launch (`nrt_execute`, `nrt_execute_repeat`, `nrta_execute_schedule`) whose tensor set
//!   still names a tensor the caller freed is `NRT_INVALID_HANDLE`, as the simulator's is.
//!   libnrt's set holds the caller's pointer, which the header asks to stay valid until the set
//!   is destroyed; after `nrt_tensor_free` libnrt would launch with a dangling pointer. This
//!   crate keeps the C tensor alive while a set names it (its `nrt_tensor_free` runs when the
//!   set lets go), so nothing dangles, but the launch is refused as libnrt's contract says it
//!   cannot be made.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use abi::functions::LibnrtFunction;
use abi::runtime::{ModelId, NrtError, SetId, TensorId, TrackerId};
use abi::status::NrtStatus;
use abi::trace::name_text;

use crate::sys::{self, OwnedModel, OwnedSet, OwnedTensor, RawStatus};
use crate::{NrtRuntime, status_of};

pub(crate) use crate::handles::lock;

/// `Ok` for `NRT_SUCCESS`, else the status of `call`.
pub(crate) fn check(call: LibnrtFunction, code: RawStatus) -> Result<(), NrtError> {
    if code == sys::SUCCESS { Ok(()) } else { Err(failed(call, code)) }
}

/// As [`check`], with the byte range in the message (libnrt's own message does not cross the C
/// ABI, and a bounds error should say which range was asked for).
pub(crate) fn check_range(
    call: LibnrtFunction,
    offset: impl Into<u128>,
    len: usize,
    code: RawStatus,
) -> Result<(), NrtError> {
    check(call, code).map_err(|err| {
        let start = offset.into();
        let end = start + len as u128;
        NrtError::new(
            err.status,
            format!("{call} of bytes {start}..{end} returned {}", err.status.name()),
        )
    })
}

pub(crate) fn failed(call: LibnrtFunction, code: RawStatus) -> NrtError {
    let status = status_of(code);
    NrtError::new(status, format!("{call} returned {}", status.name()))
}

pub(crate) fn c_name(call: LibnrtFunction, name: &[u8]) -> Result<std::ffi::CString, NrtError> {
    sys::c_name(name).map_err(|_| {
        NrtError::new(
            NrtStatus::Invalid,
            format!("{call}: name {} has a NUL byte, expected a C string", name_text(name)),
        )
    })
}

impl NrtRuntime {
    pub(crate) fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    pub(crate) fn tensor(&self, tensor: TensorId) -> Result<Arc<OwnedTensor>, NrtError> {
        lock(&self.handles.tensors).get(&tensor).cloned().ok_or_else(|| {
            NrtError::new(
                NrtStatus::InvalidHandle,
                format!("tensor {} was not allocated by this runtime or is freed", tensor.0),
            )
        })
    }

    pub(crate) fn set(&self, set: SetId) -> Result<Arc<OwnedSet>, NrtError> {
        lock(&self.handles.sets).get(&set).cloned().ok_or_else(|| {
            NrtError::new(
                NrtStatus::InvalidHandle,
                format!("tensor set {} was not allocated by this runtime or is destroyed", set.0),
            )
        })
    }

    pub(crate) fn model(&self, model: ModelId) -> Result<Arc<OwnedModel>, NrtError> {
        lock(&self.handles.models).get(&model).cloned().ok_or_else(|| {
            NrtError::new(
                NrtStatus::InvalidHandle,
                format!("model {} was not loaded by this runtime or is unloaded", model.0),
            )
        })
    }

    pub(crate) fn tracker(&self, tracker: TrackerId) -> Result<Arc<sys::OwnedTracker>, NrtError> {
        lock(&self.trackers).get(&tracker).cloned().ok_or_else(|| unknown_tracker(tracker))
    }

    pub(crate) fn insert_tensor(&self, tensor: OwnedTensor) -> TensorId {
        let id = TensorId(tensor.tag);
        lock(&self.handles.tensors).insert(id, Arc::new(tensor));
        id
    }

    pub(crate) fn insert_model(&self, model: OwnedModel) -> ModelId {
        let id = ModelId(self.next_id());
        lock(&self.handles.models).insert(id, Arc::new(model));
        id
    }

    /// `NRT_INVALID_HANDLE` when `set` names a tensor the caller freed (see the module docs).
    pub(crate) fn check_members(
        &self,
        call: LibnrtFunction,
        set: &OwnedSet,
        which: &str,
    ) -> Result<(), NrtError> {
        let tensors = lock(&self.handles.tensors);
        match set.member_tags().into_iter().find(|(_, tag)| !tensors.contains_key(&TensorId(*tag)))
        {
            Some((name, tag)) => Err(NrtError::new(
                NrtStatus::InvalidHandle,
                format!(
                    "{call}: tensor {tag} was freed (nrt_tensor_free) while still in the {which} set under {}, expected it allocated until the set is destroyed or the name re-added",
                    name_text(&name)
                ),
            )),
            None => Ok(()),
        }
    }

    pub(crate) fn launch(
        &self,
        call: LibnrtFunction,
        model: ModelId,
        input_set: SetId,
        output_set: SetId,
        repeat: Option<i32>,
    ) -> Result<NrtStatus, NrtError> {
        let model = self.model(model)?;
        let (input, output) = (self.set(input_set)?, self.set(output_set)?);
        self.check_members(call, &input, "input")?;
        self.check_members(call, &output, "output")?;
        let code = model.execute(&input, &output, repeat);
        let status = status_of(code);
        if status.is_completed() { Ok(status) } else { Err(failed(call, code)) }
    }
}

/// A path as a C string: its bytes, refused only for a NUL byte.
pub(crate) fn c_path(call: LibnrtFunction, path: &Path) -> Result<std::ffi::CString, NrtError> {
    use std::os::unix::ffi::OsStrExt as _;
    c_name(call, path.as_os_str().as_bytes())
}

/// A zeroed host block of `n_bytes` for an async request; `NRT_RESOURCE` when memory runs out.
pub(crate) fn host_block(n_bytes: usize) -> Result<Box<[u8]>, NrtError> {
    let mut block = Vec::new();
    block.try_reserve_exact(n_bytes).map_err(|_| {
        NrtError::new(
            NrtStatus::Resource,
            format!("cannot allocate {n_bytes} bytes of host memory for an async request"),
        )
    })?;
    block.resize(n_bytes, 0);
    Ok(block.into_boxed_slice())
}

pub(crate) fn unknown_tracker(tracker: TrackerId) -> NrtError {
    NrtError::new(
        NrtStatus::InvalidHandle,
        format!("error tracker {} was not made by this runtime or is destroyed", tracker.0),
    )
}

/// The result of a function only recent libraries export: a library without it is
/// [`NrtStatus::Failure`] with a detail that says so (the call never reached libnrt).
pub(crate) fn optional<T>(
    function: LibnrtFunction,
    called: Option<Result<T, RawStatus>>,
) -> Result<T, NrtError> {
    match called {
        Some(result) => result.map_err(|code| failed(function, code)),
        None => Err(NrtError::new(
            NrtStatus::Failure,
            format!("the loaded libnrt does not export {function}, expected a newer release"),
        )),
    }
}
