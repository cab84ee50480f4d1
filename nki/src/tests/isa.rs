//! The specialised `nki.isa` instructions: the accumulating ones (`reduce_cmd`), gathers and
//! shuffles across partitions, segment bounds and the random ones. Each expected value is
//! worked out by hand from the op's reference page (the comments show how); the random ones
//! from the SplitMix64 values of seed 7, the seed of `doc`, written out in `random.rs`'s test.

use serde_json::{Value, json};

use super::{ap, dense, doc, f32_bytes, f32s, ins, parse_error, run_tile_op, run_with, tensor};
use crate::{ProgramErrorKind, RunErrorKind};

/// A `[rows, 1]` float32 SBUF tile holding `k + c·p` in partition p, written by `iota`.
fn column(t: usize, rows: i64, c: i64, k: i64, line: u64) -> Value {
    ins("iota", "gpsimd", line, json!({"dst": dense(t, &[rows, 1]), "c": [c, 0], "k": k}))
}

/// An SBUF tile and the output it is stored to, as extra tensors of `run_tile_op`.
fn extra(name: &str, dtype: &str, shape: &[u64]) -> [Value; 2] {
    [tensor(name, dtype, shape, "sbuf"), tensor(&format!("{name}_out"), dtype, shape, "hbm")]
}

fn store(dst: usize, src: usize, shape: &[i64], line: u64) -> Value {
    ins("dma", "dma", line, json!({"dst": dense(dst, shape), "src": dense(src, shape)}))
}

#[test]
fn tensor_scalar_cumulative_runs_op1_along_each_partition_and_keeps_the_register() {
    // Rows [1, 2, 3] and [4, 5, 6]. reset_reduce, x·2 then a running add from 0:
    // [2, 6, 12] and [8, 18, 30]. Then `reduce` continues each row's register (12 and 30)
    // with x + 0: [13, 15, 18] and [34, 39, 45].
    let [chain, chain_out] = extra("chain", "float32", &[2, 3]);
    let result = run_tile_op(
        &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
        &[2, 3],
        "float32",
        &[2, 3],
        &[chain, chain_out],
        &[
            ins(
                "tensor_scalar_cumulative",
                "vector",
                4,
                json!({"dst": dense(2, &[2, 3]), "src": dense(1, &[2, 3]), "op0": "multiply",
                       "op1": "add", "imm0": {"imm": 2.0}, "reduce_cmd": "reset_reduce"}),
            ),
            ins(
                "tensor_scalar_cumulative",
                "vector",
                5,
                json!({"dst": dense(4, &[2, 3]), "src": dense(1, &[2, 3]), "op0": "add",
                       "op1": "add", "imm0": {"imm": 0.0}, "reduce_cmd": "reduce"}),
            ),
            store(5, 4, &[2, 3], 6),
        ],
    );
    assert_eq!(f32s(&result.outputs[0]), [2.0, 6.0, 12.0, 8.0, 18.0, 30.0]);
    assert_eq!(f32s(&result.outputs[1]), [13.0, 15.0, 18.0, 34.0, 39.0, 45.0]);
}

