//! Collectives across the ranks of one SPMD evaluation.
//!
//! Every collective is one [`Exchange::swap`]: each rank deposits its value, the last to arrive
//! publishes the round, and every rank computes its own result from all deposits. A rank that
//! fails aborts the exchange, and every rank waiting in it (or arriving later) gets an error
//! instead of waiting forever.
//!
//! A rank that waits for the others spins for up to [`RANK_SPIN`] before it sleeps on the
//! condition variable, when every rank can have a core of its own: woken from sleep, a rank took
//! 20-50 µs to run again on the VMs here (as the kernel pool's workers did, see `par`). While
//! other programs want the cores (`par::usable_cores` below the ranks), it sleeps at once: its
//! spin would hold the core a late rank needs to arrive (the 2-rank model with one of two cores
//! busy: 8.1 ms median of three runs, 6.8 ms without the spin).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use super::elementwise;
use super::error::Fail;
use super::op_context::{OpContext, dims_list, invalid, to_usize};
use super::plan::Op;
use super::plan::{Groups, Reducer, Subcomputations};
use super::shape::Shape;
use super::shape_ops;
use super::tensor::{Data, Tensor};
use super::tensor::{Val, element, gather_scalars};
use crate::proto;

struct Round {
    generation: u64,
    arrived: usize,
    slots: Vec<Option<Val>>,
    published: Arc<Vec<Val>>,
    aborted: bool,
    first_failure: Option<usize>,
}

/// The meeting point of the ranks.
pub(crate) struct Exchange {
    n: usize,
    round: Mutex<Round>,
    changed: Condvar,
    /// The round's generation, or [`ABORTED_GENERATION`]: what a spinning rank watches.
    progress: AtomicU64,
    /// Whether a waiting rank spins before it sleeps (each rank can have a core).
    spin: bool,
}

/// How long a rank spins for the others before it sleeps.
const RANK_SPIN: Duration = Duration::from_millis(1);

/// [`Exchange::progress`] once the exchange is aborted.
const ABORTED_GENERATION: u64 = u64::MAX;

const ABORTED: &str = "another rank failed before this collective completed";

impl Exchange {
    pub(crate) fn new(n: usize) -> Exchange {
        Exchange {
            n,
            round: Mutex::new(Round {
                generation: 0,
                arrived: 0,
                slots: vec![None; n],
                published: Arc::new(Vec::new()),
                aborted: false,
                first_failure: None,
            }),
            changed: Condvar::new(),
            progress: AtomicU64::new(0),
            spin: n <= super::par::cores(),
        }
    }

    pub(crate) fn abort(&self, rank: usize) {
        if let Ok(mut round) = self.round.lock() {
            round.aborted = true;
            round.first_failure.get_or_insert(rank);
            self.progress.store(ABORTED_GENERATION, Ordering::Release);
        }
        self.changed.notify_all();
    }

    pub(crate) fn first_failure(&self) -> Option<usize> {
        self.round.lock().ok().and_then(|r| r.first_failure)
    }

    /// Deposits `value` for `rank` and returns every rank's deposit of this round.
    fn swap(&self, rank: usize, value: Val) -> Result<Arc<Vec<Val>>, Fail> {
        let poisoned = || Fail::Internal("exchange lock poisoned".into());
        let mut round = self.round.lock().map_err(|_| poisoned())?;
        if round.aborted {
            return Err(Fail::Invalid(ABORTED.into()));
        }
        round.slots[rank] = Some(value);
        round.arrived += 1;
        let generation = round.generation;
        if round.arrived == self.n {
            let values: Vec<Val> =
                round.slots.iter_mut().map(|s| s.take().unwrap_or(Val::Token)).collect();
            round.published = Arc::new(values);
            round.arrived = 0;
            round.generation += 1;
            self.progress.store(round.generation, Ordering::Release);
            self.changed.notify_all();
            return Ok(round.published.clone());
        }
        // Spinning pays only while every rank has a core: when other programs want them, this
        // rank's spin would take the core a late rank needs to arrive.
        if self.spin && super::par::usable_cores() >= self.n {
            // The round cannot move on past this one without this rank, so what is published
            // when the generation changes is this round's.
            drop(round);
            super::par::spin_while(RANK_SPIN, || {
                self.progress.load(Ordering::Acquire) == generation
            });
            round = self.round.lock().map_err(|_| poisoned())?;
        }
        while round.generation == generation && !round.aborted {
            round = self.changed.wait(round).map_err(|_| poisoned())?;
        }
        if round.generation == generation {
            return Err(Fail::Invalid(ABORTED.into()));
        }
        Ok(round.published.clone())
    }
}

