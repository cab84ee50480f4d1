//! The profilers of `nrt_profile.h`: which one runs, and the profile files they write.
//!
//! Design choices:
//! - **One profiler at a time.** A model profile (`nrt_profile_start`), continuous profiling,
//!   an inspect session and the legacy trace (`nrt_trace_start`) all read the one event stream ([`crate::sys_trace::EventLog`]), so
//!   starting one while another runs is `NRT_INVALID`, whichever kind it is.
//! - **The files are the simulator's documented format** (`docs/sim-trace-format.md`); a folder
//!   that does not exist is created, and a file that cannot be written is `NRT_FAILURE` with the
//!   path and the system's reason.
//! - **Only the state lives here.** The lifecycle gate and the fault plan are checked by the
//!   caller (`SimRuntime`'s `Runtime` methods), as for every other call.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use abi::runtime::NrtError;
use abi::status::NrtStatus;

use crate::sys_trace::EventLog;

/// What the profiler is doing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
enum Mode {
    #[default]
    Off,
    /// `nrt_profile_start`: the file named at start, if any.
    Model(Option<PathBuf>),
    /// `nrt_profile_continuous_start`.
    Continuous,
    /// An inspect session: its output folder and id.
    Inspect(PathBuf, i32),
    /// The legacy trace of `nrt_experimental.h` (`nrt_trace_start`).
    Legacy,
}

/// The profiler state of one simulated runtime.
#[derive(Debug, Default)]
pub(crate) struct Profiling {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    mode: Mode,
    /// Continuous saves so far, numbering their files.
    saves: u64,
}

fn invalid(detail: impl Into<String>) -> NrtError {
    NrtError::new(NrtStatus::Invalid, detail)
}

impl Profiling {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts a model profile of `model` (`None`: every model, for inspect sessions).
    fn start(&self, events: &EventLog, mode: Mode, model: Option<u64>) -> Result<(), NrtError> {
        let mut state = self.state();
        if state.mode != Mode::Off {
            return Err(invalid("a profile is already being recorded, expected it stopped first"));
        }
        if mode != Mode::Continuous {
            events.start_profile(model).map_err(|err| invalid(err.to_string()))?;
        }
        state.mode = mode;
        Ok(())
    }

    /// `nrt_profile_start` of the model with this id.
    pub(crate) fn start_model(
        &self,
        events: &EventLog,
        model: u64,
        filename: Option<&Path>,
    ) -> Result<(), NrtError> {
        self.start(events, Mode::Model(filename.map(Path::to_path_buf)), Some(model))
    }

    /// `nrt_profile_stop`: the profile goes to `filename`, or to the file named at start.
    pub(crate) fn stop_model(
        &self,
        events: &EventLog,
        filename: Option<&Path>,
    ) -> Result<(), NrtError> {
        let mut state = self.state();
        let Mode::Model(started_with) = &state.mode else {
            return Err(invalid(
                "no model profile is being recorded, expected nrt_profile_start first",
            ));
        };
        let path =
            filename.map(Path::to_path_buf).or_else(|| started_with.clone()).ok_or_else(|| {
                invalid("no profile file was named at start or stop, expected one of them")
            })?;
        state.mode = Mode::Off;
        drop(state);
        let json = events.stop_profile().map_err(|err| invalid(err.to_string()))?;
        write_profile(&path, &json)
    }

    /// `nrt_profile_continuous_start`.
    pub(crate) fn start_continuous(&self, events: &EventLog) -> Result<(), NrtError> {
        self.start(events, Mode::Continuous, None)
    }

    /// `nrt_profile_continuous_save`: the latest launch on `vnc` into
    /// `<output_dir>/nrtsim-profile-vnc<VNC>-<N>.json`.
    pub(crate) fn save_continuous(
        &self,
        events: &EventLog,
        vnc: u32,
        output_dir: &Path,
    ) -> Result<(), NrtError> {
        let mut state = self.state();
        if state.mode != Mode::Continuous {
            return Err(invalid("continuous profiling is not started, expected it started first"));
        }
        let json = events.latest_profile(vnc).ok_or_else(|| {
            invalid(format!("neuron core {vnc} has not executed a model, expected a launch first"))
        })?;
        state.saves += 1;
        let path = output_dir.join(format!("nrtsim-profile-vnc{vnc}-{}.json", state.saves));
        drop(state);
        write_profile(&path, &json)
    }

