//! Every compiled-model fixture (`conformance/tests/models/<producer>_<name>/`) end to end through the
//! `nrtsim` command line: the producer's module compiled with `nrtsim compile` and the producer's
//! neuronx-cc arguments, then
//! - `nrtsim run NEFF --input NAME=FILE…`, the raw libnrt path, and
//! - for folders with `[weights]`, `nrtsim metaneff from-hlo` with the folder's weight and state
//!   choices, `nrtsim check NEFF M` (which must find nothing), and `nrtsim run NEFF --metaneff M
//!   --weights W --input FILE…`, the binding layer with the weights from the safetensors file;
//!
//! each output compared with the producer's (jax on CPU, NumPy for nkipy) at the folder's
//! tolerance. One named trial per folder and path, so `cargo test jax_mlp` runs one model; a
//! folder added to `conformance/tests/models` is tested with no code change. The C and Python clients of
//! the same NEFFs are `sim/capi/tests/compiled_models.rs`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use libtest_mimic::{Arguments, Failed, Trial};
use testkit::model_fixture::ModelFixture;

mod support;
use support::{Scratch, nrtsim_exe, text};

fn models_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../conformance/tests/models")
}

/// Runs `nrtsim` in `dir`; an `Err` with everything it printed unless it succeeded.
fn nrtsim_in(dir: &Path, args: &[&str]) -> Result<Output, Failed> {
    let output = Command::new(nrtsim_exe())
        .args(args)
        .current_dir(dir)
        .output()
        .map_err(|err| format!("running nrtsim: {err}"))?;
    if !output.status.success() {
        return Err(format!(
            "nrtsim {} exited with {:?}\n--- stdout\n{}--- stderr\n{}",
            args.join(" "),
            output.status.code(),
            text(&output.stdout),
            text(&output.stderr)
        )
        .into());
    }
    Ok(output)
}

fn arg(path: &Path) -> &str {
    path.to_str().expect("the scratch paths are UTF-8")
}

/// The NEFF `nrtsim compile` writes for the fixture's module with the producer's arguments, run
/// in `dir` (the arguments name the output relative to the working directory, as nkipy's do).
fn compile(fixture: &ModelFixture, dir: &Path) -> Result<PathBuf, Failed> {
    let module = fixture.module();
    let mut args = vec!["compile", "--framework", "XLA", arg(&module)];
    args.extend(fixture.compile_args.iter().map(String::as_str));
    nrtsim_in(dir, &args)?;
    let output = fixture
        .compile_output()
        .ok_or_else(|| format!("{}: compile_args name no --output", fixture.name))?;
    Ok(dir.join(output))
}

/// Compares every `.npy` our run wrote into `out_dir` with the producer's outputs, and prints
/// the largest differences.
fn compare_outputs(fixture: &ModelFixture, out_dir: &Path, path: &str) -> Result<(), Failed> {
    for name in fixture.outputs.keys() {
        let file = out_dir.join(format!("{name}.npy"));
        let got = std::fs::read(&file).map_err(|err| format!("{}: {err}", file.display()))?;
        let agreement =
            fixture.compare_output(name, &got).map_err(|err| format!("{}: {err}", fixture.name))?;
        println!(
            "{} {path} {name}: {} elements, max abs {:e}, max rel {:e} (rtol {}, atol {})",
            fixture.name,
            agreement.n,
            agreement.max_abs,
            agreement.max_rel,
            fixture.rtol,
            fixture.atol
        );
    }
    Ok(())
}

/// The raw path: every NEFF input from `inputs/`, by name.
fn raw_run(fixture: &ModelFixture) -> Result<(), Failed> {
    let scratch = Scratch::new(&format!("{}-raw", fixture.name));
    let neff = compile(fixture, &scratch)?;
    let out_dir = scratch.join("out");
    let inputs: Vec<String> =
        fixture.inputs.iter().map(|(name, file)| format!("{name}={}", file.display())).collect();
    let mut args = vec!["run", arg(&neff), "--output-dir", arg(&out_dir)];
    for input in &inputs {
        args.extend(["--input", input.as_str()]);
    }
    nrtsim_in(&scratch, &args)?;
    compare_outputs(fixture, &out_dir, "raw")
}

/// The binding layer: the producers' metaneff with the folder's weights, checked, then run with
/// the user inputs only.
fn binding_layer(fixture: &ModelFixture) -> Result<(), Failed> {
    let weights = fixture.weights.as_ref().ok_or("no [weights]")?;
    let scratch = Scratch::new(&format!("{}-bind", fixture.name));
    let neff = compile(fixture, &scratch)?;
    let metaneff = scratch.join("model.metaneff");
    let module = fixture.module();
    let mut args = vec!["metaneff", "from-hlo", arg(&module), "-o", arg(&metaneff)];
    for choice in &weights.weight {
        args.extend(["--weight", choice.as_str()]);
    }
    for choice in &weights.state {
        args.extend(["--state", choice.as_str()]);
    }
    nrtsim_in(&scratch, &args)?;
    let checked = nrtsim_in(&scratch, &["check", arg(&neff), arg(&metaneff)])?;
    let report = text(&checked.stdout);
    if !report.contains("0 error(s), 0 warning(s)") {
        return Err(format!("nrtsim check found something:\n{report}").into());
    }

    // The user inputs are the parameters no choice names, in parameter order.
    let meta = abi::metaneff::decode(&std::fs::read(&metaneff)?)?;
    let out_dir = scratch.join("out");
    let safetensors = fixture.dir.join(&weights.file);
    let mut args = vec![
        "run".to_owned(),
        arg(&neff).to_owned(),
        "--metaneff".to_owned(),
        arg(&metaneff).to_owned(),
        "--weights".to_owned(),
        arg(&safetensors).to_owned(),
        "--output-dir".to_owned(),
        arg(&out_dir).to_owned(),
    ];
    for tensor in meta.input_tensors.iter().filter(|t| t.r#type == 1) {
        let name = String::from_utf8_lossy(&tensor.name).into_owned();
        let file = fixture.inputs.get(&name).ok_or_else(|| format!("no inputs/{name}.npy"))?;
        args.extend(["--input".to_owned(), format!("{}", file.display())]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    nrtsim_in(&scratch, &args)?;
    compare_outputs(fixture, &out_dir, "binding-layer")
}

fn main() {
    let arguments = Arguments::from_args();
    let fixtures = ModelFixture::load_all(&models_dir()).unwrap_or_else(|err| panic!("{err}"));
    let mut trials = Vec::new();
    for fixture in fixtures {
        let name = fixture.name.clone();
        let raw = fixture.clone();
        trials.push(Trial::test(format!("{name}::raw_libnrt_path"), move || raw_run(&raw)));
        if fixture.weights.is_some() {
            trials.push(Trial::test(format!("{name}::binding_layer_with_weights"), move || {
                binding_layer(&fixture)
            }));
        }
    }
    libtest_mimic::run(&arguments, trials).exit();
}
