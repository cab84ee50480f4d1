//! The interpreter's internal array: a typed vector per element type, and generic dispatch.
//!
//! Design choices:
//! - One `Data` variant per element type, holding a `Vec` of the Rust type (the narrow floats as
//!   their bits). A kernel is written once, generic over `T: Copy`, and the `dispatch!` macro
//!   instantiates it per variant, so hot loops are monomorphic: no per-element dynamic dispatch.
//! - Every vector is allocated through [`try_alloc`], which asks `try_reserve_exact` first, so an
//!   out-of-memory is an error and never an abort.
//! - A value inside the interpreter ([`Val`]) is an array, a tuple or a token, reference-counted
//!   so that tuples and pass-through ops share buffers.

use std::sync::Arc;

use super::error::Fail;
use crate::dtype::ElementType;

/// Storage of an array's elements in logical row-major order.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Data {
    Pred(Vec<bool>),
    S8(Vec<i8>),
    S16(Vec<i16>),
    S32(Vec<i32>),
    S64(Vec<i64>),
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
    U64(Vec<u64>),
    F16(Vec<u16>),
    F32(Vec<f32>),
    F64(Vec<f64>),
    Bf16(Vec<u16>),
    F8e5m2(Vec<u8>),
    F8e4m3fn(Vec<u8>),
    F8e4m3(Vec<u8>),
}

/// Applies a generic expression to the vector inside any `Data`, rebuilding the same variant.
/// `$v` is bound to the inner `Vec` (by the pattern's binding mode).
macro_rules! dispatch {
    ($data:expr, $v:ident => $body:expr) => {
        match $data {
            Data::Pred($v) => Data::Pred($body),
            Data::S8($v) => Data::S8($body),
            Data::S16($v) => Data::S16($body),
            Data::S32($v) => Data::S32($body),
            Data::S64($v) => Data::S64($body),
            Data::U8($v) => Data::U8($body),
            Data::U16($v) => Data::U16($body),
            Data::U32($v) => Data::U32($body),
            Data::U64($v) => Data::U64($body),
            Data::F16($v) => Data::F16($body),
            Data::F32($v) => Data::F32($body),
            Data::F64($v) => Data::F64($body),
            Data::Bf16($v) => Data::Bf16($body),
            Data::F8e5m2($v) => Data::F8e5m2($body),
            Data::F8e4m3fn($v) => Data::F8e4m3fn($body),
            Data::F8e4m3($v) => Data::F8e4m3($body),
        }
    };
}

/// Like `dispatch!`, but the body's value is returned as is (not re-wrapped).
macro_rules! visit {
    ($data:expr, $v:ident => $body:expr) => {
        match $data {
            Data::Pred($v) => $body,
            Data::S8($v) => $body,
            Data::S16($v) => $body,
            Data::S32($v) => $body,
            Data::S64($v) => $body,
            Data::U8($v) => $body,
            Data::U16($v) => $body,
            Data::U32($v) => $body,
            Data::U64($v) => $body,
            Data::F16($v) => $body,
            Data::F32($v) => $body,
            Data::F64($v) => $body,
            Data::Bf16($v) => $body,
            Data::F8e5m2($v) => $body,
            Data::F8e4m3fn($v) => $body,
            Data::F8e4m3($v) => $body,
        }
    };
}

/// Two `Data` of the same variant, zipped; a mismatch is `Fail::Internal`.
macro_rules! dispatch2 {
    ($a:expr, $b:expr, $x:ident, $y:ident => $body:expr) => {
        match ($a, $b) {
            (Data::Pred($x), Data::Pred($y)) => Ok(Data::Pred($body)),
            (Data::S8($x), Data::S8($y)) => Ok(Data::S8($body)),
            (Data::S16($x), Data::S16($y)) => Ok(Data::S16($body)),
            (Data::S32($x), Data::S32($y)) => Ok(Data::S32($body)),
            (Data::S64($x), Data::S64($y)) => Ok(Data::S64($body)),
            (Data::U8($x), Data::U8($y)) => Ok(Data::U8($body)),
            (Data::U16($x), Data::U16($y)) => Ok(Data::U16($body)),
            (Data::U32($x), Data::U32($y)) => Ok(Data::U32($body)),
            (Data::U64($x), Data::U64($y)) => Ok(Data::U64($body)),
            (Data::F16($x), Data::F16($y)) => Ok(Data::F16($body)),
            (Data::F32($x), Data::F32($y)) => Ok(Data::F32($body)),
            (Data::F64($x), Data::F64($y)) => Ok(Data::F64($body)),
            (Data::Bf16($x), Data::Bf16($y)) => Ok(Data::Bf16($body)),
            (Data::F8e5m2($x), Data::F8e5m2($y)) => Ok(Data::F8e5m2($body)),
            (Data::F8e4m3fn($x), Data::F8e4m3fn($y)) => Ok(Data::F8e4m3fn($body)),
            (Data::F8e4m3($x), Data::F8e4m3($y)) => Ok(Data::F8e4m3($body)),
            _ => Err(crate::eval::error::Fail::Internal(
                "element types of two operands differ".into(),
            )),
        }
    };
}

pub(crate) use dispatch;
pub(crate) use dispatch2;

impl Data {
    pub(crate) fn ty(&self) -> ElementType {
        match self {
            Data::Pred(_) => ElementType::Pred,
            Data::S8(_) => ElementType::S8,
            Data::S16(_) => ElementType::S16,
            Data::S32(_) => ElementType::S32,
            Data::S64(_) => ElementType::S64,
            Data::U8(_) => ElementType::U8,
            Data::U16(_) => ElementType::U16,
            Data::U32(_) => ElementType::U32,
            Data::U64(_) => ElementType::U64,
            Data::F16(_) => ElementType::F16,
            Data::F32(_) => ElementType::F32,
            Data::F64(_) => ElementType::F64,
            Data::Bf16(_) => ElementType::Bf16,
            Data::F8e5m2(_) => ElementType::F8e5m2,
            Data::F8e4m3fn(_) => ElementType::F8e4m3fn,
            Data::F8e4m3(_) => ElementType::F8e4m3,
        }
    }

