//! One function per op: resolve the operands' offsets, load them as float32, compute, store.
//!
//! Kernels trust the validation of [`crate::program`] (ranks, shapes) and check only what
//! depends on data or on the mask: bounds (through `Memory::offsets`), indirect indices, and
//! reads of unwritten elements.

use crate::RunErrorKind;
use crate::alu::AluOp;
use crate::memory::{Memory, SKIP, Target, affine_values, mask_active, numel, zeroed};
use crate::ops::{
    ActivationOp, BnAggrOp, BnStatsOp, CopyOp, DmaOp, DropoutOp, ExponentialOp, IotaOp,
    LocalGatherOp, MatmulOp, Max8Op, MemsetOp, NcFindIndex8Op, NcMatchReplace8Op,
    NcStreamShuffleOp, Oob, Op, PartitionReduceOp, PrintOp, Rand2Op, RangeSelectOp, ReduceCmd,
    ReduceOp, RngOp, ScalarTensorTensorOp, ScanOp, SelectOp, SelectPred, SelectReduceOp,
    SequenceBoundsOp, TensorScalarCumulativeOp, TensorScalarOp, TensorScalarReduceOp,
    TensorTensorOp,
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
        Op::Scan(op) => scan(mem, op)?,
        Op::ScalarTensorTensor(op) => scalar_tensor_tensor(mem, op, mask)?,
        Op::BnStats(op) => bn_stats(mem, op)?,
        Op::BnAggr(op) => bn_aggr(mem, op)?,
        Op::Max8(op) => max8(mem, op)?,
        Op::NcFindIndex8(op) => nc_find_index8(mem, op)?,
        Op::NcMatchReplace8(op) => nc_match_replace8(mem, op)?,
        Op::TensorScalarCumulative(op) => tensor_scalar_cumulative(mem, op)?,
        Op::TensorScalarReduce(op) => tensor_scalar_reduce(mem, op, mask)?,
        Op::SelectReduce(op) => select_reduce(mem, op, mask)?,
        Op::RangeSelect(op) => range_select(mem, op, mask)?,
        Op::LocalGather(op) => local_gather(mem, op)?,
        Op::NcStreamShuffle(op) => nc_stream_shuffle(mem, op, mask)?,
        Op::SequenceBounds(op) => sequence_bounds(mem, op)?,
        Op::Dropout(op) => dropout(mem, op, mask)?,
        Op::Rng(op) => rng(mem, op, mask)?,
        Op::Rand2(op) => rand2(mem, op, mask)?,
        Op::Exponential(op) => exponential(mem, op, mask)?,
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
    let dtype = mem.tensors[op.dst.t].dtype;
    // An integer value into an integer tensor is written exactly (float32 holds only 24 bits).
    if dtype.is_integer() && op.value.fract() == 0.0 && op.value.abs() < 9.2e18 {
        let (dst, _) = dst_and_mask(mem, &op.dst, mask)?;
        let values = vec![op.value as i64; dst.len()];
        mem.store_i64(op.dst.t, &dst, &values);
    } else {
        let Dst { target, n, .. } = dst_target(mem, &op.dst, mask)?;
        let mut values = zeroed::<f32>(n)?;
        values.fill(op.value as f32);
        mem.store_target(&op.dst, &target, &values);
    }
    Ok(())
}

/// Where an instruction writes `dst` under its mask.
struct Dst {
    /// The elements written.
    target: Target,
    /// The mask over the iteration shape (`None`: every element).
    active: Option<Vec<bool>>,
    /// The number of elements of the iteration shape.
    n: usize,
}

/// Resolves where an instruction writes `dst` under its mask (its bounds checked).
fn dst_target(mem: &mut Memory<'_>, dst: &Ap, mask: &[Pred]) -> Result<Dst> {
    let shape = dst.shape();
    let active = mask_active(&shape, mask)?;
    let target = mem.target(dst, active.as_deref(), "dst")?;
    Ok(Dst { target, active, n: numel(&shape) })
}

