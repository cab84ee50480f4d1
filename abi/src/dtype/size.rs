//! Element counts and byte sizes of shapes, with checked arithmetic.
//!
//! libtorchneuron multiplies the item size by each dimension with a wrapping `imul`; here the
//! product is exact or an error, because a wrapped size would allocate a buffer smaller than the
//! tensor. Rules, in the order they are applied:
//! - with a dynamic batch, the batch must be non-negative and the shape must have a leading
//!   dimension, which the batch replaces (the shape's own leading dimension is then not looked
//!   at, as libtorchneuron overwrites it);
//! - every dimension must be non-negative; the first negative one is reported with its index;
//! - a zero dimension makes the result zero, even if the other dimensions would overflow,
//!   because that is the exact product;
//! - otherwise the product must fit in `u64`.
//!
//! An empty shape is a scalar: one element.

use super::DataType;
use super::error::DtypeError;
use super::lookup::{item_size_of, item_size_of_raw};
use super::scalar_type::ScalarType;

impl ScalarType {
    /// `item_size × Π shape` for a host tensor of this type (see [`super::n_bytes`]).
    ///
    /// # Errors
    ///
    /// A negative dimension or a byte size that does not fit in `u64`.
    pub fn n_bytes(self, shape: &[i64]) -> Result<u64, DtypeError> {
        n_bytes_with_item_size(shape, self.item_size(), None)
    }
}

/// The shape with its leading dimension replaced by `batch`, when a batch is given.
fn effective_shape(shape: &[i64], batch: Option<i64>) -> Result<Vec<i64>, DtypeError> {
    let Some(batch) = batch else {
        return Ok(shape.to_vec());
    };
    if batch < 0 {
        return Err(DtypeError::NegativeBatch { batch });
    }
    let Some((_, rest)) = shape.split_first() else {
        return Err(DtypeError::ScalarWithDynamicBatch { batch });
    };
    let mut effective = Vec::with_capacity(shape.len());
    effective.push(batch);
    effective.extend_from_slice(rest);
    Ok(effective)
}

/// `factor × Π shape`, or `None` on overflow; the shape is already known to be non-negative.
fn checked_product(shape: &[i64], factor: u64) -> Option<u64> {
    if shape.contains(&0) {
        return Some(0);
    }
    shape.iter().try_fold(factor, |product, &dim| product.checked_mul(u64::try_from(dim).ok()?))
}

fn reject_negative_dimensions(shape: &[i64]) -> Result<(), DtypeError> {
    match shape.iter().enumerate().find(|&(_, &dim)| dim < 0) {
        Some((index, &value)) => Err(DtypeError::NegativeDimension { index, value }),
        None => Ok(()),
    }
}

/// The number of elements of `shape` (1 for an empty shape).
///
/// # Errors
///
/// [`DtypeError::NegativeDimension`] for the first negative dimension,
/// [`DtypeError::ElementCountOverflow`] when the product does not fit in `u64`.
pub fn n_elements(shape: &[i64]) -> Result<u64, DtypeError> {
    reject_negative_dimensions(shape)?;
    checked_product(shape, 1)
        .ok_or_else(|| DtypeError::ElementCountOverflow { shape: shape.to_vec() })
}

/// `item_size × Π shape`, with the leading dimension replaced by `batch` when one is given.
/// The building block of the other size functions, for callers that already hold an item size.
///
/// # Errors
///
/// [`DtypeError::NegativeBatch`], [`DtypeError::ScalarWithDynamicBatch`] (a batch for an empty
/// shape), [`DtypeError::NegativeDimension`], [`DtypeError::ByteSizeOverflow`].
pub fn n_bytes_with_item_size(
    shape: &[i64],
    item_size: u64,
    batch: Option<i64>,
) -> Result<u64, DtypeError> {
    let shape = effective_shape(shape, batch)?;
    reject_negative_dimensions(&shape)?;
    match checked_product(&shape, item_size) {
        Some(n_bytes) => Ok(n_bytes),
        None => Err(DtypeError::ByteSizeOverflow { shape, item_size }),
    }
}

/// The byte size of a metaneff tensor: `item_size × Π shape`, the item size coming from
/// libtorchneuron's map.
///
/// # Errors
///
/// [`DtypeError::UnsupportedDataType`] for a data_type the map has no entry for, then the errors
/// of [`n_bytes_with_item_size`].
pub fn n_bytes(shape: &[i64], data_type: DataType) -> Result<u64, DtypeError> {
    n_bytes_with_item_size(shape, item_size_of(data_type)?, None)
}

/// [`n_bytes`] for the raw wire data_type, which may be a value the enum does not define.
///
/// # Errors
///
/// As [`n_bytes`].
pub fn n_bytes_of_raw(shape: &[i64], data_type: i32) -> Result<u64, DtypeError> {
    n_bytes_with_item_size(shape, item_size_of_raw(data_type)?, None)
}

/// [`n_bytes`] for a launch: when `batch` is given (the tensor has `allow_dynamic_batch_size`
/// set), it replaces the leading dimension. libtorchneuron spells "no batch" as a negative
/// number; here that is `None`, so a negative `Some` is an error rather than silently ignored.
///
/// # Errors
///
/// As [`n_bytes`], plus [`DtypeError::NegativeBatch`] and [`DtypeError::ScalarWithDynamicBatch`].
pub fn n_bytes_with_batch(
    shape: &[i64],
    data_type: DataType,
    batch: Option<i64>,
) -> Result<u64, DtypeError> {
    n_bytes_with_item_size(shape, item_size_of(data_type)?, batch)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_dimension_wins_over_overflow() {
        assert_eq!(n_elements(&[i64::MAX, i64::MAX, 0]), Ok(0));
        assert_eq!(n_bytes(&[0, i64::MAX, i64::MAX], DataType::Double), Ok(0));
    }

    #[test]
    fn negative_dimension_is_reported_before_overflow() {
        assert_eq!(
            n_elements(&[i64::MAX, i64::MAX, -3]),
            Err(DtypeError::NegativeDimension { index: 2, value: -3 })
        );
    }

    #[test]
    fn batch_replaces_a_negative_leading_dimension() {
        assert_eq!(n_bytes_with_batch(&[-1, 3], DataType::Float, Some(2)), Ok(24));
        assert_eq!(
            n_bytes_with_batch(&[-1, 3], DataType::Float, None),
            Err(DtypeError::NegativeDimension { index: 0, value: -1 })
        );
    }

    #[test]
    fn a_negative_batch_is_named_as_the_batch() {
        // libtorchneuron's "no batch" -1 is `None` here: as `Some` it is the batch that is wrong,
        // not the shape, whichever negative value it is.
        for batch in [-1, -2, i64::MIN] {
            assert_eq!(
                n_bytes_with_batch(&[4, 3], DataType::Float, Some(batch)),
                Err(DtypeError::NegativeBatch { batch })
            );
        }
        assert_eq!(n_bytes_with_batch(&[4, 3], DataType::Float, Some(0)), Ok(0));
    }
}
