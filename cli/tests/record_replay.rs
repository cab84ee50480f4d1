//! `nrtsim record` and `nrtsim replay` end to end: unmodified C programs run under the
//! recorder with the simulator's `libnrt.so.1` as the "real" library, and their recordings
//! replay on `sim` and `capi`; a differently configured simulator is caught at the right line;
//! bad recordings are refused with the reason; a crash leaves a valid recording; the recorder
//! never loads itself as the real library.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, OnceLock, PoisonError};

/// The environment of every process using the simulator: a small, quiet machine, every
/// simulator variable set (`sim::config::to_env`).
fn sim_env() -> Vec<(String, String)> {
    sim::config::to_env(&sim::SimConfig {
        n_cores: 2,
        hbm_bytes_per_core: 64 << 20,
        warnings_to_stderr: false,
        ..sim::SimConfig::default()
    })
}

fn nrtsim() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_nrtsim"))
}

fn profile_dir() -> PathBuf {
    nrtsim().parent().expect("nrtsim is in target/<profile>").to_owned()
}

/// The simulator's library, staged as `libnrt.so.1` (with the `libnrt.so` link `-lnrt` needs).
fn library() -> &'static Path {
    static LIBRARY: OnceLock<PathBuf> = OnceLock::new();
    LIBRARY.get_or_init(|| {
        let path = conformance::backend::stage_capi_library(&profile_dir())
            .unwrap_or_else(|message| panic!("{message}"));
        let link = path.with_file_name("libnrt.so");
        if std::fs::symlink_metadata(&link).is_err() {
            let _ = std::os::unix::fs::symlink("libnrt.so.1", &link);
        }
        path
    })
}

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("record-replay-{}", std::process::id()))
        .join(name);
    std::fs::create_dir_all(&dir).expect("create a scratch folder");
    dir
}

/// Compiles one C program: the simulator's C tests, or one of this test's own.
fn compile(source: &Path, out: &Path) -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lib = library().parent().expect("the library's folder");
    let compiler = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    let output = Command::new(&compiler)
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-I"])
        .arg(manifest.join("../sim/capi/include"))
        .arg(source)
        .arg("-L")
        .arg(lib)
        .arg("-lnrt")
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .arg("-o")
        .arg(out)
        .output()
        .unwrap_or_else(|err| panic!("cannot run the C compiler {compiler:?}: {err}"));
    assert!(output.status.success(), "compiling {}:\n{}", source.display(), text(&output));
    out.to_owned()
}

/// A C test of the simulator, compiled once per test binary (tests run in parallel, and an
/// executable being written cannot be run).
fn c_test(name: &str) -> PathBuf {
    static COMPILED: Mutex<BTreeMap<String, PathBuf>> = Mutex::new(BTreeMap::new());
    let mut compiled = COMPILED.lock().unwrap_or_else(PoisonError::into_inner);
    compiled
        .entry(name.to_owned())
        .or_insert_with(|| {
            let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
            let source = manifest.join("../sim/capi/tests/c").join(format!("{name}.c"));
            compile(&source, &scratch("bin").join(name))
        })
        .clone()
}

/// `output0 = input0 × factor` over f32[4].
fn scale_neff(factor: f64, dir: &Path) -> PathBuf {
    let path = dir.join("model.neff");
    std::fs::write(&path, testkit::models::scale_model(&[4], factor).neff())
        .expect("write the file");
    path
}

fn text(output: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}--- stderr\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Runs `nrtsim ARGS` with the simulator's environment plus `extra`.
fn run_nrtsim(args: &[&std::ffi::OsStr], extra: &[(&str, &str)]) -> Output {
    Command::new(nrtsim())
        .args(args)
        .envs(sim_env())
        .env("NRT_LIB_PATH", library())
        .envs(extra.iter().copied())
        .output()
        .expect("run nrtsim")
}

