//! Arrays crossing into and out of the interpreter: the public [`Array`] and [`Value`] (bytes in
//! logical order, an array or a tuple), and [`Input`] and [`Output`] in its own typed storage.
//!
//! [`Array`] holds bytes, so a run over arrays copies every argument once into the typed
//! vectors the kernels work on (all but the f32 ones that only dots read, which the gemm reads
//! in place), and every result once back. A caller whose data is somewhere
//! else (device memory, a file) would copy twice: into an `Array`, then into the interpreter.
//! [`Input`] is built straight from where the bytes are (a borrowed slice in any layout, or a
//! reader) into the typed storage, and [`Output`] writes a result straight into the caller's
//! buffer in any layout, so a launch holds each argument and each result once.

use std::sync::Arc;

use super::elementwise;
use super::error::EvalError;
use super::tensor::{BufferPool, Data, ReadFail, Tensor, layout_strides};
use crate::dtype::ElementType;
use crate::proto;

/// An array in logical row-major element order, little-endian; pred is one byte 0 or 1.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Array {
    /// The element type.
    pub ty: proto::PrimitiveType,
    /// The dimensions (empty for a scalar).
    pub dims: Vec<i64>,
    /// The elements, `item_size × Π dims` bytes.
    pub bytes: Vec<u8>,
}

/// A result or argument: an array or a tuple of values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// An array.
    Array(Array),
    /// A tuple.
    Tuple(Vec<Value>),
}

impl Value {
    /// The arrays of this value, tuples flattened depth-first.
    pub fn flatten(&self) -> Vec<&Array> {
        match self {
            Value::Array(array) => vec![array],
            Value::Tuple(items) => items.iter().flat_map(Value::flatten).collect(),
        }
    }
}

impl Array {
    /// An array of `ty` and `dims` over `bytes`.
    ///
    /// # Errors
    /// [`EvalError::Array`] when the type is not one the interpreter evaluates, a dimension is
    /// negative, or `bytes` is not `item_size × Π dims` long.
    pub fn new(
        ty: proto::PrimitiveType,
        dims: Vec<i64>,
        bytes: Vec<u8>,
    ) -> Result<Array, EvalError> {
        let array = Array { ty, dims, bytes };
        array.check()?;
        Ok(array)
    }

    /// The element type, if the interpreter evaluates it.
    pub fn element_type(&self) -> Option<ElementType> {
        ElementType::from_primitive(self.ty as i32)
    }

    /// Checks type, dimensions and length; returns the element type and dims as `usize`.
    pub(crate) fn check(&self) -> Result<(ElementType, Vec<usize>), EvalError> {
        let (ty, dims, expected) = check_shape(self.ty, &self.dims)?;
        if expected != self.bytes.len() {
            return Err(EvalError::Array {
                detail: format!(
                    "{}{:?} needs {expected} bytes, got {}",
                    ty,
                    self.dims,
                    self.bytes.len()
                ),
            });
        }
        Ok((ty, dims))
    }

    /// An f32 array (for tests and tools).
    pub fn from_f32(dims: &[i64], values: &[f32]) -> Array {
        Array {
            ty: proto::PrimitiveType::F32,
            dims: dims.to_vec(),
            bytes: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        }
    }

    /// An s32 array (for tests and tools).
    pub fn from_i32(dims: &[i64], values: &[i32]) -> Array {
        Array {
            ty: proto::PrimitiveType::S32,
            dims: dims.to_vec(),
            bytes: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        }
    }

    /// The elements as f64, whatever the type (pred as 0/1), for comparisons in tests and tools.
    ///
    /// # Errors
    /// As [`Array::new`] for a malformed array.
    pub fn to_f64(&self) -> Result<Vec<f64>, EvalError> {
        let (ty, _) = self.check()?;
        let data = Data::from_le_bytes(ty, &self.bytes)
            .map_err(|fail| EvalError::Array { detail: format!("{fail:?}") })?;
        match elementwise::convert(&data, ElementType::F64) {
            Ok(Data::F64(v)) => Ok(v),
            _ => Err(EvalError::Array { detail: "conversion to f64 failed".into() }),
        }
    }