#[test]
fn tensor_scalar_cumulative_loads_imm1_and_applies_op1_as_the_page_writes_it() {
    // load_reduce with imm1 = [5, 100] (iota 5 + 95p) and a running minimum: row [1, 2, 3]
    // from 5 is [1, 1, 1]; row [4, 5, 6] from 100 is [4, 4, 4].
    let init = tensor("init", "float32", &[2, 1], "sbuf");
    let result = run_tile_op(
        &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
        &[2, 3],
        "float32",
        &[2, 3],
        std::slice::from_ref(&init),
        &[
            column(4, 2, 95, 5, 4),
            ins(
                "tensor_scalar_cumulative",
                "vector",
                5,
                json!({"dst": dense(2, &[2, 3]), "src": dense(1, &[2, 3]), "op0": "add",
                       "op1": "minimum", "imm0": {"imm": 0.0}, "imm1": dense(4, &[2, 1]),
                       "reduce_cmd": "load_reduce"}),
            ),
        ],
    );
    assert_eq!(f32s(&result.outputs[0]), [1.0, 1.0, 1.0, 4.0, 4.0, 4.0]);
    // The page's register update is op1(op0(x, imm0), register): for subtract, x - register.
    // Row [1, 2, 3] from 0: 1 - 0 = 1, 2 - 1 = 1, 3 - 1 = 2; row [4, 5, 6]: 4, 1, 5.
    let result = run_tile_op(
        &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
        &[2, 3],
        "float32",
        &[2, 3],
        &[],
        &[ins(
            "tensor_scalar_cumulative",
            "vector",
            4,
            json!({"dst": dense(2, &[2, 3]), "src": dense(1, &[2, 3]), "op0": "add",
                   "op1": "subtract", "imm0": {"imm": 0.0}, "reduce_cmd": "reset_reduce"}),
        )],
    );
    assert_eq!(f32s(&result.outputs[0]), [1.0, 1.0, 2.0, 4.0, 1.0, 5.0]);
}

/// A program whose second instruction continues (`reduce`) an accumulator: after `first`, on
/// `engine`.
fn continued(first: Option<Value>, engine: &str) -> Value {
    let mut body: Vec<Value> = first.into_iter().collect();
    body.push(ins(
        "tensor_scalar_reduce",
        engine,
        6,
        json!({"dst": dense(2, &[2, 2]), "data": dense(1, &[2, 2]), "op0": "add",
               "operand0": {"imm": 0.0}, "reduce_op": "add", "reduce_cmd": "reduce"}),
    ));
    super::tile_program(&[], &body, &[2, 2])
}

#[test]
fn reduce_of_an_accumulator_nothing_set_is_an_error() {
    let input = f32_bytes(&[1.0, 2.0, 3.0, 4.0]);
    let error =
        run_with(&continued(None, "vector"), std::slice::from_ref(&input), false).unwrap_err();
    assert!(
        matches!(*error.kind, RunErrorKind::Accumulator { engine: "vector", partition: 0 }),
        "{error}"
    );
    assert_eq!(error.loc.unwrap().to_string(), "kernel.py:6");
    // A reset on the vector engine sets its accumulator, and `reduce` then continues it...
    let reset = ins(
        "select_reduce",
        "vector",
        4,
        json!({"dst": dense(2, &[2, 2]), "predicate": {"imm": 1.0}, "on_true": dense(1, &[2, 2]),
               "on_false": {"imm": 0.0}, "reduce_cmd": "reset"}),
    );
    assert!(
        run_with(&continued(Some(reset.clone()), "vector"), std::slice::from_ref(&input), false)
            .is_ok()
    );
    // ... but not the gpsimd engine's: each engine has its own.
    let error = run_with(&continued(Some(reset), "gpsimd"), std::slice::from_ref(&input), false)
        .unwrap_err();
    assert!(matches!(*error.kind, RunErrorKind::Accumulator { engine: "gpsimd", .. }), "{error}");
    // An `idle` accumulating instruction leaves the accumulator undefined.
    let idle = ins(
        "select_reduce",
        "vector",
        4,
        json!({"dst": dense(2, &[2, 2]), "predicate": {"imm": 1.0}, "on_true": dense(1, &[2, 2]),
               "on_false": {"imm": 0.0}, "reduce_cmd": "idle"}),
    );
    let error = run_with(&continued(Some(idle), "vector"), &[input], false).unwrap_err();
    assert!(matches!(*error.kind, RunErrorKind::Accumulator { .. }), "{error}");
}

