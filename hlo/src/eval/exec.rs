//! The executor: runs a compiled computation instruction by instruction.

use std::cell::Cell;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::boundary::{Array, Input, Output, Value};
use super::collective::{self, Exchange, Peers};
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

/// A rank's parameter values, and per entry instruction the argument bytes lent to it.
type Bound<'a> = (Vec<Val>, Vec<Option<&'a [u8]>>);

/// A deadline for a limit too long to add to the clock: about a century from now, which is
/// never in practice.
fn far_future() -> Instant {
    let now = Instant::now();
    now.checked_add(Duration::from_secs(100 * 365 * 86_400)).unwrap_or(now)
}

impl Program {
    /// Runs the entry computation on `args` (one per entry parameter leaf, in order).
    ///
    /// Arrays are logical (row-major); a caller holding device bytes in a parameter's
    /// non-default layout runs [`Program::run_physical`] (see [`Program::parameter_layouts`]).
    /// An f32 argument that only dots read, in an order the gemm takes, is read where it lies,
    /// and so is a bf16 or f16 argument that one dot reads (a weight), where that dot can;
    /// every other argument is copied once into the interpreter's storage (into storage kept
    /// from the last run when it is large), and each result once out of it. A caller whose data
    /// is not in an `Array` already saves a copy with [`Program::run_inputs`].
    ///
    /// # Errors
    /// [`EvalError::ArgumentCount`] / [`EvalError::Argument`] for arguments that do not match
    /// the parameters, and any error an instruction raises.
    pub fn run(&self, args: &[Array]) -> Result<Value, EvalError> {
        let vals = self.bind(self.inputs_of(args, false, self.lent_leaves())?)?;
        let mut ctx = self.ctx(0, None);
        ctx.lent = self.lent_bytes(args);
        let out = ctx.call(self.entry, vals)?;
        let value = export(&out, &mut std::iter::repeat(None));
        self.recycle(out);
        value
    }

    /// Like [`Program::run`], but each argument's bytes are in the physical order of its
    /// parameter's layout and each result leaf's bytes in the order of its result layout (device
    /// bytes, as a runtime holds them). Leaves with the default layout are unchanged. The
    /// relayout happens while the bytes are copied in and out, so it costs no extra copy.
    ///
    /// # Errors
    /// As [`Program::run`], and [`EvalError::Array`] for bytes that do not fit their shape.
    pub fn run_physical(&self, args: &[Array]) -> Result<Value, EvalError> {
        let vals = self.bind(self.inputs_of(args, true, &[])?)?;
        let out = self.ctx(0, None).call(self.entry, vals)?;
        let value = export(&out, &mut self.result_layouts().into_iter());
        self.recycle(out);
        value
    }

    /// Gives the storage of `val`'s arrays that nothing else shares to the program's pool.
    pub(crate) fn recycle(&self, val: Val) {
        match val {
            Val::Array(tensor) => {
                if let Ok(tensor) = Arc::try_unwrap(tensor) {
                    self.pool.give(tensor.data);
                }
            }
            Val::Tuple(items) => {
                if let Ok(items) = Arc::try_unwrap(items) {
                    items.into_iter().for_each(|item| self.recycle(item));
                }
            }
            Val::Token => {}
        }
    }

    /// Runs the entry computation on arguments already in the interpreter's storage (one per
    /// entry parameter leaf, in order, in logical order: build them with
    /// [`Input::from_physical`] from device bytes in a parameter's layout), consuming them, so
    /// each argument's storage is freed after its last use in the run. The result leaves come
    /// back flattened depth-first, in the interpreter's storage, to be written where they go
    /// with [`Output::write_le_bytes`] or [`Output::write_physical`].
    ///
    /// # Errors
    /// As [`Program::run`].
    pub fn run_inputs(&self, args: Vec<Input>) -> Result<Vec<Output>, EvalError> {
        let vals = self.bind(args)?;
        let out = self.ctx(0, None).call(self.entry, vals)?;
        let mut outputs = Vec::new();
        flatten_outputs(&out, &mut outputs);
        Ok(outputs)
    }

    /// [`Program::run_inputs`] for every rank of one SPMD launch: `args_per_rank[r]` are rank
    /// `r`'s arguments; the result is each rank's flattened result leaves.
    ///
    /// # Errors
    /// As [`Program::run_inputs`]; a failure on one rank is [`EvalError::Rank`] naming the
    /// first that failed.
    pub fn run_spmd_inputs(
        &self,
        args_per_rank: Vec<Vec<Input>>,
    ) -> Result<Vec<Vec<Output>>, EvalError> {
        self.spmd(
            args_per_rank,
            |args| Ok((self.bind(args)?, Vec::new())),
            |out| {
                let mut outputs = Vec::new();
                flatten_outputs(&out, &mut outputs);
                Ok(outputs)
            },
        )
    }

