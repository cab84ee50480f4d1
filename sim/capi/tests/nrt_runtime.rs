//! `NrtRuntime` opened on the simulator's `libnrt.so.1` runs the SAME test bodies as
//! `SimRuntime` (the binding-layer suite of `testkit` and the runtime checks of
//! `testkit::checks`), and the two give identical canonical traces (`abi::trace`).
//!
//! libnrt initialises once per process, and the simulator library holds one simulated machine
//! per process, so every body runs on `NrtRuntime` in a child process of this test binary (the
//! same executable, told by `NRTSIM_CHILD` which body to run), through the harness the
//! conformance backends use (`sim::child`): the machine the body asks for is given as
//! the environment `sim::config::to_env` writes, and the child reports a `RunOutput`. The parent
//! runs the body on `SimRuntime` first, which also tells it which machine the body asks for, then
//! compares.

mod support;

use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use abi::dtype::{DtypeNumbering, NrtDtype};
use abi::runtime::prelude::*;
use abi::runtime::{ExternalBuffer, Framework, ModelId, NrtError, Placement, SharedBuffer};
use abi::status::NrtStatus;
use abi::trace::{Trace, TracingRuntime};
use libtest_mimic::{Arguments, Failed, Trial};
use nrt::{LibrarySource, NrtRuntime, OpenOptions};
use sim::child::{self, RunOutput};
use sim::{FaultPlan, ImitatedRelease, SimConfig, SimRuntime};
use testkit::{RuntimeSpec, TestBody, checks, f32_bytes, sim_config};

/// Bodies that ask the factory for several different machines in one run. libnrt gives one
/// machine per process (and so does the simulator library), so these cannot run on
/// `NrtRuntime`; each entry says why, and the harness fails if an entry becomes stale (the body
/// now asks for one machine), so the list stays reviewed.
const NEEDS_SEVERAL_MACHINES: &[(&str, &str)] =
    &[("spmd_four_ranks_on_four_cores", "a 4-core machine, then a 2-core one for the error case")];

/// The environment variable that puts this binary in child mode: `bind:NAME`, `check:NAME` or
/// `probe:NAME`.
const CHILD: &str = "NRTSIM_CHILD";

/// The spec the parent saw the body ask for (its `Debug` text), which the child's body must ask
/// for too.
const CHILD_SPEC: &str = "NRTSIM_CHILD_SPEC";

// ---------------------------------------------------------------------------------------------
// The runtime checks of `testkit::checks`, each a function of a fresh, uninitialized runtime.

type Check = fn(&dyn Runtime) -> Result<(), String>;

fn scale_neff() -> &'static [u8] {
    static NEFF: OnceLock<Vec<u8>> = OnceLock::new();
    NEFF.get_or_init(|| testkit::models::scale_model(&[4], 2.0).neff())
}

fn load_scale(runtime: &dyn Runtime, vnc: i32) -> Result<ModelId, NrtError> {
    runtime.load(scale_neff(), vnc, 1)
}

fn client_flow(runtime: &dyn Runtime, placement: Placement) -> Result<(), String> {
    let input = f32_bytes(&[1.0, 2.0, 3.5, -4.0]);
    let output = f32_bytes(&[2.0, 4.0, 7.0, -8.0]);
    checks::canonical_client_flow(
        runtime,
        &load_scale,
        placement,
        &[("input0", &input)],
        &[("output0", &output)],
        NrtStatus::Success,
    )
    .map_err(|failure| failure.0)
}

fn runtime_checks() -> Vec<(&'static str, Check)> {
    fn plain(
        check: fn(&dyn Runtime) -> checks::CheckResult,
        runtime: &dyn Runtime,
    ) -> Result<(), String> {
        check(runtime).map_err(|failure| failure.0)
    }
    vec![
        ("version_before_init_is_release_2_or_later", |r| {
            plain(checks::version_before_init_is_release_2_or_later, r)
        }),
        ("sets_refuse_a_tensor_handle_that_never_existed", |r| {
            plain(checks::sets_refuse_a_tensor_handle_that_never_existed, r)
        }),
        ("tensor_memory_and_bounds", |r| plain(checks::tensor_memory_and_bounds, r)),
        ("attached_buffers_are_caller_memory", |r| {
            plain(checks::attached_buffers_are_caller_memory, r)
        }),
        ("canonical_client_flow_device", |r| client_flow(r, Placement::Device)),
        ("canonical_client_flow_virtual", |r| client_flow(r, Placement::Virtual)),
        ("canonical_client_flow_host", |r| client_flow(r, Placement::Host)),
        ("execute_checks_the_io_contract", |r| {
            checks::execute_checks_the_io_contract(r, &load_scale).map_err(|failure| failure.0)
        }),
        ("loads_take_free_cores", |r| {
            checks::loads_take_free_cores(r, &load_scale).map_err(|failure| failure.0)
        }),
    ]
}

