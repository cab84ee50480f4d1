//! C programs written against `include/nrt/*.h`, compiled with the system C compiler and linked
//! with `-lnrt` against the simulator's `libnrt.so.1`: the canonical client flow and misuse.

mod support;

use std::path::Path;

use abi::metaneff::meta_tensor::DataType;
use support::{compile_c, compile_c_defining, compile_cxx, neff_file, run, run_within, text};
use testkit::models::{ModelDef, TensorDef, in_place_model, op_copy, scale_model};

#[test]
fn the_canonical_client_flow_computes_outputs_in_c() {
    let program = compile_c("client_flow");
    let neff = neff_file(&scale_model(&[4], 2.0).description(), "double");
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
    let neff = neff_file(&scale_model(&[4], 3.0).description(), "triple");
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
    let neff = neff_file(&scale_model(&[4], 2.0).description(), "faulty");
    let output = run(&program, &[&neff], &[("NRTSIM_FAULTS", "nrt_execute:1=EXEC_BAD_INPUT")]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("nrt_execute returned NRT_EXEC_BAD_INPUT (1002)"), "{}", text(&output));
}

/// A float16 model, `output0 = input0` over `f16[4]`, as a NEFF file.
fn half_neff() -> std::path::PathBuf {
    let model = ModelDef {
        inputs: vec![TensorDef::input("input0", DataType::Float16, &[4])],
        outputs: vec![TensorDef::output("output0", DataType::Float16, &[4])],
        ops: vec![op_copy("output0", "input0")],
        ..ModelDef::new("half")
    };
    neff_file(&model.description(), "half")
}

/// A client built on our headers (the 2.28 numbering) sees float16 as float16 from the default
/// release, and one built on the 2.27 public headers (the legacy numbering) sees float16 as
/// float16 from a library reporting 2.27; each misreads the other era's library (float16 as
/// uint16 or worse), which is why the numbering follows the reported version.
#[test]
fn a_client_of_each_header_era_reads_float16_from_a_library_of_its_era() {
    let neff = half_neff();
    let ours = compile_c("dtype_era");
    let of_2_27 = compile_c_defining("dtype_era", &["NRTSIM_CLIENT_OF_2_27"]);
    let era_2_27 = [("NRTSIM_RUNTIME_VERSION", "2.27.1")];
    for (program, minor, extra, want) in [
        (&ours, "28", &[][..], "dtype era 2.28 ok"),
        (&of_2_27, "27", &era_2_27[..], "dtype era 2.27 ok"),
    ] {
        let output = run(program, &[&neff, Path::new(minor)], extra);
        assert!(output.status.success(), "{want}: {}", text(&output));
        assert!(String::from_utf8_lossy(&output.stdout).contains(want), "{}", text(&output));
    }
    // Crossed: a 2.27 client of a 2.28 library reads FLOAT16's 7 as its UINT16.
    let output = run(&of_2_27, &[&neff, Path::new("28")], &[]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("input0 dtype is 7, a 2.27 client expected float16 (2), and reads uint16"),
        "{}",
        text(&output)
    );
    // The numbering variable still overrides the version.
    let forced = [("NRTSIM_RUNTIME_VERSION", "2.27.1"), ("NRTSIM_DTYPE_NUMBERING", "hardware")];
    let output = run(&ours, &[&neff, Path::new("27")], &forced);
    assert!(output.status.success(), "{}", text(&output));
}

#[test]
fn misuse_gives_each_documented_status_and_nothing_crashes() {
    let program = compile_c("misuse");
    let neff = neff_file(&scale_model(&[4], 2.0).description(), "misuse");
    let output = run(&program, &[&neff], &[]);
    assert!(output.status.success(), "{}", text(&output));
    assert!(String::from_utf8_lossy(&output.stdout).contains("misuse ok"), "{}", text(&output));
}

/// Batched and async I/O ops larger than their tensor are refused by range before the library
/// allocates their size (the program caps its address space, so allocating first fails it).
#[test]
fn oversized_batch_and_async_ops_are_refused_before_allocating() {
    let program = compile_c("oversized_ops");
    let output = run(&program, &[], &[]);
    assert!(output.status.success(), "{}", text(&output));
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("oversized ops ok"),
        "{}",
        text(&output)
    );
}