    fn ctx<'p>(&'p self, rank: usize, exchange: Option<&'p Exchange>) -> Ctx<'p> {
        Ctx {
            program: self,
            peers: Peers { rank, exchange },
            meter: Meter::start(self),
            lent: Vec::new(),
        }
    }

    /// Per entry parameter leaf: whether [`Program::run`] (and each rank of an SPMD run) lends
    /// the caller's bytes instead of copying them. A leaf is lent when it is a whole parameter
    /// (not in a tuple), not the root, and either f32 with every instruction that reads it a dot
    /// that takes it in place
    /// ([`DotPlan::reads_f32_in_place`](super::plan::DotPlan::reads_f32_in_place)) with another
    /// f32 operand, or bf16 or f16 and read by one dot, which reads the bytes in place where it can
    /// and decodes them (the copy binding would have made) where it cannot. Nothing else ever
    /// sees the placeholder it is bound to. A decoder's 6 MiB of bf16 weights were a third of
    /// the copying of its launch.
    pub(crate) fn lent_leaves(&self) -> &[bool] {
        &self.lent
    }

    /// What [`Program::lent_leaves`] says, worked out from the entry computation.
    pub(crate) fn find_lent_leaves(&self) -> Vec<bool> {
        let comp = &self.comps[self.entry];
        // How many dot operands read the instruction at `at` (as `f32` in place when `f32`),
        // or `None` when anything else reads it.
        let dot_reads = |at: usize, f32_in_place: bool| {
            let mut dots = 0;
            for instr in &comp.instrs {
                for (side, &operand) in instr.operands.iter().enumerate() {
                    if operand != at {
                        continue;
                    }
                    let (Op::Dot(plan), 0 | 1) = (&instr.op, side) else { return None };
                    let other = instr.operands.get(1 - side).and_then(|&o| comp.instrs.get(o));
                    let other_ty = other.and_then(|o| o.shape.array().ok()).map(|a| a.ty);
                    if f32_in_place
                        && (other_ty != Some(ElementType::F32) || !plan.reads_f32_in_place(side))
                    {
                        return None;
                    }
                    dots += 1;
                }
            }
            Some(dots)
        };
        self.leaf_params()
            .into_iter()
            .zip(self.parameter_leaves())
            .map(|(at, shape)| {
                at.is_some_and(|at| {
                    at != comp.root
                        && match shape.ty {
                            ElementType::F32 => dot_reads(at, true).is_some_and(|n| n > 0),
                            // A narrow float read by one dot: it reads the bytes in place when
                            // it can, and otherwise decodes them, which is the copy that
                            // binding it would have made.
                            ElementType::Bf16 | ElementType::F16 => dot_reads(at, false) == Some(1),
                            _ => false,
                        }
                })
            })
            .collect()
    }

    /// Per entry parameter leaf: the instruction of its parameter when the parameter is that
    /// one array, `None` for leaves inside a tuple parameter.
    fn leaf_params(&self) -> Vec<Option<usize>> {
        let comp = &self.comps[self.entry];
        let mut out = Vec::new();
        for (p, shape) in comp.param_shapes.iter().enumerate() {
            match shape {
                Shape::Array(_) => out.push(comp.params.get(p).copied()),
                _ => leaves(shape, &mut |_| out.push(None)),
            }
        }
        out
    }

    /// The arguments as the interpreter's storage, each checked against its parameter leaf
    /// first; `physical` reads each in its parameter's layout. A leaf `lend` marks gets an empty
    /// placeholder of its type and dimensions: its bytes are lent to the run instead.
    fn inputs_of(
        &self,
        args: &[Array],
        physical: bool,
        lend: &[bool],
    ) -> Result<Vec<Input>, EvalError> {
        let shapes = self.parameter_leaves();
        if shapes.len() != args.len() {
            return Err(EvalError::ArgumentCount { expected: shapes.len(), got: args.len() });
        }
        let mut inputs = Vec::new();
        inputs.try_reserve_exact(args.len()).map_err(|_| EvalError::Allocation {
            what: "the argument list".into(),
            bytes: args.len() as u64,
        })?;
        for (index, (shape, arg)) in shapes.iter().zip(args).enumerate() {
            let expected = super::shape::describe_array(shape.ty, &shape.dims);
            let mismatch =
                |got: String| EvalError::Argument { index, expected: expected.clone(), got };
            let (ty, dims) = arg.check().map_err(|e| mismatch(e.to_string()))?;
            if ty != shape.ty || dims != shape.dims {
                return Err(mismatch(super::shape::describe_array(ty, &dims)));
            }
            if lend.get(index) == Some(&true) {
                let data = Data::zeros(shape.ty, 0)
                    .map_err(|_| EvalError::Allocation { what: expected.clone(), bytes: 0 })?;
                inputs.push(Input { tensor: Tensor { dims: shape.dims.clone(), data } });
                continue;
            }
            inputs.push(match (&shape.layout, physical) {
                (Some(layout), true) => {
                    Input::from_physical(arg.ty, &arg.dims, layout, &arg.bytes)?
                }
                _ => Input::from_le_bytes_pooled(arg.ty, &arg.dims, &arg.bytes, Some(&self.pool))?,
            });
        }
        Ok(inputs)
    }