// ---------------------------------------------------------------------------------------------
// The library.

fn open_nrt(initialize: bool) -> NrtRuntime {
    let options = OpenOptions {
        library: LibrarySource::Path(support::library_path()),
        initialize,
        dtype_numbering: None,
    };
    NrtRuntime::open_with(&options)
        .unwrap_or_else(|err| panic!("open the simulator's libnrt: {err}"))
}

// ---------------------------------------------------------------------------------------------
// Child mode: run one body on NrtRuntime and print its trace and result.

fn child(which: &str) {
    let trace = Arc::new(Trace::new());
    let result = match which.split_once(':') {
        Some(("bind", name)) => {
            let body = bind_body(name);
            let inner: Mutex<Option<Arc<dyn Runtime>>> = Mutex::new(None);
            let expected = std::env::var(CHILD_SPEC).unwrap_or_default();
            let factory = |spec: &RuntimeSpec| -> Arc<dyn Runtime> {
                assert_eq!(format!("{spec:?}"), expected, "one machine per process");
                let mut inner = inner.lock().unwrap_or_else(PoisonError::into_inner);
                let runtime = inner.get_or_insert_with(|| Arc::new(open_nrt(true))).clone();
                Arc::new(TracingRuntime::new(runtime, trace.clone()))
            };
            body(&factory)
        }
        Some(("check", name)) => {
            let check = check_body(name);
            let runtime: Arc<dyn Runtime> = Arc::new(open_nrt(false));
            check(&TracingRuntime::new(runtime, trace.clone()))
        }
        Some(("probe", name)) => probe(name),
        _ => Err(format!("unknown child body {which:?}")),
    };
    child::report(&RunOutput { trace: trace.lines(), failure: result.err() });
}

/// Facts about `NrtRuntime` itself on the simulator library, one process each.
fn probe(name: &str) -> Result<(), String> {
    match name {
        "nrt_lib_path_folder" => return probe_nrt_lib_path_folder(),
        "nrt_lib_path_missing" => return probe_nrt_lib_path_missing(),
        "unknown_status" => return probe_unknown_status(),
        "foreign_buffer" => return probe_foreign_buffer(),
        "hlo_from_env" => return probe_hlo_from_env(),
        "disguised_buffer" => return probe_disguised_buffer(),
        "freed_member" => return probe_freed_member(),
        "every_function" => return probe_every_function(),
        _ => {}
    }
    let runtime = open_nrt(true);
    let [major, minor, ..] = runtime.library_version().numbers;
    let numbering = runtime.dtype_numbering();
    let model = load_scale(&runtime, 0).map_err(|err| err.to_string())?;
    let info = runtime.get_model_tensor_info(model).map_err(|err| err.to_string())?;
    let dtypes: Vec<NrtDtype> = info.iter().map(|entry| entry.dtype).collect();
    let expect = |ok: bool, what: String| if ok { Ok(()) } else { Err(what) };
    expect(dtypes == [NrtDtype::Float32, NrtDtype::Float32], format!("dtypes {dtypes:?}"))?;
    match name {
        "default_release" => {
            expect((major, minor) == (2, 28), format!("version {major}.{minor}"))?;
            expect(numbering == DtypeNumbering::Hardware2026, format!("numbering {numbering:?}"))?;
            expect(
                runtime.library_version().detail == sim::VERSION_DETAIL,
                format!("detail {:?}", runtime.library_version().detail),
            )?;
            let text = runtime.status_text(NrtStatus::ExecCompletedWithNumErr);
            expect(
                text.as_deref() == Some("NRT_EXEC_COMPLETED_WITH_NUM_ERR"),
                format!("{text:?}"),
            )?;
            let unknown = runtime.status_text(NrtStatus::Unknown(4242));
            expect(unknown.as_deref() == Some("NRT_STATUS_UNKNOWN"), format!("{unknown:?}"))
        }
        "legacy_release" => {
            expect((major, minor) == (2, 21), format!("version {major}.{minor}"))?;
            expect(numbering == DtypeNumbering::Legacy, format!("numbering {numbering:?}"))
        }
        _ => Err(format!("unknown probe {name:?}")),
    }
}