/// Records `program ARGS` into `dir/NAME.trace`; returns the trace path and nrtsim's output.
fn record(
    dir: &Path,
    name: &str,
    program: &Path,
    args: &[&Path],
    extra: &[(&str, &str)],
) -> (PathBuf, Output) {
    let trace = dir.join(format!("{name}.trace"));
    let mut argv: Vec<&std::ffi::OsStr> =
        vec!["record".as_ref(), "--out".as_ref(), trace.as_os_str(), "--".as_ref()];
    argv.push(program.as_os_str());
    argv.extend(args.iter().map(|arg| arg.as_os_str()));
    let output = run_nrtsim(&argv, extra);
    (trace, output)
}

fn replay(trace: &Path, backend: &str, extra: &[(&str, &str)]) -> Output {
    run_nrtsim(
        &["replay".as_ref(), trace.as_os_str(), "--backend".as_ref(), backend.as_ref()],
        extra,
    )
}

fn assert_replays_clean(trace: &Path) {
    for backend in ["sim", "capi"] {
        let output = replay(trace, backend, &[]);
        assert!(output.status.success(), "replay on {backend}:\n{}", text(&output));
        assert!(
            String::from_utf8_lossy(&output.stdout).contains("no divergence"),
            "replay on {backend}:\n{}",
            text(&output)
        );
    }
}

/// The recording's lines: up to the first zero byte, where a program that did not exit (a
/// crash, a kill) leaves the rest of the recorder's mapped window.
fn recorded(trace: &Path) -> String {
    let bytes = std::fs::read(trace).expect("read the recording");
    let lines = bytes.split(|&byte| byte == 0).next().unwrap_or_default();
    String::from_utf8(lines.to_vec()).expect("a recording is UTF-8")
}

/// The canonical flow records every call with its arguments and replays on both backends.
#[test]
fn the_canonical_client_flow_records_and_replays_without_divergence() {
    let dir = scratch("client_flow");
    let neff = scale_neff(2.0, &dir);
    let (trace, output) = record(&dir, "client_flow", &c_test("client_flow"), &[&neff], &[]);
    assert!(output.status.success(), "{}", text(&output));
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("client flow ok"),
        "{}",
        text(&output)
    );
    let lines = recorded(&trace);
    let mut header = lines.lines();
    assert_eq!(header.next(), Some("# nrtsim-trace 1"), "{lines}");
    assert_eq!(header.next(), Some("# runtime 2.28.0.0"), "{lines}");
    assert!(header.next().is_some_and(|line| line.starts_with("# instance ")), "{lines}");
    for expected in [
        "init(NO_FW, \"\", \"\") -> NRT_SUCCESS",
        "get_model_tensor_info(m1) -> [INPUT \"input0\" 16 FLOAT32 [4], OUTPUT \"output0\" 16 FLOAT32 [4]] NRT_SUCCESS",
        "tensor_allocate(DEVICE, 0, 16, \"input0\") -> t1 NRT_SUCCESS",
        "tensor_write(t1, 0, [00 00 80 3f 00 00 00 40 00 00 60 40 00 00 80 c0]) -> NRT_SUCCESS",
        "execute(m1, s1, s2) -> NRT_SUCCESS",
        // 1, 2, 3.5, -4 doubled, read back.
        "tensor_read(t2, 0, 16) -> [00 00 00 40 00 00 80 40 00 00 e0 40 00 00 00 c1] NRT_SUCCESS",
        // The program stores 42.0 at element 2 through nrt_tensor_get_va.
        "# memory t1 10 [28 42]",
        "tensor_attach_buffer(t3, <16 bytes buffer>) -> NRT_SUCCESS",
        "unload(m1) -> NRT_SUCCESS",
        "close()",
    ] {
        assert!(lines.lines().any(|line| line == expected), "no line {expected:?} in:\n{lines}");
    }
    // The NEFF is longer than the inline limit, so its bytes are kept beside the recording.
    let load = lines.lines().find(|line| line.starts_with("load(<")).expect("a load line");
    let hash = load.split("sha256:").nth(1).and_then(|rest| rest.split('>').next()).unwrap();
    let kept = trace.with_file_name("client_flow.trace.blobs").join(hash);
    assert_eq!(std::fs::read(&kept).expect("the kept NEFF"), std::fs::read(&neff).unwrap());
    assert_replays_clean(&trace);
}

