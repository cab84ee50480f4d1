//! Raw steps of the collectives over the ranks of one process (`vectors/collectives/`). A vector
//! runs on one thread, so it shows one rank of a world of one and the arguments a runtime
//! refuses; ranks meeting on threads are the simulator's and the C programs' tests.

use super::values::{encode_values, hex, same_elements};
use super::{Context, StepResult, check_status};
use crate::spec::{AllGatherStep, CommStep};

/// The step's `(vnc, rank, world)`, defaults filled in.
fn rank_of(vnc: Option<i32>, rank: Option<u32>, world: Option<u32>) -> (i32, u32, u32) {
    (vnc.unwrap_or(0), rank.unwrap_or(0), world.unwrap_or(1))
}

impl Context<'_> {
    /// The `build_global_comm` step.
    pub(super) fn build_global_comm(&mut self, step: &CommStep) -> StepResult {
        let (vnc, rank, world) = rank_of(step.vnc, step.rank, step.world);
        check_status(&self.runtime.build_global_comm(vnc, rank, world), &step.expect)
    }

    /// The `cc_global_comm_init` step (a negative `vnc` reaches C as its `uint32_t` bits).
    pub(super) fn cc_global_comm_init(&mut self, step: &CommStep) -> StepResult {
        let (vnc, rank, world) = rank_of(step.vnc, step.rank, step.world);
        check_status(&self.runtime.cc_global_comm_init(vnc as u32, rank, world), &step.expect)
    }

    /// The `barrier` step.
    pub(super) fn barrier(&mut self, step: &CommStep) -> StepResult {
        let (vnc, rank, world) = rank_of(step.vnc, step.rank, step.world);
        check_status(&self.runtime.barrier(vnc, rank, world), &step.expect)
    }

    /// The `all_gather` step.
    pub(super) fn all_gather(&mut self, step: &AllGatherStep) -> StepResult {
        let AllGatherStep { vnc, rank, world, data, expect_values, expect } = step;
        let (vnc, rank, world) = rank_of(*vnc, *rank, *world);
        let input = encode_values(data.dtype.0, &data.values)?;
        let result = self.runtime.all_gather(vnc, rank, world, &input);
        check_status(&result, expect)?;
        match (result, expect_values) {
            (Ok(got), Some(want)) => {
                let want_bytes = encode_values(want.dtype.0, &want.values)?;
                if same_elements(want.dtype.0, &want_bytes, &got) {
                    Ok(())
                } else {
                    Err(format!("gathered {}, expected {}", hex(&got), hex(&want_bytes)))
                }
            }
            _ => Ok(()),
        }
    }
}
