//! `validate` and `load_module`: every structural defect is a typed error naming where it is.

mod corpus;
mod support;

use std::fs;

use hlo::proto::{HloModuleProto, LayoutProto, ShapeProto};
use hlo::{LoadError, ValidateError, load_module, validate};

const ADD: &str = "HloModule m

ENTRY e {
  x = f32[2]{0} parameter(0)
  y = f32[2]{0} parameter(1)
  ROOT s = f32[2]{0} add(x, y)
}
";

fn parse(src: &str) -> HloModuleProto {
    hlo::text::parse_module(src).unwrap()
}

fn err(m: &HloModuleProto) -> String {
    validate(m).unwrap_err().to_string()
}

#[test]
fn every_fixture_is_valid_in_both_forms() {
    let mut count = 0;
    for case in corpus::cases("fixtures") {
        for file in ["jax.pb", "module.hlo", "old.hlo", "xla.pb"] {
            let path = case.file(file);
            let name = path.display();
            let m =
                load_module(&fs::read(&path).unwrap()).unwrap_or_else(|e| panic!("{name}: {e}"));
            validate(&m).unwrap_or_else(|e| panic!("{name}: {e}"));
            count += 1;
        }
    }
    assert!(count >= 30, "{count} fixtures");
}

#[test]
fn missing_entry() {
    let mut m = parse(ADD);
    m.entry_computation_id = 7;
    assert_eq!(err(&m), "the entry computation id 7 (`e`) names no computation of the module");
}

#[test]
fn duplicate_ids() {
    let mut m = parse(&format!("{ADD}\nf {{\n  ROOT z = f32[] constant(0)\n}}\n"));
    m.computations[1].id = m.computations[0].id;
    assert_eq!(err(&m), "computations `e` and `f` have the same id 0");
    let mut m = parse(ADD);
    m.computations[0].instructions[1].id = m.computations[0].instructions[0].id;
    assert_eq!(err(&m), "computation `e`: instructions `x` and `y` have the same id 0");
}

#[test]
fn shapes_must_exist_and_make_sense() {
    let mut m = parse(ADD);
    m.computations[0].instructions[1].shape = None;
    assert_eq!(err(&m), "computation `e`, instruction `y`: has no shape");
    let mut m = parse(ADD);
    m.computations[0].instructions[1].shape.as_mut().unwrap().dimensions[0] = -2;
    assert_eq!(
        err(&m),
        "computation `e`, instruction `y`: invalid shape: dimension size -2 is negative"
    );
    let mut m = parse(ADD);
    m.computations[0].instructions[2]
        .shape
        .as_mut()
        .unwrap()
        .layout
        .as_mut()
        .unwrap()
        .minor_to_major = vec![3];
    assert_eq!(
        err(&m),
        "computation `e`, instruction `s`: invalid shape: layout [3] is not a permutation of 1 dimensions"
    );
    let mut m = parse(ADD);
    m.computations[0].instructions[0].shape.as_mut().unwrap().element_type = 99;
    assert_eq!(
        err(&m),
        "computation `e`, instruction `x`: invalid shape: element type 99 is not a valid type"
    );
}

#[test]
fn dangling_references() {
    let mut m = parse(ADD);
    m.computations[0].instructions[2].operand_ids[1] = 12345;
    assert_eq!(
        err(&m),
        "computation `e`, instruction `s`: operand id 12345 is not an instruction of `e`"
    );
    let mut m = parse(ADD);
    m.computations[0].instructions[2].control_predecessor_ids.push(-1);
    assert_eq!(
        err(&m),
        "computation `e`, instruction `s`: control predecessor id -1 is not an instruction of `e`"
    );
    let mut m = parse(ADD);
    m.computations[0].root_id = 99;
    assert_eq!(err(&m), "computation `e`, instruction ``: root id 99 is not an instruction of `e`");
    let mut m = parse(ADD);
    m.computations[0].instructions[2].called_computation_ids.push(4);
    assert_eq!(
        err(&m),
        "computation `e`, instruction `s`: called computation id 4 is not in the module"
    );
}

