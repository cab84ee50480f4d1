//! `batch-norm-inference` and `batch-norm-training`: XLA's normalisation over every dimension but
//! `feature_index`. torch-xla lowers `BatchNorm` in eval mode to the first and `LayerNorm` to the
//! second (over a reshaped operand); XLA's CPU backend expands both into elementwise arithmetic
//! and reductions before it runs them (its batch-norm expander), and this family computes what
//! that expansion does, per feature `c` over the `n` elements of that feature:
//!
//! - training: `mean = Σx / n`, `var = Σx² / n − mean²`, and
//!   `(x − mean) · rsqrt(var + ε) · scale + offset`, with the tuple `(result, mean, var)`;
//! - inference: `s = scale · rsqrt(var + ε)`, `x · s + (offset − mean · s)`.
//!
//! Floating types only (f16, bf16, f32, f64). The arithmetic is in f32 (f64 for f64) with the
//! sums accumulated in f64, so a mean or variance is the exactly rounded value of the sum rather
//! than whichever order XLA's reduction takes; the result is rounded to the operand's type once.

use std::sync::Arc;

use super::elementwise::convert;
use super::error::Fail;
use super::op_context::{OpContext, invalid, to_usize};
use super::plan::Op;
use super::shape::{ArrayShape, Shape};
use super::tensor::{Data, Tensor};
use crate::dtype::ElementType;

/// Shape checks and attributes of the two opcodes.
pub(crate) fn compile_batch_norm(cx: &OpContext<'_>) -> Result<Op, Fail> {
    let (ins, operands) = (cx.ins, cx.operands);
    let training = match ins.opcode.as_str() {
        "batch-norm-training" => true,
        "batch-norm-inference" => false,
        other => return Err(Fail::Internal(format!("opcode {other} is not batch_norm's"))),
    };
    cx.arity(operands, if training { 3 } else { 5 })?;
    let x = operands[0].array()?;
    if !matches!(x.ty, ElementType::F16 | ElementType::Bf16 | ElementType::F32 | ElementType::F64) {
        return Err(invalid(format!(
            "{} of {}, expected a floating-point operand",
            ins.opcode,
            operands[0].describe()
        )));
    }
    let feature = to_usize(ins.feature_index, "feature_index")?;
    let Some(&channels) = x.dims.get(feature) else {
        return Err(invalid(format!(
            "feature_index {feature} is not a dimension of {}",
            operands[0].describe()
        )));
    };
    let per_feature = Shape::Array(ArrayShape { ty: x.ty, dims: vec![channels], layout: None });
    for (k, operand) in operands.iter().enumerate().skip(1) {
        if operand.array()?.dims != [channels] || operand.array()?.ty != x.ty {
            return Err(invalid(format!(
                "operand {k} is {}, expected {} (one value per feature)",
                operand.describe(),
                per_feature.describe()
            )));
        }
    }
    let result = Shape::Array(ArrayShape { ty: x.ty, dims: x.dims.clone(), layout: None });
    let inferred = if training {
        Shape::Tuple(vec![result, per_feature.clone(), per_feature])
    } else {
        result
    };
    cx.expect(cx.shape, &inferred)?;
    if !ins.epsilon.is_finite() || ins.epsilon < 0.0 {
        return Err(invalid(format!(
            "epsilon {}, expected a finite value of 0 or more",
            ins.epsilon
        )));
    }
    Ok(Op::BatchNorm { feature, epsilon: ins.epsilon, training })
}

/// The operand's elements widened to f64 (exact for every floating type here).
fn widened(t: &Tensor) -> Result<Vec<f64>, Fail> {
    match convert(&t.data, ElementType::F64)? {
        Data::F64(values) => Ok(values),
        _ => Err(Fail::Internal("a conversion to f64 made another type".into())),
    }
}

