//! One function per op: resolve the operands' offsets, load them as float32, compute, store.
//!
//! Kernels trust the validation of [`crate::program`] (ranks, shapes, static bounds) and check
//! only what depends on data: indirect indices, and reads of unwritten elements.

use crate::RunErrorKind;
use crate::alu::AluOp;
use crate::memory::{Memory, SKIP, affine_values, mask_active, numel, zeroed};
use crate::ops::{
    ActivationOp, CopyOp, DmaOp, IotaOp, MatmulOp, MemsetOp, Oob, Op, PartitionReduceOp, PrintOp,
    ReduceOp, SelectOp, SelectPred, TensorScalarOp, TensorTensorOp,
};
use crate::program::{Ap, Operand, Pred};
use crate::{PrintRecord, PrintValue};

/// What a kernel adds to the run's report besides warnings.
#[derive(Default)]
pub(crate) struct Effects {
    /// Bytes a DMA moved.
    pub(crate) dma_bytes: u64,
    /// A print's record.
    pub(crate) print: Option<PrintRecord>,
}

type Result<T> = std::result::Result<T, RunErrorKind>;

/// Executes instruction `mem.current`.
pub(crate) fn execute(mem: &mut Memory<'_>) -> Result<Effects> {
    let program = mem.program;
    let instruction = &program.instructions[mem.current];
    let mask = &instruction.mask[..];
    let mut effects = Effects::default();
    match &instruction.op {
        Op::Dma(op) => effects.dma_bytes = dma(mem, op, mask)?,
        Op::Copy(op) => copy(mem, op, mask)?,
        Op::Memset(op) => memset(mem, op, mask)?,
        Op::Iota(op) => iota(mem, op, mask)?,
        Op::TensorTensor(op) => tensor_tensor(mem, op, mask)?,
        Op::TensorScalar(op) => tensor_scalar(mem, op, mask)?,
        Op::Activation(op) => activation(mem, op, mask)?,
        Op::Reduce(op) => reduce(mem, op, mask)?,
        Op::PartitionReduce(op) => partition_reduce(mem, op, mask)?,
        Op::Matmul(op) => matmul(mem, op, mask)?,
        Op::Select(op) => select(mem, op, mask)?,
        Op::Print(op) => effects.print = Some(print(mem, op, mask)?),
    }
    Ok(effects)
}

/// Whether bitwise operators act on signed 32-bit integers for a write to `ap`.
fn signed(mem: &Memory<'_>, ap: &Ap) -> bool {
    mem.tensors[ap.t].dtype.is_signed_integer()
}

/// Loads an operand over `n` elements (an immediate fills them).
fn load_operand(
    mem: &mut Memory<'_>,
    operand: &Operand,
    active: Option<&[bool]>,
    n: usize,
    name: &str,
) -> Result<Vec<f32>> {
    match operand {
        Operand::Imm(value) => {
            let mut values = zeroed::<f32>(n)?;
            values.fill(*value);
            Ok(values)
        }
        Operand::Ap(ap) => mem.load_ap(ap, active, name),
    }
}

/// Resolves `dst`'s offsets under the instruction's mask, and returns them with the mask.
fn dst_and_mask(
    mem: &mut Memory<'_>,
    dst: &Ap,
    mask: &[Pred],
) -> Result<(Vec<usize>, Option<Vec<bool>>)> {
    let active = mask_active(&dst.shape(), mask)?;
    let offsets = mem.offsets(dst, active.as_deref(), Oob::Error, "dst")?;
    Ok((offsets, active))
}

fn dma(mem: &mut Memory<'_>, op: &DmaOp, mask: &[Pred]) -> Result<u64> {
    let active = mask_active(&op.dst.shape(), mask)?;
    let mut dst = mem.offsets(&op.dst, active.as_deref(), op.oob, "dst")?;
    let mut src = mem.offsets(&op.src, active.as_deref(), op.oob, "src")?;
    let mut moved = 0u64;
    for (to, from) in dst.iter_mut().zip(src.iter_mut()) {
        if *to == SKIP || *from == SKIP {
            *to = SKIP;
            *from = SKIP;
        } else {
            moved += 1;
        }
    }
    move_elements(mem, &op.dst, &dst, &op.src, &src, op.accumulate)?;
    Ok(moved * mem.tensors[op.dst.t].dtype.n_bytes() as u64)
}

