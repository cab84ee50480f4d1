//! The calls of `nrt_async.h` (`nrta_*`) for the `nrt` backend, with the ownership that makes
//! them sound, and draining a core's requests (`nrt_async_drain_queued_execs` of
//! `nrt_experimental.h`).
//!
//! A request hands libnrt memory that it reads or writes later, on its own threads. So every
//! request's host buffer is a heap block owned here, in the pending table, together with `Arc`s
//! of the tensor, model and sets it uses, until this module has seen the request complete
//! (`nrta_is_completed`, or a drain): only then is a read's block copied into the caller's
//! [`AsyncReadBuffer`] and the block freed. Rust never touches a block libnrt may still write.
//! When the runtime goes away with requests still pending, their blocks are leaked rather than
//! freed under libnrt's feet.
//!
//! Below the calls, `RuntimeAsync` for `NrtRuntime`: the methods of `nrt_async.h` over them.
#![deny(unsafe_code)]

use std::collections::HashMap;
use std::ffi::c_int;
use std::ptr::{self, NonNull};
use std::sync::{Arc, Mutex, PoisonError};

use abi::functions::LibnrtFunction;
use abi::runtime::{
    AsyncReadBuffer, ModelId, NrtError, RuntimeAsync, SeqId, SetId, TensorId, TrackerId,
};
use abi::status::NrtStatus;

use crate::runtime::{host_block, lock, optional, unknown_tracker};
use crate::{NrtRuntime, status_of};

use super::c_names::{nrta_error_t, nrta_error_tracker_t};
use super::{INVALID, Library, OwnedModel, OwnedSet, OwnedTensor, RawStatus, SUCCESS};

/// An error tracker libnrt made; destroyed once, on drop.
pub(crate) struct OwnedTracker {
    library: Arc<Library>,
    tracker: NonNull<nrta_error_tracker_t>,
}

// SAFETY: an opaque token libnrt accepts from any thread.
#[allow(unsafe_code)]
unsafe impl Send for OwnedTracker {}
// SAFETY: as for `Send`; libnrt synchronises its own tracker state.
#[allow(unsafe_code)]
unsafe impl Sync for OwnedTracker {}

#[allow(unsafe_code)]
impl Drop for OwnedTracker {
    fn drop(&mut self) {
        if let Some(destroy) = self.library.functions.nrta_error_tracker_destroy {
            // SAFETY: the tracker libnrt made, destroyed exactly once (this owner's drop).
            unsafe { destroy(self.tracker.as_ptr()) }
        }
    }
}

#[allow(unsafe_code)]
impl OwnedTracker {
    /// `nrta_error_tracker_create`; `None` when the library lacks it.
    pub(crate) fn create(
        library: &Arc<Library>,
        lnc: u32,
    ) -> Option<Result<OwnedTracker, RawStatus>> {
        let create = library.functions.nrta_error_tracker_create?;
        library.functions.nrta_error_tracker_destroy?;
        let mut tracker: *mut nrta_error_tracker_t = ptr::null_mut();
        // SAFETY: a valid out-pointer; the signature is the table's.
        let status = unsafe { create(lnc, &mut tracker) };
        Some(match NonNull::new(tracker) {
            Some(tracker) if status == SUCCESS => {
                Ok(OwnedTracker { library: Arc::clone(library), tracker })
            }
            _ => Err(if status == SUCCESS { INVALID } else { status }),
        })
    }

    /// `nrta_error_tracker_get_list`, copied into Rust: `(seq_id, error_code)` pairs.
    pub(crate) fn errors(&self) -> Option<Result<Vec<(u64, u64)>, RawStatus>> {
        let get = self.library.functions.nrta_error_tracker_get_list?;
        let mut list: *const nrta_error_t = ptr::null();
        let mut count = 0usize;
        // SAFETY: the tracker is live (owned here); both out-pointers are valid.
        let status = unsafe { get(self.tracker.as_ptr(), &mut list, &mut count) };
        if status != SUCCESS {
            return Some(Err(status));
        }
        if list.is_null() || count == 0 {
            return Some(Ok(Vec::new()));
        }
        // SAFETY: libnrt returned `count` entries, valid until the next call for this tracker;
        // they are copied out at once.
        let entries = unsafe { std::slice::from_raw_parts(list, count) };
        Some(Ok(entries.iter().map(|entry| (entry.seq_id, entry.error_code)).collect()))
    }
}

