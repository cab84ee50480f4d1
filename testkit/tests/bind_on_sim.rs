//! Runs every body of `testkit::bind_suite` on `SimRuntime`, one named test each.

use std::sync::Arc;

use abi::runtime::Framework;
use abi::runtime::prelude::*;
use libtest_mimic::{Arguments, Failed, Trial};
use sim::SimRuntime;
use testkit::RuntimeSpec;

/// A quiet simulated machine as the spec asks, initialized.
fn sim_runtime(spec: &RuntimeSpec) -> Arc<dyn Runtime> {
    let sim = SimRuntime::new(testkit::sim_config(spec)).expect("a small simulated machine");
    sim.init(Framework::NoFw, "", "").expect("nrt_init");
    Arc::new(sim)
}

fn main() {
    let trials = testkit::bind_suite()
        .into_iter()
        .map(|(name, body)| {
            Trial::test(format!("sim::{name}"), move || body(&sim_runtime).map_err(Failed::from))
        })
        .collect();
    libtest_mimic::run(&Arguments::from_args(), trials).exit();
}