    pub(crate) fn len(&self) -> usize {
        visit!(self, v => v.len())
    }

    /// Elements the storage has room for.
    pub(crate) fn capacity(&self) -> usize {
        visit!(self, v => v.capacity())
    }

    /// Bytes of the storage (its capacity, not its length).
    pub(crate) fn capacity_bytes(&self) -> u64 {
        (self.capacity() as u64).saturating_mul(self.ty().item_size() as u64)
    }

    /// `n` zeros (false, 0, +0.0) of `ty`.
    pub(crate) fn zeros(ty: ElementType, n: usize) -> Result<Data, Fail> {
        Ok(match ty {
            ElementType::Pred => Data::Pred(filled(n, false)?),
            ElementType::S8 => Data::S8(filled(n, 0)?),
            ElementType::S16 => Data::S16(filled(n, 0)?),
            ElementType::S32 => Data::S32(filled(n, 0)?),
            ElementType::S64 => Data::S64(filled(n, 0)?),
            ElementType::U8 => Data::U8(filled(n, 0)?),
            ElementType::U16 => Data::U16(filled(n, 0)?),
            ElementType::U32 => Data::U32(filled(n, 0)?),
            ElementType::U64 => Data::U64(filled(n, 0)?),
            ElementType::F16 => Data::F16(filled(n, 0)?),
            ElementType::F32 => Data::F32(filled(n, 0.0)?),
            ElementType::F64 => Data::F64(filled(n, 0.0)?),
            ElementType::Bf16 => Data::Bf16(filled(n, 0)?),
            ElementType::F8e5m2 => Data::F8e5m2(filled(n, 0)?),
            ElementType::F8e4m3fn => Data::F8e4m3fn(filled(n, 0)?),
            ElementType::F8e4m3 => Data::F8e4m3(filled(n, 0)?),
        })
    }

    /// Decodes little-endian bytes (pred: one byte, nonzero is true).
    pub(crate) fn from_le_bytes(ty: ElementType, bytes: &[u8]) -> Result<Data, Fail> {
        Data::from_le_bytes_into(ty, bytes, None)
    }

    /// [`Data::from_le_bytes`] into `spare`'s storage when it is of `ty` and large enough (its
    /// pages are already mapped), else into fresh storage.
    pub(crate) fn from_le_bytes_into(
        ty: ElementType,
        bytes: &[u8],
        spare: Option<Data>,
    ) -> Result<Data, Fail> {
        fn read<T: Copy + Send, const N: usize>(
            bytes: &[u8],
            mut spare: Option<Vec<T>>,
            f: impl Fn([u8; N]) -> T + Sync,
        ) -> Result<Vec<T>, Fail> {
            let n = bytes.len() / N;
            let decode = |chunk: &[u8]| {
                let mut raw = [0u8; N];
                raw.copy_from_slice(chunk);
                f(raw)
            };
            let parts = copy_parts(bytes.len());
            // A large argument whose pooled storage already holds as many elements (the same
            // argument's last run) is overwritten in parts, one per core: the copy of a
            // decoder's 4 MiB caches and weights was a third of its run on one core.
            if let Some(mut out) = spare.take_if(|v| parts > 1 && v.len() >= n) {
                out.truncate(n);
                let per = super::par::per_part(n, parts, 1);
                super::par::each(out.chunks_mut(per).zip(bytes.chunks(per * N)), |(out, bytes)| {
                    for (x, chunk) in out.iter_mut().zip(bytes.chunks_exact(N)) {
                        *x = decode(chunk);
                    }
                });
                return Ok(out);
            }
            let mut out = reuse_or_alloc(spare, n)?;
            out.extend(bytes.chunks_exact(N).map(decode));
            Ok(out)
        }
        macro_rules! arm {
            ($variant:ident, $f:expr) => {{
                let spare = match spare {
                    Some(Data::$variant(v)) => Some(v),
                    _ => None,
                };
                Data::$variant(read(bytes, spare, $f)?)
            }};
        }
        Ok(match ty {
            ElementType::Pred => arm!(Pred, |b: [u8; 1]| b[0] != 0),
            ElementType::S8 => arm!(S8, i8::from_le_bytes),
            ElementType::S16 => arm!(S16, i16::from_le_bytes),
            ElementType::S32 => arm!(S32, i32::from_le_bytes),
            ElementType::S64 => arm!(S64, i64::from_le_bytes),
            ElementType::U8 => arm!(U8, u8::from_le_bytes),
            ElementType::U16 => arm!(U16, u16::from_le_bytes),
            ElementType::U32 => arm!(U32, u32::from_le_bytes),
            ElementType::U64 => arm!(U64, u64::from_le_bytes),
            ElementType::F16 => arm!(F16, u16::from_le_bytes),
            ElementType::F32 => arm!(F32, f32::from_le_bytes),
            ElementType::F64 => arm!(F64, f64::from_le_bytes),
            ElementType::Bf16 => arm!(Bf16, u16::from_le_bytes),
            ElementType::F8e5m2 => arm!(F8e5m2, u8::from_le_bytes),
            ElementType::F8e4m3fn => arm!(F8e4m3fn, u8::from_le_bytes),
            ElementType::F8e4m3 => arm!(F8e4m3, u8::from_le_bytes),
        })
    }

