//! nkipy's attention module (`tests/nkipy/`, see its README) runs, with results of the right
//! shapes, finite, and a softmax whose rows are probabilities.
//!
//! XLA's answer is not compared here: the cross-check machinery runs jax functions it exports
//! itself, not captured HLO text. What is checked instead holds whatever the weights: the second
//! result is `softmax(q·kᵀ/8 + mask)` over the last dimension (`op85`…`op103`), so each of its
//! 32·7 rows of 16 lies in [0, 1] and sums to 1.

use hlo::eval::{Array, EvalOptions, Value, evaluate};
use hlo::proto::PrimitiveType;

const ATTENTION: &str = include_str!("nkipy/attention_dynamo.hlo");

/// Deterministic values in [-scale, scale): a linear congruential sequence, reproducible
/// without a random number crate.
fn values(n: usize, seed: u64, scale: f32) -> Vec<f32> {
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((state >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale
        })
        .collect()
}

fn f32s(value: &Value) -> (Vec<i64>, Vec<f32>) {
    let Value::Array(a) = value else { panic!("expected an array") };
    assert_eq!(a.ty, PrimitiveType::F32);
    let data = a.bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    (a.dims.clone(), data.collect())
}

#[test]
fn nkipys_attention_module_runs_and_its_softmax_rows_are_probabilities() {
    let module = hlo::text::parse_module(ATTENTION).expect("the module parses");
    let f32_input = |dims: &[i64], seed: u64, scale: f32| {
        let n = dims.iter().product::<i64>() as usize;
        Array::from_f32(dims, &values(n, seed, scale))
    };
    // The parameters in order; positions (parameter 6) are cache slots 0..6.
    let positions: Vec<u8> = (0..7i32).flat_map(|p| (p % 6).to_le_bytes()).collect();
    let inputs = vec![
        f32_input(&[1, 7, 2048], 0, 1.0),
        f32_input(&[2048, 2048], 1, 0.02),
        f32_input(&[512, 2048], 2, 0.02),
        f32_input(&[512, 2048], 3, 0.02),
        f32_input(&[1, 7, 64], 4, 1.0),
        f32_input(&[1, 7, 64], 5, 1.0),
        Array::new(PrimitiveType::S32, vec![7], positions).expect("positions"),
        f32_input(&[1, 8, 16, 64], 7, 1.0),
        f32_input(&[1, 8, 16, 64], 8, 1.0),
        f32_input(&[1, 1, 7, 16], 9, 1.0),
        f32_input(&[2048, 2048], 10, 0.02),
    ];
    let out = evaluate(&module, &inputs, &EvalOptions::default()).expect("the module runs");
    let Value::Tuple(items) = out else { panic!("expected a tuple") };
    assert_eq!(items.len(), 2);
    let (dims, attended) = f32s(&items[0]);
    assert_eq!(dims, [1, 7, 2048]);
    assert!(attended.iter().all(|v| v.is_finite()), "the attention output is finite");
    assert!(attended.iter().any(|&v| v != 0.0), "the attention output is not all zero");
    let (dims, probabilities) = f32s(&items[1]);
    assert_eq!(dims, [1, 32, 7, 16]);
    for (row, p) in probabilities.chunks_exact(16).enumerate() {
        assert!(p.iter().all(|&v| (0.0..=1.0).contains(&v)), "row {row}: {p:?}");
        let sum: f32 = p.iter().sum();
        assert!((sum - 1.0).abs() < 1e-5, "row {row} sums to {sum}");
    }
}
