//! Raw steps of instance information, profiling, the legacy trace and the interfaces a
//! simulator cannot have (`vectors/info/`, `vectors/profile/`, `vectors/unsupported/`). Paths
//! are relative to a folder of the run, made for it and removed after it.

use std::path::PathBuf;

use super::folder::RunFolder;
use super::{Context, StepResult, check_status, label};
use crate::spec::{
    GetAttachedEfaBdfStep, GetDmabufFdStep, GetHbmMmapVaStep, GetInstanceInfoStep,
    InspectBeginWithOptionsStep, InspectStopStep, NrtaGetCompletionHandleStep,
    ProfileContinuousSaveStep, ProfileContinuousStartStep, ProfileContinuousStopStep,
    ProfileExpectation, ProfileStartStep, ProfileStopStep, TraceStartStep, TraceStopStep,
};

/// Checks a profile file (or the one `.json` file of a folder) against `want`.
fn check_profile(folder: &RunFolder, want: &ProfileExpectation) -> StepResult {
    let mut path = folder.join(&want.file)?;
    if path.is_dir() {
        let files: Vec<PathBuf> = std::fs::read_dir(&path)
            .map_err(|err| format!("cannot list {}: {err}", want.file))?
            .filter_map(|entry| entry.ok().map(|entry| entry.path()))
            .filter(|file| file.extension().is_some_and(|ext| ext == "json"))
            .collect();
        match files.as_slice() {
            [one] => path = one.clone(),
            _ => {
                return Err(format!(
                    "folder {} holds {} profiles, expected exactly one",
                    want.file,
                    files.len()
                ));
            }
        }
    }
    let text = std::fs::read_to_string(&path)
        .map_err(|err| format!("cannot read the profile {}: {err}", want.file))?;
    let json: serde_json::Value = serde_json::from_str(&text)
        .map_err(|err| format!("profile {} is not JSON ({err}): {text}", want.file))?;
    if json["format"] != "nrtsim-profile-1" {
        return Err(format!("profile format {}, expected \"nrtsim-profile-1\"", json["format"]));
    }
    let executions = json["executions"]
        .as_array()
        .ok_or_else(|| format!("profile has no executions array, expected one: {text}"))?;
    if executions.len() != want.executions {
        return Err(format!(
            "profile lists {} executions, expected {}",
            executions.len(),
            want.executions
        ));
    }
    for execution in executions {
        let (start, end) = (execution["start_ns"].as_u64(), execution["end_ns"].as_u64());
        if execution["type"] != "nc_exec_running" || start.is_none() || start > end {
            return Err(format!(
                "execution {execution}, expected an nc_exec_running event with start_ns <= end_ns"
            ));
        }
        if let Some(nc) = want.nc {
            if execution["nc"].as_u64() != Some(nc) {
                return Err(format!("execution on nc {}, expected {nc}", execution["nc"]));
            }
        }
        if let Some(status) = &want.status {
            if execution["status"] != status.0.name().as_str() {
                return Err(format!(
                    "execution status {}, expected {:?}",
                    execution["status"],
                    status.0.name()
                ));
            }
        }
    }
    if let Some(one_model) = want.one_model {
        let model = &json["model"];
        if model.is_u64() != one_model || (!one_model && !model.is_null()) {
            let wanted = if one_model { "a model id" } else { "null" };
            return Err(format!("profile model {model}, expected {wanted}"));
        }
    }
    let dropped = json["dropped_executions"].as_u64();
    let want_dropped = want.dropped_executions.unwrap_or(0);
    if dropped != Some(want_dropped) {
        return Err(format!(
            "profile dropped_executions {}, expected {want_dropped}",
            json["dropped_executions"]
        ));
    }
    Ok(())
}