    /// Little-endian bytes of the elements.
    pub(crate) fn to_le_bytes(&self) -> Result<Vec<u8>, Fail> {
        fn write<T: Copy, const N: usize>(
            v: &[T],
            f: impl Fn(T) -> [u8; N],
        ) -> Result<Vec<u8>, Fail> {
            let n = v.len().checked_mul(N).ok_or(Fail::Alloc { bytes: u64::MAX })?;
            let mut out = try_alloc(n)?;
            out.resize(n, 0);
            // Fixed-size chunks let the compiler turn this into plain stores.
            for (chunk, &x) in out.chunks_exact_mut(N).zip(v) {
                chunk.copy_from_slice(&f(x));
            }
            Ok(out)
        }
        match self {
            Data::Pred(v) => write(v, |b| [u8::from(b)]),
            Data::S8(v) => write(v, i8::to_le_bytes),
            Data::S16(v) => write(v, i16::to_le_bytes),
            Data::S32(v) => write(v, i32::to_le_bytes),
            Data::S64(v) => write(v, i64::to_le_bytes),
            Data::U8(v) | Data::F8e5m2(v) | Data::F8e4m3fn(v) | Data::F8e4m3(v) => {
                write(v, u8::to_le_bytes)
            }
            Data::U16(v) | Data::F16(v) | Data::Bf16(v) => write(v, u16::to_le_bytes),
            Data::U32(v) => write(v, u32::to_le_bytes),
            Data::U64(v) => write(v, u64::to_le_bytes),
            Data::F32(v) => write(v, f32::to_le_bytes),
            Data::F64(v) => write(v, f64::to_le_bytes),
        }
    }
}

/// An array value inside the interpreter.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Tensor {
    pub(crate) dims: Vec<usize>,
    pub(crate) data: Data,
}

impl Tensor {
    pub(crate) fn ty(&self) -> ElementType {
        self.data.ty()
    }

    pub(crate) fn n_elems(&self) -> usize {
        self.data.len()
    }
}

/// Buffers of at least this many bytes go back to a [`BufferPool`] when their value dies;
/// smaller ones are left to the allocator, which reuses them without fresh mappings.
pub(crate) const POOLED_MIN_BYTES: usize = 1 << 20;

/// An argument of at least this many bytes per core is decoded into its storage on every core,
/// and a result as large written out on every core.
const PARALLEL_COPY_BYTES: usize = 1 << 20;

/// The cores a copy of `bytes` bytes between the interpreter's storage and the caller's runs on.
fn copy_parts(bytes: usize) -> usize {
    super::par::cores().min(bytes / PARALLEL_COPY_BYTES)
}

/// Temporaries of at least this many bytes are kept by a [`BufferPool`] between uses
/// ([`BufferPool::take_scratch`]): the allocator hands memory of this size back to the system
/// when a large free block forms at the top of its heap, so the next run faulted its pages in
/// again (in the f32 transformer, half of the page faults were the dots' operand transposes).
pub(crate) const SCRATCH_MIN_BYTES: usize = 64 << 10;

/// The most idle bytes a [`BufferPool`] keeps (less when the program's byte budget is lower).
pub(crate) const POOL_MAX_IDLE_BYTES: u64 = 256 << 20;

/// Large buffers kept between runs of one program.
///
/// The allocator serves a block of more than 32 MiB from a fresh mapping and unmaps it when it is
/// freed, so every launch that allocated one paid its page faults again (on these VMs about
/// 5 µs per 4 KiB page: more than the copy into it). A run gives the storage of each large value
/// back here when the value dies, and the next run's arguments and dot results of the same
/// type and size take it. Only storage some request asked for is kept (values that no later
/// request fits, which kept accumulating up to the limit, are freed: the bf16 transformer's idle
/// bytes grew by about 2 MB a run). Idle storage is bounded by [`BufferPool::with_limit`]; a buffer is
/// handed out only for a request within 1/16 of its capacity, so an array never holds much
/// more memory than its size, which is what the byte budget counts.
#[derive(Default)]
pub(crate) struct BufferPool {
    idle: std::sync::Mutex<Idle>,
}

#[derive(Default)]
struct Idle {
    buffers: Vec<Data>,
    bytes: u64,
    limit: u64,
    /// One entry per request [`BufferPool::take`] has had (type and length) that no given
    /// buffer has answered yet: a run asks again for what it asked for last time, so storage is
    /// kept only for a request still open, and a value nobody asks for is freed.
    wanted: Vec<(ElementType, usize)>,
}

/// The most open requests a [`BufferPool`] remembers, and of one type and length: a request
/// whose buffer leaves the program (a result handed to the caller) is never answered, so
/// without the second bound launch after launch would add to it.
const MAX_WANTED: usize = 4096;
const MAX_WANTED_ALIKE: usize = 64;

impl BufferPool {
    /// An empty pool that keeps at most `limit` idle bytes.
    pub(crate) fn with_limit(limit: u64) -> BufferPool {
        BufferPool { idle: std::sync::Mutex::new(Idle { limit, ..Idle::default() }) }
    }

    /// A buffer of `ty` with room for `n` elements (and at most `n + n / 16`), if one is idle. It
    /// holds its last user's elements, stale but initialised: a caller that overwrites every
    /// element sizes it with `resize`, which then writes nothing it keeps (a memset of a whole
    /// output, otherwise); one that appends clears it first ([`reuse_or_alloc`]).
    pub(crate) fn take(&self, ty: ElementType, n: usize) -> Option<Data> {
        self.take_from(POOLED_MIN_BYTES, ty, n)
    }

    /// [`BufferPool::take`] for requests of at least `min_bytes`.
    fn take_from(&self, min_bytes: usize, ty: ElementType, n: usize) -> Option<Data> {
        if n.saturating_mul(ty.item_size()) < min_bytes {
            return None;
        }
        let mut idle = self.idle.lock().ok()?;
        let alike = idle.wanted.iter().filter(|&&want| want == (ty, n)).count();
        if idle.wanted.len() < MAX_WANTED && alike < MAX_WANTED_ALIKE {
            idle.wanted.push((ty, n));
        }
        let fits = |d: &Data| d.ty() == ty && (n..=n + n / 16).contains(&d.capacity());
        let at = idle.buffers.iter().position(fits)?;
        let data = idle.buffers.swap_remove(at);
        idle.bytes -= data.capacity_bytes();
        Some(data)
    }

    /// Keeps `data`'s storage for a later [`BufferPool::take`] when it is large, a request that
    /// it fits is open (one the next run will make again), and the pool has room; frees it
    /// otherwise.
    pub(crate) fn give(&self, data: Data) {
        self.give_from(POOLED_MIN_BYTES, data);
    }

