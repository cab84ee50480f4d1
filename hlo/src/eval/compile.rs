//! From `HloModuleProto` to a checked plan: shapes, operand indices and decoded attributes.
//!
//! Every check that keeps a kernel in bounds happens here, once, with an error naming the
//! computation and instruction; the executor and kernels then trust the plan.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::error::{EvalError, Fail};
use super::inline::{Body, MAX_BODY, MAX_NESTING, inline_calls, inlining_allowance, nesting};
use super::op_context::{OpContext, invalid};
use super::options::{EvalOptions, INSTRUCTION_WORK};
use super::plan::WindowDim;
use super::plan::{Comp, Instr, Op, Program, Reducer, SimpleComparator};
use super::scalar::{Binary, Direction, Unary};
use super::shape::{Shape, check_budget, parse_shape, shape_bytes, shape_elems};
use super::tensor::{BufferPool, POOL_MAX_IDLE_BYTES};
use crate::dtype::ElementType;
use crate::proto;

fn module_error(detail: impl Into<String>) -> EvalError {
    EvalError::Module { detail: detail.into() }
}

/// Checks a module and builds its plan, every check a kernel relies on done here; the plan's
/// lent leaves are left for [`Program::compile`] to find.
pub(crate) fn compile(
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
                !module.entry_computation_name.is_empty() && c.name == module.entry_computation_name
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
    // Per called computation, how many of the computations compiled below call it: its body
    // is dropped when the last of them has been compiled.
    let mut callers_left: HashMap<usize, usize> = HashMap::new();
    for &index in &order {
        for callee in calls_of(module, &by_id, index) {
            *callers_left.entry(callee).or_default() += 1;
        }
    }
    let module_instructions = module.computations.iter().map(|c| c.instructions.len()).sum();
    let mut allowance = inlining_allowance(module_instructions);
    let mut compiler = Compiler {
        module,
        by_id: &by_id,
        plan: HashMap::new(),
        comps: Vec::new(),
        bodies: HashMap::new(),
        called: called_by_call(module, &by_id),
        options,
    };
    // Per plan index, how deep the computation runs others inside itself.
    let mut nesting_of: Vec<usize> = Vec::new();
    for index in order {
        let (comp, body) = compiler.computation(index, &mut allowance)?;
        let depth = nesting(&comp, &nesting_of);
        if depth > MAX_NESTING {
            return Err(module_error(format!(
                "computation {} runs computations {depth} deep, expected at most {MAX_NESTING} (the nesting limit)",
                comp.name
            )));
        }
        nesting_of.push(depth);
        let at = compiler.comps.len();
        compiler.plan.insert(index, at);
        compiler.comps.push(comp);
        if let Some(body) = body {
            compiler.bodies.insert(at, Arc::new(body));
        }
        for callee in calls_of(module, &by_id, index) {
            let left = callers_left.get_mut(&callee).map(|n| {
                *n -= 1;
                *n
            });
            if left == Some(0) {
                compiler.bodies.remove(&compiler.plan[&callee]);
            }
        }
    }
    let entry = compiler.plan[&entry_index];
    let pool = BufferPool::with_limit(options.budget_bytes.min(POOL_MAX_IDLE_BYTES));
    super::tensor::raise_allocator_thresholds();
    Ok(Program { comps: compiler.comps, entry, options: options.clone(), pool, lent: vec![] })
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

/// The computations that the `call` and `fusion` instructions of computation `index` call, each
/// once (proto indices).
fn calls_of(
    module: &proto::HloModuleProto,
    by_id: &HashMap<i64, usize>,
    index: usize,
) -> HashSet<usize> {
    let calls = module.computations[index].instructions.iter();
    calls
        .filter(|i| matches!(i.opcode.as_str(), "call" | "fusion"))
        .filter_map(|i| i.called_computation_ids.first().and_then(|id| by_id.get(id)).copied())
        .collect()
}

/// The computations some `call` or `fusion` instruction calls (proto indices).
fn called_by_call(module: &proto::HloModuleProto, by_id: &HashMap<i64, usize>) -> HashSet<usize> {
    let calls = module.computations.iter().flat_map(|c| &c.instructions);
    calls
        .filter(|i| matches!(i.opcode.as_str(), "call" | "fusion"))
        .filter_map(|i| i.called_computation_ids.first().and_then(|id| by_id.get(id)).copied())
        .collect()
}

struct Compiler<'m> {
    module: &'m proto::HloModuleProto,
    by_id: &'m HashMap<i64, usize>,
    /// Proto computation index → plan index.
    plan: HashMap<usize, usize>,
    comps: Vec<Comp>,
    /// Plan index → the computation's plan before fusion, for inlining its calls.
    bodies: HashMap<usize, Arc<Body>>,
    /// Proto computation indices that a `call` (or `fusion`) calls: only their bodies are kept.
    called: HashSet<usize>,
    options: &'m EvalOptions,
}

