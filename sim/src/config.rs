//! How a [`crate::SimRuntime`] is built: the simulated machine and the behaviour switches.
//!
//! Design choices:
//! - **One mapping between the environment and a configuration**: [`from_nrtsim_env`] reads the
//!   `NRTSIM_*` variables (and libnrt's two NaN switches) through a lookup function, and
//!   [`to_env`] is its inverse, the variables a parent gives a child process so that the child's
//!   simulator (the C library) is the machine the parent describes. Both list the fields in one
//!   order, one entry each. [`SimConfig::from_env`] is the lookup over this process's environment;
//!   [`SimConfig::default`] never reads it, so tests are deterministic whatever the shell
//!   exports, and a field set after `from_env` overrides what the environment said.
//! - **Numerical-error reporting follows libnrt ≥ 2.27** (docs/abi-facts.md §3): on only when
//!   `NEURON_FAIL_ON_NAN=1` or `NEURON_RT_NUMERICAL_ERRORS_VERBOSITY=critical`; any other value,
//!   or none, means off. The decision is the pure function [`numerical_errors_from_env_values`].
//! - **Core scoping follows libnrt's documented variables**: `NEURON_RT_VISIBLE_CORES` (a core,
//!   a range `a-b`, or a list of them that must be contiguous and increasing) wins over
//!   `NEURON_RT_NUM_CORES` (a count, 0 meaning all); the process sees only those cores,
//!   numbered from 0. A syntax error is a [`ConfigError`]; a core the machine does not have is
//!   known only against [`SimConfig::n_cores`], so [`CoreScope::resolve`] reports it and
//!   `nrt_init` fails with it.
//! - **The imitated runtime release decides the `nrt_dtype_t` numbering** reported by the C layer,
//!   as the public headers of that release number it (legacy up to 2.27, hardware from 2.28,
//!   `docs/dtype-numbering.md`); `NRTSIM_DTYPE_NUMBERING` overrides it. Both are fields, so a
//!   harness can imitate an old library on purpose.
//! - **A launch is bounded as libnrt bounds it**, by its execution timeout
//!   (`NEURON_RT_EXEC_TIMEOUT`, 30 s by default), measured in the device time the interpreter
//!   estimates at a NeuronCore's peak rates, so a launch a device finishes in time always runs
//!   and one no device could finish fails with `NRT_TIMEOUT` as it would on the device. An
//!   optional work budget (`NRTSIM_WORK_BUDGET`) and wall-clock limit
//!   (`NRTSIM_LAUNCH_TIMEOUT_MS`) bound it further, with the same status (see `docs/limits.md`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use abi::dtype::DtypeNumbering;

use crate::fault::{FaultPlan, FaultPlanError};

/// The environment variable naming HLO for NEFFs that carry none: a file (used for every such
/// NEFF), or a directory holding `<sha256 of the NEFF bytes, lowercase hex>.hlo.pb` (or `.hlo`
/// for text).
pub const HLO_ENV: &str = "NRTSIM_HLO";

/// Where HLO comes from for NEFFs that carry none (`NRTSIM_HLO`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HloSource {
    /// One file for every such NEFF.
    File(PathBuf),
    /// A directory of `<sha256 hex of the NEFF>.hlo.pb` or `.hlo` files.
    Directory(PathBuf),
}

impl HloSource {
    /// The source a path names: a directory if it is one, a file otherwise.
    pub fn of_path(path: &Path) -> HloSource {
        if path.is_dir() {
            HloSource::Directory(path.to_owned())
        } else {
            HloSource::File(path.to_owned())
        }
    }
}

/// How long a rank of a collective launch waits for its peers.
pub const RENDEZVOUS_TIMEOUT: Duration = Duration::from_secs(30);

/// One GiB, the unit HBM sizes are quoted in.
pub const GIB: u64 = 1 << 30;

/// libnrt's limit on a single [`abi::runtime::Placement::Host`] tensor: 4 MiB.
pub const DEFAULT_HOST_PLACEMENT_LIMIT: usize = 4 << 20;

/// The release of libnrt the simulator claims to be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImitatedRelease {
    /// Major version.
    pub major: u64,
    /// Minor version.
    pub minor: u64,
    /// Patch version.
    pub patch: u64,
    /// Maintenance version.
    pub maintenance: u64,
    /// Which `nrt_dtype_t` numbering that release uses.
    pub dtype_numbering: DtypeNumbering,
}

impl Default for ImitatedRelease {
    /// Runtime 2.28.0.0, the first release whose public headers use the hardware numbering of
    /// `nrt_dtype_t`, as ours (`sim/capi/include/nrt/nrt.h`) do, and the first with
    /// `ndebug_stream.h`.
    fn default() -> ImitatedRelease {
        ImitatedRelease {
            major: 2,
            minor: 28,
            patch: 0,
            maintenance: 0,
            dtype_numbering: DtypeNumbering::for_runtime_version(2, 28),
        }
    }
}