    /// [`BufferPool::give`] for storage of at least `min_bytes`.
    fn give_from(&self, min_bytes: usize, data: Data) {
        let bytes = data.capacity_bytes();
        if bytes < min_bytes as u64 {
            return;
        }
        let Ok(mut idle) = self.idle.lock() else { return };
        if idle.bytes.saturating_add(bytes) > idle.limit {
            return;
        }
        let (ty, capacity) = (data.ty(), data.capacity());
        let open =
            idle.wanted.iter().position(|&(t, n)| t == ty && (n..=n + n / 16).contains(&capacity));
        let Some(open) = open else { return };
        idle.wanted.swap_remove(open);
        idle.bytes += bytes;
        idle.buffers.push(data);
    }

    /// Storage for a temporary of `ty` and `n` elements that is given back with
    /// [`BufferPool::give_scratch`] as soon as it is used (a dot's transposed operand): unlike
    /// [`BufferPool::take`] it serves sizes down to [`SCRATCH_MIN_BYTES`], since the next run's
    /// same temporary takes it back and nothing else holds it idle.
    pub(crate) fn take_scratch(&self, ty: ElementType, n: usize) -> Option<Data> {
        self.take_from(SCRATCH_MIN_BYTES, ty, n)
    }

    /// Keeps a temporary's storage for the next [`BufferPool::take_scratch`] of its size.
    pub(crate) fn give_scratch(&self, data: Data) {
        self.give_from(SCRATCH_MIN_BYTES, data);
    }

    /// Bytes held idle (for tests).
    #[cfg(test)]
    pub(crate) fn idle_bytes(&self) -> u64 {
        self.idle.lock().map_or(0, |idle| idle.bytes)
    }
}

/// A copy of a program is a new program: it starts with an empty pool of the same limit.
impl Clone for BufferPool {
    fn clone(&self) -> BufferPool {
        BufferPool::with_limit(self.idle.lock().map_or(0, |idle| idle.limit))
    }
}

impl std::fmt::Debug for BufferPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (count, bytes) =
            self.idle.lock().map_or((0, 0), |idle| (idle.buffers.len(), idle.bytes));
        f.debug_struct("BufferPool").field("buffers", &count).field("bytes", &bytes).finish()
    }
}

/// The element types of [`Data`]'s vectors.
pub(crate) trait Stored: Copy {
    /// The vector inside `data` when it holds this element type (any variant that does: bf16,
    /// f16 and u16 all store `u16`), to reuse its storage.
    fn storage(data: Data) -> Option<Vec<Self>>;
}

macro_rules! stored {
    ($t:ty: $($variant:ident),+) => {
        impl Stored for $t {
            fn storage(data: Data) -> Option<Vec<$t>> {
                match data {
                    $(Data::$variant(v) => Some(v),)+
                    _ => None,
                }
            }
        }
    };
}
stored!(bool: Pred);
stored!(i8: S8);
stored!(i16: S16);
stored!(i32: S32);
stored!(i64: S64);
stored!(u8: U8, F8e5m2, F8e4m3fn, F8e4m3);
stored!(u16: U16, F16, Bf16);
stored!(u32: U32);
stored!(u64: U64);
stored!(f32: F32);
stored!(f64: F64);

/// A vector with room for `n` elements: `spare`'s storage when given (emptied first), else
/// a fresh one.
pub(crate) fn reuse_or_alloc<T>(spare: Option<Vec<T>>, n: usize) -> Result<Vec<T>, Fail> {
    match spare {
        Some(mut v) if v.capacity() >= n => {
            v.clear();
            Ok(v)
        }
        _ => try_alloc(n),
    }
}

/// Reserves and frees, untouched, one block just under 32 MiB, once per process. glibc's malloc
/// serves a block above its mmap threshold (128 KiB at start) from a fresh mapping, and when such
/// a block is freed it raises that threshold to the block's size (up to 32 MiB) and its trim
/// threshold to twice that (mallopt(3), "dynamic mmap threshold"). Until then it gave back to the
/// system the top of its heap whenever more than a few hundred KiB there were free, so the
/// interpreter's arrays of 64 KiB to a few MiB, freed and made again on every run, faulted
/// their pages in again every run (the f32 transformer: 70 000 faults in 34 runs). The block is
/// never written, so it costs a map and an unmap and no memory; other allocators ignore it.
pub(crate) fn raise_allocator_thresholds() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let mut block: Vec<u8> = Vec::new();
        if block.try_reserve_exact((32 << 20) - (64 << 10)).is_ok() {
            std::hint::black_box(&mut block);
        }
    });
}

/// A vector with room for `n` elements, or `Fail::Alloc`.
pub(crate) fn try_alloc<T>(n: usize) -> Result<Vec<T>, Fail> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| Fail::Alloc {
        bytes: (n as u64).saturating_mul(std::mem::size_of::<T>() as u64),
    })?;
    Ok(v)
}

/// `n` copies of `value`, allocated fallibly.
pub(crate) fn filled<T: Clone>(n: usize, value: T) -> Result<Vec<T>, Fail> {
    let mut v = try_alloc(n)?;
    v.resize(n, value);
    Ok(v)
}

/// Row-major strides of `dims`.
pub(crate) fn strides(dims: &[usize]) -> Vec<usize> {
    let mut out = vec![1; dims.len()];
    for i in (0..dims.len().saturating_sub(1)).rev() {
        out[i] = out[i + 1] * dims[i + 1];
    }
    out
}

/// Advances a multi-index in row-major order; false when it wrapped around.
pub(crate) fn next_index(index: &mut [usize], dims: &[usize]) -> bool {
    for axis in (0..dims.len()).rev() {
        index[axis] += 1;
        if index[axis] < dims[axis] {
            return true;
        }
        index[axis] = 0;
    }
    false
}

/// An element as it crosses the boundary: a fixed number of little-endian bytes.
pub(crate) trait LeElement: Copy {
    /// Bytes per element.
    const SIZE: usize;
    /// Decodes the first [`LeElement::SIZE`] bytes of `bytes`.
    fn get(bytes: &[u8]) -> Self;
    /// Encodes into the first [`LeElement::SIZE`] bytes of `bytes`.
    fn put(self, bytes: &mut [u8]);
    /// `v`'s elements as their little-endian bytes where they lie, when that is what they are in
    /// memory (a number on a little-endian machine): they are then copied whole, a `memcpy`,
    /// rather than element by element.
    fn le_bytes(v: &[Self]) -> Option<&[u8]> {
        let _ = v;
        None
    }
}

