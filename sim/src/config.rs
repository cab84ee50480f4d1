//! How a [`crate::SimRuntime`] is built: the simulated machine and the behaviour switches.
//!
//! Design choices:
//! - **The environment is read in one place**, [`SimConfig::from_env`]. [`SimConfig::default`]
//!   never reads it, so tests are deterministic whatever the shell exports; a field set after
//!   `from_env` overrides what the environment said.
//! - **Numerical-error reporting follows libnrt ≥ 2.27** (ABI-FACTS §3): on only when
//!   `NEURON_FAIL_ON_NAN=1` or `NEURON_RT_NUMERICAL_ERRORS_VERBOSITY=critical`; any other value,
//!   or none, means off. The decision is the pure function [`numerical_errors_from_env_values`].
//! - **The imitated runtime release decides the `nrt_dtype_t` numbering** reported by the C layer;
//!   both are fields, so a harness can imitate an old library on purpose.

use abi::dtype::DtypeNumbering;

use crate::device_program::{HLO_ENV, HloSource};
use crate::fault::FaultPlan;

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
    /// Runtime 2.27.0.0, which uses the hardware numbering of `nrt_dtype_t`.
    fn default() -> ImitatedRelease {
        ImitatedRelease {
            major: 2,
            minor: 27,
            patch: 0,
            maintenance: 0,
            dtype_numbering: DtypeNumbering::Hardware2026,
        }
    }
}

/// The configuration of a simulated machine.
#[derive(Clone, Debug, PartialEq)]
pub struct SimConfig {
    /// How many NeuronCores the machine has (all of them visible).
    pub n_cores: u32,
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
}

/// The simulated instance: `nrt_instance_info_t`'s family and size codes and architecture name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instance {
    /// `NRT_INSTANCE_*`.
    pub family: u32,
    /// `NRT_INSTANCE_SIZE_*`.
    pub size: u32,
    /// The family name, reported as the architecture name.
    pub arch_name: String,
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

    /// The `FAMILY.SIZE` name [`Instance::parse`] reads, such as `trn2.48xlarge`; `None` for
    /// codes the public header does not list.
    pub fn name(&self) -> Option<String> {
        let family = FAMILIES.iter().find(|(_, code)| *code == self.family)?.0;
        let size = SIZES.iter().find(|(_, code)| *code == self.size)?.0;
        Some(format!("{family}.{size}"))
    }
}

impl Default for Instance {
    /// `trn1.2xlarge`.
    fn default() -> Instance {
        Instance { family: 2, size: 1, arch_name: "trn1".to_owned() }
    }
}

impl Default for SimConfig {
    /// Two NeuronCores of 16 GiB, the 4 MiB host limit, runtime 2.27, numerical errors off, no
    /// faults, warnings on stderr. Reads no environment variable.
    fn default() -> SimConfig {
        SimConfig {
            n_cores: 2,
            hbm_bytes_per_core: 16 * GIB,
            host_placement_limit: DEFAULT_HOST_PLACEMENT_LIMIT,
            release: ImitatedRelease::default(),
            numerical_errors: false,
            warnings_to_stderr: true,
            fault_plan: FaultPlan::default(),
            hlo_source: None,
            instance: Instance::default(),
        }
    }
}

