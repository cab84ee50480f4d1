//! The executor: runs a compiled computation instruction by instruction.
//!
//! One rank's run is a [`Ctx`]: the plan, the rank's place among its peers, its meters of
//! device time, work and the clock, and the argument bytes it was lent. [`Ctx::call`] runs a
//! computation: it charges each instruction, then runs it (structural and collective ops here,
//! the rest through their kernels), and frees each value after its last use. Kernels that run a
//! called computation (a reducer, a comparator) reach back through [`Subcomputations`], which
//! `Ctx` implements, never through `Ctx` itself.

use std::cell::Cell;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::boundary::Array;
use super::collective::{self, Peers};
use super::elementwise;
use super::error::{EvalError, Fail};
use super::options::{CLOCK_EVERY, HEAVY_WORK, device_time};
use super::plan::{Comp, Instr, Op, Program, Reducer, Subcomputations};
use super::shape::Shape;
use super::shape_ops;
use super::tensor::{Data, Tensor, Val, element, gather_scalars, try_alloc};
use crate::dtype::ElementType;
use crate::proto;

/// One rank's view of a run.
pub(crate) struct Ctx<'p> {
    pub(crate) program: &'p Program,
    pub(crate) peers: Peers<'p>,
    meter: Meter,
    /// Per instruction of the entry computation: the caller's bytes of a parameter whose only
    /// readers take them in place (see [`Program::lent_leaves`]); empty when nothing is lent.
    lent: Vec<Option<&'p [u8]>>,
}

/// One rank's device time, work count and clock (see the module docs of `eval`): plain cells,
/// since a rank runs its instructions on one thread.
struct Meter {
    device_fs: Cell<u64>,
    device_limit: Option<(u64, Duration)>,
    used: Cell<u64>,
    budget: Option<u64>,
    deadline: Option<(Instant, Duration)>,
    until_clock: Cell<u32>,
}

impl Meter {
    /// A fresh count, with the clock started now when the options set a time limit.
    fn start(program: &Program) -> Meter {
        let options = &program.options;
        Meter {
            device_fs: Cell::new(0),
            device_limit: options
                .device_time_limit
                .map(|limit| (device_time::femtoseconds(limit), limit)),
            used: Cell::new(0),
            budget: options.work_budget,
            deadline: options
                .time_limit
                .map(|limit| (Instant::now().checked_add(limit).unwrap_or_else(far_future), limit)),
            until_clock: Cell::new(CLOCK_EVERY),
        }
    }

    /// Charges an instruction's cost before it runs.
    fn charge(&self, instr: &Instr) -> Result<(), Fail> {
        let device_fs = self.device_fs.get().saturating_add(instr.device_fs);
        if let Some((limit_fs, limit)) = self.device_limit
            && device_fs > limit_fs
        {
            return Err(Fail::DeviceTime(limit));
        }
        let used = self.used.get().saturating_add(instr.work);
        if let Some(budget) = self.budget
            && used > budget
        {
            return Err(Fail::WorkBudget(budget));
        }
        self.device_fs.set(device_fs);
        self.used.set(used);
        Ok(())
    }

    /// After an instruction ran: reads the clock every [`CLOCK_EVERY`] instructions, and
    /// after heavy ones.
    fn check_clock(&self, work: u64) -> Result<(), Fail> {
        let Some((deadline, limit)) = self.deadline else { return Ok(()) };
        let left = self.until_clock.get().saturating_sub(1);
        if left > 0 && work < HEAVY_WORK {
            self.until_clock.set(left);
            return Ok(());
        }
        self.until_clock.set(CLOCK_EVERY);
        if Instant::now() >= deadline { Err(Fail::TimeLimit(limit)) } else { Ok(()) }
    }
}

/// A deadline for a limit too long to add to the clock: about a century from now, which is
/// never in practice.
fn far_future() -> Instant {
    let now = Instant::now();
    now.checked_add(Duration::from_secs(100 * 365 * 86_400)).unwrap_or(now)
}

