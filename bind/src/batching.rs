//! Dynamic batching: how a launch batch that differs from the compiled one is run.
//!
//! libtorchneuron overrides a dynamic tensor's leading dimension with the launch batch
//! (`empty_tensor`), and `get_slices` / `CreateSlice` cut the inputs into per-launch slices, but
//! the disassembly leaves the slicing arithmetic open (docs/libtorchneuron.md §2). This is **our
//! model of it**, pinned by tests so that a device run can confirm or correct it:
//!
//! - The *launch batch* `b` is the leading dimension of the caller's dynamic user inputs (all of
//!   them must agree); the *compiled batch* `c` is the leading dimension the metaneff gives
//!   those inputs (all of them, and every dynamic output, must agree, and `c > 0`).
//! - The layer runs `ceil(b / c)` launches. Launch `k` takes rows `k·c .. min((k+1)·c, b)` of
//!   every dynamic user input; the last slice, when partial, is zero-padded to `c` rows (the
//!   NEFF is compiled for `c`). `b < c` is one padded launch; `b == c` is one launch with no
//!   copy at all, the same as a model without dynamic tensors. `b == 0` is refused.
//! - Non-dynamic inputs (and states and weights, whatever their flag) are passed whole to every
//!   launch. A state therefore advances once per launch.
//! - A dynamic output's rows of launch `k` are trimmed to the slice's real rows and placed at
//!   rows `k·c ..` of a result whose leading dimension is `b`. A non-dynamic output is the one of
//!   the last launch. An output aliased to a dynamic input is written back into that input's
//!   rows, slice by slice.
//! - A device-resident dynamic input is bound as it is, so its batch must be exactly `c`.

use super::error::BindError;
use super::host_tensor::HostTensor;
use super::tensor_set::Layout;
use abi::metaneff::edit::Side;

/// How a forward is cut into launches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BatchPlan {
    /// The caller's batch.
    pub(crate) batch: usize,
    /// The compiled batch.
    pub(crate) compiled: usize,
}

impl BatchPlan {
    /// Whether the caller's batch is the compiled one (no slicing, no padding).
    pub(crate) fn is_exact(self) -> bool {
        self.batch == self.compiled
    }

    /// The number of launches.
    pub(crate) fn n_launches(self) -> usize {
        self.batch.div_ceil(self.compiled)
    }

    /// The first row and the number of real rows of launch `k`.
    pub(crate) fn rows(self, k: usize) -> (usize, usize) {
        let start = k * self.compiled;
        (start, self.compiled.min(self.batch - start))
    }
}

/// The plan for `inputs` (user inputs in order), or `None` when no user input is dynamic.
pub(crate) fn plan(layout: &Layout, inputs: &[HostTensor]) -> Result<Option<BatchPlan>, BindError> {
    let mut found: Option<(usize, i64, i64)> = None; // (slot, compiled, batch)
    for (ordinal, tensor) in inputs.iter().enumerate() {
        let Some(&index) = layout.user_slots.get(ordinal) else { break };
        let slot = &layout.inputs[index];
        if !slot.dynamic {
            continue;
        }
        let compiled = slot.shape.first().copied().unwrap_or(0);
        let batch = tensor.shape().first().copied().unwrap_or(0);
        match found {
            None => {
                if compiled <= 0 {
                    return Err(BindError::CompiledBatchMismatch {
                        side: Side::Input,
                        index,
                        name: slot.name.clone(),
                        expected: 1,
                        actual: compiled,
                    });
                }
                if batch <= 0 {
                    return Err(BindError::BatchMismatch {
                        index,
                        name: slot.name.clone(),
                        expected: 1,
                        actual: batch,
                    });
                }
                found = Some((index, compiled, batch));
            }
            Some((_, first_compiled, first_batch)) => {
                if compiled != first_compiled {
                    return Err(BindError::CompiledBatchMismatch {
                        side: Side::Input,
                        index,
                        name: slot.name.clone(),
                        expected: first_compiled,
                        actual: compiled,
                    });
                }
                if batch != first_batch {
                    return Err(BindError::BatchMismatch {
                        index,
                        name: slot.name.clone(),
                        expected: first_batch,
                        actual: batch,
                    });
                }
            }
        }
        if tensor.device().is_some() && batch != compiled {
            return Err(BindError::DeviceTensorNeedsSlicing {
                index,
                name: slot.name.clone(),
                expected: compiled,
                actual: batch,
            });
        }
    }
    let Some((_, compiled, batch)) = found else { return Ok(None) };
    for (index, slot) in layout.outputs.iter().enumerate() {
        if slot.dynamic && layout.output_alias[index].is_none() {
            let lead = slot.shape.first().copied().unwrap_or(0);
            if lead != compiled {
                return Err(BindError::CompiledBatchMismatch {
                    side: Side::Output,
                    index,
                    name: slot.name.clone(),
                    expected: compiled,
                    actual: lead,
                });
            }
        }
    }
    Ok(Some(BatchPlan { batch: batch as usize, compiled: compiled as usize }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_cover_the_batch_and_pad_only_the_last() {
        let plan = BatchPlan { batch: 5, compiled: 2 };
        assert_eq!(plan.n_launches(), 3);
        assert_eq!((0..3).map(|k| plan.rows(k)).collect::<Vec<_>>(), vec![(0, 2), (2, 2), (4, 1)]);
        let smaller = BatchPlan { batch: 1, compiled: 4 };
        assert_eq!((smaller.n_launches(), smaller.rows(0)), (1, (0, 1)));
        assert!(BatchPlan { batch: 3, compiled: 3 }.is_exact());
    }
}