/// `dst[i] = src[i]` (or `dst[i] = dst[i] op src[i]`): bits unchanged between equal dtypes.
fn move_elements(
    mem: &mut Memory<'_>,
    dst_ap: &Ap,
    dst: &[usize],
    src_ap: &Ap,
    src: &[usize],
    accumulate: Option<AluOp>,
) -> Result<()> {
    let same_dtype = mem.tensors[dst_ap.t].dtype == mem.tensors[src_ap.t].dtype;
    match accumulate {
        None if same_dtype => mem.copy_bits(dst_ap.t, dst, src_ap.t, src),
        None => {
            let mut values = zeroed::<f32>(src.len())?;
            mem.load(src_ap.t, src, &mut values)?;
            mem.store(dst_ap.t, dst, &values);
            Ok(())
        }
        Some(op) => {
            let mut values = zeroed::<f32>(src.len())?;
            mem.load(src_ap.t, src, &mut values)?;
            let mut current = zeroed::<f32>(dst.len())?;
            mem.load(dst_ap.t, dst, &mut current)?;
            let signed = signed(mem, dst_ap);
            for (value, &old) in values.iter_mut().zip(&current) {
                *value = op.apply(old, *value, signed);
            }
            mem.store(dst_ap.t, dst, &values);
            Ok(())
        }
    }
}

fn copy(mem: &mut Memory<'_>, op: &CopyOp, mask: &[Pred]) -> Result<()> {
    let (dst, active) = dst_and_mask(mem, &op.dst, mask)?;
    let src = mem.offsets(&op.src, active.as_deref(), Oob::Error, "src")?;
    move_elements(mem, &op.dst, &dst, &op.src, &src, None)
}

fn memset(mem: &mut Memory<'_>, op: &MemsetOp, mask: &[Pred]) -> Result<()> {
    let (dst, _) = dst_and_mask(mem, &op.dst, mask)?;
    let dtype = mem.tensors[op.dst.t].dtype;
    // An integer value into an integer tensor is written exactly (float32 holds only 24 bits).
    if dtype.is_integer() && op.value.fract() == 0.0 && op.value.abs() < 9.2e18 {
        let values = vec![op.value as i64; dst.len()];
        mem.store_i64(op.dst.t, &dst, &values);
    } else {
        let mut values = zeroed::<f32>(dst.len())?;
        values.fill(op.value as f32);
        mem.store(op.dst.t, &dst, &values);
    }
    Ok(())
}

fn iota(mem: &mut Memory<'_>, op: &IotaOp, mask: &[Pred]) -> Result<()> {
    let (dst, _) = dst_and_mask(mem, &op.dst, mask)?;
    let values = affine_values(&op.c, op.k, &op.dst.shape())?;
    mem.store_i64(op.dst.t, &dst, &values);
    Ok(())
}

fn tensor_tensor(mem: &mut Memory<'_>, op: &TensorTensorOp, mask: &[Pred]) -> Result<()> {
    let (dst, active) = dst_and_mask(mem, &op.dst, mask)?;
    let mut a = load_operand(mem, &op.a, active.as_deref(), dst.len(), "a")?;
    let b = load_operand(mem, &op.b, active.as_deref(), dst.len(), "b")?;
    let signed = signed(mem, &op.dst);
    for (x, &y) in a.iter_mut().zip(&b) {
        *x = op.alu_op.apply(*x, y, signed);
    }
    mem.store(op.dst.t, &dst, &a);
    Ok(())
}

fn tensor_scalar(mem: &mut Memory<'_>, op: &TensorScalarOp, mask: &[Pred]) -> Result<()> {
    let (dst, active) = dst_and_mask(mem, &op.dst, mask)?;
    let mut x = mem.load_ap(&op.src, active.as_deref(), "src")?;
    let signed = signed(mem, &op.dst);
    for (k, step) in op.ops.iter().enumerate() {
        let name = format!("ops[{k}].operand");
        let v = load_operand(mem, &step.operand, active.as_deref(), dst.len(), &name)?;
        for (x, &v) in x.iter_mut().zip(&v) {
            *x = if step.reverse { step.op.apply(v, *x, signed) } else { step.op.apply(*x, v, signed) };
        }
    }
    mem.store(op.dst.t, &dst, &x);
    Ok(())
}