    /// Builds the logical array from bytes laid out physically with `minor_to_major` (XLA's
    /// layout: the first entry is the fastest-varying dimension).
    ///
    /// # Errors
    /// [`EvalError::Array`] for a malformed array or a layout that is not a permutation of the
    /// dimensions.
    pub fn from_physical(
        ty: proto::PrimitiveType,
        dims: Vec<i64>,
        minor_to_major: &[i64],
        bytes: Vec<u8>,
    ) -> Result<Array, EvalError> {
        let input = Input::from_physical(ty, &dims, minor_to_major, &bytes)?;
        drop(bytes);
        Output { tensor: std::sync::Arc::new(input.tensor) }.to_array()
    }

    /// The bytes of this array laid out physically with `minor_to_major`.
    ///
    /// # Errors
    /// As [`Array::from_physical`].
    pub fn to_physical(&self, minor_to_major: &[i64]) -> Result<Vec<u8>, EvalError> {
        let input = Input::from_le_bytes(self.ty, &self.dims, &self.bytes)?;
        let output = Output { tensor: std::sync::Arc::new(input.tensor) };
        Ok(output.to_physical_array(Some(minor_to_major))?.bytes)
    }
}

/// `minor_to_major` reversed, checked to be a permutation of `0..rank`.
fn major_to_minor(minor_to_major: &[i64], rank: usize) -> Result<Vec<usize>, EvalError> {
    let mut seen = vec![false; rank];
    let mut order = Vec::with_capacity(rank);
    for &d in minor_to_major.iter().rev() {
        let ok = usize::try_from(d).ok().filter(|&d| d < rank && !seen[d]);
        let Some(d) = ok else {
            return Err(EvalError::Array {
                detail: format!("layout {minor_to_major:?} is not a permutation of 0..{rank}"),
            });
        };
        seen[d] = true;
        order.push(d);
    }
    if order.len() != rank {
        return Err(EvalError::Array {
            detail: format!("layout {minor_to_major:?} is not a permutation of 0..{rank}"),
        });
    }
    Ok(order)
}

/// An argument in the interpreter's own storage, ready to bind to an entry parameter leaf.
#[derive(Debug)]
pub struct Input {
    pub(crate) tensor: Tensor,
}

/// A result leaf in the interpreter's own storage (shared with the run's other values, so a
/// result that is also an argument is not copied).
#[derive(Clone, Debug)]
pub struct Output {
    pub(crate) tensor: Arc<Tensor>,
}

/// The element type, the dimensions as `usize` and the byte size of a shape, checked.
pub(crate) fn check_shape(
    ty: proto::PrimitiveType,
    dims: &[i64],
) -> Result<(ElementType, Vec<usize>, usize), EvalError> {
    let element = ElementType::from_primitive(ty as i32).ok_or_else(|| EvalError::Array {
        detail: format!("element type {} is not evaluated", ty.as_str_name()),
    })?;
    let udims =
        dims.iter().map(|&d| usize::try_from(d)).collect::<Result<Vec<_>, _>>().map_err(|_| {
            EvalError::Array { detail: format!("dimensions {dims:?} must not be negative") }
        })?;
    let n_bytes = udims
        .iter()
        .try_fold(element.item_size(), |n, &d| n.checked_mul(d))
        .ok_or_else(|| EvalError::Array { detail: format!("dimensions {dims:?} overflow") })?;
    Ok((element, udims, n_bytes))
}

fn describe(ty: ElementType, dims: &[usize]) -> String {
    super::shape::describe_array(ty, dims)
}

fn alloc_error(ty: ElementType, dims: &[usize], bytes: u64) -> EvalError {
    EvalError::Allocation { what: describe(ty, dims), bytes }
}

fn check_len(
    ty: ElementType,
    dims: &[usize],
    expected: usize,
    got: usize,
) -> Result<(), EvalError> {
    if expected == got {
        return Ok(());
    }
    Err(EvalError::Array {
        detail: format!("{} needs {expected} bytes, got {got}", describe(ty, dims)),
    })
}

