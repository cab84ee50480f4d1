//! `nrtsim check MODEL.neff MODEL.metaneff`: does the pair bind? The rules and their codes are
//! in the `check` library ([`::check`]); this file reads the two files with their caps and
//! prints the report.

use std::path::PathBuf;

use abi::neff::Neff;
use anyhow::{Result, anyhow};

use crate::input;
use crate::limits::{HloLimitArgs, MetaneffLimitArgs, NeffLimitArgs};

/// Arguments of `nrtsim check`.
#[derive(clap::Args)]
pub(crate) struct CheckArgs {
    /// The NEFF file.
    neff: PathBuf,
    /// The binary metaneff (`-` for standard input).
    metaneff: PathBuf,
    /// Print one JSON object (findings with code, name, severity, tensor, message, fix).
    #[arg(long)]
    json: bool,
    /// Refuse a NEFF larger than this many bytes.
    #[arg(long, value_name = "BYTES", default_value_t = input::DEFAULT_MAX_NEFF_BYTES)]
    max_neff_bytes: u64,
    /// Refuse a metaneff larger than this many bytes (a guard against endless inputs such as
    /// `/dev/zero`).
    #[arg(long, value_name = "BYTES", default_value_t = input::DEFAULT_MAX_METANEFF_BYTES)]
    max_metaneff_bytes: u64,
    /// The NEFF's count limits.
    #[command(flatten)]
    limits: NeffLimitArgs,
    /// The metaneff's count limits.
    #[command(flatten)]
    metaneff_limits: MetaneffLimitArgs,
    /// The count limits of the HLO module in the metaneff's `serialized_graph_def`.
    #[command(flatten)]
    hlo_limits: HloLimitArgs,
}

/// Runs `nrtsim check`; `Ok(false)` (exit status 1) when any finding is an error.
pub(crate) fn run(args: CheckArgs) -> Result<bool> {
    let neff_bytes =
        input::read_capped_with_flag(&args.neff, args.max_neff_bytes, "--max-neff-bytes")?;
    let neff = Neff::parse(&neff_bytes, &args.limits.read_options()).map_err(|error| {
        let hint = NeffLimitArgs::flag_for(&error)
            .map_or(String::new(), |flag| format!("; pass a larger {flag} to read it"));
        let path = args.neff.display();
        anyhow!("{path}: {error} (libnrt would return {}){hint}", error.status().name())
    })?;
    drop(neff_bytes);
    let metaneff = input::read_capped_with_flag(
        &args.metaneff,
        args.max_metaneff_bytes,
        "--max-metaneff-bytes",
    )?;
    // `::check` is the library; a bare `check` here would be this module.
    let limits = ::check::CheckLimits {
        metaneff: args.metaneff_limits.limits(),
        hlo: args.hlo_limits.limits(),
    };
    let report = ::check::check_with_limits(&neff, &metaneff, &limits).map_err(|error| {
        let flag = match &error {
            ::check::CheckError::Metaneff(error) => error.exceeded.map(MetaneffLimitArgs::flag_for),
            ::check::CheckError::HloLimit(error) => HloLimitArgs::flag_for(error),
        };
        let hint = flag.map_or(String::new(), |flag| format!("; pass a larger {flag} to read it"));
        anyhow!("{}: {error}{hint}", args.metaneff.display())
    })?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report.to_json())?);
    } else {
        print!("{}", report.to_text());
    }
    Ok(!report.has_errors())
}
