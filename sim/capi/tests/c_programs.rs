//! C programs written against `include/nrt/*.h`, compiled with the system C compiler and linked
//! with `-lnrt` against the simulator's `libnrt.so.1`: the canonical client flow and misuse.

mod support;

use support::{compile_c, neff_file, run, scale_model, text};

#[test]
fn the_canonical_client_flow_computes_outputs_in_c() {
    let program = compile_c("client_flow");
    let neff = neff_file(&scale_model(4, 2.0), "double");
    let output = run(&program, &[&neff], &[]);
    assert!(output.status.success(), "{}", text(&output));
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("client flow ok"),
        "{}",
        text(&output)
    );
}

/// The C checks can fail: a model that triples instead of doubling is caught and named.
#[test]
fn the_client_flow_reports_a_wrong_output() {
    let program = compile_c("client_flow");
    let neff = neff_file(&scale_model(4, 3.0), "triple");
    let output = run(&program, &[&neff], &[]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("output0[0] is 3"),
        "{}",
        text(&output)
    );
}

/// A fault plan in the environment reaches a C program: the first launch fails with its status.
#[test]
fn a_fault_plan_from_the_environment_fails_the_launch() {
    let program = compile_c("client_flow");
    let neff = neff_file(&scale_model(4, 2.0), "faulty");
    let output = run(&program, &[&neff], &[("NRTSIM_FAULTS", "nrt_execute:1=EXEC_BAD_INPUT")]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("nrt_execute returned NRT_EXEC_BAD_INPUT (1002)"), "{}", text(&output));
}

#[test]
fn misuse_gives_each_documented_status_and_nothing_crashes() {
    let program = compile_c("misuse");
    let neff = neff_file(&scale_model(4, 2.0), "misuse");
    let output = run(&program, &[&neff], &[]);
    assert!(output.status.success(), "{}", text(&output));
    assert!(String::from_utf8_lossy(&output.stdout).contains("misuse ok"), "{}", text(&output));
}

/// A bad configuration is refused loudly, not replaced by defaults.
#[test]
fn a_bad_environment_makes_every_call_invalid_and_says_why() {
    let program = compile_c("client_flow");
    let neff = neff_file(&scale_model(4, 2.0), "badenv");
    let output = run(&program, &[&neff], &[("NRTSIM_CORES", "many")]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("NRTSIM_CORES=\"many\" is invalid"), "{}", text(&output));
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("NRT_INVALID (2)"),
        "{}",
        text(&output)
    );
}