#[test]
fn tensor_scalar_reduce_folds_unmasked_results_across_instructions() {
    // First, x·2 of rows [1, 2, 3] and [4, 5, 6] under the mask i1 < 2: dst [2, 4, -, 8, 10, -]
    // (the third column keeps the memset 0) and the accumulator's sums 6 and 18. Then x + 0
    // with `reduce` adds each whole row: 6 + 6 = 12 and 18 + 15 = 33, written negated.
    let [z, z_out] = extra("z", "float32", &[2, 3]);
    let [r, r_out] = extra("r", "float32", &[2, 1]);
    let result = run_tile_op(
        &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
        &[2, 3],
        "float32",
        &[2, 3],
        &[z, z_out, r, r_out],
        &[
            ins("memset", "vector", 4, json!({"dst": dense(2, &[2, 3]), "value": 0.0})),
            ins(
                "tensor_scalar_reduce",
                "vector",
                5,
                json!({"dst": dense(2, &[2, 3]), "data": dense(1, &[2, 3]), "op0": "multiply",
                       "operand0": {"imm": 2.0}, "reverse0": false, "reduce_op": "add",
                       "mask": [{"c": [0, 1], "k": -2, "cmp": "lt"}]}),
            ),
            ins(
                "tensor_scalar_reduce",
                "vector",
                6,
                json!({"dst": dense(4, &[2, 3]), "data": dense(1, &[2, 3]), "op0": "add",
                       "operand0": {"imm": 0.0}, "reduce_op": "add", "reduce_cmd": "reduce",
                       "reduce_res": dense(6, &[2, 1]), "reduce_res_negate": true}),
            ),
            store(5, 4, &[2, 3], 7),
            store(7, 6, &[2, 1], 8),
        ],
    );
    assert_eq!(f32s(&result.outputs[0]), [2.0, 4.0, 0.0, 8.0, 10.0, 0.0]);
    assert_eq!(f32s(&result.outputs[1]), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    assert_eq!(f32s(&result.outputs[2]), [-12.0, -33.0]);
}

#[test]
fn select_reduce_selects_by_the_predicate_and_keeps_the_row_maximum() {
    // predicate = iota i1 - 1 over [2, 3]: [-1, 0, 1] in each row, nonzero in columns 0 and 2.
    // on_true = [1, 2, 3, 4, 5, 6], on_false -7: dst [1, -7, 3, 4, -7, 6], maxima 3 and 6.
    // With reverse_pred: [-7, 2, -7, -7, 5, -7], maxima 2 and 5.
    for (reverse, dst, maxima) in [
        (false, [1.0, -7.0, 3.0, 4.0, -7.0, 6.0], [3.0, 6.0]),
        (true, [-7.0, 2.0, -7.0, -7.0, 5.0, -7.0], [2.0, 5.0]),
    ] {
        let [r, r_out] = extra("r", "float32", &[2, 1]);
        let predicate = tensor("predicate", "int16", &[2, 3], "sbuf");
        let result = run_tile_op(
            &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
            &[2, 3],
            "float32",
            &[2, 3],
            &[r, r_out, predicate],
            &[
                ins("iota", "gpsimd", 4, json!({"dst": dense(6, &[2, 3]), "c": [0, 1], "k": -1})),
                ins(
                    "select_reduce",
                    "vector",
                    5,
                    json!({"dst": dense(2, &[2, 3]), "predicate": dense(6, &[2, 3]),
                           "on_true": dense(1, &[2, 3]), "on_false": {"imm": -7.0},
                           "reduce_cmd": "reset_reduce", "reduce_op": "maximum",
                           "reverse_pred": reverse, "reduce_res": dense(4, &[2, 1])}),
                ),
                store(5, 4, &[2, 1], 6),
            ],
        );
        assert_eq!(f32s(&result.outputs[0]), dst, "reverse_pred {reverse}");
        assert_eq!(f32s(&result.outputs[1]), maxima, "reverse_pred {reverse}");
    }
}

#[test]
fn range_select_compares_the_free_index_with_per_partition_bounds() {
    // Rows [1, 2, 3, 4] and [5, 6, 7, 8]; bound0 1 (greater_equal), bound1 = [3, 4] (iota
    // 3 + p; less). From range_start 0, row 0 keeps indices 1 and 2, row 1 indices 1 to 3:
    // [m, 2, 3, m, m, 6, 7, 8] with m = fp32.min, maxima 3 and 8. Then from range_start 2 with
    // on_false_value -inf, row 0 keeps index 2 + 0 only, row 1 2 + 0 and 2 + 1:
    // [1, -inf, -inf, -inf, 5, 6, -inf, -inf]; `reduce` keeps the maxima, 3 and 8.
    let m = f32::MIN;
    let n = f32::NEG_INFINITY;
    let [second, second_out] = extra("second", "float32", &[2, 4]);
    let [r, r_out] = extra("r", "float32", &[2, 1]);
    let bounds = tensor("bounds", "float32", &[2, 1], "sbuf");
    let select = |line, dst, start: Value, extra: Value| {
        let mut fields = json!({"dst": dense(dst, &[2, 4]), "on_true_tile": dense(1, &[2, 4]),
               "comp_op0": "greater_equal", "comp_op1": "less", "bound0": {"imm": 1.0},
               "bound1": dense(8, &[2, 1]), "reduce_op": "maximum", "range_start": start});
        for (key, value) in extra.as_object().unwrap() {
            fields[key] = value.clone();
        }
        ins("range_select", "vector", line, fields)
    };
    let result = run_tile_op(
        &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0],
        &[2, 4],
        "float32",
        &[2, 4],
        &[second, second_out, r, r_out, bounds],
        &[
            column(8, 2, 1, 3, 4),
            select(5, 2, json!(0), json!({"reduce_cmd": "reset_reduce"})),
            select(
                6,
                4,
                json!(2.0),
                json!({"reduce_cmd": "reduce", "on_false_value": "-inf",
                       "reduce_res": dense(6, &[2, 1])}),
            ),
            store(5, 4, &[2, 4], 7),
            store(7, 6, &[2, 1], 8),
        ],
    );
    assert_eq!(f32s(&result.outputs[0]), [m, 2.0, 3.0, m, m, 6.0, 7.0, 8.0]);
    assert_eq!(f32s(&result.outputs[1]), [1.0, n, n, n, 5.0, 6.0, n, n]);
    assert_eq!(f32s(&result.outputs[2]), [3.0, 8.0]);
}

