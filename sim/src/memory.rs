//! Simulated memory: per-core HBM, its allocator, host buffers, and the byte moves between them.
//!
//! Design choices:
//! - **One sparse mapping per NeuronCore.** Each core's HBM is a single anonymous mapping of the
//!   configured size, made with `MAP_NORESERVE` through memmap2: the kernel hands out pages only
//!   when they are touched, so a 16 GiB core costs nothing until used. Offsets into the mapping
//!   are the device addresses the allocator hands out. The mapping is advised to use transparent
//!   huge pages: without them a 64 MiB DMA ran at about 0.5-0.8 of a plain `memcpy` on the
//!   development machine (TLB misses on the device side), with them on par.
//! - **A first-fit allocator over free ranges** (a `BTreeMap` from offset to length, coalescing on
//!   free). Every allocation is rounded up to [`MIN_ALIGNMENT`] and aligned to at least that, so
//!   accounting is in whole blocks and `bytes_in_use` returns to zero when everything is freed.
//! - **Storage is reference-counted** ([`Storage`] behind an `Arc`): a slice holds the same `Arc`
//!   as its parent, so it outlives the parent's handle, and a device block returns to the
//!   allocator when its last user drops it.
//! - **Locks, and one order for them.** A core's bytes sit behind one mutex; a host buffer behind
//!   its own. A move that needs two locks takes the host one first, then the device one (two host
//!   buffers: lower address first), so concurrent copies in opposite directions cannot deadlock.
//!   Caller-owned [`ExternalBuffer`]s lock inside their own methods and are always taken last.
//! - **No unsafe**: addresses are read with `as_ptr() as usize`, never dereferenced.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use abi::runtime::{ExternalBuffer, NrtError};
use abi::status::NrtStatus;
use memmap2::{MmapMut, MmapOptions};

/// The smallest alignment and allocation granule of device memory, in bytes.
pub(crate) const MIN_ALIGNMENT: u64 = 64;

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding a memory lock cannot leave bytes half-typed in a way that matters to
    // a simulator, so a poisoned lock is used as it is.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn align_up(value: u64, alignment: u64) -> Option<u64> {
    let mask = alignment - 1;
    value.checked_add(mask).map(|v| v & !mask)
}

/// A first-fit allocator over `0..capacity`.
#[derive(Debug)]
pub(crate) struct Allocator {
    capacity: u64,
    free: BTreeMap<u64, u64>,
    in_use: u64,
    /// The end of the highest range ever handed out: bytes above it were never written, so they
    /// are still the mapping's zeros and need no clearing.
    high_water: u64,
}

impl Allocator {
    pub(crate) fn new(capacity: u64) -> Allocator {
        let mut free = BTreeMap::new();
        if capacity > 0 {
            free.insert(0, capacity);
        }
        Allocator { capacity, free, in_use: 0, high_water: 0 }
    }

    /// The bytes handed out and not yet freed (in whole granules).
    pub(crate) fn bytes_in_use(&self) -> u64 {
        self.in_use
    }

    /// The size an allocation of `size` bytes really reserves.
    pub(crate) fn reserved_size(size: u64) -> Option<u64> {
        align_up(size, MIN_ALIGNMENT)
    }

    /// Reserves `size` bytes aligned to `alignment` (a power of two, raised to
    /// [`MIN_ALIGNMENT`]); returns `(offset, reserved)`, or `None` when nothing fits.
    #[cfg(test)]
    pub(crate) fn allocate(&mut self, size: u64, alignment: u64) -> Option<(u64, u64)> {
        self.allocate_tracking_dirty(size, alignment)
            .map(|(offset, reserved, _)| (offset, reserved))
    }

    /// [`Allocator::allocate`], also returning how many bytes from the offset may hold old data
    /// (those below the high-water mark).
    pub(crate) fn allocate_tracking_dirty(
        &mut self,
        size: u64,
        alignment: u64,
    ) -> Option<(u64, u64, u64)> {
        let alignment = alignment.max(MIN_ALIGNMENT).checked_next_power_of_two()?;
        let reserved = Allocator::reserved_size(size)?;
        if reserved == 0 {
            return Some((0, 0, 0));
        }
        let (start, len, offset) = self.free.iter().find_map(|(&start, &len)| {
            let offset = align_up(start, alignment)?;
            let end = offset.checked_add(reserved)?;
            (end <= start + len).then_some((start, len, offset))
        })?;
        self.free.remove(&start);
        if offset > start {
            self.free.insert(start, offset - start);
        }
        let end = offset + reserved;
        if end < start + len {
            self.free.insert(end, start + len - end);
        }
        self.in_use += reserved;
        let dirty = self.high_water.saturating_sub(offset).min(reserved);
        self.high_water = self.high_water.max(end);
        Some((offset, reserved, dirty))
    }