/// The `nrt` backend resolves every function of the table in the simulator's library, the
/// recent ones included (a real library may lack those; they are optional).
fn probe_every_function() -> Result<(), String> {
    let runtime = open_nrt(false);
    let missing: Vec<&str> = abi::functions::LibnrtFunction::ALL
        .iter()
        .filter(|function| !runtime.exports(**function))
        .map(|function| function.name())
        .collect();
    if missing.is_empty() { Ok(()) } else { Err(format!("not resolved: {missing:?}")) }
}

/// The real-libnrt backend hands attached memory to C, so it takes only a `SharedBuffer` (whose
/// address is guaranteed); another `ExternalBuffer` is refused before C sees it, and a
/// `SharedBuffer` is used in place.
fn probe_foreign_buffer() -> Result<(), String> {
    struct Liar;
    impl ExternalBuffer for Liar {
        fn len(&self) -> usize {
            1 << 20
        }
        fn read_at(&self, _: usize, _: &mut [u8]) {}
        fn write_at(&self, _: usize, _: &[u8]) {}
        fn address(&self) -> usize {
            16
        }
    }
    let runtime = open_nrt(true);
    let tensor = runtime.tensor_allocate_empty(b"t").map_err(|err| err.to_string())?;
    match runtime.tensor_attach_buffer(tensor, Arc::new(Liar)) {
        Err(err) if err.status == NrtStatus::Invalid => {}
        other => return Err(format!("a foreign buffer was not refused: {other:?}")),
    }
    let buffer = Arc::new(SharedBuffer::zeroed(8));
    runtime.tensor_attach_buffer(tensor, buffer.clone()).map_err(|err| err.to_string())?;
    runtime.tensor_write(tensor, 4, &[7]).map_err(|err| err.to_string())?;
    if buffer.to_vec() != [0, 0, 0, 0, 7, 0, 0, 0] {
        return Err(format!("the shared buffer was not written in place: {:?}", buffer.to_vec()));
    }
    Ok(())
}

/// A NEFF without HLO runs the module `NRTSIM_HLO` names (the parent writes `output0 = input0 ×
/// 3`, where the NEFF's own description would scale by 2 if it carried its program).
fn probe_hlo_from_env() -> Result<(), String> {
    let runtime = open_nrt(true);
    let opaque = sim::ModelDescription {
        hlo: None,
        ..testkit::models::scale_model(&[4], 2.0).description()
    };
    let model =
        runtime.load(&testkit::models::neff_of(&opaque), 0, 1).map_err(|err| err.to_string())?;
    let input =
        runtime.tensor_allocate(Placement::Device, 0, 16, b"in").map_err(|e| e.to_string())?;
    let output =
        runtime.tensor_allocate(Placement::Device, 0, 16, b"out").map_err(|e| e.to_string())?;
    runtime.tensor_write(input, 0, &f32_bytes(&[1.0, 2.0, 3.0, 4.0])).map_err(|e| e.to_string())?;
    let ins = runtime.allocate_tensor_set().map_err(|e| e.to_string())?;
    let outs = runtime.allocate_tensor_set().map_err(|e| e.to_string())?;
    runtime.add_tensor_to_tensor_set(ins, b"input0", input).map_err(|e| e.to_string())?;
    runtime.add_tensor_to_tensor_set(outs, b"output0", output).map_err(|e| e.to_string())?;
    let status = runtime.execute(model, ins, outs).map_err(|e| e.to_string())?;
    let mut read = vec![0u8; 16];
    runtime.tensor_read(output, 0, &mut read).map_err(|e| e.to_string())?;
    if status != NrtStatus::Success || read != f32_bytes(&[3.0, 6.0, 9.0, 12.0]) {
        return Err(format!("status {status:?}, output {read:02x?}, expected 3 × the input"));
    }
    Ok(())
}