#[test]
fn an_operand_of_another_computation_is_dangling() {
    let mut m = parse(&format!("{ADD}\nf {{\n  ROOT z = f32[] constant(0)\n}}\n"));
    let foreign = m.computations[1].instructions[0].id;
    m.computations[0].instructions[2].operand_ids[0] = foreign;
    assert!(err(&m).contains("operand id 4294967296 is not an instruction of `e`"), "{}", err(&m));
}

#[test]
fn parameters_are_numbered_densely() {
    let mut m = parse(ADD);
    m.computations[0].instructions[1].parameter_number = 0;
    assert_eq!(err(&m), "computation `e`, instruction `y`: parameter number 0 is used twice");
    let mut m = parse(ADD);
    m.computations[0].instructions[1].parameter_number = 5;
    assert_eq!(
        err(&m),
        "computation `e`, instruction `y`: parameter number 5 leaves a gap (expected 1)"
    );
}

#[test]
fn instruction_cycles_are_found_not_followed() {
    // The text allows forward references, so a cycle parses and validation rejects it.
    let m = parse(
        "HloModule m\nENTRY e {\n  a = f32[] add(b, b)\n  b = f32[] negate(a)\n  ROOT r = f32[] copy(b)\n}\n",
    );
    assert_eq!(
        err(&m),
        "computation `e`: instruction `a` depends on itself through its operands or control predecessors"
    );
    let m = parse("HloModule m\nENTRY e {\n  ROOT a = f32[] negate(a)\n}\n");
    assert!(matches!(validate(&m), Err(ValidateError::InstructionCycle { .. })));
    let m = parse(
        "HloModule m\nENTRY e {\n  a = f32[] constant(1)\n  ROOT b = f32[] negate(a), control-predecessors={b}\n}\n",
    );
    assert!(matches!(validate(&m), Err(ValidateError::InstructionCycle { .. })));
}

#[test]
fn call_cycles_are_found() {
    let m = parse(
        "HloModule m\nf {\n  p = f32[] parameter(0)\n  ROOT c = f32[] call(p), to_apply=g\n}\n\ng {\n  p = f32[] parameter(0)\n  ROOT c = f32[] call(p), to_apply=f\n}\n\nENTRY e {\n  x = f32[] parameter(0)\n  ROOT r = f32[] call(x), to_apply=f\n}\n",
    );
    assert_eq!(err(&m), "computation `f` calls itself, directly or through other computations");
}

#[test]
fn a_long_chain_does_not_recurse() {
    let mut src = String::from("HloModule m\nENTRY e {\n  v0 = f32[] parameter(0)\n");
    for k in 1..100_000 {
        src.push_str(&format!("  v{k} = f32[] negate(v{})\n", k - 1));
    }
    src.push_str("}\n");
    validate(&parse(&src)).unwrap();
}

#[test]
fn load_tells_text_from_binary() {
    let from_text =
        load_module(format!("// a comment\n/* and another */\n{ADD}").as_bytes()).unwrap();
    let from_binary = load_module(&hlo::encode_module(&from_text)).unwrap();
    assert_eq!(from_text, from_binary);
    let with_bom = load_module(format!("\u{feff}{ADD}").as_bytes()).unwrap();
    assert_eq!(with_bom, from_text);
    assert!(matches!(load_module(b"  HloModule m\nENTRY e {"), Err(LoadError::Text(_))));
    assert!(matches!(load_module(b"HloModule \xff"), Err(LoadError::NotUtf8 { offset: 10 })));
    assert!(matches!(load_module(b"\x0a\x05ab"), Err(LoadError::Binary(_))));
    assert!(matches!(load_module(b""), Err(LoadError::Binary(hlo::DecodeError::Empty))));
}

