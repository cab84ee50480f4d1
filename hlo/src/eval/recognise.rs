//! Called computations of several instructions recognised by their structure, so `reduce` and
//! `sort` run them as direct loops instead of through the general interpreter.
//!
//! Design choices:
//! - A recogniser matches the computation's instructions (opcodes, operands, parameter numbers,
//!   constants), never its name, and captures what varies (compare directions, the constants a
//!   key is canonicalised to). The direct loop then evaluates exactly what the matched
//!   instructions say with the captured values, so the result is the general interpreter's on
//!   every input, NaN and signed zeros included, whatever the producer meant by it.
//! - Anything that differs from a shape below (an arm of a select swapped, a compare on other
//!   parameters, a total-order flag where the loop assumes none) is not recognised and runs
//!   through the general interpreter, which is always correct.
//! - Two shapes are recognised. An *arg reducer* folds (value, index) pairs: the accumulator's
//!   value is kept when `compare(acc, x)` holds (or, optionally, when the accumulator is NaN), and
//!   its index when the value was kept or the values are equal and `compare(acc_index, index)`
//!   holds; jax's argmax and argmin lower to it. A *sort comparator* is a lexicographic order
//!   over keys, each a strict compare (`LT` or `GT`) of one operand's pair, optionally after the
//!   operand is canonicalised (NaN to a constant, values equal to a constant to that constant,
//!   as jnp.sort does for -0 and NaN), later keys guarded by `EQ` of the earlier ones; every key
//!   must be an integer or a float compared in total order, so the keys map to integers whose
//!   order is the comparator's (`sort::order_keys`).

use std::sync::Arc;

use super::plan::{ArgReducer, Canon, Recognised, SortComparator, SortKey};
use super::plan::{Comp, Op};
use super::scalar::{Binary, Direction};
use super::shape::Shape;
use super::tensor::Tensor;
use crate::dtype::ElementType;

/// Runs every recogniser on `comp`.
pub(crate) fn recognise(comp: &Comp) -> Recognised {
    let view = View { comp };
    Recognised { arg: view.arg_reducer(), sort: view.sort_comparator() }
}

/// Structural queries over one computation's instructions.
struct View<'c> {
    comp: &'c Comp,
}

/// A compare: direction, total order, lhs, rhs.
type Compare = (Direction, bool, usize, usize);

