//! The binding layer's behaviour (the `bind` crate), as test bodies over a runtime factory.

use std::fmt::Debug;
use std::sync::Arc;

use abi::metaneff::meta_tensor::{DataType, Type};
use abi::metaneff::{self, edit::Side};
use abi::runtime::Placement;
use abi::status::NrtStatus;
use abi::trace::Trace;
use bind::{
    BindError, ForwardOutput, HostTensor, LoadStatus, Model, ModelOptions, SpmdModel, ValidateKind,
    Weights,
};

use crate::models::{
    ModelDef, TensorDef, copy_model, f32_bytes, op_add, op_copy, op_nan, op_scale, scale_model,
};
use crate::{Factory, RuntimeSpec, TestBody};

/// Every body of the suite, by name.
pub fn bind_suite() -> Vec<(&'static str, TestBody)> {
    vec![
        ("forward_runs_a_one_in_one_out_model", forward_runs_a_one_in_one_out_model),
        (
            "trace_of_load_and_two_forwards_is_canonical",
            trace_of_load_and_two_forwards_is_canonical,
        ),
        ("validate_count_on_model_path", validate_count_on_model_path),
        (
            "seed_discrepancy_count_check_counts_user_inputs",
            seed_discrepancy_count_check_counts_user_inputs,
        ),
        ("validate_dtype_message", validate_dtype_message),
        ("validate_shape_message", validate_shape_message),
        ("validate_ignores_untyped_inputs", validate_ignores_untyped_inputs),
        ("validate_ordinal_on_ranked_path", validate_ordinal_on_ranked_path),
        ("scalar_with_dynamic_batching_is_rejected", scalar_with_dynamic_batching_is_rejected),
        ("aliased_output_shares_input_storage", aliased_output_shares_input_storage),
        (
            "return_aliases_false_leaves_aliased_outputs_out",
            return_aliases_false_leaves_aliased_outputs_out,
        ),
        ("state_accumulates_over_three_launches", state_accumulates_over_three_launches),
        (
            "rebind_is_skipped_when_the_slot_is_unchanged",
            rebind_is_skipped_when_the_slot_is_unchanged,
        ),
        ("nan_program_1003_is_tolerated_with_outputs", nan_program_1003_is_tolerated_with_outputs),
        ("injected_1003_on_execute_is_tolerated", injected_1003_on_execute_is_tolerated),
        ("allocation_failures_carry_seed_messages", allocation_failures_carry_seed_messages),
        (
            "allocation_tolerates_1003_then_fails_to_add",
            allocation_tolerates_1003_then_fails_to_add,
        ),
        ("weights_are_bound_by_checkpoint_key", weights_are_bound_by_checkpoint_key),
        ("missing_weight_key_is_named", missing_weight_key_is_named),
        ("dynamic_batching_exact_batch_is_one_launch", dynamic_batching_exact_batch_is_one_launch),
        (
            "dynamic_batching_larger_batch_slices_and_pads",
            dynamic_batching_larger_batch_slices_and_pads,
        ),
        (
            "dynamic_batching_smaller_batch_pads_one_launch",
            dynamic_batching_smaller_batch_pads_one_launch,
        ),
        (
            "dynamic_batching_mixed_passes_static_inputs_whole",
            dynamic_batching_mixed_passes_static_inputs_whole,
        ),
        ("dynamic_batching_mixed_lengths_are_checked", dynamic_batching_mixed_lengths_are_checked),
        ("setters_edit_losslessly_and_reload", setters_edit_losslessly_and_reload),
        ("lazy_load_defers_to_first_forward", lazy_load_defers_to_first_forward),
        (
            "async_load_runs_in_background_and_forward_waits",
            async_load_runs_in_background_and_forward_waits,
        ),
        ("unload_then_forward_loads_again", unload_then_forward_loads_again),
        ("spmd_four_ranks_on_four_cores", spmd_four_ranks_on_four_cores),
        ("non_utf8_names_bind_and_run_as_bytes", non_utf8_names_bind_and_run_as_bytes),
        ("short_untyped_dynamic_input_is_an_error", short_untyped_dynamic_input_is_an_error),
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

fn forward_runs_a_one_in_one_out_model(factory: &Factory<'_>) -> Result<(), String> {
    let mut model = model(factory, &scale_model(&[2, 2], 2.0), ModelOptions::default())?;
    same("load status after new", model.load_status(), LoadStatus::Loaded)?;
    let out = ok("forward", model.forward(&[f32s(&[1.0, 2.0, 3.0, -4.0], &[2, 2])]))?;
    same("status", out.status, NrtStatus::Success)?;
    same("output", output_values(&out, 0)?, vec![2.0, 4.0, 6.0, -8.0])?;
    same("output shape", out.outputs[0].shape().to_vec(), vec![2, 2])?;
    let again = ok("second forward", model.forward(&[f32s(&[0.5, 0.0, 0.0, 1.0], &[2, 2])]))?;
    same("second output", output_values(&again, 0)?, vec![1.0, 0.0, 0.0, 2.0])
}

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

fn two_input_def() -> ModelDef {
    ModelDef {
        inputs: vec![
            TensorDef::input("input0", DataType::Float, &[2]),
            TensorDef::input("input1", DataType::Float, &[2]),
        ],
        outputs: vec![TensorDef::output("output0", DataType::Float, &[2])],
        ops: vec![op_add("output0", "input0", "input1")],
        ..ModelDef::new("add")
    }
}

fn validate_count_on_model_path(factory: &Factory<'_>) -> Result<(), String> {
    let trace = Arc::new(Trace::new());
    let mut model = model(factory, &two_input_def(), traced(&trace))?;
    let error = err("forward with one of two inputs", model.forward(&[f32s(&[1.0, 2.0], &[2])]))?;
    let validate =
        error.as_validate().ok_or_else(|| format!("expected a validate error, got {error}"))?;
    same("kind", validate.kind, ValidateKind::Count)?;
    same("message", validate.message, "Expected npts->impl()->size() == tensors.size()")?;
    same("expected/actual", (validate.expected.as_str(), validate.actual.as_str()), ("2", "1"))?;
    same("index", validate.index, None)?;
    let last = trace.lines().last().cloned().unwrap_or_default();
    same(
        "trace line",
        last.as_str(),
        "validate error count: Expected npts->impl()->size() == tensors.size() (expected 2, got 1)",
    )?;
    same("executions", count_lines(&trace, "execute("), 0)
}

fn seed_discrepancy_count_check_counts_user_inputs(factory: &Factory<'_>) -> Result<(), String> {
    // The seed compares input_tensors.size() (3 here) with the caller's tensors; this layer binds
    // the state and the weight itself, so the caller passes the one user input.
    let def = ModelDef {
        inputs: vec![
            TensorDef::input("input0", DataType::Float, &[2]),
            TensorDef::state("input1", DataType::Float, &[2], "state"),
            TensorDef::weight("input2", DataType::Float, &[2], "w"),
        ],
        outputs: vec![TensorDef::output("output0", DataType::Float, &[2])],
        ops: vec![op_add("output0", "input0", "input2")],
        ..ModelDef::new("count")
    };
    let mut weights = Weights::new();
    weights.insert(b"w".to_vec(), f32s(&[10.0, 20.0], &[2]));
    let options = ModelOptions { weights, ..ModelOptions::default() };
    let mut model = model(factory, &def, options)?;
    let out = ok("forward with the user input only", model.forward(&[f32s(&[1.0, 2.0], &[2])]))?;
    same("output", output_values(&out, 0)?, vec![11.0, 22.0])?;
    let all_three = [f32s(&[1.0, 2.0], &[2]), f32s(&[0.0, 0.0], &[2]), f32s(&[10.0, 20.0], &[2])];
    let error = err("forward with all three inputs", model.forward(&all_three))?;
    let validate =
        error.as_validate().ok_or_else(|| format!("expected a validate error, got {error}"))?;
    same("kind", validate.kind, ValidateKind::Count)?;
    same("expected/actual", (validate.expected.as_str(), validate.actual.as_str()), ("1", "3"))
}

fn validate_dtype_message(factory: &Factory<'_>) -> Result<(), String> {
    let trace = Arc::new(Trace::new());
    let mut model = model(factory, &two_input_def(), traced(&trace))?;
    let ints = HostTensor::from_slice(&[1i32, 2], &[2]).expect("valid");
    let error = err("forward with an Int input", model.forward(&[f32s(&[1.0, 2.0], &[2]), ints]))?;
    let validate =
        error.as_validate().ok_or_else(|| format!("expected a validate error, got {error}"))?;
    same("kind", validate.kind, ValidateKind::Dtype)?;
    same("index and name", (validate.index, validate.name.as_deref()), (Some(1), Some("input1")))?;
    same("message", validate.message, "Expected tensor.dtype() == dtype")?;
    same(
        "trace line",
        trace.lines().last().cloned().unwrap_or_default().as_str(),
        "validate error dtype input 1 \"input1\": Expected tensor.dtype() == dtype (expected Float, got Int)",
    )
}

fn validate_shape_message(factory: &Factory<'_>) -> Result<(), String> {
    let mut model = model(factory, &scale_model(&[2, 3], 1.0), ModelOptions::default())?;
    let error = err("forward with shape [3, 2]", model.forward(&[f32s(&[0.0; 6], &[3, 2])]))?;
    let validate =
        error.as_validate().ok_or_else(|| format!("expected a validate error, got {error}"))?;
    same("kind", validate.kind, ValidateKind::Shape)?;
    same("message", validate.message, "Expected tensor.sizes() == sizes")?;
    same(
        "expected/actual",
        (validate.expected.as_str(), validate.actual.as_str()),
        ("[2, 3]", "[3, 2]"),
    )?;
    let error = err("forward with rank 1", model.forward(&[f32s(&[0.0; 6], &[6])]))?;
    same("rank mismatch kind", error.as_validate().map(|v| v.kind), Some(ValidateKind::Shape))?;
    same(
        "display",
        error.to_string(),
        "validate: shape input 0 \"input0\": Expected tensor.sizes() == sizes (expected [2, 3], got [6])"
            .to_owned(),
    )
}

fn validate_ignores_untyped_inputs(factory: &Factory<'_>) -> Result<(), String> {
    // libtorchneuron checks dtype and shape for type == USER_INPUT only; an input without a type
    // (older producers) is still taken from the caller, unchecked.
    let mut def = scale_model(&[4], 1.0);
    def.inputs[0] = def.inputs[0].clone().with_kind(Type::UndefinedType);
    let mut model = model(factory, &def, ModelOptions::default())?;
    let bytes = HostTensor::from_slice(&[7i32, 0, 0, 0], &[4]).expect("valid");
    let out = ok("forward with an Int tensor for an untyped Float input", model.forward(&[bytes]))?;
    same(
        "bytes copied as they are",
        out.outputs[0].to_bytes(),
        HostTensor::from_slice(&[7i32, 0, 0, 0], &[4]).expect("valid").to_bytes(),
    )
}

fn validate_ordinal_on_ranked_path(factory: &Factory<'_>) -> Result<(), String> {
    let def = scale_model(&[2], 3.0);
    let runtime = factory(&RuntimeSpec::default());
    let mut spmd = ok(
        "SpmdModel::new",
        SpmdModel::new(runtime, &def.neff(), &def.metaneff(), 1, 1, ModelOptions::default()),
    )?;
    // No count check on the ranked path: an extra tensor reaches the ordinal check.
    let extra = vec![f32s(&[1.0, 2.0], &[2]), f32s(&[1.0, 2.0], &[2])];
    let error = err("ranked forward with an extra tensor", spmd.forward_ranked(&[extra]))?;
    let validate =
        error.as_validate().ok_or_else(|| format!("expected a validate error, got {error}"))?;
    same("kind", validate.kind, ValidateKind::Ordinal)?;
    same("message", validate.message, "Expected ordinal < nrt_tensors_.size()")?;
    same("index", validate.index, Some(1))?;
    ensure(matches!(error, BindError::Rank { rank: 0, .. }), || {
        format!("expected rank 0's error, got {error}")
    })?;
    // And a missing tensor is not a count error there: the slot keeps its staging tensor.
    let outs = ok("ranked forward without tensors", spmd.forward_ranked(&[vec![]]))?;
    same("outputs", outs[0].outputs.len(), 1)
}

fn scalar_with_dynamic_batching_is_rejected(factory: &Factory<'_>) -> Result<(), String> {
    let def = ModelDef {
        inputs: vec![TensorDef::input("input0", DataType::Float, &[])],
        outputs: vec![TensorDef::output("output0", DataType::Float, &[])],
        ops: vec![op_copy("output0", "input0")],
        ..ModelDef::new("scalar")
    };
    let mut model = model(factory, &def, ModelOptions::default())?;
    ok("scalar forward", model.forward(&[f32s(&[1.5], &[])]))?;
    ok("set_dynamic_batching", model.set_dynamic_batching(true))?;
    let error = err("scalar forward with dynamic batching", model.forward(&[f32s(&[1.5], &[])]))?;
    let validate =
        error.as_validate().ok_or_else(|| format!("expected a validate error, got {error}"))?;
    same("kind", validate.kind, ValidateKind::ScalarDynamicBatch)?;
    same("message", validate.message, "Scalar tensor cannot have allow_dynamic_batch_size=True")
}

/// `output0 = input0 + input1`, aliased to input0 (in place); `output1 = input1 × 2`.
fn in_place_def(return_aliases: bool) -> ModelDef {
    ModelDef {
        inputs: vec![
            TensorDef::input("input0", DataType::Float, &[2]),
            TensorDef::input("input1", DataType::Float, &[2]),
        ],
        outputs: vec![
            TensorDef::output("output0", DataType::Float, &[2]),
            TensorDef::output("output1", DataType::Float, &[2]),
        ],
        aliases: [(0, 0)].into_iter().collect(),
        return_aliases,
        ops: vec![op_add("output0", "input0", "input1"), op_scale("output1", "input1", 2.0)],
        ..ModelDef::new("in_place")
    }
}

fn aliased_output_shares_input_storage(factory: &Factory<'_>) -> Result<(), String> {
    let trace = Arc::new(Trace::new());
    let mut model = model(factory, &in_place_def(true), traced(&trace))?;
    let a = f32s(&[1.0, 2.0], &[2]);
    let b = f32s(&[10.0, 20.0], &[2]);
    let out = ok("forward", model.forward(&[a.clone(), b.clone()]))?;
    same("outputs", out.outputs.len(), 2)?;
    ensure(out.outputs[0].shares_storage_with(&a), || {
        "expected output 0 to share input 0's storage".to_owned()
    })?;
    ensure(!out.outputs[1].shares_storage_with(&b), || {
        "expected output 1 to be a fresh tensor".to_owned()
    })?;
    same("output 0", output_values(&out, 0)?, vec![11.0, 22.0])?;
    same("input 0 updated in place", values(&a)?, vec![11.0, 22.0])?;
    same("output 1", output_values(&out, 1)?, vec![20.0, 40.0])?;
    ensure(trace.lines().iter().any(|l| l == "alias output 0 = input 0 (shared storage)"), || {
        format!("expected the alias line in the trace:\n{}", trace.text())
    })?;
    // The output set holds input 0's runtime tensor under output0's name (donation).
    ensure(
        trace
            .lines()
            .iter()
            .any(|l| l == "add_tensor_to_tensor_set(s2, \"output0\", t1) -> NRT_SUCCESS"),
        || format!("expected output0 bound to input0's tensor t1:\n{}", trace.text()),
    )
}

fn return_aliases_false_leaves_aliased_outputs_out(factory: &Factory<'_>) -> Result<(), String> {
    let mut model = model(factory, &in_place_def(false), ModelOptions::default())?;
    let a = f32s(&[1.0, 2.0], &[2]);
    let out = ok("forward", model.forward(&[a.clone(), f32s(&[10.0, 20.0], &[2])]))?;
    same("outputs", out.outputs.len(), 1)?;
    same("the returned output is output1", output_values(&out, 0)?, vec![20.0, 40.0])?;
    same("input 0 still updated in place", values(&a)?, vec![11.0, 22.0])
}

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

fn rebind_is_skipped_when_the_slot_is_unchanged(factory: &Factory<'_>) -> Result<(), String> {
    let trace = Arc::new(Trace::new());
    let runtime = factory(&RuntimeSpec::default());
    let def = scale_model(&[2], 2.0);
    let options = traced(&trace);
    let mut model =
        ok("Model::new", Model::new(runtime.clone(), &def.neff(), &def.metaneff(), options))?;
    let adds = |trace: &Trace| count_lines(trace, "add_tensor_to_tensor_set(");
    trace.clear_lines();
    ok("host forward", model.forward(&[f32s(&[1.0, 2.0], &[2])]))?;
    same("adds for a host input (staging already bound)", adds(&trace), 0)?;
    let device = runtime
        .tensor_allocate(Placement::Device, 0, 8, b"resident")
        .map_err(|e| format!("tensor_allocate: {e}"))?;
    runtime
        .tensor_write(device, 0, &f32_bytes(&[3.0, 4.0]))
        .map_err(|e| format!("tensor_write: {e}"))?;
    let resident =
        HostTensor::on_device(abi::dtype::ScalarType::Float, &[2], device).expect("valid");
    trace.clear_lines();
    let out = ok("first device forward", model.forward(std::slice::from_ref(&resident)))?;
    same("output of the device-resident input", output_values(&out, 0)?, vec![6.0, 8.0])?;
    same("adds on the first device launch", adds(&trace), 1)?;
    same("writes on a device launch", count_lines(&trace, "tensor_write("), 0)?;
    trace.clear_lines();
    ok("second device forward", model.forward(std::slice::from_ref(&resident)))?;
    same("adds on the repeated launch", adds(&trace), 0)?;
    ensure(trace.lines().iter().any(|l| l == "rebind skipped input 0"), || trace.text())?;
    trace.clear_lines();
    ok("host forward again", model.forward(&[f32s(&[1.0, 2.0], &[2])]))?;
    same("adds when going back to the staging tensor", adds(&trace), 1)?;
    drop(model);
    runtime.tensor_free(device).map_err(|e| format!("tensor_free: {e}"))
}

fn nan_def() -> ModelDef {
    ModelDef {
        ops: vec![op_copy("output0", "input0"), op_nan("output0", 1)],
        ..scale_model(&[4], 1.0)
    }
}

fn nan_program_1003_is_tolerated_with_outputs(factory: &Factory<'_>) -> Result<(), String> {
    let runtime = factory(&RuntimeSpec { numerical_errors: true, ..RuntimeSpec::default() });
    let trace = Arc::new(Trace::new());
    let def = nan_def();
    let mut model =
        ok("Model::new", Model::new(runtime, &def.neff(), &def.metaneff(), traced(&trace)))?;
    let out = ok("forward", model.forward(&[f32s(&[1.0, 2.0, 3.0, 4.0], &[4])]))?;
    same("status", out.status, NrtStatus::ExecCompletedWithNumErr)?;
    let got = output_values(&out, 0)?;
    ensure(got[1].is_nan() && got[0] == 1.0 && got[2] == 3.0 && got[3] == 4.0, || {
        format!("expected [1, NaN, 3, 4], got {got:?}")
    })?;
    ensure(
        trace.lines().iter().any(|l| l == "status tolerated NRT_EXEC_COMPLETED_WITH_NUM_ERR"),
        || format!("expected the tolerated line:\n{}", trace.text()),
    )
}

fn injected_1003_on_execute_is_tolerated(factory: &Factory<'_>) -> Result<(), String> {
    let runtime = factory(&RuntimeSpec {
        fault_plan: "nrt_execute:2=EXEC_COMPLETED_WITH_NUM_ERR",
        ..RuntimeSpec::default()
    });
    let def = scale_model(&[2], 2.0);
    let mut model = ok(
        "Model::new",
        Model::new(runtime, &def.neff(), &def.metaneff(), ModelOptions::default()),
    )?;
    let first = ok("first forward", model.forward(&[f32s(&[1.0, 2.0], &[2])]))?;
    same("first status", first.status, NrtStatus::Success)?;
    let second = ok("second forward", model.forward(&[f32s(&[3.0, 4.0], &[2])]))?;
    same("second status", second.status, NrtStatus::ExecCompletedWithNumErr)?;
    same("second output intact", output_values(&second, 0)?, vec![6.0, 8.0])
}

fn expect_runtime_error(
    factory: &Factory<'_>,
    fault_plan: &'static str,
    message: &str,
    status: NrtStatus,
) -> Result<(), String> {
    let runtime = factory(&RuntimeSpec { fault_plan, ..RuntimeSpec::default() });
    let def = scale_model(&[2], 1.0);
    let error = err(
        fault_plan,
        Model::new(runtime, &def.neff(), &def.metaneff(), ModelOptions::default()),
    )?;
    let (got_message, source) = error
        .as_runtime()
        .ok_or_else(|| format!("{fault_plan}: expected a runtime error, got {error}"))?;
    same(fault_plan, (got_message, source.status), (message, status))
}

fn allocation_failures_carry_seed_messages(factory: &Factory<'_>) -> Result<(), String> {
    expect_runtime_error(
        factory,
        "nrt_allocate_tensor_set:1=RESOURCE",
        "Failed to allocate tensor set",
        NrtStatus::Resource,
    )?;
    expect_runtime_error(
        factory,
        "nrt_tensor_allocate:2=RESOURCE",
        "Failed to allocate neuron runtime tensor",
        NrtStatus::Resource,
    )?;
    expect_runtime_error(
        factory,
        "nrt_add_tensor_to_tensor_set:1=INVALID",
        "Failed to add neuron tensor to the input set",
        NrtStatus::Invalid,
    )
}

fn allocation_tolerates_1003_then_fails_to_add(factory: &Factory<'_>) -> Result<(), String> {
    // 1003 is not an allocation error for libtorchneuron; without a handle, the add that follows
    // is what fails.
    expect_runtime_error(
        factory,
        "nrt_tensor_allocate:1=EXEC_COMPLETED_WITH_NUM_ERR",
        "Failed to add neuron tensor to the input set",
        NrtStatus::InvalidHandle,
    )?;
    expect_runtime_error(
        factory,
        "nrt_allocate_tensor_set:1=EXEC_COMPLETED_WITH_NUM_ERR",
        "Failed to add neuron tensor to the input set",
        NrtStatus::InvalidHandle,
    )
}

fn weight_def() -> ModelDef {
    ModelDef {
        inputs: vec![
            TensorDef::input("input0", DataType::Float, &[2]),
            TensorDef::weight("input1", DataType::Float, &[2], "layer.bias"),
        ],
        outputs: vec![TensorDef::output("output0", DataType::Float, &[2])],
        ops: vec![op_add("output0", "input0", "input1")],
        ..ModelDef::new("bias")
    }
}

fn weights_are_bound_by_checkpoint_key(factory: &Factory<'_>) -> Result<(), String> {
    let mut weights = Weights::new();
    weights.insert(b"layer.bias".to_vec(), f32s(&[0.5, -1.0], &[2]));
    let mut model =
        model(factory, &weight_def(), ModelOptions { weights, ..ModelOptions::default() })?;
    let out = ok("forward", model.forward(&[f32s(&[1.0, 1.0], &[2])]))?;
    same("output", output_values(&out, 0)?, vec![1.5, 0.0])
}

fn missing_weight_key_is_named(factory: &Factory<'_>) -> Result<(), String> {
    let mut weights = Weights::new();
    weights.insert(b"other".to_vec(), f32s(&[0.5, -1.0], &[2]));
    let def = weight_def();
    let runtime = factory(&RuntimeSpec::default());
    let error = err(
        "Model::new",
        Model::new(
            runtime,
            &def.neff(),
            &def.metaneff(),
            ModelOptions { weights, ..ModelOptions::default() },
        ),
    )?;
    ensure(matches!(&error, BindError::MissingWeight { key, .. } if key == "layer.bias"), || {
        format!("expected MissingWeight for \"layer.bias\", got {error:?}")
    })?;
    let text = error.to_string();
    ensure(text.contains("\"layer.bias\"") && text.contains("other"), || {
        format!("message should name both keys: {text}")
    })
}

/// `output0 = input0 × 2` with a dynamic leading dimension, compiled for batch 2 of rows of 2.
fn dynamic_def() -> ModelDef {
    ModelDef {
        inputs: vec![TensorDef::input("input0", DataType::Float, &[2, 2]).dynamic()],
        outputs: vec![TensorDef::output("output0", DataType::Float, &[2, 2]).dynamic()],
        ops: vec![op_scale("output0", "input0", 2.0)],
        ..ModelDef::new("dynamic")
    }
}

fn rows(batch: usize) -> Vec<f32> {
    (0..batch * 2).map(|v| v as f32 + 1.0).collect()
}

fn doubled(batch: usize) -> Vec<f32> {
    rows(batch).iter().map(|v| v * 2.0).collect()
}

fn dynamic_batching_exact_batch_is_one_launch(factory: &Factory<'_>) -> Result<(), String> {
    let trace = Arc::new(Trace::new());
    let mut model = model(factory, &dynamic_def(), traced(&trace))?;
    trace.clear_lines();
    let out = ok("forward", model.forward(&[f32s(&rows(2), &[2, 2])]))?;
    same("output", output_values(&out, 0)?, doubled(2))?;
    same("launches", count_lines(&trace, "execute("), 1)
}

fn dynamic_batching_larger_batch_slices_and_pads(factory: &Factory<'_>) -> Result<(), String> {
    let trace = Arc::new(Trace::new());
    let mut model = model(factory, &dynamic_def(), traced(&trace))?;
    trace.clear_lines();
    let out = ok("forward with batch 5", model.forward(&[f32s(&rows(5), &[5, 2])]))?;
    same("launches", count_lines(&trace, "execute("), 3)?;
    same("output shape", out.outputs[0].shape().to_vec(), vec![5, 2])?;
    same("output", output_values(&out, 0)?, doubled(5))?;
    // The last slice holds row 4 then a zero row: [9, 10, 0, 0].
    let last_write = trace.lines().iter().rev().find(|l| l.starts_with("tensor_write(")).cloned();
    same(
        "padded last slice",
        last_write.as_deref(),
        Some(
            "tensor_write(t1, 0, [00 00 10 41 00 00 20 41 00 00 00 00 00 00 00 00]) -> NRT_SUCCESS",
        ),
    )
}

fn dynamic_batching_smaller_batch_pads_one_launch(factory: &Factory<'_>) -> Result<(), String> {
    let trace = Arc::new(Trace::new());
    let mut model = model(factory, &dynamic_def(), traced(&trace))?;
    trace.clear_lines();
    let out = ok("forward with batch 1", model.forward(&[f32s(&rows(1), &[1, 2])]))?;
    same("launches", count_lines(&trace, "execute("), 1)?;
    same("output shape", out.outputs[0].shape().to_vec(), vec![1, 2])?;
    same("output", output_values(&out, 0)?, doubled(1))
}

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
    let flags: Vec<bool> = model
        .metaneff_decoded()
        .input_tensors
        .iter()
        .chain(&model.metaneff_decoded().output_tensors)
        .map(|t| t.allow_dynamic_batch_size)
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

fn dynamic_batching_mixed_lengths_are_checked(factory: &Factory<'_>) -> Result<(), String> {
    let mut model = model(factory, &scale_model(&[2], 1.0), ModelOptions::default())?;
    let error =
        err("two input flags for one input", model.set_dynamic_batching_mixed(&[1, 1], &[1]))?;
    ensure(
        matches!(
            error,
            BindError::DynamicFlagsLength { side: Side::Input, expected: 1, actual: 2 }
        ),
        || format!("expected DynamicFlagsLength(input, 1, 2), got {error:?}"),
    )?;
    same(
        "message",
        error.to_string(),
        "set_dynamic_batching_mixed: expected 1 Input flags (one per tensor), got 2".to_owned(),
    )
}

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
    let config = decoded.model_config.unwrap_or_default();
    same("async/lazy", (config.async_load, config.lazy_load), (true, true))?;
    same(
        "dynamic flags",
        (
            decoded.input_tensors[0].allow_dynamic_batch_size,
            decoded.output_tensors[0].allow_dynamic_batch_size,
        ),
        (true, true),
    )?;
    let out = ok("forward after the reload", model.forward(&[f32s(&[1.0, 2.0], &[2])]))?;
    same("loads", count_lines(&trace, "load("), 2)?;
    same("output", output_values(&out, 0)?, vec![1.0, 2.0])
}

fn lazy_load_defers_to_first_forward(factory: &Factory<'_>) -> Result<(), String> {
    let trace = Arc::new(Trace::new());
    let def = ModelDef { lazy_load: true, ..scale_model(&[2], 2.0) };
    let mut model = model(factory, &def, traced(&trace))?;
    same("status after new", model.load_status(), LoadStatus::Unloaded)?;
    same("runtime calls after new", trace.lines().len(), 0)?;
    let out = ok("forward", model.forward(&[f32s(&[1.0, 2.0], &[2])]))?;
    same("status after forward", model.load_status(), LoadStatus::Loaded)?;
    same("loads", count_lines(&trace, "load("), 1)?;
    same("output", output_values(&out, 0)?, vec![2.0, 4.0])
}

fn async_load_runs_in_background_and_forward_waits(factory: &Factory<'_>) -> Result<(), String> {
    let def = ModelDef { async_load: true, ..scale_model(&[2], 2.0) };
    let mut model = model(factory, &def, ModelOptions::default())?;
    same("status after new", model.load_status(), LoadStatus::Loading)?;
    let out = ok("forward", model.forward(&[f32s(&[1.0, 2.0], &[2])]))?;
    same("status after forward", model.load_status(), LoadStatus::Loaded)?;
    same("output", output_values(&out, 0)?, vec![2.0, 4.0])?;
    ok("unload", model.unload())?;
    same("status after unload", model.load_status(), LoadStatus::Unloaded)?;
    ok("load", model.load())?;
    ok("blocking_load", model.blocking_load())?;
    same("status after blocking_load", model.load_status(), LoadStatus::Loaded)
}

fn unload_then_forward_loads_again(factory: &Factory<'_>) -> Result<(), String> {
    let mut model = model(factory, &scale_model(&[2], 2.0), ModelOptions::default())?;
    ok("unload", model.unload())?;
    same("status", model.load_status(), LoadStatus::Unloaded)?;
    let out = ok("forward", model.forward(&[f32s(&[1.0, 2.0], &[2])]))?;
    same("output", output_values(&out, 0)?, vec![2.0, 4.0])
}

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
    // Small ranks run one after another (a thread costs more than their launch); ranks of at
    // least PARALLEL_MIN_BYTES of input take the threaded path, with the same results.
    let n = (bind::PARALLEL_MIN_BYTES / 4) as i64;
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

/// Names are bytes end to end (ABI-FACTS §1): a metaneff input whose name is not UTF-8 binds
/// under its exact bytes and the model runs. The NEFF has no variable of that name (NEFF names
/// are JSON strings), so libnrt ignores the extra set entry; two such names that differ only in
/// their invalid bytes stay two entries.
fn non_utf8_names_bind_and_run_as_bytes(factory: &Factory<'_>) -> Result<(), String> {
    let def = copy_model(4);
    let mut meta = def.metaneff_message();
    for name in [vec![0x69, 0xff], vec![0x69, 0xfe]] {
        let mut extra = meta.input_tensors[0].clone();
        extra.name = name;
        meta.input_tensors.push(extra);
    }
    let trace = Arc::new(Trace::new());
    let runtime = factory(&RuntimeSpec::default());
    let mut model = ok(
        "Model::new",
        Model::new(runtime, &def.neff(), &metaneff::encode(&meta), traced(&trace)),
    )?;
    let bytes = |values: &[u8]| HostTensor::from_slice(values, &[4]).expect("4 bytes");
    let out = ok(
        "forward",
        model.forward(&[bytes(&[1, 2, 3, 4]), bytes(&[5, 6, 7, 8]), bytes(&[9, 9, 9, 9])]),
    )?;
    same("status", out.status, NrtStatus::Success)?;
    let output = out.outputs[0].to_vec::<u8>().map_err(|error| error.to_string())?;
    same("output", output, vec![1, 2, 3, 4])?;
    let lines = trace.lines();
    for expected in [
        r#"add_tensor_to_tensor_set(s1, b"i\xff", t2) -> NRT_SUCCESS"#,
        r#"add_tensor_to_tensor_set(s1, b"i\xfe", t3) -> NRT_SUCCESS"#,
        r#"bind input 1 b"i\xff" -> t2 var_id ? MR_INVALID"#,
    ] {
        ensure(lines.iter().any(|line| line == expected), || {
            format!("no trace line {expected:?} in {lines:#?}")
        })?;
    }
    Ok(())
}

fn short_untyped_dynamic_input_is_an_error(factory: &Factory<'_>) -> Result<(), String> {
    // An untyped input is not validated; if its bytes are fewer than its batch needs, slicing
    // reports it instead of reading past the end.
    let mut def = dynamic_def();
    def.inputs[0] = def.inputs[0].clone().with_kind(Type::UndefinedType);
    let mut model = model(factory, &def, ModelOptions::default())?;
    let short = HostTensor::from_slice(&[1.0f32, 2.0, 3.0], &[3, 1]).expect("valid");
    let error = err("forward with 3 rows of 1 for rows of 2", model.forward(&[short]))?;
    ensure(matches!(error, BindError::HostTensor(_)), || {
        format!("expected a host tensor error, got {error:?}")
    })
}
