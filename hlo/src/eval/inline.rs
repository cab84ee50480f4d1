//! Inlining of `call`s at compile time: the callee's instructions are spliced into the caller's
//! plan where the call stood, before fusion, so that a fused group can cross the call boundary
//! (jax wraps `relu` and `where` in a call to a computation such as `jit_relu_`, which would
//! otherwise stop the elementwise chain of a layer at the call).
//!
//! Design choices:
//! - What is spliced is the callee's plan as it was before fusion (its own calls already
//!   inlined, since callees compile first), so nested calls are inlined to every depth. The
//!   callee itself stays compiled as it was, for other users such as a reduce, sort or while
//!   that calls it as a computation.
//! - Each call site gets its own copy of the body, so a computation called twice is inlined
//!   twice; the plan of one computation stops growing at [`MAX_PLAN`] instructions, bodies over
//!   [`MAX_BODY`] instructions are left as calls, and the whole program takes no more inlined
//!   instructions than [`inlining_allowance`] gives for the module's size: past it, calls run as
//!   calls. A body is kept only until the last computation that calls it has been compiled.
//! - The work budget charges what the call charged: the call and the callee's parameters stay
//!   in the plan as [`Op::Absorbed`] (charged where they stand, no value), and the body's
//!   instructions follow in the callee's order, so the charges and clock readings come in the
//!   same order as when the executor ran the call.
//! - A parameter's users read the call's operand itself, and the call's users read the body's
//!   root, so nothing is copied and buffers die as early as before.
//! - An inlined instruction remembers the computation it was written in
//!   ([`Instr::inlined_from`]), and errors name that computation and the instruction, as they
//!   did when the call ran the callee.

use std::sync::Arc;

use super::plan::{Comp, Instr, Op};

/// Bodies with more instructions than this are left as calls.
pub(crate) const MAX_BODY: usize = 4096;

/// A computation's plan stops taking inlined bodies at this many instructions.
pub(crate) const MAX_PLAN: usize = 1 << 16;

/// The whole program takes at most this many inlined instructions per instruction of the module
/// (see [`inlining_allowance`]).
const INLINED_PER_INSTRUCTION: usize = 2;

/// How many instructions inlining may add to the plans of a module of `module_instructions`
/// instructions, over all its computations: [`MAX_PLAN`], or twice the module's size when that
/// is more. Past it calls are left as calls, so the plans of a module stay within a small
/// multiple of its own size however its computations call each other (1000 computations each
/// calling a 4000-instruction body 16 times would otherwise have made 64 million instructions
/// of a 0.8 MB module).
pub(crate) fn inlining_allowance(module_instructions: usize) -> usize {
    MAX_PLAN.max(module_instructions.saturating_mul(INLINED_PER_INSTRUCTION))
}

/// How deep computations may run inside one another (a call, loop, branch or reducer in a
/// computation run by another): the executor recurses once per level, so a chain of calls left
/// as calls (past the allowance, or over [`MAX_BODY`]) is refused at compile time rather than
/// overflowing the stack when it runs.
pub(crate) const MAX_NESTING: usize = 256;

/// How deep `comp` runs computations inside one another, counting itself: one more than the
/// deepest computation its plan runs (`nesting_of` gives theirs, compiled earlier).
pub(crate) fn nesting(comp: &Comp, nesting_of: &[usize]) -> usize {
    let deepest = comp.instrs.iter().flat_map(|i| i.op.callees());
    1 + deepest.map(|c| nesting_of.get(c).copied().unwrap_or(0)).max().unwrap_or(0)
}

/// A computation's plan before fusion, kept so that calls of it can be inlined.
#[derive(Clone, Debug)]
pub(crate) struct Body {
    pub(crate) name: Arc<str>,
    pub(crate) instrs: Vec<Instr>,
    pub(crate) root: usize,
}