/// What an instruction is charged each time it runs, as `(work, device_fs)`.
///
/// The work is [`super::INSTRUCTION_WORK`], plus the elements it reads and writes, plus the
/// inner products of dot, convolution and windowed ops. The device time is the lower bound of
/// [`super::device_time`]: the larger of one instruction's latency, its elements at the engines'
/// peak rate, and its multiply-adds at the tensor engine's peak rate.
/// Ops that only pass values on (tuples, parameters, loops, calls) are charged the fixed work
/// alone and no device time: what their callees do is charged by the callees' own instructions.
fn cost_of(op: &Op, shape: &Shape, operands: &[&Shape]) -> (u64, u64) {
    use super::options::device_time::{ELEMENT_FS, INSTRUCTION_FS, MULTIPLY_ADD_FS};
    let fixed = INSTRUCTION_WORK;
    let moved = operands.iter().fold(shape_elems(shape), |n, s| n.saturating_add(shape_elems(s)));
    let window = |window: &[WindowDim]| {
        window.iter().fold(1u64, |n, w| n.saturating_mul(w.size.max(1) as u64))
    };
    // Inner products: multiply-adds on the tensor engine, or window steps on the vector engine.
    let (multiply_adds, steps) = match op {
        Op::Parameter(_)
        | Op::Constant(_)
        | Op::Tuple
        | Op::GetTupleElement(_)
        | Op::Call(_)
        | Op::While { .. }
        | Op::Conditional { .. }
        | Op::PassThrough
        | Op::AfterAll
        | Op::ReplicaId => return (fixed, 0),
        Op::Dot(plan) => (plan.multiply_adds(), 0),
        Op::Convolution(plan) => (plan.multiply_adds(shape_elems(shape)), 0),
        Op::ReduceWindow { window: dims, .. } => {
            (0, shape_elems(shape).saturating_mul(window(dims)))
        }
        Op::SelectAndScatter { window: dims, .. } => {
            (0, operands.get(1).map_or(0, |s| shape_elems(s)).saturating_mul(window(dims)))
        }
        Op::NkiKernel(call) => {
            // Each NKI instruction is at least one instruction's fixed time on the device.
            let count = call.program.instructions.len() as u64;
            let work = fixed.saturating_add(moved).saturating_add(count);
            return (work, INSTRUCTION_FS.saturating_mul(count.max(1)));
        }
        Op::Sort { .. } => {
            let n = shape_elems(shape);
            (0, n.saturating_mul(u64::from(64 - n.leading_zeros())))
        }
        _ => (0, 0),
    };
    let work = fixed.saturating_add(moved).saturating_add(multiply_adds).saturating_add(steps);
    let device_fs = INSTRUCTION_FS
        .max(moved.saturating_add(steps).saturating_mul(ELEMENT_FS))
        .max(multiply_adds.saturating_mul(MULTIPLY_ADD_FS));
    (work, device_fs)
}