/// The configuration of a simulated machine.
#[derive(Clone, Debug, PartialEq)]
pub struct SimConfig {
    /// How many NeuronCores the machine has (`nrt_get_total_nc_count`).
    pub n_cores: u32,
    /// Which of them this process sees and uses (`NEURON_RT_VISIBLE_CORES`,
    /// `NEURON_RT_NUM_CORES`; `nrt_get_visible_nc_count`).
    pub core_scope: CoreScope,
    /// Device memory per NeuronCore, in bytes. Reserved as a sparse mapping: untouched memory
    /// costs nothing.
    pub hbm_bytes_per_core: u64,
    /// The largest [`abi::runtime::Placement::Host`] tensor, in bytes.
    pub host_placement_limit: usize,
    /// The libnrt release to imitate (version numbers and dtype numbering).
    pub release: ImitatedRelease,
    /// Whether a NaN in an output makes a launch return `NRT_EXEC_COMPLETED_WITH_NUM_ERR`.
    pub numerical_errors: bool,
    /// Whether warnings (such as an opaque device program) are also printed to stderr, each kind
    /// once per process; they are always recorded in [`crate::SimRuntime::warnings`] (one entry
    /// per kind, with a count).
    pub warnings_to_stderr: bool,
    /// Which calls fail on purpose.
    pub fault_plan: FaultPlan,
    /// HLO for NEFFs that carry no device program (`NRTSIM_HLO`: a file, or a directory keyed by
    /// the NEFF's sha256).
    pub hlo_source: Option<HloSource>,
    /// The instance `nrt_get_instance_info` reports (`NRTSIM_INSTANCE`).
    pub instance: Instance,
    /// How long a rank of `nrt_barrier`, `nrt_all_gather` or a collective launch (a module loaded
    /// by `nrt_load_collectives`) waits for its peers before it fails with `NRT_TIMEOUT`
    /// (`NRTSIM_COLLECTIVE_TIMEOUT_MS`).
    pub collective_timeout: Duration,
    /// The execution timeout of one launch (per rank), in the device time the interpreter
    /// estimates (`hlo::eval::EvalOptions::device_time_limit`); `None` for no limit
    /// (`NEURON_RT_EXEC_TIMEOUT`, seconds, default 30). A launch over it fails with
    /// `NRT_TIMEOUT`, outputs unwritten.
    pub exec_timeout: Option<Duration>,
    /// The work one launch of a device program may do (per rank), in the interpreter's
    /// element-operations (`hlo::eval::EvalOptions::work_budget`); `None` (the default) for no
    /// limit (`NRTSIM_WORK_BUDGET`). A launch over it fails with `NRT_TIMEOUT`, outputs
    /// unwritten.
    pub work_budget: Option<u64>,
    /// How long one launch of a device program may run on the wall clock; `None` (the default)
    /// for no limit (`NRTSIM_LAUNCH_TIMEOUT_MS`). A launch over it fails with `NRT_TIMEOUT`.
    pub launch_timeout: Option<Duration>,
    /// The count limits of what a load parses: the NEFF's members and variables and its device
    /// program's computations and instructions (`NRTSIM_MAX_NEFF_MEMBERS`,
    /// `NRTSIM_MAX_NEFF_VARS`, `NRTSIM_MAX_HLO_COMPUTATIONS`, `NRTSIM_MAX_HLO_INSTRUCTIONS`;
    /// the parsers' defaults). A model past one fails to load with `NRT_INVALID`, naming the
    /// variable that raises it.
    pub load_limits: LoadLimits,
}

/// The count limits of a load ([`SimConfig::load_limits`]); the defaults are the parsers'
/// (`abi::neff::ReadOptions::default`, `hlo::LoadLimits::default`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadLimits {
    /// The most members in the NEFF's archive ([`abi::neff::ReadOptions::max_members`]).
    pub max_neff_members: usize,
    /// The most device variables over the NEFF's graphs ([`abi::neff::ReadOptions::max_vars`]).
    pub max_neff_vars: usize,
    /// The device program's computations and instructions.
    pub hlo: hlo::LoadLimits,
}

impl Default for LoadLimits {
    fn default() -> LoadLimits {
        LoadLimits {
            max_neff_members: abi::neff::DEFAULT_MAX_MEMBERS,
            max_neff_vars: abi::neff::DEFAULT_MAX_VARS,
            hlo: hlo::LoadLimits::default(),
        }
    }
}

impl LoadLimits {
    /// libnrt's loader options ([`abi::neff::ReadOptions::loader`]) under these limits.
    pub fn neff_read_options(&self) -> abi::neff::ReadOptions {
        abi::neff::ReadOptions {
            max_members: self.max_neff_members,
            max_vars: self.max_neff_vars,
            ..abi::neff::ReadOptions::loader()
        }
    }

    /// What a refusal of a load past a count limit ends with: the variable that raises it.
    /// `nrtsim run` replaces it with its own flag for that limit.
    pub fn hint(variable: &str) -> String {
        format!("; set {variable} higher to load it")
    }

    /// The variable that raises the NEFF limit `error` is about, if it is about one.
    pub fn neff_variable_for(error: &abi::neff::NeffError) -> Option<&'static str> {
        match error {
            abi::neff::NeffError::TooManyMembers { .. } => Some(MAX_NEFF_MEMBERS_ENV),
            abi::neff::NeffError::TooManyVars { .. } => Some(MAX_NEFF_VARS_ENV),
            _ => None,
        }
    }

    /// The variable that raises the HLO limit `error` is about, if it is about one.
    pub fn hlo_variable_for(error: &hlo::LoadError) -> Option<&'static str> {
        match error {
            hlo::LoadError::TooManyComputations { .. } => Some(MAX_HLO_COMPUTATIONS_ENV),
            hlo::LoadError::TooManyInstructions { .. } => Some(MAX_HLO_INSTRUCTIONS_ENV),
            hlo::LoadError::Text(_)
            | hlo::LoadError::NotUtf8 { .. }
            | hlo::LoadError::Binary(_) => None,
        }
    }
}

/// Which of the machine's NeuronCores a process sees, as libnrt's configuration guide describes
/// `NEURON_RT_VISIBLE_CORES` and `NEURON_RT_NUM_CORES`. The visible cores are numbered from 0
/// whatever their machine index (`NEURON_RT_VISIBLE_CORES=2-3` makes core 2 the process's vnc 0).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CoreScope {
    /// Every core of the machine (neither variable set, or `NEURON_RT_NUM_CORES=0`).
    #[default]
    All,
    /// `NEURON_RT_VISIBLE_CORES`: the machine's cores `first..=last`.
    Visible {
        /// The first core, the process's vnc 0.
        first: u32,
        /// The last core.
        last: u32,
    },
    /// `NEURON_RT_NUM_CORES`: this many cores; the simulator is the only process on its
    /// machine, so they are the first ones.
    Count(u32),
}

/// Why a [`CoreScope`] does not fit the machine; `nrt_init` fails with it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CoreScopeError {
    /// `NEURON_RT_VISIBLE_CORES` names a core the machine does not have.
    #[error(
        "NEURON_RT_VISIBLE_CORES names neuron core {last}, expected cores below {n_cores} (the machine's count)"
    )]
    NoSuchCore {
        /// The highest core named.
        last: u32,
        /// The machine's cores.
        n_cores: u32,
    },
    /// `NEURON_RT_NUM_CORES` asks for more cores than the machine has.
    #[error("NEURON_RT_NUM_CORES asks for {wanted} neuron cores, expected at most {n_cores}")]
    NotEnoughCores {
        /// The count asked for.
        wanted: u32,
        /// The machine's cores.
        n_cores: u32,
    },
}