fn iota(mem: &mut Memory<'_>, op: &IotaOp, mask: &[Pred]) -> Result<()> {
    let (dst, _) = dst_and_mask(mem, &op.dst, mask)?;
    let values = affine_values(&op.c, op.k, &op.dst.shape())?;
    mem.store_i64(op.dst.t, &dst, &values);
    Ok(())
}

fn tensor_tensor(mem: &mut Memory<'_>, op: &TensorTensorOp, mask: &[Pred]) -> Result<()> {
    let Dst { target, active, n } = dst_target(mem, &op.dst, mask)?;
    let mut a = load_operand(mem, &op.a, active.as_deref(), n, "a")?;
    let b = load_operand(mem, &op.b, active.as_deref(), n, "b")?;
    let signed = signed(mem, &op.dst);
    op.alu_op.apply_slices(&mut a, &b, false, signed);
    mem.store_target(&op.dst, &target, &a);
    Ok(())
}

fn tensor_scalar(mem: &mut Memory<'_>, op: &TensorScalarOp, mask: &[Pred]) -> Result<()> {
    let Dst { target, active, n } = dst_target(mem, &op.dst, mask)?;
    let mut x = mem.load_ap(&op.src, active.as_deref(), "src")?;
    let signed = signed(mem, &op.dst);
    for (k, step) in op.ops.iter().enumerate() {
        let name = format!("ops[{k}].operand");
        let v = load_operand(mem, &step.operand, active.as_deref(), n, &name)?;
        step.op.apply_slices(&mut x, &v, step.reverse, signed);
    }
    mem.store_target(&op.dst, &target, &x);
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
    let Dst { target, active, n } = dst_target(mem, &op.dst, mask)?;
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
    mem.store_target(&op.dst, &target, &x);
    if let Some(reduce) = &op.reduce {
        let shape = op.dst.shape();
        let partitions = shape.first().copied().unwrap_or(1) as usize;
        let per_partition = n.checked_div(partitions).unwrap_or(0);
        let groups: Vec<usize> = (0..n).map(|i| i / per_partition.max(1)).collect();
        let skip: Vec<bool> = (0..n).map(|i| !target.writes(i)).collect();
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
    let Dst { target, active, .. } = dst_target(mem, &op.dst, mask)?;
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
    mem.store_target(&op.dst, &target, &out);
    Ok(())
}

fn select(mem: &mut Memory<'_>, op: &SelectOp, mask: &[Pred]) -> Result<()> {
    let (dst, active) = dst_and_mask(mem, &op.dst, mask)?;
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
    let values = choose(mem, &truth, active.as_deref(), &op.on_true, &op.on_false)?;
    mem.store(op.dst.t, &dst, &values);
    Ok(())
}

/// `truth[i] ? on_true[i] : on_false[i]` over the active elements, each branch read only where
/// it is chosen (so the other may be unwritten there).
fn choose(
    mem: &mut Memory<'_>,
    truth: &[bool],
    active: Option<&[bool]>,
    on_true: &Operand,
    on_false: &Operand,
) -> Result<Vec<f32>> {
    let n = truth.len();
    let chosen = |want: bool| -> Vec<bool> {
        (0..n).map(|i| truth[i] == want && active.is_none_or(|a| a[i])).collect()
    };
    let (true_mask, false_mask) = (chosen(true), chosen(false));
    let on_true = load_operand(mem, on_true, Some(&true_mask), n, "on_true")?;
    let on_false = load_operand(mem, on_false, Some(&false_mask), n, "on_false")?;
    Ok((0..n).map(|i| if truth[i] { on_true[i] } else { on_false[i] }).collect())
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
            .map(
                |(&v, &offset)| if offset == SKIP { PrintValue(None) } else { PrintValue(Some(v)) },
            )
            .collect(),
    })
}

/// Loads a whole AP (no mask) and splits its shape into partitions and elements per partition.
fn load_partitioned(
    mem: &mut Memory<'_>,
    ap: &Ap,
    operand: &str,
) -> Result<(Vec<f32>, usize, usize)> {
    let values = mem.load_ap(ap, None, operand)?;
    let partitions = ap.shape().first().copied().unwrap_or(1) as usize;
    let free = values.len().checked_div(partitions).unwrap_or(0);
    Ok((values, partitions, free))
}