/// Every C client test of the simulator records and replays on both backends.
#[test]
fn the_c_client_tests_record_and_replay_without_divergence() {
    let dir = scratch("c_tests");
    let neff = scale_neff(2.0, &dir);
    let profile = dir.join("profile.json");
    let cycles = PathBuf::from("3");
    let device = PathBuf::from("0");
    let virtual_placement = PathBuf::from("2");
    type Case<'a> = (&'a str, Vec<&'a Path>, &'a [(&'a str, &'a str)]);
    let cases: &[Case<'_>] = &[
        ("misuse", vec![&neff], &[]),
        ("misuse_handles", vec![&neff], &[]),
        ("unsupported", vec![&neff], &[]),
        ("memory", vec![&device], &[]),
        ("memory", vec![&virtual_placement], &[]),
        ("reload", vec![&neff, &cycles], &[]),
        ("public_api", vec![&neff, &profile], &[("NRTSIM_INSTANCE", "trn2.48xlarge")]),
    ];
    for (index, (name, args, extra)) in cases.iter().enumerate() {
        let (trace, output) = record(&dir, &format!("{name}-{index}"), &c_test(name), args, extra);
        assert!(output.status.success(), "{name}: {}", text(&output));
        let lines = recorded(&trace);
        assert!(lines.lines().count() > 4, "{name} recorded only its header:\n{lines}");
        assert_replays_clean(&trace);
    }
}

/// A simulator configured to differ (a fault plan on the second launch) is caught at exactly
/// the line of that launch, with the status both sides gave.
#[test]
fn a_fault_plan_in_the_replay_is_reported_at_the_first_divergent_call() {
    let dir = scratch("fault");
    let neff = scale_neff(2.0, &dir);
    let (trace, output) = record(&dir, "flow", &c_test("client_flow"), &[&neff], &[]);
    assert!(output.status.success(), "{}", text(&output));
    let lines = recorded(&trace);
    let second_launch = lines
        .lines()
        .enumerate()
        .filter(|(_, line)| line.starts_with("execute("))
        .nth(1)
        .map(|(index, _)| index + 1)
        .expect("two launches");
    for backend in ["sim", "capi"] {
        let output = replay(&trace, backend, &[("NRTSIM_FAULTS", "nrt_execute:2=EXEC_BAD_INPUT")]);
        assert_eq!(output.status.code(), Some(1), "{backend}: {}", text(&output));
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            stdout.contains(&format!("first divergence at line {second_launch} of")),
            "{backend}: expected line {second_launch}:\n{}",
            text(&output)
        );
        assert!(stdout.contains("  recorded  execute(m1, s1, s2) -> NRT_SUCCESS"), "{stdout}");
        assert!(
            stdout.contains("  replayed  execute(m1, s1, s2) -> NRT_EXEC_BAD_INPUT"),
            "{stdout}"
        );
    }
    // The other way round: recorded under the fault plan, replayed on a faultless simulator.
    let (faulty, _) = record(
        &dir,
        "faulty",
        &c_test("client_flow"),
        &[&neff],
        &[("NRTSIM_FAULTS", "nrt_execute:1=EXEC_BAD_INPUT")],
    );
    let output = replay(&faulty, "sim", &[]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("  recorded  execute(m1, s1, s2) -> NRT_EXEC_BAD_INPUT"), "{stdout}");
    assert!(stdout.contains("  replayed  execute(m1, s1, s2) -> NRT_SUCCESS"), "{stdout}");
}

