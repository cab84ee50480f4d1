//! Raw steps of the runtime's and models' lifecycle: init, close, load, unload, execute.

use super::values::framework;
use super::{Context, StepResult, check_status, expect_status, label};
use crate::spec::{CloseStep, ExecuteStep, InitStep, LoadCollectivesStep, LoadStep, UnloadStep};
use crate::vector::NEFF_FILE;

impl Context<'_> {
    /// The `init` step.
    pub(super) fn init(&mut self, step: &InitStep) -> StepResult {
        let rt = self.runtime.clone();
        let InitStep { framework: fw, expect } = step;
        check_status(&rt.init(framework(*fw), "", ""), expect)
    }

    /// The `close` step.
    pub(super) fn close(&mut self, _step: &CloseStep) -> StepResult {
        self.runtime.close();
        Ok(())
    }

    /// The `load` step.
    pub(super) fn load(&mut self, step: &LoadStep) -> StepResult {
        let rt = self.runtime.clone();
        let LoadStep { neff, vnc, vnc_count, label: name, expect } = step;
        let bytes = self.file(neff, NEFF_FILE)?;
        let result = rt.load(&bytes, vnc.unwrap_or(-1), vnc_count.unwrap_or(1));
        check_status(&result, expect)?;
        if let (Ok(model), Some(name)) = (result, name) {
            self.models.insert(name.clone(), model);
        }
        Ok(())
    }

    /// The `load_collectives` step.
    pub(super) fn load_collectives(&mut self, step: &LoadCollectivesStep) -> StepResult {
        let rt = self.runtime.clone();
        let LoadCollectivesStep {
            neff,
            vnc,
            vnc_count,
            ctx_device_id,
            ctx_device_count,
            label: name,
            expect,
        } = step;
        let bytes = self.file(neff, NEFF_FILE)?;
        let result = rt.load_collectives(
            &bytes,
            vnc.unwrap_or(-1),
            vnc_count.unwrap_or(1),
            *ctx_device_id,
            *ctx_device_count,
        );
        check_status(&result, expect)?;
        if let (Ok(model), Some(name)) = (result, name) {
            self.models.insert(name.clone(), model);
        }
        Ok(())
    }

    /// The `unload` step.
    pub(super) fn unload(&mut self, step: &UnloadStep) -> StepResult {
        let rt = self.runtime.clone();
        let UnloadStep { model, expect } = step;
        check_status(&rt.unload(label(&self.models, model, "model")?), expect)
    }

    /// The `execute` step.
    pub(super) fn execute(&mut self, step: &ExecuteStep) -> StepResult {
        let rt = self.runtime.clone();
        let ExecuteStep { model, inputs, outputs, repeat, expect } = step;
        let model = label(&self.models, model, "model")?;
        let inputs = label(&self.sets, inputs, "tensor set")?;
        let outputs = label(&self.sets, outputs, "tensor set")?;
        let result = match repeat {
            Some(count) => rt.execute_repeat(model, inputs, outputs, *count),
            None => rt.execute(model, inputs, outputs),
        };
        let got = match &result {
            Ok(status) => *status,
            Err(error) => error.status,
        };
        expect_status(got, expect)
    }
}
