//! From `HloModuleProto` to a checked plan: shapes, operand indices and decoded attributes.
//!
//! Every check that keeps a kernel in bounds happens here, once, with an error naming the
//! computation and instruction; the executor and kernels then trust the plan.

use std::collections::HashMap;
use std::sync::Arc;

use std::time::Duration;

use super::conv::ConvPlan;
use super::dot::DotPlan;
use super::elementwise::{Binary, Direction, Unary};
use super::gather::{GatherPlan, ScatterPlan};
use super::program::{Comp, Groups, Instr, Op, Program, Reducer, SimpleComparator};
use super::reduce::WindowDim;
use super::shape::{ArrayShape, Shape, check_budget, parse_shape, shape_bytes, shape_elems};
use super::shape_ops::PadDim;
use super::tensor::{Data, Tensor};
use super::{Array, EvalError, EvalOptions, Fail};
use crate::dtype::ElementType;
use crate::proto;

fn module_error(detail: impl Into<String>) -> EvalError {
    EvalError::Module { detail: detail.into() }
}

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
        let mut by_id: HashMap<i64, usize> = HashMap::new();
        for (index, computation) in module.computations.iter().enumerate() {
            if by_id.insert(computation.id, index).is_some() {
                return Err(module_error(format!(
                    "computation id {} is used twice (second: {})",
                    computation.id, computation.name
                )));
            }
        }
        let entry_index = by_id
            .get(&module.entry_computation_id)
            .copied()
            .or_else(|| {
                module.computations.iter().position(|c| {
                    !module.entry_computation_name.is_empty()
                        && c.name == module.entry_computation_name
                })
            })
            .ok_or_else(|| {
                module_error(format!(
                    "entry computation id {} ({:?}) is not among the {} computations",
                    module.entry_computation_id,
                    module.entry_computation_name,
                    module.computations.len()
                ))
            })?;
        let order = call_graph_order(module, &by_id, entry_index)?;
        let mut compiler =
            Compiler { module, by_id: &by_id, plan: HashMap::new(), comps: Vec::new(), options };
        for index in order {
            let comp = compiler.computation(index)?;
            compiler.plan.insert(index, compiler.comps.len());
            compiler.comps.push(comp);
        }
        let entry = compiler.plan[&entry_index];
        Ok(Program { comps: compiler.comps, entry, options: options.clone() })
    }

    /// Sets the limits every later run of this program gets ([`EvalOptions::work_budget`] and
    /// [`EvalOptions::time_limit`]): they are read when a run starts, not at compile time, so a
    /// runtime that compiles a module at load can apply its per-launch limits afterwards.
    pub fn set_run_limits(&mut self, work_budget: Option<u64>, time_limit: Option<Duration>) {
        self.options.work_budget = work_budget;
        self.options.time_limit = time_limit;
    }

    /// The entry computation's parameter shapes, as text such as `f32[2,3]`.
    pub fn parameter_shapes(&self) -> Vec<String> {
        self.comps[self.entry].param_shapes.iter().map(Shape::describe).collect()
    }

    /// The entry computation's result shape, as text.
    pub fn result_shape(&self) -> String {
        self.comps[self.entry].result_shape().describe()
    }
}

/// Computations reachable from the entry, callees before callers (iterative DFS, so a deep call
/// graph cannot overflow the stack); a cycle is an error.
fn call_graph_order(
    module: &proto::HloModuleProto,
    by_id: &HashMap<i64, usize>,
    entry: usize,
) -> Result<Vec<usize>, EvalError> {
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        New,
        Open,
        Done,
    }
    let callees = |index: usize| -> Result<Vec<usize>, EvalError> {
        let computation = &module.computations[index];
        let mut out = Vec::new();
        for instruction in &computation.instructions {
            for id in &instruction.called_computation_ids {
                let callee = by_id.get(id).copied().ok_or_else(|| {
                    module_error(format!(
                        "computation {}, instruction {}: called computation id {id} does not exist",
                        computation.name, instruction.name
                    ))
                })?;
                out.push(callee);
            }
        }
        Ok(out)
    };
    let mut state = vec![State::New; module.computations.len()];
    let mut order = Vec::new();
    let mut stack: Vec<(usize, Vec<usize>)> = vec![(entry, callees(entry)?)];
    state[entry] = State::Open;
    while let Some((node, pending)) = stack.last_mut() {
        if let Some(next) = pending.pop() {
            match state[next] {
                State::Done => {}
                State::Open => {
                    return Err(module_error(format!(
                        "computation {} calls itself through the call graph",
                        module.computations[next].name
                    )));
                }
                State::New => {
                    state[next] = State::Open;
                    let children = callees(next)?;
                    stack.push((next, children));
                }
            }
        } else {
            let node = *node;
            state[node] = State::Done;
            order.push(node);
            stack.pop();
        }
    }
    Ok(order)
}

struct Compiler<'m> {
    module: &'m proto::HloModuleProto,
    by_id: &'m HashMap<i64, usize>,
    /// Proto computation index → plan index.
    plan: HashMap<usize, usize>,
    comps: Vec<Comp>,
    options: &'m EvalOptions,
}

fn invalid(detail: impl Into<String>) -> Fail {
    Fail::Invalid(detail.into())
}

/// The work an instruction is charged each time it runs: [`super::INSTRUCTION_WORK`], plus the
/// elements it reads and writes, plus the inner products of dot, convolution and windowed ops.
/// Ops that only pass values on (tuples, parameters, loops, calls) are charged the fixed part
/// alone: what their callees do is charged by the callees' own instructions.
fn work_of(op: &Op, shape: &Shape, operands: &[&Shape]) -> u64 {
    let fixed = super::INSTRUCTION_WORK;
    let moved =
        || operands.iter().fold(shape_elems(shape), |n, s| n.saturating_add(shape_elems(s)));
    let window = |window: &[WindowDim]| {
        window.iter().fold(1u64, |n, w| n.saturating_mul(w.size.max(1) as u64))
    };
    let extra = match op {
        Op::Parameter(_)
        | Op::Constant(_)
        | Op::Tuple
        | Op::GetTupleElement(_)
        | Op::Call(_)
        | Op::While { .. }
        | Op::Conditional { .. }
        | Op::PassThrough
        | Op::AfterAll
        | Op::ReplicaId => return fixed,
        Op::Dot(plan) => plan.multiply_adds(),
        Op::Convolution(plan) => plan.multiply_adds(shape_elems(shape)),
        Op::ReduceWindow { window: dims, .. } => shape_elems(shape).saturating_mul(window(dims)),
        Op::SelectAndScatter { window: dims, .. } => {
            operands.get(1).map_or(0, |s| shape_elems(s)).saturating_mul(window(dims))
        }
        Op::Sort { .. } => {
            let n = shape_elems(shape);
            n.saturating_mul(u64::from(64 - n.leading_zeros()))
        }
        _ => 0,
    };
    fixed.saturating_add(moved()).saturating_add(extra)
}

