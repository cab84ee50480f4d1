//! [`HostTensor`]: the stand-in for `at::Tensor` at the binding boundary.
//!
//! A host tensor is an element type, a shape, and shared, interior-mutable contiguous bytes
//! ([`HostStorage`]); clones share the storage, as `at::Tensor` copies share their `Storage`.
//! That sharing is what makes output donation observable: an output aliased to input `j` is a
//! tensor on input `j`'s storage, updated in place ([`HostTensor::shares_storage_with`]).
//!
//! Its bytes are the tensor's own, or memory a caller lends for the length of one call
//! ([`HostTensor::lent`]: an FFI layer lends a torch tensor's storage, so a forward reads its
//! inputs where they lie instead of copying them first, and its outputs are read straight into
//! tensors the caller made). Lent bytes are written in place only when the lender allows it
//! ([`LentBytes::bytes_mut`]); otherwise a write (a donated input's new value) gives the storage
//! bytes of its own first, which every tensor sharing it then sees.
//!
//! A tensor may also say that it already lives on the device ([`HostTensor::on_device`]): the
//! layer then binds that runtime tensor as it is, without a write, as libtorchneuron does for a
//! tensor whose `device()` is Neuron. Its host bytes are a mirror the layer refreshes when the
//! tensor comes back as an aliased output.

use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use super::error::HostTensorError;
use abi::dtype::{NpyType, ScalarType, n_bytes_with_item_size};
use abi::neff::npy;
use abi::runtime::TensorId;

/// Memory a caller lends a [`HostTensor`] for the length of one call, instead of a copy: the FFI
/// layer implements it over a C caller's buffer, and keeps every tensor made on it from
/// outliving the call ([`HostTensor::is_lent`] says which to copy before returning).
pub trait LentBytes: Send + Sync {
    /// The bytes.
    fn bytes(&self) -> &[u8];

    /// The bytes to write in place, when the lender allows writes; `None` (the default): they
    /// are read only, and a write goes to a copy.
    fn bytes_mut(&mut self) -> Option<&mut [u8]> {
        None
    }
}

/// A storage's bytes: its own, or lent.
pub(crate) enum Bytes {
    Owned(Vec<u8>),
    Lent(Box<dyn LentBytes>),
}

impl Deref for Bytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Owned(bytes) => bytes,
            Bytes::Lent(lent) => lent.bytes(),
        }
    }
}

impl Bytes {
    /// Whether a write goes to these very bytes (owned, or lent writable), not to a copy.
    pub(crate) fn writes_in_place(&mut self) -> bool {
        match self {
            Bytes::Owned(_) => true,
            Bytes::Lent(lent) => lent.bytes_mut().is_some(),
        }
    }

    /// The bytes to write: read-only lent ones are copied into bytes of the storage's own first.
    ///
    /// # Errors
    /// [`HostTensorError::Allocation`] when that copy cannot be allocated.
    pub(crate) fn writable(&mut self) -> Result<&mut [u8], HostTensorError> {
        if !self.writes_in_place() {
            let lent: &[u8] = self;
            let mut copy = Vec::new();
            copy.try_reserve_exact(lent.len())
                .map_err(|_| HostTensorError::Allocation { n_bytes: lent.len() })?;
            copy.extend_from_slice(lent);
            *self = Bytes::Owned(copy);
        }
        Ok(match self {
            Bytes::Owned(bytes) => bytes,
            // Writable: made owned above otherwise.
            Bytes::Lent(lent) => lent.bytes_mut().unwrap_or_default(),
        })
    }
}

impl Default for Bytes {
    fn default() -> Bytes {
        Bytes::Owned(Vec::new())
    }
}

/// Shared, interior-mutable bytes of one or more [`HostTensor`]s.
#[derive(Default)]
pub struct HostStorage {
    bytes: RwLock<Bytes>,
}

impl HostStorage {
    fn new(bytes: Bytes) -> HostStorage {
        HostStorage { bytes: RwLock::new(bytes) }
    }

    pub(crate) fn read(&self) -> RwLockReadGuard<'_, Bytes> {
        self.bytes.read().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn write(&self) -> RwLockWriteGuard<'_, Bytes> {
        self.bytes.write().unwrap_or_else(PoisonError::into_inner)
    }
}