impl CoreScope {
    /// Reads a `NEURON_RT_VISIBLE_CORES` value: comma-separated items, each a core `n` or an
    /// inclusive range `a-b`, which together must name consecutive cores in increasing order
    /// (`3-5,6` is cores 3 to 6; `3,5,6` is refused because 4 is missing). `None` when it does
    /// not parse.
    pub fn parse_visible(value: &str) -> Option<CoreScope> {
        let mut span: Option<(u32, u32)> = None;
        for item in value.split(',') {
            let item = item.trim();
            let (first, last) = match item.split_once('-') {
                Some((a, b)) => (a.trim().parse().ok()?, b.trim().parse().ok()?),
                None => {
                    let core = item.parse().ok()?;
                    (core, core)
                }
            };
            if first > last {
                return None;
            }
            span = match span {
                None => Some((first, last)),
                Some((start, end)) if end.checked_add(1) == Some(first) => Some((start, last)),
                Some(_) => return None,
            };
        }
        span.map(|(first, last)| CoreScope::Visible { first, last })
    }

    /// The machine cores this scope gives a process on a machine of `n_cores` cores.
    ///
    /// # Errors
    /// [`CoreScopeError`] for a core the machine does not have or more cores than it has.
    pub fn resolve(self, n_cores: u32) -> Result<std::ops::Range<u32>, CoreScopeError> {
        match self {
            CoreScope::All => Ok(0..n_cores),
            CoreScope::Visible { first, last } if last < n_cores => Ok(first..last + 1),
            CoreScope::Visible { last, .. } => Err(CoreScopeError::NoSuchCore { last, n_cores }),
            CoreScope::Count(wanted) if wanted <= n_cores => Ok(0..wanted),
            CoreScope::Count(wanted) => Err(CoreScopeError::NotEnoughCores { wanted, n_cores }),
        }
    }
}

/// The simulated instance: `nrt_instance_info_t`'s family and size codes and architecture name.
///
/// Made only by [`Instance::parse`] (and `Default`), so every instance is one the public header
/// lists and has a name that [`Instance::parse`] reads back: `to_env` cannot write a value a
/// child process would refuse or silently replace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instance {
    family: u32,
    size: u32,
    arch_name: String,
}

/// The instance families of the public header, by code.
const FAMILIES: &[(&str, u32)] = &[
    ("inf1", 1),
    ("trn1", 2),
    ("trn1n", 3),
    ("inf2", 4),
    ("trn2", 5),
    ("trn2n", 6),
    ("inf2e", 7),
    ("trn2p", 8),
    ("trn2u", 9),
    ("trn2e", 10),
    ("trn2eu", 11),
    ("trn2ac", 12),
    ("trn2uac", 13),
    ("trn3", 14),
];

/// The instance sizes of the public header, by code.
const SIZES: &[(&str, u32)] = &[
    ("xlarge", 0),
    ("2xlarge", 1),
    ("4xlarge", 2),
    ("6xlarge", 3),
    ("8xlarge", 4),
    ("24xlarge", 5),
    ("32xlarge", 6),
    ("48xlarge", 7),
    ("3xlarge", 8),
];

impl Instance {
    /// The instance `FAMILY.SIZE` names (case-insensitive), such as `trn1.32xlarge`; `None` for
    /// a family or size the public header does not list, or text without a dot.
    pub fn parse(text: &str) -> Option<Instance> {
        let text = text.trim().to_ascii_lowercase();
        let (family, size) = text.split_once('.')?;
        let family_code = FAMILIES.iter().find(|(name, _)| *name == family)?.1;
        let size_code = SIZES.iter().find(|(name, _)| *name == size)?.1;
        Some(Instance { family: family_code, size: size_code, arch_name: family.to_owned() })
    }

    /// The `FAMILY.SIZE` name [`Instance::parse`] reads, such as `trn2.48xlarge`.
    pub fn name(&self) -> String {
        let name = |table: &[(&'static str, u32)], code: u32| {
            table.iter().find(|(_, listed)| *listed == code).map_or("", |(name, _)| *name)
        };
        format!("{}.{}", name(FAMILIES, self.family), name(SIZES, self.size))
    }

    /// `NRT_INSTANCE_*`, the family code.
    pub fn family(&self) -> u32 {
        self.family
    }

    /// `NRT_INSTANCE_SIZE_*`, the size code.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// The family name, reported as the architecture name.
    pub fn arch_name(&self) -> &str {
        &self.arch_name
    }
}

impl Default for Instance {
    /// `trn1.2xlarge`.
    fn default() -> Instance {
        Instance { family: 2, size: 1, arch_name: "trn1".to_owned() }
    }
}

impl Default for SimConfig {
    /// Two NeuronCores of 16 GiB, the 4 MiB host limit, runtime 2.28, numerical errors off, no
    /// faults, warnings on stderr. Reads no environment variable.
    fn default() -> SimConfig {
        SimConfig {
            n_cores: 2,
            core_scope: CoreScope::All,
            hbm_bytes_per_core: 16 * GIB,
            host_placement_limit: DEFAULT_HOST_PLACEMENT_LIMIT,
            release: ImitatedRelease::default(),
            numerical_errors: false,
            warnings_to_stderr: true,
            fault_plan: FaultPlan::default(),
            hlo_source: None,
            instance: Instance::default(),
            collective_timeout: RENDEZVOUS_TIMEOUT,
            exec_timeout: Some(hlo::eval::DEFAULT_DEVICE_TIME_LIMIT),
            work_budget: None,
            launch_timeout: None,
            load_limits: LoadLimits::default(),
        }
    }
}

impl SimConfig {
    /// The limits of each launch of a device program, from [`SimConfig::exec_timeout`],
    /// [`SimConfig::work_budget`] and [`SimConfig::launch_timeout`].
    pub fn run_limits(&self) -> hlo::eval::RunLimits {
        hlo::eval::RunLimits {
            device_time_limit: self.exec_timeout,
            work_budget: self.work_budget,
            time_limit: self.launch_timeout,
        }
    }

    /// The configuration this process's environment describes: [`from_nrtsim_env`] over
    /// `std::env::var`.
    ///
    /// # Errors
    /// The [`ConfigError`] of the first variable with an invalid value.
    pub fn from_env() -> Result<SimConfig, ConfigError> {
        from_nrtsim_env(|name| std::env::var(name).ok())
    }
}

/// Whether libnrt ≥ 2.27 reports numerical errors given the values of `NEURON_FAIL_ON_NAN` and
/// `NEURON_RT_NUMERICAL_ERRORS_VERBOSITY` (`None`: unset).
pub fn numerical_errors_from_env_values(
    fail_on_nan: Option<&str>,
    verbosity: Option<&str>,
) -> bool {
    fail_on_nan.map(str::trim) == Some("1") || verbosity.map(str::trim) == Some("critical")
}

/// Why an environment does not describe a machine.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// A variable's value does not parse.
    #[error("{variable}={value:?} is invalid, expected {expected}")]
    Invalid {
        /// The variable.
        variable: &'static str,
        /// Its value, trimmed.
        value: String,
        /// What it must be.
        expected: &'static str,
    },
    /// `NRTSIM_FAULTS` is not a fault plan.
    #[error("NRTSIM_FAULTS={value:?}: {source}")]
    Faults {
        /// The value, trimmed.
        value: String,
        /// Why the plan was refused.
        source: FaultPlanError,
    },
}

