//! Loading real NEFF bytes (from the `abi::neff` writer) and running them end to end.

mod common;

use abi::dtype::Dltype;
use abi::runtime::prelude::*;
use abi::runtime::{Framework, ModelId, NrtError, Placement, TensorUsage};
use abi::status::NrtStatus;
use common::{
    arithmetic_model, copy_hlo, copy_model, f32_bytes, nan_model, small_config, small_sim,
};
use sim::neff_load::{describe_neff, neff_spec_of};
use sim::{HLO_MEMBER, ModelDescription, SimConfig, SimRuntime};
use testkit::checks;

fn neff_of(description: &ModelDescription) -> Vec<u8> {
    neff_spec_of(description).expect("spec").to_bytes().expect("neff bytes")
}

fn neff_loader(neff: &[u8]) -> impl Fn(&dyn Runtime, i32) -> Result<ModelId, NrtError> + '_ {
    move |runtime, vnc| runtime.load(neff, vnc, 1)
}

#[test]
fn canonical_client_flow_on_a_written_neff_with_a_program() {
    let neff = neff_of(&arithmetic_model(4).description());
    let x = f32_bytes(&[1.0, 2.0, 3.0, -4.0]);
    let y = f32_bytes(&[0.5, 0.25, 10.0, 2.0]);
    let sum = f32_bytes(&[1.5, 2.25, 13.0, -2.0]);
    let prod = f32_bytes(&[1.0, 1.0, 60.0, -16.0]);
    for placement in [Placement::Device, Placement::Virtual] {
        checks::canonical_client_flow(
            &small_sim(),
            &neff_loader(&neff),
            placement,
            &[("x", &x), ("y", &y)],
            &[("sum", &sum), ("prod", &prod)],
            NrtStatus::Success,
        )
        .unwrap();
    }
}

#[test]
fn canonical_client_flow_reports_1003_from_a_neff_when_numerical_errors_are_on() {
    let neff = neff_of(&nan_model(0).description());
    let input = f32_bytes(&[1.0, 2.0, 3.0, 4.0]);
    let sim = SimRuntime::new(small_config(1, true)).unwrap();
    let mut expected = f32_bytes(&[f32::NAN, 2.0, 3.0, 4.0]);
    // The NaN the program writes is the canonical quiet NaN.
    expected[..4].copy_from_slice(&f32::NAN.to_le_bytes());
    checks::canonical_client_flow(
        &sim,
        &neff_loader(&neff),
        Placement::Virtual,
        &[("input0", &input)],
        &[("output0", &expected)],
        NrtStatus::ExecCompletedWithNumErr,
    )
    .unwrap();
}

#[test]
fn io_contract_and_core_choice_hold_for_neff_loads() {
    let neff = neff_of(&arithmetic_model(2).description());
    checks::execute_checks_the_io_contract(&small_sim(), &neff_loader(&neff)).unwrap();
    checks::loads_take_free_cores(&small_sim(), &neff_loader(&neff)).unwrap();
}

#[test]
fn a_neff_round_trips_through_the_writer_into_the_same_description() {
    let description = arithmetic_model(3).description().with_constant("bias", vec![1, 2, 3, 4]);
    let read_back = describe_neff(&neff_of(&description)).unwrap();
    assert_eq!(read_back, description);
}

#[test]
fn tensor_info_of_a_neff_comes_from_its_signature() {
    let sim = small_sim();
    sim.init(Framework::NoFw, "", "").unwrap();
    let description = ModelDescription::new("typed")
        .with_input("input0", Dltype::BFloat16, &[2, 8])
        .with_output("output0", Dltype::Int64, &[3]);
    let model = sim.load(&neff_of(&description), -1, 1).unwrap();
    let info = sim.get_model_tensor_info(model).unwrap();
    assert_eq!(info.len(), 2);
    assert_eq!(
        (info[0].usage, info[0].size, info[0].shape.clone()),
        (TensorUsage::Input, 32, vec![2, 8])
    );
    assert_eq!(info[0].dtype.code(sim.dtype_numbering()), Some(6), "BFLOAT16 in 2026 numbering");
    assert_eq!((info[1].usage, info[1].size), (TensorUsage::Output, 24));
}

