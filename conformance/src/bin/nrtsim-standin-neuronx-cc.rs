//! `nrtsim-standin-neuronx-cc`: the **stand-in** for neuronx-cc that tests of the device NEFF
//! pipeline use, because the real compiler is not reachable from our machines. It is not a
//! compiler, and not part of the product: the binary is built only with the `standin` feature,
//! which only this package's tests switch on (`cargo build` and `cargo install` leave it out).
//!
//! It accepts exactly `--version`, or `compile --framework XLA IN --target T --output OUT` (T one
//! of trn1, trn2, inf2), and refuses anything else with exit status 2, so a test sees when the
//! pipeline calls the compiler wrongly. For `compile` it writes, with our NEFF writer, a NEFF with
//! the compiler's naming (`input{i}` for entry parameter `i`, `output{j}` for result leaf `j`,
//! after an `SB` state buffer), the module as its `sim/model.hlo.pb` member, and a member
//! `standin.txt` saying what wrote it: so the simulator can run the "device" NEFF, and nobody can
//! take it for a real one.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use sim::ModelDescription;

/// The version line the stand-in prints.
const VERSION: &str = "nrtsim stand-in for neuronx-cc (not a compiler) 0.1";

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("stand-in neuronx-cc: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Runs the stand-in on its raw arguments.
fn run(args: &[String]) -> Result<()> {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    if args == ["--version"] {
        println!("{VERSION}");
        return Ok(());
    }
    let ["compile", "--framework", "XLA", input, "--target", target, "--output", output] =
        args.as_slice()
    else {
        eprintln!(
            "stand-in neuronx-cc: expected `--version` or `compile --framework XLA IN --target T \
             --output OUT`, got {args:?}"
        );
        std::process::exit(2);
    };
    if !["trn1", "trn2", "inf2"].contains(target) {
        eprintln!("stand-in neuronx-cc: --target {target:?}, expected trn1, trn2 or inf2");
        std::process::exit(2);
    }
    let bytes = std::fs::read(input).with_context(|| format!("reading {input}"))?;
    let (params, results) = sim::device_program::entry_signature(&bytes)?;
    let mut description = ModelDescription::new("file.neff").with_var(sim::VarDescription::new(
        "SB",
        0,
        sim::SlotKind::Sb,
        4096,
    ));
    for (i, (dltype, dims)) in params.iter().enumerate() {
        description = description.with_input(&format!("input{i}"), *dltype, dims);
    }
    for (j, (dltype, dims)) in results.iter().enumerate() {
        description = description.with_output(&format!("output{j}"), *dltype, dims);
    }
    let description = description.with_hlo(bytes);
    let mut spec = sim::neff_load::neff_spec_of(&description)?;
    spec.extra_members.insert(
        "standin.txt".to_owned(),
        format!("written by {VERSION} for target {target}; not a real device NEFF\n").into_bytes(),
    );
    let output = PathBuf::from(output);
    if output.exists() {
        bail!("{} exists; the stand-in never overwrites", output.display());
    }
    std::fs::write(&output, spec.to_bytes()?)
        .with_context(|| format!("writing {}", output.display()))?;
    Ok(())
}