/// Every enum-like field holds one of XLA's values, or validation names the field, the
/// instruction and the values allowed; checked on the decoded binary module, where nothing but
/// validation stands between such a value and a printer that would write text the parser refuses.
#[test]
fn unknown_enum_values_are_refused_naming_the_field_and_the_allowed_values() {
    type Set = fn(&mut hlo::proto::HloInstructionProto);
    let cases: [(Set, &str); 7] = [
        (
            |i| i.comparison_type = "FLMAT".into(),
            "comparison_type `FLMAT` is not one of FLOAT, TOTALORDER, SIGNED, UNSIGNED, PARTIALORDER",
        ),
        (
            |i| i.comparison_direction = "LTE".into(),
            "comparison_direction `LTE` is not one of EQ, NE, LT, LE, GT, GE",
        ),
        (
            |i| {
                i.precision_config = Some(Box::new(hlo::proto::PrecisionConfig {
                    operand_precision: vec![0, 7],
                    algorithm: 0,
                }))
            },
            "operand_precision 7 is not one of DEFAULT, HIGH, HIGHEST",
        ),
        (
            |i| i.distribution = 3,
            "distribution 3 is not one of RNG_INVALID, RNG_UNIFORM, RNG_NORMAL",
        ),
        (
            |i| i.rng_algorithm = -1,
            "rng_algorithm -1 is not one of RNG_DEFAULT, RNG_THREE_FRY, RNG_PHILOX",
        ),
        (|i| i.fft_type = 4, "fft_type 4 is not one of FFT, IFFT, RFFT, IRFFT"),
        (
            |i| {
                i.triangular_solve_options = Some(hlo::proto::TriangularSolveOptions {
                    transpose_a: 9,
                    ..Default::default()
                })
            },
            "transpose_a 9 is not one of TRANSPOSE_INVALID, NO_TRANSPOSE, TRANSPOSE, ADJOINT",
        ),
    ];
    for (set, expected) in cases {
        let mut m = parse(ADD);
        set(&mut m.computations[0].instructions[2]);
        let binary = hlo::decode_module(&hlo::encode_module(&m)).unwrap();
        assert_eq!(err(&binary), format!("computation `e`, instruction `s`: {expected}"));
    }
    let mut m = parse(
        "HloModule m, input_output_alias={ {}: (0, {}, may-alias) }\nENTRY e {\n  ROOT x = f32[] parameter(0)\n}\n",
    );
    m.input_output_alias.as_mut().unwrap().entries[0].kind = 3;
    assert_eq!(
        err(&m),
        "computation ``, instruction `input_output_alias`: kind 3 is not one of UNDEFINED_ALIAS, MAY_ALIAS, MUST_ALIAS"
    );
    // The values XLA has pass.
    let mut m = parse(ADD);
    m.computations[0].instructions[2].comparison_type = "TOTALORDER".into();
    m.computations[0].instructions[2].fft_type = 3;
    validate(&m).unwrap();
}

const CONSTANT: &str = "HloModule m

ENTRY e {
  ROOT c = f32[2]{0} constant({1, 2})
}
";