/// Folds `values` into groups: `group[i]` is the group of element `i` (`None` where inactive).
/// Returns each group's fold, `None` for a group no active element reached.
fn fold_groups(
    values: &[f32],
    groups: &[usize],
    skip: &[bool],
    n_groups: usize,
    op: AluOp,
    signed: bool,
) -> Result<Vec<Option<f32>>> {
    let mut folds = zeroed::<Option<f32>>(n_groups)?;
    for ((&value, &group), &skipped) in values.iter().zip(groups).zip(skip) {
        if skipped {
            continue;
        }
        let fold = &mut folds[group];
        *fold = Some(match *fold {
            None => value,
            Some(acc) => op.apply(acc, value, signed),
        });
    }
    Ok(folds)
}

/// Stores group folds into `dst` (shape: one element per group); groups without a value are
/// not written.
fn store_folds(mem: &mut Memory<'_>, dst: &Ap, folds: &[Option<f32>], sign: f32) -> Result<()> {
    let mut offsets = mem.offsets(dst, None, Oob::Error, "dst")?;
    let mut values = zeroed::<f32>(folds.len())?;
    for ((offset, value), fold) in offsets.iter_mut().zip(values.iter_mut()).zip(folds) {
        match fold {
            Some(fold) => *value = sign * fold,
            None => *offset = SKIP,
        }
    }
    mem.store(dst.t, &offsets, &values);
    Ok(())
}

fn activation(mem: &mut Memory<'_>, op: &ActivationOp, mask: &[Pred]) -> Result<()> {
    let (dst, active) = dst_and_mask(mem, &op.dst, mask)?;
    let n = dst.len();
    let mut x = mem.load_ap(&op.src, active.as_deref(), "src")?;
    let scale = load_operand(mem, &op.scale, active.as_deref(), n, "scale")?;
    let bias = match &op.bias {
        Some(bias) => Some(load_operand(mem, bias, active.as_deref(), n, "bias")?),
        None => None,
    };
    let dst_signed = signed(mem, &op.dst);
    for (i, x) in x.iter_mut().enumerate() {
        let bias = bias.as_ref().map_or(0.0, |b| b[i]);
        *x = op.func.apply(*x * scale[i] + bias, dst_signed);
    }
    mem.store(op.dst.t, &dst, &x);
    if let Some(reduce) = &op.reduce {
        let shape = op.dst.shape();
        let partitions = shape.first().copied().unwrap_or(1) as usize;
        let per_partition = if partitions == 0 { 0 } else { n / partitions };
        let groups: Vec<usize> = (0..n).map(|i| i / per_partition.max(1)).collect();
        let skip: Vec<bool> = dst.iter().map(|&offset| offset == SKIP).collect();
        let reduce_signed = signed(mem, &reduce.dst);
        let folds = fold_groups(&x, &groups, &skip, partitions, reduce.op, reduce_signed)?;
        store_folds(mem, &reduce.dst, &folds, 1.0)?;
    }
    Ok(())
}

/// A fold over `axes` of `src` (the iteration shape) into `dst`.
fn fold_axes(
    mem: &mut Memory<'_>,
    dst_ap: &Ap,
    src_ap: &Ap,
    axes: &[usize],
    op: AluOp,
    negate: bool,
    mask: &[Pred],
) -> Result<()> {
    let shape = src_ap.shape();
    let active = mask_active(&shape, mask)?;
    let src = mem.offsets(src_ap, active.as_deref(), Oob::Error, "src")?;
    let mut values = zeroed::<f32>(src.len())?;
    mem.load(src_ap.t, &src, &mut values)?;
    // The group of each source element: its row-major position in dst's shape, which is the
    // source's with count 1 on `axes` (so those dimensions get stride 0).
    let mut group_strides = vec![0i64; shape.len()];
    let mut stride = 1i64;
    for d in (0..shape.len()).rev() {
        if !axes.contains(&d) {
            group_strides[d] = stride;
            stride *= shape[d] as i64;
        }
    }
    let groups: Vec<usize> =
        affine_values(&group_strides, 0, &shape)?.into_iter().map(|g| g as usize).collect();
    let skip: Vec<bool> = src.iter().map(|&offset| offset == SKIP).collect();
    let n_groups = numel(&dst_ap.shape());
    let signed = signed(mem, dst_ap);
    let folds = fold_groups(&values, &groups, &skip, n_groups, op, signed)?;
    store_folds(mem, dst_ap, &folds, if negate { -1.0 } else { 1.0 })
}

