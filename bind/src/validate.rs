//! libtorchneuron's `validate` (docs/libtorchneuron.md §3): the gate before every launch, with its exact messages.
//!
//! Checks, in order:
//! 1. **Count** ([`ValidatePath::Model`] only): the number of caller tensors against the number
//!    of user-supplied inputs. *Discrepancy* (docs/libtorchneuron.md §3): libtorchneuron compares `input_tensors.size()` (every
//!    input, states and weights included) with `tensors.size()`. This layer binds states and
//!    weights itself (docs/abi-facts.md §5: they are ordinary inputs the layer fills), so the caller passes
//!    user inputs only and the check counts those; with states or weights present the two
//!    counts differ, and the test `seed_discrepancy_count_check_counts_user_inputs` pins the
//!    choice. The ranked path ([`ValidatePath::Ranked`], `SPMDRankedTask::run`) skips it.
//! 2. Per caller tensor `k`, bound to the k-th user-supplied slot: a `k` past every slot is
//!    "Expected ordinal < nrt_tensors_.size()" (reachable on the ranked path only, since the
//!    count check comes first on the Model path). Then, for `USER_INPUT` slots only (states,
//!    weights and untyped inputs are not checked, as in libtorchneuron): dtype, the
//!    scalar/dynamic-batch sanity check, and the shape, whose leading dimension is free when the
//!    slot allows a dynamic batch.

use super::error::{BindError, ValidateError, ValidateKind};
use super::host_tensor::HostTensor;
use super::tensor_set::{InputRole, Layout, VarTable};
use abi::metaneff::Decoded;

/// Which caller of `validate`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValidatePath {
    /// `Model::forward`: the count check runs.
    Model,
    /// `SPMDRankedTask::run` (the `is_input == 1` fast path): the count check is skipped.
    Ranked,
}

/// Validates `inputs` (user inputs only, in order) against a metaneff.
///
/// # Errors
/// [`BindError::Validate`] for the first failed check; [`BindError::Dtype`] and the other
/// layout errors when the metaneff itself cannot be used (an unmapped data_type, an alias out
/// of range, a state or weight without `checkpoint_key`).
pub fn validate(
    meta: &Decoded,
    inputs: &[HostTensor],
    path: ValidatePath,
) -> Result<(), BindError> {
    let layout = Layout::from_decoded(meta, &VarTable::default())?;
    validate_layout(&layout, inputs, path).map_err(BindError::Validate)
}

fn shape_text(shape: &[i64], dynamic: bool) -> String {
    let dims: Vec<String> = shape
        .iter()
        .enumerate()
        .map(|(d, dim)| if d == 0 && dynamic { "*".to_owned() } else { dim.to_string() })
        .collect();
    format!("[{}]", dims.join(", "))
}

pub(crate) fn validate_layout(
    layout: &Layout,
    inputs: &[HostTensor],
    path: ValidatePath,
) -> Result<(), ValidateError> {
    let n_slots = layout.user_slots.len();
    if path == ValidatePath::Model && inputs.len() != n_slots {
        return Err(ValidateError::new(
            ValidateKind::Count,
            None,
            None,
            n_slots.to_string(),
            inputs.len().to_string(),
        ));
    }
    for (ordinal, tensor) in inputs.iter().enumerate() {
        let Some(&index) = layout.user_slots.get(ordinal) else {
            return Err(ValidateError::new(
                ValidateKind::Ordinal,
                Some(ordinal),
                None,
                format!("< {n_slots}"),
                ordinal.to_string(),
            ));
        };
        let slot = &layout.inputs[index];
        if slot.role != InputRole::User {
            continue;
        }
        let error = |kind, expected: String, actual: String| {
            ValidateError::new(kind, Some(index), Some(slot.name.clone()), expected, actual)
        };
        if tensor.scalar_type() != slot.scalar_type {
            return Err(error(
                ValidateKind::Dtype,
                slot.scalar_type.to_string(),
                tensor.scalar_type().to_string(),
            ));
        }
        if slot.dynamic && (slot.shape.is_empty() || tensor.shape().is_empty()) {
            return Err(error(
                ValidateKind::ScalarDynamicBatch,
                "a tensor with a leading dimension".to_owned(),
                format!("shape {:?} with allow_dynamic_batch_size=True", tensor.shape()),
            ));
        }
        let actual = tensor.shape();
        let matches = actual.len() == slot.shape.len()
            && actual
                .iter()
                .zip(&slot.shape)
                .enumerate()
                .all(|(d, (a, e))| a == e || (d == 0 && slot.dynamic && *a >= 0));
        if !matches {
            return Err(error(
                ValidateKind::Shape,
                shape_text(&slot.shape, slot.dynamic),
                shape_text(actual, false),
            ));
        }
    }
    Ok(())
}