#[test]
fn accumulating_ops_refuse_what_their_pages_refuse() {
    let program = |op: &str, fields: Value| {
        super::tile_program(&[], &[ins(op, "vector", 4, fields)], &[2, 2])
    };
    // range_select folds with maximum only.
    let document = program(
        "range_select",
        json!({"dst": dense(2, &[2, 2]), "on_true_tile": dense(1, &[2, 2]),
               "comp_op0": "greater_equal", "comp_op1": "less", "bound0": {"imm": 0.0},
               "bound1": {"imm": 1.0}, "reduce_op": "add"}),
    );
    assert!(
        matches!(parse_error(&document), ProgramErrorKind::Invalid(m) if m.contains("`reduce_op` is `add`, expected maximum")),
    );
    // A reduce_res under `idle` has nothing to be written from.
    let document = program(
        "select_reduce",
        json!({"dst": dense(2, &[2, 2]), "predicate": {"imm": 1.0}, "on_true": dense(1, &[2, 2]),
               "on_false": {"imm": 0.0}, "reduce_res": ap(2, 0, &[[2, 2], [1, 1]])}),
    );
    assert!(matches!(parse_error(&document), ProgramErrorKind::Invalid(m) if m.contains("`idle`")));
    // load_reduce without its initial value.
    let document = program(
        "tensor_scalar_cumulative",
        json!({"dst": dense(2, &[2, 2]), "src": dense(1, &[2, 2]), "op0": "add", "op1": "add",
               "imm0": {"imm": 0.0}, "reduce_cmd": "load_reduce"}),
    );
    assert!(matches!(parse_error(&document), ProgramErrorKind::Invalid(m) if m.contains("`imm1`")));
}

