//! Behaviour only the simulator has: configuration, counters, staging, the device program,
//! numerical errors, fault injection, memory accounting.

mod common;

use abi::dtype::{Dltype, NrtDtype};
use abi::runtime::prelude::*;
use abi::runtime::{Framework, ModelId, Placement, SetId, TensorId, TensorUsage};
use abi::status::NrtStatus;
use common::{arithmetic_model, copy_model, f32_bytes, f32_values, small_config, small_sim};
use sim::hlo_text::HloText;
use sim::{FaultPlan, ModelDescription, SimConfig, SimRuntime, SlotKind, VarDescription};

fn init(sim: &SimRuntime) {
    sim.init(Framework::Pytorch, "2.9", "2.9").expect("init");
}

/// Allocates one tensor per info entry on `placement`, returns the sets and tensors by name.
fn bind(
    sim: &SimRuntime,
    model: ModelId,
    placement: Placement,
) -> (SetId, SetId, Vec<(String, TensorId)>) {
    let input_set = sim.allocate_tensor_set().unwrap();
    let output_set = sim.allocate_tensor_set().unwrap();
    let mut tensors = Vec::new();
    for entry in sim.get_model_tensor_info(model).unwrap() {
        let tensor = sim.tensor_allocate(placement, 0, entry.size, entry.name.as_bytes()).unwrap();
        let set = if entry.usage == TensorUsage::Input { input_set } else { output_set };
        sim.add_tensor_to_tensor_set(set, entry.name.as_bytes(), tensor).unwrap();
        tensors.push((entry.name, tensor));
    }
    (input_set, output_set, tensors)
}

fn tensor_named(tensors: &[(String, TensorId)], name: &str) -> TensorId {
    tensors.iter().find(|(n, _)| n == name).map(|(_, t)| *t).expect("tensor")
}

fn read(sim: &SimRuntime, tensor: TensorId) -> Vec<u8> {
    let mut out = vec![0u8; sim.tensor_get_size(tensor).unwrap()];
    sim.tensor_read(tensor, 0, &mut out).unwrap();
    out
}

/// `SimConfig` is the simulator's own: a vector sets the core count but cannot build a runtime
/// from a refused config.
#[test]
fn version_and_counts_follow_the_config() {
    let sim = SimRuntime::new(small_config(3, false)).unwrap();
    let version = sim.get_version().unwrap();
    assert_eq!((version.major, version.minor, version.patch, version.maintenance), (2, 28, 0, 0));
    assert_eq!(version.detail, "nrtsim simulated libnrt");
    assert_eq!(sim.get_total_vnc_count(), Ok(3));
    init(&sim);
    assert_eq!(sim.get_visible_vnc_count(), Ok(3));
    assert!(SimRuntime::new(SimConfig { n_cores: 0, ..small_config(1, false) }).is_err());
}

/// The in-memory description (`load_description`) is the simulator's own way in; the vector
/// `execute/tensor_info_lists_inputs_then_outputs` pins the order and sizes through a NEFF, this
/// pins dtypes and shapes, which a step's `expect_info` does not compare, and that a scratch
/// variable is not listed.
#[test]
fn tensor_info_lists_inputs_then_outputs_with_dtype_shape_and_size() {
    let sim = small_sim();
    init(&sim);
    let description = ModelDescription::new("info")
        .with_output("out", Dltype::BFloat16, &[2, 3])
        .with_input("b", Dltype::Int32, &[5])
        .with_var(VarDescription::new("scratch", 2, SlotKind::TmpBuf, 128))
        .with_input("a", Dltype::Float16, &[4]);
    let model = sim.load_description(&description, -1, 1).unwrap();
    let info = sim.get_model_tensor_info(model).unwrap();
    let summary: Vec<_> =
        info.iter().map(|e| (e.name.as_str(), e.usage, e.size, e.dtype, e.shape.clone())).collect();
    assert_eq!(
        summary,
        vec![
            ("b", TensorUsage::Input, 20, NrtDtype::Int32, vec![5]),
            ("a", TensorUsage::Input, 8, NrtDtype::Float16, vec![4]),
            ("out", TensorUsage::Output, 12, NrtDtype::BFloat16, vec![2, 3]),
        ]
    );
}

