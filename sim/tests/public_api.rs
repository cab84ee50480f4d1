//! The simulator's behaviour for the rest of the public API: the pre-init rules of the function
//! table, counts and memory statistics, output completion, `nrt_memcpy_to_device`, the event
//! stream seen by a system-trace capture, and the async queues over real runtime calls.

mod common;

use std::sync::Arc;

use abi::functions::{LibnrtFunction, PreInit};
use abi::runtime::prelude::*;
use abi::runtime::{Framework, Placement, SysTraceConfig, SysTraceFetch};
use abi::status::NrtStatus;
use common::{copy_model, small_sim};
use sim::async_queues::{AsyncQueues, ExecutionUnit, Job};

fn status<T>(result: Result<T, abi::runtime::NrtError>) -> NrtStatus {
    result.map_or_else(|err| err.status, |_| NrtStatus::Success)
}

#[test]
fn the_gate_follows_each_functions_pre_init_rule() {
    let sim = small_sim();
    for &function in LibnrtFunction::ALL {
        let before = status(sim.gate(function));
        let want = match function.info().pre_init {
            PreInit::Gated => NrtStatus::Uninitialized,
            PreInit::Allowed | PreInit::Required | PreInit::Ungated => NrtStatus::Success,
        };
        assert_eq!(before, want, "{function} before nrt_init");
    }
    sim.init(Framework::NoFw, "", "").unwrap();
    assert_eq!(status(sim.gate(LibnrtFunction::nrt_set_pool_eng_ucode)), NrtStatus::Invalid);
    assert_eq!(status(sim.gate(LibnrtFunction::nrt_execute)), NrtStatus::Success);
    sim.close();
    assert_eq!(status(sim.gate(LibnrtFunction::nrt_execute)), NrtStatus::Closed);
    assert_eq!(status(sim.gate(LibnrtFunction::nrt_get_visible_nc_count)), NrtStatus::Success);
}

#[test]
fn counts_and_memory_stats_come_from_the_machine() {
    let sim = small_sim();
    assert_eq!(sim.get_total_nc_count(), Ok(2));
    assert_eq!(sim.get_visible_nc_count(), Ok(2));
    assert_eq!(status(sim.get_vnc_memory_stats(0)), NrtStatus::Uninitialized);
    sim.init(Framework::NoFw, "", "").unwrap();
    let before = sim.get_vnc_memory_stats(1).unwrap();
    assert_eq!(before.bytes_limit, 64 << 20);
    let _tensor = sim.tensor_allocate(Placement::Device, 1, 1 << 20, b"big").unwrap();
    let after = sim.get_vnc_memory_stats(1).unwrap();
    assert!(after.bytes_used >= before.bytes_used + (1 << 20), "{before:?} -> {after:?}");
    assert_eq!(status(sim.get_vnc_memory_stats(2)), NrtStatus::Invalid);
    let model = sim.load_description(&copy_model(16).description(), 0, 2).unwrap();
    assert_eq!(sim.get_model_nc_count(model), Ok(2));
    assert_eq!(sim.get_model_vnc_count(model), Ok(2));
    assert_eq!(sim.get_model_instance_count(model), Ok(1));
    sim.unload(model).unwrap();
    assert_eq!(status(sim.get_model_vnc_count(model)), NrtStatus::InvalidHandle);
}

#[test]
fn output_completion_counts_launches_and_times_out() {
    let sim = small_sim();
    sim.init(Framework::NoFw, "", "").unwrap();
    let model = sim.load_description(&copy_model(16).description(), 0, 1).unwrap();
    let input = sim.tensor_allocate(Placement::Device, 0, 16, b"input0").unwrap();
    let output = sim.tensor_allocate(Placement::Device, 0, 16, b"output0").unwrap();
    let (ins, outs) = (sim.allocate_tensor_set().unwrap(), sim.allocate_tensor_set().unwrap());
    sim.add_tensor_to_tensor_set(ins, b"input0", input).unwrap();
    sim.add_tensor_to_tensor_set(outs, b"output0", output).unwrap();
    assert_eq!(status(sim.tensor_check_output_completion(output, 0, 1)), NrtStatus::Timeout);
    sim.execute_repeat(model, ins, outs, 3).unwrap();
    assert_eq!(sim.tensor_check_output_completion(output, 0, 3), Ok(()));
    assert_eq!(status(sim.tensor_check_output_completion(output, 500, 4)), NrtStatus::Timeout);
    assert_eq!(status(sim.tensor_check_output_completion(input, 0, 1)), NrtStatus::Timeout);
    sim.tensor_reset_output_completion(output).unwrap();
    assert_eq!(status(sim.tensor_check_output_completion(output, 0, 1)), NrtStatus::Timeout);
}

