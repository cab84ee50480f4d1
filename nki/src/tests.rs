//! Programs written by hand, run end to end, against values worked out by hand (each test says
//! how). Every program goes through [`Program::from_json`] as the frontend's would.

use serde_json::{Value, json};

use crate::{
    Program, ProgramErrorKind, RunError, RunErrorKind, RunOptions, RunResult, WarningKind, run,
};

/// A program document around `tensors`, `inputs`, `outputs` and `instructions`.
fn doc(tensors: Value, inputs: Value, outputs: Value, instructions: Value) -> Value {
    json!({
        "format": "nrtsim-nki-program",
        "version": 1,
        "kernel": {"name": "kernel", "file": "kernel.py", "line": 1},
        "target": "trn2",
        "grid": [],
        "seed": 7,
        "files": ["kernel.py"],
        "tensors": tensors,
        "inputs": inputs,
        "outputs": outputs,
        "instructions": instructions,
    })
}

fn tensor(name: &str, dtype: &str, shape: &[u64], buffer: &str) -> Value {
    json!({"name": name, "dtype": dtype, "shape": shape, "buffer": buffer, "loc": [0, 2]})
}

/// A dense row-major AP over a tensor of `shape`.
fn dense(t: usize, shape: &[i64]) -> Value {
    let mut dims = Vec::new();
    let mut stride = 1;
    for &count in shape.iter().rev() {
        dims.push(json!([stride, count]));
        stride *= count;
    }
    dims.reverse();
    json!({"t": t, "off": 0, "ap": dims})
}

fn ap(t: usize, off: i64, dims: &[[i64; 2]]) -> Value {
    json!({"t": t, "off": off, "ap": dims})
}

/// An instruction at line `line` of kernel.py.
fn ins(op: &str, engine: &str, line: u64, fields: Value) -> Value {
    let mut object = fields.as_object().cloned().unwrap_or_default();
    object.insert("op".into(), json!(op));
    object.insert("engine".into(), json!(engine));
    object.insert("loc".into(), json!([0, line]));
    Value::Object(object)
}

fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

fn parse(document: &Value) -> Program {
    Program::from_json(document.to_string().as_bytes()).expect("the program is valid")
}

fn parse_error(document: &Value) -> ProgramErrorKind {
    match Program::from_json(document.to_string().as_bytes()) {
        Ok(_) => panic!("the program was accepted"),
        Err(error) => *error.kind,
    }
}

fn run_with(document: &Value, inputs: &[Vec<u8>], strict: bool) -> Result<RunResult, RunError> {
    let program = parse(document);
    let inputs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    run(&program, &inputs, &RunOptions { strict, ..RunOptions::default() })
}

fn run_ok(document: &Value, inputs: &[Vec<u8>]) -> RunResult {
    run_with(document, inputs, false).expect("the run succeeds")
}

/// `out = a + b` over [2, 3] float32, through SBUF: the usual load, compute, store.
fn add_program() -> Value {
    doc(
        json!([
            tensor("a", "float32", &[2, 3], "hbm"),
            tensor("b", "float32", &[2, 3], "hbm"),
            tensor("out", "float32", &[2, 3], "hbm"),
            tensor("a_tile", "float32", &[2, 3], "sbuf"),
            tensor("b_tile", "float32", &[2, 3], "sbuf"),
            tensor("sum_tile", "float32", &[2, 3], "sbuf"),
        ]),
        json!([0, 1]),
        json!([2]),
        json!([
            ins("dma", "dma", 3, json!({"dst": dense(3, &[2, 3]), "src": dense(0, &[2, 3])})),
            ins("dma", "dma", 4, json!({"dst": dense(4, &[2, 3]), "src": dense(1, &[2, 3])})),
            ins(
                "tensor_tensor",
                "vector",
                5,
                json!({
                    "dst": dense(5, &[2, 3]), "a": dense(3, &[2, 3]), "b": dense(4, &[2, 3]), "alu_op": "add"
                })
            ),
            ins("dma", "dma", 6, json!({"dst": dense(2, &[2, 3]), "src": dense(5, &[2, 3])})),
        ]),
    )
}

#[test]
fn tensor_tensor_add_of_two_by_three() {
    let result = run_ok(
        &add_program(),
        &[
            f32_bytes(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]),
            f32_bytes(&[10.0, 20.0, 30.0, 40.0, 50.0, 60.0]),
        ],
    );
    assert_eq!(f32s(&result.outputs[0]), [11.0, 22.0, 33.0, 44.0, 55.0, 66.0]);
    assert!(result.report.warnings.is_empty(), "{:?}", result.report.warnings);
    let stats = &result.report.stats;
    assert_eq!(stats.instructions, 4);
    assert_eq!(stats.instructions_per_engine["dma"], 3);
    assert_eq!(stats.instructions_per_engine["vector"], 1);
    // Three DMAs of 6 float32 each.
    assert_eq!(stats.dma_bytes, 3 * 6 * 4);
    // a_tile and b_tile live from their loads to the add, with sum_tile: 3 × 12 bytes.
    assert_eq!(stats.peak_sbuf_bytes_per_partition, 36);
    assert_eq!(stats.peak_psum_bytes_per_partition, 0);
}

/// stationary [K=2, M=2] = [[1, 2], [3, 4]], moving [K=2, N=3] = [[5, 6, 7], [8, 9, 10]]:
/// dst[m, n] = Σ_k stationary[k, m] moving[k, n]
///   m = 0 (column 1, 3): 1·5 + 3·8 = 29, 1·6 + 3·9 = 33, 1·7 + 3·10 = 37
///   m = 1 (column 2, 4): 2·5 + 4·8 = 42, 2·6 + 4·9 = 48, 2·7 + 4·10 = 54
fn matmul_program(second_accumulates: bool) -> Value {
    let matmul = |line, accumulate| {
        ins(
            "matmul",
            "tensor",
            line,
            json!({
                "dst": dense(4, &[2, 3]), "stationary": dense(2, &[2, 2]), "moving": dense(3, &[2, 3]),
                "accumulate": accumulate
            }),
        )
    };
    doc(
        json!([
            tensor("s", "float32", &[2, 2], "hbm"),
            tensor("m", "float32", &[2, 3], "hbm"),
            tensor("s_tile", "float32", &[2, 2], "sbuf"),
            tensor("m_tile", "float32", &[2, 3], "sbuf"),
            tensor("acc", "float32", &[2, 3], "psum"),
            tensor("out", "float32", &[2, 3], "hbm"),
        ]),
        json!([0, 1]),
        json!([5]),
        json!([
            ins("dma", "dma", 3, json!({"dst": dense(2, &[2, 2]), "src": dense(0, &[2, 2])})),
            ins("dma", "dma", 4, json!({"dst": dense(3, &[2, 3]), "src": dense(1, &[2, 3])})),
            matmul(5, false),
            matmul(6, second_accumulates),
            ins("dma", "dma", 7, json!({"dst": dense(5, &[2, 3]), "src": dense(4, &[2, 3])})),
        ]),
    )
}