impl fmt::Debug for HostStorage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostStorage").field("n_bytes", &self.read().len()).finish()
    }
}

/// An element type that host tensors can be built from and read as.
pub trait Element: Copy {
    /// The torch scalar type of this Rust type.
    const SCALAR_TYPE: ScalarType;
    /// Appends the little-endian bytes of `self`.
    fn put(self, out: &mut Vec<u8>);
    /// Reads one value from exactly `size_of::<Self>()` little-endian bytes.
    fn get(bytes: &[u8]) -> Self;
}

macro_rules! elements {
    ($($ty:ty => $scalar:ident,)*) => {$(
        impl Element for $ty {
            const SCALAR_TYPE: ScalarType = ScalarType::$scalar;
            fn put(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn get(bytes: &[u8]) -> Self {
                let mut raw = [0u8; std::mem::size_of::<$ty>()];
                raw.copy_from_slice(bytes);
                <$ty>::from_le_bytes(raw)
            }
        }
    )*};
}

elements! {
    f32 => Float,
    f64 => Double,
    i32 => Int,
    i64 => Long,
    i16 => Short,
    i8 => Char,
    u8 => Byte,
    u16 => UInt16,
}

impl Element for bool {
    const SCALAR_TYPE: ScalarType = ScalarType::Bool;
    fn put(self, out: &mut Vec<u8>) {
        out.push(u8::from(self));
    }
    fn get(bytes: &[u8]) -> Self {
        bytes[0] != 0
    }
}

/// A host tensor: element type, shape, shared contiguous bytes, and whether it is already on the
/// device.
#[derive(Clone)]
pub struct HostTensor {
    scalar_type: ScalarType,
    shape: Vec<i64>,
    storage: Arc<HostStorage>,
    device: Option<TensorId>,
}

impl fmt::Debug for HostTensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostTensor")
            .field("scalar_type", &self.scalar_type)
            .field("shape", &self.shape)
            .field("n_bytes", &self.storage.read().len())
            .field("device", &self.device)
            .finish()
    }
}

fn expected_len(scalar_type: ScalarType, shape: &[i64]) -> Result<usize, HostTensorError> {
    let n_bytes = n_bytes_with_item_size(shape, scalar_type.item_size(), None)?;
    usize::try_from(n_bytes).map_err(|_| HostTensorError::ByteLength {
        scalar_type,
        shape: shape.to_vec(),
        expected: n_bytes,
        actual: 0,
    })
}

impl HostTensor {
    /// A tensor holding `bytes` (C order, little-endian).
    ///
    /// # Errors
    /// [`HostTensorError::ByteLength`] when `bytes` is not `item_size × Π shape` long;
    /// [`HostTensorError::Shape`] for a negative dimension or an overflowing size.
    pub fn from_bytes(
        scalar_type: ScalarType,
        shape: &[i64],
        bytes: Vec<u8>,
    ) -> Result<HostTensor, HostTensorError> {
        let expected = expected_len(scalar_type, shape)?;
        if bytes.len() != expected {
            return Err(HostTensorError::ByteLength {
                scalar_type,
                shape: shape.to_vec(),
                expected: expected as u64,
                actual: bytes.len(),
            });
        }
        Ok(HostTensor::from_parts(scalar_type, shape.to_vec(), bytes))
    }

    /// A tensor from a typed slice.
    ///
    /// # Errors
    /// As [`HostTensor::from_bytes`]: the slice length must be `Π shape`.
    pub fn from_slice<T: Element>(
        data: &[T],
        shape: &[i64],
    ) -> Result<HostTensor, HostTensorError> {
        let mut bytes = Vec::with_capacity(std::mem::size_of_val(data));
        for &value in data {
            value.put(&mut bytes);
        }
        HostTensor::from_bytes(T::SCALAR_TYPE, shape, bytes)
    }

    /// A zero-filled tensor.
    ///
    /// # Errors
    /// [`HostTensorError::Shape`] for a negative dimension or an overflowing size.
    pub fn zeros(scalar_type: ScalarType, shape: &[i64]) -> Result<HostTensor, HostTensorError> {
        let n_bytes = expected_len(scalar_type, shape)?;
        Ok(HostTensor::from_parts(scalar_type, shape.to_vec(), vec![0; n_bytes]))
    }

