//! The calls of `nrt/nrt_profile.h` on [`SimRuntime`].

use abi::functions::LibnrtFunction;
use abi::runtime::{InspectConfig, ModelId, NrtError, RuntimeProfile};

use super::SimRuntime;

impl RuntimeProfile for SimRuntime {
    fn profile_start(
        &self,
        model: ModelId,
        filename: Option<&std::path::Path>,
    ) -> Result<(), NrtError> {
        self.enter(LibnrtFunction::nrt_profile_start)?;
        self.model(model)?;
        self.profiling.start_model(&self.events, model.0, filename)
    }

    fn profile_stop(&self, filename: Option<&std::path::Path>) -> Result<(), NrtError> {
        self.enter(LibnrtFunction::nrt_profile_stop)?;
        self.profiling.stop_model(&self.events, filename)
    }

    fn profile_continuous_start(&self) -> Result<(), NrtError> {
        self.enter(LibnrtFunction::nrt_profile_continuous_start)?;
        self.profiling.start_continuous(&self.events)
    }

    fn profile_continuous_save(
        &self,
        vnc: u32,
        output_dir: &std::path::Path,
    ) -> Result<(), NrtError> {
        self.enter(LibnrtFunction::nrt_profile_continuous_save)?;
        self.profiling.save_continuous(&self.events, vnc, output_dir)
    }

    fn profile_continuous_stop(&self) -> Result<(), NrtError> {
        self.enter(LibnrtFunction::nrt_profile_continuous_stop)?;
        self.profiling.stop_continuous()
    }

    /// With inspection and inspection on failure both off (a new config's defaults) nothing is
    /// recorded, as the public header says; otherwise every launch until the stop, into the
    /// config's folder (default `./output`) as its session (default 1).
    fn inspect_begin_with_options(&self, config: &InspectConfig) -> Result<(), NrtError> {
        self.enter(LibnrtFunction::nrt_inspect_begin_with_options)?;
        if !config.enable_inspect.unwrap_or(false)
            && !config.enable_inspect_on_fail.unwrap_or(false)
        {
            return Ok(());
        }
        let dir = config.output_dir.clone().unwrap_or_else(|| "./output".into());
        self.profiling.begin_inspect(&self.events, &dir, config.session_id.unwrap_or(1))
    }

    fn inspect_stop(&self) -> Result<(), NrtError> {
        self.enter(LibnrtFunction::nrt_inspect_stop)?;
        self.profiling.stop_inspect(&self.events)
    }
}

impl SimRuntime {
    /// `nrt_inspect_begin`: records every launch until `nrt_inspect_stop`, into `output_dir`
    /// as session 1. Not a [`Runtime`](abi::runtime::Runtime) method: libnrt takes the folder from
    /// `NEURON_RT_INSPECT_OUTPUT_DIR`, an environment the C layer reads.
    ///
    /// # Errors
    /// [`NrtStatus::Invalid`](abi::status::NrtStatus::Invalid) while a profile is recorded; the
    /// lifecycle statuses.
    pub fn inspect_begin(&self, output_dir: &std::path::Path) -> Result<(), NrtError> {
        self.enter(LibnrtFunction::nrt_inspect_begin)?;
        self.profiling.begin_inspect(&self.events, output_dir, 1)
    }
}