impl Subcomputations for Ctx<'_> {
    fn computation(&self, index: usize) -> &Comp {
        &self.program.comps[index]
    }

    /// Calls a computation that takes and returns scalars, with the recognised fast paths.
    fn apply_scalars(&self, index: usize, args: &[Data]) -> Result<Vec<Data>, Fail> {
        let comp = &self.program.comps[index];
        if args.len() == 2 {
            match comp.reducer {
                Some(Reducer::Binary(op)) => {
                    return Ok(vec![elementwise::binary(op, &args[0], &args[1])?]);
                }
                Some(Reducer::Replace) => return Ok(vec![args[1].clone()]),
                None => {}
            }
        }
        let vals = args.iter().map(|d| Val::from_data(Vec::new(), d.clone())).collect();
        let out = self.call(index, vals).map_err(|e| Fail::Nested(Box::new(e)))?;
        match out {
            Val::Array(t) => Ok(vec![t.data.clone()]),
            Val::Tuple(items) => items.iter().map(|v| Ok(v.array()?.data.clone())).collect(),
            Val::Token => Err(Fail::Internal("scalar computation returned a token".into())),
        }
    }
}

impl<'p> Ctx<'p> {
    /// A fresh run of `program` on the rank `peers` names, its meters at zero.
    pub(crate) fn new(program: &'p Program, peers: Peers<'p>) -> Ctx<'p> {
        Ctx { program, peers, meter: Meter::start(program), lent: Vec::new() }
    }

    /// Lends the run the caller's bytes of the entry's parameters (see [`Program::lent_leaves`]).
    pub(crate) fn lend(&mut self, lent: Vec<Option<&'p [u8]>>) {
        self.lent = lent;
    }
}