    /// A tensor that already lives on the device as runtime tensor `tensor`: the layer binds it
    /// as it is, without writing. Its host bytes start zero and are refreshed when it comes back
    /// as an aliased output.
    ///
    /// # Errors
    /// [`HostTensorError::Shape`] for a negative dimension or an overflowing size.
    pub fn on_device(
        scalar_type: ScalarType,
        shape: &[i64],
        tensor: TensorId,
    ) -> Result<HostTensor, HostTensorError> {
        let mut host = HostTensor::zeros(scalar_type, shape)?;
        host.device = Some(tensor);
        Ok(host)
    }

    /// A tensor from a `.npy` file (version 1-3, C order, little-endian or byte types), its
    /// element type read from the descr (`abi::dtype::NpyType`: bfloat16 as `<V2`).
    ///
    /// # Errors
    /// [`HostTensorError::Npy`] for a malformed file; [`HostTensorError::NpyUnsupported`] for
    /// Fortran order, a descr that names no torch scalar type, or the fp8 descr `|V1`, which
    /// only [`HostTensor::from_npy_for`] can read.
    pub fn from_npy(file: &[u8]) -> Result<HostTensor, HostTensorError> {
        HostTensor::read_npy(file, None)
    }

    /// A tensor from a `.npy` file that is to hold elements of `scalar_type` (a signature's):
    /// a descr that type is written as or read from is read as it, which is how the fp8 types'
    /// shared descr `|V1` is told apart; any other descr is read as its own type, for the
    /// caller's validation to report the mismatch.
    ///
    /// # Errors
    /// As [`HostTensor::from_npy`].
    pub fn from_npy_for(
        file: &[u8],
        scalar_type: ScalarType,
    ) -> Result<HostTensor, HostTensorError> {
        HostTensor::read_npy(file, Some(scalar_type))
    }

    fn read_npy(file: &[u8], hint: Option<ScalarType>) -> Result<HostTensor, HostTensorError> {
        let header = npy::parse_header("host tensor", file).map_err(HostTensorError::Npy)?;
        if header.fortran_order {
            return Err(HostTensorError::NpyUnsupported {
                detail: "fortran_order is True, expected C order".to_owned(),
            });
        }
        let scalar_type = match hint {
            Some(hint) if NpyType::from(hint).accepts(&header.descr) => hint,
            _ => {
                let ty = NpyType::of_descr(&header.descr)
                    .map_err(|e| HostTensorError::NpyUnsupported { detail: e.to_string() })?;
                ty.scalar_type().ok_or_else(|| HostTensorError::NpyUnsupported {
                    detail: format!(
                        "descr {:?} is {ty}, which has no torch scalar type",
                        header.descr
                    ),
                })?
            }
        };
        let shape: Vec<i64> =
            header.shape.iter().map(|&dim| i64::try_from(dim)).collect::<Result<_, _>>().map_err(
                |_| HostTensorError::NpyUnsupported {
                    detail: format!("shape {:?} has a dimension above i64::MAX", header.shape),
                },
            )?;
        let data = file.get(header.data_offset..).unwrap_or_default();
        HostTensor::from_bytes(scalar_type, &shape, data.to_vec())
    }

    /// The tensor as a `.npy` version 1.0 file, with the descr `abi::dtype::NpyType` writes for
    /// its element type (bfloat16 as `<V2`, fp8 as `|V1`, which `np.load` reads as raw bytes
    /// for `.view(ml_dtypes…)`).
    ///
    /// # Errors
    /// [`HostTensorError::Npy`] when the header cannot be encoded.
    pub fn to_npy(&self) -> Result<Vec<u8>, HostTensorError> {
        let descr = NpyType::from(self.scalar_type).descr();
        let shape: Vec<u64> = self.shape.iter().map(|&dim| dim as u64).collect();
        npy::encode(descr, &shape, &self.storage.read()).map_err(HostTensorError::Npy)
    }

    pub(crate) fn from_parts(
        scalar_type: ScalarType,
        shape: Vec<i64>,
        bytes: Vec<u8>,
    ) -> HostTensor {
        HostTensor {
            scalar_type,
            shape,
            storage: Arc::new(HostStorage::new(Bytes::Owned(bytes))),
            device: None,
        }
    }