/// The process's data segment and heap, in pages (`/proc/self/statm`, field 6); 0 where the
/// file does not exist.
fn data_pages() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    statm.split_whitespace().nth(5).and_then(|pages| pages.parse().ok()).unwrap_or(0)
}

/// 2000 loads and unloads of a NEFF without a device program keep one warning record (with its
/// count), not one per load. The data segment's growth is printed for the record; the assertion
/// is on the record, which is what grew.
#[test]
fn two_thousand_loads_without_program_keep_one_warning_record() {
    let sim = SimRuntime::new(small_config(1, false)).expect("sim");
    sim.init(Framework::NoFw, "", "").unwrap();
    let description = ModelDescription { hlo: None, ..copy_model(16).description() };
    let neff = neff_of(&description);
    let cycle = || {
        let model = sim.load(&neff, -1, 1).unwrap();
        sim.unload(model).unwrap();
    };
    // Warm up allocator caches, so the measurement sees growth, not first use.
    (0..100).for_each(|_| cycle());
    let before = data_pages();
    (0..2000).for_each(|_| cycle());
    let after = data_pages();
    println!(
        "2000 load/unload cycles: data segment {before} -> {after} pages ({:+} KiB)",
        (after as i64 - before as i64) * 4
    );
    let warnings = sim.warnings();
    assert_eq!(warnings.len(), 1, "one record per kind of warning, got {}", warnings.len());
    assert!(warnings[0].contains("carries no HLO device program"), "{warnings:?}");
    assert_eq!(sim.warning_count(), 2100, "every occurrence is counted");
}

#[test]
fn a_neff_without_program_loads_and_warns_once() {
    let sim = small_sim();
    sim.init(Framework::NoFw, "", "").unwrap();
    let description = ModelDescription { hlo: None, ..copy_model(16).description() };
    sim.load(&neff_of(&description), -1, 1).unwrap();
    assert_eq!(sim.warnings().len(), 1);
}

#[test]
fn a_bad_program_member_is_invalid_at_load() {
    let sim = small_sim();
    sim.init(Framework::NoFw, "", "").unwrap();
    // A module over f32 where the NEFF says uint8: refused, naming both sides.
    let bad = copy_model(16).description().with_hlo(copy_hlo(Dltype::Float32, 4));
    let err = sim.load(&neff_of(&bad), -1, 1).unwrap_err();
    assert_eq!(err.status, NrtStatus::Invalid);
    assert!(
        err.detail.contains("parameter 0 (f32[4]) and input \"input0\"")
            && err.detail.contains("against dltype uint8"),
        "{err}"
    );
    let mut spec = neff_spec_of(&copy_model(16).description()).unwrap();
    spec.extra_members.insert(HLO_MEMBER.into(), b"HloModule m\nENTRY e {".to_vec());
    let err = sim.load(&spec.to_bytes().unwrap(), -1, 1).unwrap_err();
    assert_eq!(err.status, NrtStatus::Invalid);
    assert!(err.detail.contains(HLO_MEMBER), "{err}");
}