/// An implementation that hands over a real `SharedBuffer` but reports another address and
/// length cannot make C use them: what reaches C is the `SharedBuffer`'s own memory.
fn probe_disguised_buffer() -> Result<(), String> {
    struct Disguise(Arc<SharedBuffer>);
    impl ExternalBuffer for Disguise {
        fn len(&self) -> usize {
            1 << 20
        }
        fn read_at(&self, _: usize, _: &mut [u8]) {}
        fn write_at(&self, _: usize, _: &[u8]) {}
        fn address(&self) -> usize {
            16
        }
        fn into_shared_buffer(self: Arc<Self>) -> Option<Arc<SharedBuffer>> {
            Some(Arc::clone(&self.0))
        }
    }
    let runtime = open_nrt(true);
    let tensor = runtime.tensor_allocate_empty(b"t").map_err(|err| err.to_string())?;
    let inner = Arc::new(SharedBuffer::zeroed(8));
    runtime
        .tensor_attach_buffer(tensor, Arc::new(Disguise(inner.clone())))
        .map_err(|err| err.to_string())?;
    let size = runtime.tensor_get_size(tensor).map_err(|err| err.to_string())?;
    if size != 8 {
        return Err(format!(
            "C was given the reported length: the tensor has {size} bytes, expected 8"
        ));
    }
    runtime.tensor_write(tensor, 4, &[7]).map_err(|err| err.to_string())?;
    if inner.to_vec() != [0, 0, 0, 0, 7, 0, 0, 0] {
        return Err(format!("the shared buffer was not written in place: {:?}", inner.to_vec()));
    }
    Ok(())
}

/// A launch through a set that names a tensor whose handle was freed is refused with
/// `NRT_INVALID_HANDLE` before it reaches libnrt (whose contract wants the tensor valid until the
/// set is destroyed; the set keeps the C tensor alive, so nothing dangles), as the simulator
/// refuses it; re-adding a live tensor under the name makes the set usable again.
fn probe_freed_member() -> Result<(), String> {
    let runtime = open_nrt(true);
    let model = load_scale(&runtime, 0).map_err(|err| err.to_string())?;
    let (inputs, outputs) = (
        runtime.allocate_tensor_set().map_err(|err| err.to_string())?,
        runtime.allocate_tensor_set().map_err(|err| err.to_string())?,
    );
    let allocate = |name: &str| {
        runtime
            .tensor_allocate(Placement::Device, 0, 16, name.as_bytes())
            .map_err(|err| err.to_string())
    };
    let (input, output) = (allocate("input0")?, allocate("output0")?);
    runtime.add_tensor_to_tensor_set(inputs, b"input0", input).map_err(|err| err.to_string())?;
    runtime.add_tensor_to_tensor_set(outputs, b"output0", output).map_err(|err| err.to_string())?;
    runtime.tensor_write(input, 0, &f32_bytes(&[1.0, 2.0, 3.0, 4.0])).map_err(|e| e.to_string())?;
    runtime.tensor_free(input).map_err(|err| err.to_string())?;
    match runtime.execute(model, inputs, outputs) {
        Err(err) if err.status == NrtStatus::InvalidHandle => {}
        other => return Err(format!("expected NRT_INVALID_HANDLE, got {other:?}")),
    }
    let fresh = allocate("input0")?;
    runtime.tensor_write(fresh, 0, &f32_bytes(&[1.0, 2.0, 3.0, 4.0])).map_err(|e| e.to_string())?;
    runtime.add_tensor_to_tensor_set(inputs, b"input0", fresh).map_err(|err| err.to_string())?;
    match runtime.execute(model, inputs, outputs) {
        Ok(NrtStatus::Success) => {}
        other => return Err(format!("the launch after re-adding failed: {other:?}")),
    }
    let mut out = vec![0; 16];
    runtime.tensor_read(output, 0, &mut out).map_err(|err| err.to_string())?;
    if out != f32_bytes(&[2.0, 4.0, 6.0, 8.0]) {
        return Err(format!("output {out:?}, expected the doubled input"));
    }
    Ok(())
}

