//! The binding layer's behaviour (the `bind` crate), as test bodies over a runtime factory.
//!
//! Vectors (`vectors/`) are the data-driven suite; only what their steps cannot express lives
//! here, and each body says why it is not data.

use std::fmt::Debug;
use std::sync::Arc;

use abi::dtype::ScalarType;
use abi::metaneff;
use abi::metaneff::decoded::DecodedTensors;
use abi::metaneff::meta_tensor::DataType;
use abi::trace::Trace;
use bind::{
    BindError, ForwardOutput, HostTensor, LentBytes, LoadStatus, Model, ModelOptions,
    OutputTensors, SpmdModel, ValidateKind,
};

use crate::models::{ModelDef, TensorDef, in_place_model, op_add, op_scale, scale_model};
use crate::{Factory, RuntimeSpec, TestBody};

/// Every body of the suite, by name.
pub fn bind_suite() -> Vec<(&'static str, TestBody)> {
    vec![
        (
            "trace_of_load_and_two_forwards_is_canonical",
            trace_of_load_and_two_forwards_is_canonical,
        ),
        ("validate_shape_message", validate_shape_message),
        (
            "return_aliases_false_leaves_aliased_outputs_out",
            return_aliases_false_leaves_aliased_outputs_out,
        ),
        ("state_accumulates_over_three_launches", state_accumulates_over_three_launches),
        (
            "lent_inputs_are_read_where_they_lie_and_a_donated_one_is_not_written_there",
            lent_inputs_are_read_where_they_lie_and_a_donated_one_is_not_written_there,
        ),
        (
            "outputs_are_read_into_the_callers_tensors_and_a_writable_donor_where_it_lies",
            outputs_are_read_into_the_callers_tensors_and_a_writable_donor_where_it_lies,
        ),
        (
            "dynamic_batching_mixed_passes_static_inputs_whole",
            dynamic_batching_mixed_passes_static_inputs_whole,
        ),
        ("setters_edit_losslessly_and_reload", setters_edit_losslessly_and_reload),
        ("spmd_four_ranks_on_four_cores", spmd_four_ranks_on_four_cores),
    ]
}

fn ensure(condition: bool, message: impl FnOnce() -> String) -> Result<(), String> {
    if condition { Ok(()) } else { Err(message()) }
}

fn same<T: PartialEq + Debug>(what: &str, actual: T, expected: T) -> Result<(), String> {
    ensure(actual == expected, || format!("{what}: expected {expected:?}, got {actual:?}"))
}

fn ok<T>(what: &str, result: Result<T, BindError>) -> Result<T, String> {
    result.map_err(|error| format!("{what}: expected success, got error: {error}"))
}

fn err<T: Debug>(what: &str, result: Result<T, BindError>) -> Result<BindError, String> {
    match result {
        Ok(value) => Err(format!("{what}: expected an error, got {value:?}")),
        Err(error) => Ok(error),
    }
}

fn f32s(values: &[f32], shape: &[i64]) -> HostTensor {
    HostTensor::from_slice(values, shape).expect("test tensors have matching lengths")
}

fn values(tensor: &HostTensor) -> Result<Vec<f32>, String> {
    tensor.to_vec::<f32>().map_err(|error| error.to_string())
}

fn output_values(output: &ForwardOutput, index: usize) -> Result<Vec<f32>, String> {
    let tensor = output.outputs.get(index).ok_or_else(|| {
        format!("expected an output {index}, got {} outputs", output.outputs.len())
    })?;
    values(tensor)
}

fn traced(trace: &Arc<Trace>) -> ModelOptions {
    ModelOptions { trace: Some(trace.clone()), ..ModelOptions::default() }
}

fn model(factory: &Factory<'_>, def: &ModelDef, options: ModelOptions) -> Result<Model, String> {
    let runtime = factory(&RuntimeSpec::default());
    ok("Model::new", Model::new(runtime, &def.neff(), &def.metaneff(), options))
}

fn count_lines(trace: &Trace, prefix: &str) -> usize {
    trace.lines().iter().filter(|line| line.starts_with(prefix)).count()
}

