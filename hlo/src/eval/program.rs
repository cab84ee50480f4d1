//! Every method of [`Program`], the public face of a compiled module: compiling a module (the
//! plan is built by `compile`), running it on one rank or on every rank of an SPMD launch (the
//! plan is run by `exec`), and the shapes and layouts of its parameters and results. This is
//! the top of the interpreter: it imports the compiler and the executor, and nothing imports it.

use std::sync::Arc;

use super::boundary::{Array, Input, Output, Value};
use super::collective::{Exchange, Peers};
use super::compile;
use super::error::EvalError;
use super::exec::Ctx;
use super::options::{EvalOptions, RunLimits};
use super::plan::{Op, Program};
use super::shape::Shape;
use super::tensor::{Data, Tensor, Val};
use crate::dtype::ElementType;
use crate::proto;

/// A rank's parameter values, and per entry instruction the argument bytes lent to it.
type Bound<'a> = (Vec<Val>, Vec<Option<&'a [u8]>>);

impl Program {
    /// Checks a module and builds its plan.
    ///
    /// # Errors
    /// [`EvalError::Module`] for a module without its entry computation, duplicate ids or a cycle
    /// in the call graph; [`EvalError::Invalid`], [`EvalError::Unsupported`] and
    /// [`EvalError::Budget`] naming the instruction that does not fit.
    pub fn compile(
        module: &proto::HloModuleProto,
        options: &EvalOptions,
    ) -> Result<Program, EvalError> {
        let mut program = compile::compile(module, options)?;
        program.lent = program.find_lent_leaves();
        Ok(program)
    }

    /// Sets the limits every later run of this program gets ([`EvalOptions::device_time_limit`],
    /// [`EvalOptions::work_budget`] and [`EvalOptions::time_limit`]): they are read when a run
    /// starts, not at compile time, so a runtime that compiles a module at load can apply its
    /// per-launch limits afterwards.
    pub fn set_run_limits(&mut self, limits: &RunLimits) {
        self.options.device_time_limit = limits.device_time_limit;
        self.options.work_budget = limits.work_budget;
        self.options.time_limit = limits.time_limit;
    }

    /// The entry computation's parameter shapes, as text such as `f32[2,3]`.
    pub fn parameter_shapes(&self) -> Vec<String> {
        self.comps[self.entry].param_shapes.iter().map(Shape::describe).collect()
    }

    /// The entry computation's result shape, as text.
    pub fn result_shape(&self) -> String {
        self.comps[self.entry].result_shape().describe()
    }

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
        let mut ctx = Ctx::new(self, Peers { rank: 0, exchange: None });
        ctx.lend(self.lent_bytes(args));
        let out = ctx.call(self.entry, vals)?;
        let value = export(&out, &mut std::iter::repeat(None));
        self.pool.recycle(out);
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
        let out = Ctx::new(self, Peers { rank: 0, exchange: None }).call(self.entry, vals)?;
        let value = export(&out, &mut self.result_layouts().into_iter());
        self.pool.recycle(out);
        value
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
        let out = Ctx::new(self, Peers { rank: 0, exchange: None }).call(self.entry, vals)?;
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
                self.pool.recycle(out);
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
            let mut ctx = Ctx::new(self, Peers { rank, exchange: Some(exchange) });
            let share = super::par::cores().div_ceil(n);
            let result = super::par::with_core_share(share, || {
                bind(args)
                    .and_then(|(vals, lent)| {
                        ctx.lend(lent);
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