/// `NRT_LIB_PATH` naming a folder opens `libnrt.so.1` inside it, before any other candidate.
fn probe_nrt_lib_path_folder() -> Result<(), String> {
    let runtime = NrtRuntime::open().map_err(|err| format!("open: {err}"))?;
    let expected = support::library_path();
    if runtime.library_path() != expected.to_string_lossy() {
        return Err(format!("opened {}, expected {}", runtime.library_path(), expected.display()));
    }
    runtime.get_visible_vnc_count().map(drop).map_err(|err| format!("after open: {err}"))
}

/// A missing `NRT_LIB_PATH` is tried first and reported; the search goes on and, on a machine
/// without libnrt, ends in an error that lists all three candidates in order.
fn probe_nrt_lib_path_missing() -> Result<(), String> {
    let bogus = std::env::var(nrt::search::NRT_LIB_PATH).unwrap_or_default();
    match NrtRuntime::open() {
        Err(nrt::NrtLoadError::NotFound { tried }) => {
            let names: Vec<&str> = tried.iter().map(|a| a.candidate.as_str()).collect();
            let expected = [bogus.as_str(), nrt::search::SONAME, nrt::search::SDK_LIBRARY];
            if names == expected {
                Ok(())
            } else {
                Err(format!("tried {names:?}, expected {expected:?}"))
            }
        }
        Err(other) => Err(format!("expected NotFound, got {other}")),
        // A machine with libnrt installed finds it after the missing path: never the bogus one.
        Ok(runtime) if runtime.library_path() != bogus => Ok(()),
        Ok(runtime) => Err(format!("opened the missing path {}", runtime.library_path())),
    }
}

/// A status code no table knows crosses the C ABI as `Unknown(code)`, never a panic.
fn probe_unknown_status() -> Result<(), String> {
    let runtime = open_nrt(true);
    match runtime.tensor_allocate(Placement::Virtual, 0, 8, b"t") {
        Err(err) if err.status == NrtStatus::Unknown(4242) => {
            let text = runtime.status_text(err.status);
            if text.as_deref() == Some("NRT_STATUS_UNKNOWN") {
                Ok(())
            } else {
                Err(format!("{text:?}"))
            }
        }
        other => Err(format!("expected NRT_STATUS_4242, got {other:?}")),
    }
}

fn bind_body(name: &str) -> TestBody {
    testkit::bind_suite()
        .into_iter()
        .find(|(n, _)| *n == name)
        .map(|(_, body)| body)
        .unwrap_or_else(|| panic!("no bind body {name:?}"))
}

fn check_body(name: &str) -> Check {
    runtime_checks()
        .into_iter()
        .find(|(n, _)| *n == name)
        .map(|(_, check)| check)
        .unwrap_or_else(|| panic!("no check {name:?}"))
}

// ---------------------------------------------------------------------------------------------
// Parent mode.

/// What one run gave: its result and its trace.
#[derive(Debug, PartialEq)]
struct Outcome {
    result: Result<(), String>,
    trace: Vec<String>,
}

impl From<RunOutput> for Outcome {
    fn from(output: RunOutput) -> Outcome {
        Outcome { result: output.failure.map_or(Ok(()), Err), trace: output.trace }
    }
}

/// Runs `which` in a child of this binary whose simulator library is the machine `config`
/// describes, with `extra` variables on top (the library search's, not the simulator's).
fn run_child(which: &str, config: &SimConfig, extra: &[(&str, String)]) -> Result<Outcome, String> {
    let exe = std::env::current_exe().map_err(|err| err.to_string())?;
    let mut command = Command::new(exe);
    command.env(CHILD, which);
    child::simulate(&mut command, config);
    command.envs(extra.iter().map(|(k, v)| (*k, v.as_str())));
    Ok(child::run(&mut command, which).into())
}