/// Stores a whole AP (no mask).
fn store_all(mem: &mut Memory<'_>, ap: &Ap, values: &[f32]) -> Result<()> {
    let offsets = mem.offsets(ap, None, Oob::Error, "dst")?;
    mem.store(ap.t, &offsets, values);
    Ok(())
}

/// Stores exact integers into a whole AP (no mask).
fn store_all_i64(mem: &mut Memory<'_>, ap: &Ap, values: &[i64], operand: &str) -> Result<()> {
    let offsets = mem.offsets(ap, None, Oob::Error, operand)?;
    mem.store_i64(ap.t, &offsets, values);
    Ok(())
}

fn scan(mem: &mut Memory<'_>, op: &ScanOp) -> Result<()> {
    let (data0, partitions, free) = load_partitioned(mem, &op.data0, "data0")?;
    let data1 = mem.load_ap(&op.data1, None, "data1")?;
    let initial = load_operand(mem, &op.initial, None, partitions, "initial")?;
    let signed = signed(mem, &op.dst);
    let mut out = zeroed::<f32>(data0.len())?;
    for (p, &start) in initial.iter().enumerate().take(partitions) {
        let mut previous = start;
        for i in p * free..(p + 1) * free {
            let x = if op.reverse0 {
                op.op0.apply(previous, data0[i], signed)
            } else {
                op.op0.apply(data0[i], previous, signed)
            };
            previous = if op.reverse1 {
                op.op1.apply(data1[i], x, signed)
            } else {
                op.op1.apply(x, data1[i], signed)
            };
            out[i] = previous;
        }
    }
    store_all(mem, &op.dst, &out)
}

fn scalar_tensor_tensor(
    mem: &mut Memory<'_>,
    op: &ScalarTensorTensorOp,
    mask: &[Pred],
) -> Result<()> {
    let Dst { target, active, n } = dst_target(mem, &op.dst, mask)?;
    let mut x = mem.load_ap(&op.data, active.as_deref(), "data")?;
    let operand0 = load_operand(mem, &op.operand0, active.as_deref(), n, "operand0")?;
    let operand1 = mem.load_ap(&op.operand1, active.as_deref(), "operand1")?;
    let signed = signed(mem, &op.dst);
    op.op0.apply_slices(&mut x, &operand0, op.reverse0, signed);
    op.op1.apply_slices(&mut x, &operand1, op.reverse1, signed);
    mem.store_target(&op.dst, &target, &x);
    Ok(())
}

/// Count, mean and sum of squared deviations of `values`, in float32; an empty list gives
/// (0, 0, 0).
fn count_mean_m2(values: impl Iterator<Item = f32> + Clone) -> [f32; 3] {
    let count = values.clone().count();
    if count == 0 {
        return [0.0; 3];
    }
    let mean = values.clone().sum::<f32>() / count as f32;
    let m2 = values.map(|v| (v - mean) * (v - mean)).sum::<f32>();
    [count as f32, mean, m2]
}

fn bn_stats(mem: &mut Memory<'_>, op: &BnStatsOp) -> Result<()> {
    let (data, partitions, free) = load_partitioned(mem, &op.data, "data")?;
    let mut out = zeroed::<f32>(partitions * 6)?;
    for p in 0..partitions {
        let row = &data[p * free..(p + 1) * free];
        let even = count_mean_m2(row.iter().step_by(2).copied());
        let odd = count_mean_m2(row.iter().skip(1).step_by(2).copied());
        out[p * 6..p * 6 + 3].copy_from_slice(&even);
        out[p * 6 + 3..p * 6 + 6].copy_from_slice(&odd);
    }
    store_all(mem, &op.dst, &out)
}

