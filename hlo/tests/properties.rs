//! Properties of the interpreter checked against references written independently of it:
//! narrow-float arithmetic against f64 math rounded by a nearest-value search, integer
//! arithmetic against i128 math, conversion round trips, and layout round trips.

use hlo::eval::{Array, EvalOptions, Value, evaluate};
use hlo::proto::PrimitiveType;
use proptest::prelude::*;

fn run(text: &str, args: &[Array]) -> Array {
    let module = hlo::text::parse_module(text).expect("module parses");
    match evaluate(&module, args, &EvalOptions::default()).expect("evaluates") {
        Value::Array(a) => a,
        other => panic!("expected an array, got {other:?}"),
    }
}

/// An f64 reference for a binary op.
type Reference = fn(f64, f64) -> f64;

fn binary_module(ty: &str, op: &str) -> String {
    format!(
        "HloModule m\n\nENTRY main {{\n  a = {ty}[] parameter(0)\n  b = {ty}[] parameter(1)\n  ROOT c = {ty}[] {op}(a, b)\n}}\n"
    )
}

/// bf16 value of bits, by widening to f32 (bf16 is the top half of an f32).
fn bf16_value(bits: u16) -> f64 {
    f64::from(f32::from_bits(u32::from(bits) << 16))
}

/// The bf16 nearest to `x`, ties to the even encoding, found by comparing the two candidates
/// around `x` (independent of the interpreter's encoder).
fn bf16_nearest(x: f64) -> u16 {
    if x.is_nan() {
        return 0x7fc0;
    }
    let f = x as f32; // only to find the neighbourhood; the choice below uses exact f64 distances
    let base = (f.to_bits() >> 16) as u16;
    let mut best = base;
    for candidate in [base.wrapping_sub(1), base, base.wrapping_add(1)] {
        let (dc, db) = ((bf16_value(candidate) - x).abs(), (bf16_value(best) - x).abs());
        if dc < db || (dc == db && candidate % 2 == 0) {
            best = candidate;
        }
    }
    best
}

fn bf16_array(bits: u16) -> Array {
    Array::new(PrimitiveType::Bf16, vec![], bits.to_le_bytes().to_vec()).expect("bf16 scalar")
}

fn finite_bf16() -> impl Strategy<Value = u16> {
    // Finite values below 1e18 in magnitude, so the sum or product stays far from overflow
    // (where the candidate search above would need infinity as a candidate).
    any::<u16>().prop_filter("finite, moderate", |&b| {
        bf16_value(b).is_finite() && bf16_value(b).abs() < 1e18
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn bf16_arithmetic_is_f64_math_rounded_once(a in finite_bf16(), b in finite_bf16(), op in 0usize..3) {
        let table: [(&str, Reference); 3] = [
            ("add", |x, y| x + y),
            ("subtract", |x, y| x - y),
            ("multiply", |x, y| x * y),
        ];
        let (name, reference) = table[op];
        let got = run(&binary_module("bf16", name), &[bf16_array(a), bf16_array(b)]);
        let got_bits = u16::from_le_bytes([got.bytes[0], got.bytes[1]]);
        let exact = reference(bf16_value(a), bf16_value(b));
        let want = bf16_nearest(exact);
        // Zero results may carry either sign depending on the operands; compare values there.
        if exact == 0.0 {
            prop_assert_eq!(bf16_value(got_bits), 0.0);
        } else {
            prop_assert_eq!(got_bits, want, "{} {} {} = {}", bf16_value(a), name, bf16_value(b), exact);
        }
    }

    #[test]
    fn s32_arithmetic_matches_i128_reference(a in any::<i32>(), b in any::<i32>(), op in 0usize..5) {
        let names = ["add", "subtract", "multiply", "divide", "remainder"];
        let (x, y) = (i128::from(a), i128::from(b));
        let wrap = |v: i128| (v.rem_euclid(1 << 32)) as u32 as i32;
        let want = match op {
            0 => wrap(x + y),
            1 => wrap(x - y),
            2 => wrap(x * y),
            3 if y == 0 => -1,
            3 => wrap(x / y), // i128 division truncates toward zero; INT_MIN / -1 wraps to INT_MIN
            _ if y == 0 => a,
            _ => wrap(x % y),
        };
        let got = run(&binary_module("s32", names[op]), &[Array::from_i32(&[], &[a]), Array::from_i32(&[], &[b])]);
        prop_assert_eq!(i32::from_le_bytes([got.bytes[0], got.bytes[1], got.bytes[2], got.bytes[3]]), want);
    }

    #[test]
    fn f32_maximum_matches_reference(a in any::<f32>(), b in any::<f32>()) {
        let got = run(&binary_module("f32", "maximum"), &[Array::from_f32(&[], &[a]), Array::from_f32(&[], &[b])]);
        let got = f32::from_le_bytes([got.bytes[0], got.bytes[1], got.bytes[2], got.bytes[3]]);
        if a.is_nan() || b.is_nan() {
            prop_assert!(got.is_nan());
        } else {
            prop_assert_eq!(got, if a > b { a } else { b });
        }
    }

    #[test]
    fn narrow_float_conversions_round_trip_through_f32(bits in any::<u16>(), small in any::<u8>()) {
        for (ty, width, value) in [("f16", 2usize, bits as u32), ("bf16", 2, bits as u32), ("f8e5m2", 1, small as u32), ("f8e4m3fn", 1, small as u32)] {
            let text = format!(
                "HloModule m\n\nENTRY main {{\n  a = {ty}[] parameter(0)\n  b = f32[] convert(a)\n  ROOT c = {ty}[] convert(b)\n}}\n"
            );
            let prim = PrimitiveType::from_str_name(&ty.to_ascii_uppercase()).expect("type");
            let bytes = value.to_le_bytes()[..width].to_vec();
            let got = run(&text, &[Array::new(prim, vec![], bytes.clone()).expect("scalar")]);
            let f = Array::new(prim, vec![], bytes.clone()).expect("scalar").to_f64().expect("f64")[0];
            if !f.is_nan() {
                prop_assert_eq!(&got.bytes, &bytes, "{} bits {:#x}", ty, value);
            }
        }
    }

    #[test]
    fn layout_round_trips(dims in proptest::collection::vec(1i64..4, 0..4), seed in any::<u64>()) {
        let rank = dims.len();
        let mut order: Vec<i64> = (0..rank as i64).collect();
        // A permutation from the seed (Fisher-Yates with a simple LCG).
        let mut state = seed;
        for i in (1..rank).rev() {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            order.swap(i, (state >> 33) as usize % (i + 1));
        }
        let n: i64 = dims.iter().product();
        let values: Vec<f32> = (0..n).map(|v| v as f32).collect();
        let logical = Array::from_f32(&dims, &values);
        let physical = logical.to_physical(&order).expect("to physical");
        let back = Array::from_physical(PrimitiveType::F32, dims.clone(), &order, physical).expect("from physical");
        prop_assert_eq!(back, logical);
    }
}

#[test]
fn column_major_layout_is_the_transpose() {
    // [[1,2,3],[4,5,6]] in layout {0,1} (dimension 0 fastest) is stored 1,4,2,5,3,6.
    let logical = Array::from_f32(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let physical = logical.to_physical(&[0, 1]).expect("layout");
    let want = Array::from_f32(&[6], &[1.0, 4.0, 2.0, 5.0, 3.0, 6.0]).bytes;
    assert_eq!(physical, want);
    assert!(logical.to_physical(&[0, 0]).is_err());
}