/// `Ok` when both runs passed with the same trace; otherwise says which failed or where the
/// traces first differ.
fn compare(sim: &Outcome, nrt: &Outcome) -> Result<(), String> {
    if let Err(message) = &sim.result {
        return Err(format!("the body fails on SimRuntime: {message}"));
    }
    if let Err(message) = &nrt.result {
        return Err(format!("the body fails on NrtRuntime over the C ABI: {message}"));
    }
    let n = sim.trace.len().max(nrt.trace.len());
    for i in 0..n {
        let (a, b) = (sim.trace.get(i), nrt.trace.get(i));
        if a != b {
            return Err(format!(
                "traces differ at line {}:\n  sim: {}\n  nrt: {}",
                i + 1,
                a.map_or("<end>", String::as_str),
                b.map_or("<end>", String::as_str)
            ));
        }
    }
    Ok(())
}

fn run_bind(name: &'static str, body: TestBody) -> Result<(), String> {
    let trace = Arc::new(Trace::new());
    let specs: Mutex<Vec<RuntimeSpec>> = Mutex::new(Vec::new());
    let factory = |spec: &RuntimeSpec| -> Arc<dyn Runtime> {
        specs.lock().unwrap_or_else(PoisonError::into_inner).push(spec.clone());
        let sim = SimRuntime::new(sim_config(spec)).expect("a small simulated machine");
        sim.init(Framework::NoFw, "", "").expect("nrt_init");
        Arc::new(TracingRuntime::new(Arc::new(sim), trace.clone()))
    };
    let result = body(&factory);
    let sim = Outcome { result, trace: trace.lines() };
    let specs = specs.into_inner().unwrap_or_else(PoisonError::into_inner);
    let spec = specs.first().cloned().unwrap_or_default();
    let several = specs.iter().any(|other| *other != spec);
    let listed = NEEDS_SEVERAL_MACHINES.iter().any(|(listed, _)| *listed == name);
    match (several, listed) {
        (true, true) => {
            return sim.result.map_err(|message| format!("fails on SimRuntime: {message}"));
        }
        (true, false) => {
            return Err(format!(
                "the body asks for several machines ({specs:?}); NrtRuntime has one per process: \
                 list it in NEEDS_SEVERAL_MACHINES with a reason"
            ));
        }
        (false, true) => {
            return Err(
                "listed in NEEDS_SEVERAL_MACHINES but asks for one machine: remove it".into()
            );
        }
        (false, false) => {}
    }
    let nrt = run_child(
        &format!("bind:{name}"),
        &sim_config(&spec),
        &[(CHILD_SPEC, format!("{spec:?}"))],
    )?;
    compare(&sim, &nrt)
}

fn run_check(name: &'static str, check: Check) -> Result<(), String> {
    let spec = RuntimeSpec::default();
    let trace = Arc::new(Trace::new());
    let sim = SimRuntime::new(sim_config(&spec)).expect("a small simulated machine");
    let result = check(&TracingRuntime::new(Arc::new(sim), trace.clone()));
    let sim = Outcome { result, trace: trace.lines() };
    let nrt = run_child(&format!("check:{name}"), &sim_config(&spec), &[])?;
    compare(&sim, &nrt)
}

/// Runs probe `name` in a child on the default spec's machine as `configure` changes it, with
/// `extra` library-search variables.
fn run_probe(
    name: &str,
    configure: impl FnOnce(&mut SimConfig),
    extra: &[(&str, &str)],
) -> Result<(), String> {
    let mut config = sim_config(&RuntimeSpec::default());
    configure(&mut config);
    let extra: Vec<(&str, String)> = extra.iter().map(|(k, v)| (*k, (*v).to_owned())).collect();
    run_child(&format!("probe:{name}"), &config, &extra)?.result
}

/// The default spec's machine, unchanged.
fn as_is(_: &mut SimConfig) {}

/// The comparison itself can fail, and says where.
fn compare_reports_the_first_difference() -> Result<(), String> {
    let line = |text: &str| text.to_owned();
    let a =
        Outcome { result: Ok(()), trace: vec![line("x -> NRT_SUCCESS"), line("y -> NRT_SUCCESS")] };
    let b =
        Outcome { result: Ok(()), trace: vec![line("x -> NRT_SUCCESS"), line("y -> NRT_INVALID")] };
    let c = Outcome { result: Err("boom".into()), trace: vec![] };
    let diff = compare(&a, &b).expect_err("different traces");
    let expected = "traces differ at line 2:\n  sim: y -> NRT_SUCCESS\n  nrt: y -> NRT_INVALID";
    if diff != expected || compare(&a, &c).is_ok() || compare(&a, &a).is_err() {
        return Err(format!("compare misreports: {diff:?}"));
    }
    Ok(())
}