#[test]
fn local_gather_reads_each_core_s_indices_partition_first() {
    // src_buffer [16, 4] holds 4p + j. index [16, 1] = 3 - p (iota; uint16 saturates the
    // negative ones to 0); with 3 valid indices a core's indices are partitions 0, 1 and 2's:
    // 3, 2, 1. So dst[p] = [4p + 3, 4p + 2, 4p + 1].
    let input: Vec<f32> = (0..64).map(|v| v as f32).collect();
    let index = tensor("index", "uint16", &[16, 1], "sbuf");
    let gather = |per: u64, valid: u64, dst_free: i64| {
        ins(
            "local_gather",
            "gpsimd",
            5,
            json!({"dst": dense(2, &[16, dst_free]), "src_buffer": dense(1, &[16, 4]),
                   "index": dense(4, &[16, 1]), "num_elem_per_idx": per,
                   "num_valid_indices": valid}),
        )
    };
    let result = run_tile_op(
        &input,
        &[16, 4],
        "float32",
        &[16, 3],
        std::slice::from_ref(&index),
        &[column(4, 16, -1, 3, 4), gather(1, 3, 3)],
    );
    let expected: Vec<f32> =
        (0..16).flat_map(|p| [4 * p + 3, 4 * p + 2, 4 * p + 1]).map(|v| v as f32).collect();
    assert_eq!(f32s(&result.outputs[0]), expected);
    // Two elements per index: the index is an element offset. index = 2 - 2p: 2, 0, ...; two
    // valid indices give dst[p] = [src[p, 2], src[p, 3], src[p, 0], src[p, 1]].
    let result = run_tile_op(
        &input,
        &[16, 4],
        "float32",
        &[16, 4],
        std::slice::from_ref(&index),
        &[column(4, 16, -2, 2, 4), gather(2, 2, 4)],
    );
    let expected: Vec<f32> =
        (0..16).flat_map(|p| [4 * p + 2, 4 * p + 3, 4 * p, 4 * p + 1]).map(|v| v as f32).collect();
    assert_eq!(f32s(&result.outputs[0]), expected);
    // dst must hold num_valid_indices × num_elem_per_idx elements per partition.
    let document = doc(
        json!([
            tensor("src", "float32", &[16, 4], "hbm"),
            tensor("src_tile", "float32", &[16, 4], "sbuf"),
            tensor("dst", "float32", &[16, 3], "sbuf"),
            tensor("unused", "float32", &[1], "hbm"),
            tensor("index", "uint16", &[16, 1], "sbuf"),
        ]),
        json!([]),
        json!([]),
        json!([gather(2, 2, 3)]),
    );
    assert!(
        matches!(parse_error(&document), ProgramErrorKind::ShapeMismatch { operand, expected, .. }
            if operand == "dst" && expected.contains("2 × 2 = 4 elements per partition")),
    );
}