/// A recorded tensor write that differs is found too, with the bytes of both sides.
#[test]
fn a_changed_output_byte_is_reported_with_both_reads() {
    let dir = scratch("bytes");
    let neff = scale_neff(2.0, &dir);
    let (trace, output) = record(&dir, "flow", &c_test("client_flow"), &[&neff], &[]);
    assert!(output.status.success(), "{}", text(&output));
    // Plant a difference: the device (say) gave 4.5 instead of 4 for the second element.
    let planted = recorded(&trace).replacen(
        "tensor_read(t2, 0, 16) -> [00 00 00 40 00 00 80 40",
        "tensor_read(t2, 0, 16) -> [00 00 00 40 00 00 90 40",
        1,
    );
    assert_ne!(planted, recorded(&trace), "the planted line exists");
    let edited = dir.join("planted.trace");
    std::fs::write(&edited, &planted).unwrap();
    std::fs::create_dir_all(dir.join("planted.trace.blobs")).unwrap();
    for entry in std::fs::read_dir(trace.with_file_name("flow.trace.blobs")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), dir.join("planted.trace.blobs").join(entry.file_name()))
            .unwrap();
    }
    let line = planted.lines().position(|l| l.contains("00 00 90 40")).unwrap() + 1;
    let output = replay(&edited, "sim", &[]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains(&format!("first divergence at line {line} of")), "{stdout}");
    assert!(
        stdout.contains("replayed  tensor_read(t2, 0, 16) -> [00 00 00 40 00 00 80 40"),
        "{stdout}"
    );
}

/// A recording's header lists what the recorder cannot carry, and a replay names each of those
/// and every call it did not re-issue, so a clean replay does not claim more than it checked.
#[test]
fn a_replay_names_what_the_recording_could_not_check() {
    let dir = scratch("limits");
    let neff = scale_neff(2.0, &dir);
    let (trace, output) = record(&dir, "flow", &c_test("client_flow"), &[&neff], &[]);
    assert!(output.status.success(), "{}", text(&output));
    let good = recorded(&trace);
    let header: Vec<&str> = good.lines().take_while(|line| line.starts_with('#')).collect();
    for key in ["by-name", "async-read", "settings"] {
        let prefix = format!("# limit {key}: ");
        assert!(header.iter().any(|line| line.starts_with(&prefix)), "no {prefix:?} in {header:?}");
    }
    // A call the recorder writes by name only, as it would for a program that copies
    // asynchronously.
    let edited = dir.join("edited.trace");
    std::fs::write(
        &edited,
        good.replacen("close()", "nrta_tensor_copy(…) -> NRT_SUCCESS\nclose()", 1),
    )
    .unwrap();
    std::fs::create_dir_all(dir.join("edited.trace.blobs")).unwrap();
    for entry in std::fs::read_dir(dir.join("flow.trace.blobs")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), dir.join("edited.trace.blobs").join(entry.file_name()))
            .unwrap();
    }
    let output = replay(&edited, "sim", &[]);
    assert!(output.status.success(), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    for expected in [
        "not checked: by-name: calls written `name(…)`",
        "not checked: async-read: the bytes an nrta_tensor_read delivers are not recorded",
        "not checked: settings: the recorded machine's configuration",
        "not checked: nrta_tensor_copy: 1 call recorded by name only, not re-issued",
        "not checked: get_status_as_str: ",
    ] {
        assert!(stdout.contains(expected), "no {expected:?} in\n{}", text(&output));
    }
}

