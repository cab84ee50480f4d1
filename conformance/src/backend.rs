//! The backends a vector runs on: `sim` (the simulator in this process), `capi` (our
//! real-libnrt backend, `NrtRuntime`, over the simulator's `libnrt.so.1`) and `nrt` (the same
//! backend over the real libnrt of a Neuron instance).
//!
//! libnrt is one runtime per process, configured from the environment, and a vector needs a
//! fresh one with its own settings; so the two libnrt backends run each vector in a child process
//! (`nrtsim run-vector`, hidden) that opens the library, runs the steps and prints the trace as
//! JSON, through the one harness of [`sim::child`]. Spawning costs a few milliseconds, which is
//! what isolation is worth here.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use abi::runtime::NrtError;
use abi::runtime::prelude::*;
use nrt::{LibrarySource, NrtLoadError, NrtRuntime, OpenOptions};
use sim::{FaultPlan, FaultPlanError, SimConfig, SimConfigError, SimRuntime, child};

use crate::runner::{self, RunOutput};
use crate::spec::SimSettings;
use crate::vector::Vector;

/// Default number of simulated NeuronCores for a vector.
pub const DEFAULT_CORES: u32 = 2;
/// Default simulated HBM per NeuronCore for a vector.
pub const DEFAULT_HBM_BYTES: u64 = 64 << 20;

/// Something that runs a vector on a fresh runtime.
pub trait Backend: Send + Sync {
    /// `sim`, `capi` or `nrt`.
    fn name(&self) -> &'static str;

    /// Runs the vector's steps on a fresh runtime configured for it.
    fn run(&self, vector: &Vector) -> RunOutput;

    /// What `nrt_get_version` says on this backend, as `major.minor.patch.maintenance (detail)
    /// git-hash`, for the report; `None` when it cannot be asked.
    fn runtime_version(&self) -> Option<String> {
        None
    }
}

/// A version as reports show it: `2.23.1.0 (detail) githash`, the parts that are empty left out.
pub fn version_text(version: &abi::runtime::NrtVersion) -> String {
    let mut text =
        format!("{}.{}.{}.{}", version.major, version.minor, version.patch, version.maintenance);
    if !version.detail.is_empty() {
        text.push_str(&format!(" ({})", version.detail));
    }
    if !version.git_hash.is_empty() {
        text.push_str(&format!(" {}", version.git_hash));
    }
    text
}

/// Why a backend cannot run vectors.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// A vector's fault plan does not parse.
    #[error("fault plan {plan:?}: {source}")]
    FaultPlan {
        /// The plan as written.
        plan: String,
        /// What is wrong with it.
        source: FaultPlanError,
    },
    /// The simulator refused its configuration.
    #[error("cannot configure the simulator: {0}")]
    SimConfig(#[from] SimConfigError),
    /// `--device` without a real libnrt that opens.
    #[error("--device needs the real libnrt, and it could not be opened: {0}")]
    NoLibnrt(#[source] NrtLoadError),
    /// `--device` where libnrt sees no NeuronCore.
    #[error("--device needs a NeuronCore, and libnrt reports none")]
    NoNeuronCore,
    /// `--device` where libnrt cannot count its NeuronCores.
    #[error("--device could not count NeuronCores: {0}")]
    CountNeuronCores(#[source] NrtError),
    /// The simulator's library was not built.
    #[error(
        "no libnrtsim_capi.so in {}: build it with `cargo build -p nrtsim-capi` \
         (`cargo xtask conformance` does)",
        .profile_dir.display()
    )]
    CapiNotBuilt {
        /// Where cargo puts it.
        profile_dir: PathBuf,
    },
    /// A file of the staged library could not be written.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A backend name that is not one.
    #[error("unknown backend {0:?}: expected sim, capi or nrt")]
    Unknown(String),
}

fn failed(message: String) -> RunOutput {
    RunOutput { trace: Vec::new(), failure: Some(message) }
}