/// `device_bytes_in_use` is the simulator's accounting, which no libnrt call reports: a slice
/// keeps its parent's storage and every free returns it (the vector
/// `memory/hbm_exhaustion_is_resource` pins the status alone).
#[test]
fn device_memory_exhaustion_is_resource_and_frees_return_to_zero() {
    let sim = small_sim();
    init(&sim);
    let big = sim.tensor_allocate(Placement::Device, 0, 48 << 20, b"big").unwrap();
    let err = sim.tensor_allocate(Placement::Device, 0, 32 << 20, b"more").unwrap_err();
    assert_eq!(err.status, NrtStatus::Resource);
    let on1 = sim.tensor_allocate(Placement::Device, 1, 32 << 20, b"other core").unwrap();
    assert_eq!(sim.device_bytes_in_use(0), Some(48 << 20));
    let slice = sim.tensor_allocate_slice(big, 0, 8, b"slice").unwrap();
    sim.tensor_free(big).unwrap();
    assert_eq!(sim.device_bytes_in_use(0), Some(48 << 20), "the slice keeps the storage");
    sim.tensor_free(slice).unwrap();
    sim.tensor_free(on1).unwrap();
    assert_eq!(sim.device_bytes_in_use(0), Some(0));
    assert_eq!(sim.device_bytes_in_use(1), Some(0));
    sim.tensor_allocate(Placement::Device, 0, 64 << 20, b"all of it").unwrap();
}

/// Host memory is sized by the caller: a terabyte is a resource shortage, not an abort, and the
/// runtime stays usable. (Relies on the kernel refusing a mapping the machine cannot back, which
/// its default overcommit policy does.)
#[test]
fn a_terabyte_of_host_memory_is_resource_and_the_runtime_goes_on() {
    let sim = small_sim();
    init(&sim);
    for placement in [Placement::Virtual, Placement::Host] {
        let err = sim.tensor_allocate(placement, 0, 1 << 40, b"huge").unwrap_err();
        assert_eq!(err.status, NrtStatus::Resource, "{placement:?}: {err}");
    }
    let err = sim.tensor_allocate(Placement::Virtual, 0, usize::MAX, b"all").unwrap_err();
    assert_eq!(err.status, NrtStatus::Resource, "{err}");
    let tensor = sim.tensor_allocate(Placement::Virtual, 0, 2 << 20, b"mapped").unwrap();
    sim.tensor_write(tensor, (2 << 20) - 1, &[5]).unwrap();
    assert_eq!(read(&sim, tensor)[(2 << 20) - 2..], [0, 5]);
}

/// Staging is visible only in the simulator's accounting (`device_bytes_in_use`).
#[test]
fn load_stages_constants_and_scratch_and_unload_frees_them() {
    let sim = small_sim();
    init(&sim);
    let constant = f32_bytes(&[10.0, 20.0, 30.0, 40.0]);
    let mut window = VarDescription::new("window", 4, SlotKind::VirtualTmpBuf, 16);
    window.backing_variable_off = Some(4096);
    let description = ModelDescription::new("staged")
        .with_input("input0", Dltype::Float32, &[4])
        .with_output("output0", Dltype::Float32, &[4])
        .with_constant("bias", constant)
        .with_var(VarDescription::new("tmp", 3, SlotKind::TmpBuf, 16))
        .with_var(window)
        .with_hlo(
            "HloModule staged\n\nENTRY main {\n  x = f32[4] parameter(0)\n  bias = f32[4] constant({10, 20, 30, 40})\n  sum = f32[4] add(x, bias)\n  half = f32[] constant(0.5)\n  halves = f32[4] broadcast(half), dimensions={}\n  out = f32[4] multiply(sum, halves)\n  ROOT t = (f32[4]) tuple(out)\n}\n",
        );
    let before = sim.device_bytes_in_use(0).unwrap();
    let model = sim.load_description(&description, 0, 1).unwrap();
    assert!(sim.device_bytes_in_use(0).unwrap() > before + 4096);
    let (inputs, outputs, tensors) = bind(&sim, model, Placement::Virtual);
    sim.tensor_write(tensor_named(&tensors, "input0"), 0, &f32_bytes(&[1.0, 2.0, 3.0, 4.0]))
        .unwrap();
    assert_eq!(sim.execute(model, inputs, outputs), Ok(NrtStatus::Success));
    assert_eq!(
        f32_values(&read(&sim, tensor_named(&tensors, "output0"))),
        vec![5.5, 11.0, 16.5, 22.0]
    );
    sim.unload(model).unwrap();
    assert_eq!(sim.device_bytes_in_use(0), Some(before));
}