/// This rank's place in an SPMD run: its id, and the exchange where it meets the others (none
/// for a run on one rank).
#[derive(Clone, Copy)]
pub(crate) struct Peers<'a> {
    pub(crate) rank: usize,
    pub(crate) exchange: Option<&'a Exchange>,
}

impl Peers<'_> {
    fn n_ranks(&self) -> usize {
        self.exchange.map_or(1, |e| e.n)
    }

    /// All ranks' values (one rank: just its own).
    fn everyone(&self, value: Val) -> Result<Arc<Vec<Val>>, Fail> {
        match self.exchange {
            Some(exchange) => exchange.swap(self.rank, value),
            None => Ok(Arc::new(vec![value])),
        }
    }

    /// This rank's group (rank ids in group order) and its position in it.
    fn group(&self, groups: &Groups) -> Result<(Vec<usize>, usize), Fail> {
        let n = self.n_ranks();
        if groups.is_empty() {
            return Ok(((0..n).collect(), self.rank));
        }
        for g in groups {
            if let Some(&bad) = g.iter().find(|&&r| r >= n) {
                return Err(Fail::Invalid(format!(
                    "replica group {g:?} names rank {bad} of a {n}-rank launch"
                )));
            }
        }
        for g in groups {
            if let Some(position) = g.iter().position(|&r| r == self.rank) {
                return Ok((g.clone(), position));
            }
        }
        Err(Fail::Invalid(format!(
            "rank {} is in none of the replica groups {groups:?}",
            self.rank
        )))
    }
}

fn combine(
    ctx: &impl Subcomputations,
    computation: usize,
    a: &Data,
    b: &Data,
) -> Result<Data, Fail> {
    if let Some(Reducer::Binary(op)) = ctx.computation(computation).reducer {
        return elementwise::binary(op, a, b);
    }
    let mut parts = Vec::with_capacity(a.len());
    for i in 0..a.len() {
        let out = ctx.apply_scalars(computation, &[element(a, i), element(b, i)])?;
        parts.push(
            out.into_iter()
                .next()
                .ok_or_else(|| Fail::Internal("reducer returned nothing".into()))?,
        );
    }
    gather_scalars(a.ty(), &parts)
}

fn reduce_members(
    ctx: &impl Subcomputations,
    computation: usize,
    members: &[&Arc<Tensor>],
) -> Result<Data, Fail> {
    // The first two are combined from where they lie: a copy of the first to start from cost
    // a whole pass over it.
    let Some((first, rest)) = members.split_first() else {
        return Err(Fail::Internal("a collective of no ranks".into()));
    };
    let Some((second, rest)) = rest.split_first() else { return Ok(first.data.clone()) };
    let mut acc = combine(ctx, computation, &first.data, &second.data)?;
    for m in rest {
        acc = combine(ctx, computation, &acc, &m.data)?;
    }
    Ok(acc)
}

fn member_values<'v>(all: &'v [Val], group: &[usize]) -> Vec<&'v Val> {
    group.iter().map(|&r| &all[r]).collect()
}

pub(crate) fn all_reduce(
    ctx: &impl Subcomputations,
    peers: Peers<'_>,
    computation: usize,
    groups: &Groups,
    operands: Vec<Val>,
    shape: &Shape,
) -> Result<Val, Fail> {
    let (group, _) = peers.group(groups)?;
    let all = peers.everyone(Val::Tuple(Arc::new(operands)))?;
    let members = member_values(&all, &group);
    let count = members[0].tuple()?.len();
    let mut outs = Vec::with_capacity(count);
    for i in 0..count {
        let arrays: Vec<&Arc<Tensor>> = members
            .iter()
            .map(|m| m.tuple().and_then(|t| t[i].array()))
            .collect::<Result<_, _>>()?;
        let data = reduce_members(ctx, computation, &arrays)?;
        outs.push(Val::from_data(arrays[0].dims.clone(), data));
    }
    match shape {
        Shape::Tuple(_) => Ok(Val::Tuple(Arc::new(outs))),
        _ => outs.pop().ok_or_else(|| Fail::Internal("all-reduce of nothing".into())),
    }
}