    /// Returns a reservation made by [`Allocator::allocate`].
    pub(crate) fn free(&mut self, offset: u64, reserved: u64) {
        if reserved == 0 || offset.checked_add(reserved).is_none_or(|end| end > self.capacity) {
            return;
        }
        self.in_use = self.in_use.saturating_sub(reserved);
        let mut start = offset;
        let mut len = reserved;
        if let Some((&prev_start, &prev_len)) = self.free.range(..offset).next_back() {
            if prev_start + prev_len == offset {
                self.free.remove(&prev_start);
                start = prev_start;
                len += prev_len;
            }
        }
        if let Some(next_len) = self.free.remove(&(offset + reserved)) {
            len += next_len;
        }
        self.free.insert(start, len);
    }
}

/// The HBM of one NeuronCore: a sparse mapping and its allocator.
pub(crate) struct CoreMemory {
    pub(crate) core: u32,
    bytes: Mutex<MmapMut>,
    allocator: Mutex<Allocator>,
    base_address: usize,
}

impl CoreMemory {
    /// Maps `capacity` bytes of sparse, zero-filled memory for core `core`.
    pub(crate) fn new(core: u32, capacity: u64) -> std::io::Result<CoreMemory> {
        let len = usize::try_from(capacity)
            .map_err(|_| std::io::Error::other("hbm size does not fit in usize"))?;
        let map = if len == 0 {
            MmapOptions::new().len(1).map_anon()?
        } else {
            MmapOptions::new().len(len).no_reserve_swap().map_anon()?
        };
        // Large pages for device memory, as DMA engines use: far fewer TLB misses on big
        // transfers. Touching memory now commits 2 MiB at a time instead of 4 KiB, still nothing
        // for untouched memory. Only advice: a kernel without transparent huge pages ignores it.
        let _ = map.advise(memmap2::Advice::HugePage);
        let base_address = map.as_ptr() as usize;
        Ok(CoreMemory {
            core,
            bytes: Mutex::new(map),
            allocator: Mutex::new(Allocator::new(capacity)),
            base_address,
        })
    }

    pub(crate) fn lock_bytes(&self) -> MutexGuard<'_, MmapMut> {
        lock(&self.bytes)
    }

    pub(crate) fn bytes_in_use(&self) -> u64 {
        lock(&self.allocator).bytes_in_use()
    }

    /// Reserves `size` bytes, zero-filled.
    ///
    /// # Errors
    /// `NRT_RESOURCE` when no free range fits.
    pub(crate) fn allocate(
        self: &Arc<CoreMemory>,
        size: u64,
        alignment: u64,
    ) -> Result<DeviceBlock, NrtError> {
        let (offset, reserved, dirty) =
            lock(&self.allocator).allocate_tracking_dirty(size, alignment).ok_or_else(|| {
                NrtError::new(
                    NrtStatus::Resource,
                    format!(
                        "device memory of neuron core {} exhausted: cannot place {size} bytes",
                        self.core
                    ),
                )
            })?;
        let block = DeviceBlock { memory: Arc::clone(self), offset, reserved };
        // Freed blocks may hold old bytes; a new allocation reads as zeros, like a fresh page.
        // Bytes above the high-water mark were never touched and are zero already.
        if dirty > 0 {
            let start = offset as usize;
            self.lock_bytes()[start..start + dirty as usize].fill(0);
        }
        Ok(block)
    }
}

/// A zero-filled buffer of `len` bytes for moving a caller's bytes, allocated fallibly: `len`
/// comes from a caller.
///
/// # Errors
/// `NRT_RESOURCE` when the host cannot provide the bytes.
pub(crate) fn staging_buffer(function: &str, len: usize) -> Result<Vec<u8>, NrtError> {
    let mut bytes = Vec::new();
    bytes.try_reserve_exact(len).map_err(|_| {
        NrtError::new(
            NrtStatus::Resource,
            format!("{function}: cannot allocate {len} bytes of host memory to stage the copy"),
        )
    })?;
    bytes.resize(len, 0);
    Ok(bytes)
}