impl Input {
    /// The argument of `ty` and `dims` whose elements are `bytes` (logical row-major order,
    /// little-endian), copied once into the interpreter's storage.
    ///
    /// # Errors
    /// [`EvalError::Array`] for a type the interpreter does not evaluate, a negative dimension
    /// or `bytes` of the wrong length; [`EvalError::Allocation`] when the storage cannot be
    /// allocated.
    pub fn from_le_bytes(
        ty: proto::PrimitiveType,
        dims: &[i64],
        bytes: &[u8],
    ) -> Result<Input, EvalError> {
        Input::from_le_bytes_pooled(ty, dims, bytes, None)
    }

    /// [`Input::from_le_bytes`] into storage from `pool` when it holds a buffer that fits.
    pub(crate) fn from_le_bytes_pooled(
        ty: proto::PrimitiveType,
        dims: &[i64],
        bytes: &[u8],
        pool: Option<&BufferPool>,
    ) -> Result<Input, EvalError> {
        let (element, udims, n_bytes) = check_shape(ty, dims)?;
        check_len(element, &udims, n_bytes, bytes.len())?;
        let spare = pool.and_then(|pool| pool.take(element, n_bytes / element.item_size()));
        let data = Data::from_le_bytes_into(element, bytes, spare)
            .map_err(|_| alloc_error(element, &udims, n_bytes as u64))?;
        Ok(Input { tensor: Tensor { dims: udims, data } })
    }

    /// Like [`Input::from_le_bytes`] for `bytes` laid out physically with `minor_to_major`
    /// (XLA's layout: the first entry is the fastest-varying dimension), as device memory holds
    /// a parameter with a non-default layout: the elements are put in logical order while they
    /// are copied, in the same one pass.
    ///
    /// # Errors
    /// As [`Input::from_le_bytes`], and [`EvalError::Array`] for a layout that is not a
    /// permutation of the dimensions.
    pub fn from_physical(
        ty: proto::PrimitiveType,
        dims: &[i64],
        minor_to_major: &[i64],
        bytes: &[u8],
    ) -> Result<Input, EvalError> {
        let (element, udims, n_bytes) = check_shape(ty, dims)?;
        let order = layout_order(minor_to_major, udims.len())?;
        check_len(element, &udims, n_bytes, bytes.len())?;
        let strides = layout_strides(&udims, &order);
        let data = Data::from_le_bytes_strided(element, bytes, &udims, &strides)
            .map_err(|_| alloc_error(element, &udims, n_bytes as u64))?;
        Ok(Input { tensor: Tensor { dims: udims, data } })
    }

    /// The argument of `ty` and `dims` whose elements (logical order, little-endian) are the
    /// next bytes of `reader`, read straight into the interpreter's storage: a file of any
    /// size costs its array and a small fixed buffer, never a second whole copy.
    ///
    /// # Errors
    /// As [`Input::from_le_bytes`]; [`EvalError::Array`] when the reader fails or ends before
    /// the array does.
    pub fn read_from(
        ty: proto::PrimitiveType,
        dims: &[i64],
        reader: &mut dyn std::io::Read,
    ) -> Result<Input, EvalError> {
        let (element, udims, n_bytes) = check_shape(ty, dims)?;
        let n = udims.iter().product();
        let data = Data::read_le(element, n, reader).map_err(|fail| match fail {
            ReadFail::Alloc(bytes) => alloc_error(element, &udims, bytes),
            ReadFail::Io(error) => EvalError::Array {
                detail: format!(
                    "reading the {n_bytes} bytes of {}: {error}",
                    describe(element, &udims)
                ),
            },
        })?;
        Ok(Input { tensor: Tensor { dims: udims, data } })
    }

    /// The argument holding `array`'s elements (whose bytes are freed once copied).
    ///
    /// # Errors
    /// As [`Input::from_le_bytes`].
    pub fn from_array(array: Array) -> Result<Input, EvalError> {
        Input::from_le_bytes(array.ty, &array.dims, &array.bytes)
    }

    /// The element type.
    pub fn element_type(&self) -> ElementType {
        self.tensor.ty()
    }

    /// The dimensions.
    pub fn dims(&self) -> &[usize] {
        &self.tensor.dims
    }

    /// The bytes the elements take.
    pub fn n_bytes(&self) -> usize {
        self.tensor.n_elems() * self.tensor.ty().item_size()
    }
}

impl Output {
    /// The element type.
    pub fn ty(&self) -> proto::PrimitiveType {
        primitive(self.tensor.ty())
    }