pub(crate) fn all_gather(
    peers: Peers<'_>,
    groups: &Groups,
    operand: Val,
    dim: usize,
) -> Result<Val, Fail> {
    let (group, _) = peers.group(groups)?;
    let all = peers.everyone(operand)?;
    let arrays: Vec<&Arc<Tensor>> =
        member_values(&all, &group).into_iter().map(Val::array).collect::<Result<_, _>>()?;
    let views: Vec<(&Data, &[usize])> =
        arrays.iter().map(|t| (&t.data, t.dims.as_slice())).collect();
    let mut dims = arrays[0].dims.clone();
    dims[dim] *= arrays.len();
    Ok(Val::from_data(dims, shape_ops::concatenate(&views, dim)?))
}

fn chunk(t: &Tensor, dim: usize, parts: usize, index: usize) -> Result<(Vec<usize>, Data), Fail> {
    let size = t.dims[dim] / parts.max(1);
    let mut starts = vec![0; t.dims.len()];
    starts[dim] = index * size;
    let mut dims = t.dims.clone();
    dims[dim] = size;
    let steps = vec![1; t.dims.len()];
    Ok((dims.clone(), shape_ops::slice(&t.data, &t.dims, &starts, &steps, &dims)?))
}

pub(crate) fn reduce_scatter(
    ctx: &impl Subcomputations,
    peers: Peers<'_>,
    computation: usize,
    groups: &Groups,
    operand: Val,
    dim: usize,
) -> Result<Val, Fail> {
    let (group, position) = peers.group(groups)?;
    let all = peers.everyone(operand)?;
    let arrays: Vec<&Arc<Tensor>> =
        member_values(&all, &group).into_iter().map(Val::array).collect::<Result<_, _>>()?;
    let reduced =
        Tensor { dims: arrays[0].dims.clone(), data: reduce_members(ctx, computation, &arrays)? };
    if !reduced.dims[dim].is_multiple_of(group.len()) {
        return Err(Fail::Invalid(format!(
            "dimension {dim} of size {} does not split over {} ranks",
            reduced.dims[dim],
            group.len()
        )));
    }
    let (dims, data) = chunk(&reduced, dim, group.len(), position)?;
    Ok(Val::from_data(dims, data))
}

pub(crate) fn all_to_all(
    peers: Peers<'_>,
    groups: &Groups,
    operands: Vec<Val>,
    split_dim: Option<usize>,
) -> Result<Val, Fail> {
    let (group, position) = peers.group(groups)?;
    let all = peers.everyone(Val::Tuple(Arc::new(operands)))?;
    let members = member_values(&all, &group);
    match split_dim {
        Some(dim) => {
            let mut pieces = Vec::with_capacity(group.len());
            for m in &members {
                let t = m
                    .tuple()?
                    .first()
                    .ok_or_else(|| Fail::Internal("all-to-all operand".into()))?
                    .array()?;
                if t.dims[dim] % group.len() != 0 {
                    return Err(Fail::Invalid(format!(
                        "dimension {dim} of size {} does not split over {} ranks",
                        t.dims[dim],
                        group.len()
                    )));
                }
                pieces.push(chunk(t, dim, group.len(), position)?);
            }
            let views: Vec<(&Data, &[usize])> =
                pieces.iter().map(|(d, x)| (x, d.as_slice())).collect();
            let mut dims = pieces[0].0.clone();
            dims[dim] *= pieces.len();
            Ok(Val::from_data(dims, shape_ops::concatenate(&views, dim)?))
        }
        None => {
            let mut outs = Vec::with_capacity(group.len());
            for m in &members {
                let items = m.tuple()?;
                if items.len() != group.len() {
                    return Err(Fail::Invalid(format!(
                        "all-to-all has {} operands for a group of {}",
                        items.len(),
                        group.len()
                    )));
                }
                outs.push(items[position].clone());
            }
            Ok(Val::Tuple(Arc::new(outs)))
        }
    }
}

pub(crate) fn collective_permute(
    peers: Peers<'_>,
    pairs: &[(usize, usize)],
    operand: Val,
) -> Result<Val, Fail> {
    let n = peers.n_ranks();
    if let Some(&(s, t)) = pairs.iter().find(|&&(s, t)| s >= n || t >= n) {
        return Err(Fail::Invalid(format!(
            "source_target_pairs {{{s},{t}}} name a rank of a {n}-rank launch"
        )));
    }
    let mine = operand.array()?.clone();
    let all = peers.everyone(operand)?;
    match pairs.iter().find(|&&(_, t)| t == peers.rank) {
        Some(&(source, _)) => Ok(all[source].clone()),
        None => Ok(Val::from_data(mine.dims.clone(), Data::zeros(mine.ty(), mine.n_elems())?)),
    }
}

