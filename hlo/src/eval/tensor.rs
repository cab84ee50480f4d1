//! The interpreter's internal array: a typed vector per element type, and generic dispatch.
//!
//! Design choices:
//! - One `Data` variant per element type, holding a `Vec` of the Rust type (the narrow floats as
//!   their bits). A kernel is written once, generic over `T: Copy`, and the `dispatch!` macro
//!   instantiates it per variant, so hot loops are monomorphic: no per-element dynamic dispatch.
//! - Every vector is allocated through [`try_alloc`], which asks `try_reserve_exact` first, so an
//!   out-of-memory is an error and never an abort.

use super::Fail;
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
            _ => Err(crate::eval::Fail::Internal("element types of two operands differ".into())),
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
        fn read<T, const N: usize>(bytes: &[u8], f: impl Fn([u8; N]) -> T) -> Result<Vec<T>, Fail> {
            let mut out = try_alloc(bytes.len() / N)?;
            out.extend(bytes.chunks_exact(N).map(|chunk| {
                let mut raw = [0u8; N];
                raw.copy_from_slice(chunk);
                f(raw)
            }));
            Ok(out)
        }
        Ok(match ty {
            ElementType::Pred => Data::Pred(read(bytes, |b: [u8; 1]| b[0] != 0)?),
            ElementType::S8 => Data::S8(read(bytes, i8::from_le_bytes)?),
            ElementType::S16 => Data::S16(read(bytes, i16::from_le_bytes)?),
            ElementType::S32 => Data::S32(read(bytes, i32::from_le_bytes)?),
            ElementType::S64 => Data::S64(read(bytes, i64::from_le_bytes)?),
            ElementType::U8 => Data::U8(read(bytes, u8::from_le_bytes)?),
            ElementType::U16 => Data::U16(read(bytes, u16::from_le_bytes)?),
            ElementType::U32 => Data::U32(read(bytes, u32::from_le_bytes)?),
            ElementType::U64 => Data::U64(read(bytes, u64::from_le_bytes)?),
            ElementType::F16 => Data::F16(read(bytes, u16::from_le_bytes)?),
            ElementType::F32 => Data::F32(read(bytes, f32::from_le_bytes)?),
            ElementType::F64 => Data::F64(read(bytes, f64::from_le_bytes)?),
            ElementType::Bf16 => Data::Bf16(read(bytes, u16::from_le_bytes)?),
            ElementType::F8e5m2 => Data::F8e5m2(read(bytes, u8::from_le_bytes)?),
            ElementType::F8e4m3fn => Data::F8e4m3fn(read(bytes, u8::from_le_bytes)?),
            ElementType::F8e4m3 => Data::F8e4m3(read(bytes, u8::from_le_bytes)?),
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
            for (chunk, &x) in out.chunks_exact_mut(T::SIZE).zip(v) {
                x.put(chunk);
            }
        }
        visit!(self, v => write(v, out))
    }

    /// Writes the elements as little-endian bytes to `writer`, through a small fixed buffer.
    pub(crate) fn write_le_to(&self, writer: &mut dyn std::io::Write) -> std::io::Result<()> {
        fn write<T: LeElement>(v: &[T], writer: &mut dyn std::io::Write) -> std::io::Result<()> {
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