/// A bad configuration is refused loudly, not replaced by defaults.
#[test]
fn a_bad_environment_makes_every_call_invalid_and_says_why() {
    let program = compile_c("client_flow");
    let neff = neff_file(&scale_model(&[4], 2.0).description(), "badenv");
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

/// A caller pointer into the tensor's own storage (from `nrt_tensor_get_va`) is a valid source
/// and destination: the copy behaves like `memmove`. Then 1 TiB of virtual memory is refused
/// with `NRT_RESOURCE` and the process goes on.
#[test]
fn caller_memory_may_overlap_the_tensor_and_huge_allocations_are_refused() {
    let program = compile_c("memory");
    for placement in ["0", "2"] {
        let output = run(&program, &[Path::new(placement)], &[]);
        assert!(output.status.success(), "placement {placement}: {}", text(&output));
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(stdout.contains("memory ok"), "placement {placement}: {}", text(&output));
        // The time the refusal took, for the record (no assertion: timing is for benchmarks).
        println!("placement {placement}: {}", stdout.lines().next().unwrap_or_default());
    }
}

/// A NEFF without a device program, loaded and unloaded 2100 times by a C program: the
/// simulator's warning reaches stderr once per process, whatever the number of loads. The
/// program prints its data segment's growth over the last 2000 cycles, shown here for the record.
#[test]
fn a_warning_repeated_on_every_load_is_printed_once_per_process() {
    let program = compile_c("reload");
    let description = sim::ModelDescription { hlo: None, ..scale_model(&[4], 2.0).description() };
    let neff = neff_file(&description, "opaque");
    let output = run(&program, &[&neff, Path::new("2000")], &[("NRTSIM_QUIET", "0")]);
    assert!(output.status.success(), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("reload ok"), "{}", text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let warnings =
        stderr.lines().filter(|line| line.contains("carries no HLO device program")).count();
    assert_eq!(warnings, 1, "{}", text(&output));
    println!("{}", stdout.lines().last().unwrap_or_default());
}

/// The public API beyond the canonical flow, in C11: counts before init, info, memory stats,
/// batched I/O, the async flow, a system-trace capture, a profile, unsupported interfaces.
#[test]
fn the_public_api_works_from_c11() {
    let program = compile_c("public_api");
    let neff = neff_file(&scale_model(&[4], 2.0).description(), "public_api");
    let profile = support::scratch_dir("profile").join("model.json");
    let output = run(&program, &[&neff, &profile], &[("NRTSIM_INSTANCE", "trn2.48xlarge")]);
    assert!(output.status.success(), "{}", text(&output));
    assert!(String::from_utf8_lossy(&output.stdout).contains("public api ok"), "{}", text(&output));
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&profile).expect("the profile")).unwrap();
    assert_eq!(written["executions"].as_array().map(Vec::len), Some(2), "{written}");
}

/// The C checks of the public API can fail: a model that triples is caught at the batched read.
#[test]
fn the_public_api_program_reports_a_wrong_output() {
    let program = compile_c("public_api");
    let neff = neff_file(&scale_model(&[4], 3.0).description(), "public_api_triple");
    let profile = support::scratch_dir("profile").join("triple.json");
    let output = run(&program, &[&neff, &profile], &[("NRTSIM_INSTANCE", "trn2.48xlarge")]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(String::from_utf8_lossy(&output.stdout).contains("batched read"), "{}", text(&output));
}

/// The canonical flow, the async flow and a system-trace capture from C++17.
#[test]
fn the_public_api_works_from_cxx17() {
    let program = compile_cxx("public_api");
    let neff = neff_file(&scale_model(&[4], 2.0).description(), "public_api_cxx");
    let output = run(&program, &[&neff], &[]);
    assert!(output.status.success(), "{}", text(&output));
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("c++ public api ok"),
        "{}",
        text(&output)
    );
}

/// An exec callback that calls `nrt_async_drain_queued_execs` runs on the compute queue's worker,
/// which cannot wait for its own request: the drain returns `NRT_INVALID` instead of blocking
/// forever, and the launch, its output and a later drain from the client's thread are unharmed.
/// The program waits for the launch with a deadline of its own, and is killed here after a
/// minute, so a drain that hangs fails the test instead of hanging it.
#[test]
fn a_drain_from_the_exec_callback_returns_instead_of_waiting_for_itself() {
    let program = compile_c("callback_drain");
    let neff = neff_file(&scale_model(&[4], 2.0).description(), "callback_drain");
    let output = run_within(&program, &[&neff], &[], std::time::Duration::from_secs(60));
    assert!(output.status.success(), "{}", text(&output));
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("callback drain ok"),
        "{}",
        text(&output)
    );
}

