//! `check` on pairs with one defect each: every finding code is produced by the
//! pair built to break its rule, and by no other pair. Expectations are written by hand.

use abi::metaneff::{self, text};
use abi::neff::{GraphSpec, Neff, NeffSpec, ReadOptions, Signature, TensorSignature, Var};
use check::{self, Code, Severity};

/// The correct pair's metaneff: a user input, a state aliased by the second output, a weight.
const METANEFF: &str = r#"
input_tensors { name: "x" shape: [2, 4] data_type: FLOAT type: USER_INPUT }
input_tensors { name: "s" shape: [2, 4] data_type: FLOAT type: INPUT_STATE checkpoint_key: "state" }
input_tensors { name: "w" shape: [2, 4] data_type: FLOAT type: INPUT_WEIGHT checkpoint_key: "weight" }
output_tensors { name: "out" shape: [2, 4] data_type: FLOAT }
output_tensors { name: "new_s" shape: [2, 4] data_type: FLOAT }
output_aliases_to { key: 1 value: 1 }
"#;

/// The correct pair's HLO module, stored in `serialized_graph_def`.
const HLO: &str = "HloModule pair, entry_computation_layout={(f32[2,4]{1,0}, f32[2,4]{1,0}, f32[2,4]{1,0})->(f32[2,4]{1,0}, f32[2,4]{1,0})}

ENTRY main.1 {
  x.1 = f32[2,4]{1,0} parameter(0)
  s.1 = f32[2,4]{1,0} parameter(1)
  w.1 = f32[2,4]{1,0} parameter(2)
  out.1 = f32[2,4]{1,0} multiply(x.1, w.1)
  new_s.1 = f32[2,4]{1,0} add(s.1, x.1)
  ROOT tuple.1 = (f32[2,4]{1,0}, f32[2,4]{1,0}) tuple(out.1, new_s.1)
}
";

/// The correct pair's NEFF: one graph with the five I/O variables, 32 bytes each.
fn neff_spec() -> NeffSpec {
    let mut spec = NeffSpec::new("check.neff");
    spec.graphs.push(GraphSpec {
        name: "sg00".to_owned(),
        vars: vec![
            Var::new("x", 0, "input").with_size(32),
            Var::new("s", 1, "input").with_size(32),
            Var::new("w", 2, "input").with_size(32),
            Var::new("out", 3, "output").with_size(32),
            Var::new("new_s", 4, "output").with_size(32),
        ],
    });
    let tensor = |name| TensorSignature::new(name, "float32", &[2, 4]);
    spec.signature = Signature {
        inputs: vec![tensor("x"), tensor("s"), tensor("w")],
        outputs: vec![tensor("out"), tensor("new_s")],
    };
    spec
}

/// One pair: the correct one with text replacements in the metaneff and the HLO, a change to
/// the NEFF, and bytes appended to the metaneff; then the findings it must give, exactly.
struct Case {
    name: &'static str,
    metaneff: &'static [(&'static str, &'static str)],
    hlo: &'static [(&'static str, &'static str)],
    /// Store no HLO module at all.
    no_hlo: bool,
    neff: fn(&mut NeffSpec),
    appended: &'static [u8],
    /// `CODE tensor` per finding, in report order (`-` when the finding names no tensor).
    expect: &'static [&'static str],
}

const CASE: Case = Case {
    name: "",
    metaneff: &[],
    hlo: &[],
    no_hlo: false,
    neff: |_| {},
    appended: &[],
    expect: &[],
};

fn replace_all(source: &str, edits: &[(&str, &str)], case: &str) -> String {
    let mut out = source.to_owned();
    for (from, to) in edits {
        assert!(out.contains(from), "case {case}: {from:?} is not in the text to edit");
        out = out.replacen(from, to, 1);
    }
    out
}