/// `NRTSIM_CORES`: [`SimConfig::n_cores`].
pub const CORES_ENV: &str = "NRTSIM_CORES";
/// `NEURON_RT_VISIBLE_CORES`: [`CoreScope::Visible`] (wins over [`NUM_CORES_ENV`]).
pub const VISIBLE_CORES_ENV: &str = "NEURON_RT_VISIBLE_CORES";
/// `NEURON_RT_NUM_CORES`: [`CoreScope::Count`], 0 meaning all.
pub const NUM_CORES_ENV: &str = "NEURON_RT_NUM_CORES";
/// `NRTSIM_HBM_BYTES`: [`SimConfig::hbm_bytes_per_core`].
pub const HBM_BYTES_ENV: &str = "NRTSIM_HBM_BYTES";
/// `NRTSIM_HOST_LIMIT_BYTES`: [`SimConfig::host_placement_limit`].
pub const HOST_LIMIT_ENV: &str = "NRTSIM_HOST_LIMIT_BYTES";
/// `NRTSIM_RUNTIME_VERSION`: the version numbers of [`SimConfig::release`] (and its numbering,
/// unless `NRTSIM_DTYPE_NUMBERING` says otherwise).
pub const RUNTIME_VERSION_ENV: &str = "NRTSIM_RUNTIME_VERSION";
/// `NRTSIM_DTYPE_NUMBERING`: [`ImitatedRelease::dtype_numbering`].
pub const DTYPE_NUMBERING_ENV: &str = "NRTSIM_DTYPE_NUMBERING";
/// `NRTSIM_FAULTS`: [`SimConfig::fault_plan`], in its compact form.
pub const FAULTS_ENV: &str = "NRTSIM_FAULTS";
/// `NRTSIM_QUIET`: `1` clears [`SimConfig::warnings_to_stderr`].
pub const QUIET_ENV: &str = "NRTSIM_QUIET";
/// The instance `nrt_get_instance_info` reports, `FAMILY.SIZE`.
pub const INSTANCE_ENV: &str = "NRTSIM_INSTANCE";
/// `NRTSIM_COLLECTIVE_TIMEOUT_MS`: [`SimConfig::collective_timeout`], in milliseconds.
pub const COLLECTIVE_TIMEOUT_ENV: &str = "NRTSIM_COLLECTIVE_TIMEOUT_MS";
/// libnrt's `NEURON_RT_EXEC_TIMEOUT`: [`SimConfig::exec_timeout`], in seconds (a fraction is
/// accepted too); `0` or `none` for no limit.
pub const EXEC_TIMEOUT_ENV: &str = "NEURON_RT_EXEC_TIMEOUT";
/// `NRTSIM_WORK_BUDGET`: [`SimConfig::work_budget`], a number of element-operations or `none`.
pub const WORK_BUDGET_ENV: &str = "NRTSIM_WORK_BUDGET";
/// `NRTSIM_LAUNCH_TIMEOUT_MS`: [`SimConfig::launch_timeout`], in milliseconds, or `none`.
pub const LAUNCH_TIMEOUT_ENV: &str = "NRTSIM_LAUNCH_TIMEOUT_MS";
/// `NRTSIM_MAX_NEFF_MEMBERS`: [`LoadLimits::max_neff_members`].
pub const MAX_NEFF_MEMBERS_ENV: &str = "NRTSIM_MAX_NEFF_MEMBERS";
/// `NRTSIM_MAX_NEFF_VARS`: [`LoadLimits::max_neff_vars`].
pub const MAX_NEFF_VARS_ENV: &str = "NRTSIM_MAX_NEFF_VARS";
/// `NRTSIM_MAX_HLO_COMPUTATIONS`: the computations of [`LoadLimits::hlo`] (the compile target
/// reads it too, so it refuses what the simulator would refuse to load).
pub const MAX_HLO_COMPUTATIONS_ENV: &str = "NRTSIM_MAX_HLO_COMPUTATIONS";
/// `NRTSIM_MAX_HLO_INSTRUCTIONS`: the instructions of [`LoadLimits::hlo`] (the compile target
/// reads it too).
pub const MAX_HLO_INSTRUCTIONS_ENV: &str = "NRTSIM_MAX_HLO_INSTRUCTIONS";
/// libnrt's `NEURON_FAIL_ON_NAN`: `1` sets [`SimConfig::numerical_errors`].
pub const FAIL_ON_NAN_ENV: &str = "NEURON_FAIL_ON_NAN";
/// libnrt's `NEURON_RT_NUMERICAL_ERRORS_VERBOSITY`: `critical` sets
/// [`SimConfig::numerical_errors`] too.
pub const NUMERICAL_ERRORS_VERBOSITY_ENV: &str = "NEURON_RT_NUMERICAL_ERRORS_VERBOSITY";