/// A golden trace holds the status, not the detail (`load/bad_program_is_invalid_at_load`):
/// this pins that the detail names both sides, and that a failed load stages nothing.
#[test]
fn a_program_that_does_not_fit_the_signature_is_invalid_at_load_naming_both_sides() {
    let sim = small_sim();
    init(&sim);
    let mut hlo = HloText::new("two");
    let a = hlo.parameter(Dltype::Uint8, &[16]);
    let _b = hlo.parameter(Dltype::Uint8, &[16]);
    let description = copy_model(16).description().with_hlo(hlo.finish(&[a]));
    let err = sim.load_description(&description, -1, 1).unwrap_err();
    assert_eq!(err.status, NrtStatus::Invalid);
    assert!(
        err.detail.contains("the module has 2 parameters, the neff 1 input variables (\"input0\")"),
        "{err}"
    );
    assert_eq!(sim.device_bytes_in_use(0), Some(0), "a failed load stages nothing");
}

/// The vector `load/opaque_neff_executes_with_zero_outputs` pins the outputs; the one warning per
/// model is the simulator's own channel, which no trace carries.
#[test]
fn a_model_without_program_runs_opaque_with_zero_outputs_and_one_warning() {
    let sim = small_sim();
    init(&sim);
    let description = ModelDescription { hlo: None, ..copy_model(8).description() };
    let model = sim.load_description(&description, -1, 1).unwrap();
    let (inputs, outputs, tensors) = bind(&sim, model, Placement::Virtual);
    let output = tensor_named(&tensors, "output0");
    sim.tensor_write(tensor_named(&tensors, "input0"), 0, &[1; 8]).unwrap();
    sim.tensor_write(output, 0, &[9; 8]).unwrap();
    assert_eq!(sim.execute(model, inputs, outputs), Ok(NrtStatus::Success));
    assert_eq!(sim.execute(model, inputs, outputs), Ok(NrtStatus::Success));
    assert_eq!(read(&sim, output), vec![0; 8]);
    let warnings = sim.warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("opaque"), "{warnings:?}");
}

/// The counters are the simulator's own (`core_counters`), which no libnrt call reports.
#[test]
fn core_counters_count_host_device_moves_but_not_memset_or_device_copies() {
    let sim = small_sim();
    init(&sim);
    let device = sim.tensor_allocate(Placement::Device, 0, 64, b"device").unwrap();
    let other = sim.tensor_allocate(Placement::Device, 0, 64, b"other").unwrap();
    let host = sim.tensor_allocate(Placement::Host, 0, 64, b"host").unwrap();
    sim.tensor_write(device, 0, &[1; 64]).unwrap();
    sim.tensor_memset(device, 0, 7, 64).unwrap();
    sim.tensor_copy(device, 0, other, 0, 64).unwrap();
    let after_device_only = sim.core_counters(0).unwrap();
    assert_eq!((after_device_only.bytes_to_device, after_device_only.bytes_from_device), (64, 0));
    assert_eq!(after_device_only.dma_descriptors, 1);
    sim.tensor_copy(host, 0, device, 0, 16).unwrap();
    sim.tensor_copy(device, 0, host, 0, 8).unwrap();
    assert_eq!(read(&sim, other), vec![7; 64], "the memset and the copy happened");
    let after = sim.core_counters(0).unwrap();
    assert_eq!((after.bytes_to_device, after.bytes_from_device), (64 + 16, 8 + 64));
    assert_eq!(after.dma_descriptors, 4);
}

/// The vector `execute/repeat_count_runs_the_program_that_many_times` pins the outputs; the
/// per-model and per-core counters are the simulator's own.
#[test]
fn execute_repeat_runs_n_times_and_counters_count_bytes_descriptors_launches() {
    let sim = small_sim();
    init(&sim);
    let model = sim.load_description(&copy_model(100 << 10).description(), 1, 1).unwrap();
    let (inputs, outputs, tensors) = bind(&sim, model, Placement::Virtual);
    sim.tensor_write(tensor_named(&tensors, "input0"), 0, &[3; 100 << 10]).unwrap();
    assert_eq!(sim.execute_repeat(model, inputs, outputs, 3), Ok(NrtStatus::Success));
    let counters = sim.model_counters(model).unwrap();
    assert_eq!(counters.launches, 3);
    assert_eq!(counters.bytes_to_device, 3 * (100 << 10));
    assert_eq!(counters.bytes_from_device, 3 * (100 << 10));
    assert_eq!(counters.dma_descriptors, 3 * 2 * 2, "100 KiB takes two 64 KiB descriptors");
    assert_eq!(sim.core_counters(1).unwrap().launches, 3);
    assert_eq!(sim.core_counters(0).unwrap().launches, 0);
    assert_eq!(read(&sim, tensor_named(&tensors, "output0")), vec![3; 100 << 10]);
    let err = sim.execute_repeat(model, inputs, outputs, -1).unwrap_err();
    assert_eq!(err.status, NrtStatus::Invalid);
    assert_eq!(sim.model_counters(ModelId(u64::MAX)), None);
}

