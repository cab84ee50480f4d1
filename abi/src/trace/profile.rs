//! How [`TracingRuntime`] forwards and records the calls of `nrt/nrt_profile.h`.

use std::path::Path;

use super::{TracingRuntime, path_arg};
use crate::functions::LibnrtFunction;
use crate::runtime::{InspectConfig, ModelId, NrtError, RuntimeProfile};

impl RuntimeProfile for TracingRuntime {
    fn profile_start(&self, model: ModelId, filename: Option<&Path>) -> Result<(), NrtError> {
        let result = self.inner.profile_start(model, filename);
        self.unit(result, |names| {
            format!(
                "{}({}, {})",
                LibnrtFunction::nrt_profile_start.trace_name(),
                names.model(model),
                path_arg(filename)
            )
        })
    }

    fn profile_stop(&self, filename: Option<&Path>) -> Result<(), NrtError> {
        let result = self.inner.profile_stop(filename);
        self.unit(result, |_| {
            format!("{}({})", LibnrtFunction::nrt_profile_stop.trace_name(), path_arg(filename))
        })
    }

    fn profile_continuous_start(&self) -> Result<(), NrtError> {
        let result = self.inner.profile_continuous_start();
        self.unit(result, |_| {
            format!("{}(NULL)", LibnrtFunction::nrt_profile_continuous_start.trace_name())
        })
    }

    fn profile_continuous_save(&self, vnc: u32, output_dir: &Path) -> Result<(), NrtError> {
        let result = self.inner.profile_continuous_save(vnc, output_dir);
        self.unit(result, |_| {
            format!("{}({vnc}, <path>)", LibnrtFunction::nrt_profile_continuous_save.trace_name())
        })
    }

    fn profile_continuous_stop(&self) -> Result<(), NrtError> {
        let result = self.inner.profile_continuous_stop();
        self.unit(result, |_| {
            format!("{}()", LibnrtFunction::nrt_profile_continuous_stop.trace_name())
        })
    }

    fn inspect_begin_with_options(&self, config: &InspectConfig) -> Result<(), NrtError> {
        let result = self.inner.inspect_begin_with_options(config);
        self.unit(result, |_| {
            format!(
                "{}(session_id {:?}, output_dir {}, enable_inspect {:?}, enable_inspect_on_fail {:?})",
                LibnrtFunction::nrt_inspect_begin_with_options.trace_name(),
                config.session_id,
                path_arg(config.output_dir.as_deref()),
                config.enable_inspect,
                config.enable_inspect_on_fail
            )
        })
    }

    fn inspect_stop(&self) -> Result<(), NrtError> {
        let result = self.inner.inspect_stop();
        self.unit(result, |_| format!("{}()", LibnrtFunction::nrt_inspect_stop.trace_name()))
    }
}