#[test]
fn matmul_of_small_literal_matrices() {
    let inputs = [f32_bytes(&[1.0, 2.0, 3.0, 4.0]), f32_bytes(&[5.0, 6.0, 7.0, 8.0, 9.0, 10.0])];
    let result = run_ok(&matmul_program(false), &inputs);
    assert_eq!(f32s(&result.outputs[0]), [29.0, 33.0, 37.0, 42.0, 48.0, 54.0]);
    // Accumulating the same product once more doubles it.
    let result = run_ok(&matmul_program(true), &inputs);
    assert_eq!(f32s(&result.outputs[0]), [58.0, 66.0, 74.0, 84.0, 96.0, 108.0]);
    assert_eq!(result.report.stats.peak_psum_bytes_per_partition, 12);
}

/// A [2, 3] input copied to the output under the mask `i1 - 2 < 0`: column 2 stays unwritten.
fn masked_store_program() -> Value {
    doc(
        json!([tensor("x", "float32", &[2, 3], "hbm"), tensor("out", "float32", &[2, 3], "hbm")]),
        json!([0]),
        json!([1]),
        json!([ins(
            "dma",
            "dma",
            3,
            json!({
                "dst": dense(1, &[2, 3]), "src": dense(0, &[2, 3]),
                "mask": [{"c": [0, 1], "k": -2, "cmp": "lt"}]
            })
        )]),
    )
}