impl Ctx<'_> {
    pub(crate) fn budget(&self) -> u64 {
        self.program.options.budget_bytes
    }

    /// Whether an operand of `instr`, of computation `comp`, is a lent argument: only the
    /// entry computation's instructions are indexed by [`Ctx::lent`].
    fn lends_to(&self, comp: &Comp, instr: &Instr) -> bool {
        !self.lent.is_empty()
            && std::ptr::eq(comp, &self.program.comps[self.program.entry])
            && instr.operands.iter().any(|&o| self.lent.get(o).is_some_and(Option::is_some))
    }

    /// Runs computation `index` on `args`.
    pub(crate) fn call(&self, index: usize, args: Vec<Val>) -> Result<Val, EvalError> {
        let comp = &self.program.comps[index];
        let mut args: Vec<Option<Val>> = args.into_iter().map(Some).collect();
        let mut slots: Vec<Option<Val>> = vec![None; comp.instrs.len()];
        for (k, instr) in comp.instrs.iter().enumerate() {
            if matches!(instr.op, Op::Absorbed) {
                // Part of a fused group: charged where it stands, computed by the group's root.
                self.meter
                    .charge(instr)
                    .and_then(|()| self.meter.check_clock(instr.work))
                    .map_err(|fail| {
                        fail.at(instr.computation_name(comp), &instr.name, self.budget())
                    })?;
                continue;
            }
            let value = self
                .meter
                .charge(instr)
                .and_then(|()| match update_in_place(comp, k, &mut slots)? {
                    Some(value) => Ok(value),
                    None => self.exec(comp, k, &slots, &mut args),
                })
                .and_then(|value| self.meter.check_clock(instr.work).map(|()| value))
                .map_err(|fail| {
                    fail.at(instr.computation_name(comp), &instr.name, self.budget())
                })?;
            slots[k] = Some(value);
            for &f in &instr.frees {
                if let Some(dead) = slots[f].take() {
                    self.program.pool.recycle(dead);
                }
            }
        }
        slots[comp.root].take().ok_or_else(|| EvalError::Module {
            detail: format!("computation {}: the root has no value", comp.name),
        })
    }

    fn exec(
        &self,
        comp: &Comp,
        k: usize,
        slots: &[Option<Val>],
        args: &mut [Option<Val>],
    ) -> Result<Val, Fail> {
        let instr = &comp.instrs[k];
        let operand = |i: usize| -> Result<&Val, Fail> {
            instr
                .operands
                .get(i)
                .and_then(|&o| slots[o].as_ref())
                .ok_or_else(|| Fail::Internal(format!("operand {i} has no value")))
        };
        let tensor = |i: usize| -> Result<&Arc<Tensor>, Fail> { operand(i)?.array() };
        let out_dims = || -> Result<Vec<usize>, Fail> { Ok(instr.shape.array()?.dims.clone()) };
        let array = |data: Data| -> Result<Val, Fail> { Ok(Val::from_data(out_dims()?, data)) };
        match &instr.op {
            Op::Parameter(n) => args
                .get_mut(*n)
                .and_then(Option::take)
                .ok_or_else(|| Fail::Internal(format!("parameter {n} was not given"))),
            Op::Constant(t) => Ok(Val::Array(t.clone())),
            Op::Tuple => {
                let items = (0..instr.operands.len())
                    .map(|i| operand(i).cloned())
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(Val::Tuple(Arc::new(items)))
            }
            Op::GetTupleElement(i) => operand(0)?
                .tuple()?
                .get(*i)
                .cloned()
                .ok_or_else(|| Fail::Internal("tuple index".into())),
            Op::Call(callee) => {
                let vals = (0..instr.operands.len())
                    .map(|i| operand(i).cloned())
                    .collect::<Result<Vec<_>, _>>()?;
                self.call(*callee, vals).map_err(|e| Fail::Nested(Box::new(e)))
            }
            Op::While { condition, body } => {
                let mut state = operand(0)?.clone();
                let mut iterations: u64 = 0;
                loop {
                    let keep_going = self
                        .call(*condition, vec![state.clone()])
                        .map_err(|e| Fail::Nested(Box::new(e)))?;
                    let Data::Pred(p) = &keep_going.array()?.data else {
                        return Err(Fail::Internal("while condition is not pred".into()));
                    };
                    if !p.first().copied().unwrap_or(false) {
                        break;
                    }
                    if let Some(limit) = self.program.options.max_while_iterations
                        && iterations >= limit
                    {
                        return Err(Fail::WhileLimit(limit));
                    }
                    iterations += 1;
                    state = self.call(*body, vec![state]).map_err(|e| Fail::Nested(Box::new(e)))?;
                }
                Ok(state)
            }
            Op::Conditional { branches } => {
                let selector = tensor(0)?;
                let index = match &selector.data {
                    Data::Pred(p) => usize::from(!p[0]),
                    Data::S32(v) => usize::try_from(v[0])
                        .ok()
                        .filter(|&i| i < branches.len())
                        .unwrap_or(branches.len() - 1),
                    _ => return Err(Fail::Internal("conditional selector type".into())),
                };
                let arg = operand(index + 1)?.clone();
                self.call(branches[index], vec![arg]).map_err(|e| Fail::Nested(Box::new(e)))
            }
            Op::Fused(plan) => {
                let inputs: Vec<&Tensor> = (0..instr.operands.len())
                    .map(|i| tensor(i).map(|t| &**t))
                    .collect::<Result<_, _>>()?;
                array(plan.run(&inputs, &self.program.pool)?)
            }
            Op::Dot(plan) if self.lends_to(comp, instr) => {
                let operand = |side: usize| -> Result<super::dot::Operand<'_>, Fail> {
                    match instr
                        .operands
                        .get(side)
                        .and_then(|&o| self.lent.get(o).copied().flatten())
                    {
                        Some(bytes) => {
                            Ok(super::dot::Operand::Bytes(tensor(side)?.data.ty(), bytes))
                        }
                        None => Ok(super::dot::Operand::Data(&tensor(side)?.data)),
                    }
                };
                array(plan.run_operands(
                    operand(0)?,
                    operand(1)?,
                    instr.shape.array()?.ty,
                    self.budget(),
                    &self.program.pool,
                )?)
            }
            Op::Absorbed => Err(Fail::Internal("an absorbed instruction was run".into())),
            Op::PassThrough => operand(0).cloned(),
            Op::AfterAll => Ok(Val::Token),
            Op::ReplicaId => array(Data::U32(vec![self.peers.rank as u32])),
            Op::AllReduce { computation, groups } => {
                let vals: Vec<Val> = (0..instr.operands.len())
                    .map(|i| operand(i).cloned())
                    .collect::<Result<_, _>>()?;
                collective::all_reduce(self, self.peers, *computation, groups, vals, &instr.shape)
            }
            Op::AllGather { dim, groups } => {
                collective::all_gather(self.peers, groups, operand(0)?.clone(), *dim)
            }
            Op::ReduceScatter { dim, computation, groups } => collective::reduce_scatter(
                self,
                self.peers,
                *computation,
                groups,
                operand(0)?.clone(),
                *dim,
            ),
            Op::AllToAll { split_dim, groups } => {
                let vals: Vec<Val> = (0..instr.operands.len())
                    .map(|i| operand(i).cloned())
                    .collect::<Result<_, _>>()?;
                collective::all_to_all(self.peers, groups, vals, *split_dim)
            }
            Op::CollectivePermute { pairs } => {
                collective::collective_permute(self.peers, pairs, operand(0)?.clone())
            }
            _ => self.exec_array(instr, slots),
        }
    }

    /// Runs an instruction that computes one array from its operands' arrays: every op but the
    /// structural, fused and collective ones, which [`Self::exec`] runs itself.
    fn exec_array(&self, instr: &Instr, slots: &[Option<Val>]) -> Result<Val, Fail> {
        let operand = |i: usize| -> Result<&Val, Fail> {
            instr
                .operands
                .get(i)
                .and_then(|&o| slots[o].as_ref())
                .ok_or_else(|| Fail::Internal(format!("operand {i} has no value")))
        };
        let tensor = |i: usize| -> Result<&Arc<Tensor>, Fail> { operand(i)?.array() };
        let out_dims = || -> Result<Vec<usize>, Fail> { Ok(instr.shape.array()?.dims.clone()) };
        let array = |data: Data| -> Result<Val, Fail> { Ok(Val::from_data(out_dims()?, data)) };
        match &instr.op {
            Op::Broadcast(mapping) => {
                let t = tensor(0)?;
                array(shape_ops::broadcast(&t.data, &t.dims, &out_dims()?, mapping)?)
            }
            Op::Reshape => array(shape_ops::copy(&tensor(0)?.data)?),
            Op::Bitcast { from, to } => {
                let t = tensor(0)?;
                let out = instr.shape.array()?;
                let proto_ty = |ty: ElementType| {
                    proto::PrimitiveType::try_from(ty as i32)
                        .map_err(|_| Fail::Internal("element type number".into()))
                };
                let as_i64 = |dims: &[usize]| dims.iter().map(|&d| d as i64).collect::<Vec<_>>();
                let operand = Array {
                    ty: proto_ty(t.ty())?,
                    dims: as_i64(&t.dims),
                    bytes: t.data.to_le_bytes()?,
                };
                let physical =
                    operand.to_physical(from).map_err(|e| Fail::Internal(e.to_string()))?;
                let result =
                    Array::from_physical(proto_ty(out.ty)?, as_i64(&out.dims), to, physical)
                        .map_err(|e| Fail::Internal(e.to_string()))?;
                array(Data::from_le_bytes(out.ty, &result.bytes)?)
            }
            Op::Transpose(permutation) => {
                let t = tensor(0)?;
                array(shape_ops::transpose(&t.data, &t.dims, permutation)?)
            }
            Op::Convert(ty) => array(elementwise::convert(&tensor(0)?.data, *ty)?),
            Op::BitcastConvert => {
                let t = tensor(0)?;
                let bytes = t.data.to_le_bytes()?;
                array(Data::from_le_bytes(instr.shape.array()?.ty, &bytes)?)
            }
            Op::Slice { starts, steps } => {
                let t = tensor(0)?;
                array(shape_ops::slice(&t.data, &t.dims, starts, steps, &out_dims()?)?)
            }
            Op::DynamicSlice => {
                let t = tensor(0)?;
                let sizes = out_dims()?;
                let mut starts = Vec::with_capacity(t.dims.len());
                for (axis, (&dim, &size)) in t.dims.iter().zip(&sizes).enumerate() {
                    let start = shape_ops::scalar_index(&tensor(axis + 1)?.data)?;
                    starts.push(shape_ops::clamp_start(start, dim, size));
                }
                let steps = vec![1; t.dims.len()];
                array(shape_ops::slice(&t.data, &t.dims, &starts, &steps, &sizes)?)
            }
            Op::DynamicUpdateSlice => {
                let (t, u) = (tensor(0)?, tensor(1)?);
                let starts = update_starts(instr, slots)?;
                array(shape_ops::update_slice(&t.data, &t.dims, &u.data, &u.dims, &starts)?)
            }
            Op::Concatenate(axis) => {
                let parts: Vec<&Arc<Tensor>> =
                    (0..instr.operands.len()).map(tensor).collect::<Result<_, _>>()?;
                let views: Vec<(&Data, &[usize])> =
                    parts.iter().map(|t| (&t.data, t.dims.as_slice())).collect();
                array(shape_ops::concatenate(&views, *axis)?)
            }
            Op::Pad(config) => {
                let t = tensor(0)?;
                array(shape_ops::pad(&t.data, &tensor(1)?.data, &t.dims, config, &out_dims()?)?)
            }
            Op::Iota(axis) => {
                let shape = instr.shape.array()?;
                array(shape_ops::iota(shape.ty, &shape.dims, *axis)?)
            }
            Op::Reverse(dims) => {
                let t = tensor(0)?;
                array(shape_ops::reverse(&t.data, &t.dims, dims)?)
            }
            Op::Select => {
                let Data::Pred(p) = &tensor(0)?.data else {
                    return Err(Fail::Internal("select predicate type".into()));
                };
                array(elementwise::select(p, &tensor(1)?.data, &tensor(2)?.data)?)
            }
            Op::Clamp => {
                array(elementwise::clamp(&tensor(0)?.data, &tensor(1)?.data, &tensor(2)?.data)?)
            }
            Op::Compare { direction, total_order } => array(Data::Pred(elementwise::compare(
                *direction,
                *total_order,
                &tensor(0)?.data,
                &tensor(1)?.data,
            )?)),
            Op::Unary(op) => array(elementwise::unary(*op, &tensor(0)?.data)?),
            Op::Binary(op) => array(elementwise::binary(*op, &tensor(0)?.data, &tensor(1)?.data)?),
            Op::Dot(plan) => array(plan.run(
                &tensor(0)?.data,
                &tensor(1)?.data,
                instr.shape.array()?.ty,
                self.budget(),
                &self.program.pool,
            )?),
            Op::Convolution(plan) => array(plan.run(
                &tensor(0)?.data,
                &tensor(1)?.data,
                instr.shape.array()?.ty,
                self.budget(),
            )?),
            Op::Reduce { computation, dims } => {
                let n = instr.operands.len() / 2;
                let inputs: Vec<&Arc<Tensor>> = (0..n).map(tensor).collect::<Result<_, _>>()?;
                let inits: Vec<&Arc<Tensor>> = (n..2 * n).map(tensor).collect::<Result<_, _>>()?;
                let outs = super::reduce::reduce(self, *computation, &inputs, &inits, dims)?;
                wrap_results(&instr.shape, outs)
            }
            Op::ReduceWindow { computation, window } => {
                let n = instr.operands.len() / 2;
                let inputs: Vec<&Arc<Tensor>> = (0..n).map(tensor).collect::<Result<_, _>>()?;
                let inits: Vec<&Arc<Tensor>> = (n..2 * n).map(tensor).collect::<Result<_, _>>()?;
                let outs =
                    super::reduce::reduce_window(self, *computation, &inputs, &inits, window)?;
                wrap_results(&instr.shape, outs)
            }
            Op::SelectAndScatter { select, scatter, window } => {
                let out = super::reduce::select_and_scatter(
                    self,
                    *select,
                    *scatter,
                    tensor(0)?,
                    tensor(1)?,
                    tensor(2)?,
                    window,
                )?;
                array(out)
            }
            Op::Gather(plan) => array(plan.run(&tensor(0)?.data, &tensor(1)?.data)?),
            Op::Scatter(plan) => {
                let n = (instr.operands.len() - 1) / 2;
                let operands: Vec<&Arc<Tensor>> = (0..n).map(tensor).collect::<Result<_, _>>()?;
                let indices = tensor(n)?;
                let updates: Vec<&Arc<Tensor>> =
                    (n + 1..2 * n + 1).map(tensor).collect::<Result<_, _>>()?;
                let outs = plan.run(self, &operands, &indices.data, &updates)?;
                wrap_results(&instr.shape, outs)
            }
            Op::Sort { dim, computation } => {
                let inputs: Vec<&Arc<Tensor>> =
                    (0..instr.operands.len()).map(tensor).collect::<Result<_, _>>()?;
                let outs = super::sort::sort(self, *computation, &inputs, *dim)?;
                wrap_results(&instr.shape, outs)
            }
            Op::BatchNorm { feature, epsilon, training } => {
                let operands: Vec<&Arc<Tensor>> =
                    (0..instr.operands.len()).map(tensor).collect::<Result<_, _>>()?;
                if *training {
                    wrap_results(
                        &instr.shape,
                        super::batch_norm::training(&operands, *feature, *epsilon)?,
                    )
                } else {
                    array(super::batch_norm::inference(&operands, *feature, *epsilon)?)
                }
            }
            Op::TopK { k, largest, indices: index_type } => {
                let t = tensor(0)?;
                let (values, indices) = super::sort::top_k(t, *k, *largest)?;
                let indices = if indices.ty() == *index_type {
                    indices
                } else {
                    elementwise::convert(&indices, *index_type)?
                };
                let mut dims = t.dims.clone();
                if let Some(last) = dims.last_mut() {
                    *last = *k;
                }
                Ok(Val::Tuple(Arc::new(vec![
                    Val::from_data(dims.clone(), values),
                    Val::from_data(dims, indices),
                ])))
            }
            Op::NkiKernel(call) => {
                let mut inputs = Vec::with_capacity(instr.operands.len());
                for k in 0..instr.operands.len() {
                    let t = tensor(k)?;
                    let n_bytes = t.n_elems().saturating_mul(t.ty().item_size());
                    let mut bytes: Vec<u8> = try_alloc(n_bytes)?;
                    bytes.resize(n_bytes, 0);
                    t.data.write_le(&mut bytes);
                    inputs.push(bytes);
                }
                let outputs = super::nki_call::run(call, &inputs)?;
                let mut outs = Vec::with_capacity(outputs.len());
                for ((ty, _), bytes) in call.outputs.iter().zip(&outputs) {
                    outs.push(
                        Data::from_le_bytes_into(*ty, bytes, None)
                            .map_err(|_| Fail::Alloc { bytes: bytes.len() as u64 })?,
                    );
                }
                wrap_results(&instr.shape, outs)
            }
            Op::Map(computation) => {
                let inputs: Vec<&Arc<Tensor>> =
                    (0..instr.operands.len()).map(tensor).collect::<Result<_, _>>()?;
                array(self.map(*computation, &inputs)?)
            }
            Op::ReducePrecision { exponent_bits, mantissa_bits } => array(
                elementwise::reduce_precision(&tensor(0)?.data, *exponent_bits, *mantissa_bits)?,
            ),
            _ => Err(Fail::Internal("a structural op reached the array executor".into())),
        }
    }

    fn map(&self, computation: usize, inputs: &[&Arc<Tensor>]) -> Result<Data, Fail> {
        let n = inputs.first().map_or(0, |t| t.n_elems());
        let comp = &self.program.comps[computation];
        let out_ty = comp.result_shape().array()?.ty;
        if let (Some(Reducer::Binary(op)), 2) = (comp.reducer, inputs.len()) {
            return elementwise::binary(op, &inputs[0].data, &inputs[1].data);
        }
        let mut parts: Vec<Data> = try_alloc(n)?;
        for i in 0..n {
            let args: Vec<Data> = inputs.iter().map(|t| element(&t.data, i)).collect();
            let mut out = self.apply_scalars(computation, &args)?;
            parts.push(out.pop().ok_or_else(|| Fail::Internal("map returned nothing".into()))?);
        }
        gather_scalars(out_ty, &parts)
    }
}