fn to_usize(value: i64, what: &str) -> Result<usize, Fail> {
    usize::try_from(value).map_err(|_| invalid(format!("{what} {value} must not be negative")))
}

fn dims_list(values: &[i64], rank: usize, what: &str) -> Result<Vec<usize>, Fail> {
    let mut seen = vec![false; rank];
    values
        .iter()
        .map(|&v| {
            let d = usize::try_from(v).ok().filter(|&d| d < rank && !seen[d]);
            match d {
                Some(d) => {
                    seen[d] = true;
                    Ok(d)
                }
                None => Err(invalid(format!(
                    "{what} {values:?}: each must be a distinct dimension below rank {rank}"
                ))),
            }
        })
        .collect()
}

/// Reads a literal into a tensor of `shape`.
pub(crate) fn literal_tensor(
    literal: &proto::LiteralProto,
    shape: &ArrayShape,
) -> Result<Tensor, Fail> {
    let n = shape.n_elems();
    fn check_len(got: usize, n: usize, what: &str) -> Result<(), Fail> {
        if got == n {
            Ok(())
        } else {
            Err(invalid(format!("literal has {got} {what}, expected {n}")))
        }
    }
    let bytes_of = |bytes: &[u8], size: usize, what: &str| -> Result<Data, Fail> {
        check_len(bytes.len() / size.max(1), n, what)?;
        if !bytes.len().is_multiple_of(size) {
            return Err(invalid(format!(
                "literal {what} is {} bytes, not a multiple of {size}",
                bytes.len()
            )));
        }
        Data::from_le_bytes(shape.ty, bytes)
    };
    let data = match shape.ty {
        ElementType::Pred => {
            check_len(literal.preds.len(), n, "preds")?;
            Data::Pred(literal.preds.clone())
        }
        ElementType::S8 => bytes_of(&literal.s8s, 1, "s8s")?,
        ElementType::U8 => bytes_of(&literal.u8s, 1, "u8s")?,
        ElementType::S16 => bytes_of(&literal.s16s, 2, "s16s")?,
        ElementType::U16 => bytes_of(&literal.u16s, 2, "u16s")?,
        ElementType::F16 => bytes_of(&literal.f16s, 2, "f16s")?,
        ElementType::Bf16 => bytes_of(&literal.bf16s, 2, "bf16s")?,
        ElementType::F8e5m2 => bytes_of(&literal.f8e5m2s, 1, "f8e5m2s")?,
        ElementType::F8e4m3fn => bytes_of(&literal.f8e4m3fns, 1, "f8e4m3fns")?,
        ElementType::F8e4m3 => bytes_of(&literal.f8e4m3s, 1, "f8e4m3s")?,
        ElementType::S32 => {
            check_len(literal.s32s.len(), n, "s32s")?;
            Data::S32(literal.s32s.clone())
        }
        ElementType::S64 => {
            check_len(literal.s64s.len(), n, "s64s")?;
            Data::S64(literal.s64s.clone())
        }
        ElementType::U32 => {
            check_len(literal.u32s.len(), n, "u32s")?;
            Data::U32(literal.u32s.clone())
        }
        ElementType::U64 => {
            check_len(literal.u64s.len(), n, "u64s")?;
            Data::U64(literal.u64s.clone())
        }
        ElementType::F32 => {
            check_len(literal.f32s.len(), n, "f32s")?;
            Data::F32(literal.f32s.clone())
        }
        ElementType::F64 => {
            check_len(literal.f64s.len(), n, "f64s")?;
            Data::F64(literal.f64s.clone())
        }
    };
    let tensor = Tensor { dims: shape.dims.clone(), data };
    match &shape.layout {
        None => Ok(tensor),
        Some(layout) => {
            let bytes = tensor.data.to_le_bytes()?;
            let proto_ty = proto::PrimitiveType::try_from(shape.ty as i32)
                .map_err(|_| Fail::Internal("element type number".into()))?;
            let dims: Vec<i64> = shape.dims.iter().map(|&d| d as i64).collect();
            let array = Array::from_physical(proto_ty, dims, layout, bytes)
                .map_err(|e| invalid(e.to_string()))?;
            Ok(Tensor {
                dims: shape.dims.clone(),
                data: Data::from_le_bytes(shape.ty, &array.bytes)?,
            })
        }
    }
}

