//! The simulated machine behind the C ABI, configured from the environment.
//!
//! A C caller cannot hand the library a Rust struct, so the process's environment plays the
//! part of [`sim::SimConfig`]. It is read once, when the first call needs the simulator.
//!
//! | variable | meaning | default |
//! |---|---|---|
//! | `NRTSIM_CORES` | NeuronCores of the machine | 2 |
//! | `NEURON_RT_VISIBLE_CORES` | as libnrt: the cores the process sees, `1`, `1-2` or `0,1` (consecutive), numbered from vnc 0; wins over `NEURON_RT_NUM_CORES` | all |
//! | `NEURON_RT_NUM_CORES` | as libnrt: how many cores the process sees, 0 meaning all | all |
//! | `NRTSIM_HBM_BYTES` | device memory per core, in bytes (sparse: untouched memory is free) | 16 GiB |
//! | `NRTSIM_HOST_LIMIT_BYTES` | the largest host-placement (`NRT_TENSOR_PLACEMENT_HOST`) tensor, in bytes | 4 MiB |
//! | `NRTSIM_RUNTIME_VERSION` | the libnrt release imitated, `MAJOR.MINOR[.PATCH[.MAINT]]` | 2.28.0.0 |
//! | `NRTSIM_DTYPE_NUMBERING` | `legacy` or `hardware`: how `nrt_tensor_info_t.dtype` is numbered | from the version: legacy up to 2.27, hardware from 2.28 |
//! | `NRTSIM_FAULTS` | a fault plan in the simulator's compact syntax, e.g. `nrt_execute:2=EXEC_BAD_INPUT,seed=7` | none |
//! | `NRTSIM_INSTANCE` | the instance `nrt_get_instance_info` reports, `FAMILY.SIZE` such as `trn1.32xlarge` | `trn1.2xlarge` |
//! | `NRTSIM_COLLECTIVE_TIMEOUT_MS` | how long a rank of `nrt_barrier` / `nrt_all_gather` or of a collective launch waits for its peers before `NRT_TIMEOUT`, in ms | 30000 |
//! | `NEURON_RT_EXEC_TIMEOUT` | as libnrt: the execution timeout of one launch in seconds (a fraction is accepted), `0` or `none` for none, in the device time the simulator estimates; over it: `NRT_TIMEOUT`, outputs unwritten | 30 |
//! | `NRTSIM_WORK_BUDGET` | the work one launch may do (per rank), in the interpreter's element-operations, or `none`; over it: `NRT_TIMEOUT`, outputs unwritten | none |
//! | `NRTSIM_LAUNCH_TIMEOUT_MS` | the wall-clock limit of one launch in ms, or `none`; over it: `NRT_TIMEOUT` | none |
//! | `NRTSIM_MAX_NEFF_MEMBERS`, `NRTSIM_MAX_NEFF_VARS` | the most members in a NEFF's archive and device variables over its graphs that `nrt_load` reads; past one: `NRT_INVALID` naming the variable | 65536, 100000 |
//! | `NRTSIM_MAX_HLO_COMPUTATIONS`, `NRTSIM_MAX_HLO_INSTRUCTIONS` | the most computations and instructions (over all computations) of a model's HLO device program; past one: `NRT_INVALID` naming the variable | 100000, 500000 |
//! | `NRTSIM_QUIET` | `1`: do not print the simulator's warnings on stderr | warnings printed |
//! | `NRTSIM_HLO` | HLO for NEFFs that carry no `sim/model.hlo.pb`: a file (binary `HloModuleProto` or HLO text) used for every such NEFF, or a directory of `<sha256 of the NEFF, hex>.hlo.pb` / `.hlo` files | none (outputs of such NEFFs stay zero) |
//! | `NRTSIM_LOG` | `1`: print each failing call's reason on stderr (read in `handles`) | off |
//! | `NEURON_FAIL_ON_NAN`, `NEURON_RT_NUMERICAL_ERRORS_VERBOSITY` | as libnrt reads them: `1` / `critical` turn NaN reporting (status 1003) on | off |
//!
//! A value that does not parse makes every call that needs the simulator return `NRT_INVALID`,
//! and the reason is printed once on stderr: a misconfigured simulator never runs silently with
//! defaults.