    /// The entry parameter leaves, in order.
    fn parameter_leaves(&self) -> Vec<&super::shape::ArrayShape> {
        let mut out = Vec::new();
        for shape in &self.comps[self.entry].param_shapes {
            array_leaves(shape, &mut out);
        }
        out
    }

    /// The `minor_to_major` of each entry parameter leaf whose layout is not the default.
    pub fn parameter_layouts(&self) -> Vec<Option<Vec<i64>>> {
        let mut out = Vec::new();
        for shape in &self.comps[self.entry].param_shapes {
            leaves(shape, &mut |a| out.push(a.layout.clone()));
        }
        out
    }

    /// The element type of each entry parameter leaf, in order.
    pub fn parameter_types(&self) -> Vec<proto::PrimitiveType> {
        let mut out = Vec::new();
        for shape in &self.comps[self.entry].param_shapes {
            leaves(shape, &mut |a| {
                out.push(
                    proto::PrimitiveType::try_from(a.ty as i32)
                        .unwrap_or(proto::PrimitiveType::Invalid),
                )
            });
        }
        out
    }

    /// The `minor_to_major` of each result leaf whose layout is not the default.
    pub fn result_layouts(&self) -> Vec<Option<Vec<i64>>> {
        let mut out = Vec::new();
        leaves(self.comps[self.entry].result_shape(), &mut |a| out.push(a.layout.clone()));
        out
    }

    /// Per entry instruction, the caller's bytes of the argument lent to it (see
    /// [`Program::lent_leaves`]); empty when nothing is lent.
    fn lent_bytes<'a>(&self, args: &'a [Array]) -> Vec<Option<&'a [u8]>> {
        let lend = self.lent_leaves();
        if !lend.contains(&true) {
            return Vec::new();
        }
        let mut lent = vec![None; self.comps[self.entry].instrs.len()];
        for (leaf, &at) in self.leaf_params().iter().enumerate() {
            if let (Some(at), Some(true), Some(arg)) = (at, lend.get(leaf), args.get(leaf)) {
                lent[at] = Some(&arg.bytes[..]);
            }
        }
        lent
    }

    /// [`Program::run`] for every rank of one SPMD launch, collectives exchanging data between
    /// the ranks: `args_per_rank[r]` are rank `r`'s arguments, and the result is each rank's
    /// value. Each rank lends its arguments' bytes as [`Program::run`] does, and the storage a
    /// launch frees is kept for the next one, as for [`Program::run`].
    ///
    /// # Errors
    /// As [`Program::run`]; a failure on one rank is [`EvalError::Rank`] naming the first that
    /// failed.
    pub fn run_spmd(&self, args_per_rank: &[Vec<Array>]) -> Result<Vec<Value>, EvalError> {
        self.spmd(
            args_per_rank.iter().collect(),
            |args| {
                let vals = self.bind(self.inputs_of(args, false, self.lent_leaves())?)?;
                Ok((vals, self.lent_bytes(args)))
            },
            |out| {
                let value = export(&out, &mut std::iter::repeat(None));
                self.recycle(out);
                value
            },
        )
    }

    /// Runs rank 0 on the calling thread and every other rank on a thread of its own: `bind`
    /// makes a rank's parameter values of its arguments and the bytes it lends ([`Bound`]),
    /// `finish` its result of the entry's value.
    fn spmd<'a, A: Send, R: Send>(
        &'a self,
        args_per_rank: Vec<A>,
        bind: impl Fn(A) -> Result<Bound<'a>, EvalError> + Sync,
        finish: impl Fn(Val) -> Result<R, EvalError> + Sync,
    ) -> Result<Vec<R>, EvalError> {
        let n = args_per_rank.len();
        if n == 0 {
            return Ok(Vec::new());
        }
        let exchange = Exchange::new(n);
        let (bind, finish, exchange) = (&bind, &finish, &exchange);
        let run_rank = |rank: usize, args: A| -> Result<R, EvalError> {
            let mut ctx = self.ctx(rank, Some(exchange));
            let share = super::par::cores().div_ceil(n);
            let result = super::par::with_core_share(share, || {
                bind(args)
                    .and_then(|(vals, lent)| {
                        ctx.lent = lent;
                        ctx.call(self.entry, vals)
                    })
                    .and_then(finish)
            });
            if result.is_err() {
                exchange.abort(rank);
            }
            result
        };
        // Rank 0 runs on the calling thread, the others each on a rank thread of its own
        // (`rank_threads`, kept between launches), not on the kernel pool: a rank blocks in the
        // exchange until every rank has come, so all must run at once, and the pool has one
        // thread per core.
        let jobs: Vec<_> = args_per_rank
            .into_iter()
            .enumerate()
            .map(|(rank, args)| {
                let run_rank = &run_rank;
                move || run_rank(rank, args)
            })
            .collect();
        let results: Vec<Result<R, EvalError>> =
            super::rank_threads::run_all(jobs, |rank| exchange.abort(rank))
                .into_iter()
                .map(|result| {
                    result.unwrap_or_else(|| {
                        Err(EvalError::Module {
                            detail: "its thread could not be started, or it panicked (a bug)"
                                .into(),
                        })
                    })
                })
                .collect();
        let first = exchange.first_failure();
        let mut values = Vec::with_capacity(n);
        let mut failure = None;
        for (rank, result) in results.into_iter().enumerate() {
            match result {
                Ok(v) => values.push(v),
                Err(e) => {
                    let primary = first.is_none_or(|f| f == rank);
                    if failure.is_none() || (primary && first == Some(rank)) {
                        failure = Some((rank, e));
                    }
                }
            }
        }
        match failure {
            Some((rank, source)) => Err(EvalError::Rank { rank, source: Box::new(source) }),
            None => Ok(values),
        }
    }

    /// Binds arguments to the entry parameters, checking each against its leaf (the storage is
    /// moved, not copied).
    fn bind(&self, args: Vec<Input>) -> Result<Vec<Val>, EvalError> {
        let count = self.parameter_leaves().len();
        if count != args.len() {
            return Err(EvalError::ArgumentCount { expected: count, got: args.len() });
        }
        let mut args = args.into_iter().enumerate();
        self.comps[self.entry].param_shapes.iter().map(|shape| bind_one(shape, &mut args)).collect()
    }
}