    /// `nrt_profile_continuous_stop`.
    pub(crate) fn stop_continuous(&self) -> Result<(), NrtError> {
        let mut state = self.state();
        if state.mode != Mode::Continuous {
            return Err(invalid("continuous profiling is not started, expected it started first"));
        }
        state.mode = Mode::Off;
        Ok(())
    }

    /// `nrt_inspect_begin*`: every launch until the stop, for session `session_id`.
    pub(crate) fn begin_inspect(
        &self,
        events: &EventLog,
        output_dir: &Path,
        session_id: i32,
    ) -> Result<(), NrtError> {
        self.start(events, Mode::Inspect(output_dir.to_path_buf(), session_id), None)
    }

    /// `nrt_inspect_stop`: writes `<output dir>/nrtsim-inspect-session<ID>.json`.
    pub(crate) fn stop_inspect(&self, events: &EventLog) -> Result<(), NrtError> {
        let mut state = self.state();
        let Mode::Inspect(dir, session) = &state.mode else {
            return Err(invalid("inspect profiling is not started, expected it begun first"));
        };
        let path = dir.join(format!("nrtsim-inspect-session{session}.json"));
        state.mode = Mode::Off;
        drop(state);
        let json = events.stop_profile().map_err(|err| invalid(err.to_string()))?;
        write_profile(&path, &json)
    }
}

impl Profiling {
    /// `nrt_trace_start`: every launch of every model until `nrt_trace_stop`.
    pub(crate) fn start_legacy(&self, events: &EventLog) -> Result<(), NrtError> {
        self.start(events, Mode::Legacy, None)
    }

    /// `nrt_trace_stop`: writes what was recorded since the start to `filename`.
    pub(crate) fn stop_legacy(
        &self,
        events: &EventLog,
        filename: Option<&Path>,
    ) -> Result<(), NrtError> {
        let mut state = self.state();
        if state.mode != Mode::Legacy {
            return Err(invalid("the legacy trace is not started, expected nrt_trace_start first"));
        }
        let path = filename
            .ok_or_else(|| invalid("nrt_trace_stop needs a file name, expected one, got NULL"))?;
        state.mode = Mode::Off;
        drop(state);
        let json = events.stop_profile().map_err(|err| invalid(err.to_string()))?;
        write_profile(path, &json)
    }
}

/// Writes a profile file, creating its folder.
fn write_profile(path: &Path, json: &str) -> Result<(), NrtError> {
    path.parent()
        .filter(|dir| !dir.as_os_str().is_empty())
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(path, json))
        .map_err(|err| {
            NrtError::new(
                NrtStatus::Failure,
                format!("cannot write the profile {}: {err}", path.display()),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_profiler_runs_at_a_time() {
        let events = EventLog::new();
        let profiling = Profiling::default();
        profiling.start_continuous(&events).unwrap();
        let err = profiling.start_model(&events, 1, None).unwrap_err();
        assert_eq!(err.status, NrtStatus::Invalid);
        assert_eq!(profiling.stop_model(&events, None).unwrap_err().status, NrtStatus::Invalid);
        assert_eq!(profiling.stop_inspect(&events).unwrap_err().status, NrtStatus::Invalid);
        profiling.stop_continuous().unwrap();
        assert_eq!(profiling.stop_continuous().unwrap_err().status, NrtStatus::Invalid);
    }

    #[test]
    fn a_stop_without_any_file_name_is_invalid_and_ends_nothing() {
        let events = EventLog::new();
        let profiling = Profiling::default();
        profiling.start_model(&events, 1, None).unwrap();
        assert_eq!(profiling.stop_model(&events, None).unwrap_err().status, NrtStatus::Invalid);
        assert!(events.profiling(), "the profile is still recorded");
    }

    #[test]
    fn an_unwritable_profile_is_failure_naming_the_path() {
        let events = EventLog::new();
        let profiling = Profiling::default();
        let file = std::env::temp_dir().join(format!("nrtsim-profile-{}", std::process::id()));
        std::fs::write(&file, b"a file, not a folder").unwrap();
        let inside = file.join("profile.json");
        profiling.start_model(&events, 1, Some(&inside)).unwrap();
        let err = profiling.stop_model(&events, None).unwrap_err();
        std::fs::remove_file(&file).unwrap();
        assert_eq!(err.status, NrtStatus::Failure);
        assert!(err.detail.contains("profile.json"), "{}", err.detail);
    }
}
