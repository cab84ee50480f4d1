//! Shared helpers of the C-ABI tests: the built library under its libnrt names, C compilation,
//! and NEFF files of `testkit`'s models.
#![allow(dead_code, unreachable_pub)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, OnceLock, PoisonError};

use sim::ModelDescription;

/// `target/<profile>`, where cargo puts the cdylib: the test binary runs from its `deps/`.
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary has a path");
    exe.parent()
        .and_then(Path::parent)
        .expect("the test binary is in target/<profile>/deps")
        .to_owned()
}

/// The package folder (`sim/capi`).
pub fn package_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `target/<profile>/libnrt/`, holding the simulator as `libnrt.so.1` plus the `libnrt.so` link
/// that `-lnrt` needs. Made once per test binary from the cdylib cargo built.
pub fn library_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let profile = profile_dir();
        let built = built_cdylib(&profile);
        let dir = profile.join("libnrt");
        std::fs::create_dir_all(&dir).expect("create target/<profile>/libnrt");
        // Copy under a private name, then rename: test binaries running at once never see a
        // half-written library.
        let staged = dir.join(format!(".libnrt.so.1.{}", std::process::id()));
        std::fs::copy(&built, &staged).expect("copy the cdylib");
        std::fs::rename(&staged, dir.join("libnrt.so.1")).expect("install libnrt.so.1");
        let link = dir.join("libnrt.so");
        if std::fs::symlink_metadata(&link).is_err() {
            // Another test binary may make it between the check and here; either link is right.
            let _ = std::os::unix::fs::symlink("libnrt.so.1", &link);
        }
        dir
    })
}

/// The cdylib cargo built: `deps/libnrtsim_capi.so` is rebuilt with the package before its
/// tests; `libnrtsim_capi.so` beside it is only refreshed by `cargo build`. The newer one wins.
fn built_cdylib(profile: &Path) -> PathBuf {
    let modified = |path: &PathBuf| std::fs::metadata(path).and_then(|m| m.modified()).ok();
    [profile.join("deps/libnrtsim_capi.so"), profile.join("libnrtsim_capi.so")]
        .into_iter()
        .filter_map(|path| modified(&path).map(|time| (time, path)))
        .max()
        .map(|(_, path)| path)
        .unwrap_or_else(|| {
            panic!("no libnrtsim_capi.so in {}: build nrtsim-capi first", profile.display())
        })
}

/// The simulator library's path.
pub fn library_path() -> PathBuf {
    library_dir().join("libnrt.so.1")
}

/// A private scratch folder for this test binary.
pub fn scratch_dir(name: &str) -> PathBuf {
    let dir =
        profile_dir().join("nrtsim-capi-tests").join(format!("{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create a scratch folder");
    dir
}

/// The environment every process using the simulator gets: a small, quiet machine, every
/// simulator variable set (`sim::config::to_env`, the inverse of what the library reads).
pub fn sim_env() -> Vec<(String, String)> {
    sim::config::to_env(&sim::SimConfig {
        n_cores: 2,
        hbm_bytes_per_core: 64 << 20,
        warnings_to_stderr: false,
        ..sim::SimConfig::default()
    })
}

/// Compiles `tests/c/<name>.c` against `include/nrt/*.h` and the simulator with the system C
/// compiler, warnings as errors; returns the executable. Each program is compiled once per test
/// binary (tests run in parallel; an executable being written cannot be run).
pub fn compile_c(name: &str) -> PathBuf {
    static COMPILED: Mutex<BTreeMap<String, PathBuf>> = Mutex::new(BTreeMap::new());
    let mut compiled = COMPILED.lock().unwrap_or_else(PoisonError::into_inner);
    compiled.entry(name.to_owned()).or_insert_with(|| compile_c_now(name)).clone()
}

fn compile_c_now(name: &str) -> PathBuf {
    compile_c_defining(name, &[])
}

/// Compiles `tests/c/<name>.c` as [`compile_c`] does, with `-D` for each of `defines`, into an
/// executable of its own (named after the program and the defines).
pub fn compile_c_defining(name: &str, defines: &[&str]) -> PathBuf {
    let source = package_dir().join("tests/c").join(format!("{name}.c"));
    let compiler = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    let out =
        scratch_dir("c").join([name].iter().chain(defines).copied().collect::<Vec<_>>().join("-"));
    let flags: Vec<String> = defines.iter().map(|define| format!("-D{define}")).collect();
    compile_with(&compiler, "-std=c11", &flags, &source, &out)
}

/// Compiles `tests/cxx/<name>.cpp` as C++17, as [`compile_c`] does for C.
pub fn compile_cxx(name: &str) -> PathBuf {
    let source = package_dir().join("tests/cxx").join(format!("{name}.cpp"));
    let compiler = std::env::var("CXX").unwrap_or_else(|_| "c++".to_owned());
    compile_with(&compiler, "-std=c++17", &[], &source, &scratch_dir("cxx").join(name))
}

fn compile_with(
    compiler: &str,
    standard: &str,
    flags: &[String],
    source: &Path,
    out: &Path,
) -> PathBuf {
    let out = out.to_owned();
    let lib = library_dir();
    let output = Command::new(compiler)
        .args([standard, "-pthread", "-Wall", "-Wextra", "-Werror", "-O1"])
        .args(flags)
        .arg("-I")
        .arg(package_dir().join("include"))
        .arg(source)
        .arg("-L")
        .arg(lib)
        .arg("-lnrt")
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap_or_else(|err| panic!("cannot run the C compiler {compiler:?}: {err}"));
    assert!(output.status.success(), "compiling {}:\n{}", source.display(), text(&output));
    out
}

/// Runs `program` with the simulator's environment plus `extra`.
pub fn run(program: &Path, args: &[&Path], extra: &[(&str, &str)]) -> Output {
    Command::new(program)
        .args(args)
        .envs(sim_env())
        .envs(extra.iter().copied())
        .output()
        .unwrap_or_else(|err| panic!("cannot run {}: {err}", program.display()))
}

/// Runs `program` as [`run`] does, but gives it at most `limit`: a program still running then is
/// killed and the test fails, naming the limit and what the program printed so far. For programs
/// whose failure mode is a hang, so that the failure is a report instead of a stuck test.
pub fn run_within(
    program: &Path,
    args: &[&Path],
    extra: &[(&str, &str)],
    limit: std::time::Duration,
) -> Output {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = Command::new(program)
        .args(args)
        .envs(sim_env())
        .envs(extra.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|err| panic!("cannot run {}: {err}", program.display()));
    // Readers on threads of their own, so a chatty program never blocks on a full pipe.
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("stdout is piped")));
    let stderr = drain(Box::new(child.stderr.take().expect("stderr is piped")));
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the program") {
            break Some(status);
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let output = Output {
        status: status.unwrap_or_default(),
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    };
    assert!(
        status.is_some(),
        "{} did not finish within {limit:?} and was killed\n{}",
        program.display(),
        text(&output)
    );
    output
}

/// Stdout and stderr of `output`, for assertion messages.
pub fn text(output: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}--- stderr\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Writes the NEFF of `description` to the scratch folder and returns its path.
pub fn neff_file(description: &ModelDescription, name: &str) -> PathBuf {
    let path = scratch_dir("neff").join(format!("{name}.neff"));
    std::fs::write(&path, testkit::models::neff_of(description)).expect("write the NEFF file");
    path
}