/// Rounds to f32 unless the type is f64, as the arithmetic of the expansion does.
fn at_precision(value: f64, ty: ElementType) -> f64 {
    if ty == ElementType::F64 { value } else { f64::from(value as f32) }
}

/// `values` (at the arithmetic's precision) as data of `ty`, rounded once.
fn narrowed(values: Vec<f64>, ty: ElementType) -> Result<Data, Fail> {
    convert(&Data::F64(values), ty)
}

/// For each element, its feature: `(i / inner) % channels`.
fn feature_of(dims: &[usize], feature: usize) -> (usize, usize) {
    let inner: usize = dims[feature + 1..].iter().product();
    (inner.max(1), dims[feature])
}

/// `batch-norm-inference(x, scale, offset, mean, variance)`.
pub(crate) fn inference(
    operands: &[&Arc<Tensor>],
    feature: usize,
    epsilon: f32,
) -> Result<Data, Fail> {
    let x = operands[0];
    let ty = x.ty();
    let [scale, offset, mean, var] = [1, 2, 3, 4].map(|k| widened(operands[k]));
    let (scale, offset, mean, var) = (scale?, offset?, mean?, var?);
    let p = |v: f64| at_precision(v, ty);
    let eps = f64::from(epsilon);
    let true_scale: Vec<f64> =
        (0..scale.len()).map(|c| p(scale[c] * p(1.0 / p(p(var[c] + eps).sqrt())))).collect();
    let true_shift: Vec<f64> =
        (0..scale.len()).map(|c| p(offset[c] - p(mean[c] * true_scale[c]))).collect();
    let (inner, channels) = feature_of(&x.dims, feature);
    let values = widened(x)?;
    let out = values
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let c = (i / inner) % channels;
            p(p(v * true_scale[c]) + true_shift[c])
        })
        .collect();
    narrowed(out, ty)
}

/// `batch-norm-training(x, scale, offset)`: the normalised operand, the means and the variances.
pub(crate) fn training(
    operands: &[&Arc<Tensor>],
    feature: usize,
    epsilon: f32,
) -> Result<Vec<Data>, Fail> {
    let x = operands[0];
    let ty = x.ty();
    let (scale, offset) = (widened(operands[1])?, widened(operands[2])?);
    let p = |v: f64| at_precision(v, ty);
    let (inner, channels) = feature_of(&x.dims, feature);
    let values = widened(x)?;
    let mut sums = vec![0.0f64; channels];
    let mut squares = vec![0.0f64; channels];
    for (i, &v) in values.iter().enumerate() {
        let c = (i / inner) % channels;
        sums[c] += v;
        squares[c] += v * v;
    }
    let n = (values.len() / channels.max(1)).max(1) as f64;
    let mean: Vec<f64> = sums.iter().map(|s| p(s / n)).collect();
    let var: Vec<f64> = squares.iter().zip(&mean).map(|(q, m)| p(p(q / n) - p(m * m))).collect();
    let eps = f64::from(epsilon);
    let inv: Vec<f64> = var.iter().map(|v| p(1.0 / p(p(v + eps).sqrt()))).collect();
    let out = values
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let c = (i / inner) % channels;
            p(p(p(p(v - mean[c]) * inv[c]) * scale[c]) + offset[c])
        })
        .collect();
    Ok(vec![narrowed(out, ty)?, narrowed(mean, ty)?, narrowed(var, ty)?])
}

#[cfg(test)]
mod tests {
    use crate::eval::{Array, EvalOptions, Program, Value};
    use crate::proto::PrimitiveType;

    fn f32s(bytes: &[u8]) -> Vec<f32> {
        bytes.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
    }

    fn array(dims: &[i64], values: &[f32]) -> Array {
        Array {
            ty: PrimitiveType::F32,
            dims: dims.to_vec(),
            bytes: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        }
    }

    fn run(text: &str, args: &[Array]) -> Value {
        let module = crate::load_module(text.as_bytes()).unwrap();
        Program::compile(&module, &EvalOptions::default()).unwrap().run(args).unwrap()
    }