/// Foreign, other-version and truncated files, and a recording whose NEFF is missing, are
/// refused with what was expected.
#[test]
fn bad_recordings_are_refused_with_the_reason() {
    let dir = scratch("bad");
    let neff = scale_neff(2.0, &dir);
    let (trace, output) = record(&dir, "flow", &c_test("client_flow"), &[&neff], &[]);
    assert!(output.status.success(), "{}", text(&output));
    let good = recorded(&trace);

    let check = |name: &str, content: &str, expected: &str| {
        let path = dir.join(name);
        std::fs::write(&path, content).unwrap();
        let output = replay(&path, "sim", &[]);
        assert!(!output.status.success(), "{name}: {}", text(&output));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(expected), "{name}: expected {expected:?} in\n{}", text(&output));
    };
    check(
        "foreign.trace",
        "execute(m1, s1, s2) -> NRT_SUCCESS\n",
        "is not an nrtsim recording: expected `# nrtsim-trace 1` as its first line, found \"execute(m1, s1, s2) -> NRT_SUCCESS\"",
    );
    check(
        "future.trace",
        &good.replacen("# nrtsim-trace 1", "# nrtsim-trace 2", 1),
        "is a recording of format version 2, expected version 1",
    );
    let cut = &good[..good.len() - 3];
    let last_line = cut.lines().count();
    check("cut.trace", cut, &format!("is truncated: line {last_line} has no end of line"));
    check(
        "garbled.trace",
        &good.replacen("close()", "close(", 1),
        "expected a `)` closing the arguments, found \"close(\"",
    );
    // The NEFF's bytes were not copied with the recording.
    let output = replay(&dir.join("foreign.trace"), "sim", &[]);
    assert!(!output.status.success());
    let alone = dir.join("alone.trace");
    std::fs::write(&alone, &good).unwrap();
    let output = replay(&alone, "sim", &[]);
    assert!(!output.status.success(), "{}", text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("the recorded bytes <"), "{}", text(&output));
    assert!(stderr.contains("are missing, expected them in"), "{}", text(&output));
    assert!(stderr.contains("alone.trace.blobs/"), "{}", text(&output));
}

/// A program that crashes mid-recording leaves every line written so far, and the recording
/// replays up to the crash.
#[test]
fn a_crash_mid_recording_leaves_a_valid_recording() {
    let dir = scratch("crash");
    let source = dir.join("crash.c");
    std::fs::write(
        &source,
        concat!(
            "#include <signal.h>\n#include <nrt/nrt.h>\n",
            "int main(void) {\n",
            "    nrt_tensor_t *tensor = NULL;\n",
            "    if (nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, \"\", \"\") != NRT_SUCCESS) return 2;\n",
            "    if (nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 8, \"x\", &tensor) != NRT_SUCCESS) return 3;\n",
            "    raise(SIGSEGV);\n",
            "    return 0;\n",
            "}\n"
        ),
    )
    .unwrap();
    let program = compile(&source, &dir.join("crash"));
    let (trace, output) = record(&dir, "crash", &program, &[], &[]);
    assert!(!output.status.success(), "the program crashed: {}", text(&output));
    let lines = recorded(&trace);
    assert!(lines.ends_with("tensor_allocate(DEVICE, 0, 8, \"x\") -> t1 NRT_SUCCESS\n"), "{lines}");
    assert_replays_clean(&trace);
}

/// A C program that initialises, allocates a 16-byte tensor `t1` and writes it `WRITES` times
/// (byte 0 is the iteration's low byte), printing `ready` after `READY` writes; then `END`.
fn writer_program(dir: &Path, name: &str, writes: &str, ready: u32, end: &str) -> PathBuf {
    let source = dir.join(format!("{name}.c"));
    let program = format!(
        concat!(
            "#include <signal.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <nrt/nrt.h>\n",
            "int main(void) {{\n",
            "    nrt_tensor_t *tensor = NULL;\n",
            "    unsigned char data[16] = {{0}};\n",
            "    if (nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, \"\", \"\") != NRT_SUCCESS) return 2;\n",
            "    if (nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 16, \"x\", &tensor) != NRT_SUCCESS) return 3;\n",
            "    for (unsigned long i = 0; {writes}; i++) {{\n",
            "        data[0] = (unsigned char)i;\n",
            "        if (nrt_tensor_write(tensor, data, 0, sizeof data) != NRT_SUCCESS) return 4;\n",
            "        if (i + 1 == {ready}) {{ printf(\"ready\\n\"); fflush(stdout); }}\n",
            "    }}\n",
            "    {end}\n",
            "}}\n"
        ),
        writes = writes,
        ready = ready,
        end = end,
    );
    std::fs::write(&source, program).unwrap();
    compile(&source, &dir.join(name))
}