#[test]
fn a_capture_sees_loads_launches_and_device_writes() {
    let sim = small_sim();
    sim.init(Framework::NoFw, "", "").unwrap();
    sim.sys_trace_start(&SysTraceConfig::default()).unwrap();
    let model = sim.load_description(&copy_model(16).description(), 1, 1).unwrap();
    let input = sim.tensor_allocate(Placement::Device, 1, 16, b"input0").unwrap();
    let output = sim.tensor_allocate(Placement::Device, 1, 16, b"output0").unwrap();
    let (ins, outs) = (sim.allocate_tensor_set().unwrap(), sim.allocate_tensor_set().unwrap());
    sim.add_tensor_to_tensor_set(ins, b"input0", input).unwrap();
    sim.add_tensor_to_tensor_set(outs, b"output0", output).unwrap();
    sim.tensor_write(input, 0, &[1; 16]).unwrap();
    sim.execute(model, ins, outs).unwrap();
    let json: serde_json::Value =
        serde_json::from_str(&sim.sys_trace_fetch_events(&SysTraceFetch::default()).unwrap())
            .unwrap();
    let kinds: Vec<(&str, &str, u64)> = json["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let (kind, phase) = (e["event_type"].as_str().unwrap(), e["phase"].as_str().unwrap());
            (kind, phase, e["lnc_idx"].as_u64().unwrap())
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("model_load", "start", 1),
            ("model_load", "stop", 1),
            ("dma_to_device", "start", 1),
            ("dma_to_device", "stop", 1),
            ("nc_exec_running", "start", 1),
            ("nc_exec_running", "stop", 1)
        ]
    );
    let (start, stop) = (&json["events"][4], &json["events"][5]);
    assert_eq!(start["tracking_id"], stop["tracking_id"]);
    assert!(stop["data"]["nc_timestamp_ns"].as_u64() >= start["data"]["nc_timestamp_ns"].as_u64());
    assert_eq!(stop["data"]["status"], "NRT_SUCCESS");
    let unknown =
        SysTraceConfig { disabled_event_types: vec!["nope".into()], ..Default::default() };
    assert_eq!(status(sim.sys_trace_start(&unknown)), NrtStatus::Invalid);
    sim.sys_trace_stop().unwrap();
    assert_eq!(status(sim.sys_trace_stop()), NrtStatus::Invalid);
}

#[test]
fn async_requests_run_the_runtime_calls_in_order() {
    let sim = Arc::new(small_sim());
    sim.init(Framework::NoFw, "", "").unwrap();
    let tensor = sim.tensor_allocate(Placement::Device, 0, 4, b"t").unwrap();
    let queues = AsyncQueues::new(2);
    let key = queues.key(0, ExecutionUnit::TensorWrite, 0).unwrap();
    let tracker = queues.tracker_create(0).unwrap();
    let mut seqs = Vec::new();
    for value in 1..=50u8 {
        let sim = Arc::clone(&sim);
        let job: Job = Box::new(move |_| sim.tensor_write(tensor, 0, &[value; 4]));
        seqs.push(queues.schedule(key, Some(tracker), job).unwrap());
    }
    let sim_for_bad = Arc::clone(&sim);
    let bad = queues
        .schedule(
            key,
            Some(tracker),
            Box::new(move |_| sim_for_bad.tensor_write(tensor, 2, &[0; 4])),
        )
        .unwrap();
    queues.drain(0).unwrap();
    let mut out = [0u8; 4];
    sim.tensor_read(tensor, 0, &mut out).unwrap();
    assert_eq!(out, [50; 4], "the last write in the queue wins");
    assert!(seqs.iter().all(|&seq| queues.is_completed(seq) == Ok(true)));
    assert_eq!(queues.tracker_errors(tracker).unwrap(), vec![(bad, NrtStatus::Invalid)]);
}

#[test]
fn faults_reach_the_new_functions_by_their_table_names() {
    let plan =
        sim::FaultPlan::parse("nrt_get_vnc_memory_stats:1=HW_ERROR,nrt_sys_trace_start:2=RESOURCE")
            .expect("both functions are faultable");
    let sim =
        sim::SimRuntime::new(sim::SimConfig { fault_plan: plan, ..common::small_config(1, false) })
            .expect("a valid plan");
    sim.init(Framework::NoFw, "", "").unwrap();
    assert_eq!(status(sim.get_vnc_memory_stats(0)), NrtStatus::HwError);
    assert_eq!(status(sim.get_vnc_memory_stats(0)), NrtStatus::Success);
    assert_eq!(status(sim.sys_trace_start(&SysTraceConfig::default())), NrtStatus::Success);
    sim.sys_trace_stop().unwrap();
    assert_eq!(status(sim.sys_trace_start(&SysTraceConfig::default())), NrtStatus::Resource);
    let refused = sim::FaultPlan::parse("nrt_sys_trace_buffer_free:1=FAILURE").unwrap_err();
    assert!(refused.to_string().contains("not faultable"), "{refused}");
}