    /// The dimensions.
    pub fn dims(&self) -> Vec<i64> {
        self.tensor.dims.iter().map(|&d| d as i64).collect()
    }

    /// The bytes the elements take.
    pub fn n_bytes(&self) -> usize {
        self.tensor.n_elems() * self.tensor.ty().item_size()
    }

    /// Writes the elements (logical row-major order, little-endian) into `out`.
    ///
    /// # Errors
    /// [`EvalError::Array`] when `out` is not [`Output::n_bytes`] long.
    pub fn write_le_bytes(&self, out: &mut [u8]) -> Result<(), EvalError> {
        let tensor = &self.tensor;
        check_len(tensor.ty(), &tensor.dims, self.n_bytes(), out.len())?;
        tensor.data.write_le(out);
        Ok(())
    }

    /// Writes the elements into `out` laid out physically with `minor_to_major`, in one pass.
    ///
    /// # Errors
    /// As [`Output::write_le_bytes`], and [`EvalError::Array`] for a layout that is not a
    /// permutation of the dimensions.
    pub fn write_physical(&self, minor_to_major: &[i64], out: &mut [u8]) -> Result<(), EvalError> {
        let tensor = &self.tensor;
        let order = layout_order(minor_to_major, tensor.dims.len())?;
        check_len(tensor.ty(), &tensor.dims, self.n_bytes(), out.len())?;
        tensor.data.write_le_strided(out, &tensor.dims, &layout_strides(&tensor.dims, &order));
        Ok(())
    }

    /// Writes the elements (logical row-major order, little-endian) to `writer` through a small
    /// fixed buffer, so a result goes to a file without a whole copy in memory.
    ///
    /// # Errors
    /// What the writer returns.
    pub fn write_to(&self, writer: &mut dyn std::io::Write) -> std::io::Result<()> {
        self.tensor.data.write_le_to(writer)
    }

    /// The result as an [`Array`] (one copy of its elements).
    ///
    /// # Errors
    /// [`EvalError::Allocation`] when the bytes cannot be allocated.
    pub fn to_array(&self) -> Result<Array, EvalError> {
        self.to_physical_array(None)
    }

    /// The result as an [`Array`] whose bytes are in the physical order of `minor_to_major`
    /// when one is given.
    pub(crate) fn to_physical_array(
        &self,
        minor_to_major: Option<&[i64]>,
    ) -> Result<Array, EvalError> {
        let n_bytes = self.n_bytes();
        let mut bytes = Vec::new();
        bytes
            .try_reserve_exact(n_bytes)
            .map_err(|_| alloc_error(self.tensor.ty(), &self.tensor.dims, n_bytes as u64))?;
        match minor_to_major {
            Some(layout) => {
                bytes.resize(n_bytes, 0);
                self.write_physical(layout, &mut bytes)?;
            }
            None => {
                self.tensor.data.append_le(&mut bytes);
                check_len(self.tensor.ty(), &self.tensor.dims, n_bytes, bytes.len())?;
            }
        }
        Ok(Array { ty: self.ty(), dims: self.dims(), bytes })
    }
}

/// The proto number of an element type the interpreter evaluates (every one has one).
pub(crate) fn primitive(ty: ElementType) -> proto::PrimitiveType {
    proto::PrimitiveType::try_from(ty as i32).unwrap_or(proto::PrimitiveType::Invalid)
}

