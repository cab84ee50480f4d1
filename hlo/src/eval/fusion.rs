//! Fusion of elementwise chains: a compile-time pass over a computation's plan, and the kernel
//! that runs a fused group in one pass over its output.
//!
//! Design choices:
//! - A group is a set of elementwise instructions (unary, binary, compare, select, clamp,
//!   convert, reshape) whose element types are f32, a narrow float or pred, with one root; every
//!   other member's users are members too, so only the root's value is ever made. The pass walks
//!   candidates from the highest plan index down, so when an operand is considered all its users
//!   have been decided.
//! - Operands from outside the group are read through an index map: contiguous, one scalar for
//!   every element, or a strided view for a broadcast or transpose of an outside value. A
//!   broadcast or transpose that every user reads as a view is never materialised.
//! - Values are computed in f32 over chunks of [`CHUNK`] elements in small scratch buffers (pred
//!   as 0 or 1); a member whose type is a narrow float rounds its chunk to that type, so the
//!   results are bit for bit those of the unfused instructions, which XLA on CPU also rounds one
//!   by one. Narrow-float operands are decoded chunk by chunk, never as a whole-array copy.
//! - Instructions absorbed into a group stay in the plan as [`super::plan::Op::Absorbed`],
//!   with their own work, so the work budget charges what the unfused instructions would have
//!   been charged, in the same order; they make no value.
//! - A large group splits its output over the cores (the kernel pool, `par`), each part with its
//!   own scratch.
//! - A reduce (`add`, `max` or `min` recognised as one binary op, over f32 or a narrow float)
//!   whose reduced dimensions are the minor ones, and whose operand is an elementwise value only
//!   it reads, becomes the root of that operand's group: the group is computed a few whole runs
//!   at a time into scratch and each run is folded by `reduce::fold_run_f32`, the fold the
//!   unfused reduce uses for such a run, so the result is the same bits and the operand is
//!   never materialised (softmax's `sum(exp(x - max))`, layer norm's `sum((x - mean)^2)`).

use super::elementwise;
use super::error::Fail;
use super::math;
use super::plan::fused::{Buffers, FusedPlan, FusedReduce, Input, Kernel, Node, Read};
use super::plan::{Instr, Op, Reducer};
use super::scalar::{Binary, Float, Unary};
use super::shape::Shape;
use super::tensor::{BufferPool, Data, Tensor, try_alloc};
use crate::dtype::{ElementType, SmallFloat};

/// Elements per chunk: small enough for a group's scratch buffers to stay in L1/L2.
const CHUNK: usize = 1024;

/// Groups smaller than this many elements are left to the unfused kernels (scalar computations
/// such as reducers and comparators, and tiny arrays where the setup would dominate).
const MIN_ELEMS: usize = 64;

/// Outputs of at least this many elements are split over the cores.
const PARALLEL_ELEMS: usize = 1 << 16;

/// A fused reduce's runs are at most this long, so that its scratch (a whole run per buffer)
/// stays small; a longer reduce reads its operand materialised.
const MAX_FUSED_RUN: usize = 1 << 14;

impl Buffers {
    /// Assigns buffers to the values of `nodes` over `inputs`, the root's value kept to the end.
    fn assign(inputs: &[Input], nodes: &[Node], root: usize) -> Buffers {
        let n_inputs = inputs.len();
        let values = n_inputs + nodes.len();
        // The last node that reads each value (the root's is past every node).
        let mut last_read = vec![0usize; values];
        for (j, node) in nodes.iter().enumerate() {
            for &a in &node.args {
                last_read[a] = last_read[a].max(j);
            }
        }
        if let Some(last) = last_read.get_mut(root) {
            *last = usize::MAX;
        }
        // Whether every reader of input `i` takes one element for a chunk of them.
        let read_as_one = |i: usize| {
            i != root
                && nodes.iter().all(|node| {
                    !node.args.contains(&i)
                        || matches!(
                            node.kernel,
                            Kernel::Binary(_) | Kernel::Compare { total_order: false, .. }
                        )
                })
        };
        let scalar =
            inputs.iter().enumerate().map(|(i, input)| input.read == Read::Splat && read_as_one(i));
        let uniform = inputs.iter().enumerate().map(|(i, input)| {
            matches!(&input.read, Read::Strided { strides, .. } if strides.last() == Some(&0))
                && read_as_one(i)
        });
        let (scalar, uniform) = (scalar.collect(), uniform.collect());
        let mut of: Vec<usize> = (0..n_inputs).collect();
        let mut count = n_inputs;
        let mut free: Vec<usize> = Vec::new();
        // Node values whose buffers go back to `free` after node `j`: (j, buffer).
        let mut held: Vec<(usize, usize)> = Vec::new();
        for (j, _) in nodes.iter().enumerate() {
            let buffer = free.pop().unwrap_or_else(|| {
                count += 1;
                count - 1
            });
            of.push(buffer);
            // A value no node reads (and not the root) is dead at once.
            held.push((last_read[n_inputs + j].max(j), buffer));
            // Buffers whose value was last read by this node are free for the next one; this
            // node's own is not given to an argument of it, since it was taken before.
            held.retain(|&(last, buffer)| {
                let done = last <= j;
                if done {
                    free.push(buffer);
                }
                !done
            });
        }
        Buffers { of, count, scalar, uniform }
    }
}

fn supported(ty: ElementType) -> bool {
    ty == ElementType::F32 || ty == ElementType::Pred || ty.small_float().is_some()
}

fn array_of(shape: &Shape) -> Option<(ElementType, usize)> {
    match shape {
        Shape::Array(a) => Some((a.ty, a.dims.iter().product())),
        _ => None,
    }
}

/// Whether instruction `k` can be a member: an elementwise op over supported types.
fn elementwise(instrs: &[Instr], k: usize) -> bool {
    let instr = &instrs[k];
    let Some((ty, _)) = array_of(&instr.shape) else { return false };
    let operands_ok = instr
        .operands
        .iter()
        .all(|&o| array_of(&instrs[o].shape).is_some_and(|(t, _)| supported(t)));
    let op_ok = match &instr.op {
        Op::Unary(op) => match op {
            Unary::Not => ty == ElementType::Pred,
            Unary::Popcnt | Unary::Clz => false,
            Unary::IsFinite => true,
            _ => ty != ElementType::Pred,
        },
        Op::Binary(op) => {
            if ty == ElementType::Pred {
                matches!(
                    op,
                    Binary::Add
                        | Binary::Max
                        | Binary::Or
                        | Binary::Mul
                        | Binary::Min
                        | Binary::And
                        | Binary::Xor
                )
            } else {
                !matches!(
                    op,
                    Binary::And
                        | Binary::Or
                        | Binary::Xor
                        | Binary::Shl
                        | Binary::ShrLogical
                        | Binary::ShrArithmetic
                )
            }
        }
        Op::Compare { .. } | Op::Select | Op::Clamp | Op::Convert(_) | Op::Reshape => true,
        _ => false,
    };
    op_ok && supported(ty) && operands_ok
}

/// Whether instruction `k` can be read as a view of its operand.
fn view_of(instrs: &[Instr], k: usize) -> Option<(usize, Read)> {
    let instr = &instrs[k];
    let Shape::Array(out) = &instr.shape else { return None };
    if !supported(out.ty) {
        return None;
    }
    let source = *instr.operands.first()?;
    let Shape::Array(input) = &instrs[source].shape else { return None };
    let in_strides = super::tensor::strides(&input.dims);
    let read = match &instr.op {
        Op::Broadcast(mapping) => {
            let mut strides = vec![0usize; out.dims.len()];
            for (i, &j) in mapping.iter().enumerate() {
                if input.dims[i] != 1 {
                    *strides.get_mut(j)? = in_strides[i];
                }
            }
            Read::Strided { dims: out.dims.clone(), strides }
        }
        Op::Transpose(permutation) => Read::Strided {
            dims: out.dims.clone(),
            strides: permutation
                .iter()
                .map(|&p| in_strides.get(p).copied())
                .collect::<Option<_>>()?,
        },
        Op::Reshape => Read::Contiguous,
        _ => return None,
    };
    Some((source, simplify(read)))
}

/// Whether instruction `k` is a transpose that `shape_ops::transpose` copies tile by tile.
fn tiled_transpose(instrs: &[Instr], k: usize) -> bool {
    let Op::Transpose(permutation) = &instrs[k].op else { return false };
    let Some(&source) = instrs[k].operands.first() else { return false };
    let Shape::Array(input) = &instrs[source].shape else { return false };
    super::shape_ops::matrix_batch(&input.dims, permutation).is_some()
}

/// A strided read in its fewest dimensions: dimensions of size 1 dropped (their index is always
/// 0) and neighbours merged where the outer stride is the inner one times the inner size; then
/// one row-major dimension is a contiguous read and all-zero strides are a splat. The strided
/// loop walks its innermost dimension in runs, so a broadcast ending in a dimension of size 1
/// (softmax's `[4,4,128] -> [4,4,128,1]`) read one element per run, with the index arithmetic of
/// a run for each: 2048 elements took 25 µs.
fn simplify(read: Read) -> Read {
    let Read::Strided { dims, strides } = read else { return read };
    let mut merged: Vec<(usize, usize)> = Vec::new();
    for (&dim, &stride) in dims.iter().zip(&strides).filter(|&(&dim, _)| dim != 1) {
        match merged.last_mut() {
            Some(outer) if stride.checked_mul(dim) == Some(outer.1) => {
                *outer = (outer.0 * dim, stride);
            }
            _ => merged.push((dim, stride)),
        }
    }
    match merged[..] {
        _ if merged.iter().all(|&(_, stride)| stride == 0) => Read::Splat,
        [(_, 1)] => Read::Contiguous,
        _ => Read::Strided {
            dims: merged.iter().map(|&(dim, _)| dim).collect(),
            strides: merged.iter().map(|&(_, stride)| stride).collect(),
        },
    }
}

/// Fuses the elementwise chains of one computation's plan in place (before last uses are
/// computed). `root` is the computation's root, whose value must stay.
/// `reducer_of` gives the recognised reducer of a computation by plan index.
pub(crate) fn fuse(
    instrs: &mut [Instr],
    root: usize,
    reducer_of: &dyn Fn(usize) -> Option<Reducer>,
) {
    let count = instrs.len();
    let mut users: Vec<Vec<usize>> = vec![Vec::new(); count];
    for (k, instr) in instrs.iter().enumerate() {
        for &o in &instr.operands {
            users[o].push(k);
        }
    }
    let mut member_of: Vec<Option<usize>> = vec![None; count];
    // Per view instruction: how many operand uses read it as a view.
    let mut view_uses = vec![0usize; count];
    // Values a group reads directly (its sources). A source read through a view is not among
    // the users of the value, so without this a later group could absorb it (its only user, the
    // view, becoming that group's root) and leave the first group nothing to read.
    let mut read_by_group = vec![false; count];
    let mut plans: Vec<(usize, Vec<usize>, FusedPlan)> = Vec::new();
    for k in (0..count).rev() {
        if member_of[k].is_some() {
            continue;
        }
        if let Some((operand, reduce)) = reduce_of_group(instrs, &users, root, k, reducer_of)
            && !read_by_group[operand]
            && let Some((_, n)) = array_of(&instrs[operand].shape)
            && let Some((mut plan, members, mut sources, views)) = build_group(
                instrs,
                &users,
                &|o| member_of[o].is_some() || read_by_group[o],
                root,
                operand,
                n,
                true,
            )
        {
            // The init value is the last operand; the group's root is a member like the others.
            sources.push(instrs[k].operands[1]);
            plan.reduce = Some(FusedReduce { init: sources.len() - 1, ..reduce });
            for &m in &members {
                member_of[m] = Some(k);
            }
            for v in views {
                view_uses[v] += 1;
            }
            for &s in &sources {
                read_by_group[s] = true;
            }
            plans.push((k, sources, plan));
            continue;
        }
        if !elementwise(instrs, k) {
            continue;
        }
        let Some((_, n)) = array_of(&instrs[k].shape) else { continue };
        if n < MIN_ELEMS {
            continue;
        }
        if let Some((plan, members, sources, views)) = build_group(
            instrs,
            &users,
            &|o| member_of[o].is_some() || read_by_group[o],
            root,
            k,
            n,
            false,
        ) {
            for &m in &members {
                member_of[m] = Some(k);
            }
            for v in views {
                view_uses[v] += 1;
            }
            for &s in &sources {
                read_by_group[s] = true;
            }
            plans.push((k, sources, plan));
        }
    }
    for (k, sources, plan) in plans {
        instrs[k].op = Op::Fused(Box::new(plan));
        instrs[k].operands = sources;
    }
    for k in 0..count {
        if member_of[k].is_some_and(|r| r != k) {
            instrs[k].op = Op::Absorbed;
            instrs[k].operands.clear();
        }
    }
    for k in 0..count {
        if view_uses[k] > 0 && view_uses[k] == users[k].len() && k != root && !read_by_group[k] {
            instrs[k].op = Op::Absorbed;
            instrs[k].operands.clear();
        }
    }
}