fn pair(case: &Case) -> (Neff, Vec<u8>) {
    let mut spec = neff_spec();
    (case.neff)(&mut spec);
    let neff_bytes = spec.to_bytes().expect("the test NEFF writes");
    let neff = Neff::parse(&neff_bytes, &ReadOptions::default()).expect("the test NEFF parses");
    let text = replace_all(METANEFF, case.metaneff, case.name);
    let bytes = text::from_text(&text).expect("the test metaneff text encodes");
    let mut meta = metaneff::decode(&bytes).expect("the test metaneff decodes");
    if !case.no_hlo {
        meta.serialized_graph_def = replace_all(HLO, case.hlo, case.name).into_bytes().into();
    }
    let mut bytes = metaneff::encode(&meta);
    bytes.extend_from_slice(case.appended);
    (neff, bytes)
}

fn summary(report: &check::Report) -> Vec<String> {
    report
        .findings
        .iter()
        .map(|finding| {
            let tensor = finding.tensor.as_ref().map_or_else(|| "-".to_owned(), |t| t.to_string());
            format!("{} {tensor}", finding.code.code())
        })
        .collect()
}

fn cases() -> Vec<Case> {
    vec![
        Case { name: "correct_pair_has_no_findings", ..CASE },
        Case { name: "correct_pair_without_hlo_has_no_findings", no_hlo: true, ..CASE },
        Case {
            name: "input_name_that_is_no_variable",
            metaneff: &[(r#"name: "x""#, r#"name: "input0""#)],
            expect: &[r#"E001 input 0 "input0""#, r#"E003 input variable "x""#],
            ..CASE
        },
        Case {
            name: "output_name_that_is_no_variable",
            metaneff: &[(r#"name: "out""#, r#"name: "output0""#)],
            expect: &[r#"E002 output 0 "output0""#, r#"E004 output variable "out""#],
            ..CASE
        },
        Case {
            name: "neff_input_without_tensor",
            neff: |spec| spec.graphs[0].vars.push(Var::new("extra", 5, "input").with_size(4)),
            expect: &[r#"E003 input variable "extra""#],
            ..CASE
        },
        Case {
            name: "neff_output_without_tensor",
            neff: |spec| spec.graphs[0].vars.push(Var::new("extra", 5, "output").with_size(4)),
            expect: &[r#"E004 output variable "extra""#],
            ..CASE
        },
        Case {
            name: "duplicate_output_name",
            metaneff: &[(r#"name: "new_s""#, r#"name: "out""#)],
            expect: &[r#"E005 output 1 "out""#, r#"E004 output variable "new_s""#],
            ..CASE
        },
        Case {
            name: "unsupported_data_type",
            metaneff: &[(
                r#"name: "out" shape: [2, 4] data_type: FLOAT"#,
                r#"name: "out" shape: [2, 4] data_type: STRING"#,
            )],
            hlo: &[],
            expect: &[r#"E006 output 0 "out""#, r#"E020 output 0 "out""#],
            ..CASE
        },
        Case {
            name: "size_differs_from_the_variable",
            neff: |spec| spec.graphs[0].vars[0].size = Some(16),
            expect: &[r#"E007 input 0 "x""#],
            ..CASE
        },
        Case {
            name: "negative_dimension_has_no_size",
            metaneff: &[(r#"name: "x" shape: [2, 4]"#, r#"name: "x" shape: [-2, 4]"#)],
            expect: &[r#"E007 input 0 "x""#, r#"E018 input 0 "x""#],
            ..CASE
        },
        Case {
            name: "dtype_differs_from_the_dltype",
            neff: |spec| spec.signature.inputs[0].dtype = "bfloat16".to_owned(),
            expect: &[r#"E008 input 0 "x""#],
            ..CASE
        },
        Case {
            name: "uint32_dltype_accepts_int32",
            metaneff: &[(
                r#"name: "x" shape: [2, 4] data_type: FLOAT"#,
                r#"name: "x" shape: [2, 4] data_type: INT32"#,
            )],
            hlo: &[
                ("x.1 = f32[2,4]{1,0}", "x.1 = u32[2,4]{1,0}"),
                (
                    "(f32[2,4]{1,0}, f32[2,4]{1,0}, f32[2,4]{1,0})->",
                    "(u32[2,4]{1,0}, f32[2,4]{1,0}, f32[2,4]{1,0})->",
                ),
                ("multiply(x.1, w.1)", "multiply(w.1, w.1)"),
                ("add(s.1, x.1)", "add(s.1, s.1)"),
            ],
            neff: |spec| spec.signature.inputs[0].dtype = "uint32".to_owned(),
            ..CASE
        },
        Case {
            name: "alias_key_out_of_range",
            metaneff: &[(
                "output_aliases_to { key: 1 value: 1 }",
                "output_aliases_to { key: 2 value: 1 }",
            )],
            expect: &["E009 -"],
            ..CASE
        },
        Case {
            name: "alias_value_out_of_range",
            metaneff: &[(
                "output_aliases_to { key: 1 value: 1 }",
                "output_aliases_to { key: 1 value: -1 }",
            )],
            expect: &["E009 -"],
            ..CASE
        },
        Case {
            name: "alias_between_different_shapes",
            metaneff: &[
                (
                    "output_aliases_to { key: 1 value: 1 }",
                    "output_aliases_to { key: 1 value: 1 }\noutput_aliases_to { key: 0 value: 0 }",
                ),
                (r#"name: "x" shape: [2, 4]"#, r#"name: "x" shape: [8]"#),
            ],
            hlo: &[
                ("x.1 = f32[2,4]{1,0}", "x.1 = f32[8]{0}"),
                (
                    "(f32[2,4]{1,0}, f32[2,4]{1,0}, f32[2,4]{1,0})->",
                    "(f32[8]{0}, f32[2,4]{1,0}, f32[2,4]{1,0})->",
                ),
                ("multiply(x.1, w.1)", "multiply(w.1, w.1)"),
                ("add(s.1, x.1)", "add(s.1, s.1)"),
            ],
            expect: &[r#"E010 output 0 "out""#],
            ..CASE
        },
        Case {
            name: "tensor_type_outside_the_enum",
            metaneff: &[("type: USER_INPUT", "type: 7")],
            expect: &[r#"E011 input 0 "x""#],
            ..CASE
        },
        Case {
            name: "state_after_weight",
            metaneff: &[
                (
                    r#"name: "s" shape: [2, 4] data_type: FLOAT type: INPUT_STATE"#,
                    r#"name: "s" shape: [2, 4] data_type: FLOAT type: INPUT_WEIGHT"#,
                ),
                (
                    r#"name: "w" shape: [2, 4] data_type: FLOAT type: INPUT_WEIGHT"#,
                    r#"name: "w" shape: [2, 4] data_type: FLOAT type: INPUT_STATE"#,
                ),
            ],
            expect: &[r#"E012 input 2 "w""#],
            ..CASE
        },
        Case {
            name: "user_input_after_state",
            metaneff: &[(
                r#"name: "w" shape: [2, 4] data_type: FLOAT type: INPUT_WEIGHT checkpoint_key: "weight""#,
                r#"name: "w" shape: [2, 4] data_type: FLOAT type: USER_INPUT"#,
            )],
            expect: &[r#"E012 input 2 "w""#],
            ..CASE
        },
        Case {
            name: "weight_without_checkpoint_key",
            metaneff: &[(r#" checkpoint_key: "weight""#, "")],
            expect: &[r#"E013 input 2 "w""#],
            ..CASE
        },
        Case {
            name: "state_and_weight_share_a_checkpoint_key",
            metaneff: &[(r#"checkpoint_key: "weight""#, r#"checkpoint_key: "state""#)],
            expect: &[r#"E014 input 2 "w""#],
            ..CASE
        },
        Case {
            name: "dynamic_batch_on_a_scalar",
            metaneff: &[(
                r#"name: "out" shape: [2, 4]"#,
                r#"name: "out" allow_dynamic_batch_size: true"#,
            )],
            neff: |spec| spec.graphs[0].vars[3].size = Some(4),
            hlo: &[
                ("out.1 = f32[2,4]{1,0} multiply(x.1, w.1)", "out.1 = f32[] constant(1)"),
                ("->(f32[2,4]{1,0}, f32[2,4]{1,0})", "->(f32[], f32[2,4]{1,0})"),
                (
                    "ROOT tuple.1 = (f32[2,4]{1,0}, f32[2,4]{1,0})",
                    "ROOT tuple.1 = (f32[], f32[2,4]{1,0})",
                ),
            ],
            expect: &[r#"E015 output 0 "out""#],
            ..CASE
        },
        Case {
            name: "hlo_that_does_not_parse",
            hlo: &[("ROOT tuple.1", "ROOT tuple.1 = = ")],
            expect: &["E016 -"],
            ..CASE
        },
        Case {
            name: "hlo_with_another_parameter_count",
            hlo: &[
                ("  w.1 = f32[2,4]{1,0} parameter(2)\n", ""),
                ("multiply(x.1, w.1)", "multiply(x.1, x.1)"),
                (", f32[2,4]{1,0}, f32[2,4]{1,0})->", ", f32[2,4]{1,0})->"),
            ],
            expect: &["E017 -"],
            ..CASE
        },
        Case {
            name: "hlo_parameter_of_another_type",
            hlo: &[
                ("w.1 = f32[2,4]{1,0}", "w.1 = s32[2,4]{1,0}"),
                (", f32[2,4]{1,0})->", ", s32[2,4]{1,0})->"),
                ("multiply(x.1, w.1)", "multiply(x.1, x.1)"),
            ],
            expect: &[r#"E018 input 2 "w""#],
            ..CASE
        },
        Case {
            name: "hlo_with_another_result_count",
            hlo: &[
                ("->(f32[2,4]{1,0}, f32[2,4]{1,0})", "->(f32[2,4]{1,0})"),
                (
                    "ROOT tuple.1 = (f32[2,4]{1,0}, f32[2,4]{1,0}) tuple(out.1, new_s.1)",
                    "ROOT tuple.1 = (f32[2,4]{1,0}) tuple(out.1)",
                ),
            ],
            expect: &["E019 -"],
            ..CASE
        },
        Case {
            name: "hlo_result_of_another_shape",
            hlo: &[
                ("new_s.1 = f32[2,4]{1,0} add(s.1, x.1)", "new_s.1 = f32[4,2]{1,0} reshape(s.1)"),
                ("->(f32[2,4]{1,0}, f32[2,4]{1,0})", "->(f32[2,4]{1,0}, f32[4,2]{1,0})"),
                (
                    "ROOT tuple.1 = (f32[2,4]{1,0}, f32[2,4]{1,0})",
                    "ROOT tuple.1 = (f32[2,4]{1,0}, f32[4,2]{1,0})",
                ),
            ],
            expect: &[r#"E020 output 1 "new_s""#],
            ..CASE
        },
        Case {
            name: "unknown_field_is_a_warning",
            // Field 20, varint 1: a field the schema does not know.
            appended: &[0xa0, 0x01, 0x01],
            expect: &["W001 -"],
            ..CASE
        },
        Case {
            name: "variable_without_size_is_unchecked",
            neff: |spec| spec.graphs[0].vars[4].size = None,
            expect: &[r#"W002 output 1 "new_s""#],
            ..CASE
        },
        Case {
            name: "tensor_missing_from_the_signature_is_unchecked",
            neff: |spec| {
                spec.signature.outputs.pop();
            },
            expect: &[r#"W003 output 1 "new_s""#],
            ..CASE
        },
        Case {
            name: "count_fields_that_disagree",
            metaneff: &[(
                "output_aliases_to { key: 1 value: 1 }",
                "output_aliases_to { key: 1 value: 1 }\nnum_user_inputs: 1 num_states: 2 num_weights: 1",
            )],
            expect: &["W004 -"],
            ..CASE
        },
        Case {
            name: "count_fields_that_agree",
            metaneff: &[(
                "output_aliases_to { key: 1 value: 1 }",
                "output_aliases_to { key: 1 value: 1 }\nnum_user_inputs: 1 num_states: 1 num_weights: 1",
            )],
            ..CASE
        },
        Case {
            name: "untyped_input_is_a_warning",
            metaneff: &[(" type: USER_INPUT", "")],
            expect: &[r#"W005 input 0 "x""#],
            ..CASE
        },
    ]
}

#[test]
fn each_broken_pair_gives_its_findings() {
    let mut failures = Vec::new();
    for case in cases() {
        let (neff, bytes) = pair(&case);
        let report = check::check(&neff, &bytes).expect("the test metaneff decodes");
        let actual = summary(&report);
        if actual != case.expect {
            failures.push(format!(
                "{}: expected {:?}\n  got {:?}\n{}",
                case.name,
                case.expect,
                actual,
                report.to_text()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_code_is_produced_by_some_case() {
    let produced: std::collections::BTreeSet<String> = cases()
        .iter()
        .flat_map(|case| case.expect.iter().map(|line| line[..4].to_owned()))
        .collect();
    for code in Code::ALL {
        assert!(produced.contains(code.code()), "no case produces {code}");
    }
}

#[test]
fn codes_are_unique_and_their_letter_is_their_severity() {
    let mut seen = std::collections::BTreeSet::new();
    for code in Code::ALL {
        assert!(seen.insert(code.code()), "{code} is listed twice");
        let letter = match code.severity() {
            Severity::Error => 'E',
            Severity::Warning => 'W',
        };
        assert!(code.code().starts_with(letter), "{code} is a {}", code.severity().name());
    }
}

#[test]
fn warnings_alone_let_the_pair_bind_and_errors_do_not() {
    let warn = Case { appended: &[0xa0, 0x01, 0x01], ..CASE };
    let (neff, bytes) = pair(&warn);
    let report = check::check(&neff, &bytes).expect("decodes");
    assert!(!report.has_errors());
    assert_eq!(report.count(Severity::Warning), 1);
    let broken = Case { metaneff: &[(r#" checkpoint_key: "weight""#, "")], ..CASE };
    let (neff, bytes) = pair(&broken);
    let report = check::check(&neff, &bytes).expect("decodes");
    assert!(report.has_errors());
}

#[test]
fn messages_say_what_was_expected_and_what_came() {
    let case = Case { neff: |spec| spec.graphs[0].vars[0].size = Some(16), ..CASE };
    let (neff, bytes) = pair(&case);
    let report = check::check(&neff, &bytes).expect("decodes");
    assert_eq!(
        report.findings[0].message,
        "FLOAT [2, 4] is 32 bytes, expected the NEFF variable's 16 bytes"
    );
    let case = Case { neff: |spec| spec.signature.inputs[0].dtype = "bfloat16".to_owned(), ..CASE };
    let (neff, bytes) = pair(&case);
    let report = check::check(&neff, &bytes).expect("decodes");
    assert_eq!(
        report.findings[0].message,
        "data_type is FLOAT, expected BFLOAT16 for neff.json dltype bfloat16"
    );
}

#[test]
fn a_truncated_metaneff_is_an_error_with_the_offset() {
    let (neff, bytes) = pair(&CASE);
    let error = check::check(&neff, &bytes[..bytes.len() - 3]).unwrap_err();
    let message = error.to_string();
    assert!(
        message.starts_with("metaneff does not decode: invalid metaneff at byte "),
        "{message}"
    );
    assert!(message.ends_with("a length prefix says 4 bytes, 1 left"), "{message}");
}