    /// A tensor over `bytes` lent by the caller (C order, little-endian), without a copy: a
    /// forward reads it where it lies. Every tensor made on it, clones and aliased outputs
    /// included, must be dropped or made [`HostTensor::owned`] before the loan ends.
    ///
    /// # Errors
    /// As [`HostTensor::from_bytes`].
    pub fn lent(
        scalar_type: ScalarType,
        shape: &[i64],
        bytes: Box<dyn LentBytes>,
    ) -> Result<HostTensor, HostTensorError> {
        let expected = expected_len(scalar_type, shape)?;
        let actual = bytes.bytes().len();
        if actual != expected {
            return Err(HostTensorError::ByteLength {
                scalar_type,
                shape: shape.to_vec(),
                expected: expected as u64,
                actual,
            });
        }
        Ok(HostTensor {
            scalar_type,
            shape: shape.to_vec(),
            storage: Arc::new(HostStorage::new(Bytes::Lent(bytes))),
            device: None,
        })
    }

    /// Whether the bytes are lent ([`HostTensor::lent`]).
    pub fn is_lent(&self) -> bool {
        matches!(*self.storage.read(), Bytes::Lent(_))
    }

    /// Whether a write to this tensor changes its bytes where they are: bytes of its own, or
    /// lent ones the lender lets the layer write ([`LentBytes::bytes_mut`]).
    pub fn writes_in_place(&self) -> bool {
        self.storage.write().writes_in_place()
    }

    /// This tensor with bytes of its own: itself when they are, else a copy of the lent bytes
    /// (on a storage of its own, so it no longer shares with the lender's other tensors).
    pub fn owned(&self) -> HostTensor {
        if !self.is_lent() {
            return self.clone();
        }
        let mut copy =
            HostTensor::from_parts(self.scalar_type, self.shape.clone(), self.to_bytes());
        copy.device = self.device;
        copy
    }

    /// The element type.
    pub fn scalar_type(&self) -> ScalarType {
        self.scalar_type
    }

    /// The shape.
    pub fn shape(&self) -> &[i64] {
        &self.shape
    }

    /// The runtime tensor this tensor lives in, if it is device-resident.
    pub fn device(&self) -> Option<TensorId> {
        self.device
    }

    /// The number of bytes.
    pub fn n_bytes(&self) -> usize {
        self.storage.read().len()
    }