/// `SimConfig::load_limits` bounds what `nrt_load` parses: the NEFF's variables and its
/// program's instructions and computations. A model past one is `NRT_INVALID` naming the
/// variable that raises it; at the model's own counts it loads.
#[test]
fn a_model_past_the_load_limits_is_invalid_naming_the_variable() {
    let neff = neff_of(&arithmetic_model(4).description());
    let vars: usize = abi::neff::Neff::parse(&neff, &abi::neff::ReadOptions::default())
        .unwrap()
        .graphs
        .iter()
        .map(|graph| graph.vars.len())
        .sum();
    let module = hlo::load_module(&describe_neff(&neff).unwrap().hlo.unwrap()).unwrap();
    let instructions: usize = module.computations.iter().map(|c| c.instructions.len()).sum();
    let computations = module.computations.len();
    let limits = sim::config::LoadLimits {
        max_neff_vars: vars,
        hlo: hlo::LoadLimits { max_computations: computations, max_instructions: instructions },
        ..sim::config::LoadLimits::default()
    };
    let load = |load_limits: sim::config::LoadLimits| {
        let sim = SimRuntime::new(SimConfig { load_limits, ..small_config(1, false) }).unwrap();
        sim.init(Framework::NoFw, "", "").unwrap();
        sim.load(&neff, 0, 1)
    };
    load(limits).expect("a model at the limits loads");
    let mut over_vars = limits;
    over_vars.max_neff_vars -= 1;
    let mut over_instructions = limits;
    over_instructions.hlo.max_instructions -= 1;
    let mut over_computations = limits;
    over_computations.hlo.max_computations -= 1;
    for (over, variable) in [
        (over_vars, sim::config::MAX_NEFF_VARS_ENV),
        (over_instructions, sim::config::MAX_HLO_INSTRUCTIONS_ENV),
        (over_computations, sim::config::MAX_HLO_COMPUTATIONS_ENV),
    ] {
        let err = load(over).unwrap_err();
        assert_eq!(err.status, NrtStatus::Invalid, "{variable}: {err}");
        assert!(err.detail.contains(&format!("set {variable} higher")), "{variable}: {err}");
    }
}

#[test]
fn a_newer_neff_format_is_unsupported_neff_version() {
    let sim = small_sim();
    sim.init(Framework::NoFw, "", "").unwrap();
    let mut spec = neff_spec_of(&copy_model(4).description()).unwrap();
    spec.header.version_major = 3;
    let err = sim.load(&spec.to_bytes().unwrap(), -1, 1).unwrap_err();
    assert_eq!(err.status, NrtStatus::UnsupportedNeffVersion);
    let err = sim.load(&[0u8; 10], -1, 1).unwrap_err();
    assert_eq!(err.status, NrtStatus::Invalid);
}

#[test]
fn load_collectives_checks_the_rank() {
    let sim = small_sim();
    sim.init(Framework::NoFw, "", "").unwrap();
    let neff = neff_of(&copy_model(4).description());
    sim.load_collectives(&neff, -1, 1, 1, 2).unwrap();
    let err = sim.load_collectives(&neff, -1, 1, 2, 2).unwrap_err();
    assert_eq!(err.status, NrtStatus::Invalid);
}