    /// Feature 1 of x[2,2]: channel 0 holds 1 and 3, channel 1 holds 2 and 6. By hand:
    /// means 2 and 4, variances (1+9)/2−4 = 1 and (4+36)/2−16 = 4, so with ε = 0 the
    /// normalised values are ∓1 each; scale 2 and 1, offset 0 and 10.
    #[test]
    fn training_normalises_each_feature_and_returns_its_mean_and_variance() {
        let text = "HloModule m\n\nENTRY e {\n  x = f32[2,2] parameter(0)\n  s = f32[2] parameter(1)\n  o = f32[2] parameter(2)\n  ROOT b = (f32[2,2], f32[2], f32[2]) batch-norm-training(x, s, o), epsilon=0, feature_index=1\n}\n";
        let out = run(
            text,
            &[
                array(&[2, 2], &[1.0, 2.0, 3.0, 6.0]),
                array(&[2], &[2.0, 1.0]),
                array(&[2], &[0.0, 10.0]),
            ],
        );
        let Value::Tuple(parts) = out else { panic!("a tuple") };
        let arrays: Vec<Vec<f32>> = parts
            .iter()
            .map(|p| match p {
                Value::Array(a) => f32s(&a.bytes),
                Value::Tuple(_) => panic!("an array"),
            })
            .collect();
        assert_eq!(arrays[0], [-2.0, 9.0, 2.0, 11.0]);
        assert_eq!(arrays[1], [2.0, 4.0]);
        assert_eq!(arrays[2], [1.0, 4.0]);
    }

    /// Feature 0 of x[2,3]: s = scale / sqrt(var + ε) = 2 / sqrt(4) = 1 for channel 0 and
    /// 3 / sqrt(9) = 1 for channel 1 (ε = 0), shift = offset − mean · s.
    #[test]
    fn inference_applies_the_given_statistics() {
        let text = "HloModule m\n\nENTRY e {\n  x = f32[2,3] parameter(0)\n  s = f32[2] parameter(1)\n  o = f32[2] parameter(2)\n  m = f32[2] parameter(3)\n  v = f32[2] parameter(4)\n  ROOT b = f32[2,3] batch-norm-inference(x, s, o, m, v), epsilon=0, feature_index=0\n}\n";
        let out = run(
            text,
            &[
                array(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]),
                array(&[2], &[2.0, 3.0]),
                array(&[2], &[0.5, -1.0]),
                array(&[2], &[1.0, 5.0]),
                array(&[2], &[4.0, 9.0]),
            ],
        );
        let Value::Array(a) = out else { panic!("an array") };
        assert_eq!(f32s(&a.bytes), [0.5, 1.5, 2.5, -2.0, -1.0, 0.0]);
    }

    #[test]
    fn an_integer_operand_and_a_feature_past_the_rank_are_refused() {
        let refused = |text: &str| {
            let module = crate::load_module(text.as_bytes()).unwrap();
            Program::compile(&module, &EvalOptions::default()).unwrap_err().to_string()
        };
        let ints = "HloModule m\n\nENTRY e {\n  x = s32[2,2] parameter(0)\n  s = s32[2] parameter(1)\n  ROOT b = (s32[2,2], s32[2], s32[2]) batch-norm-training(x, s, s), epsilon=0, feature_index=1\n}\n";
        assert!(refused(ints).contains("expected a floating-point operand"), "{}", refused(ints));
        let rank = "HloModule m\n\nENTRY e {\n  x = f32[2,2] parameter(0)\n  s = f32[2] parameter(1)\n  ROOT b = (f32[2,2], f32[2], f32[2]) batch-norm-training(x, s, s), epsilon=0, feature_index=2\n}\n";
        assert!(refused(rank).contains("feature_index 2 is not a dimension"), "{}", refused(rank));
    }
}