/// A reservation in a core's HBM, returned to the allocator on drop.
pub(crate) struct DeviceBlock {
    pub(crate) memory: Arc<CoreMemory>,
    pub(crate) offset: u64,
    reserved: u64,
}

impl Drop for DeviceBlock {
    fn drop(&mut self) {
        lock(&self.memory.allocator).free(self.offset, self.reserved);
    }
}

/// Host memory of a tensor (HOST and VIRTUAL placements): small blocks on the heap, large ones an
/// anonymous mapping, which the kernel zero-fills lazily. Both are allocated fallibly, since the
/// size comes from a caller.
pub(crate) enum HostBytes {
    /// At most [`HOST_MAPPING_THRESHOLD`] bytes.
    Heap(Box<[u8]>),
    /// Larger blocks. The mapping reserves swap (no `MAP_NORESERVE`), so the kernel's overcommit
    /// policy refuses what the machine cannot back, instead of a later page fault killing us.
    Mapped(MmapMut),
}

/// Host blocks above this size are mapped rather than taken from the heap.
pub(crate) const HOST_MAPPING_THRESHOLD: usize = 1 << 20;

impl std::ops::Deref for HostBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            HostBytes::Heap(bytes) => bytes,
            HostBytes::Mapped(map) => map,
        }
    }
}

impl std::ops::DerefMut for HostBytes {
    fn deref_mut(&mut self) -> &mut [u8] {
        match self {
            HostBytes::Heap(bytes) => bytes,
            HostBytes::Mapped(map) => map,
        }
    }
}

/// The bytes behind a tensor.
pub(crate) enum Storage {
    /// Device memory of one core.
    Device(DeviceBlock),
    /// Host memory (HOST and VIRTUAL placements).
    Host { bytes: Mutex<HostBytes>, address: usize },
    /// Caller-owned memory.
    External(Arc<dyn ExternalBuffer>),
}

impl Storage {
    /// Zero-filled host memory of `size` bytes.
    ///
    /// # Errors
    /// `NRT_RESOURCE` when the host cannot provide them.
    pub(crate) fn host(size: usize) -> Result<Storage, NrtError> {
        let refused = |why: String| {
            NrtError::new(
                NrtStatus::Resource,
                format!("host memory exhausted: cannot allocate {size} bytes ({why})"),
            )
        };
        let bytes = if size <= HOST_MAPPING_THRESHOLD {
            let mut bytes = Vec::new();
            bytes.try_reserve_exact(size).map_err(|err| refused(err.to_string()))?;
            bytes.resize(size, 0);
            HostBytes::Heap(bytes.into_boxed_slice())
        } else {
            HostBytes::Mapped(
                MmapOptions::new().len(size).map_anon().map_err(|err| refused(err.to_string()))?,
            )
        };
        let address = bytes.as_ptr() as usize;
        Ok(Storage::Host { bytes: Mutex::new(bytes), address })
    }

    /// The NeuronCore of device storage.
    pub(crate) fn core(&self) -> Option<u32> {
        match self {
            Storage::Device(block) => Some(block.memory.core),
            _ => None,
        }
    }

    /// The address of byte `offset`.
    pub(crate) fn address(&self, offset: usize) -> usize {
        match self {
            Storage::Device(block) => block.memory.base_address + block.offset as usize + offset,
            Storage::Host { address, .. } => address + offset,
            Storage::External(buffer) => buffer.address() + offset,
        }
    }
}

