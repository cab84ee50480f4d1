//! `nrtsim hlo run` from the outside: npy in, npy out, tuples flattened, bf16 as `<V2`, errors.

mod support;
use support::{nrtsim, scratch};

fn f32_npy(shape: &[u64], values: &[f32]) -> Vec<u8> {
    abi::neff::npy::encode("<f4", shape, &testkit::f32_bytes(values)).unwrap()
}

const MODULE: &str = "HloModule m

ENTRY main {
  a = f32[2,2] parameter(0)
  b = f32[2,2] parameter(1)
  d = f32[2,2] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  h = bf16[2,2] convert(d)
  ROOT t = (f32[2,2], bf16[2,2]) tuple(d, h)
}
";

#[test]
fn run_writes_one_npy_per_result_leaf() {
    let dir = scratch("tuple");
    let module = dir.join("m.hlo");
    std::fs::write(&module, MODULE).unwrap();
    std::fs::write(dir.join("a.npy"), f32_npy(&[2, 2], &[1.0, 2.0, 3.0, 4.0])).unwrap();
    std::fs::write(dir.join("b.npy"), f32_npy(&[2, 2], &[5.0, 6.0, 7.0, 8.0])).unwrap();
    let out_dir = dir.join("out");
    let out = nrtsim(&[
        "hlo",
        "run",
        module.to_str().unwrap(),
        "--input",
        dir.join("a.npy").to_str().unwrap(),
        "--input",
        dir.join("b.npy").to_str().unwrap(),
        "--output-dir",
        out_dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // [[1,2],[3,4]] . [[5,6],[7,8]] = [[19,22],[43,50]], worked out by hand.
    let first = std::fs::read(out_dir.join("output0.npy")).unwrap();
    let header = abi::neff::npy::parse_header("output0", &first).unwrap();
    assert_eq!((header.descr.as_str(), header.shape.as_slice()), ("<f4", &[2u64, 2][..]));
    let values: Vec<f32> = first[header.data_offset..]
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(values, vec![19.0, 22.0, 43.0, 50.0]);
    // The bf16 leaf: '<V2' (what np.save writes for ml_dtypes.bfloat16), the top halves of the f32s
    // (all four integers are exact in bf16): 19.0 = 0x41980000 → 0x4198.
    let second = std::fs::read(out_dir.join("output1.npy")).unwrap();
    let header = abi::neff::npy::parse_header("output1", &second).unwrap();
    assert_eq!(header.descr, "<V2");
    let bits: Vec<u16> = second[header.data_offset..]
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    assert_eq!(bits, vec![0x4198, 0x41b0, 0x422c, 0x4248]);
}

#[test]
fn run_with_too_few_inputs_names_the_parameters() {
    let dir = scratch("few");
    let module = dir.join("m.hlo");
    std::fs::write(&module, MODULE).unwrap();
    std::fs::write(dir.join("a.npy"), f32_npy(&[2, 2], &[1.0, 2.0, 3.0, 4.0])).unwrap();
    let out = nrtsim(&[
        "hlo",
        "run",
        module.to_str().unwrap(),
        "--input",
        dir.join("a.npy").to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("takes 2 inputs (f32[2,2], f32[2,2]), got 1"), "{stderr}");
}

#[test]
fn run_refuses_an_input_of_the_wrong_shape() {
    let dir = scratch("shape");
    let module = dir.join("m.hlo");
    std::fs::write(&module, MODULE).unwrap();
    std::fs::write(dir.join("a.npy"), f32_npy(&[4], &[1.0, 2.0, 3.0, 4.0])).unwrap();
    let a = dir.join("a.npy");
    let out = nrtsim(&[
        "hlo",
        "run",
        module.to_str().unwrap(),
        "--input",
        a.to_str().unwrap(),
        "--input",
        a.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("argument 0: expected f32[2,2], got f32[4]"), "{stderr}");
}

/// The nested-loop module of the interpreter's cases: 10^14 inner iterations.
fn nested_loops(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let case = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../hlo/tests/cases/nested_loops_stop_at_the_work_budget/module.hlo");
    let module = dir.join("nested.hlo");
    std::fs::copy(case, &module).unwrap();
    let input = dir.join("x.npy");
    std::fs::write(&input, abi::neff::npy::encode("<i4", &[], &0i32.to_le_bytes()).unwrap())
        .unwrap();
    (module, input)
}

#[test]
fn run_over_the_work_budget_fails_naming_the_flag() {
    let dir = scratch("work-budget");
    let (module, input) = nested_loops(&dir);
    let out = nrtsim(&[
        "hlo",
        "run",
        module.to_str().unwrap(),
        "--input",
        input.to_str().unwrap(),
        "--output-dir",
        dir.join("out").to_str().unwrap(),
        "--work-budget",
        "100000",
    ]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("raise the limit with --work-budget"), "{stderr}");
    assert!(stderr.contains("work budget of 100000 element-operations"), "{stderr}");
    assert!(!dir.join("out/output0.npy").exists(), "a stopped run wrote an output");
}

/// By default the run is bounded by libnrt's execution timeout in estimated device time: the
/// flag, or `NEURON_RT_EXEC_TIMEOUT` as libnrt reads it, sets it (a millisecond here, some 22 000
/// inner iterations of the nested loops), and the error names the flag that raises it.
#[test]
fn run_past_the_execution_timeout_fails_naming_the_flag_and_the_variable_sets_it_too() {
    let dir = scratch("exec-timeout");
    let (module, input) = nested_loops(&dir);
    let args = |extra: &[&'static str]| {
        let mut args: Vec<String> = ["hlo", "run", module.to_str().unwrap(), "--input"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        args.push(input.to_str().unwrap().to_owned());
        args.extend(extra.iter().map(|s| s.to_string()));
        args
    };
    let flagged = std::process::Command::new(support::nrtsim_exe())
        .args(args(&["--exec-timeout", "0.001"]))
        .output()
        .unwrap();
    let from_env = std::process::Command::new(support::nrtsim_exe())
        .args(args(&[]))
        .env("NEURON_RT_EXEC_TIMEOUT", "0.001")
        .output()
        .unwrap();
    for out in [flagged, from_env] {
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("raise the limit with --exec-timeout"), "{stderr}");
        assert!(stderr.contains("within the execution timeout of 0.001 s"), "{stderr}");
    }
    let bad = std::process::Command::new(support::nrtsim_exe())
        .args(args(&[]))
        .env("NEURON_RT_EXEC_TIMEOUT", "30s")
        .output()
        .unwrap();
    assert!(!bad.status.success());
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(stderr.contains("NEURON_RT_EXEC_TIMEOUT=\"30s\" is invalid"), "{stderr}");
    let flag = nrtsim(&["hlo", "run", "m.hlo", "--exec-timeout", "soon"]);
    assert!(!flag.status.success());
    let stderr = String::from_utf8_lossy(&flag.stderr);
    assert!(stderr.contains("expected a number of seconds, 0 or none"), "{stderr}");
}

#[test]
fn run_over_the_time_limit_fails_naming_the_flag() {
    let dir = scratch("time-limit");
    let (module, input) = nested_loops(&dir);
    let out = nrtsim(&[
        "hlo",
        "run",
        module.to_str().unwrap(),
        "--input",
        input.to_str().unwrap(),
        "--work-budget",
        "none",
        "--time-limit-ms",
        "50",
    ]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("raise the limit with --time-limit-ms"), "{stderr}");
    assert!(stderr.contains("time limit of 50 ms"), "{stderr}");
}