impl SimConfig {
    /// [`SimConfig::default`] with `numerical_errors` taken from `NEURON_FAIL_ON_NAN` and
    /// `NEURON_RT_NUMERICAL_ERRORS_VERBOSITY`, as libnrt reads them, and `hlo_source` from
    /// `NRTSIM_HLO`.
    pub fn from_env() -> SimConfig {
        let fail_on_nan = std::env::var("NEURON_FAIL_ON_NAN").ok();
        let verbosity = std::env::var("NEURON_RT_NUMERICAL_ERRORS_VERBOSITY").ok();
        SimConfig {
            numerical_errors: numerical_errors_from_env_values(
                fail_on_nan.as_deref(),
                verbosity.as_deref(),
            ),
            hlo_source: std::env::var_os(HLO_ENV)
                .filter(|path| !path.is_empty())
                .map(|path| HloSource::of_path(std::path::Path::new(&path))),
            ..SimConfig::default()
        }
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

/// The configuration the `NRTSIM_*` variables describe (the table in `sim/capi/src/config.rs`),
/// from a lookup function: the environment in the C library and in `nrtsim replay`, a map in
/// tests.
///
/// # Errors
/// The message naming the first variable with an invalid value.
pub fn from_nrtsim_env(lookup: impl Fn(&str) -> Option<String>) -> Result<SimConfig, String> {
    let mut config = SimConfig {
        numerical_errors: numerical_errors_from_env_values(
            lookup("NEURON_FAIL_ON_NAN").as_deref(),
            lookup("NEURON_RT_NUMERICAL_ERRORS_VERBOSITY").as_deref(),
        ),
        ..SimConfig::default()
    };
    let get =
        |name: &str| lookup(name).map(|value| value.trim().to_owned()).filter(|v| !v.is_empty());
    if let Some(cores) = get("NRTSIM_CORES") {
        config.n_cores = cores.parse().map_err(|_| {
            format!("NRTSIM_CORES={cores:?} is invalid, expected a number of cores")
        })?;
    }
    if let Some(bytes) = get("NRTSIM_HBM_BYTES") {
        config.hbm_bytes_per_core = bytes
            .parse()
            .map_err(|_| format!("NRTSIM_HBM_BYTES={bytes:?} is invalid, expected a byte count"))?;
    }
    if let Some(version) = get("NRTSIM_RUNTIME_VERSION") {
        let numbers: Vec<u64> = version
            .split('.')
            .map(str::parse)
            .collect::<Result<_, _>>()
            .ok()
            .filter(|numbers: &Vec<u64>| (2..=4).contains(&numbers.len()))
            .ok_or_else(|| {
                format!("NRTSIM_RUNTIME_VERSION={version:?} is invalid, expected MAJOR.MINOR[.PATCH[.MAINT]]")
            })?;
        let release = &mut config.release;
        release.major = numbers[0];
        release.minor = numbers[1];
        release.patch = numbers.get(2).copied().unwrap_or(0);
        release.maintenance = numbers.get(3).copied().unwrap_or(0);
        release.dtype_numbering = DtypeNumbering::for_runtime_version(release.major, release.minor);
    }
    if let Some(numbering) = get("NRTSIM_DTYPE_NUMBERING") {
        config.release.dtype_numbering = match numbering.to_ascii_lowercase().as_str() {
            "legacy" => DtypeNumbering::Legacy,
            "hardware" | "hardware2026" => DtypeNumbering::Hardware2026,
            _ => {
                return Err(format!(
                    "NRTSIM_DTYPE_NUMBERING={numbering:?} is invalid, expected legacy or hardware"
                ));
            }
        };
    }
    if let Some(plan) = get("NRTSIM_FAULTS") {
        config.fault_plan =
            FaultPlan::parse(&plan).map_err(|err| format!("NRTSIM_FAULTS={plan:?}: {err}"))?;
    }
    if let Some(path) = get(HLO_ENV) {
        let path = std::path::PathBuf::from(path);
        if !path.exists() {
            return Err(format!(
                "{HLO_ENV}={:?} is invalid, expected an HLO file or a directory of them",
                path.display().to_string()
            ));
        }
        config.hlo_source = Some(HloSource::of_path(&path));
    }
    if let Some(instance) = get("NRTSIM_INSTANCE") {
        config.instance = Instance::parse(&instance).ok_or_else(|| {
            format!(
                "NRTSIM_INSTANCE={instance:?} is invalid, expected FAMILY.SIZE such as trn1.32xlarge"
            )
        })?;
    }
    if get("NRTSIM_QUIET").as_deref() == Some("1") {
        config.warnings_to_stderr = false;
    }
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numerical_errors_are_on_only_for_the_two_documented_settings() {
        assert!(!numerical_errors_from_env_values(None, None));
        assert!(numerical_errors_from_env_values(Some("1"), None));
        assert!(numerical_errors_from_env_values(None, Some("critical")));
        assert!(!numerical_errors_from_env_values(Some("0"), Some("none")));
        assert!(!numerical_errors_from_env_values(Some("true"), Some("verbose")));
    }

    #[test]
    fn default_imitates_2_27_with_hardware_numbering() {
        let config = SimConfig::default();
        assert_eq!(config.release.minor, 27);
        assert_eq!(config.release.dtype_numbering, DtypeNumbering::Hardware2026);
        assert!(!config.numerical_errors);
    }

    #[test]
    fn instance_names_map_to_the_headers_codes() {
        assert_eq!(
            Instance::parse("Trn2.48xlarge"),
            Some(Instance { family: 5, size: 7, arch_name: "trn2".to_owned() })
        );
        assert_eq!(Instance::parse("inf2.xlarge").map(|i| (i.family, i.size)), Some((4, 0)));
        assert_eq!(Instance::parse("trn1.2xlarge"), Some(Instance::default()));
        for bad in ["trn9.small", "trn1", "trn1.2xlarge.x", ".2xlarge", ""] {
            assert_eq!(Instance::parse(bad), None, "{bad}");
        }
        for (family, _) in FAMILIES {
            for (size, _) in SIZES {
                let name = format!("{family}.{size}");
                let parsed = Instance::parse(&name).unwrap();
                assert_eq!(parsed.name().as_deref(), Some(name.as_str()));
            }
        }
        let unknown = Instance { family: 99, size: 0, arch_name: "x".to_owned() };
        assert_eq!(unknown.name(), None);
    }
}