/// That a device tensor on the model's core moves no bytes shows only in the simulator's
/// counters.
#[test]
fn device_tensors_of_the_model_core_are_used_in_place_without_dma() {
    let sim = small_sim();
    init(&sim);
    let model = sim.load_description(&arithmetic_model(2).description(), 0, 1).unwrap();
    let (inputs, outputs, tensors) = bind(&sim, model, Placement::Device);
    sim.tensor_write(tensor_named(&tensors, "x"), 0, &f32_bytes(&[2.0, 3.0])).unwrap();
    sim.tensor_write(tensor_named(&tensors, "y"), 0, &f32_bytes(&[4.0, 5.0])).unwrap();
    assert_eq!(sim.execute(model, inputs, outputs), Ok(NrtStatus::Success));
    assert_eq!(f32_values(&read(&sim, tensor_named(&tensors, "sum"))), vec![6.0, 8.0]);
    assert_eq!(f32_values(&read(&sim, tensor_named(&tensors, "prod"))), vec![16.0, 30.0]);
    let counters = sim.model_counters(model).unwrap();
    assert_eq!(
        (counters.bytes_to_device, counters.bytes_from_device, counters.launches),
        (0, 0, 1)
    );
}

/// A vector names faults by call number; the fraction form and its seed are the simulator's
/// configuration, with no trace to compare.
#[test]
fn fault_fractions_are_deterministic_for_a_seed() {
    let outcomes = |seed: u64| {
        let plan =
            FaultPlan::parse(&format!("seed={seed},nrt_tensor_allocate:p0.5=RESOURCE")).unwrap();
        let sim =
            SimRuntime::new(SimConfig { fault_plan: plan, ..small_config(1, false) }).unwrap();
        init(&sim);
        (0..64)
            .map(|_| {
                sim.tensor_allocate(Placement::Virtual, 0, 4, b"t")
                    .map(|_| ())
                    .map_err(|e| e.status)
            })
            .collect::<Vec<_>>()
    };
    let first = outcomes(11);
    assert_eq!(first, outcomes(11));
    assert_ne!(first, outcomes(12));
    assert!(first.contains(&Err(NrtStatus::Resource)) && first.contains(&Ok(())));
}

/// A refused `SimConfig` never becomes a runtime a vector could run on.
#[test]
fn an_invalid_fault_plan_is_refused_by_the_constructor() {
    let plan = FaultPlan {
        seed: 0,
        rules: vec![sim::FaultRule {
            function: abi::functions::LibnrtFunction::nrt_close,
            trigger: sim::FaultTrigger::Nth(1),
            status: NrtStatus::Failure,
        }],
    };
    let err =
        SimRuntime::new(SimConfig { fault_plan: plan, ..small_config(1, false) }).unwrap_err();
    assert!(err.to_string().contains("nrt_close, which is not faultable"), "{err}");
}

/// That close frees what the models staged shows only in the simulator's accounting.
#[test]
fn close_unloads_models_and_frees_their_memory() {
    let sim = small_sim();
    init(&sim);
    sim.load_description(&copy_model(1 << 20).description(), -1, 1).unwrap();
    assert!(sim.device_bytes_in_use(0).unwrap() >= 2 << 20);
    sim.close();
    assert_eq!(sim.device_bytes_in_use(0), Some(0));
    assert_eq!(
        sim.load_description(&copy_model(4).description(), -1, 1).unwrap_err().status,
        NrtStatus::Closed
    );
}