// Compiling: the shape checks and attribute decoding for this family.

/// Shape checks and attribute decoding for the collectives: all-reduce, all-gather, reduce-scatter, all-to-all and collective-permute.
pub(crate) fn compile_collective(cx: &OpContext<'_>) -> Result<Op, Fail> {
    let (ins, shape, operands) = (cx.ins, cx.shape, cx.operands);
    let out = || shape.array();
    Ok(match cx.ins.opcode.as_str() {
        "all-reduce" => {
            let computation = cx.callee(ins, 0)?;
            let mut types = Vec::new();
            for s in operands {
                types.push(s.array()?.ty);
            }
            if types.is_empty() {
                return Err(invalid("all-reduce needs operands"));
            }
            cx.scalar_computation(computation, 2, &types[..1])?;
            let inferred = if operands.len() == 1 {
                operands[0].clone()
            } else {
                Shape::Tuple(operands.iter().map(|s| (*s).clone()).collect())
            };
            cx.expect(shape, &inferred)?;
            Op::AllReduce { computation, groups: groups(ins)? }
        }
        "all-gather" => {
            cx.arity(operands, 1)?;
            let a = operands[0].array()?;
            let [dim] = dims_list(&ins.dimensions, a.dims.len(), "dimensions")?[..] else {
                return Err(invalid("all-gather needs one dimension"));
            };
            let o = out()?;
            let ok = o.ty == a.ty
                && o.dims.len() == a.dims.len()
                && a.dims[dim] > 0
                && o.dims[dim] % a.dims[dim] == 0
                && (0..a.dims.len()).all(|i| i == dim || o.dims[i] == a.dims[i]);
            if !ok {
                return Err(invalid(format!(
                    "all-gather of {} to {} on dimension {dim}",
                    operands[0].describe(),
                    shape.describe()
                )));
            }
            Op::AllGather { dim, groups: groups(ins)? }
        }
        "reduce-scatter" => {
            cx.arity(operands, 1)?;
            let computation = cx.callee(ins, 0)?;
            let a = operands[0].array()?;
            let [dim] = dims_list(&ins.dimensions, a.dims.len(), "dimensions")?[..] else {
                return Err(invalid("reduce-scatter needs one dimension"));
            };
            let o = out()?;
            let ok = o.ty == a.ty
                && o.dims.len() == a.dims.len()
                && o.dims[dim] > 0
                && a.dims[dim] % o.dims[dim] == 0
                && (0..a.dims.len()).all(|i| i == dim || o.dims[i] == a.dims[i]);
            if !ok {
                return Err(invalid(format!(
                    "reduce-scatter of {} to {} on dimension {dim}",
                    operands[0].describe(),
                    shape.describe()
                )));
            }
            cx.scalar_computation(computation, 2, &[a.ty])?;
            Op::ReduceScatter { dim, computation, groups: groups(ins)? }
        }
        "all-to-all" => {
            let split_dim = match ins.dimensions[..] {
                [] => None,
                [d] => {
                    cx.arity(operands, 1)?;
                    let a = operands[0].array()?;
                    Some(dims_list(&[d], a.dims.len(), "dimensions")?[0])
                }
                _ => return Err(invalid("all-to-all takes at most one dimension")),
            };
            let inferred = if operands.len() == 1 {
                operands[0].clone()
            } else {
                Shape::Tuple(operands.iter().map(|s| (*s).clone()).collect())
            };
            cx.expect(shape, &inferred)?;
            Op::AllToAll { split_dim, groups: groups(ins)? }
        }
        "collective-permute" => {
            cx.arity(operands, 1)?;
            cx.expect(shape, operands[0])?;
            let pairs = ins
                .source_target_pairs
                .iter()
                .map(|p| Ok((to_usize(p.source, "source")?, to_usize(p.target, "target")?)))
                .collect::<Result<_, Fail>>()?;
            Op::CollectivePermute { pairs }
        }
        other => return Err(Fail::Internal(format!("opcode {other} is not compile_collective's"))),
    })
}

fn groups(ins: &proto::HloInstructionProto) -> Result<Groups, Fail> {
    let groups = ins.collective_groups().map_err(|e| invalid(e.to_string()))?;
    groups
        .iter()
        .map(|g| g.iter().map(|&r| to_usize(r, "replica id")).collect::<Result<Vec<_>, _>>())
        .collect()
}