type Group = (FusedPlan, Vec<usize>, Vec<usize>, Vec<usize>);

/// Whether instruction `k` is a reduce that can fold the group of its operand: returns the
/// operand and the reduce (its `init` still to be set).
fn reduce_of_group(
    instrs: &[Instr],
    users: &[Vec<usize>],
    root: usize,
    k: usize,
    reducer_of: &dyn Fn(usize) -> Option<Reducer>,
) -> Option<(usize, FusedReduce)> {
    let Op::Reduce { computation, dims } = &instrs[k].op else { return None };
    let &[operand, _init] = instrs[k].operands.as_slice() else { return None };
    let Some(Reducer::Binary(op)) = reducer_of(*computation) else { return None };
    if !matches!(op, Binary::Add | Binary::Max | Binary::Min) {
        return None;
    }
    let Shape::Array(input) = &instrs[operand].shape else { return None };
    if input.ty != ElementType::F32 && input.ty.small_float().is_none() {
        return None;
    }
    // The reduced dimensions are the minor ones, in order: each result folds a consecutive run,
    // as the unfused reduce then does without transposing.
    let rank = input.dims.len();
    let first = rank.checked_sub(dims.len())?;
    if dims.iter().enumerate().any(|(i, &d)| d != first + i) {
        return None;
    }
    let run: usize = input.dims[first..].iter().product();
    let n: usize = input.dims.iter().product();
    if run == 0 || run > MAX_FUSED_RUN || n < MIN_ELEMS {
        return None;
    }
    let only_reader = users[operand].iter().all(|&u| u == k);
    if operand == root || !only_reader || !elementwise(instrs, operand) {
        return None;
    }
    Some((operand, FusedReduce { op, run, groups: n / run, init: 0 }))
}

/// Grows the group rooted at `k`: returns the plan, its members, its outside sources (the fused
/// instruction's operands) and the view instructions it reads through. A value `taken` (by an
/// earlier group) is not absorbed. Unless `always`, a group that would save nothing (one plain
/// instruction) is refused.
fn build_group(
    instrs: &[Instr],
    users: &[Vec<usize>],
    taken: &dyn Fn(usize) -> bool,
    root: usize,
    k: usize,
    n: usize,
    always: bool,
) -> Option<Group> {
    let mut in_group = std::collections::BTreeSet::new();
    in_group.insert(k);
    // Candidates by descending plan index: all users of a candidate come after it in the plan,
    // so they have been decided when it is taken.
    let mut candidates: std::collections::BTreeSet<usize> =
        instrs[k].operands.iter().copied().collect();
    let mut leaves = std::collections::BTreeSet::new();
    while let Some(o) = candidates.pop_last() {
        let absorbable = o != root
            && !taken(o)
            && elementwise(instrs, o)
            && array_of(&instrs[o].shape).is_some_and(|(_, m)| m == n)
            && users[o].iter().all(|u| in_group.contains(u));
        if absorbable {
            in_group.insert(o);
            for &p in &instrs[o].operands {
                if !in_group.contains(&p) {
                    candidates.insert(p);
                }
            }
        } else {
            leaves.insert(o);
        }
    }
    // A leaf that is also a member cannot happen: a member's users are all members.
    let members: Vec<usize> = in_group.iter().copied().collect();
    let mut sources: Vec<usize> = Vec::new();
    let mut inputs: Vec<Input> = Vec::new();
    let mut views = Vec::new();
    let mut buffer_of: std::collections::BTreeMap<usize, usize> = Default::default();
    let mut any_view = false;
    // Whether every view is a transpose the tiled kernel copies (see below).
    let mut only_tiled_views = true;
    for &leaf in &leaves {
        let (_, leaf_n) = array_of(&instrs[leaf].shape)?;
        let (source, read) = match view_of(instrs, leaf) {
            Some((source, read)) if leaf != root && !in_group.contains(&source) => {
                // Counted once per operand slot that reads it, as `users` counts them.
                let slots: usize = members
                    .iter()
                    .map(|&m| instrs[m].operands.iter().filter(|&&o| o == leaf).count())
                    .sum();
                views.extend(std::iter::repeat_n(leaf, slots));
                any_view = true;
                only_tiled_views &= tiled_transpose(instrs, leaf);
                (source, read)
            }
            _ => (leaf, Read::Contiguous),
        };
        // A scalar operand of select or clamp is read for every element.
        let read = match leaf_n {
            _ if leaf_n == n => read,
            1 => Read::Splat,
            _ => return None,
        };
        let operand = match sources.iter().position(|&s| s == source) {
            Some(p) => p,
            None => {
                sources.push(source);
                sources.len() - 1
            }
        };
        buffer_of.insert(leaf, inputs.len());
        inputs.push(Input { operand, read });
    }
    let mut nodes: Vec<Node> = Vec::new();
    let mut narrow = false;
    for &m in &members {
        let instr = &instrs[m];
        let (ty, _) = array_of(&instr.shape)?;
        let args: Vec<usize> =
            instr.operands.iter().map(|o| buffer_of.get(o).copied()).collect::<Option<_>>()?;
        let operand_ty = instr.operands.first().and_then(|&o| array_of(&instrs[o].shape));
        let round = ty.small_float();
        narrow |= round.is_some()
            || instr.operands.iter().any(|&o| {
                array_of(&instrs[o].shape).is_some_and(|(t, _)| t.small_float().is_some())
            });
        let pred = ty == ElementType::Pred;
        let kernel = match &instr.op {
            Op::Unary(Unary::IsFinite) => Kernel::IsFinite,
            Op::Unary(Unary::Not) => Kernel::NotPred,
            Op::Unary(op) => Kernel::Unary(*op),
            Op::Binary(op) if pred => Kernel::BinaryPred(*op),
            Op::Binary(op) => Kernel::Binary(*op),
            Op::Compare { direction, total_order } => {
                Kernel::Compare { direction: *direction, total_order: *total_order }
            }
            Op::Select => Kernel::Select,
            Op::Clamp if pred => Kernel::ClampPred,
            Op::Clamp => Kernel::Clamp,
            Op::Convert(_) if pred => Kernel::NonZero,
            Op::Convert(_) | Op::Reshape => {
                // The same values: an alias of the argument's buffer, unless a rounding (or a
                // pred's 0/1 read as a float, which needs none) is due.
                let from = operand_ty.map(|(t, _)| t);
                if from == Some(ty) || round.is_none() {
                    buffer_of.insert(m, *args.first()?);
                    continue;
                }
                Kernel::Copy
            }
            _ => return None,
        };
        // A select copies values, which are of its type already: no rounding, so a copied NaN
        // keeps its payload, as the unfused select copies bits.
        let round = match kernel {
            Kernel::IsFinite
            | Kernel::NotPred
            | Kernel::Compare { .. }
            | Kernel::NonZero
            | Kernel::Select => None,
            _ => round,
        };
        buffer_of.insert(m, inputs.len() + nodes.len());
        nodes.push(Node { kernel, args, round });
    }
    let worth = members.len() >= 2 || any_view || narrow;
    // A group that computes nothing only copies its input; when that input is a transpose the
    // tiled kernel copies (attention's head merge before a reshape), the strided read would
    // walk the source a row apart for every element, and the transpose itself is faster.
    let tiled_copy = nodes.is_empty() && any_view && only_tiled_views;
    let root_buffer = *buffer_of.get(&k)?;
    let (out_ty, _) = array_of(&instrs[k].shape)?;
    // Nor is a group whose root is its input as it is (reshapes of a narrow value): unfused, a
    // reshape keeps its operand's storage, where the group would decode and encode every element.
    let same_value = nodes.is_empty()
        && !any_view
        && inputs.get(root_buffer).is_some_and(|input| {
            array_of(&instrs[sources[input.operand]].shape).is_some_and(|(ty, _)| ty == out_ty)
        });
    if (!worth || tiled_copy || same_value) && !always {
        return None;
    }
    let buffers = Buffers::assign(&inputs, &nodes, root_buffer);
    let plan =
        FusedPlan { n_elems: n, inputs, nodes, root: root_buffer, buffers, out_ty, reduce: None };
    Some((plan, members, sources, views))
}

// ---------------------------------------------------------------------------------------------
// Running a fused group.