/// A constant's shape and its literal must agree, in element type, dimensions and element
/// count, and its layouts must be permutations (an empty one on an array is not: the text reads
/// the values through it); otherwise the printer writes values the parser refuses (fuzz finding:
/// such binary modules validated, then their text did not parse).
#[test]
fn a_constant_whose_shape_and_literal_disagree_is_refused() {
    type Set = fn(&mut hlo::proto::HloInstructionProto);
    let cases: [(Set, &str); 6] = [
        (
            |i| i.shape.as_mut().unwrap().layout = Some(LayoutProto::default()),
            "its shape's layout {} is not a permutation of 1 dimensions",
        ),
        (
            |i| {
                let lit = i.literal.as_mut().unwrap();
                lit.shape.as_mut().unwrap().layout =
                    Some(LayoutProto { minor_to_major: vec![0, 0], ..Default::default() })
            },
            "its literal's layout {0,0} is not a permutation of 1 dimensions",
        ),
        (
            |i| {
                let lit = i.literal.as_mut().unwrap();
                lit.shape.as_mut().unwrap().dimensions = vec![3];
                lit.f32s.push(3.0);
            },
            "its literal's shape f32[3]{0} is not its shape f32[2]{0}",
        ),
        (
            |i| {
                let lit = i.literal.as_mut().unwrap();
                lit.shape.as_mut().unwrap().element_type = hlo::proto::PrimitiveType::S32.into();
                lit.s32s = std::mem::take(&mut lit.f32s).iter().map(|&v| v as i32).collect();
            },
            "its literal's shape s32[2]{0} is not its shape f32[2]{0}",
        ),
        (
            |i| i.literal.as_mut().unwrap().f32s.push(3.0),
            "the f32 literal holds 3 elements, its shape needs 2",
        ),
        (|i| i.literal = None, "it has no literal"),
    ];
    // The elements of a tuple literal have shapes of their own, which the printer writes by.
    let mut m = parse(
        "HloModule m\n\nENTRY e {\n  ROOT c = (s4[1,0]{1,0}, f32[]) constant(({ {} }, 1))\n}\n",
    );
    validate(&m).unwrap();
    let element =
        &mut m.computations[0].instructions[0].literal.as_mut().unwrap().tuple_literals[0];
    element.shape.as_mut().unwrap().dimensions = vec![3, 0];
    assert_eq!(
        err(&m),
        "computation `e`, instruction `c`: invalid constant: its literal's shape s4[3,0]{1,0} is not its shape s4[1,0]{1,0}"
    );
    for (set, expected) in cases {
        let mut m = parse(CONSTANT);
        validate(&m).unwrap();
        set(&mut m.computations[0].instructions[0]);
        let binary = hlo::decode_module(&hlo::encode_module(&m)).unwrap();
        assert_eq!(
            err(&binary),
            format!("computation `e`, instruction `c`: invalid constant: {expected}")
        );
    }
}

/// Every HLO module of the corpora, as text and binary, with the ones `load_module` reads.
fn corpus_modules() -> Vec<(String, HloModuleProto)> {
    let mut files = corpus::files_under(&corpus::root().join("tests"), &[".hlo", ".pb"]);
    files.extend(corpus::files_under(&corpus::root().join("../vectors"), &[".hlo", ".pb"]));
    files
        .iter()
        .filter_map(|path| {
            let m = load_module(&fs::read(path).unwrap()).ok()?;
            Some((path.display().to_string(), m))
        })
        .collect()
}

/// One structural change a fuzzer's mutation can make to a module's layouts, shapes and
/// literals, in the places the printer reads.
fn perturb(rng: &mut support::Rng, m: &mut HloModuleProto) {
    const LAYOUTS: &[&[i64]] = &[&[], &[0], &[1, 0], &[0, 1], &[0, 0], &[2], &[-1], &[2, 1, 0]];
    let layout = |rng: &mut support::Rng| {
        Some(LayoutProto { minor_to_major: rng.pick(LAYOUTS).to_vec(), ..Default::default() })
    };
    fn leaf<'s>(rng: &mut support::Rng, s: &'s mut ShapeProto) -> &'s mut ShapeProto {
        if s.tuple_shapes.is_empty() {
            return s;
        }
        let k = rng.below(s.tuple_shapes.len());
        leaf(rng, &mut s.tuple_shapes[k])
    }
    if rng.chance(30) {
        m.host_program_shape = m.derived_host_program_shape();
    }
    let n_computations = m.computations.len();
    let c = &mut m.computations[rng.below(n_computations)];
    let n_instructions = c.instructions.len();
    let i = &mut c.instructions[rng.below(n_instructions)];
    match rng.below(8) {
        0 => leaf(rng, i.shape.as_mut().unwrap()).layout = layout(rng),
        1 => {
            let d = &mut leaf(rng, i.shape.as_mut().unwrap()).dimensions;
            if !d.is_empty() {
                d[0] += 1;
            }
        }
        2 => {
            if let Some(s) = i.literal.as_mut().and_then(|l| l.shape.as_mut()) {
                leaf(rng, s).layout = layout(rng);
            }
        }
        3 => {
            if let Some(s) = i.literal.as_mut().and_then(|l| l.shape.as_mut()) {
                let s = leaf(rng, s);
                if let Some(d) = s.dimensions.first_mut() {
                    *d += 1;
                } else {
                    s.element_type = hlo::proto::PrimitiveType::S32.into();
                }
            }
        }
        4 => {
            if let Some(l) = i.literal.as_mut() {
                l.f32s.push(1.0);
                l.s32s.push(1);
                l.preds.push(true);
            }
        }
        5 => {
            if let Some(r) = m.host_program_shape.as_mut().and_then(|p| p.result.as_mut()) {
                let r = leaf(rng, r);
                if rng.chance(50) {
                    r.layout = layout(rng);
                } else {
                    r.dimensions.push(-1);
                }
            }
        }
        6 => {
            // An element of a tuple literal with its own shape, dimensions reversed (the same
            // count of values, another nesting of braces).
            let element = i.literal.as_mut().and_then(|l| l.tuple_literals.first_mut());
            if let Some(s) = element.and_then(|e| e.shape.as_mut()) {
                s.dimensions.reverse();
            }
        }
        _ => {
            if let Some(p) = m.host_program_shape.as_mut().and_then(|p| p.parameters.first_mut()) {
                leaf(rng, p).layout = layout(rng);
            }
        }
    }
}