use sim::SimConfig;

/// Builds the configuration from a lookup function (the environment in the library, a map in
/// tests); the parsing is [`sim::config::from_nrtsim_env`], shared with `nrtsim run` and `nrtsim replay`,
/// and [`sim::config::to_env`] writes these variables for a child process.
pub(crate) fn config_from(
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<SimConfig, sim::config::ConfigError> {
    sim::config::from_nrtsim_env(lookup)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use abi::dtype::DtypeNumbering;

    use super::*;

    fn config(pairs: &[(&str, &str)]) -> Result<SimConfig, sim::config::ConfigError> {
        let map: HashMap<String, String> =
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        config_from(|name| map.get(name).cloned())
    }

    #[test]
    fn nrtsim_hlo_names_a_file_or_directory_that_exists() {
        let dir = std::env::temp_dir();
        let dir_text = dir.display().to_string();
        let config = config(&[("NRTSIM_HLO", dir_text.as_str())]).unwrap();
        assert_eq!(config.hlo_source, Some(sim::HloSource::Directory(dir.clone())));
        let missing = dir.join("no-such-nrtsim-hlo-file.hlo.pb");
        let missing_text = missing.display().to_string();
        let err = super::config_from(|name| (name == "NRTSIM_HLO").then(|| missing_text.clone()))
            .unwrap_err()
            .to_string();
        assert!(err.contains("NRTSIM_HLO=") && err.contains("expected an HLO file"), "{err}");
    }

    #[test]
    fn no_variable_is_the_default_machine() {
        assert_eq!(config(&[]).unwrap(), SimConfig::default());
    }

    #[test]
    fn each_variable_sets_its_field() {
        let config = config(&[
            ("NRTSIM_CORES", "4"),
            ("NRTSIM_HBM_BYTES", "1048576"),
            ("NRTSIM_RUNTIME_VERSION", "2.21.1"),
            ("NRTSIM_FAULTS", "nrt_execute:2=EXEC_BAD_INPUT"),
            ("NRTSIM_QUIET", "1"),
            ("NEURON_FAIL_ON_NAN", "1"),
        ])
        .unwrap();
        assert_eq!(config.n_cores, 4);
        assert_eq!(config.hbm_bytes_per_core, 1 << 20);
        assert_eq!((config.release.major, config.release.minor, config.release.patch), (2, 21, 1));
        assert_eq!(config.release.dtype_numbering, DtypeNumbering::Legacy);
        assert_eq!(config.fault_plan.rules.len(), 1);
        assert!(!config.warnings_to_stderr);
        assert!(config.numerical_errors);
    }

    #[test]
    fn numbering_can_be_forced_against_the_version() {
        let config =
            config(&[("NRTSIM_RUNTIME_VERSION", "2.21"), ("NRTSIM_DTYPE_NUMBERING", "hardware")])
                .unwrap();
        assert_eq!(config.release.dtype_numbering, DtypeNumbering::Hardware2026);
    }

    #[test]
    fn the_instance_is_read_from_nrtsim_instance() {
        let default = config(&[]).unwrap().instance;
        assert_eq!((default.family(), default.size()), (2, 1));
        let big = config(&[("NRTSIM_INSTANCE", "Trn2.48xlarge")]).unwrap().instance;
        assert_eq!((big.family(), big.size(), big.arch_name()), (5, 7, "trn2"));
        let err = config(&[("NRTSIM_INSTANCE", "trn9.small")]).unwrap_err().to_string();
        assert!(err.starts_with("NRTSIM_INSTANCE"), "{err}");
    }

    #[test]
    fn a_bad_value_is_an_error_naming_the_variable() {
        for (name, value) in [
            ("NRTSIM_CORES", "two"),
            ("NRTSIM_HBM_BYTES", "-1"),
            ("NRTSIM_RUNTIME_VERSION", "2"),
            ("NRTSIM_DTYPE_NUMBERING", "new"),
            ("NRTSIM_FAULTS", "nrt_nothing:1=FAILURE"),
            ("NRTSIM_INSTANCE", "trn1"),
        ] {
            let err = config(&[(name, value)]).unwrap_err().to_string();
            assert!(err.starts_with(name), "{err}");
        }
    }
}