macro_rules! le_element {
    ($($t:ty),*) => {$(
        impl LeElement for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn get(bytes: &[u8]) -> Self {
                let mut raw = [0u8; std::mem::size_of::<$t>()];
                raw.copy_from_slice(&bytes[..Self::SIZE]);
                <$t>::from_le_bytes(raw)
            }
            fn put(self, bytes: &mut [u8]) {
                bytes[..Self::SIZE].copy_from_slice(&self.to_le_bytes());
            }
            fn le_bytes(v: &[Self]) -> Option<&[u8]> {
                cfg!(target_endian = "little").then(|| bytemuck::cast_slice(v))
            }
        }
    )*};
}

le_element!(i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);

impl LeElement for bool {
    const SIZE: usize = 1;
    fn get(bytes: &[u8]) -> Self {
        bytes[0] != 0
    }
    fn put(self, bytes: &mut [u8]) {
        bytes[0] = u8::from(self);
    }
}

/// Builds the `Data` variant of an element type from a generic body, `$t` naming the variant's
/// Rust element type inside it.
macro_rules! build {
    ($ty:expr, $t:ident => $body:expr) => {
        match $ty {
            ElementType::Pred => Data::Pred({
                type $t = bool;
                $body
            }),
            ElementType::S8 => Data::S8({
                type $t = i8;
                $body
            }),
            ElementType::S16 => Data::S16({
                type $t = i16;
                $body
            }),
            ElementType::S32 => Data::S32({
                type $t = i32;
                $body
            }),
            ElementType::S64 => Data::S64({
                type $t = i64;
                $body
            }),
            ElementType::U8 => Data::U8({
                type $t = u8;
                $body
            }),
            ElementType::U16 => Data::U16({
                type $t = u16;
                $body
            }),
            ElementType::U32 => Data::U32({
                type $t = u32;
                $body
            }),
            ElementType::U64 => Data::U64({
                type $t = u64;
                $body
            }),
            ElementType::F16 => Data::F16({
                type $t = u16;
                $body
            }),
            ElementType::F32 => Data::F32({
                type $t = f32;
                $body
            }),
            ElementType::F64 => Data::F64({
                type $t = f64;
                $body
            }),
            ElementType::Bf16 => Data::Bf16({
                type $t = u16;
                $body
            }),
            ElementType::F8e5m2 => Data::F8e5m2({
                type $t = u8;
                $body
            }),
            ElementType::F8e4m3fn => Data::F8e4m3fn({
                type $t = u8;
                $body
            }),
            ElementType::F8e4m3 => Data::F8e4m3({
                type $t = u8;
                $body
            }),
        }
    };
}

/// Why reading elements from a stream stopped.
#[derive(Debug)]
pub(crate) enum ReadFail {
    /// The vector for the elements could not be allocated.
    Alloc(u64),
    /// The stream failed or ended early.
    Io(std::io::Error),
}

/// The piece [`Data::append_le`] zeroes and then writes: small enough to stay in L1.
const APPEND_CHUNK: usize = 16 << 10;

/// The bytes read from a stream per step: small enough to stay in cache, a multiple of every
/// element size.
const READ_CHUNK: usize = 64 << 10;

impl Data {
    /// `n` elements of `ty` read as little-endian bytes from `reader`, straight into the typed
    /// vector (no whole-array byte buffer in between).
    pub(crate) fn read_le(
        ty: ElementType,
        n: usize,
        reader: &mut dyn std::io::Read,
    ) -> Result<Data, ReadFail> {
        fn read<T: LeElement>(
            n: usize,
            reader: &mut dyn std::io::Read,
        ) -> Result<Vec<T>, ReadFail> {
            let mut left = n.checked_mul(T::SIZE).ok_or(ReadFail::Alloc(u64::MAX))?;
            let mut out = try_alloc::<T>(n)
                .map_err(|_| ReadFail::Alloc((n as u64).saturating_mul(T::SIZE as u64)))?;
            let mut chunk = vec![0u8; READ_CHUNK.min(left)];
            while left > 0 {
                let step = chunk.len().min(left);
                reader.read_exact(&mut chunk[..step]).map_err(ReadFail::Io)?;
                out.extend(chunk[..step].chunks_exact(T::SIZE).map(T::get));
                left -= step;
            }
            Ok(out)
        }
        Ok(build!(ty, T => read::<T>(n, reader)?))
    }

    /// The logical row-major array of `dims` whose element at index `i` is at element offset
    /// `Σ i[d] × strides[d]` of `bytes`: one pass from device bytes in any layout straight
    /// into the typed vector.
    pub(crate) fn from_le_bytes_strided(
        ty: ElementType,
        bytes: &[u8],
        dims: &[usize],
        strides: &[usize],
    ) -> Result<Data, Fail> {
        fn read<T: LeElement>(
            bytes: &[u8],
            dims: &[usize],
            strides: &[usize],
        ) -> Result<Vec<T>, Fail> {
            let n = dims.iter().product();
            let mut out = try_alloc::<T>(n)?;
            for_each_offset(dims, strides, |offset| {
                out.push(T::get(&bytes[offset * T::SIZE..]));
            });
            Ok(out)
        }
        Ok(build!(ty, T => read::<T>(bytes, dims, strides)?))
    }

    /// Writes the elements as little-endian bytes into `out`, which holds exactly as many bytes.
    pub(crate) fn write_le(&self, out: &mut [u8]) {
        fn write<T: LeElement>(v: &[T], out: &mut [u8]) {
            if let Some(bytes) = T::le_bytes(v) {
                // A large result is copied in parts, one run of them per core, as a large
                // argument is read: each core then copies the rows it computed, from its own
                // cache (the products and elementwise kernels split by rows too).
                let parts = copy_parts(bytes.len());
                if parts > 1 {
                    let per = super::par::per_part(bytes.len(), parts, PARALLEL_COPY_BYTES / 4);
                    super::par::each(out.chunks_mut(per).zip(bytes.chunks(per)), |(out, bytes)| {
                        out.copy_from_slice(bytes)
                    });
                } else {
                    out.copy_from_slice(bytes);
                }
                return;
            }
            for (chunk, &x) in out.chunks_exact_mut(T::SIZE).zip(v) {
                x.put(chunk);
            }
        }
        visit!(self, v => write(v, out))
    }