fn bn_aggr(mem: &mut Memory<'_>, op: &BnAggrOp) -> Result<()> {
    let (data, partitions, free) = load_partitioned(mem, &op.data, "data")?;
    let mut out = zeroed::<f32>(partitions * 2)?;
    for p in 0..partitions {
        let triples = data[p * free..(p + 1) * free].chunks_exact(3);
        // Chan et al.'s combination: the total count, the count-weighted mean, and the sum of
        // the parts' squared deviations plus each part's count times its mean's deviation.
        let count: f32 = triples.clone().map(|t| t[0]).sum();
        let mean = triples.clone().map(|t| t[0] * t[1]).sum::<f32>() / count;
        let m2: f32 = triples.map(|t| t[2] + t[0] * (t[1] - mean) * (t[1] - mean)).sum();
        out[p * 2] = mean;
        out[p * 2 + 1] = m2 / count;
    }
    store_all(mem, &op.dst, &out)
}

fn max8(mem: &mut Memory<'_>, op: &Max8Op) -> Result<()> {
    let (src, partitions, free) = load_partitioned(mem, &op.src, "src")?;
    let mut out = zeroed::<f32>(partitions * 8)?;
    let mut row = Vec::with_capacity(free);
    for p in 0..partitions {
        row.clear();
        row.extend_from_slice(&src[p * free..(p + 1) * free]);
        // Descending in IEEE total order: NaN above +inf, so a NaN input shows.
        row.sort_unstable_by(|a, b| b.total_cmp(a));
        out[p * 8..p * 8 + 8].copy_from_slice(&row[..8]);
    }
    store_all(mem, &op.dst, &out)
}

/// The all-ones index of a value not found: saturates to 0xFFFF for uint16.
const NOT_FOUND: i64 = u32::MAX as i64;

fn nc_find_index8(mem: &mut Memory<'_>, op: &NcFindIndex8Op) -> Result<()> {
    let (data, partitions, free) = load_partitioned(mem, &op.data, "data")?;
    let vals = mem.load_ap(&op.vals, None, "vals")?;
    let mut out = vec![NOT_FOUND; partitions * 8];
    for p in 0..partitions {
        let row = &data[p * free..(p + 1) * free];
        let wanted = &vals[p * 8..p * 8 + 8];
        for (i, &value) in wanted.iter().enumerate() {
            // A value listed again takes its next occurrence (ascending over the duplicates).
            let repeat = wanted[..i].iter().filter(|&&v| v == value).count();
            if let Some(position) =
                row.iter().enumerate().filter(|&(_, &x)| x == value).nth(repeat).map(|(j, _)| j)
            {
                out[p * 8 + i] = position as i64;
            }
        }
    }
    store_all_i64(mem, &op.dst, &out, "dst")
}

fn nc_match_replace8(mem: &mut Memory<'_>, op: &NcMatchReplace8Op) -> Result<()> {
    let (mut data, partitions, free) = load_partitioned(mem, &op.data, "data")?;
    let vals = mem.load_ap(&op.vals, None, "vals")?;
    let mut indices = vec![NOT_FOUND; partitions * 8];
    let mut matched = vec![false; free];
    for p in 0..partitions {
        matched.fill(false);
        let row = &mut data[p * free..(p + 1) * free];
        // Values are matched from the last to the first, each to the first position not yet
        // matched, so duplicate values take ascending positions from the highest slot down.
        for i in (0..8).rev() {
            let value = vals[p * 8 + i];
            if let Some(position) = (0..free).find(|&j| !matched[j] && row[j] == value) {
                matched[position] = true;
                indices[p * 8 + i] = position as i64;
            }
        }
        for (x, &hit) in row.iter_mut().zip(&matched) {
            if hit {
                *x = op.imm as f32;
            }
        }
    }
    store_all(mem, &op.dst, &data)?;
    if let Some(dst_idx) = &op.dst_idx {
        store_all_i64(mem, dst_idx, &indices, "dst_idx")?;
    }
    Ok(())
}

/// The group (the partition: iteration dimension 0) of each of `n` row-major elements.
fn partition_groups(n: usize, partitions: usize) -> Vec<usize> {
    let per_partition = n.checked_div(partitions).unwrap_or(0).max(1);
    (0..n).map(|i| i / per_partition).collect()
}

