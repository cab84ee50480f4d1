//! The flags that raise (or lower) the count limits of the parsers, one group per kind of input,
//! each declared once and flattened into every command that parses that input itself.
//!
//! The count limits bound what a parsed input costs in memory whatever its size on disk (a
//! metaneff tensor is two bytes on the wire and hundreds once decoded); their defaults are the
//! libraries' (`abi::metaneff::MetaneffLimits`, `hlo::LoadLimits`, `abi::neff::ReadOptions`).
//! A group goes only on a command that applies every limit it declares to every parse of that
//! input: a flag that some parse ignored would be a flag silently ignored. `run` hands its
//! groups to the simulator's loader (`sim::SimConfig::load_limits`) and to the binding layer
//! (`bind::ModelOptions`); the loader's refusals name its `NRTSIM_*` variable, which
//! [`with_flag_for_loader_limit`] turns into the flag.

use abi::metaneff::{DEFAULT_MAX_SHAPE_DIMS, DEFAULT_MAX_TENSORS, MetaneffLimits};
use abi::neff::{DEFAULT_MAX_MEMBERS, DEFAULT_MAX_VARS, NeffError, ReadOptions};
use hlo::{DEFAULT_MAX_COMPUTATIONS, DEFAULT_MAX_INSTRUCTIONS, LoadError, LoadLimits};

/// The count limits of a metaneff.
#[derive(clap::Args, Clone, Copy, Debug)]
#[command(next_help_heading = "Metaneff count limits")]
pub(crate) struct MetaneffLimitArgs {
    /// The most tensors in the metaneff's input or output list.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_TENSORS)]
    pub(crate) max_metaneff_tensors: usize,
    /// The most dimensions in one metaneff tensor's shape.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_SHAPE_DIMS)]
    pub(crate) max_metaneff_shape_dims: usize,
}

impl MetaneffLimitArgs {
    /// The limits the flags give.
    pub(crate) fn limits(&self) -> MetaneffLimits {
        MetaneffLimits {
            max_tensors: self.max_metaneff_tensors,
            max_shape_dims: self.max_metaneff_shape_dims,
        }
    }

    /// The flag that raises the limit `exceeded` names.
    pub(crate) fn flag_for(exceeded: abi::metaneff::MetaneffLimitExceeded) -> &'static str {
        match exceeded {
            abi::metaneff::MetaneffLimitExceeded::TooManyTensors { .. } => "--max-metaneff-tensors",
            abi::metaneff::MetaneffLimitExceeded::TooManyShapeDims { .. } => {
                "--max-metaneff-shape-dims"
            }
        }
    }
}

/// The count limits of an HLO module.
#[derive(clap::Args, Clone, Copy, Debug)]
#[command(next_help_heading = "HLO count limits")]
pub(crate) struct HloLimitArgs {
    /// The most computations in the module.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_COMPUTATIONS)]
    pub(crate) max_hlo_computations: usize,
    /// The most instructions in the module, over all its computations.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_INSTRUCTIONS)]
    pub(crate) max_hlo_instructions: usize,
}

impl HloLimitArgs {
    /// The limits the flags give.
    pub(crate) fn limits(&self) -> LoadLimits {
        LoadLimits {
            max_computations: self.max_hlo_computations,
            max_instructions: self.max_hlo_instructions,
        }
    }

    /// The flag that raises the limit `error` is about, if it is about one.
    pub(crate) fn flag_for(error: &LoadError) -> Option<&'static str> {
        match error {
            LoadError::TooManyComputations { .. } => Some("--max-hlo-computations"),
            LoadError::TooManyInstructions { .. } => Some("--max-hlo-instructions"),
            LoadError::Text(_) | LoadError::NotUtf8 { .. } | LoadError::Binary(_) => None,
        }
    }
}

/// The count limits of a NEFF.
#[derive(clap::Args, Clone, Copy, Debug)]
#[command(next_help_heading = "NEFF count limits")]
pub(crate) struct NeffLimitArgs {
    /// The most members (files) in the NEFF's archive.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_MEMBERS)]
    pub(crate) max_neff_members: usize,
    /// The most device variables in the NEFF, over all its graphs.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_VARS)]
    pub(crate) max_neff_vars: usize,
}

impl NeffLimitArgs {
    /// The flag that raises the limit `error` is about, if it is about one.
    pub(crate) fn flag_for(error: &NeffError) -> Option<&'static str> {
        match error {
            NeffError::TooManyMembers { .. } => Some("--max-neff-members"),
            NeffError::TooManyVars { .. } => Some("--max-neff-vars"),
            _ => None,
        }
    }

    /// The lenient reading options (`ReadOptions::default`) under the flags' limits.
    pub(crate) fn read_options(&self) -> ReadOptions {
        ReadOptions {
            max_members: self.max_neff_members,
            max_vars: self.max_neff_vars,
            ..ReadOptions::default()
        }
    }
}

/// The simulator's variables of the count limits and the flag of `run` that sets each.
const LOADER_VARIABLES: [(&str, &str); 4] = [
    (sim::config::MAX_NEFF_MEMBERS_ENV, "--max-neff-members"),
    (sim::config::MAX_NEFF_VARS_ENV, "--max-neff-vars"),
    (sim::config::MAX_HLO_COMPUTATIONS_ENV, "--max-hlo-computations"),
    (sim::config::MAX_HLO_INSTRUCTIONS_ENV, "--max-hlo-instructions"),
];

/// A simulator load's refusal with the hint of a count limit's variable replaced by the flag of
/// `run` that raises it (the flag overrides the variable): the loader ends such a message with
/// `sim::config::LoadLimits::hint`, and the status of such a load is the plain `NRT_INVALID`, so
/// the hint is what tells it apart.
pub(crate) fn with_flag_for_loader_limit(message: &str) -> String {
    for (variable, flag) in LOADER_VARIABLES {
        let hint = sim::config::LoadLimits::hint(variable);
        if message.contains(&hint) {
            return message.replace(&hint, &format!("; pass a larger {flag} to read it"));
        }
    }
    message.to_owned()
}

/// The simulator's load limits the three groups give.
pub(crate) fn load_limits(neff: &NeffLimitArgs, hlo: &HloLimitArgs) -> sim::config::LoadLimits {
    sim::config::LoadLimits {
        max_neff_members: neff.max_neff_members,
        max_neff_vars: neff.max_neff_vars,
        hlo: hlo.limits(),
    }
}