impl Compiler<'_> {
    /// Compiles computation `index`; with it, its plan before fusion when calls of it may be
    /// inlined.
    fn computation(
        &self,
        index: usize,
        allowance: &mut usize,
    ) -> Result<(Comp, Option<Body>), EvalError> {
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
        let body_of = |c: usize| self.bodies.get(&c).cloned();
        let (mut instrs, new_of) = inline_calls(instrs, root, &body_of, allowance);
        let (params, root): (Vec<usize>, usize) =
            (params.iter().map(|&p| new_of[p]).collect(), new_of[root]);
        let body = (self.called.contains(&index) && instrs.len() <= MAX_BODY).then(|| Body {
            name: Arc::from(name.as_str()),
            instrs: instrs.clone(),
            root,
        });
        let reducer_of = |c: usize| self.comps.get(c).and_then(|comp| comp.reducer);
        super::fusion::fuse(&mut instrs, root, &reducer_of);
        super::dot::read_slices_in_place(&mut instrs, root);
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
        Ok((comp, body))
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
        let (work, device_fs) = cost_of(&op, &shape, &operand_shapes);
        Ok(Instr {
            name: instruction.name.clone(),
            op,
            operands: operands.to_vec(),
            shape,
            frees: Vec::new(),
            work,
            device_fs,
            inlined_from: None,
        })
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
        let cx = OpContext {
            ins,
            shape,
            operands,
            comps: &self.comps,
            by_id: self.by_id,
            plan: &self.plan,
            budget_bytes: self.options.budget_bytes,
        };
        if let Some(op) = Unary::from_opcode(opcode) {
            return super::elementwise::compile_unary(&cx, op);
        }
        if let Some(op) = Binary::from_opcode(opcode) {
            return super::elementwise::compile_binary(&cx, op);
        }
        match opcode {
            "parameter" | "constant" | "tuple" | "get-tuple-element" | "call" | "fusion"
            | "while" | "conditional" | "opt-barrier" | "add-dependency" | "after-all"
            | "replica-id" | "partition-id" => super::structure::compile_structure(&cx),
            "broadcast" | "bitcast" | "reshape" | "copy" | "transpose" | "reverse" => {
                super::shape_ops::compile_rearrangement(&cx)
            }
            "slice" | "dynamic-slice" | "dynamic-update-slice" | "concatenate" | "pad" | "iota" => {
                super::shape_ops::compile_indexing(&cx)
            }
            "convert" | "bitcast-convert" | "select" | "clamp" | "compare" | "map"
            | "reduce-precision" => super::elementwise::compile_elementwise(&cx),
            "dot" => super::dot::compile_dot(&cx),
            "convolution" => super::conv::compile_convolution(&cx),
            "reduce" | "reduce-window" | "select-and-scatter" => super::reduce::compile_reduce(&cx),
            "gather" | "scatter" => super::gather::compile_gather(&cx),
            "sort" | "topk" => super::sort::compile_sort(&cx),
            "batch-norm-training" | "batch-norm-inference" => {
                super::batch_norm::compile_batch_norm(&cx)
            }
            "custom-call" if ins.custom_call_target == super::nki_call::TARGET => {
                super::nki_call::compile(&cx)
            }
            "custom-call"
                if matches!(ins.custom_call_target.as_str(), "TopK" | "AwsNeuronTopK") =>
            {
                super::sort::compile_sort(&cx)
            }
            "all-reduce" | "all-gather" | "reduce-scatter" | "all-to-all"
            | "collective-permute" => super::collective::compile_collective(&cx),
            "custom-call" => {
                Err(Fail::Unsupported(format!("custom call {}", ins.custom_call_target)))
            }
            other => Err(Fail::Unsupported(format!("opcode {other}"))),
        }
    }
}

