//! Tensors whose memory the client can change behind the library's back: those whose address
//! it got (`nrt_tensor_get_va`) and those backed by its own buffer (`nrt_tensor_attach_buffer`).
//!
//! A replay cannot see stores through an address, so before every call that reads tensor
//! contents (launches, reads, copies) the recorder reads each such tensor through the real
//! library and, when it changed since the last look, writes a `# memory tN OFFSET BYTES` line
//! with the changed range. A replay applies the line to its own tensor and compares nothing.
//! The price is one read per exposed tensor per such call, paid only by clients that expose
//! memory.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use nrt::record::Kind;

use crate::sink::{Part, record};

/// Exposed tensors (by the real library's pointer) and their contents at the last look.
static EXPOSED: Mutex<Option<HashMap<u64, Vec<u8>>>> = Mutex::new(None);

fn exposed() -> MutexGuard<'static, Option<HashMap<u64, Vec<u8>>>> {
    EXPOSED.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The tensor's contents, read through the real library (`None` if it cannot be read).
fn contents(tensor: u64) -> Option<Vec<u8>> {
    let functions = crate::real::functions()?;
    let get_size = functions.nrt_tensor_get_size?;
    let read = functions.nrt_tensor_read?;
    let pointer = tensor as usize as *const abi::c_layout::c_types::nrt_tensor_t;
    // SAFETY: `tensor` is a live tensor of the real library (it just returned its address or
    // attached its buffer, and a free removes it from the registry first).
    let size = unsafe { get_size(pointer) };
    let mut bytes = Vec::new();
    bytes.try_reserve_exact(size).ok()?;
    bytes.resize(size, 0);
    // SAFETY: `bytes` is valid for `size` bytes.
    let status = unsafe { read(pointer, bytes.as_mut_ptr().cast(), 0, size) };
    (status == 0).then_some(bytes)
}

/// Registers `tensor`, just exposed; contents other than zeros (a caller's buffer) are written
/// as a `# memory` line at once, since a replay starts from zeroed memory.
pub(crate) fn expose(tensor: u64) {
    let mut guard = exposed();
    let map = guard.get_or_insert_with(HashMap::new);
    if map.contains_key(&tensor) {
        return;
    }
    let Some(now) = contents(tensor) else { return };
    let zeros = vec![0; now.len()];
    changed(tensor, &zeros, &now);
    map.insert(tensor, now);
}

/// Takes a new look at an exposed tensor the library itself just changed (a write), so the
/// change is not written again as a `# memory` line.
pub(crate) fn refresh(tensor: u64) {
    let mut guard = exposed();
    let Some(map) = guard.as_mut() else { return };
    if let Some(seen) = map.get_mut(&tensor) {
        if let Some(now) = contents(tensor) {
            *seen = now;
        }
    }
}

/// Writes the `# memory` line of the range where `before` and `now` differ, if any.
fn changed(tensor: u64, before: &[u8], now: &[u8]) {
    let first = now.iter().zip(before).position(|(a, b)| a != b);
    let last = now.iter().zip(before).rposition(|(a, b)| a != b);
    if let (Some(first), Some(last)) = (first, last) {
        let shown = crate::sink::input_bytes(&now[first..=last]);
        record(vec![
            Part::Text(abi::trace::MEMORY_PREFIX.into()),
            Part::Handle(Kind::Tensor, tensor),
            Part::Text(format!(" {first} {shown}").into()),
        ]);
    }
}

/// Forgets a tensor about to be freed.
pub(crate) fn forget(tensor: u64) {
    if let Some(map) = exposed().as_mut() {
        map.remove(&tensor);
    }
}

/// Writes a `# memory` line for every exposed tensor that changed since the last look.
pub(crate) fn sync() {
    let mut guard = exposed();
    let Some(map) = guard.as_mut() else { return };
    let mut tensors: Vec<u64> = map.keys().copied().collect();
    tensors.sort_unstable();
    for tensor in tensors {
        let Some(now) = contents(tensor) else { continue };
        let Some(before) = map.get_mut(&tensor) else { continue };
        if now.len() == before.len() {
            changed(tensor, before, &now);
        }
        *before = now;
    }
}
