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
//!   twice; the plan of one computation stops growing at [`MAX_PLAN`] instructions, and bodies
//!   over [`MAX_BODY`] instructions are left as calls.
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

use super::program::{Instr, Op};

/// Bodies with more instructions than this are left as calls.
pub(crate) const MAX_BODY: usize = 4096;

/// A computation's plan stops taking inlined bodies at this many instructions.
pub(crate) const MAX_PLAN: usize = 1 << 16;

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
pub(crate) fn inline_calls(
    instrs: Vec<Instr>,
    root: usize,
    body_of: &dyn Fn(usize) -> Option<Arc<Body>>,
) -> (Vec<Instr>, Vec<usize>) {
    let mut out: Vec<Instr> = Vec::with_capacity(instrs.len());
    let mut new_of: Vec<usize> = Vec::with_capacity(instrs.len());
    for (k, mut instr) in instrs.into_iter().enumerate() {
        instr.operands.iter_mut().for_each(|o| *o = new_of[*o]);
        let body = match instr.op {
            Op::Call(callee) => body_of(callee).filter(|body| {
                let fits = out.len() + body.instrs.len() < MAX_PLAN;
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