/// One binary op of the two parameters, or the second parameter alone; or, for a reducer of
/// two `pred` scalars, the boolean function its truth table is (torch-xla writes `all` as
/// compares, an `and` and a select of constants, which would otherwise run as one call per
/// element).
fn recognise_reducer(comp: &Comp) -> Option<Reducer> {
    if comp.params.len() != 2 {
        return None;
    }
    if let Some(op) = boolean_reducer(comp) {
        return Some(Reducer::Binary(op));
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

/// The `and`, `or` or `xor` a computation of two `pred` parameters computes, found by running
/// its instructions on the four pairs of inputs; `None` when an instruction is not one of the
/// few a boolean function of scalars is written with, or the table is another function.
fn boolean_reducer(comp: &Comp) -> Option<Binary> {
    let pred_scalar = |shape: &Shape| matches!(shape, Shape::Array(a) if a.ty == ElementType::Pred && a.dims.is_empty());
    if !comp.params.iter().all(|&p| pred_scalar(&comp.instrs[p].shape)) {
        return None;
    }
    let run = |x: bool, y: bool| -> Option<bool> {
        let mut values: Vec<Option<bool>> = vec![None; comp.instrs.len()];
        for (k, instr) in comp.instrs.iter().enumerate() {
            if !pred_scalar(&instr.shape) {
                return None;
            }
            let arg = |i: usize| values[instr.operands[i]];
            values[k] = Some(match &instr.op {
                Op::Parameter(0) => x,
                Op::Parameter(1) => y,
                Op::Constant(t) => match &t.data {
                    super::tensor::Data::Pred(v) if v.len() == 1 => v[0],
                    _ => return None,
                },
                Op::Compare { direction: Direction::Eq, .. } => arg(0)? == arg(1)?,
                Op::Compare { direction: Direction::Ne, .. } => arg(0)? != arg(1)?,
                Op::Binary(Binary::And) => arg(0)? && arg(1)?,
                Op::Binary(Binary::Or) => arg(0)? || arg(1)?,
                Op::Binary(Binary::Xor) => arg(0)? != arg(1)?,
                Op::Unary(Unary::Not) => !arg(0)?,
                Op::Select => {
                    if arg(0)? {
                        arg(1)?
                    } else {
                        arg(2)?
                    }
                }
                _ => return None,
            });
        }
        values[comp.root]
    };
    let table = [run(false, false)?, run(false, true)?, run(true, false)?, run(true, true)?];
    match table {
        [false, false, false, true] => Some(Binary::And),
        [false, true, true, true] => Some(Binary::Or),
        [false, true, true, false] => Some(Binary::Xor),
        _ => None,
    }
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::device_time::{ELEMENT_FS, FS_PER_SECOND, INSTRUCTION_FS, MULTIPLY_ADD_FS};
    use super::super::{Array, DEFAULT_DEVICE_TIME_LIMIT, EvalError, EvalOptions, Program};

    fn compile(text: &str, options: &EvalOptions) -> Program {
        let module = crate::text::parse_module(text).expect("parses");
        Program::compile(&module, options).expect("compiles")
    }

    /// The plan's instructions of the entry computation, by name: (work, device fs).
    fn costs(program: &Program) -> Vec<(String, u64, u64)> {
        let entry = &program.comps[program.entry];
        entry.instrs.iter().map(|i| (i.name.clone(), i.work, i.device_fs)).collect()
    }

    /// torch-xla's `all` reducer (compares, an `and`, a select of constants) and its `any`-like
    /// variants are the boolean functions they compute, so reduces with them run as one loop,
    /// not one call per element; the reduce still gives the right answer.
    #[test]
    fn pred_reducers_written_as_selects_are_their_boolean_function() {
        let reducer = |body: &str| {
            let text = format!(
                "HloModule m\n\nr {{\n  x = pred[] parameter(0)\n  y = pred[] parameter(1)\n  f = pred[] constant(false)\n  t = pred[] constant(true)\n{body}}}\n\nENTRY main {{\n  a = pred[2,3] parameter(0)\n  i = pred[] constant(true)\n  ROOT v = pred[2] reduce(a, i), dimensions={{1}}, to_apply=r\n}}\n"
            );
            let program = compile(&text, &EvalOptions::default());
            let r = program.comps.iter().find(|c| c.params.len() == 2).expect("the reducer");
            (r.reducer, program)
        };
        let all = "  cy = pred[] compare(y, f), direction=NE\n  cx = pred[] compare(x, f), direction=NE\n  b = pred[] and(cx, cy)\n  ROOT s = pred[] select(b, t, f)\n";
        let (found, program) = reducer(all);
        assert_eq!(found, Some(super::Reducer::Binary(super::Binary::And)));
        let a = Array {
            ty: crate::proto::PrimitiveType::Pred,
            dims: vec![2, 3],
            bytes: vec![1, 1, 1, 1, 0, 1],
        };
        let value = program.run(&[a]).expect("runs");
        let super::super::Value::Array(v) = value else { panic!("an array") };
        assert_eq!(v.bytes, [1, 0]);
        let any = "  b = pred[] or(x, y)\n  ROOT s = pred[] select(b, t, f)\n";
        assert_eq!(reducer(any).0, Some(super::Reducer::Binary(super::Binary::Or)));
        // x and not y is no reducer of the three.
        let other = "  n = pred[] not(y)\n  ROOT b = pred[] and(x, n)\n";
        assert_eq!(reducer(other).0, None);
    }

    #[test]
    fn the_device_time_model_is_the_published_figures() {
        // 64 cycles at 2.8 GHz; 316 TFLOPS of two FLOPs each; (512 + 256 + 128) elements each
        // way per cycle at 1.2 GHz.
        assert_eq!(INSTRUCTION_FS, 22_857_142);
        assert_eq!(MULTIPLY_ADD_FS, 6);
        assert_eq!(ELEMENT_FS, 465);
        assert_eq!(DEFAULT_DEVICE_TIME_LIMIT, Duration::from_secs(30));
        assert_eq!(EvalOptions::default().work_budget, None);
    }

    /// The example: one f32 dot [1024,4096] @ [4096,4096], 17 GFLOP. The old default
    /// work budget (2^32 element-operations) refused it; a NeuronCore does it in about 0.1 ms,
    /// so the default execution timeout admits it with room to spare.
    #[test]
    fn a_seventeen_gflop_dot_is_far_inside_the_default_timeout() {
        let text = "HloModule big\nENTRY main {\n  x = f32[1024,4096] parameter(0)\n  y = f32[4096,4096] parameter(1)\n  ROOT d = f32[1024,4096] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n";
        let program = compile(text, &EvalOptions::default());
        let costs = costs(&program);
        let (_, work, device_fs) = costs.iter().find(|(name, ..)| name == "d").expect("the dot");
        let multiply_adds: u64 = 1024 * 4096 * 4096;
        let moved: u64 = 1024 * 4096 + 4096 * 4096 + 1024 * 4096;
        assert_eq!(*work, 16 + moved + multiply_adds);
        assert!(*work > 1 << 32, "over the old default budget: {work}");
        // The tensor engine's share dominates: 6 fs per multiply-add, 0.103 ms.
        assert_eq!(*device_fs, multiply_adds * MULTIPLY_ADD_FS);
        let total: u64 = costs.iter().map(|(_, _, fs)| fs).sum();
        assert_eq!(total, *device_fs, "parameters cost no device time");
        assert!(total < 30 * FS_PER_SECOND / 100_000, "under 0.3 ms: {total} fs");
    }

    /// A limit below one instruction's estimate refuses the run before the instruction does any
    /// work, naming it; the run at the estimate itself passes.
    #[test]
    fn the_device_time_limit_stops_a_run_before_the_instruction_that_would_pass_it() {
        let text = "HloModule small\nENTRY main {\n  x = f32[4] parameter(0)\n  n = f32[4] negate(x)\n  ROOT a = f32[4] add(n, x)\n}\n";
        let x = Array::from_f32(&[4], &[1.0, 2.0, 3.0, 4.0]);
        // Each computing instruction: max(22.86 ns, 8 or 12 elements × 465 fs) = 22.86 ns.
        let two = Duration::from_nanos(2 * INSTRUCTION_FS / 1_000_000);
        let exactly = Duration::from_nanos(2 * INSTRUCTION_FS.div_ceil(1_000_000));
        let with = |limit| EvalOptions { device_time_limit: Some(limit), ..Default::default() };
        let out = compile(text, &with(exactly)).run(std::slice::from_ref(&x)).expect("runs");
        assert_eq!(out, super::super::Value::Array(Array::from_f32(&[4], &[0.0; 4])));
        match compile(text, &with(two)).run(std::slice::from_ref(&x)) {
            Err(EvalError::DeviceTime { computation, instruction, limit }) => {
                assert_eq!((computation.as_str(), instruction.as_str(), limit), ("main", "a", two));
            }
            other => panic!("expected the device-time limit at the add, got {other:?}"),
        }
    }
}