/// The simulator's configuration for a vector's settings.
///
/// # Errors
/// [`BackendError::FaultPlan`] for a fault plan that does not parse.
pub fn sim_config(settings: &SimSettings) -> Result<SimConfig, BackendError> {
    let mut config = SimConfig {
        n_cores: settings.cores.unwrap_or(DEFAULT_CORES),
        hbm_bytes_per_core: settings.hbm_bytes.unwrap_or(DEFAULT_HBM_BYTES),
        numerical_errors: settings.numerical_errors.unwrap_or(false),
        warnings_to_stderr: false,
        ..SimConfig::default()
    };
    if let Some(faults) = &settings.faults {
        config.fault_plan = FaultPlan::parse(faults)
            .map_err(|source| BackendError::FaultPlan { plan: faults.clone(), source })?;
    }
    if let Some(instance) = &settings.instance {
        config.instance = instance.clone();
    }
    // As libnrt reads them: the visible cores win over the count, whose 0 means all.
    config.core_scope = match (settings.visible_cores, settings.num_cores) {
        (Some(visible), _) => visible,
        (None, Some(0) | None) => sim::config::CoreScope::All,
        (None, Some(count)) => sim::config::CoreScope::Count(count),
    };
    if let Some(ms) = settings.exec_timeout_ms {
        config.exec_timeout = Some(std::time::Duration::from_millis(ms));
    }
    if let Some(budget) = settings.work_budget {
        config.work_budget = Some(budget);
    }
    if let Some(ms) = settings.launch_timeout_ms {
        config.launch_timeout = Some(std::time::Duration::from_millis(ms));
    }
    Ok(config)
}

/// The simulator, in this process.
#[derive(Debug, Default)]
pub struct SimBackend;

impl Backend for SimBackend {
    fn name(&self) -> &'static str {
        "sim"
    }

    fn run(&self, vector: &Vector) -> RunOutput {
        match sim_config(&vector.case.sim).and_then(|config| Ok(SimRuntime::new_shared(config)?)) {
            Ok(runtime) if vector.recorded => crate::replay::run_recorded(vector, runtime),
            Ok(runtime) => runner::run_on(vector, runtime),
            Err(error) => failed(error.to_string()),
        }
    }

    fn runtime_version(&self) -> Option<String> {
        let runtime = SimRuntime::new_shared(SimConfig::default()).ok()?;
        runtime.get_version().ok().map(|v| version_text(&v))
    }
}

/// `NrtRuntime` over a libnrt, one child process per vector.
#[derive(Debug, Clone)]
pub struct LibnrtBackend {
    name: &'static str,
    /// The `nrtsim` executable that runs a vector (`nrtsim run-vector`).
    exe: PathBuf,
    /// The library to open; `None` searches as `NrtRuntime::open` does.
    library: Option<PathBuf>,
    /// What the library's `nrt_get_version` said, asked once when the backend was opened.
    version: Option<String>,
}

impl LibnrtBackend {
    /// The `capi` backend: the simulator's `libnrt.so.1` at `library`.
    pub fn capi(exe: PathBuf, library: PathBuf) -> LibnrtBackend {
        // The library is the simulator's, behind the C ABI: its version is the simulator's.
        let version = SimBackend.runtime_version();
        LibnrtBackend { name: "capi", exe, library: Some(library), version }
    }

    /// The `nrt` backend: the real libnrt, found as `NrtRuntime::open` finds it.
    pub fn device(exe: PathBuf) -> LibnrtBackend {
        LibnrtBackend { name: "nrt", exe, library: None, version: None }
    }

    /// [`LibnrtBackend::device`] that reports `version` as the device's runtime version.
    pub fn device_with_version(exe: PathBuf, version: Option<String>) -> LibnrtBackend {
        LibnrtBackend { version, ..LibnrtBackend::device(exe) }
    }
}

impl Backend for LibnrtBackend {
    fn name(&self) -> &'static str {
        self.name
    }

    fn runtime_version(&self) -> Option<String> {
        self.version.clone()
    }

    fn run(&self, vector: &Vector) -> RunOutput {
        let mut command = Command::new(&self.exe);
        command
            .arg("run-vector")
            .arg("--vectors")
            .arg(vector.dir.parent().and_then(Path::parent).unwrap_or(&vector.dir));
        if let Some(library) = &self.library {
            command.arg("--library").arg(library);
            // The simulator behind the C ABI reads its configuration from the environment: the
            // same configuration the `sim` backend builds in process.
            match sim_config(&vector.case.sim) {
                Ok(config) => child::simulate(&mut command, &config),
                Err(message) => {
                    return failed(format!("cannot configure the simulator: {message}"));
                }
            };
        } else if let Ok(config) = sim_config(&vector.case.sim) {
            // A real libnrt reads the core scope from its own variables, so a vector that sets
            // one gets it there too; a vector that sets none leaves this process's values.
            let libnrt_own = [sim::config::VISIBLE_CORES_ENV, sim::config::NUM_CORES_ENV];
            for (name, value) in sim::config::to_env(&config) {
                if libnrt_own.contains(&name.as_str()) && !value.is_empty() {
                    command.env(name, value);
                }
            }
        }
        command.arg(&vector.name);
        child::run(&mut command, &vector.name)
    }
}