#[test]
fn masked_store_leaves_elements_unwritten() {
    let input = f32_bytes(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let result = run_ok(&masked_store_program(), std::slice::from_ref(&input));
    assert_eq!(f32s(&result.outputs[0]), [1.0, 2.0, 0.0, 4.0, 5.0, 0.0]);
    let warnings = &result.report.warnings;
    assert_eq!(warnings.len(), 1);
    assert_eq!(warnings[0].kind, WarningKind::UnwrittenOutput);
    assert!(warnings[0].message.contains("2 elements"), "{}", warnings[0].message);
    assert_eq!(result.report.stats.dma_bytes, 4 * 4);
    let error = run_with(&masked_store_program(), &[input], true).unwrap_err();
    assert!(matches!(*error.kind, RunErrorKind::UnwrittenOutput { count: 2, offset: 2, .. }));
}

/// An SBUF tile nothing wrote, stored to the output.
fn uninitialized_read_program() -> Value {
    doc(
        json!([
            tensor("tile", "float32", &[1, 2], "sbuf"),
            tensor("out", "float32", &[1, 2], "hbm")
        ]),
        json!([]),
        json!([1]),
        json!([ins("dma", "dma", 9, json!({"dst": dense(1, &[1, 2]), "src": dense(0, &[1, 2])}))]),
    )
}

#[test]
fn uninitialized_read_gives_nan_and_a_warning() {
    let result = run_ok(&uninitialized_read_program(), &[]);
    assert!(f32s(&result.outputs[0]).iter().all(|v| v.is_nan()));
    let warnings = &result.report.warnings;
    assert_eq!(warnings.len(), 1);
    assert_eq!(warnings[0].kind, WarningKind::UninitializedRead);
    assert_eq!(warnings[0].loc.as_deref(), Some("kernel.py:9"));
    assert!(warnings[0].message.contains("`tile`"), "{}", warnings[0].message);
}

#[test]
fn strict_makes_an_uninitialized_read_an_error() {
    let error = run_with(&uninitialized_read_program(), &[], true).unwrap_err();
    assert!(matches!(*error.kind, RunErrorKind::UninitializedRead { count: 2, .. }));
    assert_eq!(error.instruction, Some(0));
    assert_eq!(error.loc.unwrap().to_string(), "kernel.py:9");
}

#[test]
fn out_of_bounds_access_pattern_names_the_tensor() {
    // Offset 4 + 2 × 1 = 6 is one past the 6 elements of `x`.
    let document = doc(
        json!([tensor("x", "float32", &[2, 3], "hbm"), tensor("out", "float32", &[3], "hbm")]),
        json!([0]),
        json!([1]),
        json!([ins("dma", "dma", 3, json!({"dst": dense(1, &[3]), "src": ap(0, 4, &[[1, 3]])}))]),
    );
    let error = run_with(&document, &[f32_bytes(&[0.0; 6])], false).unwrap_err();
    assert_eq!(error.instruction, Some(0));
    assert_eq!(error.loc.as_ref().unwrap().to_string(), "kernel.py:3");
    match &*error.kind {
        RunErrorKind::OutOfBounds { operand, tensor, index, offset, numel } => {
            assert_eq!(
                (operand.as_str(), tensor.as_str(), index.as_slice(), *offset, *numel),
                ("src", "x", &[2u64][..], Some(6), 6)
            );
        }
        other => panic!("expected OutOfBounds, got {other:?}"),
    }
    // A negative stride reaching below 0: offset 1 - 1 × 2 = -1.
    let document = doc(
        json!([tensor("x", "float32", &[6], "hbm"), tensor("out", "float32", &[3], "hbm")]),
        json!([0]),
        json!([1]),
        json!([ins("dma", "dma", 3, json!({"dst": dense(1, &[3]), "src": ap(0, 1, &[[-1, 3]])}))]),
    );
    let error = run_with(&document, &[f32_bytes(&[0.0; 6])], false).unwrap_err();
    assert!(matches!(*error.kind, RunErrorKind::OutOfBounds { offset: Some(-1), .. }));
}

/// A [2, 3] tensor stored through a [2, 4] pattern (row stride 3): row 0's fourth element is
/// offset 3 (row 1's first) and row 1's is offset 3 + 3 = 6, past the 6 elements; the mask `i1 < 3`
/// keeps the store to the three real columns.
fn padded_store_program(masked: bool) -> Value {
    let mut store = json!({"dst": ap(1, 0, &[[3, 2], [1, 4]]), "src": ap(0, 0, &[[4, 2], [1, 4]])});
    if masked {
        store["mask"] = json!([{"c": [0, 1], "k": -3, "cmp": "lt"}]);
    }
    doc(
        json!([tensor("x", "float32", &[2, 4], "hbm"), tensor("out", "float32", &[2, 3], "hbm")]),
        json!([0]),
        json!([1]),
        json!([ins("dma", "dma", 5, store)]),
    )
}

#[test]
fn a_masked_store_may_have_a_pattern_past_its_tensor() {
    let input = f32_bytes(&[1.0, 2.0, 3.0, 9.0, 4.0, 5.0, 6.0, 9.0]);
    let result = run_with(&padded_store_program(true), std::slice::from_ref(&input), true)
        .expect("the mask keeps the store inside `out`");
    assert_eq!(f32s(&result.outputs[0]), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    // Unmasked, row 0's fourth element lands on offset 3 (inside), row 1's on offset 6: the
    // first element outside is index [1, 3].
    let error = run_with(&padded_store_program(false), &[input], true).unwrap_err();
    assert_eq!(error.loc.as_ref().unwrap().to_string(), "kernel.py:5");
    match &*error.kind {
        RunErrorKind::OutOfBounds { operand, tensor, index, offset, numel } => {
            assert_eq!(
                (operand.as_str(), tensor.as_str(), index.as_slice(), *offset, *numel),
                ("dst", "out", &[1u64, 3][..], Some(6), 6)
            );
        }
        other => panic!("expected OutOfBounds, got {other:?}"),
    }
    assert!(
        error
            .to_string()
            .contains("dst reaches outside tensor `out` (6 elements): index [1, 3] is at offset 6"),
        "{error}"
    );
}

#[test]
fn partition_dimension_over_128_is_refused() {
    let document =
        doc(json!([tensor("big", "float32", &[129, 4], "sbuf")]), json!([]), json!([]), json!([]));
    assert!(matches!(parse_error(&document), ProgramErrorKind::PartitionDim { found: 129, .. }));
}

#[test]
fn live_sbuf_over_the_target_capacity_is_an_error() {
    // trn2 has 224 KiB = 229376 bytes per partition; two live tiles of 30000 float32 take 240000.
    let mut document = doc(
        json!([
            tensor("first", "float32", &[128, 30000], "sbuf"),
            tensor("second", "float32", &[128, 30000], "sbuf"),
        ]),
        json!([]),
        json!([]),
        json!([
            ins("memset", "vector", 3, json!({"dst": dense(0, &[128, 30000]), "value": 0.0})),
            ins("memset", "vector", 4, json!({"dst": dense(1, &[128, 30000]), "value": 0.0})),
            ins(
                "copy",
                "vector",
                5,
                json!({"dst": dense(1, &[128, 30000]), "src": dense(0, &[128, 30000])})
            ),
        ]),
    );
    let error = run_with(&document, &[], false).unwrap_err();
    assert_eq!(error.instruction, Some(1));
    match &*error.kind {
        RunErrorKind::Capacity { buffer, live, capacity, largest } => {
            assert_eq!((*buffer, *live, *capacity), ("SBUF", 240_000, 229_376));
            assert_eq!(largest.len(), 2);
        }
        other => panic!("expected Capacity, got {other:?}"),
    }
    // Without the last instruction the first tile is dead before the second is born.
    document["instructions"].as_array_mut().unwrap().pop();
    let result = run_ok(&document, &[]);
    assert_eq!(result.report.stats.peak_sbuf_bytes_per_partition, 120_000);
}

#[test]
fn unknown_op_is_unsupported_and_named() {
    let document = doc(
        json!([tensor("x", "float32", &[1, 1], "sbuf")]),
        json!([]),
        json!([]),
        json!([ins("frobnicate", "vector", 12, json!({"dst": dense(0, &[1, 1])}))]),
    );
    let error = Program::from_json(document.to_string().as_bytes()).unwrap_err();
    assert!(
        matches!(&*error.kind, ProgramErrorKind::Unsupported { what } if what.contains("frobnicate"))
    );
    assert_eq!(error.loc.unwrap().to_string(), "kernel.py:12");
    // An ALU op the executor does not model is Unsupported too, not a parse error.
    let document = doc(
        json!([tensor("x", "float32", &[1, 1], "sbuf")]),
        json!([]),
        json!([]),
        json!([ins(
            "tensor_tensor",
            "vector",
            12,
            json!({
                "dst": dense(0, &[1, 1]), "a": {"imm": 1.0}, "b": {"imm": 2.0}, "alu_op": "hypot"
            })
        )]),
    );
    assert!(
        matches!(parse_error(&document), ProgramErrorKind::Unsupported { what } if what.contains("hypot"))
    );
}

#[test]
fn unknown_fields_are_errors() {
    let mut document = add_program();
    document["instructions"][2]["saturate"] = json!(true);
    assert!(
        matches!(parse_error(&document), ProgramErrorKind::Field { op, message } if op == "tensor_tensor" && message.contains("saturate"))
    );
    let mut document = add_program();
    document["comment"] = json!("hi");
    assert!(
        matches!(parse_error(&document), ProgramErrorKind::Json { message, .. } if message.contains("comment"))
    );
    let mut document = add_program();
    document["tensors"][0]["layout"] = json!("nchw");
    assert!(
        matches!(parse_error(&document), ProgramErrorKind::Json { message, .. } if message.contains("layout"))
    );
}

#[test]
fn another_version_is_refused_naming_both() {
    let mut document = add_program();
    document["version"] = json!(2);
    // A newer document may carry fields this version does not know; the version is what counts.
    document["new_field"] = json!({});
    let error = Program::from_json(document.to_string().as_bytes()).unwrap_err();
    assert!(matches!(&*error.kind, ProgramErrorKind::Version { found } if found == "2"));
    let message = error.to_string();
    assert!(message.contains("version 1") && message.contains("version 2"), "{message}");
}

#[test]
fn truncated_json_is_an_error() {
    let text = add_program().to_string();
    for cut in [0, 1, text.len() / 3, text.len() / 2, text.len() - 1] {
        let error = Program::from_json(&text.as_bytes()[..cut]).unwrap_err();
        assert!(matches!(*error.kind, ProgramErrorKind::Json { .. }), "cut {cut}: {error}");
    }
    assert!(matches!(
        *Program::from_json(b"\xff\xfe").unwrap_err().kind,
        ProgramErrorKind::Json { .. }
    ));
}

#[test]
fn absurd_sizes_are_errors() {
    // 2^40 × 2^40 elements overflow 64 bits.
    let document = doc(
        json!([tensor("huge", "float32", &[1 << 40, 1 << 40], "hbm")]),
        json!([0]),
        json!([]),
        json!([]),
    );
    assert!(matches!(parse_error(&document), ProgramErrorKind::TooLarge { .. }));
    // 2^33 float32 are 32 GiB: a valid program, but past the run's memory limit.
    let document =
        doc(json!([tensor("big", "float32", &[1 << 33], "hbm")]), json!([]), json!([0]), json!([]));
    let error = run_with(&document, &[], false).unwrap_err();
    assert!(matches!(*error.kind, RunErrorKind::MemoryLimit { .. }), "{error}");
    // A broadcast AP over 2^62 elements: in bounds, but far past what one instruction may take.
    let document = doc(
        json!([tensor("x", "float32", &[1, 1], "sbuf")]),
        json!([]),
        json!([]),
        json!([ins(
            "memset",
            "vector",
            3,
            json!({"dst": ap(0, 0, &[[0, 1 << 31], [0, 1 << 31]]), "value": 1.0})
        )]),
    );
    assert!(matches!(parse_error(&document), ProgramErrorKind::TooLarge { .. }));
}

#[test]
fn wrong_input_size_names_both_sizes() {
    let program = parse(&add_program());
    let a = f32_bytes(&[0.0; 6]);
    let b = f32_bytes(&[0.0; 5]);
    let error = run(&program, &[&a, &b], &RunOptions::default()).unwrap_err();
    assert!(matches!(
        *error.kind,
        RunErrorKind::InputSize { index: 1, expected: 24, found: 20, .. }
    ));
}

/// A gather of rows of a [4, 2] table by an int32 index [3, 1] = [2, 0, idx]: row `idx` may be
/// outside the table.
fn gather_program(oob: &str) -> Value {
    doc(
        json!([
            tensor("table", "float32", &[4, 2], "hbm"),
            tensor("index", "int32", &[3, 1], "hbm"),
            tensor("out", "float32", &[3, 2], "hbm"),
        ]),
        json!([0, 1]),
        json!([2]),
        json!([ins(
            "dma",
            "dma",
            3,
            json!({
                "dst": dense(2, &[3, 2]),
                "src": {"t": 0, "off": 0, "ap": [[2, 3], [1, 2]], "ind": {"dim": 0, "index": ap(1, 0, &[[1, 3], [0, 1]])}},
                "oob": oob
            })
        )]),
    )
}

#[test]
fn indirect_dma_gathers_rows_and_skips_out_of_bounds_indices() {
    let table = f32_bytes(&[0.0, 1.0, 10.0, 11.0, 20.0, 21.0, 30.0, 31.0]);
    let index =
        |last: i32| [2i32, 0, last].iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>();
    let result = run_ok(&gather_program("error"), &[table.clone(), index(3)]);
    assert_eq!(f32s(&result.outputs[0]), [20.0, 21.0, 0.0, 1.0, 30.0, 31.0]);
    // Row 4 is past the table: an error by default, the element not moved under "skip".
    let error = run_with(&gather_program("error"), &[table.clone(), index(4)], false).unwrap_err();
    match &*error.kind {
        RunErrorKind::OutOfBounds { tensor, index, offset, .. } => {
            assert_eq!(
                (tensor.as_str(), index.as_slice(), *offset),
                ("table", &[2u64, 0][..], Some(8))
            );
        }
        other => panic!("expected OutOfBounds, got {other:?}"),
    }
    let result = run_ok(&gather_program("skip"), &[table, index(4)]);
    assert_eq!(f32s(&result.outputs[0]), [20.0, 21.0, 0.0, 1.0, 0.0, 0.0]);
    assert_eq!(result.report.warnings[0].kind, WarningKind::UnwrittenOutput);
    assert_eq!(result.report.stats.dma_bytes, 4 * 4);
}

/// One [2, 2] float32 input into SBUF, instructions on it, `out` stored from tile 2.
fn tile_program(extra_tensors: &[Value], body: &[Value], out_shape: &[i64]) -> Value {
    let mut tensors = vec![
        tensor("x", "float32", &[2, 2], "hbm"),
        tensor("x_tile", "float32", &[2, 2], "sbuf"),
        tensor("y_tile", "float32", &[2, 2], "sbuf"),
        tensor("out", "float32", &out_shape.iter().map(|&c| c as u64).collect::<Vec<_>>(), "hbm"),
    ];
    tensors.extend(extra_tensors.iter().cloned());
    let mut instructions =
        vec![ins("dma", "dma", 3, json!({"dst": dense(1, &[2, 2]), "src": dense(0, &[2, 2])}))];
    instructions.extend(body.iter().cloned());
    doc(json!(tensors), json!([0]), json!([3]), json!(instructions))
}

#[test]
fn activation_scales_biases_and_folds_each_partition() {
    // relu(2x + 1) of [[1, -2], [3, 4]] = relu([[3, -3], [7, 9]]) = [[3, 0], [7, 9]];
    // the sums per partition are 3 and 16.
    let document = tile_program(
        &[
            tensor("sums", "float32", &[2, 1], "sbuf"),
            tensor("sums_out", "float32", &[2, 1], "hbm"),
        ],
        &[
            ins(
                "activation",
                "scalar",
                4,
                json!({
                    "dst": dense(2, &[2, 2]), "src": dense(1, &[2, 2]), "func": "relu",
                    "scale": {"imm": 2.0}, "bias": {"imm": 1.0},
                    "reduce": {"op": "add", "dst": dense(4, &[2, 1])}
                }),
            ),
            ins("dma", "dma", 5, json!({"dst": dense(3, &[2, 2]), "src": dense(2, &[2, 2])})),
            ins("dma", "dma", 6, json!({"dst": dense(5, &[2, 1]), "src": dense(4, &[2, 1])})),
        ],
        &[2, 2],
    );
    let mut document = document;
    document["outputs"] = json!([3, 5]);
    let result = run_ok(&document, &[f32_bytes(&[1.0, -2.0, 3.0, 4.0])]);
    assert_eq!(f32s(&result.outputs[0]), [3.0, 0.0, 7.0, 9.0]);
    assert_eq!(f32s(&result.outputs[1]), [3.0, 16.0]);
}

#[test]
fn activation_with_a_per_partition_bias_tile() {
    // exp(0 · x + bias[p]) with bias = [0, ln 1] broadcast along the free dimension (stride 0)
    // is 1 everywhere; `identity` of x · [[2], [3]] broadcast is [[2, -4], [9, 12]].
    let document = tile_program(
        &[tensor("scale", "float32", &[2, 1], "sbuf")],
        &[
            ins("memset", "vector", 4, json!({"dst": ap(4, 0, &[[1, 1], [1, 1]]), "value": 2.0})),
            ins("memset", "vector", 4, json!({"dst": ap(4, 1, &[[1, 1], [1, 1]]), "value": 3.0})),
            ins(
                "activation",
                "scalar",
                5,
                json!({
                    "dst": dense(2, &[2, 2]), "src": dense(1, &[2, 2]), "func": "identity",
                    "scale": ap(4, 0, &[[1, 2], [0, 2]]), "bias": null, "reduce": null
                }),
            ),
            ins("dma", "dma", 6, json!({"dst": dense(3, &[2, 2]), "src": dense(2, &[2, 2])})),
        ],
        &[2, 2],
    );
    let result = run_ok(&document, &[f32_bytes(&[1.0, -2.0, 3.0, 4.0])]);
    assert_eq!(f32s(&result.outputs[0]), [2.0, -4.0, 9.0, 12.0]);
}

#[test]
fn reduce_negates_and_partition_reduce_folds_partitions() {
    // max over axis 1 of [[1, -2], [3, 4]] is [1, 4], negated [-1, -4], into y_tile[0, :].
    let document = tile_program(
        &[],
        &[
            ins(
                "reduce",
                "vector",
                4,
                json!({
                    "dst": ap(2, 0, &[[1, 2], [1, 1]]), "src": dense(1, &[2, 2]),
                    "alu_op": "maximum", "axes": [1], "negate": true
                }),
            ),
            // Partition sums: [1 + 3, -2 + 4] = [4, 2] into y_tile[1, :].
            ins(
                "partition_reduce",
                "gpsimd",
                5,
                json!({
                    "dst": ap(2, 2, &[[2, 1], [1, 2]]), "src": dense(1, &[2, 2]), "alu_op": "add"
                }),
            ),
            ins("dma", "dma", 6, json!({"dst": ap(3, 0, &[[1, 2]]), "src": ap(2, 0, &[[1, 2]])})),
            ins("dma", "dma", 7, json!({"dst": ap(3, 2, &[[1, 2]]), "src": ap(2, 2, &[[1, 2]])})),
        ],
        &[4],
    );
    let result = run_ok(&document, &[f32_bytes(&[1.0, -2.0, 3.0, 4.0])]);
    assert_eq!(f32s(&result.outputs[0]), [-1.0, -4.0, 4.0, 2.0]);
}

#[test]
fn tensor_scalar_applies_steps_in_order_with_reverse() {
    // (10 - x) · 2 for x = [[1, -2], [3, 4]]: [[18, 24], [14, 12]].
    let document = tile_program(
        &[],
        &[
            ins(
                "tensor_scalar",
                "vector",
                4,
                json!({
                    "dst": dense(2, &[2, 2]), "src": dense(1, &[2, 2]),
                    "ops": [
                        {"op": "subtract", "operand": {"imm": 10.0}, "reverse": true},
                        {"op": "multiply", "operand": {"imm": 2.0}}
                    ]
                }),
            ),
            ins("dma", "dma", 5, json!({"dst": dense(3, &[2, 2]), "src": dense(2, &[2, 2])})),
        ],
        &[2, 2],
    );
    let result = run_ok(&document, &[f32_bytes(&[1.0, -2.0, 3.0, 4.0])]);
    assert_eq!(f32s(&result.outputs[0]), [18.0, 24.0, 14.0, 12.0]);
}

#[test]
fn iota_and_affine_select_make_a_lower_triangle() {
    // iota: 10 · i0 + i1 = [[0, 1], [10, 11]]; select where i0 - i1 >= 0, else -1:
    // [[0, -1], [10, 11]].
    let document = tile_program(
        &[tensor("i", "int32", &[2, 2], "sbuf")],
        &[
            ins("iota", "gpsimd", 4, json!({"dst": dense(4, &[2, 2]), "c": [10, 1], "k": 0})),
            ins(
                "select",
                "gpsimd",
                5,
                json!({
                    "dst": dense(2, &[2, 2]), "pred": {"affine": {"c": [1, -1], "k": 0, "cmp": "ge"}},
                    "on_true": dense(4, &[2, 2]), "on_false": {"imm": -1.0}
                }),
            ),
            ins("dma", "dma", 6, json!({"dst": dense(3, &[2, 2]), "src": dense(2, &[2, 2])})),
        ],
        &[2, 2],
    );
    let result = run_ok(&document, &[f32_bytes(&[0.0; 4])]);
    assert_eq!(f32s(&result.outputs[0]), [0.0, -1.0, 10.0, 11.0]);
}

#[test]
fn select_reads_only_the_chosen_branch() {
    // on_true is written only at [0, 0] and [1, 1], exactly where the diagonal predicate holds,
    // so nothing unwritten is read.
    let document = tile_program(
        &[],
        &[
            ins("memset", "vector", 4, json!({"dst": ap(2, 0, &[[3, 2]]), "value": 5.0})),
            ins(
                "select",
                "vector",
                5,
                json!({
                    "dst": dense(2, &[2, 2]), "pred": {"affine": {"c": [1, -1], "k": 0, "cmp": "eq"}},
                    "on_true": dense(2, &[2, 2]), "on_false": dense(1, &[2, 2])
                }),
            ),
            ins("dma", "dma", 6, json!({"dst": dense(3, &[2, 2]), "src": dense(2, &[2, 2])})),
        ],
        &[2, 2],
    );
    let result = run_ok(&document, &[f32_bytes(&[1.0, -2.0, 3.0, 4.0])]);
    assert_eq!(f32s(&result.outputs[0]), [5.0, -2.0, 3.0, 5.0]);
    assert!(result.report.warnings.is_empty(), "{:?}", result.report.warnings);
}

#[test]
fn stores_round_to_the_destination_dtype() {
    // 1 + 2^-8 is a tie between bf16 1.0 (0x3f80) and 0x3f81: to even, 0x3f80; 2.5 into int8 is
    // a tie between 2 and 3: to even, 2; 1000 into float8_e4m3 overflows past 240 to infinity.
    let document = doc(
        json!([
            tensor("x", "float32", &[3], "hbm"),
            tensor("h", "bfloat16", &[1], "hbm"),
            tensor("i", "int8", &[1], "hbm"),
            tensor("f", "float8_e4m3", &[1], "hbm"),
        ]),
        json!([0]),
        json!([1, 2, 3]),
        json!([
            ins("dma", "dma", 3, json!({"dst": ap(1, 0, &[[1, 1]]), "src": ap(0, 0, &[[1, 1]])})),
            ins("dma", "dma", 4, json!({"dst": ap(2, 0, &[[1, 1]]), "src": ap(0, 1, &[[1, 1]])})),
            ins("dma", "dma", 5, json!({"dst": ap(3, 0, &[[1, 1]]), "src": ap(0, 2, &[[1, 1]])})),
        ]),
    );
    let result = run_ok(&document, &[f32_bytes(&[1.0 + 2f32.powi(-8), 2.5, 1000.0])]);
    assert_eq!(result.outputs[0], [0x80, 0x3f]);
    assert_eq!(result.outputs[1], [2]);
    assert_eq!(result.outputs[2], [0x78]);
}

#[test]
fn dma_accumulate_adds_into_the_destination() {
    // out = x, then out += x: [[2, -4], [6, 8]].
    let document = tile_program(
        &[],
        &[
            ins("dma", "dma", 4, json!({"dst": dense(3, &[2, 2]), "src": dense(0, &[2, 2])})),
            ins(
                "dma",
                "dma",
                5,
                json!({"dst": dense(3, &[2, 2]), "src": dense(1, &[2, 2]), "accumulate": "add"}),
            ),
        ],
        &[2, 2],
    );
    let result = run_ok(&document, &[f32_bytes(&[1.0, -2.0, 3.0, 4.0])]);
    assert_eq!(f32s(&result.outputs[0]), [2.0, -4.0, 6.0, 8.0]);
}

#[test]
fn print_records_values_in_the_report() {
    let document = tile_program(
        &[],
        &[
            ins(
                "print",
                "sync",
                4,
                json!({"label": "x", "src": dense(1, &[2, 2]),
                "mask": [{"c": [1, 0], "k": 0, "cmp": "eq"}]}),
            ),
            ins("dma", "dma", 5, json!({"dst": dense(3, &[2, 2]), "src": dense(1, &[2, 2])})),
        ],
        &[2, 2],
    );
    let result = run_ok(&document, &[f32_bytes(&[1.0, f32::INFINITY, 3.0, 4.0])]);
    let report = serde_json::to_value(&result.report).unwrap();
    assert_eq!(
        report["prints"],
        json!([{"label": "x", "loc": "kernel.py:4", "shape": [2, 2], "values": [1.0, "inf", null, null]}])
    );
    assert_eq!(report["stats"]["instructions_per_engine"]["sync"], json!(1));
}

#[test]
fn shape_mismatch_names_the_operand() {
    let mut document = add_program();
    document["instructions"][2]["b"] = dense(4, &[3, 2]);
    assert!(
        matches!(parse_error(&document), ProgramErrorKind::ShapeMismatch { operand, found, .. } if operand == "b" && found == [3, 2])
    );
    // A matmul whose dst is not in PSUM.
    let mut document = matmul_program(false);
    document["tensors"][4]["buffer"] = json!("sbuf");
    assert!(
        matches!(parse_error(&document), ProgramErrorKind::Invalid(message) if message.contains("Psum"))
    );
}

#[test]
fn tensor_ids_and_locs_are_checked() {
    let mut document = add_program();
    document["instructions"][2]["a"]["t"] = json!(17);
    assert!(matches!(parse_error(&document), ProgramErrorKind::TensorId { id: 17, count: 6, .. }));
    let mut document = add_program();
    document["instructions"][1]["loc"] = json!([3, 1]);
    assert!(matches!(parse_error(&document), ProgramErrorKind::Loc { index: 3, count: 1 }));
    let mut document = add_program();
    document["outputs"] = json!([3]);
    assert!(
        matches!(parse_error(&document), ProgramErrorKind::Invalid(message) if message.contains("on-chip"))
    );
}

/// Runs one op between an SBUF copy of `input` (tensor 1, `in_shape`) and an SBUF result
/// (tensor 2, `out_shape` of `out_dtype`, stored to output 0); `extra` tensors start at 4, and
/// those named `*_out` are outputs too, in order.
fn run_tile_op(
    input: &[f32],
    in_shape: &[i64],
    out_dtype: &str,
    out_shape: &[i64],
    extra: &[Value],
    body: &[Value],
) -> RunResult {
    let shape = |s: &[i64]| s.iter().map(|&c| c as u64).collect::<Vec<_>>();
    let mut tensors = vec![
        tensor("x", "float32", &shape(in_shape), "hbm"),
        tensor("x_tile", "float32", &shape(in_shape), "sbuf"),
        tensor("y_tile", out_dtype, &shape(out_shape), "sbuf"),
        tensor("out", out_dtype, &shape(out_shape), "hbm"),
    ];
    tensors.extend(extra.iter().cloned());
    let mut instructions =
        vec![ins("dma", "dma", 3, json!({"dst": dense(1, in_shape), "src": dense(0, in_shape)}))];
    instructions.extend(body.iter().cloned());
    instructions.push(ins(
        "dma",
        "dma",
        9,
        json!({"dst": dense(3, out_shape), "src": dense(2, out_shape)}),
    ));
    let outputs: Vec<usize> = std::iter::once(3)
        .chain(
            (4..tensors.len()).filter(|&t| tensors[t]["name"].as_str().unwrap().ends_with("_out")),
        )
        .collect();
    let document = doc(json!(tensors), json!([0]), json!(outputs), json!(instructions));
    let result = run_with(&document, &[f32_bytes(input)], true).expect("the run succeeds");
    assert!(result.report.warnings.is_empty(), "{:?}", result.report.warnings);
    result
}

#[test]
fn scan_runs_op0_then_op1_along_each_partition() {
    // result[i] = (data0[i] + result[i - 1]) + data1[i] from 0, with data0 = data1 (both x_tile)
    // = [1, 2, 3]: 1 + 0 + 1 = 2, 2 + 2 + 2 = 6, 3 + 6 + 3 = 12.
    let result = run_tile_op(
        &[1.0, 2.0, 3.0],
        &[1, 3],
        "float32",
        &[1, 3],
        &[],
        &[ins(
            "scan",
            "vector",
            4,
            json!({"dst": dense(2, &[1, 3]), "data0": dense(1, &[1, 3]), "data1": dense(1, &[1, 3]),
               "initial": {"imm": 0.0}, "op0": "add", "op1": "add"}),
        )],
    );
    assert_eq!(f32s(&result.outputs[0]), [2.0, 6.0, 12.0]);
}

#[test]
fn scalar_tensor_tensor_computes_data_op0_operand0_op1_operand1() {
    // (x - 1) · x for x = [1, 2, 3] is [0, 2, 6]; reversed, 1 - x is [0, -1, -2], then times x:
    // [0, -2, -6].
    let body = |reverse0| {
        [ins(
            "scalar_tensor_tensor",
            "vector",
            4,
            json!({
                "dst": dense(2, &[1, 3]), "data": dense(1, &[1, 3]), "op0": "subtract",
                "operand0": {"imm": 1.0}, "op1": "multiply", "operand1": dense(1, &[1, 3]),
                "reverse0": reverse0
            }),
        )]
    };
    let result = run_tile_op(&[1.0, 2.0, 3.0], &[1, 3], "float32", &[1, 3], &[], &body(false));
    assert_eq!(f32s(&result.outputs[0]), [0.0, 2.0, 6.0]);
    let result = run_tile_op(&[1.0, 2.0, 3.0], &[1, 3], "float32", &[1, 3], &[], &body(true));
    assert_eq!(f32s(&result.outputs[0]), [0.0, -2.0, -6.0]);
}

#[test]
fn bn_stats_then_bn_aggr_give_mean_and_variance() {
    // Row [1, 2, 3, 6]: even elements [1, 3] have count 2, mean 2, squared deviations 1 + 1 = 2;
    // odd elements [2, 6] count 2, mean 4, squared deviations 4 + 4 = 8. The whole row has mean
    // 3 and variance (4 + 1 + 0 + 9) / 4 = 3.5.
    let stats = run_tile_op(
        &[1.0, 2.0, 3.0, 6.0],
        &[1, 4],
        "float32",
        &[1, 6],
        &[],
        &[ins(
            "bn_stats",
            "vector",
            4,
            json!({"dst": dense(2, &[1, 6]), "data": dense(1, &[1, 4])}),
        )],
    );
    assert_eq!(f32s(&stats.outputs[0]), [2.0, 2.0, 2.0, 2.0, 4.0, 8.0]);
    let aggregated = run_tile_op(
        &[1.0, 2.0, 3.0, 6.0],
        &[1, 4],
        "float32",
        &[1, 2],
        &[tensor("stats", "float32", &[1, 6], "sbuf")],
        &[
            ins(
                "bn_stats",
                "vector",
                4,
                json!({"dst": dense(4, &[1, 6]), "data": dense(1, &[1, 4])}),
            ),
            ins(
                "bn_aggr",
                "vector",
                5,
                json!({"dst": dense(2, &[1, 2]), "data": dense(4, &[1, 6])}),
            ),
        ],
    );
    assert_eq!(f32s(&aggregated.outputs[0]), [3.0, 3.5]);
}

const ROW: [f32; 10] = [5.0, 1.0, 9.0, 3.0, 7.0, 2.0, 8.0, 6.0, 4.0, 0.0];

#[test]
fn max8_gives_the_eight_largest_in_descending_order() {
    let result = run_tile_op(
        &ROW,
        &[1, 10],
        "float32",
        &[1, 8],
        &[],
        &[ins("max8", "vector", 4, json!({"dst": dense(2, &[1, 8]), "src": dense(1, &[1, 10])}))],
    );
    assert_eq!(f32s(&result.outputs[0]), [9.0, 8.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.0]);
}

#[test]
fn nc_find_index8_finds_first_occurrences_and_marks_missing_values() {
    // In ROW, 9 is at 2, 0 at 9, 5 at 0, 42 nowhere, 1 at 1 (a second 1 nowhere), 6 at 7,
    // 3 at 3. The values come from the input's first 8 elements of a second row.
    let vals = [9.0, 0.0, 5.0, 42.0, 1.0, 1.0, 6.0, 3.0];
    let mut input = ROW.to_vec();
    input.extend(vals);
    input.extend([0.0; 2]);
    let result = run_tile_op(
        &input,
        &[2, 10],
        "uint32",
        &[1, 8],
        &[],
        &[ins(
            "nc_find_index8",
            "vector",
            4,
            json!({"dst": dense(2, &[1, 8]), "data": ap(1, 0, &[[10, 1], [1, 10]]),
               "vals": ap(1, 10, &[[10, 1], [1, 8]])}),
        )],
    );
    let indices: Vec<u32> = result.outputs[0]
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    assert_eq!(indices, [2, 9, 0, u32::MAX, 1, u32::MAX, 7, 3]);
}

#[test]
fn nc_match_replace8_pairs_duplicate_values_from_the_last_slot() {
    // The example of the nc_match_replace8 reference page: data [1, 2, 3, 4, 8 × 7] and vals
    // [3, 8 × 7] give dst_idx [2, 10, 9, 8, 7, 6, 5, 4]; every match becomes -1.
    let mut input = vec![1.0, 2.0, 3.0, 4.0, 8.0, 8.0, 8.0, 8.0, 8.0, 8.0, 8.0];
    input.extend([3.0, 8.0, 8.0, 8.0, 8.0, 8.0, 8.0, 8.0, 0.0, 0.0, 0.0]);
    let result = run_tile_op(
        &input,
        &[2, 11],
        "float32",
        &[1, 11],
        &[tensor("idx", "uint16", &[1, 8], "sbuf"), tensor("idx_out", "uint16", &[1, 8], "hbm")],
        &[
            ins(
                "nc_match_replace8",
                "vector",
                4,
                json!({
                    "dst": dense(2, &[1, 11]), "data": ap(1, 0, &[[11, 1], [1, 11]]),
                    "vals": ap(1, 11, &[[11, 1], [1, 8]]), "imm": -1.0, "dst_idx": dense(4, &[1, 8])
                }),
            ),
            ins("dma", "dma", 5, json!({"dst": dense(5, &[1, 8]), "src": dense(4, &[1, 8])})),
        ],
    );
    assert_eq!(
        f32s(&result.outputs[0]),
        [1.0, 2.0, -1.0, 4.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0]
    );
    let indices: Vec<u16> =
        result.outputs[1].chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
    assert_eq!(indices, [2, 10, 9, 8, 7, 6, 5, 4]);
}

#[test]
fn par_names_the_partition_dimension_of_a_blocked_tile() {
    // [4, par 128, 512] float32: 4 × 512 elements of 4 bytes per partition = 8192 bytes.
    let mut blocked = tensor("blocked", "float32", &[4, 128, 512], "sbuf");
    blocked["par"] = json!(1);
    let document = doc(
        json!([blocked]),
        json!([]),
        json!([]),
        json!([ins("memset", "vector", 3, json!({"dst": dense(0, &[4, 128, 512]), "value": 0.0}))]),
    );
    let program = parse(&document);
    assert_eq!(program.tensors[0].partitions(), 128);
    assert_eq!(program.tensors[0].bytes_per_partition(), 8 << 10);
    let result = run_ok(&document, &[]);
    assert_eq!(result.report.stats.peak_sbuf_bytes_per_partition, 8192);
    // Without `par`, dimension 0 (4) is the partition and 128 × 512 × 4 bytes are per partition.
    let plain = doc(
        json!([tensor("blocked", "float32", &[4, 128, 512], "sbuf")]),
        json!([]),
        json!([]),
        json!([]),
    );
    assert_eq!(parse(&plain).tensors[0].bytes_per_partition(), 128 * 512 * 4);
    // The partition dimension is held to 128 wherever `par` puts it.
    let mut wide = tensor("wide", "float32", &[2, 256], "sbuf");
    wide["par"] = json!(1);
    let document = doc(json!([wide]), json!([]), json!([]), json!([]));
    assert!(matches!(parse_error(&document), ProgramErrorKind::PartitionDim { found: 256, .. }));
    let mut past = tensor("past", "float32", &[2, 4], "sbuf");
    past["par"] = json!(2);
    let document = doc(json!([past]), json!([]), json!([]), json!([]));
    assert!(
        matches!(parse_error(&document), ProgramErrorKind::Invalid(message) if message.contains("`par` 2"))
    );
}

#[test]
fn numbers_may_be_the_strings_inf_minus_inf_and_nan() {
    // memset -inf, then max(x, "inf") and min(x, "nan"): [-inf, -inf] → [inf, inf] → the NaN
    // operand of minimum gives the other operand, inf. A third tile: memset "nan".
    let body = |value: Value, operand: Value| {
        vec![
            ins("memset", "vector", 4, json!({"dst": dense(1, &[1, 2]), "value": value})),
            ins(
                "tensor_scalar",
                "vector",
                5,
                json!({"dst": dense(2, &[1, 2]), "src": dense(1, &[1, 2]), "ops": [
                    {"op": "maximum", "operand": operand},
                    {"op": "minimum", "operand": {"imm": "nan"}},
                ]}),
            ),
            ins("dma", "dma", 6, json!({"dst": dense(3, &[1, 2]), "src": dense(2, &[1, 2])})),
        ]
    };
    let program = |value: Value, operand: Value| {
        doc(
            json!([
                tensor("x", "float32", &[1, 2], "hbm"),
                tensor("a", "float32", &[1, 2], "sbuf"),
                tensor("b", "float32", &[1, 2], "sbuf"),
                tensor("out", "float32", &[1, 2], "hbm"),
            ]),
            json!([0]),
            json!([3]),
            json!(body(value, operand)),
        )
    };
    let input = f32_bytes(&[0.0, 0.0]);
    let result =
        run_ok(&program(json!("-inf"), json!({"imm": "inf"})), std::slice::from_ref(&input));
    assert_eq!(f32s(&result.outputs[0]), [f32::INFINITY, f32::INFINITY]);
    // memset "nan", then max(NaN, -inf) = -inf.
    let result = run_ok(&program(json!("nan"), json!({"imm": "-inf"})), &[input]);
    assert_eq!(f32s(&result.outputs[0]), [f32::NEG_INFINITY, f32::NEG_INFINITY]);
    // Any other string is refused, naming what a number may be.
    match parse_error(&program(json!("infinity"), json!({"imm": 1.0}))) {
        ProgramErrorKind::Field { op, message } => {
            assert_eq!(op, "memset");
            assert!(message.contains(r#"a number, "inf", "-inf" or "nan""#), "{message}");
        }
        other => panic!("expected a field error, got {other:?}"),
    }
}

mod isa;

#[test]
fn whole_operands_walk_strided_and_broadcast_rows() {
    // x = [[1, 2, 3], [4, 5, 6]]. a is xᵀ (strides 1 and 3): [[1, 4], [2, 5], [3, 6]]; b is
    // x's first row broadcast along a stride-0 dimension: [[1, 1], [2, 2], [3, 3]]. a · b =
    // [[1, 4], [4, 10], [9, 18]], exact in bfloat16.
    let result = run_tile_op(
        &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
        &[2, 3],
        "bfloat16",
        &[3, 2],
        &[],
        &[ins(
            "tensor_tensor",
            "vector",
            4,
            json!({"dst": dense(2, &[3, 2]), "a": ap(1, 0, &[[1, 3], [3, 2]]),
                   "b": ap(1, 0, &[[1, 3], [0, 2]]), "alu_op": "multiply"}),
        )],
    );
    let values: Vec<f32> = result.outputs[0]
        .chunks_exact(2)
        .map(|c| f32::from_bits(u32::from(u16::from_le_bytes([c[0], c[1]])) << 16))
        .collect();
    assert_eq!(values, [1.0, 4.0, 4.0, 10.0, 9.0, 18.0]);
}

/// Ten 128 x 512 float32 scratch tiles, one after the other (as a loop that allocates a tile
/// per iteration), each copied from the input and into the output.
fn tile_per_iteration_program() -> Value {
    let mut tensors = vec![
        tensor("x", "float32", &[128, 512], "hbm"),
        tensor("out", "float32", &[128, 512], "hbm"),
    ];
    let mut instructions = Vec::new();
    for k in 0..10usize {
        tensors.push(tensor(&format!("tile{k}"), "float32", &[128, 512], "sbuf"));
        instructions.push(ins(
            "dma",
            "dma",
            3,
            json!({"dst": dense(k + 2, &[128, 512]), "src": dense(0, &[128, 512])}),
        ));
        instructions.push(ins(
            "dma",
            "dma",
            4,
            json!({"dst": dense(1, &[128, 512]), "src": dense(k + 2, &[128, 512])}),
        ));
    }
    doc(json!(tensors), json!([0]), json!([1]), json!(instructions))
}

#[test]
fn only_live_tensors_take_memory() {
    // Each tensor is 256 KiB of elements; the input, the output (with its 8 KiB bitmap) and one
    // live tile (with its bitmap) are 256 + 264 + 264 = 784 KiB: under 800 KiB. All ten tiles
    // at once would be 3.4 MiB.
    let program = parse(&tile_per_iteration_program());
    let input = f32_bytes(&vec![1.5; 128 * 512]);
    let options = RunOptions { max_memory_bytes: 800 * 1024, ..RunOptions::default() };
    let result = run(&program, &[&input], &options).expect("one tile at a time fits");
    assert_eq!(f32s(&result.outputs[0])[..3], [1.5, 1.5, 1.5]);
    let options = RunOptions { max_memory_bytes: 700 * 1024, ..RunOptions::default() };
    let error = run(&program, &[&input], &options).unwrap_err();
    assert!(
        matches!(*error.kind, RunErrorKind::MemoryLimit { needed, .. } if needed == 784 * 1024),
        "{error}"
    );
}

#[test]
fn a_modulo_allocated_tensor_takes_only_its_physical_blocks() {
    // Eight [128, 512] float32 blocks in PSUM take 2 KiB per partition each, 16 KiB in
    // all; allocated onto fewer physical blocks, the tensor takes only those.
    let blocks = |blocks: Option<u64>| {
        let mut t = tensor("acc", "float32", &[8, 128, 512], "psum");
        t["par"] = json!(1);
        if let Some(n) = blocks {
            t["blocks"] = json!(n);
        }
        parse(&doc(
            json!([tensor("x", "float32", &[1], "hbm"), t]),
            json!([0]),
            json!([]),
            json!([ins(
                "memset",
                "vector",
                3,
                json!({"dst": dense(1, &[8, 128, 512]), "value": 0.0})
            )]),
        ))
        .tensors[1]
            .bytes_per_partition()
    };
    assert_eq!(blocks(None), 8 * 512 * 4);
    assert_eq!(blocks(Some(1)), 512 * 4);
    assert_eq!(blocks(Some(2)), 2 * 512 * 4);
}

#[test]
fn tensors_the_kernel_placed_are_not_summed_with_the_others() {
    // Two 12 KiB-per-partition PSUM tiles live at once: 24 KiB, over PSUM's 16 KiB, unless the
    // kernel placed them itself (sharing banks is then its own affair).
    let program = |placed: bool| {
        let mut tensors = vec![tensor("x", "float32", &[1], "hbm")];
        for name in ["p", "q"] {
            let mut t = tensor(name, "float32", &[128, 3072], "psum");
            t["placed"] = json!(placed);
            tensors.push(t);
        }
        doc(
            json!(tensors),
            json!([0]),
            json!([]),
            json!([
                ins("memset", "vector", 3, json!({"dst": dense(1, &[128, 3072]), "value": 0.0})),
                ins("memset", "vector", 4, json!({"dst": dense(2, &[128, 3072]), "value": 0.0})),
                ins(
                    "copy",
                    "vector",
                    5,
                    json!({"dst": dense(1, &[128, 3072]), "src": dense(2, &[128, 3072])})
                ),
            ]),
        )
    };
    let input = f32_bytes(&[0.0]);
    assert!(run_with(&program(true), std::slice::from_ref(&input), false).is_ok());
    let error = run_with(&program(false), &[input], false).unwrap_err();
    assert!(
        matches!(*error.kind, RunErrorKind::Capacity { live, .. } if live == 2 * 3072 * 4),
        "{error}"
    );
}