#[test]
fn nc_stream_shuffle_moves_partitions_within_each_quadrant() {
    // x [32, 2] holds [2p, 2p + 1]. In place, shuffle_mask[i] = i - 1 (31 for i = 0) but 255 at
    // 5: partition i takes i - 1's row, partition 5 keeps [10, 11]. Every row is read before
    // any is written, so partition 1 gets row 0's old values.
    let input: Vec<f32> = (0..64).map(|v| v as f32).collect();
    let mut mask: Vec<i64> = (0..32).map(|i: i64| (i - 1).rem_euclid(32)).collect();
    mask[5] = 255;
    let result = run_tile_op(
        &input,
        &[32, 2],
        "float32",
        &[32, 2],
        &[],
        &[
            ins(
                "nc_stream_shuffle",
                "vector",
                4,
                json!({"dst": dense(1, &[32, 2]), "src": dense(1, &[32, 2]), "shuffle_mask": mask}),
            ),
            ins("copy", "vector", 5, json!({"dst": dense(2, &[32, 2]), "src": dense(1, &[32, 2])})),
        ],
    );
    let expected: Vec<f32> = (0..32i64)
        .flat_map(|i| {
            let from = if i == 5 { 5 } else { (i - 1).rem_euclid(32) };
            [2 * from, 2 * from + 1]
        })
        .map(|v| v as f32)
        .collect();
    assert_eq!(f32s(&result.outputs[0]), expected);
    // One source partition broadcast to 32 with an all-zero mask.
    let result = run_tile_op(
        &input,
        &[32, 2],
        "float32",
        &[32, 2],
        &[],
        &[ins(
            "nc_stream_shuffle",
            "vector",
            4,
            json!({"dst": dense(2, &[32, 2]), "src": ap(1, 6, &[[2, 1], [1, 2]]),
                   "shuffle_mask": vec![0; 32]}),
        )],
    );
    assert_eq!(f32s(&result.outputs[0]), [6.0, 7.0].repeat(32));
    // An entry naming a partition src does not have is refused.
    let document = super::tile_program(
        &[],
        &[ins(
            "nc_stream_shuffle",
            "vector",
            4,
            json!({"dst": dense(2, &[2, 2]), "src": ap(1, 0, &[[2, 1], [1, 2]]),
                   "shuffle_mask": vec![1; 32]}),
        )],
        &[2, 2],
    );
    assert!(
        matches!(parse_error(&document), ProgramErrorKind::Invalid(m) if m.contains("`shuffle_mask[0]` is 1")),
    );
}

#[test]
fn sequence_bounds_gives_each_segment_s_start_and_end() {
    // The reference page's example: ids [0, 1, 1, 2, 2, 2, 0, 3, 3] give starts
    // [9, 1, 1, 3, 3, 3, 9, 7, 7] and ends [-1, 3, 3, 6, 6, 6, -1, 9, 9] (padding: n and -1).
    let result = run_tile_op(
        &[0.0, 1.0, 1.0, 2.0, 2.0, 2.0, 0.0, 3.0, 3.0],
        &[1, 9],
        "float32",
        &[1, 2, 9],
        &[],
        &[ins(
            "sequence_bounds",
            "gpsimd",
            4,
            json!({"dst": dense(2, &[1, 2, 9]), "segment_ids": dense(1, &[1, 9])}),
        )],
    );
    assert_eq!(
        f32s(&result.outputs[0]),
        [
            9.0, 1.0, 1.0, 3.0, 3.0, 3.0, 9.0, 7.0, 7.0, -1.0, 3.0, 3.0, 6.0, 6.0, 6.0, -1.0, 9.0,
            9.0
        ]
    );
    // A negative id is refused.
    let document = super::tile_program(
        &[tensor("bounds", "float32", &[1, 2, 2], "sbuf")],
        &[
            ins("memset", "vector", 4, json!({"dst": dense(1, &[2, 2]), "value": -1.0})),
            ins(
                "sequence_bounds",
                "gpsimd",
                5,
                json!({"dst": dense(4, &[1, 2, 2]), "segment_ids": ap(1, 0, &[[2, 1], [1, 2]])}),
            ),
        ],
        &[2, 2],
    );
    let error = run_with(&document, &[f32_bytes(&[0.0; 4])], false).unwrap_err();
    assert!(
        matches!(&*error.kind, RunErrorKind::InvalidValue { message, .. } if message.contains("element 0 is -1")),
        "{error}"
    );
}