/// What a pending request keeps alive.
struct Pending {
    /// The host block libnrt reads (a write) or writes (a read).
    block: Box<[u8]>,
    /// Where a read's bytes go once it has completed.
    into: Option<Arc<AsyncReadBuffer>>,
    /// The tensor, model and sets the request uses.
    _tensor: Option<Arc<OwnedTensor>>,
    _model: Option<(Arc<OwnedModel>, Arc<OwnedSet>, Arc<OwnedSet>)>,
    _tracker: Option<Arc<OwnedTracker>>,
}

/// The requests in flight of one runtime.
#[derive(Default)]
pub(crate) struct AsyncState {
    pending: Mutex<HashMap<u64, Pending>>,
}

fn tracker_ptr(tracker: &Option<Arc<OwnedTracker>>) -> *mut nrta_error_tracker_t {
    tracker.as_ref().map_or(ptr::null_mut(), |tracker| tracker.tracker.as_ptr())
}

#[allow(unsafe_code)]
impl AsyncState {
    fn keep(&self, seq: u64, pending: Pending) {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner).insert(seq, pending);
    }

    /// `nrta_tensor_write` of `bytes` (moved here until the request completes).
    pub(crate) fn tensor_write(
        &self,
        tensor: &Arc<OwnedTensor>,
        offset: u64,
        bytes: Box<[u8]>,
        queue: i32,
        tracker: Option<Arc<OwnedTracker>>,
    ) -> Option<Result<u64, RawStatus>> {
        let write = tensor.library.functions.nrta_tensor_write?;
        let mut seq = 0u64;
        // SAFETY: the tensor and tracker are live (owned by `Arc`s kept with the request); the
        // block is `bytes.len()` readable bytes that stay in place, owned by the pending table,
        // until this module sees the request complete.
        let status = unsafe {
            write(
                tensor.tensor.as_ptr(),
                bytes.as_ptr().cast(),
                offset,
                bytes.len() as u64,
                queue,
                tracker_ptr(&tracker),
                &mut seq,
            )
        };
        if status != SUCCESS {
            return Some(Err(status));
        }
        let pending = Pending {
            block: bytes,
            into: None,
            _tensor: Some(Arc::clone(tensor)),
            _model: None,
            _tracker: tracker,
        };
        self.keep(seq, pending);
        Some(Ok(seq))
    }

    /// `nrta_tensor_read` of `size` bytes into a block owned here; `into` gets them once the
    /// request is seen complete.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn tensor_read(
        &self,
        tensor: &Arc<OwnedTensor>,
        offset: u64,
        mut block: Box<[u8]>,
        queue: i32,
        tracker: Option<Arc<OwnedTracker>>,
        into: Arc<AsyncReadBuffer>,
    ) -> Option<Result<u64, RawStatus>> {
        let read = tensor.library.functions.nrta_tensor_read?;
        let mut seq = 0u64;
        // SAFETY: as in `tensor_write`; the block is `len` writable bytes that nothing else
        // reads or writes until this module sees the request complete.
        let status = unsafe {
            read(
                block.as_mut_ptr().cast(),
                tensor.tensor.as_ptr(),
                offset,
                block.len() as u64,
                queue,
                tracker_ptr(&tracker),
                &mut seq,
            )
        };
        if status != SUCCESS {
            return Some(Err(status));
        }
        let pending = Pending {
            block,
            into: Some(into),
            _tensor: Some(Arc::clone(tensor)),
            _model: None,
            _tracker: tracker,
        };
        self.keep(seq, pending);
        Some(Ok(seq))
    }

    /// `nrta_execute_schedule`.
    pub(crate) fn execute(
        &self,
        model: &Arc<OwnedModel>,
        input: &Arc<OwnedSet>,
        output: &Arc<OwnedSet>,
        queue: i32,
        tracker: Option<Arc<OwnedTracker>>,
    ) -> Option<Result<u64, RawStatus>> {
        let schedule = model.library.functions.nrta_execute_schedule?;
        let live = match model.live() {
            Ok(live) => live,
            Err(status) => return Some(Err(status)),
        };
        let mut seq = 0u64;
        // SAFETY: the model is loaded (read lock held for the call) and stays alive with the
        // request, as do both sets and every tensor they name; the tracker too.
        let status = unsafe {
            schedule(
                model.model.as_ptr(),
                input.set.as_ptr(),
                output.set.as_ptr(),
                queue,
                tracker_ptr(&tracker),
                &mut seq,
            )
        };
        drop(live);
        if status != SUCCESS {
            return Some(Err(status));
        }
        let pending = Pending {
            block: Box::new([]),
            into: None,
            _tensor: None,
            _model: Some((Arc::clone(model), Arc::clone(input), Arc::clone(output))),
            _tracker: tracker,
        };
        self.keep(seq, pending);
        Some(Ok(seq))
    }

    /// `nrta_is_completed`; a completed request's block is released (a read's bytes first go
    /// to its buffer).
    pub(crate) fn is_completed(
        &self,
        library: &Library,
        seq: u64,
    ) -> Option<Result<bool, RawStatus>> {
        let check = library.functions.nrta_is_completed?;
        let mut done = false;
        // SAFETY: a valid out-pointer; any sequence id is a valid argument.
        let status = unsafe { check(seq, &mut done) };
        if status != SUCCESS {
            return Some(Err(status));
        }
        if done {
            self.finish(seq);
        }
        Some(Ok(done))
    }

    /// Releases a request libnrt has reported complete.
    fn finish(&self, seq: u64) {
        let pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner).remove(&seq);
        if let Some(Pending { block, into: Some(into), .. }) = pending {
            into.fill(block.into_vec());
        }
    }

    /// `nrt_async_drain_queued_execs`, then every request libnrt reports complete is released.
    pub(crate) fn drain(&self, library: &Library, vnc: i32) -> Option<Result<(), RawStatus>> {
        let drain = library.functions.nrt_async_drain_queued_execs?;
        // SAFETY: any integer is a valid argument.
        let status = unsafe { drain(vnc) };
        self.collect(library);
        Some(if status == SUCCESS { Ok(()) } else { Err(status) })
    }

    /// Releases every pending request libnrt reports complete.
    fn collect(&self, library: &Library) {
        let seqs: Vec<u64> =
            self.pending.lock().unwrap_or_else(PoisonError::into_inner).keys().copied().collect();
        for seq in seqs {
            let _ = self.is_completed(library, seq);
        }
    }

    /// Before the runtime goes: completed requests are released, the others' blocks leaked
    /// (libnrt may still write them).
    pub(crate) fn abandon(&self, library: &Library) {
        self.collect(library);
        let pending =
            std::mem::take(&mut *self.pending.lock().unwrap_or_else(PoisonError::into_inner));
        for (_, request) in pending {
            Box::leak(request.block);
        }
    }
}