/// What `validate` accepts and the printer writes, the parser reads back, and printing that is
/// a fixed point: over the corpora and over random modules with their layouts, shapes and
/// literals perturbed as a fuzzer's mutations do.
#[test]
fn every_module_validate_accepts_prints_as_text_that_parses_back() {
    let check = |what: &str, m: &HloModuleProto| {
        if validate(m).is_err() {
            return false;
        }
        let Ok(printed) = hlo::text::print_module(m) else { return false };
        let parsed = hlo::text::parse_module(&printed).unwrap_or_else(|e| {
            panic!("{what}: validated and printed, but the print does not parse: {e}\n{printed}")
        });
        let again = hlo::text::print_module(&parsed).unwrap();
        assert_eq!(again, printed, "{what}: print is not a fixed point");
        true
    };
    let corpus = corpus_modules();
    let accepted = corpus.iter().filter(|(path, m)| check(path, m)).count();
    assert!(accepted >= 200, "only {accepted} corpus modules validate and print");
    let mut rng = support::Rng::new(12);
    let mut perturbed = 0;
    for seed in 0..4000 {
        let mut m = support::module(&mut support::Rng::new(seed));
        perturb(&mut rng, &mut m);
        // Through the wire, as a fuzzer's input comes.
        let m = hlo::decode_module(&hlo::encode_module(&m)).unwrap();
        perturbed += usize::from(check(&format!("random module {seed}"), &m));
    }
    assert!(perturbed >= 1000, "only {perturbed} perturbed modules validate and print");
}

/// Found by `tests/fuzz.rs` past 3 million mutated binaries: a conditional carrying iota
/// replica groups `[0,0]<=[]` validated, and its print did not parse (the text form needs a
/// reshape dimension). Iota groups on any instruction must now be what the text writes and the
/// parser reads.
#[test]
fn iota_replica_groups_the_text_cannot_write_are_refused() {
    let text =
        "HloModule m\n\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT n = f32[4] negate(p)\n}\n";
    let with_groups = |groups: i64, per_group: i64, dims: Vec<i64>| {
        let mut m = parse(text);
        let n = m.computations[0].instructions.iter_mut().find(|i| i.name == "n").unwrap();
        n.iota_replica_group_list = Some(Box::new(hlo::proto::IotaReplicaGroupListProto {
            num_replica_groups: groups,
            num_devices_per_group: per_group,
            iota_transpose_perm: (0..dims.len() as i32).collect(),
            iota_reshape_dims: dims,
        }));
        m
    };
    assert_eq!(
        err(&with_groups(0, 0, vec![])),
        "computation `e`, instruction `n`: invalid iota replica groups: [0,0]<=[] has no reshape dimensions, expected at least one"
    );
    assert!(err(&with_groups(2, 2, vec![3])).contains("invalid iota replica groups"));
    let fine = with_groups(1, 2, vec![2]);
    validate(&fine).unwrap();
    let printed = hlo::text::print_module(&fine).unwrap();
    hlo::text::parse_module(&printed).unwrap();
}