/// Splices the bodies `body_of` gives (by plan index of the callee) into `instrs` at their calls.
/// Returns the new plan and, per old instruction, the new instruction holding its value.
///
/// A call whose value is the computation's `root` is inlined only when the body's root has the
/// call's exact shape (layout included), since the root's shape is the computation's result.
/// `allowance` is what is left of the program's [`inlining_allowance`]: a body is inlined only
/// when it fits, and its instructions are taken from it.
pub(crate) fn inline_calls(
    instrs: Vec<Instr>,
    root: usize,
    body_of: &dyn Fn(usize) -> Option<Arc<Body>>,
    allowance: &mut usize,
) -> (Vec<Instr>, Vec<usize>) {
    let mut out: Vec<Instr> = Vec::with_capacity(instrs.len());
    let mut new_of: Vec<usize> = Vec::with_capacity(instrs.len());
    for (k, mut instr) in instrs.into_iter().enumerate() {
        instr.operands.iter_mut().for_each(|o| *o = new_of[*o]);
        let body = match instr.op {
            Op::Call(callee) => body_of(callee).filter(|body| {
                let fits =
                    out.len() + body.instrs.len() < MAX_PLAN && body.instrs.len() <= *allowance;
                let shape_kept = k != root || body.instrs[body.root].shape == instr.shape;
                fits && shape_kept && params_fit(body, instr.operands.len())
            }),
            _ => None,
        };
        let Some(body) = body else {
            new_of.push(out.len());
            out.push(instr);
            continue;
        };
        *allowance -= body.instrs.len();
        let operands = std::mem::take(&mut instr.operands);
        instr.op = Op::Absorbed;
        out.push(instr);
        // Body instruction → new instruction holding its value.
        let mut local: Vec<usize> = Vec::with_capacity(body.instrs.len());
        for inner in &body.instrs {
            let mut inner = inner.clone();
            inner.inlined_from.get_or_insert_with(|| Arc::clone(&body.name));
            if let Op::Parameter(n) = inner.op {
                // `params_fit` checked that every parameter number has an operand.
                local.push(operands[n]);
                inner.op = Op::Absorbed;
                inner.operands.clear();
            } else {
                inner.operands.iter_mut().for_each(|o| *o = local[*o]);
                local.push(out.len());
            }
            out.push(inner);
        }
        new_of.push(local[body.root]);
    }
    (out, new_of)
}

/// Whether every parameter of `body` has one of `n_operands` operands to read.
fn params_fit(body: &Body, n_operands: usize) -> bool {
    body.root < body.instrs.len()
        && body.instrs.iter().all(|i| match i.op {
            Op::Parameter(n) => n < n_operands,
            _ => true,
        })
}

#[cfg(test)]
mod tests {
    use super::super::{Array, EvalError, EvalOptions, Program, Value};
    use super::*;

    fn compile(text: &str, options: &EvalOptions) -> Program {
        let module = crate::text::parse_module(text).expect("test module parses");
        Program::compile(&module, options).expect("test module compiles")
    }

    /// (calls, fused roots, absorbed instructions) of the entry computation.
    fn counts(program: &Program) -> (usize, usize, usize) {
        let instrs = &program.comps[program.entry].instrs;
        let count = |f: fn(&Op) -> bool| instrs.iter().filter(|i| f(&i.op)).count();
        (
            count(|op| matches!(op, Op::Call(_))),
            count(|op| matches!(op, Op::Fused(_))),
            count(|op| matches!(op, Op::Absorbed)),
        )
    }

    fn f32s(value: &Value) -> Vec<f32> {
        let Value::Array(a) = value else { panic!("expected an array") };
        a.bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
    }

    /// A layer's bias add followed by jax's relu, which jax wraps in a call.
    const RELU_LAYER: &str = r#"
HloModule layer
jit_relu_ {
  p = f32[4,100] parameter(0)
  zero = f32[] constant(0)
  zb = f32[4,100] broadcast(zero), dimensions={}
  ROOT m = f32[4,100] maximum(p, zb)
}
ENTRY main {
  x = f32[4,100] parameter(0)
  b = f32[100] parameter(1)
  bb = f32[4,100] broadcast(b), dimensions={1}
  s = f32[4,100] add(x, bb)
  ROOT r = f32[4,100] call(s), to_apply=jit_relu_
}
"#;

    #[test]
    fn a_relu_call_is_fused_with_the_bias_add_before_it() {
        let program = compile(RELU_LAYER, &EvalOptions::default());
        // One group rooted at the relu's maximum; absorbed: the call and the callee's parameter,
        // the add, and the two broadcasts read as views.
        assert_eq!(counts(&program), (0, 1, 5));
        let x: Vec<f32> = (0..400).map(|i| (i % 37) as f32 * 0.75 - 13.5).collect();
        let b: Vec<f32> = (0..100).map(|j| (j % 11) as f32 * 0.5 - 2.25).collect();
        let out = program
            .run(&[Array::from_f32(&[4, 100], &x), Array::from_f32(&[100], &b)])
            .expect("runs");
        let got = f32s(&out);
        for (i, &g) in got.iter().enumerate() {
            let want = (x[i] + b[i % 100]).max(0.0);
            assert_eq!(g.to_bits(), want.to_bits(), "element {i}");
        }
        assert!(got.contains(&0.0) && got.iter().any(|&g| g > 0.0), "both sides of the relu");
    }