#[allow(unsafe_code)]
impl Library {
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
}

impl RuntimeAsync for NrtRuntime {
    fn nrta_error_tracker_create(&self, lnc: u32) -> Result<TrackerId, NrtError> {
        let function = LibnrtFunction::nrta_error_tracker_create;
        let tracker = optional(function, OwnedTracker::create(&self.library, lnc))?;
        let id = TrackerId(self.next_id());
        lock(&self.trackers).insert(id, Arc::new(tracker));
        Ok(id)
    }

    fn nrta_error_tracker_destroy(&self, tracker: TrackerId) -> Result<(), NrtError> {
        // The tracker is destroyed when the last request naming it is released.
        lock(&self.trackers).remove(&tracker).map(drop).ok_or_else(|| unknown_tracker(tracker))
    }

    fn nrta_error_tracker_get_list(
        &self,
        tracker: TrackerId,
    ) -> Result<Vec<(SeqId, NrtStatus)>, NrtError> {
        let function = LibnrtFunction::nrta_error_tracker_get_list;
        let errors = optional(function, self.tracker(tracker)?.errors())?;
        Ok(errors
            .into_iter()
            .map(|(seq, code)| (SeqId(seq), status_of(u32::try_from(code).unwrap_or(u32::MAX))))
            .collect())
    }