/// A place bytes can be moved from or to: a storage and an offset in it (device offsets are
/// relative to the block, or absolute in a core when `block` is `None`).
#[derive(Clone, Copy)]
pub(crate) enum Place<'a> {
    /// Absolute offset in a core's HBM.
    Core(&'a Arc<CoreMemory>, usize),
    /// Offset in a storage.
    In(&'a Storage, usize),
}

enum Resolved<'a> {
    Core(&'a Arc<CoreMemory>, usize),
    Host(&'a Mutex<HostBytes>, usize),
    External(&'a Arc<dyn ExternalBuffer>, usize),
}

impl<'a> Place<'a> {
    fn resolve(self) -> Resolved<'a> {
        match self {
            Place::Core(memory, offset) => Resolved::Core(memory, offset),
            Place::In(Storage::Device(block), offset) => {
                Resolved::Core(&block.memory, block.offset as usize + offset)
            }
            Place::In(Storage::Host { bytes, .. }, offset) => Resolved::Host(bytes, offset),
            Place::In(Storage::External(buffer), offset) => Resolved::External(buffer, offset),
        }
    }
}

/// The most bytes moved at once to or from caller-owned memory whose size the caller declared.
const EXTERNAL_CHUNK: usize = 1 << 16;

/// Copies `out.len()` bytes from `src` (bounds already checked by the caller).
pub(crate) fn read_bytes(src: Place<'_>, out: &mut [u8]) {
    let len = out.len();
    match src.resolve() {
        Resolved::Core(memory, at) => out.copy_from_slice(&memory.lock_bytes()[at..at + len]),
        Resolved::Host(bytes, at) => out.copy_from_slice(&lock(bytes)[at..at + len]),
        Resolved::External(buffer, at) => buffer.read_at(at, out),
    }
}

/// Copies `data` to `dst` (bounds already checked by the caller).
pub(crate) fn write_bytes(dst: Place<'_>, data: &[u8]) {
    let len = data.len();
    match dst.resolve() {
        Resolved::Core(memory, at) => memory.lock_bytes()[at..at + len].copy_from_slice(data),
        Resolved::Host(bytes, at) => lock(bytes)[at..at + len].copy_from_slice(data),
        Resolved::External(buffer, at) => buffer.write_at(at, data),
    }
}

/// Sets `len` bytes at `dst` to `byte` (bounds already checked by the caller).
pub(crate) fn fill_bytes(dst: Place<'_>, len: usize, byte: u8) {
    match dst.resolve() {
        Resolved::Core(memory, at) => memory.lock_bytes()[at..at + len].fill(byte),
        Resolved::Host(bytes, at) => lock(bytes)[at..at + len].fill(byte),
        Resolved::External(buffer, at) => {
            // The length is the caller's (an attached buffer's declared size): fill through a
            // bounded chunk rather than a buffer of `len` bytes.
            let chunk = vec![byte; len.min(EXTERNAL_CHUNK)];
            for start in (0..len).step_by(EXTERNAL_CHUNK) {
                buffer.write_at(at + start, &chunk[..(len - start).min(EXTERNAL_CHUNK)]);
            }
        }
    }
}

/// Copies `len` bytes from `src` to `dst` (bounds already checked; overlapping ranges of one
/// storage behave like `memmove`). Takes locks in the module's order.
pub(crate) fn copy_bytes(src: Place<'_>, dst: Place<'_>, len: usize) {
    if len == 0 {
        return;
    }
    match (src.resolve(), dst.resolve()) {
        (Resolved::Core(a, from), Resolved::Core(b, to)) if Arc::ptr_eq(a, b) => {
            a.lock_bytes().copy_within(from..from + len, to);
        }
        (Resolved::Core(a, from), Resolved::Core(b, to)) => {
            // Two cores: the runtime refuses this for tensors; slots never span cores. Lock in
            // core order to stay deadlock-free anyway.
            let (first, second) = if a.core < b.core { (a, b) } else { (b, a) };
            let mut first_bytes = first.lock_bytes();
            let mut second_bytes = second.lock_bytes();
            let (src_bytes, dst_bytes) = if a.core < b.core {
                (&first_bytes[..], &mut second_bytes[..])
            } else {
                (&second_bytes[..], &mut first_bytes[..])
            };
            dst_bytes[to..to + len].copy_from_slice(&src_bytes[from..from + len]);
        }
        (Resolved::Host(a, from), Resolved::Host(b, to)) if std::ptr::eq(a, b) => {
            lock(a).copy_within(from..from + len, to);
        }
        (Resolved::Host(a, from), Resolved::Host(b, to)) => {
            let a_first = (a as *const Mutex<HostBytes> as usize) < (b as *const _ as usize);
            if a_first {
                let src_bytes = lock(a);
                lock(b)[to..to + len].copy_from_slice(&src_bytes[from..from + len]);
            } else {
                let mut dst_bytes = lock(b);
                dst_bytes[to..to + len].copy_from_slice(&lock(a)[from..from + len]);
            }
        }
        (Resolved::Host(host, from), Resolved::Core(core, to)) => {
            let host_bytes = lock(host);
            core.lock_bytes()[to..to + len].copy_from_slice(&host_bytes[from..from + len]);
        }
        (Resolved::Core(core, from), Resolved::Host(host, to)) => {
            let mut host_bytes = lock(host);
            host_bytes[to..to + len].copy_from_slice(&core.lock_bytes()[from..from + len]);
        }
        (Resolved::External(buffer, from), Resolved::Core(core, to)) => {
            buffer.read_at(from, &mut core.lock_bytes()[to..to + len]);
        }
        (Resolved::External(buffer, from), Resolved::Host(host, to)) => {
            buffer.read_at(from, &mut lock(host)[to..to + len]);
        }
        (Resolved::Core(core, from), Resolved::External(buffer, to)) => {
            buffer.write_at(to, &core.lock_bytes()[from..from + len]);
        }
        (Resolved::Host(host, from), Resolved::External(buffer, to)) => {
            buffer.write_at(to, &lock(host)[from..from + len]);
        }
        (Resolved::External(a, from), Resolved::External(b, to)) => {
            // The two may be one buffer, whose lock is internal: go through a bounded temporary,
            // chunk by chunk in the order `memmove` needs when the ranges overlap.
            let mut staging = vec![0u8; len.min(EXTERNAL_CHUNK)];
            let starts: Vec<usize> = (0..len).step_by(EXTERNAL_CHUNK).collect();
            let backwards = Arc::ptr_eq(a, b) && to > from;
            let ordered: Box<dyn Iterator<Item = &usize>> =
                if backwards { Box::new(starts.iter().rev()) } else { Box::new(starts.iter()) };
            for &start in ordered {
                let n = (len - start).min(EXTERNAL_CHUNK);
                a.read_at(from + start, &mut staging[..n]);
                b.write_at(to + start, &staging[..n]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Overlapping copies inside one attached buffer, longer than a chunk, give `memmove`'s
    /// result in both directions.
    #[test]
    fn overlapping_copies_in_one_external_buffer_behave_like_memmove() {
        let len = 3 * EXTERNAL_CHUNK + 123;
        let pattern: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
        for (from, to) in [(0, 1000), (1000, 0), (5, EXTERNAL_CHUNK + 9)] {
            let n = len - from.max(to);
            let buffer = Arc::new(abi::runtime::SharedBuffer::from_vec(pattern.clone()));
            let storage = Storage::External(buffer.clone());
            copy_bytes(Place::In(&storage, from), Place::In(&storage, to), n);
            let mut expected = pattern.clone();
            expected.copy_within(from..from + n, to);
            assert!(buffer.to_vec() == expected, "copy {from} -> {to} of {n} bytes");
        }
    }

    #[test]
    fn allocator_aligns_coalesces_and_returns_to_zero() {
        let mut allocator = Allocator::new(1024);
        let (a, ra) = allocator.allocate(10, 1).unwrap();
        let (b, rb) = allocator.allocate(100, 256).unwrap();
        assert_eq!((a, ra), (0, 64));
        assert_eq!((b, rb), (256, 128));
        assert_eq!(allocator.bytes_in_use(), 192);
        assert!(allocator.allocate(1024, 1).is_none());
        allocator.free(a, ra);
        allocator.free(b, rb);
        assert_eq!(allocator.bytes_in_use(), 0);
        assert_eq!(allocator.allocate(1024, 1), Some((0, 1024)));
    }

    #[test]
    fn sparse_core_memory_of_16_gib_maps_and_allocates() {
        let memory = Arc::new(CoreMemory::new(0, 16 << 30).expect("sparse mapping"));
        let storage = Storage::Device(memory.allocate(4096, 64).expect("fits"));
        write_bytes(Place::In(&storage, 0), &[1, 2, 3]);
        assert_eq!(memory.bytes_in_use(), 4096);
        drop(storage);
        assert_eq!(memory.bytes_in_use(), 0);
        let again = Storage::Device(memory.allocate(64, 64).expect("fits"));
        let mut out = [9u8; 3];
        read_bytes(Place::In(&again, 0), &mut out);
        assert_eq!(out, [0, 0, 0], "a reused block reads as zeros");
    }
}
