//! The backend-independent checks of `testkit::checks`, run on the simulator.

mod common;

use abi::runtime::Placement;
use abi::status::NrtStatus;
use common::{arithmetic_model, describe_loader, f32_bytes, small_sim};
use testkit::checks;

#[test]
fn version_before_init_is_release_2_or_later() {
    checks::version_before_init_is_release_2_or_later(&small_sim()).unwrap();
}

#[test]
fn sets_refuse_a_tensor_handle_that_never_existed() {
    checks::sets_refuse_a_tensor_handle_that_never_existed(&small_sim()).unwrap();
}

#[test]
fn tensor_memory_and_bounds() {
    checks::tensor_memory_and_bounds(&small_sim()).unwrap();
}

#[test]
fn attached_buffers_are_caller_memory() {
    checks::attached_buffers_are_caller_memory(&small_sim()).unwrap();
}

#[test]
fn execute_checks_the_io_contract() {
    let sim = small_sim();
    let load = describe_loader(&sim, arithmetic_model(4).description());
    checks::execute_checks_the_io_contract(&sim, &load).unwrap();
}

#[test]
fn loads_take_free_cores() {
    let sim = small_sim();
    let load = describe_loader(&sim, arithmetic_model(4).description());
    checks::loads_take_free_cores(&sim, &load).unwrap();
}

#[test]
fn canonical_client_flow_on_a_description_computes_outputs() {
    for placement in [Placement::Device, Placement::Virtual, Placement::Host] {
        let sim = small_sim();
        let load = describe_loader(&sim, arithmetic_model(4).description());
        let x = f32_bytes(&[1.0, 2.0, 3.0, -4.0]);
        let y = f32_bytes(&[0.5, 0.25, 10.0, 2.0]);
        let sum = f32_bytes(&[1.5, 2.25, 13.0, -2.0]);
        let prod = f32_bytes(&[1.0, 1.0, 60.0, -16.0]);
        checks::canonical_client_flow(
            &sim,
            &load,
            placement,
            &[("x", &x), ("y", &y)],
            &[("sum", &sum), ("prod", &prod)],
            NrtStatus::Success,
        )
        .unwrap();
    }
}

/// The checks must be able to fail: a wrong expectation is reported, not swallowed.
#[test]
fn a_wrong_expected_output_fails_the_check() {
    let sim = small_sim();
    let load = describe_loader(&sim, arithmetic_model(1).description());
    let x = f32_bytes(&[1.0]);
    let wrong = f32_bytes(&[3.0]);
    let err = checks::canonical_client_flow(
        &sim,
        &load,
        Placement::Virtual,
        &[("x", &x), ("y", &x)],
        &[("sum", &wrong)],
        NrtStatus::Success,
    )
    .unwrap_err();
    assert!(err.0.contains("output \"sum\""), "{err}");
}