/// The line of write number `i` of [`writer_program`].
fn write_line(i: u64) -> String {
    format!("tensor_write(t1, 0, [{:02x}{}]) -> NRT_SUCCESS", i & 0xff, " 00".repeat(15))
}

/// The recorder's lines of a recording (after its header), checked to be whole lines before
/// zero padding: `(lines, padded)`.
fn whole_lines(trace: &Path) -> (Vec<String>, bool) {
    let bytes = std::fs::read(trace).expect("read the recording");
    let end = bytes.iter().position(|&byte| byte == 0).unwrap_or(bytes.len());
    let text = std::str::from_utf8(&bytes[..end]).expect("UTF-8 lines");
    assert!(text.ends_with('\n'), "the recording ends mid-line: {:?}", &text[text.len() - 80..]);
    let lines = text.lines().filter(|line| !line.starts_with('#')).map(str::to_owned).collect();
    (lines, end < bytes.len())
}

/// A program killed with SIGKILL in the middle of a run of calls (no exit handler runs) leaves
/// every line recorded before the kill, whole, across several of the recorder's mapped windows,
/// then only padding; the recording replays.
#[test]
fn a_program_killed_mid_run_leaves_a_prefix_of_whole_lines_that_replays() {
    let dir = scratch("killed");
    let ready = 60_000;
    let program = writer_program(&dir, "killed", "1", ready, "return 0;");
    let recorder =
        [profile_dir().join("libnrtsim_record.so"), profile_dir().join("deps/libnrtsim_record.so")]
            .into_iter()
            .filter(|path| path.is_file())
            .max_by_key(|path| std::fs::metadata(path).and_then(|m| m.modified()).ok())
            .expect("the recorder is built");
    let trace = dir.join("killed.trace");
    let mut child = Command::new(&program)
        .envs(sim_env())
        .env("LD_PRELOAD", &recorder)
        .env("NRT_LIB_PATH", library())
        .env("NRTSIM_RECORD_OUT", &trace)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run the program");
    let mut ready_line = String::new();
    let stdout = child.stdout.take().expect("piped");
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut ready_line).unwrap();
    assert_eq!(ready_line, "ready\n", "the program stopped early");
    std::thread::sleep(std::time::Duration::from_millis(20));
    child.kill().expect("SIGKILL the program");
    let status = child.wait().unwrap();
    assert!(!status.success(), "the program was killed");
    let (lines, padded) = whole_lines(&trace);
    assert!(padded, "a killed program runs no exit handler: its window is left padded");
    assert!(lines.len() > ready as usize + 2, "only {} lines", lines.len());
    assert_eq!(lines[0], "init(NO_FW, \"\", \"\") -> NRT_SUCCESS");
    assert_eq!(lines[1], "tensor_allocate(DEVICE, 0, 16, \"x\") -> t1 NRT_SUCCESS");
    for (i, line) in lines[2..].iter().enumerate() {
        assert_eq!(*line, write_line(i as u64), "line {}", i + 2);
    }
    assert_replays_clean(&trace);
}

/// A program that aborts (SIGABRT, no exit handler) keeps every line before the abort.
#[test]
fn a_program_that_aborts_keeps_every_line_before_the_abort() {
    let dir = scratch("abort");
    let program = writer_program(&dir, "abort", "i < 3", 0, "abort();");
    let (trace, output) = record(&dir, "abort", &program, &[], &[]);
    assert!(!output.status.success(), "the program aborted: {}", text(&output));
    let (lines, padded) = whole_lines(&trace);
    assert!(padded, "an aborted program runs no exit handler");
    let expected: Vec<String> = ["init(NO_FW, \"\", \"\") -> NRT_SUCCESS".to_owned()]
        .into_iter()
        .chain(["tensor_allocate(DEVICE, 0, 16, \"x\") -> t1 NRT_SUCCESS".to_owned()])
        .chain((0..3).map(write_line))
        .collect();
    assert_eq!(lines, expected);
    assert_replays_clean(&trace);
}