/// Runs `cmd` on the accumulator of the instruction's engine, lanes `0..folds.len()` (one per
/// partition of the instruction): `folds[p]` is partition p's fold of this instruction's
/// results (`None` when the mask left it no element), `init` the `load_reduce` values. Returns
/// the lanes' values after the command, `None` under `idle`, which leaves them undefined.
fn accumulate(
    mem: &mut Memory<'_>,
    cmd: ReduceCmd,
    op: AluOp,
    init: Option<&[f32]>,
    folds: &[Option<f32>],
) -> Result<Option<Vec<f32>>> {
    let engine = mem.program.instructions[mem.current].engine;
    let lanes = mem.accumulators.entry(engine).or_default();
    if lanes.len() < folds.len() {
        lanes.resize(folds.len(), None);
    }
    let identity = op.fold_identity().unwrap_or(0.0);
    let mut values = zeroed::<f32>(folds.len())?;
    for (p, (&fold, value)) in folds.iter().zip(values.iter_mut()).enumerate() {
        let start = match cmd {
            ReduceCmd::Idle => {
                lanes[p] = None;
                continue;
            }
            ReduceCmd::Reset => {
                lanes[p] = Some(identity);
                *value = identity;
                continue;
            }
            ReduceCmd::ResetReduce => identity,
            ReduceCmd::LoadReduce => init.map_or(0.0, |init| init[p]),
            ReduceCmd::Reduce => match lanes[p] {
                Some(current) => current,
                None => {
                    return Err(RunErrorKind::Accumulator {
                        engine: engine.name(),
                        partition: p as u64,
                    });
                }
            },
        };
        let result = match fold {
            Some(fold) => op.apply(start, fold, false),
            None => start,
        };
        lanes[p] = Some(result);
        *value = result;
    }
    Ok((cmd != ReduceCmd::Idle).then_some(values))
}

/// Writes the accumulator's values to `reduce_res` (`[P, 1]`), negated if asked.
fn store_accumulator(
    mem: &mut Memory<'_>,
    reduce_res: Option<&Ap>,
    values: Option<Vec<f32>>,
    negate: bool,
) -> Result<()> {
    if let (Some(reduce_res), Some(mut values)) = (reduce_res, values) {
        if negate {
            values.iter_mut().for_each(|v| *v = -*v);
        }
        let offsets = mem.offsets(reduce_res, None, Oob::Error, "reduce_res")?;
        mem.store(reduce_res.t, &offsets, &values);
    }
    Ok(())
}

/// Each partition's fold of `values` under `op`, leaving out elements whose `dst` offset is
/// [`SKIP`] (masked).
fn partition_folds(
    values: &[f32],
    dst: &[usize],
    partitions: usize,
    op: AluOp,
) -> Result<Vec<Option<f32>>> {
    let groups = partition_groups(values.len(), partitions);
    let skip: Vec<bool> = dst.iter().map(|&offset| offset == SKIP).collect();
    fold_groups(values, &groups, &skip, partitions, op, false)
}

/// Loads a `[P, 1]` operand (an immediate fills it).
fn load_per_partition(
    mem: &mut Memory<'_>,
    operand: &Operand,
    partitions: usize,
    name: &str,
) -> Result<Vec<f32>> {
    load_operand(mem, operand, None, partitions, name)
}

fn tensor_scalar_cumulative(mem: &mut Memory<'_>, op: &TensorScalarCumulativeOp) -> Result<()> {
    let (src, partitions, free) = load_partitioned(mem, &op.src, "src")?;
    let imm0 = load_per_partition(mem, &op.imm0, partitions, "imm0")?;
    let imm1 = match &op.imm1 {
        Some(imm1) => Some(load_per_partition(mem, imm1, partitions, "imm1")?),
        None => None,
    };
    // The register each partition starts from: no fold yet, so `accumulate` only resets,
    // loads or reads it.
    let starts = accumulate(mem, op.reduce_cmd, op.op1, imm1.as_deref(), &vec![None; partitions])?
        .unwrap_or_default();
    let signed = signed(mem, &op.dst);
    let mut out = zeroed::<f32>(src.len())?;
    let mut registers = starts;
    for (p, register) in registers.iter_mut().enumerate() {
        for i in p * free..(p + 1) * free {
            // The page's pseudocode: register = op1(op0(src, imm0), register).
            let x = op.op0.apply(src[i], imm0[p], signed);
            *register = op.op1.apply(x, *register, signed);
            out[i] = *register;
        }
    }
    let engine = mem.program.instructions[mem.current].engine;
    let lanes = mem.accumulators.entry(engine).or_default();
    for (lane, &register) in lanes.iter_mut().zip(&registers) {
        *lane = Some(register);
    }
    store_all(mem, &op.dst, &out)
}