impl Context<'_> {
    /// The address of a tensor's memory (`nrt_tensor_get_va`, not traced), or 0 without one.
    fn address_of(&self, tensor: &Option<String>) -> Result<usize, String> {
        let Some(tensor) = tensor else { return Ok(0) };
        self.raw
            .tensor_get_va(label(&self.tensors, tensor, "tensor")?)
            .map_err(|err| format!("nrt_tensor_get_va of {tensor}: {err}"))
    }

    /// The `get_instance_info` step.
    pub(super) fn get_instance_info(&mut self, step: &GetInstanceInfoStep) -> StepResult {
        let GetInstanceInfoStep { expect_family, expect_size, expect_arch_name, expect } = step;
        let info = self.runtime.get_instance_info();
        check_status(&info, expect)?;
        let Ok(info) = info else { return Ok(()) };
        let got = (info.family, info.size, info.arch_name.as_str());
        let want = (
            expect_family.unwrap_or(info.family),
            expect_size.unwrap_or(info.size),
            expect_arch_name.as_deref().unwrap_or(&info.arch_name),
        );
        if got == want {
            Ok(())
        } else {
            Err(format!("instance (family, size, arch_name) {got:?}, expected {want:?}"))
        }
    }

    /// A step's optional file, inside the run's folder.
    fn run_path(&self, relative: &Option<String>) -> Result<Option<PathBuf>, String> {
        relative.as_deref().map(|r| self.folder.join(r)).transpose()
    }

    /// Checks the profile a step promises, if it promises one.
    fn expected_profile(&self, want: &Option<ProfileExpectation>) -> StepResult {
        want.as_ref().map_or(Ok(()), |want| check_profile(&self.folder, want))
    }

    /// The `profile_start` step.
    pub(super) fn profile_start(&mut self, step: &ProfileStartStep) -> StepResult {
        let ProfileStartStep { model, file, expect } = step;
        let model = label(&self.models, model, "model")?;
        check_status(&self.runtime.profile_start(model, self.run_path(file)?.as_deref()), expect)
    }

    /// The `profile_stop` step.
    pub(super) fn profile_stop(&mut self, step: &ProfileStopStep) -> StepResult {
        let ProfileStopStep { file, expect_profile, expect } = step;
        check_status(&self.runtime.profile_stop(self.run_path(file)?.as_deref()), expect)?;
        self.expected_profile(expect_profile)
    }

    /// The `profile_continuous_start` step.
    pub(super) fn profile_continuous_start(
        &mut self,
        step: &ProfileContinuousStartStep,
    ) -> StepResult {
        check_status(&self.runtime.profile_continuous_start(), &step.expect)
    }

    /// The `profile_continuous_save` step.
    pub(super) fn profile_continuous_save(
        &mut self,
        step: &ProfileContinuousSaveStep,
    ) -> StepResult {
        let ProfileContinuousSaveStep { vnc, dir, expect_profile, expect } = step;
        let dir = self.folder.join(dir)?;
        check_status(&self.runtime.profile_continuous_save(*vnc, &dir), expect)?;
        self.expected_profile(expect_profile)
    }

    /// The `profile_continuous_stop` step.
    pub(super) fn profile_continuous_stop(
        &mut self,
        step: &ProfileContinuousStopStep,
    ) -> StepResult {
        check_status(&self.runtime.profile_continuous_stop(), &step.expect)
    }

    /// The `inspect_begin_with_options` step.
    pub(super) fn inspect_begin_with_options(
        &mut self,
        step: &InspectBeginWithOptionsStep,
    ) -> StepResult {
        let InspectBeginWithOptionsStep {
            session_id,
            dir,
            enable_inspect,
            enable_inspect_on_fail,
            expect,
        } = step;
        let config = abi::runtime::InspectConfig {
            session_id: *session_id,
            output_dir: self.run_path(dir)?,
            enable_inspect: *enable_inspect,
            enable_inspect_on_fail: *enable_inspect_on_fail,
        };
        check_status(&self.runtime.inspect_begin_with_options(&config), expect)
    }

    /// The `inspect_stop` step.
    pub(super) fn inspect_stop(&mut self, step: &InspectStopStep) -> StepResult {
        let InspectStopStep { expect_profile, expect } = step;
        check_status(&self.runtime.inspect_stop(), expect)?;
        self.expected_profile(expect_profile)
    }

    /// The `get_dmabuf_fd` step.
    pub(super) fn get_dmabuf_fd(&mut self, step: &GetDmabufFdStep) -> StepResult {
        let GetDmabufFdStep { tensor, size, expect } = step;
        let address = self.address_of(tensor)?;
        check_status(&self.runtime.get_dmabuf_fd(address, *size), expect)
    }

    /// The `get_hbm_mmap_va` step.
    pub(super) fn get_hbm_mmap_va(&mut self, step: &GetHbmMmapVaStep) -> StepResult {
        let GetHbmMmapVaStep { device_id, hbm_idx, expect } = step;
        check_status(&self.runtime.get_hbm_mmap_va(*device_id, *hbm_idx), expect)
    }

    /// The `get_attached_efa_bdf` step.
    pub(super) fn get_attached_efa_bdf(&mut self, step: &GetAttachedEfaBdfStep) -> StepResult {
        let GetAttachedEfaBdfStep { tensor, expect } = step;
        let address = self.address_of(tensor)?;
        check_status(&self.runtime.get_attached_efa_bdf(address), expect)
    }

    /// The `trace_start` step.
    pub(super) fn trace_start(&mut self, step: &TraceStartStep) -> StepResult {
        let TraceStartStep { trace_mem, expect } = step;
        check_status(&self.runtime.trace_start(trace_mem.unwrap_or(false)), expect)
    }

    /// The `trace_stop` step.
    pub(super) fn trace_stop(&mut self, step: &TraceStopStep) -> StepResult {
        let TraceStopStep { file, expect_profile, expect } = step;
        check_status(&self.runtime.trace_stop(self.run_path(file)?.as_deref()), expect)?;
        self.expected_profile(expect_profile)
    }

    /// The `nrta_get_completion_handle` step.
    pub(super) fn nrta_get_completion_handle(
        &mut self,
        step: &NrtaGetCompletionHandleStep,
    ) -> StepResult {
        let NrtaGetCompletionHandleStep { request, expect } = step;
        let seq = label(&self.requests.seqs, request, "async request")?;
        // Dropping the descriptor closes it; whether it polls readable is checked by the
        // simulator's and the C programs' tests (poll needs the C library).
        check_status(&self.runtime.nrta_get_completion_handle(seq), expect)
    }
}