/// Not data: it pins the trace format itself, and a vector's golden trace is written by the
/// code under test.
fn trace_of_load_and_two_forwards_is_canonical(factory: &Factory<'_>) -> Result<(), String> {
    let trace = Arc::new(Trace::new());
    let def = scale_model(&[4], 1.0);
    let mut model = model(factory, &def, traced(&trace))?;
    ok("forward", model.forward(&[f32s(&[1.0, 0.0, 0.0, 0.0], &[4])]))?;
    ok("forward", model.forward(&[f32s(&[1.0, 0.0, 0.0, 0.0], &[4])]))?;
    drop(model);
    let neff = abi::trace::format_bytes(&def.neff());
    let forward = "\
tensor_write(t1, 0, [00 00 80 3f 00 00 00 00 00 00 00 00 00 00 00 00]) -> NRT_SUCCESS
rebind skipped input 0
rebind skipped output 0
execute(m1, s1, s2) -> NRT_SUCCESS
tensor_read(t2, 0, 16) -> [00 00 80 3f 00 00 00 00 00 00 00 00 00 00 00 00] NRT_SUCCESS
";
    let expected = format!(
        "\
load({neff}, 0, 1) -> m1 NRT_SUCCESS
allocate_tensor_set() -> s1 NRT_SUCCESS
tensor_allocate(DEVICE, 0, 16, \"input0\") -> t1 NRT_SUCCESS
add_tensor_to_tensor_set(s1, \"input0\", t1) -> NRT_SUCCESS
bind input 0 \"input0\" -> t1 var_id 0 MR_INPUT
allocate_tensor_set() -> s2 NRT_SUCCESS
tensor_allocate(DEVICE, 0, 16, \"output0\") -> t2 NRT_SUCCESS
add_tensor_to_tensor_set(s2, \"output0\", t2) -> NRT_SUCCESS
bind output 0 \"output0\" -> t2 var_id 1 MR_OUTPUT
{forward}{forward}destroy_tensor_set(s1) -> NRT_SUCCESS
destroy_tensor_set(s2) -> NRT_SUCCESS
tensor_free(t1) -> NRT_SUCCESS
tensor_free(t2) -> NRT_SUCCESS
unload(m1) -> NRT_SUCCESS
"
    );
    let text = trace.text();
    ensure(text == expected, || format!("trace differs:\n--- expected\n{expected}--- got\n{text}"))
}

/// Not data: what a caller of `Model::forward` reads, the `Display` text of a validate error, is
/// not in the trace a vector compares (the kinds, shapes and messages are:
/// `vectors/validate/shape_error_gives_both_shapes`).
fn validate_shape_message(factory: &Factory<'_>) -> Result<(), String> {
    let mut model = model(factory, &scale_model(&[2, 3], 1.0), ModelOptions::default())?;
    let error = err("forward with rank 1", model.forward(&[f32s(&[0.0; 6], &[6])]))?;
    same("rank mismatch kind", error.as_validate().map(|v| v.kind), Some(ValidateKind::Shape))?;
    same(
        "display",
        error.to_string(),
        "validate: shape input 0 \"input0\": Expected tensor.sizes() == sizes (expected [2, 3], got [6])"
            .to_owned(),
    )
}

/// `output0 = input0 + input1`, aliased to input0 (in place); `output1 = input1 × 2`.
/// Not data: the evidence of the in-place update is the caller's input read back after the
/// forward (the aliased output is not returned), and no step reads a forward's input back.
fn return_aliases_false_leaves_aliased_outputs_out(factory: &Factory<'_>) -> Result<(), String> {
    let mut model = model(factory, &in_place_model(false), ModelOptions::default())?;
    let a = f32s(&[1.0, 2.0], &[2]);
    let out = ok("forward", model.forward(&[a.clone(), f32s(&[10.0, 20.0], &[2])]))?;
    same("outputs", out.outputs.len(), 1)?;
    same("the returned output is output1", output_values(&out, 0)?, vec![20.0, 40.0])?;
    same("input 0 still updated in place", values(&a)?, vec![11.0, 22.0])
}

/// Memory lent to a tensor, which the test keeps a handle on to read afterwards.
struct Lender(Arc<Vec<u8>>);

impl LentBytes for Lender {
    fn bytes(&self) -> &[u8] {
        &self.0
    }
}

fn lent_f32s(values: &[f32]) -> (HostTensor, Arc<Vec<u8>>) {
    let bytes: Arc<Vec<u8>> = Arc::new(values.iter().flat_map(|v| v.to_le_bytes()).collect());
    let shape = [values.len() as i64];
    let tensor = HostTensor::lent(ScalarType::Float, &shape, Box::new(Lender(bytes.clone())))
        .expect("test tensors have matching lengths");
    (tensor, bytes)
}

/// Not data: vectors' inputs are the layer's own tensors; lending is how an FFI caller's memory
/// (a torch tensor's) reaches a forward without a copy, and is read only.
fn lent_inputs_are_read_where_they_lie_and_a_donated_one_is_not_written_there(
    factory: &Factory<'_>,
) -> Result<(), String> {
    let mut model = model(factory, &in_place_model(true), ModelOptions::default())?;
    let (a, a_lender) = lent_f32s(&[1.0, 2.0]);
    let (b, b_lender) = lent_f32s(&[10.0, 20.0]);
    let out = ok("forward", model.forward(&[a.clone(), b.clone()]))?;
    same("output0 (donated input 0)", output_values(&out, 0)?, vec![11.0, 22.0])?;
    same("output1", output_values(&out, 1)?, vec![20.0, 40.0])?;
    ensure(out.outputs[0].shares_storage_with(&a), || "output0 is input 0's storage".to_owned())?;
    // The donated input got bytes of its own, which the caller's tensor shares; the lender's
    // memory is as it was, and the input only read was never copied.
    same("input 0 updated", values(&a)?, vec![11.0, 22.0])?;
    ensure(!a.is_lent(), || "a written input has bytes of its own".to_owned())?;
    same("the lender's bytes of input 0", a_lender.as_slice(), &f32_bytes(&[1.0, 2.0])[..])?;
    ensure(b.is_lent(), || "an input only read stays lent".to_owned())?;
    same("the lender's bytes of input 1", b_lender.as_slice(), &f32_bytes(&[10.0, 20.0])[..])?;
    // A tensor made owned no longer shares the lender's memory.
    let owned = b.owned();
    ensure(!owned.is_lent() && !owned.shares_storage_with(&b), || "owned is a copy".to_owned())?;
    same("owned values", values(&owned)?, vec![10.0, 20.0])
}

/// Memory lent writable to a tensor (read back through the tensor, which keeps it).
struct WritableLender(Vec<u8>);

impl LentBytes for WritableLender {
    fn bytes(&self) -> &[u8] {
        &self.0
    }

    fn bytes_mut(&mut self) -> Option<&mut [u8]> {
        Some(&mut self.0)
    }
}

fn writable_f32s(values: &[f32], shape: &[i64]) -> HostTensor {
    let bytes = WritableLender(f32_bytes(values));
    HostTensor::lent(ScalarType::Float, shape, Box::new(bytes))
        .expect("test tensors have matching lengths")
}

/// Gives the forward tensors of the caller's, and remembers each it gave: (rank, index, tensor).
struct Given {
    writable: bool,
    given: std::sync::Mutex<Vec<(usize, usize, HostTensor)>>,
}

impl OutputTensors for Given {
    fn output(
        &self,
        rank: usize,
        index: usize,
        scalar_type: ScalarType,
        shape: &[i64],
    ) -> Result<HostTensor, BindError> {
        let n = shape.iter().product::<i64>() as usize;
        let tensor = if self.writable {
            HostTensor::lent(scalar_type, shape, Box::new(WritableLender(vec![0xff; n * 4])))?
        } else {
            HostTensor::lent(scalar_type, shape, Box::new(Lender(Arc::new(vec![0; n * 4]))))?
        };
        let mut given = self.given.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        given.push((rank, index, tensor.clone()));
        Ok(tensor)
    }
}

/// Not data: a vector's forward makes its outputs itself; `forward_into` is how an FFI layer
/// (the torch package) has them read into tensors it returns, and donated inputs written where
/// the caller's tensor lies, which only the caller's own tensors can show.
fn outputs_are_read_into_the_callers_tensors_and_a_writable_donor_where_it_lies(
    factory: &Factory<'_>,
) -> Result<(), String> {
    let mut model = model(factory, &in_place_model(true), ModelOptions::default())?;
    let a = writable_f32s(&[1.0, 2.0], &[2]);
    let b = writable_f32s(&[10.0, 20.0], &[2]);
    let given = Given { writable: true, given: Default::default() };
    let out = ok("forward_into", model.forward_into(&[a.clone(), b.clone()], &given))?;
    // Asked for output 1 only (output 0 is input 0), and read into the tensor given.
    let asked = std::mem::take(&mut *given.given.lock().map_err(|_| "poisoned")?);
    same("outputs asked for", asked.iter().map(|g| (g.0, g.1)).collect::<Vec<_>>(), vec![(0, 1)])?;
    ensure(out.outputs[1].shares_storage_with(&asked[0].2), || {
        "output 1 is the tensor the caller gave".to_owned()
    })?;
    ensure(asked[0].2.is_lent(), || "written where the caller's bytes lie".to_owned())?;
    same("output1", values(&asked[0].2)?, vec![20.0, 40.0])?;
    // The donor was written where it lies: still lent, holding the sum.
    ensure(out.outputs[0].shares_storage_with(&a), || "output0 is input 0".to_owned())?;
    ensure(a.is_lent(), || "a writable donor keeps the caller's bytes".to_owned())?;
    same("input 0 updated in place", values(&a)?, vec![11.0, 22.0])?;
    same("input 1 only read", values(&b)?, vec![10.0, 20.0])?;

    // A tensor the forward could not write in place, or of another shape, is refused.
    let read_only = Given { writable: false, given: Default::default() };
    let refused = err("read-only output", model.forward_into(&[a.clone(), b.clone()], &read_only))?;
    ensure(matches!(refused, BindError::OutputTensor { index: 1, .. }), || {
        format!("expected OutputTensor for output 1, got {refused:?}")
    })?;
    ensure(refused.to_string().contains("read only"), || refused.to_string())?;
    let wrong = WrongShape;
    let refused = err("wrong shape", model.forward_into(&[a, b], &wrong))?;
    same(
        "message",
        refused.to_string(),
        "output 1: expected a tensor of Float [2] written in place, got Float [3]".to_owned(),
    )
}

/// Gives a float tensor of three elements, whatever is asked.
struct WrongShape;

impl OutputTensors for WrongShape {
    fn output(
        &self,
        _rank: usize,
        _index: usize,
        scalar_type: ScalarType,
        _shape: &[i64],
    ) -> Result<HostTensor, BindError> {
        Ok(HostTensor::zeros(scalar_type, &[3])?)
    }
}

fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// Not data: that every launch returns the same state storage compares outputs of different
/// forwards, which `expect_shared` (an output against an input of one forward) cannot say.
fn state_accumulates_over_three_launches(factory: &Factory<'_>) -> Result<(), String> {
    let def = ModelDef {
        inputs: vec![
            TensorDef::input("input0", DataType::Float, &[2]),
            TensorDef::state("input1", DataType::Float, &[2], "acc"),
        ],
        outputs: vec![TensorDef::output("output0", DataType::Float, &[2])],
        aliases: [(0, 1)].into_iter().collect(),
        return_aliases: true,
        ops: vec![op_add("output0", "input1", "input0")],
        ..ModelDef::new("accumulate")
    };
    let mut model = model(factory, &def, ModelOptions::default())?;
    let mut seen = Vec::new();
    let mut first: Option<HostTensor> = None;
    for _ in 0..3 {
        let out = ok("forward", model.forward(&[f32s(&[1.0, 2.5], &[2])]))?;
        seen.push(output_values(&out, 0)?);
        match &first {
            None => first = Some(out.outputs[0].clone()),
            Some(first) => ensure(out.outputs[0].shares_storage_with(first), || {
                "expected every launch to return the same state storage".to_owned()
            })?,
        }
    }
    same("state after each launch", seen, vec![vec![1.0, 2.5], vec![2.0, 5.0], vec![3.0, 7.5]])
}

fn rows(batch: usize) -> Vec<f32> {
    (0..batch * 2).map(|v| v as f32 + 1.0).collect()
}

/// Not data: it reads the flags back from the Model's own edited metaneff, which no step does
/// (`metaneff_edit` checks the edit functions, not a Model's stored copy).
fn dynamic_batching_mixed_passes_static_inputs_whole(factory: &Factory<'_>) -> Result<(), String> {
    // output0 = input0 + input1 where input0 is dynamic [2, 2] and input1 a static [2, 2] bias.
    let def = ModelDef {
        inputs: vec![
            TensorDef::input("input0", DataType::Float, &[2, 2]),
            TensorDef::input("input1", DataType::Float, &[2, 2]),
        ],
        outputs: vec![TensorDef::output("output0", DataType::Float, &[2, 2])],
        ops: vec![op_add("output0", "input0", "input1")],
        ..ModelDef::new("mixed")
    };
    let trace = Arc::new(Trace::new());
    let mut model = model(factory, &def, traced(&trace))?;
    ok("set_dynamic_batching_mixed", model.set_dynamic_batching_mixed(&[1, 0], &[7]))?;
    let meta = model.metaneff_decoded();
    let flags: Vec<bool> = (meta.input_tensors().iter().chain(meta.output_tensors()))
        .map(|t| t.allow_dynamic_batch_size())
        .collect();
    same("flags", flags, vec![true, false, true])?;
    trace.clear_lines();
    let bias = f32s(&[100.0, 200.0, 300.0, 400.0], &[2, 2]);
    let out = ok("forward with batch 3", model.forward(&[f32s(&rows(3), &[3, 2]), bias]))?;
    same("launches", count_lines(&trace, "execute("), 2)?;
    same("output shape", out.outputs[0].shape().to_vec(), vec![3, 2])?;
    same("output", output_values(&out, 0)?, vec![101.0, 202.0, 303.0, 404.0, 105.0, 206.0])?;
    let error = err(
        "static input with another batch",
        model.forward(&[f32s(&rows(3), &[3, 2]), f32s(&rows(3), &[3, 2])]),
    )?;
    same("static input shape", error.as_validate().map(|v| v.kind), Some(ValidateKind::Shape))
}

/// Not data: it starts from metaneff bytes with an unknown field (a reviewed text cannot carry
/// one) and reads the Model's stored metaneff back after the setters.
fn setters_edit_losslessly_and_reload(factory: &Factory<'_>) -> Result<(), String> {
    let def = scale_model(&[2], 1.0);
    // An unknown trailing field (number 50, varint 1) that a newer producer might write.
    let mut bytes = def.metaneff();
    bytes.extend_from_slice(&[0x90, 0x03, 0x01]);
    let trace = Arc::new(Trace::new());
    let runtime = factory(&RuntimeSpec::default());
    let mut model = ok("Model::new", Model::new(runtime, &def.neff(), &bytes, traced(&trace)))?;
    ok("set_async_load", model.set_async_load(true))?;
    ok("set_lazy_load", model.set_lazy_load(true))?;
    same("no reload for config flags", count_lines(&trace, "unload("), 0)?;
    ok("set_dynamic_batching", model.set_dynamic_batching(true))?;
    same("unload for dynamic batching", count_lines(&trace, "unload("), 1)?;
    // async_load is now set: the reload runs in the background and the next forward waits.
    same("load status after the setter", model.load_status(), LoadStatus::Loading)?;
    let stored = model.metaneff().to_vec();
    ensure(stored.ends_with(&[0x90, 0x03, 0x01]), || format!("unknown field lost: {stored:02x?}"))?;
    let unknown = metaneff::check_wire(&stored).map_err(|e| e.to_string())?;
    same("unknown fields", unknown.iter().map(|f| f.number).collect::<Vec<_>>(), vec![50])?;
    let decoded = model.metaneff_decoded();
    let config = decoded.model_config().copied().unwrap_or_default();
    same("async/lazy", (config.async_load, config.lazy_load), (true, true))?;
    let dynamic =
        |tensors: DecodedTensors<'_>| tensors.get(0).map(|t| t.allow_dynamic_batch_size());
    same(
        "dynamic flags",
        (dynamic(decoded.input_tensors()), dynamic(decoded.output_tensors())),
        (Some(true), Some(true)),
    )?;
    same("unknown fields after the setters", decoded.n_unknown_fields(), 1)?;
    let out = ok("forward after the reload", model.forward(&[f32s(&[1.0, 2.0], &[2])]))?;
    same("loads", count_lines(&trace, "load("), 2)?;
    same("output", output_values(&out, 0)?, vec![1.0, 2.0])
}

/// An all-reduce over every rank of the world.
/// Not data: it compares traced ranks with untraced ones (a vector always runs traced); it also
/// asks for two machines.
fn spmd_four_ranks_on_four_cores(factory: &Factory<'_>) -> Result<(), String> {
    let runtime = factory(&RuntimeSpec { n_cores: 4, ..RuntimeSpec::default() });
    let def = ModelDef {
        inputs: vec![
            TensorDef::input("input0", DataType::Float, &[2]),
            TensorDef::state("input1", DataType::Float, &[2], "acc"),
        ],
        outputs: vec![TensorDef::output("output0", DataType::Float, &[2])],
        aliases: [(0, 1)].into_iter().collect(),
        return_aliases: true,
        ops: vec![op_add("output0", "input1", "input0")],
        ..ModelDef::new("spmd")
    };
    let trace = Arc::new(Trace::new());
    let mut spmd = ok(
        "SpmdModel::new",
        SpmdModel::new(runtime.clone(), &def.neff(), &def.metaneff(), 4, 8, traced(&trace)),
    )?;
    same("local ranks", spmd.local_ranks(), 4)?;
    for rank in 0..4 {
        let line = format!(
            "load_collectives({}, {rank}, 1, {rank}, 8) -> m{} NRT_SUCCESS",
            abi::trace::format_bytes(&def.neff()),
            rank + 1
        );
        ensure(trace.lines().contains(&line), || {
            format!("expected {line:?} in:\n{}", trace.text())
        })?;
        let allocate = format!("tensor_allocate(DEVICE, {rank}, 8, \"input0\")");
        ensure(trace.lines().iter().any(|l| l.starts_with(&allocate)), || {
            format!("expected {allocate:?}")
        })?;
    }
    let inputs: Vec<Vec<HostTensor>> = (0..4).map(|r| vec![f32s(&[r as f32, 1.0], &[2])]).collect();
    ok("first ranked forward", spmd.forward_ranked(&inputs))?;
    let outs = ok("second ranked forward", spmd.forward_ranked(&inputs))?;
    for (rank, out) in outs.iter().enumerate() {
        same(&format!("rank {rank} state"), output_values(out, 0)?, vec![2.0 * rank as f32, 2.0])?;
    }
    let error = err("three input lists for four ranks", spmd.forward_ranked(&inputs[..3]))?;
    ensure(matches!(error, BindError::RankCount { expected: 4, actual: 3 }), || {
        format!("{error:?}")
    })?;
    // Untraced, the ranks run in parallel threads and give the same results.
    let mut parallel = ok(
        "SpmdModel::new",
        SpmdModel::new(runtime, &def.neff(), &def.metaneff(), 4, 4, ModelOptions::default()),
    )?;
    ok("parallel forward", parallel.forward_ranked(&inputs))?;
    let outs = ok("parallel forward", parallel.forward_ranked(&inputs))?;
    let states: Vec<Vec<f32>> =
        outs.iter().map(|o| output_values(o, 0)).collect::<Result<_, _>>()?;
    same("parallel states", states, (0..4).map(|r| vec![2.0 * r as f32, 2.0]).collect::<Vec<_>>())?;
    // Ranks of 1 MiB of input each take the threaded path too, with the same results.
    let n = 1 << 18;
    let big = ModelDef {
        inputs: vec![TensorDef::input("input0", DataType::Float, &[n])],
        outputs: vec![TensorDef::output("output0", DataType::Float, &[n])],
        ops: vec![op_scale("output0", "input0", 2.0)],
        ..ModelDef::new("spmd_big")
    };
    drop(parallel);
    let mut threaded = ok(
        "SpmdModel::new (large ranks)",
        SpmdModel::new(
            factory(&RuntimeSpec { n_cores: 4, ..RuntimeSpec::default() }),
            &big.neff(),
            &big.metaneff(),
            4,
            4,
            ModelOptions::default(),
        ),
    )?;
    let big_inputs: Vec<Vec<HostTensor>> =
        (0..4).map(|r| vec![f32s(&vec![r as f32 + 0.5; n as usize], &[n])]).collect();
    let outs = ok("threaded forward", threaded.forward_ranked(&big_inputs))?;
    for (rank, out) in outs.iter().enumerate() {
        let values = output_values(out, 0)?;
        ensure(
            values.len() == n as usize && values.iter().all(|&v| v == 2.0 * rank as f32 + 1.0),
            || format!("rank {rank}: {} values, first {:?}", values.len(), values.first()),
        )?;
    }
    let invalid = SpmdModel::new(
        factory(&RuntimeSpec::default()),
        &def.neff(),
        &def.metaneff(),
        3,
        2,
        ModelOptions::default(),
    );
    let error = err("3 local ranks in a world of 2", invalid)?;
    ensure(matches!(error, BindError::InvalidRanks { local_ranks: 3, world_size: 2 }), || {
        format!("{error:?}")
    })
}