fn reduce(mem: &mut Memory<'_>, op: &ReduceOp, mask: &[Pred]) -> Result<()> {
    fold_axes(mem, &op.dst, &op.src, &op.axes, op.alu_op, op.negate, mask)
}

fn partition_reduce(mem: &mut Memory<'_>, op: &PartitionReduceOp, mask: &[Pred]) -> Result<()> {
    fold_axes(mem, &op.dst, &op.src, &[0], op.alu_op, false, mask)
}

fn matmul(mem: &mut Memory<'_>, op: &MatmulOp, mask: &[Pred]) -> Result<()> {
    let (dst, active) = dst_and_mask(mem, &op.dst, mask)?;
    let [k, m] = [op.stationary.ap[0][1] as usize, op.stationary.ap[1][1] as usize];
    let n = op.moving.ap[1][1] as usize;
    let stationary = mem.load_ap(&op.stationary, None, "stationary")?;
    let moving = mem.load_ap(&op.moving, None, "moving")?;
    let mut out = if op.accumulate {
        mem.load_ap(&op.dst, active.as_deref(), "dst")?
    } else {
        zeroed::<f32>(m * n)?
    };
    // Products and sums in float32, k outermost so that the inner loop runs along a row.
    let mut sums = zeroed::<f32>(m * n)?;
    for kk in 0..k {
        let moving_row = &moving[kk * n..kk * n + n];
        for mm in 0..m {
            let weight = stationary[kk * m + mm];
            let row = &mut sums[mm * n..mm * n + n];
            for (sum, &x) in row.iter_mut().zip(moving_row) {
                *sum += weight * x;
            }
        }
    }
    for (value, &sum) in out.iter_mut().zip(&sums) {
        *value += sum;
    }
    mem.store(op.dst.t, &dst, &out);
    Ok(())
}

fn select(mem: &mut Memory<'_>, op: &SelectOp, mask: &[Pred]) -> Result<()> {
    let (dst, active) = dst_and_mask(mem, &op.dst, mask)?;
    let n = dst.len();
    let truth: Vec<bool> = match &op.pred {
        SelectPred::Ap(ap) => {
            let values = mem.load_ap(ap, active.as_deref(), "pred")?;
            values.iter().map(|&v| v != 0.0).collect()
        }
        SelectPred::Affine(affine) => affine_values(&affine.c, affine.k, &op.dst.shape())?
            .into_iter()
            .map(|v| affine.cmp.holds(v))
            .collect(),
    };
    // Each branch is read only where it is chosen, so the other may be unwritten there.
    let chosen = |want: bool| -> Vec<bool> {
        (0..n).map(|i| truth[i] == want && active.as_ref().is_none_or(|a| a[i])).collect()
    };
    let (true_mask, false_mask) = (chosen(true), chosen(false));
    let on_true = load_operand(mem, &op.on_true, Some(&true_mask), n, "on_true")?;
    let on_false = load_operand(mem, &op.on_false, Some(&false_mask), n, "on_false")?;
    let values: Vec<f32> =
        (0..n).map(|i| if truth[i] { on_true[i] } else { on_false[i] }).collect();
    mem.store(op.dst.t, &dst, &values);
    Ok(())
}

fn print(mem: &mut Memory<'_>, op: &PrintOp, mask: &[Pred]) -> Result<PrintRecord> {
    let shape = op.src.shape();
    let active = mask_active(&shape, mask)?;
    let offsets = mem.offsets(&op.src, active.as_deref(), Oob::Error, "src")?;
    let mut values = zeroed::<f32>(offsets.len())?;
    mem.load(op.src.t, &offsets, &mut values)?;
    let instruction = &mem.program.instructions[mem.current];
    Ok(PrintRecord {
        label: op.label.clone(),
        loc: mem.program.source_loc(instruction.loc).to_string(),
        shape,
        values: values
            .iter()
            .zip(&offsets)
            .map(|(&v, &offset)| if offset == SKIP { PrintValue(None) } else { PrintValue(Some(v)) })
            .collect(),
    })
}