fn tensor_scalar_reduce(
    mem: &mut Memory<'_>,
    op: &TensorScalarReduceOp,
    mask: &[Pred],
) -> Result<()> {
    let (dst, active) = dst_and_mask(mem, &op.dst, mask)?;
    let n = dst.len();
    let mut x = mem.load_ap(&op.data, active.as_deref(), "data")?;
    let operand0 = load_operand(mem, &op.operand0, active.as_deref(), n, "operand0")?;
    let signed = signed(mem, &op.dst);
    for (x, &v) in x.iter_mut().zip(&operand0) {
        *x = if op.reverse0 { op.op0.apply(v, *x, signed) } else { op.op0.apply(*x, v, signed) };
    }
    mem.store(op.dst.t, &dst, &x);
    let partitions = op.dst.ap[0][1] as usize;
    let init = match &op.reduce_init {
        Some(init) => Some(load_per_partition(mem, init, partitions, "reduce_init")?),
        None => None,
    };
    let folds = partition_folds(&x, &dst, partitions, op.reduce_op)?;
    let values = accumulate(mem, op.reduce_cmd, op.reduce_op, init.as_deref(), &folds)?;
    store_accumulator(mem, op.reduce_res.as_ref(), values, op.reduce_res_negate)
}

fn select_reduce(mem: &mut Memory<'_>, op: &SelectReduceOp, mask: &[Pred]) -> Result<()> {
    let (dst, active) = dst_and_mask(mem, &op.dst, mask)?;
    let n = dst.len();
    let predicate = load_operand(mem, &op.predicate, active.as_deref(), n, "predicate")?;
    let truth: Vec<bool> = predicate.iter().map(|&v| (v != 0.0) != op.reverse_pred).collect();
    // Each branch is read only where it is chosen, as `select` does.
    let values = choose(mem, &truth, active.as_deref(), &op.on_true, &op.on_false)?;
    mem.store(op.dst.t, &dst, &values);
    let partitions = op.dst.ap[0][1] as usize;
    let folds = partition_folds(&values, &dst, partitions, op.reduce_op)?;
    let result = accumulate(mem, op.reduce_cmd, op.reduce_op, None, &folds)?;
    store_accumulator(mem, op.reduce_res.as_ref(), result, false)
}

fn range_select(mem: &mut Memory<'_>, op: &RangeSelectOp, mask: &[Pred]) -> Result<()> {
    let (dst, active) = dst_and_mask(mem, &op.dst, mask)?;
    let n = dst.len();
    let partitions = op.dst.ap[0][1] as usize;
    let free = n.checked_div(partitions).unwrap_or(0);
    let bound0 = load_per_partition(mem, &op.bound0, partitions, "bound0")?;
    let bound1 = load_per_partition(mem, &op.bound1, partitions, "bound1")?;
    // The comparisons, in float32, of range_start + the element's free index (row-major over
    // the free dimensions) with the partition's bounds.
    let start = op.range_start as f32;
    let inside: Vec<bool> = (0..n)
        .map(|i| {
            let (p, j) = (i / free.max(1), i % free.max(1));
            let index = start + j as f32;
            op.comp_op0.apply(index, bound0[p], false) != 0.0
                && op.comp_op1.apply(index, bound1[p], false) != 0.0
        })
        .collect();
    let read: Vec<bool> =
        (0..n).map(|i| inside[i] && active.as_ref().is_none_or(|a| a[i])).collect();
    let on_true = mem.load_ap(&op.on_true_tile, Some(&read), "on_true_tile")?;
    let on_false = op.on_false_value as f32;
    let values: Vec<f32> = (0..n).map(|i| if inside[i] { on_true[i] } else { on_false }).collect();
    mem.store(op.dst.t, &dst, &values);
    let folds = partition_folds(&values, &dst, partitions, op.reduce_op)?;
    let result = accumulate(mem, op.reduce_cmd, op.reduce_op, None, &folds)?;
    store_accumulator(mem, op.reduce_res.as_ref(), result, false)
}