/// The output being written, one variant per carrier.
enum Out<'a> {
    F32(&'a mut [f32]),
    U16(&'a mut [u16], SmallFloat),
    U8(&'a mut [u8], SmallFloat),
    Pred(&'a mut [bool]),
}

impl<'a> Out<'a> {
    fn split_at(self, mid: usize) -> (Out<'a>, Out<'a>) {
        match self {
            Out::F32(v) => {
                let (a, b) = v.split_at_mut(mid);
                (Out::F32(a), Out::F32(b))
            }
            Out::U16(v, f) => {
                let (a, b) = v.split_at_mut(mid);
                (Out::U16(a, f), Out::U16(b, f))
            }
            Out::U8(v, f) => {
                let (a, b) = v.split_at_mut(mid);
                (Out::U8(a, f), Out::U8(b, f))
            }
            Out::Pred(v) => {
                let (a, b) = v.split_at_mut(mid);
                (Out::Pred(a), Out::Pred(b))
            }
        }
    }
}

impl FusedPlan {
    /// Runs the group over its outside operands (the fused instruction's operands, in order).
    /// A large output takes its storage from `pool` when a dead value of its type and size left
    /// some there, so it does not fault in fresh pages on every run.
    pub(crate) fn run(&self, operands: &[&Tensor], pool: &BufferPool) -> Result<Data, Fail> {
        let n = self.n_elems;
        for input in &self.inputs {
            let source = operands
                .get(input.operand)
                .ok_or_else(|| Fail::Internal("fused operand missing".into()))?;
            let needed = match &input.read {
                Read::Contiguous => n,
                Read::Splat => 1.min(n),
                Read::Strided { dims, strides } => {
                    dims.iter().zip(strides).map(|(&d, &s)| d.saturating_sub(1) * s).sum::<usize>()
                        + usize::from(n > 0)
                }
            };
            if source.data.len() < needed || !supported(source.data.ty()) {
                return Err(Fail::Internal("fused operand does not fit its read".into()));
            }
        }
        if let Some(reduce) = &self.reduce {
            return self.run_reduce(reduce, operands);
        }
        let mut result = output(self.out_ty, n, pool)?;
        let out = match &mut result {
            Data::F32(v) => Out::F32(v),
            Data::Pred(v) => Out::Pred(v),
            Data::F16(v) => Out::U16(v, SmallFloat::F16),
            Data::Bf16(v) => Out::U16(v, SmallFloat::Bf16),
            Data::F8e5m2(v) => Out::U8(v, SmallFloat::F8e5m2),
            Data::F8e4m3fn(v) => Out::U8(v, SmallFloat::F8e4m3fn),
            Data::F8e4m3(v) => Out::U8(v, SmallFloat::F8e4m3),
            _ => return Err(Fail::Internal("fused output type".into())),
        };
        let threads = if n >= PARALLEL_ELEMS { super::par::cores().min(n / CHUNK) } else { 1 };
        if threads <= 1 {
            self.run_range(operands, 0, out)?;
        } else {
            let per = super::par::per_part(n, threads, CHUNK).next_multiple_of(CHUNK);
            let mut parts = Vec::with_capacity(n.div_ceil(per));
            let mut rest = out;
            let mut start = 0;
            while start + per < n {
                let (head, tail) = rest.split_at(per);
                parts.push((start, head));
                rest = tail;
                start += per;
            }
            parts.push((start, rest));
            super::par::try_each(parts, |(start, part)| self.run_range(operands, start, part))?;
        }
        Ok(result)
    }

    /// Computes output elements `start ..` into `out`, chunk by chunk.
    fn run_range(&self, operands: &[&Tensor], start: usize, mut out: Out<'_>) -> Result<(), Fail> {
        let len = match &out {
            Out::F32(v) => v.len(),
            Out::U16(v, _) => v.len(),
            Out::U8(v, _) => v.len(),
            Out::Pred(v) => v.len(),
        };
        // Buffers of a chunk, or of the whole range when it is shorter: a small group (a while
        // loop's body over 256 elements) zeroed four times the scratch it used, every call.
        let width = self.chunk().min(len);
        let n_buffers = self.buffers.count;
        let mut scratch: Vec<f32> = try_alloc(n_buffers * width)?;
        scratch.resize(n_buffers * width, 0.0);
        let arch = super::simd::arch();
        // An f32 result whose root is a node is computed where it goes: copying it there from
        // scratch was one more pass over every element of the group.
        let direct = self.root_is_last_node();
        let mut places = Vec::with_capacity(self.inputs.len());
        let mut done = 0;
        while done < len {
            let m = width.min(len - done);
            let chunk = Chunk { width, start: start + done, m, first: done == 0 };
            match &mut out {
                Out::F32(v) if direct => {
                    let root_out = Some(&mut v[done..done + m]);
                    self.compute(operands, &mut scratch, chunk, &mut places, root_out);
                }
                _ => {
                    let root = self.compute(operands, &mut scratch, chunk, &mut places, None);
                    write(&mut out, done, root, arch);
                }
            }
            done += m;
        }
        Ok(())
    }

    /// The elements of a chunk: [`CHUNK`], or a shorter row of a broadcast operand that divides
    /// it ([`ROW_CHUNK_LEAST`] elements at least), so that every chunk reads that operand's
    /// elements where they lie ([`run_in_source`]) instead of copying them. A chunk starts at a
    /// multiple of its width in every part, since parts start at multiples of [`CHUNK`].
    fn chunk(&self) -> usize {
        let rows = self.inputs.iter().filter_map(|input| match &input.read {
            Read::Strided { dims, strides } if strides.last() == Some(&1) => dims.last().copied(),
            _ => None,
        });
        rows.filter(|&row| (ROW_CHUNK_LEAST..=CHUNK).contains(&row) && CHUNK.is_multiple_of(row))
            .min()
            .unwrap_or(CHUNK)
    }

    /// Whether the root is the group's last node (as it is whenever it is a node: every other
    /// member's users are members), so no node reads it and it can be computed in place.
    fn root_is_last_node(&self) -> bool {
        !self.nodes.is_empty() && self.root + 1 == self.inputs.len() + self.nodes.len()
    }

    /// Computes the group's elements `chunk.start .. chunk.start + chunk.m` in `scratch`
    /// (buffers of `chunk.width` elements each) and returns the root's; or, given `root_out`
    /// (`m` elements, only when [`FusedPlan::root_is_last_node`]), writes the root there and
    /// returns nothing. `places` is storage for where each input lies, kept between chunks.
    ///
    /// Inputs are read into their scratch buffers, except that f32 operands whose chunk lies in
    /// one run of their source are read where they lie, and a splat is filled only on a range's
    /// `first` chunk (the longest: later chunks are as long or shorter, and nothing writes an
    /// input's buffer). A splat, or a broadcast whose chunk is one element repeated, that only
    /// binary and compare nodes read is one element for the whole chunk ([`Buffers::uniform`]).
    fn compute<'s>(
        &self,
        operands: &[&'s Tensor],
        scratch: &'s mut [f32],
        Chunk { width, start, m, first }: Chunk,
        places: &mut Vec<Place>,
        mut root_out: Option<&mut [f32]>,
    ) -> &'s [f32] {
        debug_assert!(root_out.is_none() || self.root_is_last_node());
        let arch = super::simd::arch();
        let buffers = &self.buffers;
        places.clear();
        for (i, input) in self.inputs.iter().enumerate() {
            let source = &operands[input.operand].data;
            // Where the chunk's elements start in the source, and their stride there (0: one
            // element repeated), when they are one run of it.
            let lies = match &input.read {
                Read::Contiguous => Some((start, 1)),
                Read::Splat => None,
                Read::Strided { dims, strides } => lies_in_source(dims, strides, start, m),
            };
            let one = buffers.scalar.get(i) == Some(&true)
                || (buffers.uniform.get(i) == Some(&true) && matches!(lies, Some((_, 0))));
            let len = if one { 1.min(m) } else { m };
            let place = match (source, lies) {
                (Data::F32(_), Some((at, stride))) if stride == 1 || one => Place::Source(at, len),
                _ => Place::Buffer(len),
            };
            if place == Place::Buffer(len) && (input.read != Read::Splat || first) {
                let at = buffers.of[i] * width;
                read(&mut scratch[at..at + len], source, &input.read, start, arch);
            }
            places.push(place);
        }
        // The f32 elements of input `i` where they lie.
        let in_source = |i: usize, at: usize, len: usize| -> &'s [f32] {
            match &operands[self.inputs[i].operand].data {
                Data::F32(v) => &v[at..at + len],
                _ => &[],
            }
        };
        let n_inputs = self.inputs.len();
        for (j, node) in self.nodes.iter().enumerate() {
            let dst = buffers.of[n_inputs + j];
            let (before, rest) = scratch.split_at_mut(dst * width);
            let (out, after) = rest.split_at_mut(width);
            // At most three arguments (select, clamp): no allocation per node and chunk.
            let mut args: [&[f32]; 3] = [&[]; 3];
            for (slot, &a) in args.iter_mut().zip(&node.args) {
                let len = match places.get(a) {
                    Some(&Place::Source(at, len)) => {
                        *slot = in_source(a, at, len);
                        continue;
                    }
                    Some(&Place::Buffer(len)) => len,
                    None => m,
                };
                let b = buffers.of[a];
                // An argument's buffer is never the node's own (see `Buffers::assign`).
                let held =
                    if b < dst { &before[b * width..] } else { &after[(b - dst - 1) * width..] };
                *slot = &held[..len];
            }
            let out = match root_out.as_deref_mut() {
                Some(root_out) if n_inputs + j == self.root => root_out,
                _ => &mut out[..m],
            };
            run_node(node, &args[..node.args.len().min(3)], out, arch);
        }
        if root_out.is_some() {
            return &[];
        }
        match places.get(self.root) {
            Some(&Place::Source(at, len)) => in_source(self.root, at, len),
            _ => {
                let at = buffers.of[self.root] * width;
                &scratch[at..at + m]
            }
        }
    }

    /// Runs a group with a reduce: each output folds one run of the group's value.
    fn run_reduce(&self, reduce: &FusedReduce, operands: &[&Tensor]) -> Result<Data, Fail> {
        let init = operands
            .get(reduce.init)
            .filter(|t| t.data.len() != 0 && t.data.ty() == self.out_ty)
            .ok_or_else(|| Fail::Internal("fused reduce init missing".into()))?;
        let mut init_value = [0f32];
        read(&mut init_value, &init.data, &Read::Splat, 0, super::simd::arch());
        let init_value = init_value[0];
        let groups = reduce.groups;
        let mut values: Vec<f32> = try_alloc(groups)?;
        values.resize(groups, 0.0);
        let threads =
            if self.n_elems >= PARALLEL_ELEMS { super::par::cores().min(groups) } else { 1 };
        if threads <= 1 {
            self.reduce_range(reduce, operands, init_value, 0, &mut values)?;
        } else {
            let per = super::par::per_part(groups, threads, 1);
            super::par::try_each(values.chunks_mut(per).enumerate(), |(i, part)| {
                self.reduce_range(reduce, operands, init_value, i * per, part)
            })?;
        }
        // The folded values are of the reduce's type already: encoding them is exact.
        fn encode<T>(values: &[f32], f: impl Fn(f32) -> T) -> Result<Vec<T>, Fail> {
            let mut out = try_alloc(values.len())?;
            out.extend(values.iter().map(|&x| f(x)));
            Ok(out)
        }
        let Some(format) = self.out_ty.small_float() else { return Ok(Data::F32(values)) };
        let bits16 = |x: f32| format.encode_f32(x) as u16;
        let bits8 = |x: f32| format.encode_f32(x) as u8;
        Ok(match format {
            SmallFloat::Bf16 => Data::Bf16(encode(&values, bits16)?),
            SmallFloat::F16 => Data::F16(encode(&values, bits16)?),
            SmallFloat::F8e5m2 => Data::F8e5m2(encode(&values, bits8)?),
            SmallFloat::F8e4m3fn => Data::F8e4m3fn(encode(&values, bits8)?),
            SmallFloat::F8e4m3 => Data::F8e4m3(encode(&values, bits8)?),
        })
    }

    /// Folds results `first ..` into `out`, a few whole runs per pass.
    fn reduce_range(
        &self,
        reduce: &FusedReduce,
        operands: &[&Tensor],
        init: f32,
        first: usize,
        out: &mut [f32],
    ) -> Result<(), Fail> {
        let run = reduce.run;
        let rows = (CHUNK / run).max(1);
        let width = rows * run;
        let n_buffers = self.buffers.count;
        let mut scratch: Vec<f32> = try_alloc(n_buffers * width)?;
        scratch.resize(n_buffers * width, 0.0);
        let format = self.out_ty.small_float();
        let mut places = Vec::with_capacity(self.inputs.len());
        let mut done = 0;
        while done < out.len() {
            let r = rows.min(out.len() - done);
            let chunk = Chunk { width, start: (first + done) * run, m: r * run, first: done == 0 };
            let root = self.compute(operands, &mut scratch, chunk, &mut places, None);
            for (o, values) in out[done..done + r].iter_mut().zip(root.chunks_exact(run)) {
                *o = super::reduce::fold_run_f32(reduce.op, values, init, format);
            }
            done += r;
        }
        Ok(())
    }
}

/// Storage for `n` elements of `ty`, every one of which the group then writes: a pooled
/// buffer's when one fits, its stale elements kept (only a tail past their length is zeroed),
/// else fresh zeros.
fn output(ty: ElementType, n: usize, pool: &BufferPool) -> Result<Data, Fail> {
    let Some(mut data) = pool.take(ty, n) else { return Data::zeros(ty, n) };
    match &mut data {
        Data::F32(v) => v.resize(n, 0.0),
        Data::Pred(v) => v.resize(n, false),
        Data::F16(v) | Data::Bf16(v) => v.resize(n, 0),
        Data::F8e5m2(v) | Data::F8e4m3fn(v) | Data::F8e4m3(v) => v.resize(n, 0),
        _ => return Data::zeros(ty, n),
    }
    Ok(data)
}

/// The shortest chunk [`FusedPlan::chunk`] cuts to a broadcast operand's rows: shorter ones cost
/// more in per-chunk calls than their copies.
const ROW_CHUNK_LEAST: usize = 128;

/// Where output elements `start .. start + m` of a strided read lie in its source, when they
/// are consecutive there (within one run of the innermost dimension, of stride 1): a chunk of a
/// broadcast bias is then read where it lies. The transformer's GELU over 512 Ki elements, its
/// bias a row of 1024 copied into every chunk, took 800 µs on one core.
#[cfg(test)]
fn run_in_source(dims: &[usize], strides: &[usize], start: usize, m: usize) -> Option<usize> {
    lies_in_source(dims, strides, start, m).filter(|&(_, stride)| stride == 1).map(|(at, _)| at)
}

/// [`run_in_source`] for an innermost stride of 1 or 0: where output element `start` lies in
/// the source, with that stride, when elements `start .. start + m` are within one run of the
/// innermost dimension (for a stride of 0, one element repeated).
fn lies_in_source(
    dims: &[usize],
    strides: &[usize],
    start: usize,
    m: usize,
) -> Option<(usize, usize)> {
    let (&inner, &inner_stride) = (dims.last()?, strides.last()?);
    if inner_stride > 1 || inner == 0 || start % inner + m > inner {
        return None;
    }
    let (mut rest, mut at) = (start, 0usize);
    for (&dim, &stride) in dims.iter().zip(strides).rev() {
        at = at.checked_add((rest % dim.max(1)).checked_mul(stride)?)?;
        rest /= dim.max(1);
    }
    Some((at, inner_stride))
}

/// A chunk of a range: its buffers' `width`, its first element and length, and whether it is
/// the range's first.
#[derive(Clone, Copy)]
struct Chunk {
    width: usize,
    start: usize,
    m: usize,
    first: bool,
}

/// Where a chunk finds an input's elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    /// In its scratch buffer, this many (one for a value read as one element).
    Buffer(usize),
    /// In the operand's own f32 elements: from this position, this many.
    Source(usize, usize),
}