    /// A copy of the bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.storage.read().to_vec()
    }

    /// Calls `body` with the bytes, without copying them (they are locked for reading meanwhile).
    pub fn with_bytes<R>(&self, body: impl FnOnce(&[u8]) -> R) -> R {
        body(&self.storage.read())
    }

    /// The elements as `T`.
    ///
    /// # Errors
    /// [`HostTensorError::ElementType`] when `T` is not this tensor's element type.
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>, HostTensorError> {
        if T::SCALAR_TYPE != self.scalar_type {
            return Err(HostTensorError::ElementType {
                actual: self.scalar_type,
                requested: T::SCALAR_TYPE,
            });
        }
        let size = std::mem::size_of::<T>();
        Ok(self.storage.read().chunks_exact(size).map(T::get).collect())
    }

    /// Overwrites the bytes in place (every tensor sharing the storage sees them).
    ///
    /// # Errors
    /// [`HostTensorError::ByteLength`] when `bytes` is not this tensor's length.
    pub fn write_bytes(&self, bytes: &[u8]) -> Result<(), HostTensorError> {
        let mut storage = self.storage.write();
        let storage = storage.writable()?;
        if storage.len() != bytes.len() {
            return Err(HostTensorError::ByteLength {
                scalar_type: self.scalar_type,
                shape: self.shape.clone(),
                expected: storage.len() as u64,
                actual: bytes.len(),
            });
        }
        storage.copy_from_slice(bytes);
        Ok(())
    }

    /// Whether `self` and `other` share one storage (an aliased output and its input do).
    pub fn shares_storage_with(&self, other: &HostTensor) -> bool {
        Arc::ptr_eq(&self.storage, &other.storage)
    }

    pub(crate) fn storage(&self) -> &HostStorage {
        &self.storage
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_slices_round_trip() {
        let tensor = HostTensor::from_slice(&[1.0f32, -2.5], &[2]).expect("valid");
        assert_eq!(tensor.scalar_type(), ScalarType::Float);
        assert_eq!(tensor.to_bytes(), [0, 0, 0x80, 0x3f, 0, 0, 0x20, 0xc0]);
        assert_eq!(tensor.to_vec::<f32>().expect("float"), vec![1.0, -2.5]);
        let error = tensor.to_vec::<i32>().expect_err("a Float tensor read as Int");
        assert_eq!(
            error,
            HostTensorError::ElementType { actual: ScalarType::Float, requested: ScalarType::Int }
        );
        assert_eq!(error.to_string(), "read as Int: expected element type Int, got Float");
        let flags = HostTensor::from_slice(&[true, false], &[1, 2]).expect("valid");
        assert_eq!(flags.to_vec::<bool>().expect("bool"), vec![true, false]);
    }

    #[test]
    fn wrong_length_is_refused_with_both_lengths() {
        let error = HostTensor::from_slice(&[1i32, 2, 3], &[2, 2]).expect_err("3 != 4");
        assert_eq!(error.to_string(), "expected 16 bytes for Int [2, 2], got 12");
    }

    #[test]
    fn npy_round_trips_and_refuses_unknown_descr() {
        let tensor = HostTensor::from_slice(&[1i64, 2, 3, 4, 5, 6], &[2, 3]).expect("valid");
        let file = tensor.to_npy().expect("encodes");
        let back = HostTensor::from_npy(&file).expect("decodes");
        assert_eq!((back.scalar_type(), back.shape()), (ScalarType::Long, &[2i64, 3][..]));
        assert_eq!(back.to_bytes(), tensor.to_bytes());
        let complex = npy::encode("<c8", &[1], &[0; 8]).expect("encodes");
        assert!(matches!(
            HostTensor::from_npy(&complex),
            Err(HostTensorError::NpyUnsupported { .. })
        ));
    }

    #[test]
    fn bf16_and_fp8_go_through_npy_as_ml_dtypes_writes_them() {
        let bf16 = HostTensor::from_bytes(ScalarType::BFloat16, &[2], vec![0x80, 0x3f, 0, 0x40])
            .expect("valid");
        let file = bf16.to_npy().expect("bf16 has a descr");
        assert_eq!(npy::parse_header("t", &file).expect("a header").descr, "<V2");
        let back = HostTensor::from_npy(&file).expect("<V2 reads as bfloat16");
        assert_eq!((back.scalar_type(), back.to_bytes()), (ScalarType::BFloat16, bf16.to_bytes()));

        let fp8 = HostTensor::from_bytes(ScalarType::Float8E5m2, &[3], vec![1, 2, 3]).expect("ok");
        let file = fp8.to_npy().expect("fp8 has a descr");
        assert_eq!(npy::parse_header("t", &file).expect("a header").descr, "|V1");
        let error = HostTensor::from_npy(&file).expect_err("|V1 alone is ambiguous");
        assert!(error.to_string().contains("float8_e4m3fn"), "{error}");
        for scalar_type in [ScalarType::Float8E5m2, ScalarType::Float8E4m3fn] {
            let back = HostTensor::from_npy_for(&file, scalar_type).expect("the signature decides");
            assert_eq!((back.scalar_type(), back.to_bytes()), (scalar_type, vec![1, 2, 3]));
        }
        // A hint that does not fit the descr leaves the file's own type, for validation to see.
        let floats = HostTensor::from_slice(&[1.0f32], &[1]).expect("valid").to_npy().expect("f4");
        let read = HostTensor::from_npy_for(&floats, ScalarType::Half).expect("read as it is");
        assert_eq!(read.scalar_type(), ScalarType::Float);
        let wide = npy::encode("<u4", &[1], &[0; 4]).expect("encodes");
        let error = HostTensor::from_npy(&wide).expect_err("torch has no uint32 here");
        assert!(error.to_string().contains("uint32"), "{error}");
    }

    #[test]
    fn clones_share_storage_and_see_writes() {
        let a = HostTensor::from_slice(&[1u8, 2], &[2]).expect("valid");
        let b = a.clone();
        let c = HostTensor::from_slice(&[1u8, 2], &[2]).expect("valid");
        assert!(a.shares_storage_with(&b) && !a.shares_storage_with(&c));
        b.write_bytes(&[9, 9]).expect("same length");
        assert_eq!(a.to_bytes(), [9, 9]);
    }
}
