//! `cargo xtask conformance`, `cargo xtask vectors` and `cargo xtask report`: thin wrappers that build what the run
//! needs (the `nrtsim` tool, and the simulator's `libnrt.so.1` for the `capi` backend) and hand
//! the arguments to `nrtsim conformance` / `nrtsim vectors` / `nrtsim report`, so both entry points share one
//! implementation and one set of options.

use std::path::Path;
use std::process::Command;

use anyhow::Result;

/// Builds and runs `nrtsim <subcommand> <args…>` from the workspace root.
pub(crate) fn run(root: &Path, subcommand: &str, args: &[String]) -> Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    // Whole packages, not `--bin nrtsim`: target filters apply to every package named, and the
    // capi package's cdylib (the simulator's libnrt.so.1) is a library target.
    crate::run(
        Command::new(&cargo).current_dir(root).args([
            "build",
            "--quiet",
            "--package",
            "nrtsim-cli",
            "--package",
            "nrtsim-capi",
        ]),
        "cargo build",
    )?;
    let nrtsim = crate::libnrt::target_dir(root).join("debug/nrtsim");
    crate::run(
        Command::new(&nrtsim).current_dir(root).arg(subcommand).args(args),
        &format!("nrtsim {subcommand}"),
    )
}