/// The clamped start indices of a `dynamic-update-slice` (operands: array, update, starts).
fn update_starts(instr: &Instr, slots: &[Option<Val>]) -> Result<Vec<usize>, Fail> {
    let tensor = |i: usize| -> Result<&Arc<Tensor>, Fail> {
        instr
            .operands
            .get(i)
            .and_then(|&o| slots[o].as_ref())
            .ok_or_else(|| Fail::Internal(format!("operand {i} has no value")))?
            .array()
    };
    let (t, u) = (tensor(0)?, tensor(1)?);
    let mut starts = Vec::with_capacity(t.dims.len());
    for axis in 0..t.dims.len() {
        let start = shape_ops::scalar_index(&tensor(axis + 2)?.data)?;
        starts.push(shape_ops::clamp_start(start, t.dims[axis], u.dims[axis]));
    }
    Ok(starts)
}

/// Instruction `k` when it is a `dynamic-update-slice` that can write into its operand's buffer:
/// this is the operand's last use, it is not also the update or a start, and no other value
/// shares the buffer; or a reshape that can keep its operand's buffer ([`reshape_in_place`]).
/// `None` (the slots as they were) otherwise, and the executor copies.
fn update_in_place(comp: &Comp, k: usize, slots: &mut [Option<Val>]) -> Result<Option<Val>, Fail> {
    let instr = &comp.instrs[k];
    if matches!(instr.op, Op::Reshape) {
        return reshape_in_place(instr, slots);
    }
    let Some((&target, rest)) = instr.operands.split_first() else { return Ok(None) };
    if !matches!(instr.op, Op::DynamicUpdateSlice)
        || !instr.frees.contains(&target)
        || rest.contains(&target)
    {
        return Ok(None);
    }
    let starts = update_starts(instr, slots)?;
    let Some(owned) = take_unique(slots, target) else { return Ok(None) };
    let update = slots[rest[0]]
        .as_ref()
        .ok_or_else(|| Fail::Internal("operand 1 has no value".into()))?
        .array()?;
    let Tensor { dims, data } = owned;
    let data = shape_ops::update_slice_owned(data, &dims, &update.data, &update.dims, &starts)?;
    Ok(Some(Val::from_data(dims, data)))
}