    fn nrta_tensor_write(
        &self,
        tensor: TensorId,
        offset: u64,
        bytes: &[u8],
        queue: i32,
        tracker: Option<TrackerId>,
    ) -> Result<SeqId, NrtError> {
        let function = LibnrtFunction::nrta_tensor_write;
        let tensor = self.tensor(tensor)?;
        let tracker = tracker.map(|id| self.tracker(id)).transpose()?;
        let mut block = host_block(bytes.len())?;
        block.copy_from_slice(bytes);
        let scheduled = self.async_state.tensor_write(&tensor, offset, block, queue, tracker);
        optional(function, scheduled).map(SeqId)
    }

    fn nrta_tensor_read(
        &self,
        tensor: TensorId,
        offset: u64,
        size: u64,
        queue: i32,
        tracker: Option<TrackerId>,
        into: Arc<AsyncReadBuffer>,
    ) -> Result<SeqId, NrtError> {
        let function = LibnrtFunction::nrta_tensor_read;
        let tensor = self.tensor(tensor)?;
        let tracker = tracker.map(|id| self.tracker(id)).transpose()?;
        let size = usize::try_from(size).map_err(|_| {
            NrtError::new(
                NrtStatus::Invalid,
                format!("{function}: size {size} does not fit in size_t"),
            )
        })?;
        let block = host_block(size)?;
        let scheduled = self.async_state.tensor_read(&tensor, offset, block, queue, tracker, into);
        optional(function, scheduled).map(SeqId)
    }

    fn nrta_execute_schedule(
        &self,
        model: ModelId,
        input_set: SetId,
        output_set: SetId,
        queue: i32,
        tracker: Option<TrackerId>,
    ) -> Result<SeqId, NrtError> {
        let function = LibnrtFunction::nrta_execute_schedule;
        let model = self.model(model)?;
        let (input, output) = (self.set(input_set)?, self.set(output_set)?);
        self.check_members(function, &input, "input")?;
        self.check_members(function, &output, "output")?;
        let tracker = tracker.map(|id| self.tracker(id)).transpose()?;
        let scheduled = self.async_state.execute(&model, &input, &output, queue, tracker);
        optional(function, scheduled).map(SeqId)
    }

    fn nrta_is_completed(&self, seq: SeqId) -> Result<bool, NrtError> {
        let function = LibnrtFunction::nrta_is_completed;
        optional(function, self.async_state.is_completed(&self.library, seq.0))
    }

    fn nrta_get_completion_handle(&self, seq: SeqId) -> Result<std::os::fd::OwnedFd, NrtError> {
        let function = LibnrtFunction::nrta_get_completion_handle;
        optional(function, self.library.get_completion_handle(seq.0))
    }
}

/// How the recorder reads the calls of `nrt_async.h` (see [`super::record`]).
#[allow(unsafe_code)]
pub(crate) mod recorded {
    use std::sync::Arc;

    use abi::runtime::call::calls;
    use abi::runtime::{AsyncReadBuffer, SeqId, TrackerId};
    use abi::trace::COMPLETED_PREFIX;

    use super::super::record::Read::{Input, Nothing, Sync};
    use super::super::record::{
        Call, Decoded, Effect, Kind, by_name, decoded, out_u64, out_word, plans,
    };