/// A program that exits normally after more lines than one mapped window holds leaves exactly
/// its lines: every one, and no padding.
#[test]
fn a_normal_exit_keeps_every_line_and_no_padding() {
    let dir = scratch("exit");
    let writes = 40_000;
    let program = writer_program(&dir, "exit", &format!("i < {writes}"), 0, "return 0;");
    let (trace, output) = record(&dir, "exit", &program, &[], &[]);
    assert!(output.status.success(), "{}", text(&output));
    let (lines, padded) = whole_lines(&trace);
    assert!(!padded, "the exit handler truncates the file to its lines");
    assert_eq!(lines.len(), 2 + writes as usize);
    for (i, line) in lines[2..].iter().enumerate() {
        assert_eq!(*line, write_line(i as u64), "line {}", i + 2);
    }
}

/// A fork child records nothing, and its exit leaves the parent's recording alone: the
/// parent's lines are all there, whole, and the file is truncated only by the parent's exit.
#[test]
fn a_fork_child_neither_records_nor_cuts_the_parents_recording() {
    let dir = scratch("fork");
    let source = dir.join("fork.c");
    std::fs::write(
        &source,
        concat!(
            "#define _POSIX_C_SOURCE 200809L\n",
            "#include <stdlib.h>\n#include <sys/wait.h>\n#include <unistd.h>\n#include <nrt/nrt.h>\n",
            "int main(void) {\n",
            "    nrt_tensor_t *tensor = NULL;\n",
            "    unsigned char data[16] = {0};\n",
            "    if (nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, \"\", \"\") != NRT_SUCCESS) return 2;\n",
            "    if (nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 16, \"x\", &tensor) != NRT_SUCCESS) return 3;\n",
            "    pid_t child = fork();\n",
            "    if (child < 0) return 5;\n",
            "    if (child == 0) { exit(nrt_tensor_get_size(tensor) == 16 ? 0 : 1); }\n",
            "    int status = 0;\n",
            "    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return 6;\n",
            "    for (unsigned long i = 0; i < 3; i++) {\n",
            "        data[0] = (unsigned char)i;\n",
            "        if (nrt_tensor_write(tensor, data, 0, sizeof data) != NRT_SUCCESS) return 4;\n",
            "    }\n",
            "    return 0;\n",
            "}\n"
        ),
    )
    .unwrap();
    let program = compile(&source, &dir.join("fork"));
    let (trace, output) = record(&dir, "fork", &program, &[], &[]);
    assert!(output.status.success(), "{}", text(&output));
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .contains("a forked child's libnrt calls are not recorded"),
        "{}",
        text(&output)
    );
    let (lines, padded) = whole_lines(&trace);
    assert!(!padded, "the parent's exit truncates the file to its lines");
    let expected: Vec<String> = ["init(NO_FW, \"\", \"\") -> NRT_SUCCESS".to_owned()]
        .into_iter()
        .chain(["tensor_allocate(DEVICE, 0, 16, \"x\") -> t1 NRT_SUCCESS".to_owned()])
        .chain((0..3).map(write_line))
        .collect();
    assert_eq!(lines, expected);
}

/// Pointed at itself (or at another build of the recorder) as the real library, the recorder
/// skips it instead of recursing or writing the trace twice, says so in the header, and finds
/// the library the program was linked with.
#[test]
fn the_recorder_never_loads_itself_as_the_real_library() {
    let dir = scratch("self");
    let recorder =
        [profile_dir().join("libnrtsim_record.so"), profile_dir().join("deps/libnrtsim_record.so")]
            .into_iter()
            .find(|path| path.is_file())
            .expect("the recorder is built");
    let neff = scale_neff(2.0, &dir);
    let (trace, output) = record(
        &dir,
        "self",
        &c_test("client_flow"),
        &[&neff],
        &[("NRT_LIB_PATH", recorder.to_str().unwrap()), ("LD_LIBRARY_PATH", "")],
    );
    assert!(output.status.success(), "{}", text(&output));
    let lines = recorded(&trace);
    let library = lines.lines().find(|line| line.starts_with("# library ")).expect("a header");
    assert!(
        library.starts_with("# library libnrt.so.1 (skipped ")
            && library.ends_with("libnrtsim_record.so (is the recorder itself))")
                | library.ends_with("libnrtsim_record.so (is another recorder))"),
        "{lines}"
    );
    assert!(lines.contains("execute(m1, s1, s2) -> NRT_SUCCESS"), "{lines}");
}