    #[test]
    fn nested_and_repeated_calls_are_inlined_and_a_called_reducer_still_reduces() {
        // `double` calls `addv` with its parameter twice, `main` calls `double` twice and
        // `addv` once, and `add_f` is both the reduce's reducer and a called computation.
        let text = r#"
HloModule nested
add_f {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
addv {
  a = f32[64] parameter(0)
  b = f32[64] parameter(1)
  ROOT s = f32[64] add(a, b)
}
double {
  p = f32[64] parameter(0)
  ROOT d = f32[64] call(p, p), to_apply=addv
}
ENTRY main {
  x = f32[64] parameter(0)
  y = f32[64] call(x), to_apply=double
  z = f32[64] call(y), to_apply=double
  w = f32[64] call(z, x), to_apply=addv
  zero = f32[] constant(0)
  t = f32[] reduce(w, zero), dimensions={0}, to_apply=add_f
  sc = f32[] call(t, t), to_apply=add_f
  ROOT out = (f32[64], f32[]) tuple(w, sc)
}
"#;
        let program = compile(text, &EvalOptions::default());
        let (calls, fused, _) = counts(&program);
        assert_eq!((calls, fused), (0, 1), "every call inlined, the adds one group");
        let x: Vec<f32> = (0..64).map(|i| i as f32).collect();
        let out = program.run(&[Array::from_f32(&[64], &x)]).expect("runs");
        let Value::Tuple(items) = out else { panic!("expected a tuple") };
        // By hand: w = 2·2·x + x = 5x; the sum of 5i over 0..64 is 10080, doubled 20160.
        let want: Vec<f32> = (0..64).map(|i| 5.0 * i as f32).collect();
        assert_eq!(f32s(&items[0]), want);
        assert_eq!(f32s(&items[1]), vec![20160.0]);
    }

    #[test]
    fn an_inlined_call_is_charged_and_named_as_the_call_was() {
        // By hand: x 16, the call 16, p 16, n 16 + 4 + 4: 72 in all, in that order.
        let text = r#"
HloModule charged
neg_c {
  p = f32[4] parameter(0)
  ROOT n = f32[4] negate(p)
}
ENTRY main {
  x = f32[4] parameter(0)
  ROOT c = f32[4] call(x), to_apply=neg_c
}
"#;
        let x = Array::from_f32(&[4], &[1.0, -2.0, 0.5, 0.0]);
        let with_budget = |budget| EvalOptions { work_budget: Some(budget), ..Default::default() };
        let program = compile(text, &with_budget(72));
        assert_eq!(counts(&program).0, 0, "the call is inlined");
        let out = program.run(std::slice::from_ref(&x)).expect("runs within 72");
        assert_eq!(f32s(&out), vec![-1.0, 2.0, -0.5, -0.0]);
        for (budget, computation, instruction) in
            [(71, "neg_c", "n"), (47, "neg_c", "p"), (31, "main", "c"), (15, "main", "x")]
        {
            match compile(text, &with_budget(budget)).run(std::slice::from_ref(&x)) {
                Err(EvalError::WorkBudget { computation: c, instruction: i, .. }) => {
                    assert_eq!((c.as_str(), i.as_str()), (computation, instruction), "{budget}")
                }
                other => panic!("budget {budget}: expected the work budget, got {other:?}"),
            }
        }
    }

    /// The instructions of a module's text: its lines holding an ` = `.
    fn instruction_count(text: &str) -> usize {
        text.lines().filter(|line| line.contains(" = ")).count()
    }

    /// The instructions of every computation's plan, inlined ones included.
    fn plan_size(program: &Program) -> usize {
        program.comps.iter().map(|c| c.instrs.len()).sum()
    }

    /// A body of `body` instructions (parameter, `body - 3` negates, a constant, an add of 1)
    /// that adds 1 when `body` is odd; `callers` computations each call it 16 times in a row,
    /// and the entry calls each of those in a row: `x + 16 · callers` when `body` is odd.
    fn repeated_body(body: usize, callers: usize) -> String {
        let mut text = String::from("HloModule repeated\nbody {\n  v0 = f32[2] parameter(0)\n");
        for i in 1..body - 2 {
            text += &format!("  v{i} = f32[2] negate(v{})\n", i - 1);
        }
        text += "  one = f32[2] constant({1, 1})\n";
        text += &format!("  ROOT r = f32[2] add(v{}, one)\n}}\n", body - 3);
        for c in 0..callers {
            text += &format!("caller{c} {{\n  k0 = f32[2] parameter(0)\n");
            for k in 1..=16 {
                let root = if k == 16 { "ROOT " } else { "" };
                text += &format!("  {root}k{k} = f32[2] call(k{}), to_apply=body\n", k - 1);
            }
            text += "}\n";
        }
        text += "ENTRY main {\n  e0 = f32[2] parameter(0)\n";
        for c in 0..callers {
            let root = if c + 1 == callers { "ROOT " } else { "" };
            text += &format!("  {root}e{} = f32[2] call(e{c}), to_apply=caller{c}\n", c + 1);
        }
        text + "}\n"
    }

    #[test]
    fn a_body_called_by_many_computations_is_inlined_only_within_the_allowance() {
        // Inlined everywhere, 20 callers × 16 calls × 1001 instructions would add 320 320
        // instructions to a module of 1363; the allowance is 65 536 (MAX_PLAN).
        let text = repeated_body(1001, 20);
        let module_size = instruction_count(&text);
        assert_eq!(module_size, 1001 + 20 * 17 + 21);
        let program = compile(&text, &EvalOptions::default());
        let inlined = plan_size(&program) - module_size;
        assert!(inlined > 0, "calls within the allowance are still inlined");
        assert!(inlined <= inlining_allowance(module_size), "{inlined} instructions inlined");
        assert_eq!(inlining_allowance(module_size), MAX_PLAN);
        let out = program.run(&[Array::from_f32(&[2], &[1.5, -7.0])]).expect("runs");
        assert_eq!(f32s(&out), vec![1.5 + 320.0, -7.0 + 320.0]);
    }

    /// `n` computations, each calling the one before and adding 1 (the first adds 1 to its
    /// parameter), and an entry that calls the last: `x + n`.
    fn call_chain(n: usize) -> String {
        let mut text = String::from("HloModule chain\n");
        for c in 0..n {
            let inner = if c == 0 { "p" } else { "q" };
            text +=
                &format!("c{c} {{\n  p = f32[2] parameter(0)\n  one = f32[2] constant({{1, 1}})\n");
            if c > 0 {
                text += &format!("  q = f32[2] call(p), to_apply=c{}\n", c - 1);
            }
            text += &format!("  ROOT s = f32[2] add({inner}, one)\n}}\n");
        }
        text += &format!(
            "ENTRY main {{\n  x = f32[2] parameter(0)\n  ROOT y = f32[2] call(x), to_apply=c{}\n}}\n",
            n - 1
        );
        text
    }

    #[test]
    fn a_long_chain_of_calls_stays_within_the_allowance() {
        // Inlined at every level, computation k would hold 4k instructions: 400 levels make
        // 319 200 inlined instructions, against an allowance of 65 536 for this module. Within
        // it, the first 180 or so levels are inlined and the rest run as calls.
        for n in [100, 400] {
            let text = call_chain(n);
            let module_size = instruction_count(&text);
            let program = compile(&text, &EvalOptions::default());
            let inlined = plan_size(&program) - module_size;
            assert!(inlined <= inlining_allowance(module_size), "{n}: {inlined} inlined");
            let out = program.run(&[Array::from_f32(&[2], &[0.5, 2.0])]).expect("runs");
            assert_eq!(f32s(&out), vec![0.5 + n as f32, 2.0 + n as f32], "{n}");
        }
    }

    #[test]
    fn calls_left_as_calls_deeper_than_the_nesting_limit_are_refused() {
        // 2000 levels: past the allowance some 1800 calls stay calls, one inside the other,
        // which the executor would run one stack frame deeper each.
        let module = crate::text::parse_module(&call_chain(2000)).expect("test module parses");
        match Program::compile(&module, &EvalOptions::default()) {
            Err(EvalError::Module { detail }) => {
                assert!(detail.contains("expected at most 256 (the nesting limit)"), "{detail}");
            }
            other => panic!("expected the nesting limit, got {other:?}"),
        }
    }

    #[test]
    fn a_root_call_whose_body_has_another_layout_is_left_a_call() {
        // The entry's root shape is the module's result layout, which the body's root does not
        // have, so the call stays; the values are the same either way.
        let text = r#"
HloModule layouts
transposed {
  p = f32[2,3]{1,0} parameter(0)
  ROOT n = f32[2,3]{0,1} negate(p)
}
ENTRY main {
  x = f32[2,3]{1,0} parameter(0)
  ROOT c = f32[2,3]{1,0} call(x), to_apply=transposed
}
"#;
        let program = compile(text, &EvalOptions::default());
        assert_eq!(counts(&program).0, 1);
        let out = program.run(&[Array::from_f32(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0])]);
        assert_eq!(f32s(&out.expect("runs")), vec![-1.0, -2.0, -3.0, -4.0, -5.0, -6.0]);
    }
}
