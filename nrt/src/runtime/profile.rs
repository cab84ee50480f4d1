//! The calls of `nrt/nrt_profile.h` on [`NrtRuntime`], through the loaded library.

use std::path::Path;

use abi::functions::LibnrtFunction;
use abi::runtime::{InspectConfig, ModelId, NrtError, RuntimeProfile};

use super::{NrtRuntime, c_path, check, optional};

impl RuntimeProfile for NrtRuntime {
    fn profile_start(&self, model: ModelId, filename: Option<&Path>) -> Result<(), NrtError> {
        let function = LibnrtFunction::nrt_profile_start;
        let filename = filename.map(|path| c_path(function, path)).transpose()?;
        let code =
            optional(function, self.model(model)?.profile_start(filename.as_deref()).map(Ok))?;
        check(function, code)
    }

    fn profile_stop(&self, filename: Option<&Path>) -> Result<(), NrtError> {
        let function = LibnrtFunction::nrt_profile_stop;
        let filename = filename.map(|path| c_path(function, path)).transpose()?;
        let code = optional(function, self.library.profile_stop(filename.as_deref()).map(Ok))?;
        check(function, code)
    }

    fn profile_continuous_start(&self) -> Result<(), NrtError> {
        let function = LibnrtFunction::nrt_profile_continuous_start;
        let code = optional(function, self.library.profile_continuous_start().map(Ok))?;
        check(function, code)
    }

    fn profile_continuous_save(&self, vnc: u32, output_dir: &Path) -> Result<(), NrtError> {
        let function = LibnrtFunction::nrt_profile_continuous_save;
        let dir = c_path(function, output_dir)?;
        let code = optional(function, self.library.profile_continuous_save(vnc, &dir).map(Ok))?;
        check(function, code)
    }

    fn profile_continuous_stop(&self) -> Result<(), NrtError> {
        let function = LibnrtFunction::nrt_profile_continuous_stop;
        let code = optional(function, self.library.profile_continuous_stop().map(Ok))?;
        check(function, code)
    }

    fn inspect_begin_with_options(&self, config: &InspectConfig) -> Result<(), NrtError> {
        let function = LibnrtFunction::nrt_inspect_begin_with_options;
        let dir = config.output_dir.as_deref().map(|dir| c_path(function, dir)).transpose()?;
        let begun = self.library.inspect_begin_with_options(
            config.session_id,
            dir.as_deref(),
            config.enable_inspect,
            config.enable_inspect_on_fail,
        );
        let code = optional(function, begun.map(Ok))?;
        check(function, code)
    }

    fn inspect_stop(&self) -> Result<(), NrtError> {
        let function = LibnrtFunction::nrt_inspect_stop;
        let code = optional(function, self.library.inspect_stop().map(Ok))?;
        check(function, code)
    }
}
