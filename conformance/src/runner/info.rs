//! Raw steps that query the runtime: versions, counts, model and memory information.

use super::values::check_tensor_info;
use super::{Context, StepResult, check_status, label};
use crate::spec::{
    GetCoreCountsStep, GetModelCountsStep, GetModelInfoStep, GetModelTensorInfoStep,
    GetVersionStep, GetVncCountStep, GetVncMemoryStatsStep,
};

impl Context<'_> {
    /// The `get_model_tensor_info` step.
    pub(super) fn get_model_tensor_info(&mut self, step: &GetModelTensorInfoStep) -> StepResult {
        let rt = self.runtime.clone();
        let GetModelTensorInfoStep { model, expect_info, expect } = step;
        let result = rt.get_model_tensor_info(label(&self.models, model, "model")?);
        check_status(&result, expect)?;
        match (result, expect_info) {
            (Ok(got), Some(want)) => check_tensor_info(&got, want),
            _ => Ok(()),
        }
    }

    /// The `get_version` step.
    pub(super) fn get_version(&mut self, _step: &GetVersionStep) -> StepResult {
        self.runtime.get_version().map(|_| ()).map_err(|e| e.to_string())
    }

    /// The `get_vnc_count` step.
    pub(super) fn get_vnc_count(&mut self, step: &GetVncCountStep) -> StepResult {
        let rt = self.runtime.clone();
        let GetVncCountStep { expect, expect_count } = step;
        for (what, result) in
            [("total", rt.get_total_vnc_count()), ("visible", rt.get_visible_vnc_count())]
        {
            check_status(&result, expect).map_err(|e| format!("{what} count: {e}"))?;
            if let (Ok(got), Some(want)) = (result, expect_count) {
                if got != *want {
                    return Err(format!("{what} count {got}, expected {want}"));
                }
            }
        }
        Ok(())
    }

    /// The `get_core_counts` step.
    pub(super) fn get_core_counts(&mut self, step: &GetCoreCountsStep) -> StepResult {
        let rt = self.runtime.clone();
        let GetCoreCountsStep { expect_total, expect_visible, expect } = step;
        let counts = [
            rt.get_total_nc_count(),
            rt.get_total_vnc_count(),
            rt.get_visible_nc_count(),
            rt.get_visible_vnc_count(),
        ];
        for count in &counts {
            check_status(count, expect)?;
        }
        if let [Ok(total_nc), Ok(total), Ok(visible_nc), Ok(visible)] = counts {
            if total_nc != total || visible_nc != visible || visible > total {
                return Err(format!(
                    "counts total {total_nc}/{total}, visible {visible_nc}/{visible}, \
                     expected equal totals, equal visible counts, visible <= total"
                ));
            }
            if expect_total.is_some_and(|want| want != total) {
                return Err(format!("total count {total}, expected {expect_total:?}"));
            }
            if expect_visible.is_some_and(|want| want != visible) {
                return Err(format!("visible count {visible}, expected {expect_visible:?}"));
            }
        }
        Ok(())
    }

    /// The `get_model_counts` step.
    pub(super) fn get_model_counts(&mut self, step: &GetModelCountsStep) -> StepResult {
        let rt = self.runtime.clone();
        let GetModelCountsStep { model, expect_vnc_count, expect } = step;
        let model = label(&self.models, model, "model")?;
        let nc = rt.get_model_nc_count(model);
        let vnc = rt.get_model_vnc_count(model);
        let instances = rt.get_model_instance_count(model);
        check_status(&nc, expect)?;
        check_status(&vnc, expect)?;
        check_status(&instances, expect)?;
        match (nc, vnc, instances, expect_vnc_count) {
            (Ok(nc), Ok(vnc), _, Some(want)) if nc != *want || vnc != *want => {
                Err(format!("model occupies {nc} nc / {vnc} vnc, expected {want}"))
            }
            (_, _, Ok(0), _) => Err("model instance count 0, expected at least 1".into()),
            _ => Ok(()),
        }
    }

    /// The `get_vnc_memory_stats` step.
    pub(super) fn get_vnc_memory_stats(&mut self, step: &GetVncMemoryStatsStep) -> StepResult {
        let rt = self.runtime.clone();
        let GetVncMemoryStatsStep { vnc, expect_used_at_least, expect } = step;
        let stats = rt.get_vnc_memory_stats(*vnc);
        check_status(&stats, expect)?;
        match (stats, expect_used_at_least) {
            (Ok(stats), _) if stats.bytes_used > stats.bytes_limit => Err(format!(
                "{} bytes used of a {} byte limit, expected at most the limit",
                stats.bytes_used, stats.bytes_limit
            )),
            (Ok(stats), Some(least)) if stats.bytes_used < *least => Err(format!(
                "{} bytes used on vnc {vnc}, expected at least {least}",
                stats.bytes_used
            )),
            _ => Ok(()),
        }
    }

    /// The `get_model_info` step.
    pub(super) fn get_model_info(&mut self, step: &GetModelInfoStep) -> StepResult {
        let rt = self.runtime.clone();
        let GetModelInfoStep { model, expect_vnc, expect } = step;
        let result = rt.get_model_info(label(&self.models, model, "model")?);
        check_status(&result, expect)?;
        match (result, expect_vnc) {
            (Ok(vnc), Some(want)) if vnc != *want => {
                Err(format!("model {model} starts on vnc {vnc}, expected {want}"))
            }
            _ => Ok(()),
        }
    }
}