impl View<'_> {
    fn op(&self, i: usize) -> &Op {
        &self.comp.instrs[i].op
    }

    fn operands(&self, i: usize) -> &[usize] {
        &self.comp.instrs[i].operands
    }

    fn param(&self, n: usize) -> usize {
        self.comp.params[n]
    }

    /// The parameter number of instruction `i`, if it is one.
    fn param_number(&self, i: usize) -> Option<usize> {
        match self.op(i) {
            Op::Parameter(n) => Some(*n),
            _ => None,
        }
    }

    fn scalar_type(&self, n: usize) -> Option<ElementType> {
        match &self.comp.param_shapes[n] {
            Shape::Array(a) if a.dims.is_empty() => Some(a.ty),
            _ => None,
        }
    }

    fn compare(&self, i: usize) -> Option<Compare> {
        match (self.op(i), self.operands(i)) {
            (Op::Compare { direction, total_order }, &[a, b]) => {
                Some((*direction, *total_order, a, b))
            }
            _ => None,
        }
    }

    /// `compare(a, b)` in the partial order, with the given operands in this order.
    fn partial_compare_of(&self, i: usize, a: usize, b: usize) -> Option<Direction> {
        let (direction, total, x, y) = self.compare(i)?;
        (!total && x == a && y == b).then_some(direction)
    }

    fn binary(&self, i: usize, op: Binary) -> Option<(usize, usize)> {
        match (self.op(i), self.operands(i)) {
            (Op::Binary(o), &[a, b]) if *o == op => Some((a, b)),
            _ => None,
        }
    }

    fn select(&self, i: usize) -> Option<(usize, usize, usize)> {
        match (self.op(i), self.operands(i)) {
            (Op::Select, &[p, t, f]) => Some((p, t, f)),
            _ => None,
        }
    }

    fn constant(&self, i: usize) -> Option<&Arc<Tensor>> {
        match self.op(i) {
            Op::Constant(t) if t.dims.is_empty() => Some(t),
            _ => None,
        }
    }

    fn arg_reducer(&self) -> Option<ArgReducer> {
        if self.comp.params.len() != 4 {
            return None;
        }
        let types: Vec<ElementType> = (0..4).map(|n| self.scalar_type(n)).collect::<Option<_>>()?;
        let value_ok = types[0] == types[2] && types[0] != ElementType::Pred;
        let index_ok =
            types[1] == types[3] && (types[1].is_signed_int() || types[1].is_unsigned_int());
        if !value_ok || !index_ok {
            return None;
        }
        let (va, ia, vb, ib) = (self.param(0), self.param(1), self.param(2), self.param(3));
        let (Op::Tuple, &[value, index]) = (self.op(self.comp.root), self.operands(self.comp.root))
        else {
            return None;
        };
        let (keep, on_true, on_false) = self.select(value)?;
        if (on_true, on_false) != (va, vb) {
            return None;
        }
        let (keep_dir, keep_nan) = self.keep_clause(keep, va, vb)?;
        let (keep_index, on_true, on_false) = self.select(index)?;
        if (on_true, on_false) != (ia, ib) {
            return None;
        }
        let (x, y) = self.binary(keep_index, Binary::Or)?;
        [(x, y), (y, x)].into_iter().find_map(|(kept, tie)| {
            if self.keep_clause(kept, va, vb) != Some((keep_dir, keep_nan)) {
                return None;
            }
            let tie = self.tie_clause(tie, va, vb, ia, ib)?;
            Some(ArgReducer { keep: keep_dir, keep_nan, tie })
        })
    }

    /// `compare(a, b, D)` or `or(compare(a, b, D), compare(a, a, NE))`.
    fn keep_clause(&self, i: usize, a: usize, b: usize) -> Option<(Direction, bool)> {
        if let Some(direction) = self.partial_compare_of(i, a, b) {
            return Some((direction, false));
        }
        let (x, y) = self.binary(i, Binary::Or)?;
        [(x, y), (y, x)].into_iter().find_map(|(c, nan)| {
            let direction = self.partial_compare_of(c, a, b)?;
            (self.partial_compare_of(nan, a, a)? == Direction::Ne).then_some((direction, true))
        })
    }

    /// `and(compare(a, b, EQ), compare(ai, bi, T))`, either operand order of the `and` and `EQ`.
    fn tie_clause(&self, i: usize, a: usize, b: usize, ai: usize, bi: usize) -> Option<Direction> {
        let (x, y) = self.binary(i, Binary::And)?;
        [(x, y), (y, x)].into_iter().find_map(|(eq, tie)| {
            let equal = self.partial_compare_of(eq, a, b).or(self.partial_compare_of(eq, b, a));
            (equal? == Direction::Eq).then_some(())?;
            self.partial_compare_of(tie, ai, bi)
        })
    }

    fn sort_comparator(&self) -> Option<SortComparator> {
        let n = self.comp.params.len();
        if n < 2 || !n.is_multiple_of(2) {
            return None;
        }
        let mut keys = Vec::new();
        let mut at = self.comp.root;
        loop {
            if let Some(key) = self.key_compare(at) {
                keys.push(key.key);
                return Some(SortComparator { keys });
            }
            // or(key, and(equal(key), rest)), in either operand order of `or` and `and`.
            let (x, y) = self.binary(at, Binary::Or)?;
            let (key, rest) = [(x, y), (y, x)].into_iter().find_map(|(first, guarded)| {
                let key = self.key_compare(first)?;
                let (p, q) = self.binary(guarded, Binary::And)?;
                [(p, q), (q, p)]
                    .into_iter()
                    .find_map(|(eq, rest)| self.key_equal(eq, &key).then_some(rest))
                    .map(|rest| (key, rest))
            })?;
            keys.push(key.key);
            at = rest;
        }
    }

    /// A strict compare (`LT`/`GT`) of one operand's pair, canonicalised alike on both sides.
    fn key_compare(&self, i: usize) -> Option<MatchedKey> {
        let (direction, total, a, b) = self.compare(i)?;
        let descending = match direction {
            Direction::Lt => false,
            Direction::Gt => true,
            _ => return None,
        };
        let pair = self.key_pair(a, b, total)?;
        let canon = match pair.canon {
            Some((nan, zero)) => Some(Canon {
                nan: Arc::clone(self.constant(nan)?),
                zero: Arc::clone(self.constant(zero)?),
            }),
            None => None,
        };
        Some(MatchedKey {
            key: SortKey { operand: pair.operand, descending: descending != pair.swapped, canon },
            total,
            canon: pair.canon,
        })
    }

    /// `EQ` over the same keys as `key` (either order).
    fn key_equal(&self, i: usize, key: &MatchedKey) -> bool {
        let Some((Direction::Eq, total, a, b)) = self.compare(i) else { return false };
        self.key_pair(a, b, total).is_some_and(|pair| {
            pair.operand == key.key.operand && pair.canon == key.canon && total == key.total
        })
    }

    /// Both sides read parameters `2k` and `2k+1` through the same canonicalisation, and the
    /// compare is a total order for the operand's type.
    fn key_pair(&self, a: usize, b: usize, total: bool) -> Option<KeyPair> {
        let (pa, canon_a) = self.key_side(a)?;
        let (pb, canon_b) = self.key_side(b)?;
        if pa / 2 != pb / 2 || pa == pb || canon_a != canon_b {
            return None;
        }
        let ty = self.scalar_type(pa)?;
        let ordered = if ty.is_float() { total } else { canon_a.is_none() };
        ordered.then_some(KeyPair { operand: pa / 2, swapped: pa % 2 == 1, canon: canon_a })
    }

    /// A parameter, or a parameter canonicalised as [`Canon`] says: (parameter number,
    /// the instruction indices of the NaN and zero constants).
    fn key_side(&self, i: usize) -> Option<(usize, Option<(usize, usize)>)> {
        if let Some(n) = self.param_number(i) {
            return Some((n, None));
        }
        let (is_nan, nan, inner) = self.select(i)?;
        let (zero_test, zero, x) = self.select(inner)?;
        let n = self.param_number(x)?;
        self.constant(nan)?;
        self.constant(zero)?;
        let nan_test = self.partial_compare_of(is_nan, x, x)? == Direction::Ne;
        let equal = self
            .partial_compare_of(zero_test, x, zero)
            .or(self.partial_compare_of(zero_test, zero, x));
        (nan_test && equal? == Direction::Eq).then_some((n, Some((nan, zero))))
    }
}