fn local_gather(mem: &mut Memory<'_>, op: &LocalGatherOp) -> Result<()> {
    let partitions = op.src_buffer.ap[0][1] as usize;
    let src_offsets = mem.offsets(&op.src_buffer, None, Oob::Error, "src_buffer")?;
    let src_free = src_offsets.len() / partitions;
    let index_offsets = mem.offsets(&op.index, None, Oob::Error, "index")?;
    let mut index = zeroed::<f32>(index_offsets.len())?;
    mem.load(op.index.t, &index_offsets, &mut index)?;
    let index_free = index.len() / partitions;
    let per = op.num_elem_per_idx as usize;
    let valid = op.num_valid_indices.map_or(16 * index_free, |v| v as usize);
    let dst_offsets = mem.offsets(&op.dst, None, Oob::Error, "dst")?;
    let mut from = zeroed::<usize>(dst_offsets.len())?;
    for core in 0..partitions / 16 {
        // The core's indices, its 16 partitions flattened partition first: index k is
        // partition k % 16, element k / 16 of the core's slice.
        for k in 0..valid {
            let (lane, element) = (k % 16, k / 16);
            let start = index[(core * 16 + lane) * index_free + element] as usize;
            for p in core * 16..core * 16 + 16 {
                for e in 0..per {
                    let source = start + e;
                    if source >= src_free {
                        // The page leaves an index outside the partition undefined.
                        return Err(RunErrorKind::InvalidValue {
                            operand: "index".into(),
                            message: format!(
                                "element {k} of core {core}'s indices is {start}, so element \
                                 {e} of its run is {source}, past the {src_free} elements of \
                                 each partition of src_buffer"
                            ),
                        });
                    }
                    from[p * valid * per + k * per + e] = src_offsets[p * src_free + source];
                }
            }
        }
    }
    mem.copy_bits(op.dst.t, &dst_offsets, op.src_buffer.t, &from)
}

fn nc_stream_shuffle(mem: &mut Memory<'_>, op: &NcStreamShuffleOp, mask: &[Pred]) -> Result<()> {
    let (mut dst, _) = dst_and_mask(mem, &op.dst, mask)?;
    let src = mem.offsets(&op.src, None, Oob::Error, "src")?;
    let dst_partitions = op.dst.ap[0][1] as usize;
    let free = dst.len().checked_div(dst_partitions).unwrap_or(0);
    let mut from = vec![SKIP; dst.len()];
    for p in 0..dst_partitions {
        let entry = op.shuffle_mask[p % 32];
        for j in 0..free {
            if entry == 255 {
                dst[p * free + j] = SKIP;
            } else {
                // Validated: the source partition is one of src's.
                let source = p / 32 * 32 + entry as usize;
                from[p * free + j] = src[source * free + j];
            }
        }
    }
    // Every source element is read before any is written, so `dst` may be `src`.
    mem.copy_bits(op.dst.t, &dst, op.src.t, &from)
}

fn sequence_bounds(mem: &mut Memory<'_>, op: &SequenceBoundsOp) -> Result<()> {
    let ids = mem.load_ap(&op.segment_ids, None, "segment_ids")?;
    let n = ids.len();
    if let Some((i, &id)) =
        ids.iter().enumerate().find(|(_, id)| !(**id >= 0.0 && id.fract() == 0.0))
    {
        return Err(RunErrorKind::InvalidValue {
            operand: "segment_ids".into(),
            message: format!("element {i} is {id}, expected a non-negative integer"),
        });
    }
    // A segment is a run of equal nonzero ids: each element gets the run's first index and
    // one past its last; padding (id 0) gets n and -1.
    let mut out = zeroed::<f32>(2 * n)?;
    let mut run_start = 0;
    for i in 0..n {
        if i > 0 && ids[i] != ids[i - 1] {
            run_start = i;
        }
        out[i] = if ids[i] == 0.0 { n as f32 } else { run_start as f32 };
    }
    let mut run_end = n;
    for i in (0..n).rev() {
        if i + 1 < n && ids[i] != ids[i + 1] {
            run_end = i + 1;
        }
        out[n + i] = if ids[i] == 0.0 { -1.0 } else { run_end as f32 };
    }
    store_all(mem, &op.dst, &out)
}