#[test]
fn a_neff_without_hlo_runs_the_module_nrtsim_hlo_names_for_it() {
    let dir = std::env::temp_dir().join(format!("nrtsim-hlo-env-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let opaque = ModelDescription { hlo: None, ..arithmetic_model(2).description() };
    let neff = neff_of(&opaque);
    let program = arithmetic_model(2).description().hlo.unwrap();
    let file = dir.join("arithmetic.hlo");
    std::fs::write(&file, &program).unwrap();
    let x = f32_bytes(&[1.0, 2.0]);
    let y = f32_bytes(&[3.0, 4.0]);
    let expected = [("sum", f32_bytes(&[4.0, 6.0])), ("prod", f32_bytes(&[6.0, 16.0]))];
    let expected: Vec<(&str, &[u8])> = expected.iter().map(|(n, b)| (*n, b.as_slice())).collect();
    // A file serves every NEFF; a directory only the NEFF whose sha256 names a file in it.
    let hash: String = sha256_hex(&neff);
    std::fs::write(dir.join(format!("{hash}.hlo")), &program).unwrap();
    for source in [sim::HloSource::File(file.clone()), sim::HloSource::Directory(dir.clone())] {
        let sim = SimRuntime::new(SimConfig { hlo_source: Some(source), ..small_config(2, false) })
            .unwrap();
        checks::canonical_client_flow(
            &sim,
            &neff_loader(&neff),
            Placement::Device,
            &[("x", &x), ("y", &y)],
            &expected,
            NrtStatus::Success,
        )
        .unwrap();
        assert!(sim.warnings().is_empty(), "{:?}", sim.warnings());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

const ALL_REDUCE: &str = "HloModule all_reduce\n\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n\nENTRY main {\n  input0 = f32[4] parameter(0)\n  sum = f32[4] all-reduce(input0), replica_groups={}, to_apply=add\n  ROOT outputs = (f32[4]) tuple(sum)\n}\n";

#[test]
fn the_ranks_of_a_collective_launch_meet_and_all_reduce() {
    let sim = SimRuntime::new(small_config(4, false)).unwrap();
    sim.init(Framework::NoFw, "", "").unwrap();
    let description = ModelDescription::new("all_reduce")
        .with_input("input0", Dltype::Float32, &[4])
        .with_output("output0", Dltype::Float32, &[4])
        .with_hlo(ALL_REDUCE);
    let neff = neff_of(&description);
    let outputs: Vec<Vec<u8>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4u32)
            .map(|rank| {
                let (sim, neff) = (&sim, &neff);
                scope.spawn(move || {
                    let model = sim.load_collectives(neff, rank as i32, 1, rank, 4).unwrap();
                    let input =
                        sim.tensor_allocate(Placement::Device, rank as i32, 16, b"in").unwrap();
                    let value = (rank + 1) as f32;
                    sim.tensor_write(input, 0, &f32_bytes(&[value, value * 10.0, 0.5, -value]))
                        .unwrap();
                    let output =
                        sim.tensor_allocate(Placement::Device, rank as i32, 16, b"out").unwrap();
                    let (ins, outs) =
                        (sim.allocate_tensor_set().unwrap(), sim.allocate_tensor_set().unwrap());
                    sim.add_tensor_to_tensor_set(ins, b"input0", input).unwrap();
                    sim.add_tensor_to_tensor_set(outs, b"output0", output).unwrap();
                    assert_eq!(sim.execute(model, ins, outs), Ok(NrtStatus::Success));
                    let mut read = vec![0u8; 16];
                    sim.tensor_read(output, 0, &mut read).unwrap();
                    read
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    // 1 + 2 + 3 + 4 = 10 in every rank.
    for read in outputs {
        assert_eq!(read, f32_bytes(&[10.0, 100.0, 2.0, -10.0]));
    }
    // Loaded with nrt_load (no ranks), the same module runs alone: a world of one.
    let model = sim.load(&neff, 0, 1).unwrap();
    let input = sim.tensor_allocate(Placement::Device, 0, 16, b"in").unwrap();
    sim.tensor_write(input, 0, &f32_bytes(&[1.0, 2.0, 3.0, 4.0])).unwrap();
    let output = sim.tensor_allocate(Placement::Device, 0, 16, b"out").unwrap();
    let (ins, outs) = (sim.allocate_tensor_set().unwrap(), sim.allocate_tensor_set().unwrap());
    sim.add_tensor_to_tensor_set(ins, b"input0", input).unwrap();
    sim.add_tensor_to_tensor_set(outs, b"output0", output).unwrap();
    assert_eq!(sim.execute(model, ins, outs), Ok(NrtStatus::Success));
    let mut read = vec![0u8; 16];
    sim.tensor_read(output, 0, &mut read).unwrap();
    assert_eq!(read, f32_bytes(&[1.0, 2.0, 3.0, 4.0]));
}

/// One rank's launch of a loaded collective model: writes `input` and returns what it read back.
fn launch_rank(
    sim: &SimRuntime,
    model: ModelId,
    vnc: i32,
    input: &[f32],
) -> Result<Vec<u8>, NrtError> {
    let in_tensor = sim.tensor_allocate(Placement::Device, vnc, 16, b"in")?;
    sim.tensor_write(in_tensor, 0, &f32_bytes(input))?;
    let out_tensor = sim.tensor_allocate(Placement::Device, vnc, 16, b"out")?;
    let (ins, outs) = (sim.allocate_tensor_set()?, sim.allocate_tensor_set()?);
    sim.add_tensor_to_tensor_set(ins, b"input0", in_tensor)?;
    sim.add_tensor_to_tensor_set(outs, b"output0", out_tensor)?;
    sim.execute(model, ins, outs)?;
    let mut read = vec![0u8; 16];
    sim.tensor_read(out_tensor, 0, &mut read)?;
    Ok(read)
}

/// Two instances of one collective model (the same NEFF loaded twice for ranks 0 and 1, on
/// cores 0-1 and 2-3, as two `SpmdModel`s of one NEFF are), launched at once with different
/// inputs: each instance's ranks meet each other, not the other instance's.
#[test]
fn two_instances_of_one_collective_model_launched_at_once_each_all_reduce_their_own_ranks() {
    let description = ModelDescription::new("all_reduce")
        .with_input("input0", Dltype::Float32, &[4])
        .with_output("output0", Dltype::Float32, &[4])
        .with_hlo(ALL_REDUCE);
    let neff = neff_of(&description);
    // (instance, rank) in load order: one instance after the other, then interleaved (rank 0
    // of both, then rank 1 of both). The `k`-th load of each rank belongs to the `k`-th instance.
    for order in [[(0, 0), (0, 1), (1, 0), (1, 1)], [(0, 0), (1, 0), (0, 1), (1, 1)]] {
        let config = SimConfig {
            collective_timeout: std::time::Duration::from_secs(60),
            ..small_config(4, false)
        };
        let sim = SimRuntime::new(config).unwrap();
        sim.init(Framework::NoFw, "", "").unwrap();
        let mut models = [[None; 2]; 2];
        for (instance, rank) in order {
            let vnc = (2 * instance + rank) as i32;
            models[instance][rank] =
                Some(sim.load_collectives(&neff, vnc, 1, rank as u32, 2).unwrap());
        }
        // Instance 0's ranks bring 1 and 2, instance 1's bring 100 and 200.
        let input = |instance: usize, rank: usize| {
            let value = ((rank + 1) * if instance == 0 { 1 } else { 100 }) as f32;
            [value, -value, 0.5, 2.0 * value]
        };
        // Rank 0 of instance 0 and rank 1 of instance 1 launch first and wait; had the two
        // instances one rendezvous, those two would make a round of their own and mix 1 with
        // 200. Then the other two ranks launch.
        let reads: Vec<Vec<Result<Vec<u8>, NrtError>>> = std::thread::scope(|scope| {
            let spawn = |instance: usize, rank: usize| {
                let (sim, model) = (&sim, models[instance][rank].unwrap());
                let vnc = (2 * instance + rank) as i32;
                scope.spawn(move || launch_rank(sim, model, vnc, &input(instance, rank)))
            };
            let (first_0_0, first_1_1) = (spawn(0, 0), spawn(1, 1));
            std::thread::sleep(std::time::Duration::from_millis(200));
            let (then_0_1, then_1_0) = (spawn(0, 1), spawn(1, 0));
            [[first_0_0, then_0_1], [then_1_0, first_1_1]]
                .into_iter()
                .map(|ranks| ranks.into_iter().map(|h| h.join().unwrap()).collect())
                .collect()
        });
        let sums = [f32_bytes(&[3.0, -3.0, 1.0, 6.0]), f32_bytes(&[300.0, -300.0, 1.0, 600.0])];
        for (instance, ranks) in reads.into_iter().enumerate() {
            for (rank, read) in ranks.into_iter().enumerate() {
                assert_eq!(
                    read.as_ref(),
                    Ok(&sums[instance]),
                    "load order {order:?}: instance {instance}, rank {rank}"
                );
            }
        }
    }
}

/// A simulator with rank 0 of a two-rank all-reduce loaded on core 0, whose peers wait
/// `collective_timeout` for each other.
fn rank0_of_an_all_reduce_of_two(collective_timeout: std::time::Duration) -> (SimRuntime, ModelId) {
    let config = SimConfig { collective_timeout, ..small_config(2, false) };
    let sim = SimRuntime::new(config).unwrap();
    sim.init(Framework::NoFw, "", "").unwrap();
    let description = ModelDescription::new("all_reduce")
        .with_input("input0", Dltype::Float32, &[4])
        .with_output("output0", Dltype::Float32, &[4])
        .with_hlo(ALL_REDUCE);
    let model = sim.load_collectives(&neff_of(&description), 0, 1, 0, 2).unwrap();
    (sim, model)
}

/// `nrt_close` while a rank of a collective launch waits for a peer that never comes: the
/// launch returns NRT_CLOSED at once instead of waiting out its timeout. The timeout is short
/// (10 s), so a close that does not wake the rank fails this test in seconds (the launch ends
/// with NRT_TIMEOUT, or late) instead of hanging it for the default hour.
#[test]
fn closing_the_runtime_ends_a_waiting_collective_launch_with_nrt_closed() {
    const TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
    let (sim, model) = rank0_of_an_all_reduce_of_two(TIMEOUT);
    let (error, after_close) = std::thread::scope(|scope| {
        let waiting = scope.spawn(|| launch_rank(&sim, model, 0, &[1.0; 4]));
        // However the two threads interleave, the launch ends with NRT_CLOSED: waiting in the
        // rendezvous when the close comes, or refused by the gate after it.
        std::thread::sleep(std::time::Duration::from_millis(100));
        let closed_at = std::time::Instant::now();
        sim.close();
        let error = waiting.join().unwrap().expect_err("the runtime was closed");
        (error, closed_at.elapsed())
    });
    assert_eq!(error.status, NrtStatus::Closed, "{error}");
    assert!(
        after_close < TIMEOUT / 2,
        "the launch returned {after_close:?} after nrt_close, expected at once (its timeout is {TIMEOUT:?})"
    );
}

/// A collective launch whose peers never come fails with NRT_TIMEOUT (within the configured
/// timeout) instead of reporting success with outputs that were never written.
#[test]
fn a_collective_launch_without_its_peers_times_out() {
    let (sim, model) = rank0_of_an_all_reduce_of_two(std::time::Duration::from_millis(200));
    let input = sim.tensor_allocate(Placement::Device, 0, 16, b"in").unwrap();
    let output = sim.tensor_allocate(Placement::Device, 0, 16, b"out").unwrap();
    sim.tensor_write(output, 0, &f32_bytes(&[7.0; 4])).unwrap();
    let (ins, outs) = (sim.allocate_tensor_set().unwrap(), sim.allocate_tensor_set().unwrap());
    sim.add_tensor_to_tensor_set(ins, b"input0", input).unwrap();
    sim.add_tensor_to_tensor_set(outs, b"output0", output).unwrap();
    let error = sim.execute(model, ins, outs).unwrap_err();
    assert_eq!(error.status, NrtStatus::Timeout, "{error}");
    let mut read = vec![0u8; 16];
    sim.tensor_read(output, 0, &mut read).unwrap();
    assert_eq!(read, f32_bytes(&[7.0; 4]), "a failed launch leaves the outputs as they were");
}

/// A NEFF laid out as neuronx-cc 2.23 writes it: `metadata.signatures.default.outputs` present
/// and empty, the outputs only in the graph form (see `abi/tests/data/README.md`). Tensor info
/// reports `output0` as float16 [128, 128], as real libnrt does, not dtype 0 with no shape.
#[test]
fn tensor_info_of_a_neuronx_cc_neff_takes_outputs_from_the_graph_form() {
    use abi::dtype::NrtDtype;
    use abi::neff::{NeffHeader, assemble_neff, write_payload};
    let neff_json: &[u8] = include_bytes!("../../abi/tests/data/neuronx_cc_2_23_neff.json");
    let kelf: &[u8] = br#"{"graphs":[{"definition":"sg00/def.json","name":"sg00"},
        {"definition":"sg01/def.json","name":"sg01"}],"version":"0.5","target":"cayman"}"#;
    let def_json: &[u8] = br#"{"var":{"SB":{"type":"state-buffer","var_id":0},
        "x":{"type":"input","var_id":1,"size":65536},"y":{"type":"input","var_id":2,"size":65536},
        "output0":{"type":"output","var_id":3,"size":32768}}}"#;
    let payload = write_payload(
        2,
        &[
            ("kelf-0.json", kelf),
            ("neff.json", neff_json),
            ("sg00/def.json", def_json),
            ("sg01/def.json", def_json),
        ],
    )
    .expect("members");
    let neff = assemble_neff(&NeffHeader::default(), &payload).expect("neff");
    let sim = small_sim();
    sim.init(Framework::NoFw, "", "").unwrap();
    let model = sim.load(&neff, -1, 1).unwrap();
    let info = sim.get_model_tensor_info(model).unwrap();
    let rows: Vec<(&str, TensorUsage, usize, NrtDtype, Vec<u32>)> = info
        .iter()
        .map(|entry| {
            (entry.name.as_str(), entry.usage, entry.size, entry.dtype, entry.shape.clone())
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("x", TensorUsage::Input, 65536, NrtDtype::Float16, vec![128, 256]),
            ("y", TensorUsage::Input, 65536, NrtDtype::Float16, vec![256, 128]),
            ("output0", TensorUsage::Output, 32768, NrtDtype::Float16, vec![128, 128]),
        ]
    );
}

#[test]
fn a_zero_byte_output_needs_no_tensor_and_a_sized_one_does() {
    // The module's results: an empty slice and the negation; the NEFF keeps both variables.
    const HLO: &str = "HloModule empty\n\nENTRY main {\n  x = f32[2] parameter(0)\n  e = f32[0] slice(x), slice={[0:0]}\n  n = f32[2] negate(x)\n  ROOT t = (f32[0], f32[2]) tuple(e, n)\n}\n";
    let sim = small_sim();
    sim.init(Framework::NoFw, "", "").unwrap();
    let description = ModelDescription::new("empty")
        .with_input("x", Dltype::Float32, &[2])
        .with_output("empty", Dltype::Float32, &[0])
        .with_output("neg", Dltype::Float32, &[2])
        .with_hlo(HLO);
    let model = sim.load(&neff_of(&description), 0, 1).unwrap();
    let input = sim.tensor_allocate(Placement::Device, 0, 8, b"x").unwrap();
    sim.tensor_write(input, 0, &f32_bytes(&[1.5, -2.0])).unwrap();
    let output = sim.tensor_allocate(Placement::Device, 0, 8, b"neg").unwrap();
    let (ins, outs) = (sim.allocate_tensor_set().unwrap(), sim.allocate_tensor_set().unwrap());
    sim.add_tensor_to_tensor_set(ins, b"x", input).unwrap();
    // Without "neg" the launch is refused, naming it; "empty" is never asked for.
    let error = sim.execute(model, ins, outs).unwrap_err();
    assert!(error.detail.contains("output \"neg\": the output set has no tensor"), "{error}");
    sim.add_tensor_to_tensor_set(outs, b"neg", output).unwrap();
    assert_eq!(sim.execute(model, ins, outs), Ok(NrtStatus::Success));
    let mut read = vec![0u8; 8];
    sim.tensor_read(output, 0, &mut read).unwrap();
    assert_eq!(read, f32_bytes(&[-1.5, 2.0]));
}