fn leaves(shape: &Shape, f: &mut dyn FnMut(&super::shape::ArrayShape)) {
    match shape {
        Shape::Array(a) => f(a),
        Shape::Tuple(items) => items.iter().for_each(|s| leaves(s, f)),
        Shape::Token => {}
    }
}

fn array_leaves<'s>(shape: &'s Shape, out: &mut Vec<&'s super::shape::ArrayShape>) {
    match shape {
        Shape::Array(a) => out.push(a),
        Shape::Tuple(items) => items.iter().for_each(|s| array_leaves(s, out)),
        Shape::Token => {}
    }
}

fn bind_one(
    shape: &Shape,
    args: &mut dyn Iterator<Item = (usize, Input)>,
) -> Result<Val, EvalError> {
    match shape {
        Shape::Token => Ok(Val::Token),
        Shape::Tuple(items) => {
            let vals = items.iter().map(|s| bind_one(s, args)).collect::<Result<Vec<_>, _>>()?;
            Ok(Val::Tuple(Arc::new(vals)))
        }
        Shape::Array(a) => {
            let Some((index, arg)) = args.next() else {
                return Err(EvalError::Module { detail: "fewer arguments than leaves".into() });
            };
            let tensor = arg.tensor;
            if tensor.ty() != a.ty || tensor.dims != a.dims {
                return Err(EvalError::Argument {
                    index,
                    expected: super::shape::describe_array(a.ty, &a.dims),
                    got: super::shape::describe_array(tensor.ty(), &tensor.dims),
                });
            }
            Ok(Val::Array(Arc::new(tensor)))
        }
    }
}

/// The entry's value as [`Value`]s, each array leaf copied once into bytes, in the physical
/// order of the next of `layouts` when that is `Some`.
fn export(
    val: &Val,
    layouts: &mut dyn Iterator<Item = Option<Vec<i64>>>,
) -> Result<Value, EvalError> {
    match val {
        Val::Array(t) => {
            let layout = layouts.next().flatten();
            let output = Output { tensor: Arc::clone(t) };
            Ok(Value::Array(output.to_physical_array(layout.as_deref())?))
        }
        Val::Tuple(items) => {
            Ok(Value::Tuple(items.iter().map(|v| export(v, layouts)).collect::<Result<_, _>>()?))
        }
        Val::Token => Ok(Value::Tuple(Vec::new())),
    }
}

/// The array leaves of a value, depth-first, sharing its storage.
fn flatten_outputs(val: &Val, out: &mut Vec<Output>) {
    match val {
        Val::Array(t) => out.push(Output { tensor: Arc::clone(t) }),
        Val::Tuple(items) => items.iter().for_each(|v| flatten_outputs(v, out)),
        Val::Token => {}
    }
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
                    self.program.recycle(dead);
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