    /// Appends the elements as little-endian bytes to `out`, which should have the room
    /// reserved. Elements whose bytes are those already ([`LeElement::le_bytes`]) are appended
    /// whole; others piece by piece, each piece of [`APPEND_CHUNK`] bytes zeroed just before it
    /// is written, while it is in cache: zeroing the whole output first (a `resize`) streamed
    /// every byte to memory twice, which was a tenth of a decoder's launch returning its 8 MiB of
    /// caches.
    pub(crate) fn append_le(&self, out: &mut Vec<u8>) {
        fn append<T: LeElement>(v: &[T], out: &mut Vec<u8>) {
            // Bytes already in order are appended whole: no zeroing, one `memcpy` (a 4 MiB f32
            // result took 540 µs element by element).
            if let Some(bytes) = T::le_bytes(v) {
                out.extend_from_slice(bytes);
                return;
            }
            for part in v.chunks((APPEND_CHUNK / T::SIZE).max(1)) {
                let start = out.len();
                out.resize(start + part.len() * T::SIZE, 0);
                for (chunk, &x) in out[start..].chunks_exact_mut(T::SIZE).zip(part) {
                    x.put(chunk);
                }
            }
        }
        visit!(self, v => append(v, out))
    }

    /// Writes the elements as little-endian bytes to `writer`, through a small fixed buffer.
    pub(crate) fn write_le_to(&self, writer: &mut dyn std::io::Write) -> std::io::Result<()> {
        fn write<T: LeElement>(v: &[T], writer: &mut dyn std::io::Write) -> std::io::Result<()> {
            if let Some(bytes) = T::le_bytes(v) {
                return writer.write_all(bytes);
            }
            let mut chunk = vec![0u8; READ_CHUNK.min(v.len() * T::SIZE)];
            for part in v.chunks(READ_CHUNK / T::SIZE) {
                let bytes = &mut chunk[..part.len() * T::SIZE];
                for (out, &x) in bytes.chunks_exact_mut(T::SIZE).zip(part) {
                    x.put(out);
                }
                writer.write_all(bytes)?;
            }
            Ok(())
        }
        visit!(self, v => write(v, writer))
    }

    /// Writes element `i` (logical row-major over `dims`) to element offset
    /// `Σ i[d] × strides[d]` of `out`: the inverse of [`Data::from_le_bytes_strided`].
    pub(crate) fn write_le_strided(&self, out: &mut [u8], dims: &[usize], strides: &[usize]) {
        fn write<T: LeElement>(v: &[T], out: &mut [u8], dims: &[usize], strides: &[usize]) {
            let mut k = 0;
            for_each_offset(dims, strides, |offset| {
                v[k].put(&mut out[offset * T::SIZE..]);
                k += 1;
            });
        }
        visit!(self, v => write(v, out, dims, strides))
    }
}

/// Calls `f` with `Σ i[d] × strides[d]` for every index `i` of `dims`, in row-major order.
pub(crate) fn for_each_offset(dims: &[usize], strides: &[usize], mut f: impl FnMut(usize)) {
    if dims.contains(&0) {
        return;
    }
    let Some((&inner, outer)) = dims.split_last() else {
        f(0);
        return;
    };
    let inner_stride = strides[outer.len()];
    let mut index = vec![0; outer.len()];
    let mut base = 0;
    loop {
        for j in 0..inner {
            f(base + j * inner_stride);
        }
        let mut axis = outer.len();
        loop {
            if axis == 0 {
                return;
            }
            axis -= 1;
            index[axis] += 1;
            base += strides[axis];
            if index[axis] < outer[axis] {
                break;
            }
            base -= strides[axis] * outer[axis];
            index[axis] = 0;
        }
    }
}

/// The element strides, per logical dimension, of an array of `dims` laid out with
/// `minor_to_major` (a permutation of `0..dims.len()`, checked by the caller).
pub(crate) fn layout_strides(dims: &[usize], minor_to_major: &[usize]) -> Vec<usize> {
    let mut out = vec![0; dims.len()];
    let mut stride = 1;
    for &d in minor_to_major {
        out[d] = stride;
        stride *= dims[d];
    }
    out
}

/// A value inside the interpreter; clones share buffers.
#[derive(Clone, Debug)]
pub(crate) enum Val {
    Array(Arc<Tensor>),
    Tuple(Arc<Vec<Val>>),
    Token,
}

impl Val {
    pub(crate) fn array(&self) -> Result<&Arc<Tensor>, Fail> {
        match self {
            Val::Array(t) => Ok(t),
            _ => Err(Fail::Internal("expected an array value".into())),
        }
    }

    pub(crate) fn tuple(&self) -> Result<&[Val], Fail> {
        match self {
            Val::Tuple(items) => Ok(items),
            _ => Err(Fail::Internal("expected a tuple value".into())),
        }
    }

    pub(crate) fn from_data(dims: Vec<usize>, data: Data) -> Val {
        Val::Array(Arc::new(Tensor { dims, data }))
    }
}

/// Element `i` of `data` as a one-element array.
pub(crate) fn element(data: &Data, i: usize) -> Data {
    dispatch!(data, v => vec![v[i]])
}