fn dropout(mem: &mut Memory<'_>, op: &DropoutOp, mask: &[Pred]) -> Result<()> {
    let (dst, active) = dst_and_mask(mem, &op.dst, mask)?;
    let n = dst.len();
    let mut x = mem.load_ap(&op.data, active.as_deref(), "data")?;
    let prob = load_operand(mem, &op.prob, active.as_deref(), n, "prob")?;
    // One draw per element, masked ones included; an element is dropped when its uniform
    // [0, 1) draw is below the probability (so 0 keeps every element and 1 drops every one).
    for (x, &prob) in x.iter_mut().zip(&prob) {
        if mem.random.next_unit() < prob {
            *x = 0.0;
        }
    }
    mem.store(op.dst.t, &dst, &x);
    Ok(())
}

fn rng(mem: &mut Memory<'_>, op: &RngOp, mask: &[Pred]) -> Result<()> {
    let (dst, _) = dst_and_mask(mem, &op.dst, mask)?;
    let mut bits = zeroed::<u32>(dst.len())?;
    for value in bits.iter_mut() {
        *value = mem.random.next_u32();
    }
    mem.store_low_bits(op.dst.t, &dst, &bits);
    Ok(())
}

fn rand2(mem: &mut Memory<'_>, op: &Rand2Op, mask: &[Pred]) -> Result<()> {
    let (dst, active) = dst_and_mask(mem, &op.dst, mask)?;
    let n = dst.len();
    let low = load_operand(mem, &op.min, active.as_deref(), n, "min")?;
    let high = load_operand(mem, &op.max, active.as_deref(), n, "max")?;
    let mut values = zeroed::<f32>(n)?;
    for (i, value) in values.iter_mut().enumerate() {
        let unit = mem.random.next_unit();
        if dst[i] == SKIP {
            continue;
        }
        // NaN bounds fail the comparison too.
        if low[i].partial_cmp(&high[i]) != Some(std::cmp::Ordering::Less) {
            return Err(RunErrorKind::InvalidValue {
                operand: "min, max".into(),
                message: format!(
                    "element {:?} has min {} and max {}, expected min < max",
                    crate::memory::unravel(i, &op.dst.shape()),
                    low[i],
                    high[i]
                ),
            });
        }
        *value = low[i] + (high[i] - low[i]) * unit;
    }
    mem.store(op.dst.t, &dst, &values);
    Ok(())
}

fn exponential(mem: &mut Memory<'_>, op: &ExponentialOp, mask: &[Pred]) -> Result<()> {
    let (dst, active) = dst_and_mask(mem, &op.dst, mask)?;
    let n = dst.len();
    let partitions = op.dst.ap[0][1] as usize;
    let mut x = mem.load_ap(&op.src, active.as_deref(), "src")?;
    let max_value = match &op.max_value {
        Some(max_value) => load_per_partition(mem, max_value, partitions, "max_value")?,
        None => vec![0.0; partitions],
    };
    let groups = partition_groups(n, partitions);
    for (x, &p) in x.iter_mut().zip(&groups) {
        *x = (*x - max_value[p]).exp();
    }
    mem.store(op.dst.t, &dst, &x);
    let init = match &op.reduce_init {
        Some(init) => Some(load_per_partition(mem, init, partitions, "reduce_init")?),
        None => None,
    };
    let folds = partition_folds(&x, &dst, partitions, AluOp::Add)?;
    let values = accumulate(mem, op.reduce_cmd, AluOp::Add, init.as_deref(), &folds)?;
    store_accumulator(mem, op.reduce_res.as_ref(), values, false)
}