    plans! {
        nrta_error_tracker_create => decoded(Nothing, &[1], error_tracker_create),
        nrta_error_tracker_destroy => decoded(Nothing, &[0], error_tracker_destroy),
        nrta_tensor_write => decoded(Input { pointer: 1, size: 3 }, &[0, 1, 6], tensor_write),
        nrta_tensor_read => decoded(Sync, &[0, 1, 6], tensor_read),
        nrta_execute_schedule => decoded(Sync, &[0, 1, 2, 5], execute_schedule),
        nrta_is_completed => decoded(Nothing, &[1], is_completed),

        // Recorded by name and status only; a replay does not re-issue them.
        // A descriptor of this process.
        nrta_get_completion_handle => by_name(Nothing),
        // Collectives: their peers are other processes, not in this recording.
        nrta_cc_prepare
        | nrta_cc_schedule => by_name(Nothing),
        // Results that depend on timing or on what the device did.
        nrta_get_sequence
        | nrta_error_tracker_get_list => by_name(Nothing),
        // No `Runtime` method, so nothing to re-issue; it reads tensors.
        nrta_tensor_copy => by_name(Sync),
    }

    unsafe fn error_tracker_create(call: &mut Call<'_, '_, '_>) -> Decoded {
        let typed = calls::nrta_error_tracker_create { lnc: call.args[0] as u32 };
        // SAFETY: an `nrta_error_tracker_t **`.
        let output = call.made(Kind::Tracker, unsafe { out_word(call.args[1]) }, TrackerId);
        call.line(typed, output, Effect::None)
    }

    /// A release; `void` in C.
    fn error_tracker_destroy(call: &mut Call<'_, '_, '_>) -> Decoded {
        let tracker = TrackerId(call.generations.released(Kind::Tracker, call.args[0]));
        call.line(calls::nrta_error_tracker_destroy { tracker }, Ok(()), Effect::None)
    }

    unsafe fn tensor_write(call: &mut Call<'_, '_, '_>) -> Decoded {
        let typed = calls::nrta_tensor_write {
            tensor: call.tensor(0),
            offset: call.args[2],
            bytes: call.input(),
            queue: call.args[4] as i32,
            tracker: call.tracker(5),
        };
        // SAFETY: an `nrta_seq_t *`.
        let output = call.made(Kind::Seq, unsafe { out_u64(call.args[6]) }, SeqId);
        call.line(typed, output, Effect::None)
    }

    unsafe fn tensor_read(call: &mut Call<'_, '_, '_>) -> Decoded {
        let typed = calls::nrta_tensor_read {
            tensor: call.tensor(1),
            offset: call.args[2],
            size: call.args[3],
            queue: call.args[4] as i32,
            tracker: call.tracker(5),
            into: Arc::new(AsyncReadBuffer::new()),
        };
        // SAFETY: an `nrta_seq_t *`.
        let output = call.made(Kind::Seq, unsafe { out_u64(call.args[6]) }, SeqId);
        call.line(typed, output, Effect::None)
    }

    unsafe fn execute_schedule(call: &mut Call<'_, '_, '_>) -> Decoded {
        let typed = calls::nrta_execute_schedule {
            model: call.model(0),
            input_set: call.set(1),
            output_set: call.set(2),
            queue: call.args[3] as i32,
            tracker: call.tracker(4),
        };
        // SAFETY: an `nrta_seq_t *`.
        let output = call.made(Kind::Seq, unsafe { out_u64(call.args[5]) }, SeqId);
        call.line(typed, output, Effect::None)
    }

    /// Not a call line (polls depend on timing, and `TracingRuntime` does not trace them): the
    /// first `true` for a request is a `# completed` line, where a replay waits for it.
    unsafe fn is_completed(call: &mut Call<'_, '_, '_>) -> Decoded {
        // SAFETY: a `bool *` the call filled.
        let done = unsafe { (call.args[1] as usize as *const u8).read() } != 0;
        let seq = call.args[0];
        if !(call.ok() && done && call.generations.known(Kind::Seq, seq)) {
            return Decoded::Nothing;
        }
        let seq = call.names.seq(SeqId(call.generations.released(Kind::Seq, seq)));
        Decoded::Line(format!("{COMPLETED_PREFIX}{seq}"), Effect::None)
    }
}