/// The configuration the `NRTSIM_*` variables describe (the table in `sim/capi/src/config.rs`),
/// from a lookup function: the environment in the C library, `nrtsim run` and `nrtsim replay`, a
/// map in tests. [`to_env`] is its inverse. A variable that is unset or empty leaves its field
/// at [`SimConfig::default`].
///
/// # Errors
/// The [`ConfigError`] of the first variable with an invalid value.
pub fn from_nrtsim_env(lookup: impl Fn(&str) -> Option<String>) -> Result<SimConfig, ConfigError> {
    let mut config = SimConfig {
        numerical_errors: numerical_errors_from_env_values(
            lookup(FAIL_ON_NAN_ENV).as_deref(),
            lookup(NUMERICAL_ERRORS_VERBOSITY_ENV).as_deref(),
        ),
        ..SimConfig::default()
    };
    let get =
        |name: &str| lookup(name).map(|value| value.trim().to_owned()).filter(|v| !v.is_empty());
    let invalid = |variable: &'static str, value: &str, expected: &'static str| {
        ConfigError::Invalid { variable, value: value.to_owned(), expected }
    };
    // One block per field, in the order of the table in `sim/capi/src/config.rs`.
    if let Some(cores) = get(CORES_ENV) {
        config.n_cores =
            cores.parse().map_err(|_| invalid(CORES_ENV, &cores, "a number of cores"))?;
    }
    if let Some(visible) = get(VISIBLE_CORES_ENV) {
        config.core_scope = CoreScope::parse_visible(&visible).ok_or_else(|| {
            invalid(
                VISIBLE_CORES_ENV,
                &visible,
                "a core, a range a-b or a list of them naming consecutive cores such as 0, 1-2 or 0,1,2",
            )
        })?;
    } else if let Some(count) = get(NUM_CORES_ENV) {
        let count: u32 =
            count.parse().map_err(|_| invalid(NUM_CORES_ENV, &count, "a number of cores"))?;
        config.core_scope = if count == 0 { CoreScope::All } else { CoreScope::Count(count) };
    }
    if let Some(bytes) = get(HBM_BYTES_ENV) {
        config.hbm_bytes_per_core =
            bytes.parse().map_err(|_| invalid(HBM_BYTES_ENV, &bytes, "a byte count"))?;
    }
    if let Some(bytes) = get(HOST_LIMIT_ENV) {
        config.host_placement_limit =
            bytes.parse().map_err(|_| invalid(HOST_LIMIT_ENV, &bytes, "a byte count"))?;
    }
    if let Some(version) = get(RUNTIME_VERSION_ENV) {
        let numbers: Vec<u64> = version
            .split('.')
            .map(str::parse)
            .collect::<Result<_, _>>()
            .ok()
            .filter(|numbers: &Vec<u64>| (2..=4).contains(&numbers.len()))
            .ok_or_else(|| invalid(RUNTIME_VERSION_ENV, &version, "MAJOR.MINOR[.PATCH[.MAINT]]"))?;
        let release = &mut config.release;
        release.major = numbers[0];
        release.minor = numbers[1];
        release.patch = numbers.get(2).copied().unwrap_or(0);
        release.maintenance = numbers.get(3).copied().unwrap_or(0);
        release.dtype_numbering = DtypeNumbering::for_runtime_version(release.major, release.minor);
    }
    if let Some(numbering) = get(DTYPE_NUMBERING_ENV) {
        config.release.dtype_numbering = match numbering.to_ascii_lowercase().as_str() {
            "legacy" => DtypeNumbering::Legacy,
            "hardware" | "hardware2026" => DtypeNumbering::Hardware2026,
            _ => return Err(invalid(DTYPE_NUMBERING_ENV, &numbering, "legacy or hardware")),
        };
    }
    if let Some(plan) = get(FAULTS_ENV) {
        config.fault_plan = FaultPlan::parse(&plan)
            .map_err(|source| ConfigError::Faults { value: plan, source })?;
    }
    if let Some(path) = get(HLO_ENV) {
        let path = std::path::PathBuf::from(path);
        if !path.exists() {
            return Err(invalid(
                HLO_ENV,
                &path.display().to_string(),
                "an HLO file or a directory of them",
            ));
        }
        config.hlo_source = Some(HloSource::of_path(&path));
    }
    if let Some(name) = get(INSTANCE_ENV) {
        config.instance = Instance::parse(&name)
            .ok_or_else(|| invalid(INSTANCE_ENV, &name, "FAMILY.SIZE such as trn1.32xlarge"))?;
    }
    if let Some(ms) = get(COLLECTIVE_TIMEOUT_ENV) {
        config.collective_timeout = Duration::from_millis(
            ms.parse()
                .map_err(|_| invalid(COLLECTIVE_TIMEOUT_ENV, &ms, "a number of milliseconds"))?,
        );
    }
    config.exec_timeout = exec_timeout_from_env(&lookup)?;
    if let Some(budget) = get(WORK_BUDGET_ENV) {
        config.work_budget = match budget.to_ascii_lowercase().as_str() {
            "none" => None,
            _ => Some(budget.parse().map_err(|_| {
                invalid(WORK_BUDGET_ENV, &budget, "a number of element-operations or none")
            })?),
        };
    }
    if let Some(ms) = get(LAUNCH_TIMEOUT_ENV) {
        config.launch_timeout = match ms.to_ascii_lowercase().as_str() {
            "none" => None,
            _ => Some(Duration::from_millis(ms.parse().map_err(|_| {
                invalid(LAUNCH_TIMEOUT_ENV, &ms, "a number of milliseconds or none")
            })?)),
        };
    }
    for (variable, field) in [
        (MAX_NEFF_MEMBERS_ENV, &mut config.load_limits.max_neff_members),
        (MAX_NEFF_VARS_ENV, &mut config.load_limits.max_neff_vars),
    ] {
        if let Some(count) = get(variable) {
            *field = count.parse().map_err(|_| invalid(variable, &count, "a count"))?;
        }
    }
    config.load_limits.hlo = hlo_limits_from_env(&lookup)?;
    if get(QUIET_ENV).as_deref() == Some("1") {
        config.warnings_to_stderr = false;
    }
    Ok(config)
}