/// A `reshape` whose operand dies here and shares its buffer with no other value: the buffer
/// moves to the result under the new dimensions (a row-major reshape keeps every element where
/// it is), so the reshape copies nothing. `None` (the slots as they were) otherwise.
fn reshape_in_place(instr: &Instr, slots: &mut [Option<Val>]) -> Result<Option<Val>, Fail> {
    let &[source] = instr.operands.as_slice() else { return Ok(None) };
    if !instr.frees.contains(&source) {
        return Ok(None);
    }
    let Some(owned) = take_unique(slots, source) else { return Ok(None) };
    Ok(Some(Val::from_data(instr.shape.array()?.dims.clone(), owned.data)))
}

/// The array in `slots[at]`, taken out, when no other value shares its buffer; `None`, with the
/// slot as it was, when it is shared or not an array.
fn take_unique(slots: &mut [Option<Val>], at: usize) -> Option<Tensor> {
    match slots[at].take() {
        Some(Val::Array(shared)) => match Arc::try_unwrap(shared) {
            Ok(owned) => Some(owned),
            Err(shared) => {
                slots[at] = Some(Val::Array(shared));
                None
            }
        },
        other => {
            slots[at] = other;
            None
        }
    }
}

/// Wraps kernel outputs as the instruction's value: one array, or a tuple of them.
fn wrap_results(shape: &Shape, outs: Vec<Data>) -> Result<Val, Fail> {
    match shape {
        Shape::Array(a) => {
            let data = outs.into_iter().next().ok_or_else(|| Fail::Internal("no result".into()))?;
            Ok(Val::from_data(a.dims.clone(), data))
        }
        Shape::Tuple(items) => {
            let vals = items
                .iter()
                .zip(outs)
                .map(|(s, d)| Ok(Val::from_data(s.array()?.dims.clone(), d)))
                .collect::<Result<Vec<_>, Fail>>()?;
            Ok(Val::Tuple(Arc::new(vals)))
        }
        Shape::Token => Err(Fail::Internal("token result".into())),
    }
}