/// `minor_to_major` as dimension numbers, checked to be a permutation of `0..rank`.
fn layout_order(minor_to_major: &[i64], rank: usize) -> Result<Vec<usize>, EvalError> {
    let mut order = major_to_minor(minor_to_major, rank)?;
    order.reverse();
    Ok(order)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::{EvalOptions, Program};
    use proto::PrimitiveType as P;

    fn f32_bytes(values: &[f32]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    fn f32s(output: &Output) -> Vec<f32> {
        let mut bytes = vec![0; output.n_bytes()];
        output.write_le_bytes(&mut bytes).unwrap();
        bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
    }

    #[test]
    fn column_major_bytes_are_read_in_logical_order_and_written_back() {
        // [[1,2,3],[4,5,6]] stored column by column ({0,1}: dimension 0 fastest) is 1,4,2,5,3,6.
        let physical = f32_bytes(&[1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
        let input = Input::from_physical(P::F32, &[2, 3], &[0, 1], &physical).unwrap();
        let output = Output { tensor: Arc::new(input.tensor) };
        assert_eq!(f32s(&output), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let mut back = vec![0; 24];
        output.write_physical(&[0, 1], &mut back).unwrap();
        assert_eq!(back, physical);
    }

    #[test]
    fn a_rank_3_layout_permutes_as_xla_lays_it_out() {
        // dims [2,2,2], minor_to_major {1,2,0}: dimension 1 fastest, then 2, then 0, so element
        // [i,j,k] sits at i*4 + k*2 + j.
        let logical: Vec<f32> = (0..8).map(|v| v as f32).collect();
        let mut physical = [0.0f32; 8];
        for i in 0..2 {
            for j in 0..2 {
                for k in 0..2 {
                    physical[i * 4 + k * 2 + j] = logical[i * 4 + j * 2 + k];
                }
            }
        }
        let input =
            Input::from_physical(P::F32, &[2, 2, 2], &[1, 2, 0], &f32_bytes(&physical)).unwrap();
        assert_eq!(f32s(&Output { tensor: Arc::new(input.tensor) }), logical);
    }

    #[test]
    fn a_reader_that_ends_early_is_an_array_error() {
        let bytes = f32_bytes(&[1.0, 2.0, 3.0]);
        let err = Input::read_from(P::F32, &[4], &mut &bytes[..]).unwrap_err();
        assert!(matches!(err, EvalError::Array { .. }), "{err}");
        assert!(err.to_string().contains("16 bytes of f32[4]"), "{err}");
        let input = Input::read_from(P::F32, &[3], &mut &bytes[..]).unwrap();
        assert_eq!(f32s(&Output { tensor: Arc::new(input.tensor) }), [1.0, 2.0, 3.0]);
    }

    #[test]
    fn storage_too_large_to_allocate_is_an_allocation_error() {
        // 2^61 f32 elements are 2^63 bytes: no allocator gives that, and asking must not abort.
        let mut endless = std::io::repeat(0);
        let err = Input::read_from(P::F32, &[1 << 61], &mut endless).unwrap_err();
        assert!(matches!(err, EvalError::Allocation { bytes, .. } if bytes == 1 << 63), "{err}");
    }

    #[test]
    fn wrong_lengths_and_layouts_are_refused() {
        assert!(Input::from_le_bytes(P::F32, &[2], &[0; 7]).is_err());
        assert!(Input::from_physical(P::F32, &[2, 2], &[0, 0], &[0; 16]).is_err());
        let output = Output {
            tensor: Arc::new(Input::from_le_bytes(P::F32, &[1], &[0; 4]).unwrap().tensor),
        };
        assert!(output.write_le_bytes(&mut [0; 3]).is_err());
    }

    #[test]
    fn run_inputs_consumes_its_arguments_and_returns_the_leaves() {
        let text = "HloModule m\n\nENTRY e {\n  x = f32[2] parameter(0)\n  y = f32[2] parameter(1)\n  \
                    s = f32[2] add(x, y)\n  ROOT t = (f32[2], f32[2]) tuple(s, x)\n}\n";
        let module = crate::load_module(text.as_bytes()).unwrap();
        let program = Program::compile(&module, &EvalOptions::default()).unwrap();
        let x = Input::from_le_bytes(P::F32, &[2], &f32_bytes(&[1.0, 2.0])).unwrap();
        let y = Input::read_from(P::F32, &[2], &mut &f32_bytes(&[10.0, 20.0])[..]).unwrap();
        let outputs = program.run_inputs(vec![x, y]).unwrap();
        assert_eq!(outputs.len(), 2);
        assert_eq!(f32s(&outputs[0]), [11.0, 22.0]);
        assert_eq!(f32s(&outputs[1]), [1.0, 2.0]);
        let wrong = Input::from_le_bytes(P::F32, &[3], &[0; 12]).unwrap();
        let err = program.run_inputs(vec![wrong]).unwrap_err();
        assert!(matches!(err, EvalError::ArgumentCount { expected: 2, got: 1 }), "{err}");
    }
}
