//! Every compiled-model fixture (`conformance/tests/models/<producer>_<name>/`) compiled by the
//! simulator's compile target with the producer's neuronx-cc arguments, then run on the
//! simulator's `libnrt.so.1` by the clients a producer's runtime is: a C program
//! (`tests/c/compiled_model.c`) and Python through ctypes (`tests/python/compiled_model.py`,
//! ctypes and numpy only), each making spike's calls (init, load, tensor info, allocate by
//! name, write, execute, read) and comparing every output with the producer's at the folder's
//! tolerance. One named trial per folder and client; a folder added there is tested with no code
//! change. The Python trials need a Python with numpy (the pinned reference Python,
//! `NRTSIM_PYTHON`): without one they are reported ignored, and under CI they fail.

mod support;

use std::path::{Path, PathBuf};

use compile::{self, Invocation, parse_neuronx_cc_args};
use libtest_mimic::{Arguments, Failed, Trial};
use support::{compile_c, library_path, run, scratch_dir, text};
use testkit::model_fixture::ModelFixture;

fn models_dir() -> PathBuf {
    support::package_dir().join("../../conformance/tests/models")
}

/// The NEFF of the fixture's module, compiled by the compile target (the library `nrtsim
/// compile` runs) with the producer's arguments, in a scratch folder.
fn compile(fixture: &ModelFixture, client: &str) -> Result<PathBuf, Failed> {
    let module = fixture.module();
    let mut args: Vec<String> = ["compile", "--framework", "XLA"].map(String::from).to_vec();
    args.push(module.display().to_string());
    args.extend(fixture.compile_args.iter().cloned());
    let Invocation::Compile { output, options, .. } = parse_neuronx_cc_args(&args)
        .map_err(|err| format!("{}: compile_args: {err}", fixture.name))?
    else {
        return Err(format!("{}: compile_args do not make a compile command", fixture.name).into());
    };
    let bytes = std::fs::read(&module)?;
    let neff =
        compile::compile(&bytes, &options).map_err(|err| format!("{}: {err}", fixture.name))?;
    // The arguments name the output relative to the compiler's working directory: one folder
    // per client, since the trials run at once.
    let path = scratch_dir(&format!("{}-{client}", fixture.name)).join(output);
    std::fs::write(&path, neff)?;
    Ok(path)
}

/// The client's report, printed for the record; an `Err` naming what it said unless it ended
/// with `compiled model ok`.
fn judge(
    fixture: &ModelFixture,
    client: &str,
    output: &std::process::Output,
) -> Result<(), Failed> {
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() || !stdout.contains("compiled model ok") {
        return Err(format!("{} through {client}: {}", fixture.name, text(output)).into());
    }
    for line in stdout.lines().filter(|line| line.contains("max abs")) {
        println!("{} {client} {line} (rtol {}, atol {})", fixture.name, fixture.rtol, fixture.atol);
    }
    Ok(())
}

fn tolerances(fixture: &ModelFixture) -> (String, String) {
    (format!("{:e}", fixture.rtol), format!("{:e}", fixture.atol))
}

fn through_c(fixture: &ModelFixture) -> Result<(), Failed> {
    let neff = compile(fixture, "c")?;
    let program = compile_c("compiled_model");
    let (rtol, atol) = tolerances(fixture);
    let (inputs, outputs) = (fixture.dir.join("inputs"), fixture.dir.join("outputs"));
    let args: [&Path; 5] = [&neff, &inputs, &outputs, Path::new(&rtol), Path::new(&atol)];
    judge(fixture, "c", &run(&program, &args, &[]))
}

fn through_python(fixture: &ModelFixture, python: &Path) -> Result<(), Failed> {
    let neff = compile(fixture, "python")?;
    let script = support::package_dir().join("tests/python/compiled_model.py");
    let (rtol, atol) = tolerances(fixture);
    let output = std::process::Command::new(python)
        .arg(&script)
        .arg(library_path())
        .arg(&neff)
        .arg(fixture.dir.join("inputs"))
        .arg(fixture.dir.join("outputs"))
        .args([&rtol, &atol])
        .envs(support::sim_env())
        .output()
        .map_err(|err| format!("running {}: {err}", python.display()))?;
    judge(fixture, "python-ctypes", &output)
}

/// The clients' checks can fail: jax_mlp's expected output with its first element moved by 1
/// (far outside the tolerance) is reported by both clients, naming the element.
fn a_wrong_output_is_reported(fixture: &ModelFixture, python: Option<&Path>) -> Result<(), Failed> {
    let wrong = scratch_dir("wrong-output");
    for (name, file) in &fixture.outputs {
        let mut bytes = std::fs::read(file)?;
        let header = abi::neff::npy::parse_header(name, &bytes)?;
        if name == "output0" {
            assert_eq!(header.descr, "<f4", "jax_mlp's output is float32");
            let at = header.data_offset;
            let first = f32::from_le_bytes(bytes[at..at + 4].try_into()?) + 1.0;
            bytes[at..at + 4].copy_from_slice(&first.to_le_bytes());
        }
        std::fs::write(wrong.join(format!("{name}.npy")), bytes)?;
    }
    let neff = compile(fixture, "wrong")?;
    let (rtol, atol) = tolerances(fixture);
    let inputs = fixture.dir.join("inputs");
    let program = compile_c("compiled_model");
    let args: [&Path; 5] = [&neff, &inputs, &wrong, Path::new(&rtol), Path::new(&atol)];
    let mut outputs = vec![("c", run(&program, &args, &[]))];
    if let Some(python) = python {
        let script = support::package_dir().join("tests/python/compiled_model.py");
        let output = std::process::Command::new(python)
            .arg(&script)
            .arg(library_path())
            .args([&neff, &inputs, &wrong])
            .args([&rtol, &atol])
            .envs(support::sim_env())
            .output()?;
        outputs.push(("python", output));
    }
    for (client, output) in outputs {
        let stdout = String::from_utf8_lossy(&output.stdout);
        if output.status.code() != Some(1) || !stdout.contains("output0[0] is ") {
            return Err(format!("{client} did not report output0[0]: {}", text(&output)).into());
        }
    }
    Ok(())
}

fn main() {
    let arguments = Arguments::from_args();
    let fixtures = ModelFixture::load_all(&models_dir()).unwrap_or_else(|err| panic!("{err}"));
    let python = pyref::find_for("compiled_models", &["numpy"]);
    let mut trials = Vec::new();
    for fixture in fixtures {
        let name = fixture.name.clone();
        let c = fixture.clone();
        trials.push(Trial::test(format!("{name}::c_program"), move || through_c(&c)));
        let python = python.clone();
        let ignored = pyref::ignored(&python);
        trials.push(
            Trial::test(format!("{name}::python_ctypes"), move || match &python {
                Ok(python) => through_python(&fixture, python),
                Err(reason) => Err(reason.clone().into()),
            })
            .with_ignored_flag(ignored),
        );
    }
    let mlp =
        ModelFixture::load(&models_dir().join("jax_mlp")).unwrap_or_else(|err| panic!("{err}"));
    let python = python.ok();
    trials.push(Trial::test("a_wrong_output_is_reported_by_both_clients", move || {
        a_wrong_output_is_reported(&mlp, python.as_deref())
    }));
    libtest_mimic::run(&arguments, trials).exit();
}