/// Opens `NrtRuntime` for a child run: on `library`, or by the normal search; not initialised
/// (the runner calls `init` as the vector says).
///
/// # Errors
/// The typed load error, naming every place tried.
pub fn open_libnrt(library: Option<&Path>) -> Result<Arc<dyn Runtime>, NrtLoadError> {
    let options = OpenOptions {
        library: library.map_or(LibrarySource::Search, |p| LibrarySource::Path(p.to_path_buf())),
        initialize: false,
        dtype_numbering: None,
    };
    NrtRuntime::open_with(&options).map(|r| Arc::new(r) as Arc<dyn Runtime>)
}

/// Checks that this machine has a real libnrt with at least one NeuronCore, for `--device`,
/// and returns what its `nrt_get_version` says (`None` when that call fails).
///
/// # Errors
/// What is missing: the library ([`BackendError::NoLibnrt`], with every path tried) or the
/// NeuronCores.
pub fn check_device() -> Result<Option<String>, BackendError> {
    let options =
        OpenOptions { library: LibrarySource::Search, initialize: true, dtype_numbering: None };
    let runtime = NrtRuntime::open_with(&options).map_err(BackendError::NoLibnrt)?;
    match runtime.get_total_vnc_count() {
        Ok(0) => Err(BackendError::NoNeuronCore),
        Ok(_) => Ok(runtime.get_version().ok().map(|v| version_text(&v))),
        Err(error) => Err(BackendError::CountNeuronCores(error)),
    }
}

/// The simulator's `libnrt.so.1` for the `capi` backend: the `libnrtsim_capi.so` cargo built in
/// `profile_dir` (`target/debug`), staged as `profile_dir/libnrt/libnrt.so.1`.
///
/// # Errors
/// [`BackendError::CapiNotBuilt`], saying how to build it, when it is missing;
/// [`BackendError::Io`] when it cannot be staged.
pub fn stage_capi_library(profile_dir: &Path) -> Result<PathBuf, BackendError> {
    let built = [profile_dir.join("libnrtsim_capi.so"), profile_dir.join("deps/libnrtsim_capi.so")]
        .into_iter()
        .filter_map(|p| std::fs::metadata(&p).and_then(|m| m.modified()).ok().map(|t| (t, p)))
        .max()
        .map(|(_, p)| p)
        .ok_or_else(|| BackendError::CapiNotBuilt { profile_dir: profile_dir.to_path_buf() })?;
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| BackendError::Io { path, source }
    };
    let dir = profile_dir.join("libnrt");
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    let target = dir.join("libnrt.so.1");
    let fresh = |a: &Path, b: &Path| {
        let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
        modified(b).is_some_and(|tb| modified(a).is_some_and(|ta| tb >= ta))
    };
    if !fresh(&built, &target) {
        // Copy beside, then rename, so a concurrent reader never sees half a library. Threads of
        // one process (tests run in parallel) stage at the same time too, so the name is unique
        // per call, not only per process.
        static STAGING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let call = STAGING.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let staged = dir.join(format!(".libnrt.so.1.{}.{call}", std::process::id()));
        std::fs::copy(&built, &staged).map_err(io(&staged))?;
        std::fs::rename(&staged, &target).map_err(io(&target))?;
    }
    Ok(target)
}

/// The backend called `name`; `exe` is the `nrtsim` executable the libnrt backends run vectors
/// with, and `profile_dir` where cargo put the simulator's library.
///
/// # Errors
/// [`BackendError::Unknown`] for an unknown name, or why the backend cannot run here.
pub fn by_name(
    name: &str,
    exe: &Path,
    profile_dir: &Path,
) -> Result<Box<dyn Backend>, BackendError> {
    match name {
        "sim" => Ok(Box::new(SimBackend)),
        "capi" => {
            Ok(Box::new(LibnrtBackend::capi(exe.to_path_buf(), stage_capi_library(profile_dir)?)))
        }
        "nrt" => {
            let version = check_device()?;
            Ok(Box::new(LibnrtBackend::device_with_version(exe.to_path_buf(), version)))
        }
        other => Err(BackendError::Unknown(other.to_owned())),
    }
}