/// Every handle type beyond tensors, sets and models: NULL, freed and wrong-kind handles get
/// their documented statuses and nothing crashes.
#[test]
fn misuse_of_every_new_handle_type_gives_its_status() {
    let program = compile_c("misuse_handles");
    let output = run(&program, &[], &[]);
    assert!(output.status.success(), "{}", text(&output));
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("misuse of handles ok"),
        "{}",
        text(&output)
    );
}

/// Four ranks on four threads and four NeuronCores: `nrt_build_global_comm`, then three rounds
/// of `nrt_barrier` and `nrt_all_gather`, each rank gathering every rank's bytes in rank order.
#[test]
fn four_ranks_on_threads_meet_and_gather_in_rank_order_from_c() {
    let program = compile_c("collectives");
    let output = run(&program, &[], &[("NRTSIM_CORES", "4")]);
    assert!(output.status.success(), "{}", text(&output));
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("collectives ok"),
        "{}",
        text(&output)
    );
}

/// The C checks of the collectives can fail, and a missing peer is a timeout, not a hang: on a
/// machine of two cores, ranks 2 and 3 cannot build their communicator, and ranks 0 and 1 give
/// up waiting for them at the barrier after `NRTSIM_COLLECTIVE_TIMEOUT_MS`.
#[test]
fn ranks_without_a_core_fail_and_their_peers_time_out_from_c() {
    let program = compile_c("collectives");
    let output =
        run(&program, &[], &[("NRTSIM_CORES", "2"), ("NRTSIM_COLLECTIVE_TIMEOUT_MS", "200")]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    for rank in [2, 3] {
        let line = format!("rank {rank}: nrt_build_global_comm returned NRT_INVALID");
        assert!(stdout.contains(&line), "{}", text(&output));
    }
    for rank in [0, 1] {
        let line = format!("rank {rank} round 0: nrt_barrier returned NRT_TIMEOUT");
        assert!(stdout.contains(&line), "{}", text(&output));
    }
}

/// What the simulator cannot provide is NRT_INVALID every time, and with `NRTSIM_LOG=1` each
/// such function says why exactly once.
#[test]
fn unsupported_interfaces_are_invalid_and_say_why_once() {
    let program = compile_c("unsupported");
    let output = run(&program, &[], &[("NRTSIM_LOG", "1")]);
    assert!(output.status.success(), "{}", text(&output));
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("unsupported ok"),
        "{}",
        text(&output)
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    for function in [
        "nrt_get_dmabuf_fd",
        "nrt_host_device_id_rid_map_get",
        "nrt_get_hbm_mmap_va",
        "nrt_get_attached_efa_bdf",
        "nrt_get_libnccl_net",
        "nrta_cc_prepare",
        "nrt_async_sendrecv_connect",
        "nrt_debug_client_connect",
        "nrt_debug_client_read_one_event",
    ] {
        let explained = stderr
            .lines()
            .filter(|line| line.starts_with(&format!("nrtsim: {function} is not supported")))
            .count();
        assert_eq!(explained, 1, "{function}:\n{stderr}");
    }
    assert!(
        stderr.contains("nrt_set_pool_eng_ucode called after nrt_init, expected it before"),
        "the after-init call of a before-init function is refused by the gate:\n{stderr}"
    );
}

/// The binding layer's C API (`nrtsim/bind.h`): a forward computes, and each misuse has its
/// status and a message naming what was expected; `forward_into` reads outputs into the
/// program's buffers and writes a donated input where it lies.
#[test]
fn the_binding_layers_c_api_runs_a_model_and_names_each_misuse() {
    let program = compile_c("bind");
    let model = scale_model(&[4], 2.0);
    let neff = neff_file(&model.description(), "bind");
    let metaneff = neff.with_extension("metaneff");
    std::fs::write(&metaneff, model.metaneff()).expect("write the metaneff");
    let in_place = in_place_model(true);
    let in_place_neff = neff_file(&in_place.description(), "bind_in_place");
    let in_place_metaneff = in_place_neff.with_extension("metaneff");
    std::fs::write(&in_place_metaneff, in_place.metaneff()).expect("write the metaneff");
    let output = run(&program, &[&neff, &metaneff, &in_place_neff, &in_place_metaneff], &[]);
    assert!(output.status.success(), "{}", text(&output));
    assert!(String::from_utf8_lossy(&output.stdout).contains("bind ok"), "{}", text(&output));
}