impl Compiler<'_> {
    fn callee(
        &self,
        instruction: &proto::HloInstructionProto,
        position: usize,
    ) -> Result<usize, Fail> {
        let id = instruction.called_computation_ids.get(position).ok_or_else(|| {
            invalid(format!(
                "expected at least {} called computations, got {}",
                position + 1,
                instruction.called_computation_ids.len()
            ))
        })?;
        let proto_index = self
            .by_id
            .get(id)
            .ok_or_else(|| invalid(format!("called computation id {id} does not exist")))?;
        self.plan
            .get(proto_index)
            .copied()
            .ok_or_else(|| Fail::Internal(format!("computation id {id} compiled out of order")))
    }

    fn computation(&self, index: usize) -> Result<Comp, EvalError> {
        let computation = &self.module.computations[index];
        let name = computation.name.clone();
        let at = |instruction: &str| {
            let name = name.clone();
            let instruction = instruction.to_owned();
            let budget = self.options.budget_bytes;
            move |fail: Fail| fail.at(&name, &instruction, budget)
        };
        // Topological order (Kahn), operands resolved within the computation.
        let count = computation.instructions.len();
        let mut by_id: HashMap<i64, usize> = HashMap::with_capacity(count);
        for (i, instruction) in computation.instructions.iter().enumerate() {
            if by_id.insert(instruction.id, i).is_some() {
                return Err(at(&instruction.name)(invalid(format!(
                    "instruction id {} is used twice",
                    instruction.id
                ))));
            }
        }
        let mut operand_index: Vec<Vec<usize>> = Vec::with_capacity(count);
        let mut users: Vec<Vec<usize>> = vec![Vec::new(); count];
        let mut pending = vec![0usize; count];
        for (i, instruction) in computation.instructions.iter().enumerate() {
            let mut resolved = Vec::with_capacity(instruction.operand_ids.len());
            for id in instruction.operand_ids.iter().chain(&instruction.control_predecessor_ids) {
                let Some(&j) = by_id.get(id) else {
                    return Err(at(&instruction.name)(invalid(format!(
                        "operand id {id} is not in the computation"
                    ))));
                };
                users[j].push(i);
                pending[i] += 1;
                resolved.push(j);
            }
            resolved.truncate(instruction.operand_ids.len());
            operand_index.push(resolved);
        }
        let mut ready: Vec<usize> = (0..count).filter(|&i| pending[i] == 0).rev().collect();
        let mut topo = Vec::with_capacity(count);
        while let Some(i) = ready.pop() {
            topo.push(i);
            for &u in users[i].iter().rev() {
                pending[u] -= 1;
                if pending[u] == 0 {
                    ready.push(u);
                }
            }
        }
        if topo.len() != count {
            let stuck = (0..count)
                .find(|&i| pending[i] > 0)
                .map(|i| computation.instructions[i].name.clone());
            return Err(module_error(format!(
                "computation {name}: instructions form a cycle (through {})",
                stuck.unwrap_or_default()
            )));
        }
        let mut new_index = vec![0usize; count];
        for (k, &i) in topo.iter().enumerate() {
            new_index[i] = k;
        }
        let mut instrs: Vec<Instr> = Vec::with_capacity(count);
        let mut params: Vec<Option<usize>> = Vec::new();
        for &i in &topo {
            let instruction = &computation.instructions[i];
            let operands: Vec<usize> = operand_index[i].iter().map(|&j| new_index[j]).collect();
            let instr =
                self.instruction(instruction, &operands, &instrs).map_err(at(&instruction.name))?;
            if let Op::Parameter(n) = instr.op {
                if params.len() <= n {
                    params.resize(n + 1, None);
                }
                if params[n].replace(instrs.len()).is_some() {
                    return Err(at(&instruction.name)(invalid(format!(
                        "parameter number {n} appears twice"
                    ))));
                }
            }
            instrs.push(instr);
        }
        let params: Vec<usize> = params
            .iter()
            .enumerate()
            .map(|(n, p)| {
                p.ok_or_else(|| {
                    module_error(format!("computation {name}: parameter {n} is missing"))
                })
            })
            .collect::<Result<_, _>>()?;
        let root = by_id
            .get(&computation.root_id)
            .map(|&i| new_index[i])
            .or_else(|| (count > 0).then(|| new_index[count - 1]))
            .ok_or_else(|| module_error(format!("computation {name} has no instructions")))?;
        super::fusion::fuse(&mut instrs, root);
        // Last uses, so the executor can free values early.
        let mut last_use: Vec<Option<usize>> = vec![None; instrs.len()];
        for (k, instr) in instrs.iter().enumerate() {
            for &o in &instr.operands {
                last_use[o] = Some(k);
            }
        }
        for (value, user) in last_use.iter().enumerate() {
            if let Some(user) = user
                && value != root
                && !instrs[*user].frees.contains(&value)
            {
                instrs[*user].frees.push(value);
            }
        }
        let param_shapes = params.iter().map(|&p| instrs[p].shape.clone()).collect();
        let mut comp = Comp {
            name,
            instrs,
            params,
            param_shapes,
            root,
            reducer: None,
            comparator: None,
            recognised: Default::default(),
        };
        comp.reducer = recognise_reducer(&comp);
        comp.comparator = recognise_comparator(&comp);
        comp.recognised = super::recognise::recognise(&comp);
        Ok(comp)
    }

    fn instruction(
        &self,
        instruction: &proto::HloInstructionProto,
        operands: &[usize],
        earlier: &[Instr],
    ) -> Result<Instr, Fail> {
        let shape_proto =
            instruction.shape.as_ref().ok_or_else(|| invalid("instruction has no shape"))?;
        let shape = parse_shape(shape_proto)?;
        check_budget(shape_bytes(&shape), self.options.budget_bytes)?;
        let operand_shapes: Vec<&Shape> = operands.iter().map(|&o| &earlier[o].shape).collect();
        let op = self.op(instruction, &shape, &operand_shapes)?;
        let work = work_of(&op, &shape, &operand_shapes);
        Ok(Instr {
            name: instruction.name.clone(),
            op,
            operands: operands.to_vec(),
            shape,
            frees: Vec::new(),
            work,
        })
    }

    fn expect(&self, shape: &Shape, inferred: &Shape) -> Result<(), Fail> {
        if shape.same(inferred) {
            Ok(())
        } else {
            Err(invalid(format!(
                "shape is {}, but the operands give {}",
                shape.describe(),
                inferred.describe()
            )))
        }
    }

    fn arity(&self, operands: &[&Shape], n: usize) -> Result<(), Fail> {
        if operands.len() == n {
            Ok(())
        } else {
            Err(invalid(format!("expected {n} operands, got {}", operands.len())))
        }
    }

    fn scalar_computation(
        &self,
        comp: usize,
        n_params: usize,
        ty: &[ElementType],
    ) -> Result<(), Fail> {
        let c = &self.comps[comp];
        if c.param_shapes.len() != n_params {
            return Err(invalid(format!(
                "called computation {} takes {} parameters, expected {n_params}",
                c.name,
                c.param_shapes.len()
            )));
        }
        for (i, p) in c.param_shapes.iter().enumerate() {
            let want = ty[i % ty.len()];
            let ok = matches!(p, Shape::Array(a) if a.dims.is_empty() && a.ty == want);
            if !ok {
                return Err(invalid(format!(
                    "called computation {} parameter {i} is {}, expected {want}[]",
                    c.name,
                    p.describe()
                )));
            }
        }
        Ok(())
    }

    fn op(
        &self,
        ins: &proto::HloInstructionProto,
        shape: &Shape,
        operands: &[&Shape],
    ) -> Result<Op, Fail> {
        let opcode = ins.opcode.as_str();
        // The tables decide what is supported (`list-operators` prints them): opcodes, and
        // custom calls by their target.
        if opcode != "custom-call" && !super::opcodes::is_evaluated(opcode) {
            return Err(Fail::Unsupported(format!("opcode {opcode}")));
        }
        if opcode == "custom-call"
            && !super::opcodes::is_evaluated_custom_call(&ins.custom_call_target)
        {
            return Err(Fail::Unsupported(format!("custom call {}", ins.custom_call_target)));
        }
        if let Some(op) = Unary::from_opcode(opcode) {
            self.arity(operands, 1)?;
            let a = operands[0].array()?;
            let out_ty = if op == Unary::IsFinite { ElementType::Pred } else { a.ty };
            if !op.accepts(a.ty) {
                return Err(invalid(format!("{opcode} is not defined for {}", a.ty)));
            }
            self.expect(
                shape,
                &Shape::Array(ArrayShape { ty: out_ty, dims: a.dims.clone(), layout: None }),
            )?;
            return Ok(Op::Unary(op));
        }
        if let Some(op) = Binary::from_opcode(opcode) {
            self.arity(operands, 2)?;
            let (a, b) = (operands[0].array()?, operands[1].array()?);
            if !a.same(b) {
                return Err(invalid(format!(
                    "operands differ: {} and {}",
                    operands[0].describe(),
                    operands[1].describe()
                )));
            }
            if !op.accepts(a.ty) {
                return Err(invalid(format!("{opcode} is not defined for {}", a.ty)));
            }
            self.expect(shape, operands[0])?;
            return Ok(Op::Binary(op));
        }
        let out = || shape.array();
        Ok(match opcode {
            "parameter" => {
                self.arity(operands, 0)?;
                Op::Parameter(to_usize(ins.parameter_number, "parameter_number")?)
            }
            "constant" => {
                let literal =
                    ins.literal.as_ref().ok_or_else(|| invalid("constant has no literal"))?;
                match shape {
                    Shape::Array(a) => Op::Constant(Arc::new(literal_tensor(literal, a)?)),
                    other => {
                        return Err(Fail::Unsupported(format!(
                            "constant of shape {}",
                            other.describe()
                        )));
                    }
                }
            }
            "tuple" => {
                self.expect(shape, &Shape::Tuple(operands.iter().map(|s| (*s).clone()).collect()))?;
                Op::Tuple
            }
            "get-tuple-element" => {
                self.arity(operands, 1)?;
                let index = to_usize(ins.tuple_index, "tuple_index")?;
                let Shape::Tuple(items) = operands[0] else {
                    return Err(invalid(format!(
                        "operand is {}, expected a tuple",
                        operands[0].describe()
                    )));
                };
                let item = items.get(index).ok_or_else(|| {
                    invalid(format!(
                        "tuple_index {index} is out of range for {} elements",
                        items.len()
                    ))
                })?;
                self.expect(shape, item)?;
                Op::GetTupleElement(index)
            }
            "call" | "fusion" => {
                let callee = self.callee(ins, 0)?;
                self.check_call(callee, operands, shape)?;
                Op::Call(callee)
            }
            "while" => {
                self.arity(operands, 1)?;
                let body = self.callee(ins, 0)?;
                let condition = self.callee(ins, 1)?;
                self.check_call(body, operands, operands[0])?;
                let pred =
                    Shape::Array(ArrayShape { ty: ElementType::Pred, dims: vec![], layout: None });
                self.check_call(condition, operands, &pred)?;
                self.expect(shape, operands[0])?;
                Op::While { condition, body }
            }
            "conditional" => {
                if operands.is_empty() {
                    return Err(invalid("conditional needs a predicate or branch index"));
                }
                let selector = operands[0].array()?;
                let n = ins.called_computation_ids.len();
                let ok = selector.dims.is_empty()
                    && match selector.ty {
                        ElementType::Pred => n == 2,
                        ElementType::S32 => n >= 1,
                        _ => false,
                    };
                if !ok {
                    return Err(invalid(format!(
                        "conditional selector is {} with {n} branches, expected pred[] with 2 or s32[] with at least 1",
                        operands[0].describe()
                    )));
                }
                self.arity(operands, n + 1)?;
                let branches: Vec<usize> =
                    (0..n).map(|i| self.callee(ins, i)).collect::<Result<_, _>>()?;
                for (i, &b) in branches.iter().enumerate() {
                    self.check_call(b, &operands[i + 1..i + 2], shape)?;
                }
                Op::Conditional { branches }
            }
            "broadcast" => {
                self.arity(operands, 1)?;
                let a = operands[0].array()?;
                let o = out()?;
                let mapping = dims_list(&ins.dimensions, o.dims.len(), "dimensions")?;
                let ok = a.ty == o.ty
                    && mapping.len() == a.dims.len()
                    && mapping.iter().enumerate().all(|(i, &j)| a.dims[i] == o.dims[j]);
                if !ok {
                    return Err(invalid(format!(
                        "broadcast of {} to {} with dimensions {:?} does not fit",
                        operands[0].describe(),
                        shape.describe(),
                        ins.dimensions
                    )));
                }
                Op::Broadcast(mapping)
            }
            "bitcast" => {
                self.arity(operands, 1)?;
                let a = operands[0].array()?;
                let o = out()?;
                let n_bytes = |s: &ArrayShape| s.n_elems().checked_mul(s.ty.item_size());
                if n_bytes(a).is_none() || n_bytes(a) != n_bytes(o) {
                    return Err(invalid(format!(
                        "bitcast of {} to {} changes the byte size",
                        operands[0].describe(),
                        shape.describe()
                    )));
                }
                if a.ty == o.ty && a.layout.is_none() && o.layout.is_none() {
                    Op::Reshape
                } else {
                    let default = |rank: usize| (0..rank as i64).rev().collect::<Vec<i64>>();
                    Op::Bitcast {
                        from: a.layout.clone().unwrap_or_else(|| default(a.dims.len())),
                        to: o.layout.clone().unwrap_or_else(|| default(o.dims.len())),
                    }
                }
            }
            "reshape" | "copy" => {
                self.arity(operands, 1)?;
                let a = operands[0].array()?;
                let o = out()?;
                if a.ty != o.ty
                    || a.n_elems() != o.n_elems()
                    || (opcode == "copy" && a.dims != o.dims)
                {
                    return Err(invalid(format!(
                        "{opcode} of {} to {} changes the element type or count",
                        operands[0].describe(),
                        shape.describe()
                    )));
                }
                Op::Reshape
            }
            "transpose" => {
                self.arity(operands, 1)?;
                let a = operands[0].array()?;
                let permutation = dims_list(&ins.dimensions, a.dims.len(), "dimensions")?;
                if permutation.len() != a.dims.len() {
                    return Err(invalid(format!(
                        "permutation {:?} is not of rank {}",
                        ins.dimensions,
                        a.dims.len()
                    )));
                }
                let dims = permutation.iter().map(|&p| a.dims[p]).collect();
                self.expect(shape, &Shape::Array(ArrayShape { ty: a.ty, dims, layout: None }))?;
                Op::Transpose(permutation)
            }
            "convert" => {
                self.arity(operands, 1)?;
                let a = operands[0].array()?;
                let o = out()?;
                if a.dims != o.dims {
                    return Err(invalid(format!(
                        "convert of {} to {} changes dimensions",
                        operands[0].describe(),
                        shape.describe()
                    )));
                }
                Op::Convert(o.ty)
            }
            "bitcast-convert" => {
                self.arity(operands, 1)?;
                let a = operands[0].array()?;
                let o = out()?;
                let (from, to) = (a.ty.item_size(), o.ty.item_size());
                let ok = if from == to {
                    a.dims == o.dims
                } else if from > to {
                    o.dims.len() == a.dims.len() + 1
                        && o.dims[..a.dims.len()] == a.dims[..]
                        && o.dims[a.dims.len()] == from / to
                } else {
                    a.dims.len() == o.dims.len() + 1
                        && a.dims[..o.dims.len()] == o.dims[..]
                        && a.dims[o.dims.len()] == to / from
                };
                if !ok || a.ty == ElementType::Pred || o.ty == ElementType::Pred {
                    return Err(invalid(format!(
                        "bitcast-convert of {} to {} does not keep the bits",
                        operands[0].describe(),
                        shape.describe()
                    )));
                }
                Op::BitcastConvert
            }
            "slice" => {
                self.arity(operands, 1)?;
                let a = operands[0].array()?;
                if ins.slice_dimensions.len() != a.dims.len() {
                    return Err(invalid(format!(
                        "slice has {} slice_dimensions for rank {}",
                        ins.slice_dimensions.len(),
                        a.dims.len()
                    )));
                }
                let mut starts = Vec::new();
                let mut steps = Vec::new();
                let mut dims = Vec::new();
                for (axis, s) in ins.slice_dimensions.iter().enumerate() {
                    let ok = s.start >= 0
                        && s.start <= s.limit
                        && s.limit <= a.dims[axis] as i64
                        && s.stride >= 1;
                    if !ok {
                        return Err(invalid(format!(
                            "slice [{}:{}:{}] does not fit dimension {axis} of size {}",
                            s.start, s.limit, s.stride, a.dims[axis]
                        )));
                    }
                    starts.push(s.start as usize);
                    steps.push(s.stride as usize);
                    dims.push(((s.limit - s.start + s.stride - 1) / s.stride) as usize);
                }
                self.expect(shape, &Shape::Array(ArrayShape { ty: a.ty, dims, layout: None }))?;
                Op::Slice { starts, steps }
            }
            "dynamic-slice" => {
                let a = operands
                    .first()
                    .ok_or_else(|| invalid("dynamic-slice needs an operand"))?
                    .array()?;
                self.arity(operands, 1 + a.dims.len())?;
                self.scalar_indices(&operands[1..])?;
                let sizes: Vec<usize> = ins
                    .dynamic_slice_sizes
                    .iter()
                    .map(|&s| to_usize(s, "dynamic_slice_sizes"))
                    .collect::<Result<_, _>>()?;
                if sizes.len() != a.dims.len() || sizes.iter().zip(&a.dims).any(|(s, d)| s > d) {
                    return Err(invalid(format!(
                        "dynamic_slice_sizes {:?} do not fit {}",
                        ins.dynamic_slice_sizes,
                        operands[0].describe()
                    )));
                }
                self.expect(
                    shape,
                    &Shape::Array(ArrayShape { ty: a.ty, dims: sizes, layout: None }),
                )?;
                Op::DynamicSlice
            }
            "dynamic-update-slice" => {
                let a = operands
                    .first()
                    .ok_or_else(|| invalid("dynamic-update-slice needs an operand"))?
                    .array()?;
                self.arity(operands, 2 + a.dims.len())?;
                let u = operands[1].array()?;
                if u.ty != a.ty
                    || u.dims.len() != a.dims.len()
                    || u.dims.iter().zip(&a.dims).any(|(s, d)| s > d)
                {
                    return Err(invalid(format!(
                        "update {} does not fit in {}",
                        operands[1].describe(),
                        operands[0].describe()
                    )));
                }
                self.scalar_indices(&operands[2..])?;
                self.expect(shape, operands[0])?;
                Op::DynamicUpdateSlice
            }
            "concatenate" => {
                let first = operands
                    .first()
                    .ok_or_else(|| invalid("concatenate needs operands"))?
                    .array()?;
                let axis = dims_list(&ins.dimensions, first.dims.len(), "dimensions")?;
                let [axis] = axis[..] else {
                    return Err(invalid(format!(
                        "concatenate needs one dimension, got {:?}",
                        ins.dimensions
                    )));
                };
                let mut dims = first.dims.clone();
                dims[axis] = 0;
                for s in operands {
                    let a = s.array()?;
                    let ok = a.ty == first.ty
                        && a.dims.len() == first.dims.len()
                        && a.dims
                            .iter()
                            .zip(&first.dims)
                            .enumerate()
                            .all(|(i, (x, y))| i == axis || x == y);
                    if !ok {
                        return Err(invalid(format!(
                            "operand {} does not concatenate with {} on dimension {axis}",
                            s.describe(),
                            operands[0].describe()
                        )));
                    }
                    dims[axis] += a.dims[axis];
                }
                self.expect(shape, &Shape::Array(ArrayShape { ty: first.ty, dims, layout: None }))?;
                Op::Concatenate(axis)
            }
            "pad" => {
                self.arity(operands, 2)?;
                let a = operands[0].array()?;
                let v = operands[1].array()?;
                if v.ty != a.ty || !v.dims.is_empty() {
                    return Err(invalid(format!(
                        "padding value is {}, expected {}[]",
                        operands[1].describe(),
                        a.ty
                    )));
                }
                let config =
                    ins.padding_config.as_ref().map(|c| c.dimensions.as_slice()).unwrap_or(&[]);
                if config.len() != a.dims.len() {
                    return Err(invalid(format!(
                        "padding_config has {} dimensions for rank {}",
                        config.len(),
                        a.dims.len()
                    )));
                }
                let mut pads = Vec::new();
                let mut dims = Vec::new();
                for (axis, c) in config.iter().enumerate() {
                    let d = a.dims[axis] as i128;
                    let size = i128::from(c.edge_padding_low)
                        + i128::from(c.edge_padding_high)
                        + d
                        + (d - 1).max(0) * i128::from(c.interior_padding);
                    if c.interior_padding < 0 || size < 0 || size > i128::from(u32::MAX) * 1024 {
                        return Err(invalid(format!(
                            "padding {}_{}_{} of dimension {axis} (size {d}) gives size {size}",
                            c.edge_padding_low, c.edge_padding_high, c.interior_padding
                        )));
                    }
                    dims.push(size as usize);
                    pads.push(PadDim {
                        low: c.edge_padding_low,
                        high: c.edge_padding_high,
                        interior: c.interior_padding,
                    });
                }
                self.expect(shape, &Shape::Array(ArrayShape { ty: a.ty, dims, layout: None }))?;
                Op::Pad(pads)
            }
            "iota" => {
                self.arity(operands, 0)?;
                let o = out()?;
                let axis = dims_list(&ins.dimensions, o.dims.len(), "iota_dimension")?;
                let [axis] = axis[..] else {
                    return Err(invalid(format!(
                        "iota needs one dimension, got {:?}",
                        ins.dimensions
                    )));
                };
                Op::Iota(axis)
            }
            "reverse" => {
                self.arity(operands, 1)?;
                let a = operands[0].array()?;
                let dims = dims_list(&ins.dimensions, a.dims.len(), "dimensions")?;
                self.expect(shape, operands[0])?;
                Op::Reverse(dims)
            }
            "select" => {
                self.arity(operands, 3)?;
                let p = operands[0].array()?;
                let t = operands[1].array()?;
                if !operands[1].same(operands[2])
                    || p.ty != ElementType::Pred
                    || !(p.dims.is_empty() || p.dims == t.dims)
                {
                    return Err(invalid(format!(
                        "select({}, {}, {}) does not fit",
                        operands[0].describe(),
                        operands[1].describe(),
                        operands[2].describe()
                    )));
                }
                self.expect(shape, operands[1])?;
                Op::Select
            }
            "clamp" => {
                self.arity(operands, 3)?;
                let x = operands[1].array()?;
                for bound in [operands[0], operands[2]] {
                    let b = bound.array()?;
                    if b.ty != x.ty || !(b.dims.is_empty() || b.dims == x.dims) {
                        return Err(invalid(format!(
                            "clamp bound {} does not fit {}",
                            bound.describe(),
                            operands[1].describe()
                        )));
                    }
                }
                if x.ty == ElementType::Pred {
                    return Err(invalid("clamp is not defined for pred"));
                }
                self.expect(shape, operands[1])?;
                Op::Clamp
            }
            "compare" => {
                self.arity(operands, 2)?;
                let a = operands[0].array()?;
                if !operands[0].same(operands[1]) {
                    return Err(invalid(format!(
                        "operands differ: {} and {}",
                        operands[0].describe(),
                        operands[1].describe()
                    )));
                }
                let direction = Direction::parse(&ins.comparison_direction).ok_or_else(|| {
                    invalid(format!(
                        "comparison_direction {:?} is not EQ/NE/LT/LE/GT/GE",
                        ins.comparison_direction
                    ))
                })?;
                let total_order = ins.comparison_type.eq_ignore_ascii_case("TOTALORDER");
                self.expect(
                    shape,
                    &Shape::Array(ArrayShape {
                        ty: ElementType::Pred,
                        dims: a.dims.clone(),
                        layout: None,
                    }),
                )?;
                Op::Compare { direction, total_order }
            }
            "dot" => {
                self.arity(operands, 2)?;
                let numbers = ins.dot_dimension_numbers.clone().unwrap_or_default();
                Op::Dot(DotPlan::new(operands[0].array()?, operands[1].array()?, &numbers, out()?)?)
            }
            "convolution" => {
                self.arity(operands, 2)?;
                let numbers = ins
                    .convolution_dimension_numbers
                    .as_ref()
                    .ok_or_else(|| invalid("convolution has no convolution_dimension_numbers"))?;
                let window = ins.window.clone().unwrap_or_default();
                Op::Convolution(Box::new(ConvPlan::new(
                    operands[0].array()?,
                    operands[1].array()?,
                    numbers,
                    &window,
                    ins.feature_group_count.max(1),
                    ins.batch_group_count.max(1),
                    out()?,
                    self.options.budget_bytes,
                )?))
            }
            "reduce" => {
                let computation = self.callee(ins, 0)?;
                if operands.is_empty() || !operands.len().is_multiple_of(2) {
                    return Err(invalid(format!(
                        "reduce needs inputs and as many init values, got {} operands",
                        operands.len()
                    )));
                }
                let n = operands.len() / 2;
                let first = operands[0].array()?;
                let dims = dims_list(&ins.dimensions, first.dims.len(), "dimensions")?;
                let mut types = Vec::new();
                let mut outs = Vec::new();
                let kept: Vec<usize> = (0..first.dims.len())
                    .filter(|d| !dims.contains(d))
                    .map(|d| first.dims[d])
                    .collect();
                for i in 0..n {
                    let a = operands[i].array()?;
                    let init = operands[n + i].array()?;
                    if a.dims != first.dims || init.ty != a.ty || !init.dims.is_empty() {
                        return Err(invalid(format!(
                            "reduce input {} or init {} does not fit {}",
                            operands[i].describe(),
                            operands[n + i].describe(),
                            operands[0].describe()
                        )));
                    }
                    types.push(a.ty);
                    outs.push(Shape::Array(ArrayShape {
                        ty: a.ty,
                        dims: kept.clone(),
                        layout: None,
                    }));
                }
                self.scalar_computation(computation, 2 * n, &types)?;
                self.check_scalar_result(computation, &types)?;
                let inferred = if n == 1 { outs.remove(0) } else { Shape::Tuple(outs) };
                self.expect(shape, &inferred)?;
                Op::Reduce { computation, dims }
            }
            "reduce-window" => {
                let computation = self.callee(ins, 0)?;
                if operands.is_empty() || !operands.len().is_multiple_of(2) {
                    return Err(invalid(format!(
                        "reduce-window needs inputs and init values, got {} operands",
                        operands.len()
                    )));
                }
                let n = operands.len() / 2;
                let first = operands[0].array()?;
                let window = super::reduce::window_dims(ins.window.as_ref(), first.dims.len())?;
                let dims: Vec<usize> = window
                    .iter()
                    .zip(&first.dims)
                    .map(|(w, &d)| w.output_size(d))
                    .collect::<Result<_, _>>()?;
                let mut types = Vec::new();
                let mut outs = Vec::new();
                for i in 0..n {
                    let a = operands[i].array()?;
                    let init = operands[n + i].array()?;
                    if a.dims != first.dims || init.ty != a.ty || !init.dims.is_empty() {
                        return Err(invalid("reduce-window inputs and inits do not fit"));
                    }
                    types.push(a.ty);
                    outs.push(Shape::Array(ArrayShape {
                        ty: a.ty,
                        dims: dims.clone(),
                        layout: None,
                    }));
                }
                self.scalar_computation(computation, 2 * n, &types)?;
                self.check_scalar_result(computation, &types)?;
                let inferred = if n == 1 { outs.remove(0) } else { Shape::Tuple(outs) };
                self.expect(shape, &inferred)?;
                Op::ReduceWindow { computation, window }
            }
            "select-and-scatter" => {
                self.arity(operands, 3)?;
                let select = self.callee(ins, 0)?;
                let scatter = self.callee(ins, 1)?;
                let a = operands[0].array()?;
                let source = operands[1].array()?;
                let init = operands[2].array()?;
                let window = super::reduce::window_dims(ins.window.as_ref(), a.dims.len())?;
                let dims: Vec<usize> = window
                    .iter()
                    .zip(&a.dims)
                    .map(|(w, &d)| w.output_size(d))
                    .collect::<Result<_, _>>()?;
                if source.dims != dims
                    || source.ty != a.ty
                    || init.ty != a.ty
                    || !init.dims.is_empty()
                {
                    return Err(invalid(format!(
                        "select-and-scatter source {} does not fit the windows of {} ({:?})",
                        operands[1].describe(),
                        operands[0].describe(),
                        dims
                    )));
                }
                self.scalar_computation(select, 2, &[a.ty])?;
                self.check_scalar_result(select, &[ElementType::Pred])?;
                self.scalar_computation(scatter, 2, &[a.ty])?;
                self.check_scalar_result(scatter, &[a.ty])?;
                self.expect(shape, operands[0])?;
                Op::SelectAndScatter { select, scatter, window }
            }
            "gather" => {
                self.arity(operands, 2)?;
                let numbers = ins
                    .gather_dimension_numbers
                    .as_ref()
                    .ok_or_else(|| invalid("gather has no gather_dimension_numbers"))?;
                let plan = GatherPlan::new(
                    operands[0].array()?,
                    operands[1].array()?,
                    numbers,
                    &ins.gather_slice_sizes,
                )?;
                self.expect(
                    shape,
                    &Shape::Array(ArrayShape {
                        ty: operands[0].array()?.ty,
                        dims: plan.out_dims.clone(),
                        layout: None,
                    }),
                )?;
                Op::Gather(Box::new(plan))
            }
            "scatter" => {
                let computation = self.callee(ins, 0)?;
                if operands.len() < 3 || !(operands.len() - 1).is_multiple_of(2) {
                    return Err(invalid(format!(
                        "scatter needs operands, indices and updates, got {} operands",
                        operands.len()
                    )));
                }
                let n = (operands.len() - 1) / 2;
                let numbers = ins
                    .scatter_dimension_numbers
                    .as_ref()
                    .ok_or_else(|| invalid("scatter has no scatter_dimension_numbers"))?;
                let plan = ScatterPlan::new(
                    operands[0].array()?,
                    operands[n].array()?,
                    operands[n + 1].array()?,
                    numbers,
                    computation,
                )?;
                let mut types = Vec::new();
                for i in 0..n {
                    let a = operands[i].array()?;
                    let u = operands[n + 1 + i].array()?;
                    if a.dims != operands[0].array()?.dims
                        || u.dims != operands[n + 1].array()?.dims
                        || u.ty != a.ty
                    {
                        return Err(invalid("scatter operands and updates do not fit each other"));
                    }
                    types.push(a.ty);
                }
                self.scalar_computation(computation, 2 * n, &types)?;
                self.check_scalar_result(computation, &types)?;
                let inferred = if n == 1 {
                    operands[0].clone()
                } else {
                    Shape::Tuple(operands[..n].iter().map(|s| (*s).clone()).collect())
                };
                self.expect(shape, &inferred)?;
                Op::Scatter(Box::new(plan))
            }
            "sort" => {
                let computation = self.callee(ins, 0)?;
                let first =
                    operands.first().ok_or_else(|| invalid("sort needs operands"))?.array()?;
                let [dim] = dims_list(&ins.dimensions, first.dims.len().max(1), "dimensions")?[..]
                else {
                    return Err(invalid(format!(
                        "sort needs one dimension, got {:?}",
                        ins.dimensions
                    )));
                };
                if first.dims.is_empty() {
                    return Err(invalid("sort of a scalar"));
                }
                let mut types = Vec::new();
                for s in operands {
                    let a = s.array()?;
                    if a.dims != first.dims {
                        return Err(invalid(format!(
                            "sort operand {} differs from {}",
                            s.describe(),
                            operands[0].describe()
                        )));
                    }
                    types.push(a.ty);
                    types.push(a.ty);
                }
                self.scalar_computation(computation, 2 * operands.len(), &types)?;
                self.check_scalar_result(computation, &[ElementType::Pred])?;
                let inferred = if operands.len() == 1 {
                    operands[0].clone()
                } else {
                    Shape::Tuple(operands.iter().map(|s| (*s).clone()).collect())
                };
                self.expect(shape, &inferred)?;
                Op::Sort { dim, computation }
            }
            "topk" => {
                self.arity(operands, 1)?;
                let a = operands[0].array()?;
                let k = to_usize(ins.k, "k")?;
                let last = a.dims.last().copied().ok_or_else(|| invalid("topk of a scalar"))?;
                if k > last {
                    return Err(invalid(format!("k {k} is larger than the last dimension {last}")));
                }
                let mut dims = a.dims.clone();
                *dims.last_mut().unwrap_or(&mut 0) = k;
                let inferred = Shape::Tuple(vec![
                    Shape::Array(ArrayShape { ty: a.ty, dims: dims.clone(), layout: None }),
                    Shape::Array(ArrayShape { ty: ElementType::S32, dims, layout: None }),
                ]);
                self.expect(shape, &inferred)?;
                Op::TopK { k, largest: ins.largest, indices: ElementType::S32 }
            }
            "map" => {
                let computation = self.callee(ins, 0)?;
                let first =
                    operands.first().ok_or_else(|| invalid("map needs operands"))?.array()?;
                let mut types = Vec::new();
                for s in operands {
                    let a = s.array()?;
                    if a.dims != first.dims {
                        return Err(invalid("map operands differ in dimensions"));
                    }
                    types.push(a.ty);
                }
                self.scalar_computation(computation, operands.len(), &types)?;
                let result = self.comps[computation].result_shape().array()?;
                self.expect(
                    shape,
                    &Shape::Array(ArrayShape {
                        ty: result.ty,
                        dims: first.dims.clone(),
                        layout: None,
                    }),
                )?;
                Op::Map(computation)
            }
            "reduce-precision" => {
                self.arity(operands, 1)?;
                let a = operands[0].array()?;
                if !a.ty.is_float() || ins.exponent_bits < 1 || ins.mantissa_bits < 0 {
                    return Err(invalid(format!(
                        "reduce-precision of {} to e{}m{}",
                        operands[0].describe(),
                        ins.exponent_bits,
                        ins.mantissa_bits
                    )));
                }
                self.expect(shape, operands[0])?;
                Op::ReducePrecision {
                    exponent_bits: ins.exponent_bits as u32,
                    mantissa_bits: ins.mantissa_bits as u32,
                }
            }
            "optimization-barrier" | "add-dependency" => {
                let first = operands
                    .first()
                    .ok_or_else(|| invalid(format!("{opcode} needs an operand")))?;
                self.expect(shape, first)?;
                Op::PassThrough
            }
            "after-all" => Op::AfterAll,
            "replica-id" | "partition-id" => {
                self.expect(
                    shape,
                    &Shape::Array(ArrayShape { ty: ElementType::U32, dims: vec![], layout: None }),
                )?;
                Op::ReplicaId
            }
            "all-reduce" => {
                let computation = self.callee(ins, 0)?;
                let mut types = Vec::new();
                for s in operands {
                    types.push(s.array()?.ty);
                }
                if types.is_empty() {
                    return Err(invalid("all-reduce needs operands"));
                }
                self.scalar_computation(computation, 2, &types[..1])?;
                let inferred = if operands.len() == 1 {
                    operands[0].clone()
                } else {
                    Shape::Tuple(operands.iter().map(|s| (*s).clone()).collect())
                };
                self.expect(shape, &inferred)?;
                Op::AllReduce { computation, groups: groups(ins)? }
            }
            "all-gather" => {
                self.arity(operands, 1)?;
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
                self.arity(operands, 1)?;
                let computation = self.callee(ins, 0)?;
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
                self.scalar_computation(computation, 2, &[a.ty])?;
                Op::ReduceScatter { dim, computation, groups: groups(ins)? }
            }
            "all-to-all" => {
                let split_dim = match ins.dimensions[..] {
                    [] => None,
                    [d] => {
                        self.arity(operands, 1)?;
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
                self.expect(shape, &inferred)?;
                Op::AllToAll { split_dim, groups: groups(ins)? }
            }
            "collective-permute" => {
                self.arity(operands, 1)?;
                self.expect(shape, operands[0])?;
                let pairs = ins
                    .source_target_pairs
                    .iter()
                    .map(|p| Ok((to_usize(p.source, "source")?, to_usize(p.target, "target")?)))
                    .collect::<Result<_, Fail>>()?;
                Op::CollectivePermute { pairs }
            }
            "custom-call" if ins.custom_call_target == "TopK" => {
                // XLA CPU's own top-k runtime call (what its optimiser turns sort + slice into):
                // the k largest along the last dimension, k from the result shape.
                let k = self.top_k_call(operands, shape, "TopK", ElementType::S32)?;
                Op::TopK { k, largest: true, indices: ElementType::S32 }
            }
            "custom-call" if ins.custom_call_target == "AwsNeuronTopK" => {
                // Neuron's top-k (nkipy's `topk`, `nkipy/core/backend/hlo.py`): the k largest
                // along the last dimension, largest first, u32 indices, k in the result shape
                // and, as decimal text, in `backend_config`.
                let k = self.top_k_call(operands, shape, "AwsNeuronTopK", ElementType::U32)?;
                if !ins.backend_config.is_empty() {
                    let text = String::from_utf8_lossy(&ins.backend_config);
                    if text.trim().parse::<usize>().ok() != Some(k) {
                        return Err(invalid(format!(
                            "AwsNeuronTopK backend_config {text:?} is not the result's k {k}"
                        )));
                    }
                }
                Op::TopK { k, largest: true, indices: ElementType::U32 }
            }
            "custom-call" => {
                return Err(Fail::Unsupported(format!("custom call {}", ins.custom_call_target)));
            }
            other => return Err(Fail::Unsupported(format!("opcode {other}"))),
        })
    }

    /// The k of a top-k custom call `target` returning (values, indices of `indices`), checked
    /// against its operand: k from the result shape, at most the last dimension.
    fn top_k_call(
        &self,
        operands: &[&Shape],
        shape: &Shape,
        target: &str,
        indices: ElementType,
    ) -> Result<usize, Fail> {
        self.arity(operands, 1)?;
        let a = operands[0].array()?;
        let k = match shape {
            Shape::Tuple(items) => match items.as_slice() {
                [Shape::Array(v), Shape::Array(_)] => v.dims.last().copied(),
                _ => None,
            },
            _ => None,
        };
        let k = k.ok_or_else(|| {
            invalid(format!(
                "{target} returns {}, expected a (values, indices) tuple",
                shape.describe()
            ))
        })?;
        let last =
            a.dims.last().copied().ok_or_else(|| invalid(format!("{target} of a scalar")))?;
        if k > last {
            return Err(invalid(format!(
                "{target} k {k} is larger than the last dimension {last}"
            )));
        }
        let mut dims = a.dims.clone();
        if let Some(d) = dims.last_mut() {
            *d = k;
        }
        let inferred = Shape::Tuple(vec![
            Shape::Array(ArrayShape { ty: a.ty, dims: dims.clone(), layout: None }),
            Shape::Array(ArrayShape { ty: indices, dims, layout: None }),
        ]);
        self.expect(shape, &inferred)?;
        Ok(k)
    }

    fn scalar_indices(&self, operands: &[&Shape]) -> Result<(), Fail> {
        for s in operands {
            let a = s.array()?;
            if !a.dims.is_empty() || !(a.ty.is_signed_int() || a.ty.is_unsigned_int()) {
                return Err(invalid(format!(
                    "index operand is {}, expected an integer scalar",
                    s.describe()
                )));
            }
        }
        Ok(())
    }

    fn check_call(&self, callee: usize, operands: &[&Shape], result: &Shape) -> Result<(), Fail> {
        let c = &self.comps[callee];
        if c.param_shapes.len() != operands.len()
            || c.param_shapes.iter().zip(operands).any(|(p, o)| !p.same(o))
        {
            let given: Vec<String> = operands.iter().map(|s| s.describe()).collect();
            let wanted: Vec<String> = c.param_shapes.iter().map(Shape::describe).collect();
            return Err(invalid(format!(
                "called computation {} takes ({}), given ({})",
                c.name,
                wanted.join(", "),
                given.join(", ")
            )));
        }
        if !c.result_shape().same(result) {
            return Err(invalid(format!(
                "called computation {} returns {}, expected {}",
                c.name,
                c.result_shape().describe(),
                result.describe()
            )));
        }
        Ok(())
    }

    fn check_scalar_result(&self, computation: usize, types: &[ElementType]) -> Result<(), Fail> {
        let c = &self.comps[computation];
        let scalar = |ty: ElementType| Shape::Array(ArrayShape { ty, dims: vec![], layout: None });
        let expected = if types.len() == 1 {
            scalar(types[0])
        } else {
            Shape::Tuple(types.iter().map(|&t| scalar(t)).collect())
        };
        if c.result_shape().same(&expected) {
            Ok(())
        } else {
            Err(invalid(format!(
                "called computation {} returns {}, expected {}",
                c.name,
                c.result_shape().describe(),
                expected.describe()
            )))
        }
    }
}

fn groups(ins: &proto::HloInstructionProto) -> Result<Groups, Fail> {
    let groups = ins.collective_groups().map_err(|e| invalid(e.to_string()))?;
    groups
        .iter()
        .map(|g| g.iter().map(|&r| to_usize(r, "replica id")).collect::<Result<Vec<_>, _>>())
        .collect()
}

/// One binary op of the two parameters, or the second parameter alone.
fn recognise_reducer(comp: &Comp) -> Option<Reducer> {
    if comp.params.len() != 2 {
        return None;
    }
    let root = &comp.instrs[comp.root];
    if comp.root == comp.params[1] {
        return Some(Reducer::Replace);
    }
    let Op::Binary(op) = root.op else { return None };
    let (a, b) = (root.operands[0], root.operands[1]);
    let (p0, p1) = (comp.params[0], comp.params[1]);
    let commutative = matches!(
        op,
        Binary::Add
            | Binary::Mul
            | Binary::Max
            | Binary::Min
            | Binary::And
            | Binary::Or
            | Binary::Xor
    );
    ((a == p0 && b == p1) || (commutative && a == p1 && b == p0)).then_some(Reducer::Binary(op))
}

/// One compare of parameters 2k and 2k+1 (in either order).
fn recognise_comparator(comp: &Comp) -> Option<SimpleComparator> {
    if comp.params.len() < 2 || !comp.params.len().is_multiple_of(2) {
        return None;
    }
    let root = &comp.instrs[comp.root];
    let Op::Compare { direction, total_order } = root.op else { return None };
    let (a, b) = (root.operands[0], root.operands[1]);
    let pa = comp.params.iter().position(|&p| p == a)?;
    let pb = comp.params.iter().position(|&p| p == b)?;
    if pa / 2 != pb / 2 || pa == pb {
        return None;
    }
    Some(SimpleComparator { operand: pa / 2, direction, total_order, swapped: pa % 2 == 1 })
}