/// A NEFF whose signature gives `shape` to both its input and its output, whose def.json omits
/// their sizes (so the sizes come from the signature).
fn neff_with_signature_shape(shape: &[i64]) -> Vec<u8> {
    use abi::neff::{GraphSpec, NeffSpec, TensorSignature, Var};
    let mut spec = NeffSpec::new("shapes");
    spec.graphs = vec![GraphSpec {
        name: "sg00".to_owned(),
        vars: vec![Var::new("input0", 0, "input"), Var::new("output0", 1, "output")],
    }];
    spec.signature.inputs = vec![TensorSignature::new("input0", "float32", shape)];
    spec.signature.outputs = vec![TensorSignature::new("output0", "float32", shape)];
    spec.to_bytes().expect("a valid spec")
}

/// Byte sizes from an untrusted NEFF are checked arithmetic: a negative dimension, one that does
/// not fit tensor info's `uint32_t`, and a product past `u64` are each `NRT_INVALID` naming the
/// shape, never a zero size or a wrapped one.
#[test]
fn absurd_or_negative_dimensions_in_a_neff_are_invalid() {
    let sim = small_sim();
    init(&sim);
    let cases: [(&[i64], &str); 3] = [
        (&[-1, 4], "dimension 0 is -1"),
        (&[4, 1 << 33], "dimension 1 is 8589934592"),
        (&[1 << 31, 1 << 31, 1 << 31], "overflow"),
    ];
    for (shape, mentioned) in cases {
        let err = sim.load(&neff_with_signature_shape(shape), -1, 1).unwrap_err();
        assert_eq!(err.status, NrtStatus::Invalid, "{shape:?}: {err}");
        assert!(err.detail.contains(mentioned), "{shape:?}: {err}");
        assert!(err.detail.contains("input0"), "{shape:?}: {err}");
    }
    let good = sim.load(&neff_with_signature_shape(&[2, 3]), -1, 1).unwrap();
    let info = sim.get_model_tensor_info(good).unwrap();
    assert_eq!(info.iter().map(|entry| entry.size).collect::<Vec<_>>(), [24, 24]);
}

/// The same rules for an in-memory description, whose builder cannot fail: loading refuses it.
#[test]
fn a_description_with_a_negative_or_overflowing_shape_is_refused_at_load() {
    let sim = small_sim();
    init(&sim);
    for shape in [&[3, -2][..], &[1 << 31, 1 << 31, 1 << 31]] {
        let description = ModelDescription::new("bad")
            .with_input("input0", Dltype::Float32, shape)
            .with_output("output0", Dltype::Float32, &[4]);
        let err = sim.load_description(&description, -1, 1).unwrap_err();
        assert_eq!(err.status, NrtStatus::Invalid, "{shape:?}: {err}");
        assert!(err.detail.contains("input0"), "{shape:?}: {err}");
    }
    assert_eq!(sim.device_bytes_in_use(0), Some(0), "a refused load stages nothing");
}

/// Memset and copy over attached buffers move bytes in bounded chunks: the length is the
/// caller's declared buffer size (64 GiB here, more than the machine has), never one host
/// allocation. The buffer counts the bytes it is given instead of holding them.
#[test]
fn memset_and_copy_of_a_huge_attached_buffer_need_no_buffer_of_that_size() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    struct Counting(AtomicU64);
    impl abi::runtime::ExternalBuffer for Counting {
        fn len(&self) -> usize {
            1 << 36
        }
        fn read_at(&self, _: usize, out: &mut [u8]) {
            out.fill(7);
        }
        fn write_at(&self, _: usize, data: &[u8]) {
            self.0.fetch_add(data.len() as u64, Ordering::Relaxed);
        }
        fn address(&self) -> usize {
            0
        }
    }
    let sim = small_sim();
    init(&sim);
    let (a, b) = (Arc::new(Counting(AtomicU64::new(0))), Arc::new(Counting(AtomicU64::new(0))));
    let (ta, tb) =
        (sim.tensor_allocate_empty(b"a").unwrap(), sim.tensor_allocate_empty(b"b").unwrap());
    sim.tensor_attach_buffer(ta, a.clone()).unwrap();
    sim.tensor_attach_buffer(tb, b.clone()).unwrap();
    sim.tensor_memset(ta, 0, 1, 1 << 36).unwrap();
    assert_eq!(a.0.load(Ordering::Relaxed), 1 << 36);
    sim.tensor_copy(ta, 0, tb, 0, 1 << 36).unwrap();
    assert_eq!(b.0.load(Ordering::Relaxed), 1 << 36);
}