struct MatchedKey {
    key: SortKey,
    total: bool,
    canon: Option<(usize, usize)>,
}

struct KeyPair {
    operand: usize,
    swapped: bool,
    canon: Option<(usize, usize)>,
}

#[cfg(test)]
mod tests {
    use super::super::{Array, EvalOptions, Program, Value};
    use crate::text::parse_module;

    /// The program as compiled, and a copy whose called computations all run through the
    /// general interpreter (no recogniser's loop, no one-op fast path).
    fn programs(text: &str) -> (Program, Program) {
        let module = parse_module(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let program = Program::compile(&module, &EvalOptions::default()).expect("compiles");
        let mut general = program.clone();
        for comp in &mut general.comps {
            comp.recognised = Default::default();
            comp.reducer = None;
            comp.comparator = None;
        }
        (program, general)
    }

    fn recognised_arg(program: &Program, name: &str) -> bool {
        program.comps.iter().any(|c| c.name == name && c.recognised.arg.is_some())
    }

    fn recognised_sort(program: &Program, name: &str) -> bool {
        program.comps.iter().any(|c| c.name == name && c.recognised.sort.is_some())
    }

    /// Values that tell the semantics apart: NaN of both signs, signed zeros, infinities and
    /// repeats (ties), in a fixed pseudo-random arrangement of `n` elements.
    fn tricky(n: usize) -> Vec<f32> {
        let specials = [
            f32::NAN,
            -f32::NAN,
            0.0,
            -0.0,
            1.0,
            -1.0,
            2.5,
            f32::INFINITY,
            f32::NEG_INFINITY,
            1.0,
            2.5,
            -0.0,
        ];
        let mut state = 0x2545_f491_u32;
        (0..n)
            .map(|_| {
                state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                specials[(state >> 16) as usize % specials.len()]
            })
            .collect()
    }

    /// Both programs give the same bytes on `args` (NaN payloads and signed zeros included).
    fn same_results(text: &str, args: &[Array]) -> (Program, Program) {
        let (program, general) = programs(text);
        let fast = program.run(args).expect("recognised path runs");
        let slow = general.run(args).expect("general path runs");
        assert_eq!(fast, slow, "{text}");
        (program, general)
    }

    const ARG_REDUCERS: &str = r#"
HloModule arg

argmax_nan {
  av = f32[] parameter(0)
  bv = f32[] parameter(2)
  gt = pred[] compare(av, bv), direction=GT
  ne = pred[] compare(av, av), direction=NE
  keep = pred[] or(gt, ne)
  v = f32[] select(keep, av, bv)
  eq = pred[] compare(av, bv), direction=EQ
  ai = s32[] parameter(1)
  bi = s32[] parameter(3)
  lt = pred[] compare(ai, bi), direction=LT
  tie = pred[] and(eq, lt)
  keep_index = pred[] or(keep, tie)
  i = s32[] select(keep_index, ai, bi)
  ROOT t = (f32[], s32[]) tuple(v, i)
}

argmin_nan {
  av = f32[] parameter(0)
  bv = f32[] parameter(2)
  lt = pred[] compare(av, bv), direction=LT
  ne = pred[] compare(av, av), direction=NE
  keep = pred[] or(ne, lt)
  v = f32[] select(keep, av, bv)
  eq = pred[] compare(bv, av), direction=EQ
  ai = s32[] parameter(1)
  bi = s32[] parameter(3)
  lti = pred[] compare(ai, bi), direction=LT
  tie = pred[] and(lti, eq)
  keep_index = pred[] or(tie, keep)
  i = s32[] select(keep_index, ai, bi)
  ROOT t = (f32[], s32[]) tuple(v, i)
}

argmax_plain_bf16 {
  av = bf16[] parameter(0)
  ai = s64[] parameter(1)
  bv = bf16[] parameter(2)
  bi = s64[] parameter(3)
  ge = pred[] compare(av, bv), direction=GE
  v = bf16[] select(ge, av, bv)
  eq = pred[] compare(av, bv), direction=EQ
  gti = pred[] compare(ai, bi), direction=GT
  tie = pred[] and(eq, gti)
  keep_index = pred[] or(ge, tie)
  i = s64[] select(keep_index, ai, bi)
  ROOT t = (bf16[], s64[]) tuple(v, i)
}

almost_argmax {
  av = f32[] parameter(0)
  bv = f32[] parameter(2)
  gt = pred[] compare(av, bv), direction=GT
  ne = pred[] compare(av, av), direction=NE
  keep = pred[] or(gt, ne)
  v = f32[] select(keep, bv, av)
  eq = pred[] compare(av, bv), direction=EQ
  ai = s32[] parameter(1)
  bi = s32[] parameter(3)
  lt = pred[] compare(ai, bi), direction=LT
  tie = pred[] and(eq, lt)
  keep_index = pred[] or(keep, tie)
  i = s32[] select(keep_index, ai, bi)
  ROOT t = (f32[], s32[]) tuple(v, i)
}

almost_argmax_tie_on_values {
  av = f32[] parameter(0)
  bv = f32[] parameter(2)
  gt = pred[] compare(av, bv), direction=GT
  v = f32[] select(gt, av, bv)
  ai = s32[] parameter(1)
  bi = s32[] parameter(3)
  lt = pred[] compare(av, bv), direction=LT
  eq = pred[] compare(ai, bi), direction=EQ
  tie = pred[] and(eq, lt)
  keep_index = pred[] or(gt, tie)
  i = s32[] select(keep_index, ai, bi)
  ROOT t = (f32[], s32[]) tuple(v, i)
}

ENTRY main {
  x = f32[6,5,4] parameter(0)
  iota = s32[6,5,4] iota(), iota_dimension=1
  ninf = f32[] constant(-inf)
  inf = f32[] constant(inf)
  zero = s32[] constant(0)
  a = (f32[5], s32[5]) reduce(x, iota, ninf, zero), dimensions={0,2}, to_apply=argmax_nan
  a0 = f32[5] get-tuple-element(a), index=0
  a1 = s32[5] get-tuple-element(a), index=1
  b = (f32[6,4], s32[6,4]) reduce(x, iota, inf, zero), dimensions={1}, to_apply=argmin_nan
  b0 = f32[6,4] get-tuple-element(b), index=0
  b1 = s32[6,4] get-tuple-element(b), index=1
  h = bf16[6,5,4] convert(x)
  wide = s64[6,5,4] convert(iota)
  hinit = bf16[] constant(-inf)
  winit = s64[] constant(7)
  c = (bf16[6,5], s64[6,5]) reduce(h, wide, hinit, winit), dimensions={2}, to_apply=argmax_plain_bf16
  c0 = bf16[6,5] get-tuple-element(c), index=0
  c1 = s64[6,5] get-tuple-element(c), index=1
  d = (f32[6,4], s32[6,4]) reduce(x, iota, ninf, zero), dimensions={1}, to_apply=almost_argmax
  d0 = f32[6,4] get-tuple-element(d), index=0
  d1 = s32[6,4] get-tuple-element(d), index=1
  e = (f32[4], s32[4]) reduce(x, iota, ninf, zero), dimensions={0,1}, to_apply=almost_argmax_tie_on_values
  e0 = f32[4] get-tuple-element(e), index=0
  e1 = s32[4] get-tuple-element(e), index=1
  f = (f32[4], s32[4]) reduce(x, iota, ninf, zero), dimensions={0,1}, to_apply=argmax_nan
  f0 = f32[4] get-tuple-element(f), index=0
  f1 = s32[4] get-tuple-element(f), index=1
  g = (bf16[5,4], s64[5,4]) reduce(h, wide, hinit, winit), dimensions={0}, to_apply=argmax_plain_bf16
  g0 = bf16[5,4] get-tuple-element(g), index=0
  g1 = s64[5,4] get-tuple-element(g), index=1
  ROOT t = (f32[5], s32[5], f32[6,4], s32[6,4], bf16[6,5], s64[6,5], f32[6,4], s32[6,4], f32[4], s32[4], f32[4], s32[4], bf16[5,4], s64[5,4]) tuple(a0, a1, b0, b1, c0, c1, d0, d1, e0, e1, f0, f1, g0, g1)
}
"#;

    #[test]
    fn arg_reducers_match_the_general_interpreter_on_nan_ties_and_signed_zeros() {
        let args = [Array::from_f32(&[6, 5, 4], &tricky(120))];
        let (program, _) = same_results(ARG_REDUCERS, &args);
        for name in ["argmax_nan", "argmin_nan", "argmax_plain_bf16"] {
            assert!(recognised_arg(&program, name), "{name} is recognised");
        }
        for name in ["almost_argmax", "almost_argmax_tie_on_values"] {
            assert!(!recognised_arg(&program, name), "{name} must not be recognised");
        }
    }

    #[test]
    fn argmax_keeps_the_first_nan_and_the_lower_index_of_ties() {
        // Worked by hand from argmax_nan's instructions: a NaN accumulator is kept, so the first
        // NaN wins; among equal maxima (3 at 1 and 3) the lower index is kept.
        let text = ARG_REDUCERS.replace(
            "ENTRY main {",
            "ENTRY small {\n  x = f32[2,4] parameter(0)\n  iota = s32[2,4] iota(), \
             iota_dimension=1\n  ninf = f32[] constant(-inf)\n  zero = s32[] constant(0)\n  \
             ROOT a = (f32[2], s32[2]) reduce(x, iota, ninf, zero), dimensions={1}, \
             to_apply=argmax_nan\n}\n\nmain {",
        );
        let nan = f32::NAN;
        let args = [Array::from_f32(&[2, 4], &[1.0, 3.0, 2.0, 3.0, -0.0, nan, 0.0, nan])];
        let (program, _) = same_results(&text, &args);
        let Value::Tuple(items) = program.run(&args).expect("runs") else { panic!("a tuple") };
        let values = items[0].flatten()[0].to_f64().expect("f32");
        assert_eq!(values[0], 3.0);
        assert!(values[1].is_nan());
        assert_eq!(items[1].flatten()[0].to_f64().expect("s32"), vec![1.0, 1.0]);
    }

    const SORTS: &str = r#"
HloModule sorts

jnp_sort_f32 {
  a = f32[] parameter(0)
  nan_a = pred[] compare(a, a), direction=NE
  cnan = f32[] constant(nan)
  czero = f32[] constant(0)
  zero_a = pred[] compare(a, czero), direction=EQ
  ca0 = f32[] select(zero_a, czero, a)
  ca = f32[] select(nan_a, cnan, ca0)
  b = f32[] parameter(1)
  nan_b = pred[] compare(b, b), direction=NE
  zero_b = pred[] compare(b, czero), direction=EQ
  cb0 = f32[] select(zero_b, czero, b)
  cb = f32[] select(nan_b, cnan, cb0)
  ROOT lt = pred[] compare(ca, cb), direction=LT, type=TOTALORDER
}

argsort_desc_bf16 {
  ia = s32[] parameter(2)
  ib = s32[] parameter(3)
  a = bf16[] parameter(0)
  nan_a = pred[] compare(a, a), direction=NE
  cnan = bf16[] constant(nan)
  czero = bf16[] constant(0)
  zero_a = pred[] compare(czero, a), direction=EQ
  ca0 = bf16[] select(zero_a, czero, a)
  ca = bf16[] select(nan_a, cnan, ca0)
  b = bf16[] parameter(1)
  nan_b = pred[] compare(b, b), direction=NE
  zero_b = pred[] compare(czero, b), direction=EQ
  cb0 = bf16[] select(zero_b, czero, b)
  cb = bf16[] select(nan_b, cnan, cb0)
  ROOT gt = pred[] compare(cb, ca), direction=LT, type=TOTALORDER
}

two_keys {
  k0a = f32[] parameter(0)
  k0b = f32[] parameter(1)
  k1a = s32[] parameter(2)
  k1b = s32[] parameter(3)
  va = s32[] parameter(4)
  vb = s32[] parameter(5)
  lt0 = pred[] compare(k0a, k0b), direction=GT, type=TOTALORDER
  eq0 = pred[] compare(k0b, k0a), direction=EQ, type=TOTALORDER
  lt1 = pred[] compare(k1a, k1b), direction=LT
  and = pred[] and(eq0, lt1)
  ROOT or = pred[] or(and, lt0)
}

almost_jnp_sort {
  a = f32[] parameter(0)
  nan_a = pred[] compare(a, a), direction=NE
  cnan = f32[] constant(nan)
  czero = f32[] constant(0)
  zero_a = pred[] compare(a, czero), direction=EQ
  ca0 = f32[] select(zero_a, a, czero)
  ca = f32[] select(nan_a, cnan, ca0)
  b = f32[] parameter(1)
  nan_b = pred[] compare(b, b), direction=NE
  zero_b = pred[] compare(b, czero), direction=EQ
  cb0 = f32[] select(zero_b, b, czero)
  cb = f32[] select(nan_b, cnan, cb0)
  ROOT lt = pred[] compare(ca, cb), direction=LT, type=TOTALORDER
}

partial_order_keys {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ia = s32[] parameter(2)
  ib = s32[] parameter(3)
  lt = pred[] compare(a, b), direction=LT
  eq = pred[] compare(a, b), direction=EQ
  lti = pred[] compare(ia, ib), direction=LT
  and = pred[] and(eq, lti)
  ROOT or = pred[] or(lt, and)
}

ENTRY main {
  x = f32[6,20] parameter(0)
  iota = s32[6,20] iota(), iota_dimension=1
  s = f32[6,20] sort(x), dimensions={1}, is_stable=true, to_apply=jnp_sort_f32
  h = bf16[6,20] convert(x)
  a = (bf16[6,20], s32[6,20]) sort(h, iota), dimensions={0}, is_stable=true, to_apply=argsort_desc_bf16
  a0 = bf16[6,20] get-tuple-element(a), index=0
  a1 = s32[6,20] get-tuple-element(a), index=1
  k1 = s32[6,20] iota(), iota_dimension=0
  m = (f32[6,20], s32[6,20], s32[6,20]) sort(x, k1, iota), dimensions={0}, to_apply=two_keys
  m0 = f32[6,20] get-tuple-element(m), index=0
  m1 = s32[6,20] get-tuple-element(m), index=1
  m2 = s32[6,20] get-tuple-element(m), index=2
  n = f32[6,20] sort(x), dimensions={1}, is_stable=true, to_apply=almost_jnp_sort
  p = (f32[6,20], s32[6,20]) sort(x, iota), dimensions={1}, to_apply=partial_order_keys
  p0 = f32[6,20] get-tuple-element(p), index=0
  p1 = s32[6,20] get-tuple-element(p), index=1
  ROOT t = (f32[6,20], bf16[6,20], s32[6,20], f32[6,20], s32[6,20], s32[6,20], f32[6,20], f32[6,20], s32[6,20]) tuple(s, a0, a1, m0, m1, m2, n, p0, p1)
}
"#;

    #[test]
    fn sort_comparators_match_the_general_interpreter_on_nan_ties_and_signed_zeros() {
        let args = [Array::from_f32(&[6, 20], &tricky(120))];
        let (program, _) = same_results(SORTS, &args);
        for name in ["jnp_sort_f32", "argsort_desc_bf16", "two_keys"] {
            assert!(recognised_sort(&program, name), "{name} is recognised");
        }
        for name in ["almost_jnp_sort", "partial_order_keys"] {
            assert!(!recognised_sort(&program, name), "{name} must not be recognised");
        }
    }

    #[test]
    fn jnp_sort_puts_signed_zeros_together_in_input_order_and_nan_last() {
        // Worked by hand from jnp_sort_f32: -0 and 0 both compare as +0 and keep their order
        // (stable), -NaN and NaN both compare as the positive NaN constant, above +inf.
        let text = SORTS.replace("ENTRY main {", "main {")
            + "\nENTRY one {\n  x = f32[7] parameter(0)\n  ROOT s = f32[7] sort(x), dimensions={0}, \
               is_stable=true, to_apply=jnp_sort_f32\n}\n";
        let nan = f32::NAN;
        let args = [Array::from_f32(&[7], &[0.0, -nan, -0.0, f32::INFINITY, -1.0, nan, -0.0])];
        let (program, _) = same_results(&text, &args);
        let Value::Array(out) = program.run(&args).expect("runs") else { panic!("an array") };
        let bits: Vec<u32> = out
            .bytes
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        let expected = [-1.0f32, 0.0, -0.0, -0.0, f32::INFINITY].map(f32::to_bits);
        assert_eq!(bits[..5], expected);
        assert_eq!(bits[5], (-nan).to_bits());
        assert_eq!(bits[6], nan.to_bits());
    }
}