/// The HLO count limits [`from_nrtsim_env`] reads from `lookup` (`NRTSIM_MAX_HLO_COMPUTATIONS`,
/// `NRTSIM_MAX_HLO_INSTRUCTIONS`; the defaults when unset or empty). For the compile target,
/// which reads a module as the simulator's loader will, without a simulator.
///
/// # Errors
/// [`ConfigError::Invalid`] for a value that is not a count.
pub fn hlo_limits_from_env(
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<hlo::LoadLimits, ConfigError> {
    let mut limits = hlo::LoadLimits::default();
    for (variable, field) in [
        (MAX_HLO_COMPUTATIONS_ENV, &mut limits.max_computations),
        (MAX_HLO_INSTRUCTIONS_ENV, &mut limits.max_instructions),
    ] {
        if let Some(count) = lookup(variable).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
        {
            *field = count.parse().map_err(|_| ConfigError::Invalid {
                variable,
                value: count,
                expected: "a count",
            })?;
        }
    }
    Ok(limits)
}

/// What [`parse_exec_timeout`] accepts, for messages.
pub const EXEC_TIMEOUT_EXPECTED: &str = "a number of seconds, 0 or none for no limit";

/// `NEURON_RT_EXEC_TIMEOUT` (and the command line's `--exec-timeout`): whole seconds as libnrt
/// reads them, or seconds with a fraction of up to nine digits (`0.001`), so a test can ask for
/// a short timeout; `0` or `none` is no limit (`Some(None)`). `None` when the text is none of
/// these.
pub fn parse_exec_timeout(text: &str) -> Option<Option<Duration>> {
    if text.eq_ignore_ascii_case("none") {
        return Some(None);
    }
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let digits = |part: &str| part.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !digits(whole) || !digits(fraction) || fraction.len() > 9 {
        return None;
    }
    let seconds: u64 = whole.parse().ok()?;
    let nanos: u32 = format!("{fraction:0<9}").parse().ok()?;
    let timeout = Duration::new(seconds, nanos);
    Some((!timeout.is_zero()).then_some(timeout))
}

/// [`SimConfig::exec_timeout`] as [`from_nrtsim_env`] reads it from `lookup`: libnrt's default
/// when `NEURON_RT_EXEC_TIMEOUT` is unset or empty. For a command that runs the interpreter
/// without a simulator (`nrtsim hlo run`), so both read the variable alike.
///
/// # Errors
/// [`ConfigError::Invalid`] when the value is none of what [`parse_exec_timeout`] accepts.
pub fn exec_timeout_from_env(
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<Option<Duration>, ConfigError> {
    let Some(seconds) =
        lookup(EXEC_TIMEOUT_ENV).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
    else {
        return Ok(Some(hlo::eval::DEFAULT_DEVICE_TIME_LIMIT));
    };
    parse_exec_timeout(&seconds).ok_or(ConfigError::Invalid {
        variable: EXEC_TIMEOUT_ENV,
        value: seconds,
        expected: EXEC_TIMEOUT_EXPECTED,
    })
}

/// `NEURON_RT_EXEC_TIMEOUT` as [`parse_exec_timeout`] reads it back.
fn timeout_seconds(timeout: Option<Duration>) -> String {
    match timeout {
        None => "0".to_owned(),
        Some(t) if t.subsec_nanos() == 0 => t.as_secs().to_string(),
        Some(t) => format!("{}.{:09}", t.as_secs(), t.subsec_nanos()),
    }
}

/// The variables that make [`from_nrtsim_env`] give back `config`, for a child process that
/// builds its simulator from the environment (the simulator's `libnrt.so.1`). Every variable the
/// mapping reads is listed, empty where the default applies, so nothing the parent's own
/// environment says leaks into the child's machine. A path that is not UTF-8 is written lossily.
pub fn to_env(config: &SimConfig) -> Vec<(String, String)> {
    let release = &config.release;
    // The numbering is written only when it is not the version's own, so that a child given
    // another `NRTSIM_RUNTIME_VERSION` on top of these variables follows that version.
    let numbering = match release.dtype_numbering {
        numbering
            if numbering == DtypeNumbering::for_runtime_version(release.major, release.minor) =>
        {
            ""
        }
        DtypeNumbering::Legacy => "legacy",
        DtypeNumbering::Hardware2026 => "hardware",
    };
    let hlo = match &config.hlo_source {
        Some(HloSource::File(path) | HloSource::Directory(path)) => path.display().to_string(),
        None => String::new(),
    };
    let (visible, count) = match config.core_scope {
        CoreScope::All => (String::new(), String::new()),
        CoreScope::Visible { first, last } => (format!("{first}-{last}"), String::new()),
        CoreScope::Count(n) => (String::new(), n.to_string()),
    };
    // One entry per field, in the order of `from_nrtsim_env`.
    let pairs: Vec<(&str, String)> = vec![
        (CORES_ENV, config.n_cores.to_string()),
        (VISIBLE_CORES_ENV, visible),
        (NUM_CORES_ENV, count),
        (HBM_BYTES_ENV, config.hbm_bytes_per_core.to_string()),
        (HOST_LIMIT_ENV, config.host_placement_limit.to_string()),
        (
            RUNTIME_VERSION_ENV,
            format!(
                "{}.{}.{}.{}",
                release.major, release.minor, release.patch, release.maintenance
            ),
        ),
        (DTYPE_NUMBERING_ENV, numbering.to_owned()),
        (FAULTS_ENV, config.fault_plan.to_string()),
        (HLO_ENV, hlo),
        (INSTANCE_ENV, config.instance.name()),
        (COLLECTIVE_TIMEOUT_ENV, config.collective_timeout.as_millis().to_string()),
        (EXEC_TIMEOUT_ENV, timeout_seconds(config.exec_timeout)),
        (WORK_BUDGET_ENV, config.work_budget.map_or_else(|| "none".to_owned(), |n| n.to_string())),
        (
            LAUNCH_TIMEOUT_ENV,
            config
                .launch_timeout
                .map_or_else(|| "none".to_owned(), |limit| limit.as_millis().to_string()),
        ),
        (MAX_NEFF_MEMBERS_ENV, config.load_limits.max_neff_members.to_string()),
        (MAX_NEFF_VARS_ENV, config.load_limits.max_neff_vars.to_string()),
        (MAX_HLO_COMPUTATIONS_ENV, config.load_limits.hlo.max_computations.to_string()),
        (MAX_HLO_INSTRUCTIONS_ENV, config.load_limits.hlo.max_instructions.to_string()),
        (QUIET_ENV, if config.warnings_to_stderr { "0" } else { "1" }.to_owned()),
        (FAIL_ON_NAN_ENV, if config.numerical_errors { "1" } else { "0" }.to_owned()),
        (NUMERICAL_ERRORS_VERBOSITY_ENV, String::new()),
    ];
    pairs.into_iter().map(|(name, value)| (name.to_owned(), value)).collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn through_env(config: &SimConfig) -> Result<SimConfig, ConfigError> {
        let env: BTreeMap<String, String> = to_env(config).into_iter().collect();
        from_nrtsim_env(|name| env.get(name).cloned())
    }

    /// Every field differs from the default and survives `to_env` then `from_nrtsim_env`. The
    /// exhaustive pattern makes a new field a compile error here until it is mapped and tested.
    #[test]
    fn to_env_is_the_inverse_of_from_nrtsim_env_for_every_field() {
        let hlo_dir = std::env::temp_dir();
        let changed = SimConfig {
            n_cores: 7,
            core_scope: CoreScope::Visible { first: 2, last: 5 },
            hbm_bytes_per_core: 3 << 20,
            host_placement_limit: 12345,
            release: ImitatedRelease {
                major: 2,
                minor: 21,
                patch: 4,
                maintenance: 9,
                // Against what 2.21 implies, so the numbering is carried on its own.
                dtype_numbering: DtypeNumbering::Hardware2026,
            },
            numerical_errors: true,
            warnings_to_stderr: false,
            fault_plan: FaultPlan::parse("seed=3,nrt_execute:2=EXEC_BAD_INPUT,nrt_load:p0.5=4242")
                .expect("valid plan"),
            hlo_source: Some(HloSource::Directory(hlo_dir.clone())),
            instance: Instance::parse("trn2.48xlarge").expect("a known instance"),
            collective_timeout: Duration::from_millis(250),
            exec_timeout: Some(Duration::from_millis(1500)),
            work_budget: Some(1000),
            launch_timeout: Some(Duration::from_millis(1500)),
            load_limits: LoadLimits {
                max_neff_members: 11,
                max_neff_vars: 12,
                hlo: hlo::LoadLimits { max_computations: 13, max_instructions: 14 },
            },
        };
        let SimConfig {
            n_cores,
            core_scope,
            hbm_bytes_per_core,
            host_placement_limit,
            release,
            numerical_errors,
            warnings_to_stderr,
            fault_plan,
            hlo_source,
            instance,
            collective_timeout,
            exec_timeout,
            work_budget,
            launch_timeout,
            load_limits,
        } = &changed;
        let default = SimConfig::default();
        assert_ne!(*n_cores, default.n_cores);
        assert_ne!(*core_scope, default.core_scope);
        let counted = SimConfig { core_scope: CoreScope::Count(3), ..changed.clone() };
        assert_eq!(through_env(&counted), Ok(counted.clone()));
        assert_ne!(*hbm_bytes_per_core, default.hbm_bytes_per_core);
        assert_ne!(*host_placement_limit, default.host_placement_limit);
        assert_ne!(*release, default.release);
        assert_ne!(release.dtype_numbering, DtypeNumbering::for_runtime_version(2, 21));
        assert_ne!(*numerical_errors, default.numerical_errors);
        assert_ne!(*warnings_to_stderr, default.warnings_to_stderr);
        assert_ne!(*fault_plan, default.fault_plan);
        assert_ne!(*hlo_source, default.hlo_source);
        assert_ne!(*instance, default.instance);
        assert_ne!(*collective_timeout, default.collective_timeout);
        assert_ne!(*exec_timeout, default.exec_timeout);
        assert_ne!(*work_budget, default.work_budget);
        assert_ne!(*launch_timeout, default.launch_timeout);
        assert_ne!(load_limits.max_neff_members, default.load_limits.max_neff_members);
        assert_ne!(load_limits.max_neff_vars, default.load_limits.max_neff_vars);
        assert_ne!(load_limits.hlo.max_computations, default.load_limits.hlo.max_computations);
        assert_ne!(load_limits.hlo.max_instructions, default.load_limits.hlo.max_instructions);
        assert_eq!(through_env(&changed), Ok(changed.clone()));
        assert_eq!(through_env(&default), Ok(default));
        let file = SimConfig {
            hlo_source: Some(HloSource::File(std::env::current_exe().expect("test binary"))),
            ..changed
        };
        assert_eq!(through_env(&file), Ok(file));
        let unlimited = SimConfig { exec_timeout: None, ..SimConfig::default() };
        assert_eq!(through_env(&unlimited), Ok(unlimited));
        let budgeted = SimConfig { work_budget: Some(7), ..SimConfig::default() };
        assert_eq!(through_env(&budgeted), Ok(budgeted));
    }

    #[test]
    fn run_limits_read_numbers_and_none_and_refuse_anything_else() {
        let lookup = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| v.to_string())
        };
        let config =
            from_nrtsim_env(lookup(&[(WORK_BUDGET_ENV, "5000"), (LAUNCH_TIMEOUT_ENV, "20")]))
                .unwrap();
        assert_eq!(config.work_budget, Some(5000));
        assert_eq!(config.launch_timeout, Some(Duration::from_millis(20)));
        let config = from_nrtsim_env(lookup(&[(WORK_BUDGET_ENV, "None")])).unwrap();
        assert_eq!(config.work_budget, None);
        let err = from_nrtsim_env(lookup(&[(WORK_BUDGET_ENV, "1e9")])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "NRTSIM_WORK_BUDGET=\"1e9\" is invalid, expected a number of element-operations or none"
        );
        let config = from_nrtsim_env(lookup(&[])).unwrap();
        assert_eq!(config.exec_timeout, Some(Duration::from_secs(30)));
        assert_eq!(config.work_budget, None);
        for (text, timeout) in [
            ("600", Some(Duration::from_secs(600))),
            ("0.001", Some(Duration::from_millis(1))),
            ("2.5", Some(Duration::from_millis(2500))),
            ("0", None),
            ("NONE", None),
        ] {
            let config =
                from_nrtsim_env(|name: &str| (name == EXEC_TIMEOUT_ENV).then(|| text.to_owned()))
                    .unwrap();
            assert_eq!(config.exec_timeout, timeout, "{text}");
        }
        for text in ["-1", "30s", "1e3", ".5", "1.0000000001", "18446744073709551616"] {
            let err =
                from_nrtsim_env(|name: &str| (name == EXEC_TIMEOUT_ENV).then(|| text.to_owned()))
                    .unwrap_err();
            assert_eq!(
                err.to_string(),
                format!(
                    "NEURON_RT_EXEC_TIMEOUT={text:?} is invalid, expected a number of seconds, 0 or none for no limit"
                )
            );
        }
        let err = from_nrtsim_env(lookup(&[(LAUNCH_TIMEOUT_ENV, "2s")])).unwrap_err();
        assert!(err.to_string().starts_with("NRTSIM_LAUNCH_TIMEOUT_MS=\"2s\" is invalid"), "{err}");
    }

    /// The child's machine is what the parent wrote, whatever the parent's own environment says:
    /// every variable the mapping reads is written.
    #[test]
    fn to_env_writes_every_variable_it_reads() {
        let written: Vec<String> =
            to_env(&SimConfig::default()).into_iter().map(|(name, _)| name).collect();
        let read = std::cell::RefCell::new(Vec::new());
        from_nrtsim_env(|name| {
            read.borrow_mut().push(name.to_owned());
            None
        })
        .expect("the empty environment");
        let mut read = read.into_inner();
        read.sort();
        read.dedup();
        let mut written_sorted = written.clone();
        written_sorted.sort();
        assert_eq!(written_sorted, read);
        assert_eq!(written.len(), read.len(), "a variable is written twice: {written:?}");
    }

    #[test]
    fn a_bad_value_names_the_variable_and_what_was_expected() {
        let err = from_nrtsim_env(|name| (name == HOST_LIMIT_ENV).then(|| " 4k ".to_owned()))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "NRTSIM_HOST_LIMIT_BYTES=\"4k\" is invalid, expected a byte count"
        );
    }

    #[test]
    fn numerical_errors_are_on_only_for_the_two_documented_settings() {
        assert!(!numerical_errors_from_env_values(None, None));
        assert!(numerical_errors_from_env_values(Some("1"), None));
        assert!(numerical_errors_from_env_values(None, Some("critical")));
        assert!(!numerical_errors_from_env_values(Some("0"), Some("none")));
        assert!(!numerical_errors_from_env_values(Some("true"), Some("verbose")));
    }

    #[test]
    fn default_imitates_2_28_with_hardware_numbering() {
        let config = SimConfig::default();
        assert_eq!(config.release.minor, 28);
        assert_eq!(config.release.dtype_numbering, DtypeNumbering::Hardware2026);
        assert!(!config.numerical_errors);
    }

    fn scope_of(vars: &[(&str, &str)]) -> Result<CoreScope, ConfigError> {
        let vars: BTreeMap<String, String> =
            vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        from_nrtsim_env(|name| vars.get(name).cloned()).map(|config| config.core_scope)
    }

    /// The forms libnrt's guides give: a core, a range, a list, a mix; contiguous and
    /// increasing; `NEURON_RT_VISIBLE_CORES` wins over `NEURON_RT_NUM_CORES`, whose 0 is all.
    #[test]
    fn visible_and_num_cores_read_as_libnrt_documents_them() {
        let visible = |value| scope_of(&[(VISIBLE_CORES_ENV, value)]);
        let span = |first, last| Ok(CoreScope::Visible { first, last });
        assert_eq!(visible("1"), span(1, 1));
        assert_eq!(visible("1-2"), span(1, 2));
        assert_eq!(visible("3,4,5,6"), span(3, 6));
        assert_eq!(visible("3-5,6"), span(3, 6));
        assert_eq!(visible(" 0 , 1 "), span(0, 1));
        for refused in ["3,5,6", "2-1", "1,0", "a", "1-", "-1", "1,,2", "1-2-3", "4294967296"] {
            let err = visible(refused).unwrap_err().to_string();
            assert!(err.starts_with("NEURON_RT_VISIBLE_CORES="), "{refused}: {err}");
        }
        assert_eq!(scope_of(&[(NUM_CORES_ENV, "3")]), Ok(CoreScope::Count(3)));
        assert_eq!(scope_of(&[(NUM_CORES_ENV, "0")]), Ok(CoreScope::All));
        assert!(scope_of(&[(NUM_CORES_ENV, "two")]).is_err());
        let both = [(VISIBLE_CORES_ENV, "1"), (NUM_CORES_ENV, "2")];
        assert_eq!(scope_of(&both), span(1, 1));
        assert_eq!(scope_of(&[]), Ok(CoreScope::All));
    }

    #[test]
    fn a_scope_resolves_to_machine_cores_or_names_the_missing_one() {
        assert_eq!(CoreScope::All.resolve(4), Ok(0..4));
        assert_eq!(CoreScope::Visible { first: 1, last: 2 }.resolve(4), Ok(1..3));
        assert_eq!(CoreScope::Count(1).resolve(4), Ok(0..1));
        assert_eq!(
            CoreScope::Visible { first: 3, last: 4 }.resolve(4),
            Err(CoreScopeError::NoSuchCore { last: 4, n_cores: 4 })
        );
        assert_eq!(
            CoreScope::Count(5).resolve(4),
            Err(CoreScopeError::NotEnoughCores { wanted: 5, n_cores: 4 })
        );
    }

    /// The public headers of 2.27.0 and 2.27.1 number `nrt_dtype_t` the legacy way and 2.28.0's
    /// the hardware way; a reported version picks its era's numbering unless the numbering
    /// variable says otherwise.
    #[test]
    fn the_reported_version_picks_its_headers_numbering_and_the_variable_overrides_it() {
        let numbering = |vars: &[(&str, &str)]| {
            let vars: std::collections::BTreeMap<String, String> =
                vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
            from_nrtsim_env(|name| vars.get(name).cloned()).unwrap().release.dtype_numbering
        };
        assert_eq!(numbering(&[(RUNTIME_VERSION_ENV, "2.27.1")]), DtypeNumbering::Legacy);
        assert_eq!(numbering(&[(RUNTIME_VERSION_ENV, "2.27.0.0")]), DtypeNumbering::Legacy);
        assert_eq!(numbering(&[(RUNTIME_VERSION_ENV, "2.28.0")]), DtypeNumbering::Hardware2026);
        assert_eq!(numbering(&[(RUNTIME_VERSION_ENV, "3.0")]), DtypeNumbering::Hardware2026);
        assert_eq!(numbering(&[]), DtypeNumbering::Hardware2026);
        let overridden = [(RUNTIME_VERSION_ENV, "2.27.1"), (DTYPE_NUMBERING_ENV, "hardware")];
        assert_eq!(numbering(&overridden), DtypeNumbering::Hardware2026);
        // A child given another version on top of `to_env` follows that version.
        let mut child: Vec<(String, String)> = to_env(&SimConfig::default());
        child.retain(|(name, _)| name != RUNTIME_VERSION_ENV);
        child.push((RUNTIME_VERSION_ENV.to_owned(), "2.27.1".to_owned()));
        let child: Vec<(&str, &str)> =
            child.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(numbering(&child), DtypeNumbering::Legacy);
    }

    #[test]
    fn instance_names_map_to_the_headers_codes() {
        assert_eq!(
            Instance::parse("Trn2.48xlarge"),
            Some(Instance { family: 5, size: 7, arch_name: "trn2".to_owned() })
        );
        let small = Instance::parse("inf2.xlarge").expect("listed");
        assert_eq!((small.family(), small.size(), small.arch_name()), (4, 0, "inf2"));
        assert_eq!(Instance::parse("trn1.2xlarge"), Some(Instance::default()));
        for bad in ["trn9.small", "trn1", "trn1.2xlarge.x", ".2xlarge", ""] {
            assert_eq!(Instance::parse(bad), None, "{bad}");
        }
        for (family, _) in FAMILIES {
            for (size, _) in SIZES {
                let name = format!("{family}.{size}");
                let parsed = Instance::parse(&name).unwrap();
                assert_eq!(parsed.name(), name);
            }
        }
        assert_eq!(Instance::default().name(), "trn1.2xlarge");
    }
}