/// Placed first on the library path under the name `libnrt.so.1` (no preloading), the recorder
/// records a program linked against libnrt.
#[test]
fn first_on_the_library_path_the_recorder_records_an_unmodified_program() {
    let dir = scratch("path");
    let modified = |path: &PathBuf| std::fs::metadata(path).and_then(|m| m.modified()).ok();
    let recorder =
        [profile_dir().join("libnrtsim_record.so"), profile_dir().join("deps/libnrtsim_record.so")]
            .into_iter()
            .filter_map(|path| modified(&path).map(|time| (time, path)))
            .max()
            .map(|(_, path)| path)
            .expect("the recorder is built");
    let first = dir.join("first");
    std::fs::create_dir_all(&first).unwrap();
    let _ = std::fs::remove_file(first.join("libnrt.so.1"));
    std::os::unix::fs::symlink(&recorder, first.join("libnrt.so.1")).unwrap();
    let neff = scale_neff(2.0, &dir);
    let trace = dir.join("path.trace");
    let output = Command::new(c_test("client_flow"))
        .arg(&neff)
        .envs(sim_env())
        .env("LD_LIBRARY_PATH", &first)
        .env("NRT_LIB_PATH", library())
        .env("NRTSIM_RECORD_OUT", &trace)
        .output()
        .expect("run the program");
    assert!(output.status.success(), "{}", text(&output));
    let lines = recorded(&trace);
    assert!(lines.contains("execute(m1, s1, s2) -> NRT_SUCCESS"), "{lines}");
    assert_replays_clean(&trace);
}

/// `--promote` copies a clean recording and the bytes it needs into `recorded/NAME/`, and the
/// promoted vector replays on `sim`; promoting over an existing vector is refused.
#[test]
fn a_promoted_recording_is_a_vector_that_passes_on_sim() {
    let dir = scratch("promote");
    let neff = scale_neff(2.0, &dir);
    let (trace, output) = record(&dir, "flow", &c_test("client_flow"), &[&neff], &[]);
    assert!(output.status.success(), "{}", text(&output));
    let vectors = dir.join("vectors");
    let promote = |extra: &[(&str, &str)]| {
        run_nrtsim(
            &[
                "replay".as_ref(),
                trace.as_os_str(),
                "--promote".as_ref(),
                "client_flow".as_ref(),
                "--vectors".as_ref(),
                vectors.as_os_str(),
            ],
            extra,
        )
    };
    let output = promote(&[]);
    assert!(output.status.success(), "{}", text(&output));
    let promoted = vectors.join("recorded/client_flow/recording.trace");
    assert_eq!(recorded(&promoted), recorded(&trace));
    std::fs::remove_dir_all(trace.with_file_name("flow.trace.blobs")).unwrap();
    assert_replays_clean(&promoted);
    let again = promote(&[]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("exists already"), "{}", text(&again));
}

/// The promoted vectors in the repository replay on `sim` without divergence.
#[test]
fn the_committed_recorded_vectors_replay_on_sim() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../vectors/recorded");
    let mut count = 0;
    for entry in std::fs::read_dir(&root).expect("vectors/recorded exists") {
        let trace = entry.unwrap().path().join("recording.trace");
        let output = replay(&trace, "sim", &[]);
        assert!(output.status.success(), "{}: {}", trace.display(), text(&output));
        count += 1;
    }
    assert!(count > 0, "no recorded vector in {}", root.display());
}