fn main() {
    if let Ok(which) = std::env::var(CHILD) {
        child(&which);
        return;
    }
    let mut trials = Vec::new();
    for (name, body) in testkit::bind_suite() {
        trials.push(Trial::test(format!("bind::{name}"), move || {
            run_bind(name, body).map_err(Failed::from)
        }));
    }
    for (name, check) in runtime_checks() {
        trials.push(Trial::test(format!("checks::{name}"), move || {
            run_check(name, check).map_err(Failed::from)
        }));
    }
    trials.push(Trial::test("probe::default_release_is_2_28_with_hardware_dtypes", || {
        run_probe("default_release", as_is, &[]).map_err(Failed::from)
    }));
    trials.push(Trial::test("probe::runtime_version_2_21_reads_legacy_dtypes", || {
        run_probe(
            "legacy_release",
            |config| {
                config.release = ImitatedRelease {
                    minor: 21,
                    dtype_numbering: DtypeNumbering::for_runtime_version(2, 21),
                    ..ImitatedRelease::default()
                }
            },
            &[],
        )
        .map_err(Failed::from)
    }));
    trials.push(Trial::test("probe::nrt_lib_path_may_name_the_folder", || {
        let folder = support::library_dir().to_string_lossy().into_owned();
        run_probe("nrt_lib_path_folder", as_is, &[("NRT_LIB_PATH", &folder)]).map_err(Failed::from)
    }));
    trials.push(Trial::test("probe::a_missing_nrt_lib_path_is_reported_first", || {
        let missing = support::scratch_dir("missing").join("nothing-here/libnrt.so.1");
        let missing = missing.to_string_lossy().into_owned();
        run_probe(
            "nrt_lib_path_missing",
            as_is,
            &[("NRT_LIB_PATH", &missing), ("LD_LIBRARY_PATH", "")],
        )
        .map_err(Failed::from)
    }));
    trials.push(Trial::test("probe::an_unknown_status_code_survives_as_a_number", || {
        run_probe(
            "unknown_status",
            |config| {
                config.fault_plan =
                    FaultPlan::parse("nrt_tensor_allocate:1=4242").expect("a valid plan")
            },
            &[],
        )
        .map_err(Failed::from)
    }));
    trials.push(Trial::test("probe::every_function_of_the_table_resolves", || {
        run_probe("every_function", as_is, &[]).map_err(Failed::from)
    }));
    trials.push(Trial::test("probe::only_shared_buffers_are_attached_through_c", || {
        run_probe("foreign_buffer", as_is, &[]).map_err(Failed::from)
    }));
    trials.push(Trial::test("probe::nrtsim_hlo_gives_a_neff_without_hlo_its_program", || {
        let file = support::scratch_dir("hlo").join("scale3.hlo");
        let mut hlo = sim::hlo_text::HloText::new("scale3");
        let x = hlo.parameter(abi::dtype::Dltype::Float32, &[4]);
        let y = hlo.scale(&x, 3.0);
        std::fs::write(&file, hlo.finish(&[y])).map_err(|e| Failed::from(e.to_string()))?;
        run_probe(
            "hlo_from_env",
            |config| config.hlo_source = Some(sim::HloSource::File(file)),
            &[],
        )
        .map_err(Failed::from)
    }));
    trials.push(Trial::test("probe::a_disguised_buffer_reaches_c_with_its_own_address", || {
        run_probe("disguised_buffer", as_is, &[]).map_err(Failed::from)
    }));
    trials.push(Trial::test("probe::a_set_naming_a_freed_tensor_is_refused_before_libnrt", || {
        run_probe("freed_member", as_is, &[]).map_err(Failed::from)
    }));
    trials.push(Trial::test("compare_reports_the_first_difference", || {
        compare_reports_the_first_difference().map_err(Failed::from)
    }));
    libtest_mimic::run(&Arguments::from_args(), trials).exit();
}