/// Fills `dst` with the source elements for output indices `start ..`, as f32.
fn read(dst: &mut [f32], source: &Data, how: &Read, start: usize, arch: pulp::Arch) {
    match source {
        Data::F32(v) => arch.dispatch(ReadLoop { dst, src: v, how, start, decode: |x| x }),
        Data::Bf16(v) => {
            let decode = |b: u16| f32::from_bits(u32::from(b) << 16);
            arch.dispatch(ReadLoop { dst, src: v, how, start, decode });
        }
        Data::F16(v) => {
            arch.dispatch(|| read_as(dst, v, how, start, math::f16_to_f32));
        }
        Data::F8e5m2(v) | Data::F8e4m3fn(v) | Data::F8e4m3(v) => {
            let format = source.ty().small_float().unwrap_or(SmallFloat::F8e5m2);
            let mut table = [0f32; 256];
            for (bits, slot) in table.iter_mut().enumerate() {
                *slot = format.decode(bits as u32);
            }
            read_as(dst, v, how, start, |b| table[usize::from(b)]);
        }
        Data::Pred(v) => read_as(dst, v, how, start, |p| if p { 1.0 } else { 0.0 }),
        _ => dst.fill(f32::NAN),
    }
}

/// An operand's read, as a `pulp::WithSimd` so that [`read_as`] is inlined into the function
/// compiled for the CPU's vectors, with `decode` turning each element into an f32: called
/// directly, an f32 read's fills and copies were compiled for baseline SSE2, and as a closure
/// given to `dispatch` a bf16 read was left out of line and widened four elements at a time.
struct ReadLoop<'a, T, F> {
    dst: &'a mut [f32],
    src: &'a [T],
    how: &'a Read,
    start: usize,
    decode: F,
}

impl<T: Copy, F: Fn(T) -> f32> pulp::WithSimd for ReadLoop<'_, T, F> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) {
        let ReadLoop { dst, src, how, start, decode } = self;
        read_as(dst, src, how, start, decode);
    }
}

#[inline(always)]
fn read_as<T: Copy>(dst: &mut [f32], src: &[T], how: &Read, start: usize, f: impl Fn(T) -> f32) {
    match how {
        Read::Contiguous => {
            let len = dst.len();
            for (d, &s) in dst.iter_mut().zip(&src[start..start + len]) {
                *d = f(s);
            }
        }
        Read::Splat => dst.fill(f(src[0])),
        Read::Strided { dims, strides } => {
            let rank = dims.len();
            // A chunk's position in the read's dimensions, on the stack for the usual ranks
            // (a read runs once per chunk and input: no allocation each time).
            let mut on_stack = [0usize; 8];
            let mut on_heap = Vec::new();
            let index: &mut [usize] = if rank <= on_stack.len() {
                &mut on_stack[..rank]
            } else {
                on_heap.resize(rank, 0);
                &mut on_heap
            };
            let mut rest = start;
            for k in (0..rank).rev() {
                index[k] = rest % dims[k].max(1);
                rest /= dims[k].max(1);
            }
            let inner = dims[rank - 1];
            let inner_stride = strides[rank - 1];
            let mut pos = 0;
            while pos < dst.len() {
                let offset: usize = index.iter().zip(strides).map(|(&i, &s)| i * s).sum();
                let run = (inner - index[rank - 1]).min(dst.len() - pos);
                let out = &mut dst[pos..pos + run];
                match inner_stride {
                    0 => out.fill(f(src[offset])),
                    1 => {
                        for (d, &s) in out.iter_mut().zip(&src[offset..offset + run]) {
                            *d = f(s);
                        }
                    }
                    _ => {
                        for (d, &s) in
                            out.iter_mut().zip(src[offset..].iter().step_by(inner_stride))
                        {
                            *d = f(s);
                        }
                    }
                }
                pos += run;
                index[rank - 1] = 0;
                for k in (0..rank - 1).rev() {
                    index[k] += 1;
                    if index[k] < dims[k] {
                        break;
                    }
                    index[k] = 0;
                }
            }
        }
    }
}

fn write(out: &mut Out<'_>, at: usize, values: &[f32], arch: pulp::Arch) {
    let m = values.len();
    match out {
        Out::F32(v) => v[at..at + m].copy_from_slice(values),
        Out::Pred(v) => {
            for (d, &x) in v[at..at + m].iter_mut().zip(values) {
                *d = x != 0.0;
            }
        }
        Out::U16(v, format) => {
            let format = *format;
            let dst = &mut v[at..at + m];
            arch.dispatch(|| match format {
                SmallFloat::Bf16 => {
                    for (d, &x) in dst.iter_mut().zip(values) {
                        *d = math::f32_to_bf16_keeping_nan(x);
                    }
                }
                _ => {
                    for (d, &x) in dst.iter_mut().zip(values) {
                        *d = math::f32_to_f16_keeping_nan(x);
                    }
                }
            });
        }
        Out::U8(v, format) => {
            for (d, &x) in v[at..at + m].iter_mut().zip(values) {
                *d = format.encode_f32(x) as u8;
            }
        }
    }
}

/// Rounds a chunk to a narrow float's values, kept in f32.
fn round_chunk(values: &mut [f32], format: SmallFloat, arch: pulp::Arch) {
    match format {
        SmallFloat::Bf16 => arch.dispatch(|| {
            for x in values.iter_mut() {
                *x = math::bf16_rounded(*x);
            }
        }),
        SmallFloat::F16 => arch.dispatch(|| {
            for x in values.iter_mut() {
                *x = math::f16_to_f32(math::f32_to_f16(*x));
            }
        }),
        _ => {
            for x in values.iter_mut() {
                *x = format.decode(format.encode_f32(*x));
            }
        }
    }
}