#[test]
fn random_ops_draw_from_splitmix64_seeded_by_the_program() {
    // Seed 7's first four values are 0x63cbe1e459320dd7, 0x044c3cd7f43c661c,
    // 0xe6984080bab12a02 and 0x953aeb70673e29cb; their top 24 bits over 2^24 are about 0.390,
    // 0.017, 0.901 and 0.583. Dropout with probability 0.5 drops the first two elements.
    let dropout = |prob: Value| {
        run_tile_op(
            &[1.0, 2.0, 3.0, 4.0],
            &[1, 4],
            "float32",
            &[1, 4],
            &[],
            &[ins(
                "dropout",
                "vector",
                4,
                json!({"dst": dense(2, &[1, 4]), "data": dense(1, &[1, 4]), "prob": prob}),
            )],
        )
    };
    assert_eq!(f32s(&dropout(json!({"imm": 0.5})).outputs[0]), [0.0, 0.0, 3.0, 4.0]);
    assert_eq!(f32s(&dropout(json!({"imm": 0.0})).outputs[0]), [1.0, 2.0, 3.0, 4.0]);
    assert_eq!(f32s(&dropout(json!({"imm": 1.0})).outputs[0]), [0.0; 4]);
    // rng keeps the low bits of each value's high 32 bits: 0x63cbe1e4 and 0x044c3cd7 as
    // uint16 are 0xe1e4 and 0x3cd7.
    let rng = run_tile_op(
        &[0.0, 0.0],
        &[1, 2],
        "uint16",
        &[1, 2],
        &[],
        &[ins("rng", "vector", 4, json!({"dst": dense(2, &[1, 2])}))],
    );
    assert_eq!(rng.outputs[0], [0xe4, 0xe1, 0xd7, 0x3c]);
    // rand2 over [0, 1) gives the unit values themselves: 0x63cbe1 / 2^24 and 0x044c3c / 2^24.
    let rand2 = run_tile_op(
        &[0.0, 0.0],
        &[1, 2],
        "float32",
        &[1, 2],
        &[],
        &[ins(
            "rand2",
            "vector",
            4,
            json!({"dst": dense(2, &[1, 2]), "min": {"imm": 0.0}, "max": {"imm": 1.0}}),
        )],
    );
    assert_eq!(f32s(&rand2.outputs[0]), [6_540_257.0 / 16_777_216.0, 281_660.0 / 16_777_216.0]);
    // The same program gives the same bits; min >= max is refused.
    assert_eq!(dropout(json!({"imm": 0.5})).outputs, dropout(json!({"imm": 0.5})).outputs);
    let document = super::tile_program(
        &[],
        &[ins(
            "rand2",
            "vector",
            4,
            json!({"dst": dense(2, &[2, 2]), "min": {"imm": 1.0}, "max": {"imm": 1.0}}),
        )],
        &[2, 2],
    );
    assert!(
        matches!(parse_error(&document), ProgramErrorKind::Invalid(m) if m.contains("min < max"))
    );
}

#[test]
fn exponential_subtracts_max_value_and_sums_into_the_accumulator() {
    // Rows [0, 1] and [2, 3], max_value [0, 2] (iota 2p): dst [1, e, 1, e]; load_reduce from
    // 10 sums each row to 11 + e.
    let [r, r_out] = extra("r", "float32", &[2, 1]);
    let max_value = tensor("max_value", "float32", &[2, 1], "sbuf");
    let result = run_tile_op(
        &[0.0, 1.0, 2.0, 3.0],
        &[2, 2],
        "float32",
        &[2, 2],
        &[r, r_out, max_value],
        &[
            column(6, 2, 2, 0, 4),
            ins(
                "exponential",
                "vector",
                5,
                json!({"dst": dense(2, &[2, 2]), "src": dense(1, &[2, 2]),
                       "max_value": dense(6, &[2, 1]), "reduce_res": dense(4, &[2, 1]),
                       "reduce_cmd": "load_reduce", "reduce_init": {"imm": 10.0}}),
            ),
            store(5, 4, &[2, 1], 6),
        ],
    );
    let e = std::f32::consts::E;
    let close = |found: Vec<f32>, expected: &[f32]| {
        assert!(
            found.iter().zip(expected).all(|(f, x)| (f - x).abs() <= 1e-6 * x.abs()),
            "{found:?} against {expected:?}"
        );
    };
    close(f32s(&result.outputs[0]), &[1.0, e, 1.0, e]);
    close(f32s(&result.outputs[1]), &[11.0 + e, 11.0 + e]);
}