/// Concatenates one-element arrays of `ty` into one array.
pub(crate) fn gather_scalars(ty: ElementType, parts: &[Data]) -> Result<Data, Fail> {
    let mut out = Data::zeros(ty, 0)?;
    macro_rules! arm {
        ($variant:ident) => {{
            let Data::$variant(v) = &mut out else { return Err(unreachable_data()) };
            v.try_reserve_exact(parts.len())
                .map_err(|_| Fail::Alloc { bytes: parts.len() as u64 })?;
            for p in parts {
                match p {
                    Data::$variant(x) => v.push(x[0]),
                    _ => return Err(Fail::Internal("scalar of another type".into())),
                }
            }
        }};
    }
    match ty {
        ElementType::Pred => arm!(Pred),
        ElementType::S8 => arm!(S8),
        ElementType::S16 => arm!(S16),
        ElementType::S32 => arm!(S32),
        ElementType::S64 => arm!(S64),
        ElementType::U8 => arm!(U8),
        ElementType::U16 => arm!(U16),
        ElementType::U32 => arm!(U32),
        ElementType::U64 => arm!(U64),
        ElementType::F16 => arm!(F16),
        ElementType::F32 => arm!(F32),
        ElementType::F64 => arm!(F64),
        ElementType::Bf16 => arm!(Bf16),
        ElementType::F8e5m2 => arm!(F8e5m2),
        ElementType::F8e4m3fn => arm!(F8e4m3fn),
        ElementType::F8e4m3 => arm!(F8e4m3),
    }
    Ok(out)
}

fn unreachable_data() -> Fail {
    Fail::Internal("zeros of a type built another type".into())
}

impl BufferPool {
    /// Gives the storage of `val`'s arrays that nothing else shares to the pool.
    pub(crate) fn recycle(&self, val: Val) {
        match val {
            Val::Array(tensor) => {
                if let Ok(tensor) = Arc::try_unwrap(tensor) {
                    self.give(tensor.data);
                }
            }
            Val::Tuple(items) => {
                if let Ok(items) = Arc::try_unwrap(items) {
                    items.into_iter().for_each(|item| self.recycle(item));
                }
            }
            Val::Token => {}
        }
    }
}

#[cfg(test)]
mod tests {
    //! The buffer pool: what it keeps, what it hands out, and its bound; and the little-endian
    //! encodings of every element type.
    use super::*;

    /// Every way out (appended, written into a slice, streamed) gives each element's
    /// little-endian bytes, for the types copied whole and for `pred`, encoded one by one; the
    /// whole-copy path is the one a little-endian machine takes for numbers.
    #[test]
    fn every_element_type_leaves_as_its_little_endian_bytes() {
        let cases: Vec<(Data, Vec<u8>)> = vec![
            (
                Data::F32(vec![1.0, -2.5]),
                [1.0f32, -2.5].iter().flat_map(|x| x.to_le_bytes()).collect(),
            ),
            (Data::Bf16(vec![0x3f80, 0xc020]), vec![0x80, 0x3f, 0x20, 0xc0]),
            (Data::S64(vec![-2]), (-2i64).to_le_bytes().to_vec()),
            (Data::F8e4m3fn(vec![0x38, 0xff]), vec![0x38, 0xff]),
            (Data::Pred(vec![true, false, true]), vec![1, 0, 1]),
        ];
        for (data, want) in cases {
            let mut appended = vec![7u8];
            data.append_le(&mut appended);
            assert_eq!(appended[1..], want[..], "{data:?} appended after what was there");
            let mut written = vec![0u8; want.len()];
            data.write_le(&mut written);
            assert_eq!(written, want, "{data:?} written");
            let mut streamed = Vec::new();
            data.write_le_to(&mut streamed).expect("a vector takes every byte");
            assert_eq!(streamed, want, "{data:?} streamed");
        }
        assert_eq!(f32::le_bytes(&[1.0]).is_some(), cfg!(target_endian = "little"));
        assert!(bool::le_bytes(&[true]).is_none(), "pred is encoded one by one");
    }

    /// Enough f32 elements to be pooled, twice over (so that half of them are too).
    const BIG: usize = POOLED_MIN_BYTES / 2 + 5;

    fn f32s_with_capacity(n: usize) -> Data {
        let mut v = try_alloc::<f32>(n).expect("test buffer");
        v.resize(n, 1.5);
        Data::F32(v)
    }

    /// A request the pool cannot answer yet, which opens it for a given buffer.
    fn ask(pool: &BufferPool, ty: ElementType, n: usize) {
        assert!(pool.take(ty, n).is_none(), "nothing idle yet");
    }

    #[test]
    fn a_given_buffer_comes_back_with_its_stale_elements_for_the_same_type_and_size() {
        let pool = BufferPool::with_limit(u64::MAX);
        ask(&pool, ElementType::F32, BIG);
        let data = f32s_with_capacity(BIG);
        let bytes = data.capacity_bytes();
        pool.give(data);
        assert_eq!(pool.idle_bytes(), bytes);
        let back = pool.take(ElementType::F32, BIG).expect("the buffer given");
        let Data::F32(values) = &back else { panic!("f32 in, f32 out") };
        assert_eq!(values.len(), BIG);
        assert!(values.iter().all(|&x| x == 1.5), "the last user's elements, not cleared");
        assert!(back.capacity() >= BIG);
        assert_eq!(pool.idle_bytes(), 0);
        assert!(pool.take(ElementType::F32, BIG).is_none(), "handed out once only");
    }

    #[test]
    fn only_buffers_that_an_open_request_fits_are_kept() {
        let pool = BufferPool::with_limit(u64::MAX);
        pool.give(f32s_with_capacity(BIG));
        assert_eq!(pool.idle_bytes(), 0, "nobody asked: freed");
        ask(&pool, ElementType::F32, BIG);
        pool.give(Data::S32(vec![1; BIG]));
        pool.give(f32s_with_capacity(2 * BIG));
        assert_eq!(pool.idle_bytes(), 0, "another type, a size the request does not fit");
        pool.give(f32s_with_capacity(BIG));
        let one = pool.idle_bytes();
        assert!(one > 0, "the request fits");
        pool.give(f32s_with_capacity(BIG));
        assert_eq!(pool.idle_bytes(), one, "one request keeps one buffer");
        // A request that is answered stays open for the next run's buffer.
        assert!(pool.take(ElementType::F32, BIG).is_some());
        pool.give(f32s_with_capacity(BIG));
        assert_eq!(pool.idle_bytes(), one);
    }