fn run_node(node: &Node, args: &[&[f32]], out: &mut [f32], arch: pulp::Arch) {
    let one = |b: bool| if b { 1.0 } else { 0.0 };
    // Unary and binary nodes of bf16 round in their own pass over the chunk: a bf16 GELU's
    // dozen nodes each read and wrote their chunk a second time to round it.
    let merged = node.round == Some(SmallFloat::Bf16)
        && matches!(node.kernel, Kernel::Unary(_) | Kernel::Binary(_));
    match node.kernel {
        Kernel::Unary(op) => elementwise::unary_slice(op, args[0], out, merged, arch),
        Kernel::Binary(op) => {
            elementwise::binary_slice(op, (args[0], args[1]), out, merged, arch);
        }
        Kernel::IsFinite => {
            for (o, &x) in out.iter_mut().zip(args[0]) {
                *o = one(x.is_finite());
            }
        }
        Kernel::NotPred => {
            for (o, &x) in out.iter_mut().zip(args[0]) {
                *o = one(x == 0.0);
            }
        }
        Kernel::BinaryPred(op) => {
            for ((o, &x), &y) in out.iter_mut().zip(args[0]).zip(args[1]) {
                *o = one(elementwise::pred_binary(op, x != 0.0, y != 0.0));
            }
        }
        Kernel::Compare { direction, total_order: false } => {
            elementwise::compare_slice(direction, (args[0], args[1]), out, arch);
        }
        Kernel::Compare { direction, total_order: true } => {
            for ((o, &x), &y) in out.iter_mut().zip(args[0]).zip(args[1]) {
                *o = one(direction.test(Some(x.total_key().cmp(&y.total_key()))));
            }
        }
        Kernel::Select => arch.dispatch(|| {
            for (((o, &p), &x), &y) in out.iter_mut().zip(args[0]).zip(args[1]).zip(args[2]) {
                *o = if p != 0.0 { x } else { y };
            }
        }),
        Kernel::Clamp => arch.dispatch(|| {
            for (((o, &lo), &x), &hi) in out.iter_mut().zip(args[0]).zip(args[1]).zip(args[2]) {
                let lower = f32::binary(Binary::Max, lo, x);
                *o = f32::binary(Binary::Min, hi, lower);
            }
        }),
        Kernel::ClampPred => {
            for (((o, &lo), &x), &hi) in out.iter_mut().zip(args[0]).zip(args[1]).zip(args[2]) {
                *o = one(hi != 0.0 && (lo != 0.0 || x != 0.0));
            }
        }
        Kernel::Copy => out.copy_from_slice(args[0]),
        Kernel::NonZero => {
            for (o, &x) in out.iter_mut().zip(args[0]) {
                *o = one(x != 0.0);
            }
        }
    }
    if let Some(format) = node.round.filter(|_| !merged) {
        round_chunk(out, format, arch);
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Array, EvalError, EvalOptions, Program, Value};
    use super::*;
    use crate::eval::scalar::Direction;
    use crate::proto::PrimitiveType;

    fn compile(text: &str, options: &EvalOptions) -> Program {
        let module = crate::text::parse_module(text).expect("test module parses");
        Program::compile(&module, options).expect("test module compiles")
    }

    /// (fused roots, absorbed instructions) of the entry computation.
    fn fusion_counts(program: &Program) -> (usize, usize) {
        let instrs = &program.comps[program.entry].instrs;
        let fused = instrs.iter().filter(|i| matches!(i.op, Op::Fused(_))).count();
        let absorbed = instrs.iter().filter(|i| matches!(i.op, Op::Absorbed)).count();
        (fused, absorbed)
    }

    fn array_bytes(value: Value) -> Vec<u8> {
        match value {
            Value::Array(a) => a.bytes,
            Value::Tuple(_) => panic!("expected an array result"),
        }
    }

    fn u16s(bytes: &[u8]) -> Vec<u16> {
        bytes.chunks_exact(2).map(|b| u16::from_le_bytes([b[0], b[1]])).collect()
    }

    fn f32s(bytes: &[u8]) -> Vec<f32> {
        bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
    }

    const BF16_CHAIN: &str = r#"
HloModule chain
ENTRY main {
  x = bf16[300] parameter(0)
  c = bf16[] constant(1.0078125)
  b = bf16[300] broadcast(c), dimensions={}
  m = bf16[300] multiply(x, b)
  ROOT a = bf16[300] add(m, x)
}
"#;

    fn bf16_inputs() -> Vec<u16> {
        let f = SmallFloat::Bf16;
        (0..300).map(|i| f.encode(1.0 + f64::from(i) / 37.0 - 4.0) as u16).collect()
    }

    #[test]
    fn a_bf16_chain_is_one_pass_that_rounds_at_every_instruction() {
        let program = compile(BF16_CHAIN, &EvalOptions::default());
        // The add is the root; the multiply and the broadcast are absorbed.
        assert_eq!(fusion_counts(&program), (1, 2));
        let x = bf16_inputs();
        let bytes: Vec<u8> = x.iter().flat_map(|b| b.to_le_bytes()).collect();
        let arg = Array::new(PrimitiveType::Bf16, vec![300], bytes).expect("array");
        let got = u16s(&array_bytes(program.run(&[arg]).expect("runs")));
        // By hand: each instruction's f32 result rounded to bf16, as XLA on CPU does.
        let f = SmallFloat::Bf16;
        let value = |b: u16| f64::from(f.decode(u32::from(b)));
        let c = 1.0078125f64;
        let mut rounding_mattered = false;
        for (i, (&xi, &g)) in x.iter().zip(&got).enumerate() {
            let product = f.encode(f64::from((value(xi) as f32) * (c as f32)));
            let sum = (f.decode(product) + f.decode(u32::from(xi))) as f64;
            let want = f.encode(sum) as u16;
            assert_eq!(g, want, "element {i}");
            let once = f.encode(f64::from(f.decode(u32::from(xi)) * 1.0078125 + value(xi) as f32));
            rounding_mattered |= once as u16 != want;
        }
        assert!(rounding_mattered, "the inputs must tell rounding once from rounding twice");
    }

    /// An f16 value rounded from `v`, to nearest with ties to even, worked out by hand (not with
    /// the crate's encoder): 10 fraction bits, exponents from -14 (below, the spacing of the
    /// subnormals), and infinity from the first value that rounds past 65504.
    fn f16_rounded(v: f64) -> f64 {
        if v == 0.0 || !v.is_finite() {
            return v;
        }
        let exponent = (((v.abs().to_bits() >> 52) & 0x7ff) as i32 - 1023).max(-14);
        let spacing = 2f64.powi(exponent - 10);
        let q = (v.abs() / spacing).round_ties_even() * spacing;
        v.signum() * if q > 65504.0 { f64::INFINITY } else { q }
    }

    /// The bits of `v`, a finite value that f16 holds exactly.
    fn f16_bits_of_exact(v: f64) -> u16 {
        assert_eq!(f16_rounded(v), v, "{v} is not an f16 value");
        let sign = if v.is_sign_negative() { 0x8000 } else { 0 };
        if v == 0.0 {
            return sign;
        }
        let exponent = ((v.abs().to_bits() >> 52) & 0x7ff) as i32 - 1023;
        assert!(exponent >= -14, "normal values only");
        let fraction = (v.abs() / 2f64.powi(exponent) - 1.0) * 1024.0;
        sign | (((exponent + 15) as u16) << 10) | fraction as u16
    }

    /// The value of f16 bits: sign, 5 exponent bits (bias 15), 10 fraction bits.
    fn f16_value(bits: u16) -> f64 {
        let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
        let exponent = i32::from((bits >> 10) & 0x1f);
        let fraction = f64::from(bits & 0x3ff);
        sign * match exponent {
            0 => fraction * 2f64.powi(-24),
            31 if fraction == 0.0 => f64::INFINITY,
            31 => f64::NAN,
            _ => (1024.0 + fraction) * 2f64.powi(exponent - 25),
        }
    }

    #[test]
    fn a_fused_f16_chain_rounds_to_f16_at_every_instruction() {
        let text = r#"
HloModule f16_chain
ENTRY main {
  x = f16[256] parameter(0)
  y = f16[256] parameter(1)
  m = f16[256] multiply(x, y)
  a = f16[256] add(m, x)
  ROOT t = f16[256] tanh(a)
}
"#;
        let program = compile(text, &EvalOptions::default());
        // The tanh is the root; the multiply and the add are absorbed.
        assert_eq!(fusion_counts(&program), (1, 2));
        // x in [-2, 2) by 1/64, y in [0.5, 1.5) by 1/256: f16 holds both exactly.
        let x: Vec<f64> = (0..256).map(|i| f64::from(i - 128) / 64.0).collect();
        let y: Vec<f64> = (0..256).map(|i| 0.5 + f64::from((i * 37) % 256) / 256.0).collect();
        let arg = |values: &[f64]| {
            let bytes = values.iter().flat_map(|&v| f16_bits_of_exact(v).to_le_bytes()).collect();
            Array::new(PrimitiveType::F16, vec![256], bytes).expect("array")
        };
        let got = u16s(&array_bytes(program.run(&[arg(&x), arg(&y)]).expect("runs")));
        // By hand: every instruction's result rounded to f16, as the unfused instructions and
        // XLA on CPU do; the product and sum of two f16 values are exact in f64 before rounding.
        for (i, (&xi, &yi)) in x.iter().zip(&y).enumerate() {
            let product = f16_rounded(xi * yi);
            let sum = f16_rounded(product + xi);
            let want = f16_rounded(sum.tanh());
            assert_eq!(f16_value(got[i]), want, "element {i}: x {xi}, y {yi}");
        }
    }

    #[test]
    fn no_instruction_of_nkipys_modules_reads_an_absorbed_value() {
        // nkipy's attention and decoder modules (tests/nkipy/README.md): a group read a copy of
        // a softmax as a view of the softmax, which a later group then absorbed.
        for (name, text) in [
            ("attention", include_str!("../../tests/nkipy/attention_dynamo.hlo")),
            ("llama decoder", include_str!("../../tests/nkipy/llama_decoder_dynamo.hlo")),
        ] {
            let program = compile(text, &EvalOptions::default());
            for comp in &program.comps {
                for instr in comp.instrs.iter().filter(|i| !matches!(i.op, Op::Absorbed)) {
                    for &o in &instr.operands {
                        let operand = &comp.instrs[o];
                        assert!(
                            !matches!(operand.op, Op::Absorbed),
                            "{name}: {} reads {}, which has no value",
                            instr.name,
                            operand.name
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn a_fused_group_is_charged_what_its_instructions_would_be() {
        // By hand: x 16, c 16, b 16 + 1 + 300, m 16 + 900, a 16 + 900: 2181 in all.
        let x = bf16_inputs();
        let bytes: Vec<u8> = x.iter().flat_map(|b| b.to_le_bytes()).collect();
        let arg = Array::new(PrimitiveType::Bf16, vec![300], bytes).expect("array");
        let exact = EvalOptions { work_budget: Some(2181), ..EvalOptions::default() };
        assert!(compile(BF16_CHAIN, &exact).run(std::slice::from_ref(&arg)).is_ok());
        let short = EvalOptions { work_budget: Some(2180), ..EvalOptions::default() };
        match compile(BF16_CHAIN, &short).run(&[arg]) {
            Err(EvalError::WorkBudget { instruction, budget: 2180, .. }) => {
                assert_eq!(instruction, "a")
            }
            other => panic!("expected the work budget at the add, got {other:?}"),
        }
        // One short of the multiply's share stops at the multiply, which is absorbed.
        let at_multiply = EvalOptions { work_budget: Some(1000), ..EvalOptions::default() };
        let arg = Array::new(
            PrimitiveType::Bf16,
            vec![300],
            x.iter().flat_map(|b| b.to_le_bytes()).collect(),
        )
        .expect("array");
        match compile(BF16_CHAIN, &at_multiply).run(&[arg]) {
            Err(EvalError::WorkBudget { instruction, .. }) => assert_eq!(instruction, "m"),
            other => panic!("expected the work budget at the multiply, got {other:?}"),
        }
    }

    /// Over three whole chunks and a tail: the f32 parameter is read where it lies, the bf16 one
    /// decoded chunk by chunk, and the splat filled once and read by every chunk. By hand:
    /// `x · 1.5 + h`, exact for these small values.
    #[test]
    fn splats_and_in_place_operands_serve_every_chunk() {
        let n = 3 * CHUNK + 5;
        let text = format!(
            "HloModule splat\nENTRY main {{\n  x = f32[{n}] parameter(0)\n  h = bf16[{n}] \
             parameter(1)\n  c = f32[] constant(1.5)\n  cb = f32[{n}] broadcast(c), \
             dimensions={{}}\n  hw = f32[{n}] convert(h)\n  m = f32[{n}] multiply(x, cb)\n  \
             ROOT a = f32[{n}] add(m, hw)\n}}\n"
        );
        let program = compile(&text, &EvalOptions::default());
        assert_eq!(fusion_counts(&program).0, 1, "one group");
        let x: Vec<f32> = (0..n).map(|i| (i % 37) as f32 - 18.0).collect();
        let h: Vec<f32> = (0..n).map(|i| (i % 11) as f32 * 0.25).collect();
        let h_bytes: Vec<u8> =
            h.iter().flat_map(|&v| (SmallFloat::Bf16.encode_f32(v) as u16).to_le_bytes()).collect();
        let args = [
            Array::from_f32(&[n as i64], &x),
            Array::new(PrimitiveType::Bf16, vec![n as i64], h_bytes).expect("array"),
        ];
        let got = f32s(&array_bytes(program.run(&args).expect("runs")));
        let want: Vec<f32> = x.iter().zip(&h).map(|(&x, &h)| x * 1.5 + h).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn a_strided_chunk_is_read_in_place_only_within_one_run_of_its_source() {
        // A bias row of 256 broadcast over rows: every chunk of a row is the row's own elements.
        assert_eq!(run_in_source(&[4, 256], &[0, 1], 512, 256), Some(0));
        assert_eq!(run_in_source(&[4, 256], &[0, 1], 300, 100), Some(44));
        assert_eq!(run_in_source(&[4, 256], &[0, 1], 200, 100), None, "crosses a row's end");
        assert_eq!(run_in_source(&[256, 4], &[1, 256], 0, 4), None, "the inner stride is not 1");
        // Outer strides count: [2, 3, 4] sliced out of [2, 5, 4] (rows 20 apart).
        // Element 13 is [1, 0, 1]: 20 + 1.
        assert_eq!(run_in_source(&[2, 3, 4], &[20, 4, 1], 13, 3), Some(21));
        assert_eq!(run_in_source(&[0], &[1], 0, 0), None);
    }

    /// Rows of 256 (chunks cut to them, each reading the bias where it lies) and of 384 (which
    /// do not divide a chunk, so the bias is copied), on one core and split over the cores: by
    /// hand, `2x + b[j]`, exact for these values.
    #[test]
    fn a_broadcast_row_serves_every_chunk_whether_read_in_place_or_copied() {
        for (rows, cols, chunk) in
            [(64, 256, 256), (512, 256, 256), (40, 384, CHUNK), (300, 384, CHUNK)]
        {
            let text = format!(
                "HloModule bias\nENTRY main {{\n  x = f32[{rows},{cols}] parameter(0)\n  b = f32[{cols}] \
                 parameter(1)\n  bb = f32[{rows},{cols}] broadcast(b), dimensions={{1}}\n  \
                 d = f32[{rows},{cols}] add(x, x)\n  ROOT r = f32[{rows},{cols}] add(d, bb)\n}}\n"
            );
            let program = compile(&text, &EvalOptions::default());
            let plans: Vec<&FusedPlan> =
                fused_plans(&program).into_iter().map(|(p, _)| p).collect();
            assert_eq!(plans.len(), 1, "one group for {rows}x{cols}");
            assert_eq!(plans[0].chunk(), chunk, "{rows}x{cols}");
            let x: Vec<f32> = (0..rows * cols).map(|i| ((i * 7) % 29) as f32 - 14.0).collect();
            let b: Vec<f32> = (0..cols).map(|j| j as f32 * 0.25).collect();
            let args = [
                Array::from_f32(&[rows as i64, cols as i64], &x),
                Array::from_f32(&[cols as i64], &b),
            ];
            let got = f32s(&array_bytes(program.run(&args).expect("runs")));
            let want: Vec<f32> = (0..rows * cols).map(|i| 2.0 * x[i] + b[i % cols]).collect();
            assert_eq!(got, want, "{rows}x{cols}");
        }
    }

    /// A layer norm's last pass: a per-row mean and scale broadcast along each row of 256 (the
    /// chunk), beside a row of weights. The per-row values are read as one element per chunk
    /// where only binary nodes read them, and copied out where another node reads them (the
    /// exponential), in f32 and in bf16; a chunk that spans rows (rows of 64 in chunks of
    /// 1024) reads every element. Small integers and halves keep every result exact.
    #[test]
    fn a_value_per_row_is_one_element_per_chunk_only_where_binary_nodes_read_it() {
        for (ty, rows, cols, also_exp) in [
            ("f32", 512, 256, false),
            ("f32", 512, 256, true),
            ("bf16", 512, 256, false),
            ("f32", 2048, 64, false),
        ] {
            let exp_of_mean = if also_exp {
                format!(
                    "  e = {ty}[{rows},{cols}] exponential(bm)\n  r = {ty}[{rows},{cols}] add(s3, e)\n"
                )
            } else {
                format!("  r = {ty}[{rows},{cols}] add(s3, s3)\n")
            };
            let text = format!(
                "HloModule ln\nENTRY main {{\n  x = {ty}[{rows},{cols}] parameter(0)\n  \
                 mu = {ty}[{rows}] parameter(1)\n  sc = {ty}[{rows}] parameter(2)\n  \
                 g = {ty}[{cols}] parameter(3)\n  \
                 bm = {ty}[{rows},{cols}] broadcast(mu), dimensions={{0}}\n  \
                 bs = {ty}[{rows},{cols}] broadcast(sc), dimensions={{0}}\n  \
                 bg = {ty}[{rows},{cols}] broadcast(g), dimensions={{1}}\n  \
                 s1 = {ty}[{rows},{cols}] subtract(x, bm)\n  s2 = {ty}[{rows},{cols}] multiply(s1, bs)\n  \
                 s3 = {ty}[{rows},{cols}] multiply(s2, bg)\n{exp_of_mean}  \
                 ROOT o = {ty}[{rows},{cols}] add(r, x)\n}}\n"
            );
            let program = compile(&text, &EvalOptions::default());
            let plans: Vec<&FusedPlan> =
                fused_plans(&program).into_iter().map(|(p, _)| p).collect();
            assert_eq!(plans.len(), 1, "one group: {text}");
            let uniform = plans[0].buffers.uniform.iter().filter(|&&u| u).count();
            assert_eq!(uniform, if also_exp { 1 } else { 2 }, "per-row values read as one: {text}");
            let x: Vec<f32> = (0..rows * cols).map(|i| ((i * 7) % 29) as f32 - 14.0).collect();
            let mu: Vec<f32> = (0..rows).map(|i| (i % 5) as f32 - 2.0).collect();
            let sc: Vec<f32> = (0..rows).map(|i| 0.5 * (1 + i % 3) as f32).collect();
            let g: Vec<f32> = (0..cols).map(|j| (j % 4) as f32).collect();
            let array = |dims: &[usize], v: &[f32]| {
                let dims: Vec<i64> = dims.iter().map(|&d| d as i64).collect();
                if ty == "bf16" {
                    let bytes = v.iter().flat_map(|x| ((x.to_bits() >> 16) as u16).to_le_bytes());
                    Array { ty: PrimitiveType::Bf16, dims, bytes: bytes.collect() }
                } else {
                    Array::from_f32(&dims, v)
                }
            };
            let args = [
                array(&[rows, cols], &x),
                array(&[rows], &mu),
                array(&[rows], &sc),
                array(&[cols], &g),
            ];
            let bytes = array_bytes(program.run(&args).expect("runs"));
            let got: Vec<f32> = if ty == "bf16" {
                u16s(&bytes).iter().map(|&b| f32::from_bits(u32::from(b) << 16)).collect()
            } else {
                f32s(&bytes)
            };
            let want: Vec<f32> = (0..rows * cols)
                .map(|i| {
                    let (row, col) = (i / cols, i % cols);
                    let s3 = (x[i] - mu[row]) * sc[row] * g[col];
                    let r = if also_exp { s3 + mu[row].exp() } else { s3 + s3 };
                    r + x[i]
                })
                .collect();
            if also_exp {
                // exp is not exact: within an f32 rounding of each sum.
                for (i, (a, b)) in got.iter().zip(&want).enumerate() {
                    assert!((a - b).abs() <= 1e-5 * b.abs().max(1.0), "{i}: {a} vs {b}");
                }
            } else {
                assert_eq!(got, want, "{ty} {rows}x{cols}");
            }
        }
    }

    #[test]
    fn transposes_and_broadcasts_are_read_as_views_over_both_cores() {
        // 512 × 256 = 131072 elements: above the size that splits the output over the cores.
        let text = r#"
HloModule views
ENTRY main {
  x = f32[512,256] parameter(0)
  y = f32[256,512] parameter(1)
  bias = f32[512] parameter(2)
  yt = f32[512,256] transpose(y), dimensions={1,0}
  bb = f32[512,256] broadcast(bias), dimensions={0}
  gt = pred[512,256] compare(x, yt), direction=GT
  s = f32[512,256] add(x, bb)
  n = f32[512,256] negate(yt)
  ROOT r = f32[512,256] select(gt, s, n)
}
"#;
        let program = compile(text, &EvalOptions::default());
        // One group: the select, compare, add and negate; the transpose and broadcast are views.
        assert_eq!(fusion_counts(&program), (1, 5));
        let (rows, cols) = (512usize, 256usize);
        let x: Vec<f32> = (0..rows * cols).map(|i| ((i * 7) % 23) as f32 - 11.0).collect();
        let y: Vec<f32> = (0..rows * cols).map(|i| ((i * 5) % 19) as f32 - 9.0).collect();
        let bias: Vec<f32> = (0..rows).map(|i| i as f32 * 0.5).collect();
        let args = [
            Array::from_f32(&[512, 256], &x),
            Array::from_f32(&[256, 512], &y),
            Array::from_f32(&[512], &bias),
        ];
        let got = f32s(&array_bytes(program.run(&args).expect("runs")));
        for i in 0..rows {
            for j in 0..cols {
                let xv = x[i * cols + j];
                let yv = y[j * rows + i];
                let want = if xv > yv { xv + bias[i] } else { -yv };
                assert_eq!(got[i * cols + j], want, "[{i},{j}]");
            }
        }
    }

    #[test]
    fn strided_reads_are_kept_in_their_fewest_dimensions() {
        let strided = |dims: &[usize], strides: &[usize]| Read::Strided {
            dims: dims.to_vec(),
            strides: strides.to_vec(),
        };
        // Softmax's broadcast of [4,4,128] into [4,4,128,1]: the unit dimension's stride is 0.
        assert_eq!(simplify(strided(&[4, 4, 128, 1], &[512, 128, 1, 0])), Read::Contiguous);
        // A bias along the rows of [4,128,256]: rows merged, the columns a splat run.
        assert_eq!(simplify(strided(&[4, 128, 256], &[128, 1, 0])), strided(&[512, 256], &[1, 0]));
        // Zero strides merge; a transpose's strides do not.
        assert_eq!(simplify(strided(&[2, 3, 1], &[0, 0, 7])), Read::Splat);
        assert_eq!(simplify(strided(&[1, 1], &[5, 9])), Read::Splat);
        assert_eq!(
            simplify(strided(&[1, 64, 1, 32], &[0, 1, 3, 64])),
            strided(&[64, 32], &[1, 64])
        );
        // Merges only where the outer stride is the inner extent: [2,3] of a [2,4] source.
        assert_eq!(simplify(strided(&[2, 3], &[4, 1])), strided(&[2, 3], &[4, 1]));
    }

    #[test]
    fn a_broadcast_ending_in_a_unit_dimension_reads_its_source_as_it_lies() {
        let text = r#"
HloModule unit
ENTRY main {
  x = f32[4,4,128] parameter(0)
  c = f32[] constant(-inf)
  b = f32[4,4,128] broadcast(c), dimensions={}
  m = f32[4,4,128] maximum(x, b)
  r = f32[4,4,128,1] reshape(m)
  bb = f32[4,4,128,1] broadcast(r), dimensions={0,1,2,3}
  y = f32[4,4,128] reshape(bb)
  ROOT s = f32[4,4,128] add(y, y)
}
"#;
        let program = compile(text, &EvalOptions::default());
        // The broadcast is a view (no instruction makes it), read as its source lies.
        let plans = fused_plans(&program);
        assert!(!plans.is_empty());
        for (plan, _) in plans {
            assert!(
                plan.inputs.iter().all(|input| !matches!(input.read, Read::Strided { .. })),
                "{plan:?}"
            );
        }
        let x: Vec<f32> = (0..2048).map(|i| ((i * 7) % 23) as f32 - 11.0).collect();
        let got =
            f32s(&array_bytes(program.run(&[Array::from_f32(&[4, 4, 128], &x)]).expect("runs")));
        let want: Vec<f32> = x.iter().map(|&v| 2.0 * v).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn a_copy_of_a_head_merge_transpose_is_left_to_the_tiled_transpose() {
        // Attention's [b, h, d, s] → [b, s, h, d] then a reshape merging the heads: a group
        // would only copy through a strided read, so the transpose runs tiled and the reshape
        // keeps its buffer. Computing on the transposed values still reads it as a view.
        let run = |root: &str| {
            let text = format!(
                "HloModule heads\nENTRY main {{\n  x = f32[2,4,8,16] parameter(0)\n  \
                 t = f32[2,16,4,8] transpose(x), dimensions={{0,3,1,2}}\n  {root}\n}}\n"
            );
            let program = compile(&text, &EvalOptions::default());
            let x: Vec<f32> = (0..2 * 4 * 8 * 16).map(|i| i as f32).collect();
            let out = program.run(&[Array::from_f32(&[2, 4, 8, 16], &x)]).expect("runs");
            (fusion_counts(&program), f32s(&array_bytes(out)))
        };
        // By hand: out[b, s, h·8 + d] = x[b, h, d, s] = ((b·4 + h)·8 + d)·16 + s.
        let want = |sign: f32| -> Vec<f32> {
            let mut out = Vec::new();
            for b in 0..2 {
                for s in 0..16 {
                    for h in 0..4 {
                        for d in 0..8 {
                            out.push(sign * (((b * 4 + h) * 8 + d) * 16 + s) as f32);
                        }
                    }
                }
            }
            out
        };
        let (counts, got) = run("ROOT r = f32[2,16,32] reshape(t)");
        assert_eq!((counts, got), ((0, 0), want(1.0)));
        let (counts, got) = run("n = f32[2,16,4,8] negate(t)\n  ROOT r = f32[2,16,32] reshape(n)");
        assert_eq!((counts, got), ((1, 2), want(-1.0)));
    }

    #[test]
    fn converts_round_through_f16_and_keep_broadcasts_with_other_users() {
        // The broadcast also feeds the tuple, so it is materialised, and still read as a view.
        let text = r#"
HloModule convert
ENTRY main {
  x = f32[128] parameter(0)
  h = f16[128] convert(x)
  back = f32[128] convert(h)
  d = f32[128] subtract(x, back)
  one = f32[] constant(1)
  ones = f32[128] broadcast(one), dimensions={}
  e = f32[128] multiply(d, ones)
  ROOT t = (f32[128], f32[128]) tuple(e, ones)
}
"#;
        let program = compile(text, &EvalOptions::default());
        // The multiply is the root; the subtract and both converts are absorbed, not `ones`.
        assert_eq!(fusion_counts(&program), (1, 3));
        let x: Vec<f32> =
            (0..128).map(|i| 1.0 + i as f32 * 1.0e-3 + 70000.0 * (i / 127) as f32).collect();
        let out = program.run(&[Array::from_f32(&[128], &x)]).expect("runs");
        let Value::Tuple(items) = out else { panic!("expected a tuple") };
        let mut items = items.into_iter();
        let d = f32s(&array_bytes(items.next().expect("d")));
        let ones = f32s(&array_bytes(items.next().expect("ones")));
        let f = SmallFloat::F16;
        for (i, (&xi, &di)) in x.iter().zip(&d).enumerate() {
            let back = f.decode(f.encode(f64::from(xi)));
            let want = xi - back;
            assert!(want.to_bits() == di.to_bits() || (want.is_nan() && di.is_nan()), "{i}");
        }
        // The last input, 70001.127, is above f16's range: inf, and x - inf is -inf.
        assert_eq!(d[127], f32::NEG_INFINITY);
        assert!(ones.iter().all(|&v| v == 1.0));
    }

    /// Fused reduces in the entry computation.
    fn fused_reduces(program: &Program) -> usize {
        let instrs = &program.comps[program.entry].instrs;
        instrs.iter().filter(|i| matches!(&i.op, Op::Fused(plan) if plan.reduce.is_some())).count()
    }

    /// Bit patterns of a result's leaves, by leaf.
    fn leaves(value: Value) -> Vec<Vec<u8>> {
        match value {
            Value::Array(a) => vec![a.bytes],
            Value::Tuple(items) => items.into_iter().flat_map(leaves).collect(),
        }
    }

    /// A module whose two reduces fold the same chain `(x - broadcast(m))` through `body`
    /// (instructions over `{d}`, the last one named `{v}`, `{x}` standing for x's shape): the first reads a chain only it uses,
    /// so it is fused; the second's chain is also returned, so that one is materialised and
    /// the reduce is the unfused kernel. `ty` is the element type, `dims` x's dimensions, and
    /// the reduce folds the dimensions after the first.
    fn twin_reduces(ty: &str, dims: &[usize], reducer: &str, init: &str, body: &str) -> String {
        let shape = |d: &[usize]| {
            format!("{ty}[{}]", d.iter().map(usize::to_string).collect::<Vec<_>>().join(","))
        };
        let (x, m) = (shape(dims), shape(&dims[..1]));
        let reduced: Vec<String> = (1..dims.len()).map(|d| d.to_string()).collect();
        let reduced = reduced.join(",");
        let chain = |suffix: &str| {
            let text = body
                .replace("{d}", &format!("d{suffix}"))
                .replace("{v}", &format!("v{suffix}"))
                .replace("{x}", &x);
            format!(
                "  d{suffix} = {x} subtract(x, mb)\n{}",
                text.lines().map(|l| format!("  {l}\n")).collect::<String>()
            )
        };
        format!(
            "HloModule twins\n\nred {{\n  a = {ty}[] parameter(0)\n  b = {ty}[] parameter(1)\n  \
             ROOT r = {ty}[] {reducer}(a, b)\n}}\n\nENTRY main {{\n  x = {x} parameter(0)\n  \
             m = {m} parameter(1)\n  mb = {x} broadcast(m), dimensions={{0}}\n  \
             init = {ty}[] constant({init})\n{}  r1 = {m} reduce(v1, init), dimensions={{{reduced}}}, \
             to_apply=red\n{}  r2 = {m} reduce(v2, init), dimensions={{{reduced}}}, to_apply=red\n  \
             ROOT t = ({m}, {m}, {x}) tuple(r1, r2, v2)\n}}\n",
            chain("1"),
            chain("2"),
        )
    }

    /// Runs a twin module on f32 inputs (converted to `ty`'s bits) and checks that both reduces
    /// give the same bits, and that exactly one of them was fused.
    fn check_twins(text: &str, ty: PrimitiveType, dims: &[usize], x: &[f32], m: &[f32]) {
        let program = compile(text, &EvalOptions::default());
        assert_eq!(fused_reduces(&program), 1, "{text}");
        let encode = |values: &[f32], shape: &[usize]| -> Array {
            let dims: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
            let bytes: Vec<u8> = match ty {
                PrimitiveType::F32 => values.iter().flat_map(|v| v.to_le_bytes()).collect(),
                PrimitiveType::Bf16 => values
                    .iter()
                    .flat_map(|&v| (SmallFloat::Bf16.encode_f32(v) as u16).to_le_bytes())
                    .collect(),
                _ => values
                    .iter()
                    .flat_map(|&v| (SmallFloat::F16.encode_f32(v) as u16).to_le_bytes())
                    .collect(),
            };
            Array::new(ty, dims, bytes).expect("array")
        };
        let args = [encode(x, dims), encode(m, &dims[..1])];
        let out = leaves(program.run(&args).expect("runs"));
        assert_eq!(out[0], out[1], "the fused reduce differs from the unfused one:\n{text}");
    }

    fn inputs(dims: &[usize], nan_at: Option<usize>) -> (Vec<f32>, Vec<f32>) {
        let n: usize = dims.iter().product();
        let mut x: Vec<f32> =
            (0..n).map(|i| ((i * 7919) % 1009) as f32 / 97.0 - 5.0 + 1.0e-3 * i as f32).collect();
        if let Some(i) = nan_at {
            x[i] = f32::NAN;
        }
        let m: Vec<f32> = (0..dims[0]).map(|g| g as f32 * 0.25 - 1.0).collect();
        (x, m)
    }

    #[test]
    fn a_sum_of_squares_folds_its_group_as_the_unfused_reduce_does() {
        // Runs of 256 (the lanes), 100 (lanes with a tail), 63 and 1 (in order), one row and
        // many, and a 2 × 3 × 40 input folded over two dimensions.
        for dims in [&[4, 256][..], &[3, 100], &[7, 63], &[70, 1], &[1, 300], &[2, 3, 40]] {
            let text = twin_reduces("f32", dims, "add", "0", "{v} = {x} multiply({d}, {d})");
            let (x, m) = inputs(dims, None);
            check_twins(&text, PrimitiveType::F32, dims, &x, &m);
        }
    }

    #[test]
    fn max_and_min_of_a_fused_exp_keep_nan_and_match_the_unfused_reduce() {
        for (reducer, init) in [("maximum", "-inf"), ("minimum", "inf")] {
            for nan_at in [None, Some(5), Some(299)] {
                let dims = [3usize, 100];
                let text = twin_reduces("f32", &dims, reducer, init, "{v} = {x} exponential({d})");
                let (x, m) = inputs(&dims, nan_at);
                check_twins(&text, PrimitiveType::F32, &dims, &x, &m);
            }
        }
    }

    #[test]
    fn a_bf16_sum_rounds_after_every_step_as_the_unfused_reduce_does() {
        let dims = [5usize, 128];
        let text = twin_reduces("bf16", &dims, "add", "0", "{v} = {x} multiply({d}, {d})");
        let (x, m) = inputs(&dims, None);
        check_twins(&text, PrimitiveType::Bf16, &dims, &x, &m);
        // By hand for the first row: each step rounded to bf16, from the bf16 inputs.
        let program = compile(&text, &EvalOptions::default());
        let f = SmallFloat::Bf16;
        let round = |v: f32| f.decode(f.encode_f32(v));
        let args = [
            Array::new(
                PrimitiveType::Bf16,
                vec![5, 128],
                x.iter().flat_map(|&v| (f.encode_f32(v) as u16).to_le_bytes()).collect(),
            )
            .expect("array"),
            Array::new(
                PrimitiveType::Bf16,
                vec![5],
                m.iter().flat_map(|&v| (f.encode_f32(v) as u16).to_le_bytes()).collect(),
            )
            .expect("array"),
        ];
        let got = u16s(&leaves(program.run(&args).expect("runs"))[0]);
        let mut acc = 0f32;
        for &xi in &x[..128] {
            let d = round(round(xi) - round(m[0]));
            acc = round(acc + round(d * d));
        }
        assert_eq!(got[0], f.encode_f32(acc) as u16);
    }

    #[test]
    fn a_convert_into_an_f32_sum_is_read_from_the_narrow_operand() {
        // Softmax in bf16: sum(convert(e)) where e has other users, so the group is the
        // convert alone; the fused reduce decodes e's bf16 values run by run.
        let text = r#"
HloModule convert_sum
add_f {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = bf16[6,200] parameter(0)
  e = bf16[6,200] exponential(x)
  c = f32[6,200] convert(e)
  zero = f32[] constant(0)
  r = f32[6] reduce(c, zero), dimensions={1}, to_apply=add_f
  ROOT t = (f32[6], bf16[6,200]) tuple(r, e)
}
"#;
        let program = compile(text, &EvalOptions::default());
        assert_eq!(fused_reduces(&program), 1);
        let f = SmallFloat::Bf16;
        let x: Vec<u16> =
            (0..1200).map(|i| f.encode_f32((i % 97) as f32 / 40.0 - 1.0) as u16).collect();
        let arg = Array::new(
            PrimitiveType::Bf16,
            vec![6, 200],
            x.iter().flat_map(|b| b.to_le_bytes()).collect(),
        )
        .expect("array");
        let out = leaves(program.run(&[arg]).expect("runs"));
        let sums = f32s(&out[0]);
        let e = u16s(&out[1]);
        // By hand: the lane order of the unfused f32 sum, over e's values.
        for (g, &sum) in sums.iter().enumerate() {
            let row: Vec<f32> =
                e[g * 200..(g + 1) * 200].iter().map(|&b| f.decode(u32::from(b))).collect();
            let want = super::super::reduce::fold_run_f32(Binary::Add, &row, 0.0, None);
            assert_eq!(sum.to_bits(), want.to_bits(), "row {g}");
            let plain: f32 = row.iter().sum();
            assert!((sum - plain).abs() <= 1e-4 * plain.abs(), "row {g}: {sum} vs {plain}");
        }
    }

    #[test]
    fn a_large_fused_reduce_splits_its_rows_over_the_cores() {
        // 600 × 128 = 76800 elements: above the size that splits over the cores.
        let dims = [600usize, 128];
        let text = twin_reduces("f32", &dims, "add", "0", "{v} = {x} multiply({d}, {d})");
        let (x, m) = inputs(&dims, None);
        check_twins(&text, PrimitiveType::F32, &dims, &x, &m);
    }

    #[test]
    fn reduces_that_cannot_fold_a_group_are_left_alone() {
        // Over the leading dimension (the unfused reduce folds columns), over a run longer than
        // the fused limit, and with a multiply reducer: none is fused, all still compute.
        let cases = [
            ("f32[4,64]", "f32[64]", "{0}", "add", "0", 4 * 64),
            ("f32[1,20000]", "f32[1]", "{1}", "add", "0", 20000),
            ("f32[4,64]", "f32[4]", "{1}", "multiply", "1", 4 * 64),
        ];
        for (x, r, dims, reducer, init, n) in cases {
            let text = format!(
                "HloModule left\nred {{\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  \
                 ROOT r = f32[] {reducer}(a, b)\n}}\nENTRY main {{\n  x = {x} parameter(0)\n  \
                 s = {x} multiply(x, x)\n  i = f32[] constant({init})\n  \
                 ROOT r = {r} reduce(s, i), dimensions={dims}, to_apply=red\n}}\n"
            );
            let program = compile(&text, &EvalOptions::default());
            assert_eq!(fused_reduces(&program), 0, "{text}");
            let dims: Vec<i64> = x[4..x.len() - 1].split(',').map(|d| d.parse().unwrap()).collect();
            let values: Vec<f32> = (0..n).map(|i| 1.0 + (i % 3) as f32 * 1e-3).collect();
            assert!(program.run(&[Array::from_f32(&dims, &values)]).is_ok(), "{text}");
        }
    }

    /// The fused groups of the entry computation, each with its operands.
    fn fused_plans(program: &Program) -> Vec<(&FusedPlan, &[usize])> {
        let instrs = &program.comps[program.entry].instrs;
        instrs
            .iter()
            .filter_map(|i| match &i.op {
                Op::Fused(plan) => Some((&**plan, &i.operands[..])),
                _ => None,
            })
            .collect()
    }

    /// The one fused root of the entry computation: its plan and its operands' plan indices.
    fn only_plan(program: &Program) -> (FusedPlan, Vec<usize>) {
        let plans = fused_plans(program);
        assert_eq!(plans.len(), 1, "one fused group");
        let (plan, operands) = plans[0];
        (plan.clone(), operands.to_vec())
    }

    #[test]
    fn reshapes_of_a_narrow_value_are_not_a_group() {
        // Unfused, the reshapes keep their operand's storage; a group would decode and encode
        // every element. A convert to f32 after them is a group (it changes the values' type).
        let text = r#"
HloModule reshapes
ENTRY main {
  x = bf16[4,75] parameter(0)
  r = bf16[300] reshape(x)
  ROOT s = bf16[3,100] reshape(r)
}
"#;
        let program = compile(text, &EvalOptions::default());
        assert_eq!(fusion_counts(&program), (0, 0));
        let x = bf16_inputs();
        let bytes: Vec<u8> = x.iter().flat_map(|b| b.to_le_bytes()).collect();
        let arg = Array::new(PrimitiveType::Bf16, vec![4, 75], bytes.clone()).expect("array");
        assert_eq!(array_bytes(program.run(&[arg]).expect("runs")), bytes);
        let widened = text.replace(
            "ROOT s = bf16[3,100] reshape(r)",
            "s = bf16[3,100] reshape(r)\n  ROOT f = f32[3,100] convert(s)",
        );
        assert_eq!(fusion_counts(&compile(&widened, &EvalOptions::default())), (1, 2));
    }

    #[test]
    fn a_long_chain_reuses_dead_buffers_and_takes_splats_as_scalars() {
        // x is read first and last, so its value lives throughout; the constants are read by
        // binary ops on either side and by a clamp (which needs them as whole chunks).
        let n = 3 * CHUNK + 7;
        let text = format!(
            r#"
HloModule chain
ENTRY main {{
  x = f32[{n}] parameter(0)
  c1 = f32[] constant(0.5)
  c2 = f32[] constant(3)
  c6 = f32[] constant(6)
  z = f32[] constant(0)
  b1 = f32[{n}] broadcast(c1), dimensions={{}}
  b2 = f32[{n}] broadcast(c2), dimensions={{}}
  b6 = f32[{n}] broadcast(c6), dimensions={{}}
  bz = f32[{n}] broadcast(z), dimensions={{}}
  sq = f32[{n}] multiply(x, x)
  t = f32[{n}] multiply(sq, b1)
  u = f32[{n}] subtract(b2, t)
  v = f32[{n}] divide(u, b2)
  w = f32[{n}] add(b1, b2)
  y = f32[{n}] multiply(v, w)
  r = f32[{n}] clamp(bz, y, b6)
  ROOT out = f32[{n}] add(r, x)
}}
"#
        );
        let program = compile(&text, &EvalOptions::default());
        let (plan, _) = only_plan(&program);
        assert_eq!((plan.inputs.len(), plan.nodes.len()), (5, 8), "{plan:?}");
        // Eight node values in three buffers: no node writes a buffer one of its arguments is in.
        assert_eq!(plan.buffers.count, 5 + 3, "{plan:?}");
        for (j, node) in plan.nodes.iter().enumerate() {
            let own = plan.buffers.of[plan.inputs.len() + j];
            assert!(node.args.iter().all(|&a| plan.buffers.of[a] != own), "{plan:?}");
        }
        // 0.5 and 3 are read only by binary ops, 0 and 6 by the clamp.
        let scalars = plan.buffers.scalar.iter().filter(|&&s| s).count();
        assert_eq!(scalars, 2, "{plan:?}");
        let x: Vec<f32> = (0..n).map(|i| (i % 97) as f32 / 8.0 - 6.0).collect();
        let arg = Array::from_f32(&[n as i64], &x);
        let got = f32s(&array_bytes(program.run(&[arg]).expect("runs")));
        // By hand, one f32 operation per instruction.
        let want: Vec<f32> = x
            .iter()
            .map(|&x| {
                let v = (3.0 - x * x * 0.5) / 3.0;
                (v * (0.5f32 + 3.0)).clamp(0.0, 6.0) + x
            })
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn fused_compares_follow_the_ieee_order_with_a_scalar_on_either_side() {
        // NaN, signed zeros, infinities and equal pairs, with x and y on different periods so
        // that every pair meets; the constant 0 is read as one scalar by two of the compares.
        let special = [f32::NAN, -0.0, 0.0, 1.0, -1.0, f32::INFINITY, f32::NEG_INFINITY, 0.5];
        let n = CHUNK + 5;
        let x: Vec<f32> = (0..n).map(|i| special[i % 8]).collect();
        let y: Vec<f32> = (0..n).map(|i| special[(i / 3 + i) % 8]).collect();
        for (name, direction) in [
            ("EQ", Direction::Eq),
            ("NE", Direction::Ne),
            ("LT", Direction::Lt),
            ("LE", Direction::Le),
            ("GT", Direction::Gt),
            ("GE", Direction::Ge),
        ] {
            let text = format!(
                r#"
HloModule cmp
ENTRY main {{
  x = f32[{n}] parameter(0)
  y = f32[{n}] parameter(1)
  z = f32[] constant(0)
  bz = f32[{n}] broadcast(z), dimensions={{}}
  p = pred[{n}] compare(x, bz), direction={name}
  q = pred[{n}] compare(bz, y), direction={name}
  r = pred[{n}] compare(x, y), direction={name}
  a = f32[{n}] select(p, x, y)
  b = f32[{n}] select(q, a, y)
  ROOT out = f32[{n}] select(r, b, x)
}}
"#
            );
            let program = compile(&text, &EvalOptions::default());
            let (plan, _) = only_plan(&program);
            assert_eq!(plan.buffers.scalar.iter().filter(|&&s| s).count(), 1, "{plan:?}");
            let args = [Array::from_f32(&[n as i64], &x), Array::from_f32(&[n as i64], &y)];
            let got = f32s(&array_bytes(program.run(&args).expect("runs")));
            // By hand: `compare` is the direction's test of the partial order.
            let holds = |a: f32, b: f32| direction.test(a.partial_cmp(&b));
            for i in 0..n {
                let a = if holds(x[i], 0.0) { x[i] } else { y[i] };
                let b = if holds(0.0, y[i]) { a } else { y[i] };
                let want = if holds(x[i], y[i]) { b } else { x[i] };
                assert_eq!(got[i].to_bits(), want.to_bits(), "{name} at {i}: {} {}", x[i], y[i]);
            }
        }
    }

    #[test]
    fn a_fused_output_in_pooled_storage_is_what_fresh_storage_gives() {
        // 2^19 elements: 1 MiB in bf16, large enough for the pool. The pooled buffer held NaNs
        // before; every element must be overwritten (or zeroed) again.
        let n = 1usize << 19;
        for ty in ["f32", "bf16"] {
            let text = format!(
                "HloModule pooled\nENTRY main {{\n  x = {ty}[{n}] parameter(0)\n  \
                 c = {ty}[] constant(0.5)\n  b = {ty}[{n}] broadcast(c), dimensions={{}}\n  \
                 m = {ty}[{n}] multiply(x, b)\n  ROOT a = {ty}[{n}] add(m, x)\n}}\n"
            );
            let program = compile(&text, &EvalOptions::default());
            let (plan, sources) = only_plan(&program);
            let values: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.25 - 100.0).collect();
            let x = Tensor { dims: vec![n], data: Data::F32(values.clone()) };
            let x = match ty {
                "f32" => x,
                _ => {
                    let f = SmallFloat::Bf16;
                    let bits = values.iter().map(|&v| f.encode(f64::from(v)) as u16).collect();
                    Tensor { dims: vec![n], data: Data::Bf16(bits) }
                }
            };
            // The group reads the parameter and the broadcast constant.
            let instrs = &program.comps[program.entry].instrs;
            let operands: Vec<&Tensor> = sources
                .iter()
                .map(|&o| match &instrs[o].op {
                    Op::Constant(t) => &**t,
                    Op::Parameter(0) => &x,
                    other => panic!("unexpected fused operand {other:?}"),
                })
                .collect();
            let fresh = plan.run(&operands, &BufferPool::default()).expect("fresh storage");
            let pool = BufferPool::with_limit(64 << 20);
            let stale = match ty {
                "f32" => Data::F32(vec![f32::NAN; n + n / 32]),
                _ => Data::Bf16(vec![0x7fc1; n + n / 32]),
            };
            // An earlier run's request for the output opens the pool for the stale buffer.
            assert!(pool.take(stale.ty(), n).is_none());
            pool.give(stale);
            assert!(pool.idle_bytes() > 0, "the pool keeps the stale buffer");
            let pooled = plan.run(&operands, &pool).expect("pooled storage");
            assert_eq!(pool.idle_bytes(), 0, "{ty}: the output took the pooled buffer");
            assert_eq!(pooled.len(), n);
            // By hand for the f32 case: x * 0.5 + x, exact in f32 for these inputs.
            if let (Data::F32(got), "f32") = (&pooled, ty) {
                for (i, (&g, &v)) in got.iter().zip(&values).enumerate() {
                    assert_eq!(g.to_bits(), (v * 0.5 + v).to_bits(), "element {i}");
                }
            }
            assert_eq!(pooled.to_le_bytes().ok(), fresh.to_le_bytes().ok(), "{ty}");
        }
    }

    #[test]
    fn a_reshape_keeps_its_operands_buffer_only_when_nothing_else_reads_it() {
        // `a` dies at the reshape in the first module and is read again in the second; the
        // reshape of the parameter reads the caller's argument. All give the same values.
        let x: Vec<f32> = (0..6).map(|i| i as f32 + 0.5).collect();
        let negated: Vec<f32> = x.iter().map(|v| -v).collect();
        let doubled: Vec<f32> = negated.iter().map(|v| v + v).collect();
        let run = |root: &str| {
            let text = format!(
                "HloModule reshapes\nENTRY main {{\n  x = f32[6] parameter(0)\n  \
                 a = f32[6] negate(x)\n  r = f32[2,3] reshape(a)\n  q = f32[3,2] reshape(r)\n  \
                 p = f32[3,2] reshape(x)\n  {root}\n}}\n"
            );
            let program = compile(&text, &EvalOptions::default());
            let out = program.run(&[Array::from_f32(&[6], &x)]).expect("runs");
            let Value::Tuple(items) = out else { panic!("expected a tuple") };
            items
                .into_iter()
                .map(|item| match item {
                    Value::Array(a) => (a.dims.clone(), f32s(&a.bytes)),
                    Value::Tuple(_) => panic!("expected arrays"),
                })
                .collect::<Vec<_>>()
        };
        let moved = run("s = f32[3,2] add(q, q)\n  ROOT t = (f32[3,2], f32[3,2]) tuple(s, p)");
        assert_eq!(moved, vec![(vec![3, 2], doubled.clone()), (vec![3, 2], x.clone())]);
        let shared = run(
            "s = f32[3,2] add(q, q)\n  ROOT t = (f32[3,2], f32[6], f32[2,3], f32[6]) tuple(s, a, r, x)",
        );
        let want = vec![
            (vec![3, 2], doubled),
            (vec![6], negated.clone()),
            (vec![2, 3], negated),
            (vec![6], x),
        ];
        assert_eq!(shared, want);
    }
}