    /// Requests whose buffers never come back (results that leave every launch) keep at most
    /// `MAX_WANTED_ALIKE` of a kind open, so they cannot admit an unbounded pile later.
    #[test]
    fn unanswered_requests_of_one_kind_stay_bounded() {
        let pool = BufferPool::with_limit(u64::MAX);
        for _ in 0..MAX_WANTED_ALIKE + 36 {
            ask(&pool, ElementType::F32, BIG);
        }
        let one = f32s_with_capacity(BIG).capacity_bytes();
        for _ in 0..MAX_WANTED_ALIKE + 36 {
            pool.give(f32s_with_capacity(BIG));
        }
        assert_eq!(pool.idle_bytes(), one * MAX_WANTED_ALIKE as u64);
    }

    #[test]
    fn a_buffer_is_not_handed_out_for_another_type_or_a_size_it_does_not_fit() {
        let pool = BufferPool::with_limit(u64::MAX);
        ask(&pool, ElementType::F32, BIG);
        pool.give(f32s_with_capacity(BIG));
        assert!(pool.take(ElementType::S32, BIG).is_none(), "same width, other type");
        assert!(pool.take(ElementType::F32, BIG + 1).is_none(), "too small");
        assert!(pool.take(ElementType::F32, BIG / 2).is_none(), "far too large");
        assert!(pool.take(ElementType::F32, BIG - BIG / 17).is_some(), "within 1/16");
    }

    #[test]
    fn small_buffers_are_left_to_the_allocator() {
        let pool = BufferPool::with_limit(u64::MAX);
        ask(&pool, ElementType::F32, 16);
        pool.give(f32s_with_capacity(16));
        pool.give(Data::Pred(Vec::new()));
        assert_eq!(pool.idle_bytes(), 0);
        assert!(pool.take(ElementType::F32, 16).is_none());
        assert!(pool.take(ElementType::F32, 0).is_none());
    }

    #[test]
    fn the_pool_keeps_no_more_than_its_limit() {
        let one = f32s_with_capacity(BIG).capacity_bytes();
        let pool = BufferPool::with_limit(one + one / 2);
        ask(&pool, ElementType::F32, BIG);
        ask(&pool, ElementType::F32, BIG);
        pool.give(f32s_with_capacity(BIG));
        pool.give(f32s_with_capacity(BIG));
        assert_eq!(pool.idle_bytes(), one, "the second buffer is freed");
        assert_eq!(BufferPool::with_limit(0).idle_bytes(), 0);
        let none = BufferPool::with_limit(0);
        ask(&none, ElementType::F32, BIG);
        none.give(f32s_with_capacity(BIG));
        assert_eq!(none.idle_bytes(), 0);
    }

    #[test]
    fn a_cloned_pool_starts_empty() {
        let pool = BufferPool::with_limit(u64::MAX);
        ask(&pool, ElementType::F32, BIG);
        pool.give(f32s_with_capacity(BIG));
        assert_eq!(pool.clone().idle_bytes(), 0);
        assert!(pool.idle_bytes() > 0);
    }

    #[test]
    fn decoding_into_a_spare_buffer_gives_the_same_elements_as_fresh_storage() {
        let bytes: Vec<u8> =
            (0..BIG as u32).flat_map(|i| (i as f32 - 7.25).to_le_bytes()).collect();
        let fresh = Data::from_le_bytes(ElementType::F32, &bytes).expect("fresh");
        let spare = Some(f32s_with_capacity(BIG + 3));
        let reused = Data::from_le_bytes_into(ElementType::F32, &bytes, spare).expect("reused");
        assert_eq!(fresh, reused);
        // A spare of another type or too small is not used, and the result is still right.
        let wrong = Some(Data::S32(vec![9; 4]));
        assert_eq!(Data::from_le_bytes_into(ElementType::F32, &bytes, wrong).expect("x"), fresh);
        let pred = Data::from_le_bytes_into(
            ElementType::Pred,
            &[0, 2, 1],
            Some(Data::Pred(vec![true; 8])),
        );
        assert_eq!(pred.expect("pred"), Data::Pred(vec![false, true, true]));
        let empty = Data::from_le_bytes_into(ElementType::F32, &[], Some(f32s_with_capacity(4)));
        assert_eq!(empty.expect("empty"), Data::F32(Vec::new()));
    }

    #[test]
    fn a_large_argument_overwrites_a_stale_spare_of_its_length_in_parts() {
        // 3 MiB of bf16 bits and of f32: past PARALLEL_COPY_BYTES per core on two cores, so
        // the spare (left with other values by an earlier run, and longer than needed) is
        // overwritten by every core; each element must be the decoded one, none stale.
        let n = 3 * PARALLEL_COPY_BYTES / 2 + 5;
        let bits: Vec<u16> = (0..n).map(|i| (i as u16).wrapping_mul(7919)).collect();
        let bytes: Vec<u8> = bits.iter().flat_map(|b| b.to_le_bytes()).collect();
        let stale = Some(Data::Bf16(vec![0xffff; n + 9]));
        let got = Data::from_le_bytes_into(ElementType::Bf16, &bytes, stale).expect("decoded");
        assert_eq!(got, Data::Bf16(bits));
        let values: Vec<f32> = (0..n).map(|i| i as f32 * 0.5 - 3.0).collect();
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let stale = Some(Data::F32(vec![f32::NAN; n]));
        let got = Data::from_le_bytes_into(ElementType::F32, &bytes, stale).expect("decoded");
        assert_eq!(got, Data::F32(values));
    }

    #[test]
    fn a_large_result_is_written_in_parts_each_byte_where_it_goes() {
        // 6 MiB of f32, past PARALLEL_COPY_BYTES per core on two cores, into a buffer holding
        // other bytes: every byte must be the element's, none left over, none shifted, at the
        // parts' edges too.
        let n = 3 * PARALLEL_COPY_BYTES / 2 + 7;
        let values: Vec<f32> = (0..n).map(|i| i as f32 * 0.25 - 7.0).collect();
        let want: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let mut out = vec![0xa5u8; want.len()];
        Data::F32(values).write_le(&mut out);
        assert!(out == want, "the bytes written differ from the elements' own");
    }
}
