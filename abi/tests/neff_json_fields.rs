//! Pins where a malformed `neff.json`, `kelf-N.json` or `def.json` field is reported (member,
//! field path down to the refused array item, what was expected, what came) and which shapes are
//! accepted leniently, so a change of the JSON reader cannot move or lose a path unnoticed.

use abi::neff::write_payload;
use abi::neff::{Neff, NeffError, NeffHeader, ReadOptions, TensorSignature, assemble_neff};
use abi::status::NrtStatus;

const KELF_SG00: &[u8] =
    br#"{"graphs":[{"definition":"sg00/def.json","name":"sg00"}],"version":"0.5"}"#;
const GOOD_DEF: &[u8] = br#"{"var":{"out":{"type":"output","var_id":0}}}"#;

fn neff_from_members(members: &[(&str, &[u8])]) -> Vec<u8> {
    let payload = write_payload(2, members).expect("valid members");
    assemble_neff(&NeffHeader::default(), &payload).expect("fits")
}

/// A NEFF with one graph whose `neff.json`, `kelf-0.json` and `sg00/def.json` are given.
fn neff_with(neff_json: Option<&str>, kelf: &[u8], def_json: &[u8]) -> Vec<u8> {
    let mut members = vec![("kelf-0.json", kelf), ("sg00/def.json", def_json)];
    if let Some(neff_json) = neff_json {
        members.push(("neff.json", neff_json.as_bytes()));
    }
    neff_from_members(&members)
}

/// The `(member, field, expected, found)` of the malformed-field error the file must give.
fn field_error(file: &[u8]) -> (String, String, String, String) {
    let error = Neff::parse(file, &ReadOptions::default()).expect_err("the file must be refused");
    assert_eq!(error.status(), NrtStatus::Invalid, "{error}");
    match error {
        NeffError::MalformedField { member, field, expected, found } => {
            (member, field, expected.to_string(), found)
        }
        other => panic!("expected a malformed field, got {other:?}"),
    }
}

/// Every case whose error differs from its row, as `input: got …, want …` lines, so one run
/// shows all the differences.
fn mismatches(
    cases: impl IntoIterator<Item = (String, Vec<u8>, (String, String, String, String))>,
) -> Vec<String> {
    cases
        .into_iter()
        .filter_map(|(input, file, want)| {
            let got = field_error(&file);
            (got != want).then(|| format!("{input}: got {got:?}, want {want:?}"))
        })
        .collect()
}

fn row(member: &str, field: &str, expected: &str, found: &str) -> (String, String, String, String) {
    (member.to_owned(), field.to_owned(), expected.to_owned(), found.to_owned())
}

fn signature_input(shape: &str) -> String {
    format!(r#"{{"metadata":{{"signatures":{{"default":{{"inputs":{{"x":{shape}}}}}}}}}}}"#)
}

#[test]
fn malformed_neff_json_fields_name_their_path() {
    const SHAPES: &str = r#"a tagged list ["list_shape", [items]]"#;
    const HEAD: &str = "[node, output_idx, version]";
    let sig = "metadata.signatures.default";
    let cases: Vec<(String, (String, String, String, String))> = vec![
        ("[]".to_owned(), row("neff.json", "(root)", "an object", "[]")),
        (r#"{"metadata":1}"#.to_owned(), row("neff.json", "metadata", "an object", "1")),
        (
            r#"{"metadata":{"signatures":[]}}"#.to_owned(),
            row("neff.json", "metadata.signatures", "an object", "[]"),
        ),
        (
            r#"{"metadata":{"signatures":{"default":"x"}}}"#.to_owned(),
            row("neff.json", sig, "an object", "\"x\""),
        ),
        (
            r#"{"metadata":{"signatures":{"other":7}}}"#.to_owned(),
            row("neff.json", "metadata.signatures.other", "an object", "7"),
        ),
        (
            r#"{"metadata":{"signatures":{"default":{"inputs":[]}}}}"#.to_owned(),
            row("neff.json", &format!("{sig}.inputs"), "an object", "[]"),
        ),
        (
            r#"{"metadata":{"signatures":{"default":{"outputs":1}}}}"#.to_owned(),
            row("neff.json", &format!("{sig}.outputs"), "an object", "1"),
        ),
        (signature_input("1"), row("neff.json", &format!("{sig}.inputs.x"), "an object", "1")),
        (
            signature_input(r#"{"id":"a"}"#),
            row("neff.json", &format!("{sig}.inputs.x.id"), "a non-negative integer", "\"a\""),
        ),
        (
            signature_input(r#"{"id":-1}"#),
            row("neff.json", &format!("{sig}.inputs.x.id"), "a non-negative integer", "-1"),
        ),
        (
            signature_input(r#"{"dtype":5}"#),
            row("neff.json", &format!("{sig}.inputs.x.dtype"), "a string", "5"),
        ),
        (
            signature_input(r#"{"shape":"128"}"#),
            row("neff.json", &format!("{sig}.inputs.x.shape"), "an array", "\"128\""),
        ),
        (
            signature_input(r#"{"shape":[1,1.5]}"#),
            row("neff.json", &format!("{sig}.inputs.x.shape[1]"), "an integer", "1.5"),
        ),
        (
            r#"{"metadata":{"signatures":{"default":{"outputs":{"o":{"shape":{}}}}}}}"#.to_owned(),
            row("neff.json", &format!("{sig}.outputs.o.shape"), "an array", "{}"),
        ),
        (r#"{"nodes":{}}"#.to_owned(), row("neff.json", "nodes", "an array", "{}")),
        (r#"{"nodes":[{},1]}"#.to_owned(), row("neff.json", "nodes[1]", "an object", "1")),
        (
            r#"{"nodes":[{"name":3}]}"#.to_owned(),
            row("neff.json", "nodes[0].name", "a string", "3"),
        ),
        (
            r#"{"nodes":[{"output_names":"o"}]}"#.to_owned(),
            row("neff.json", "nodes[0].output_names", "an array", "\"o\""),
        ),
        (
            r#"{"nodes":[{"attrs":{"output_names":[1]}}]}"#.to_owned(),
            row("neff.json", "nodes[0].attrs.output_names[0]", "a string", "1"),
        ),
        (
            r#"{"nodes":[],"node_row_ptr":"x"}"#.to_owned(),
            row("neff.json", "node_row_ptr", "an array", "\"x\""),
        ),
        (
            r#"{"nodes":[],"node_row_ptr":[0,-1]}"#.to_owned(),
            row("neff.json", "node_row_ptr[1]", "a non-negative integer", "-1"),
        ),
        (r#"{"nodes":[],"attrs":1}"#.to_owned(), row("neff.json", "attrs", "an object", "1")),
        (
            r#"{"nodes":[],"attrs":{"shape":["list_str",[]]}}"#.to_owned(),
            row("neff.json", "attrs.shape", SHAPES, r#"["list_str",[]]"#),
        ),
        (
            r#"{"nodes":[],"attrs":{"shape":["list_shape",5]}}"#.to_owned(),
            row("neff.json", "attrs.shape[1]", "an array", "5"),
        ),
        (
            r#"{"nodes":[],"attrs":{"shape":["list_shape",[[1],"x"]]}}"#.to_owned(),
            row("neff.json", "attrs.shape[1][1]", "an array", "\"x\""),
        ),
        (
            r#"{"nodes":[],"attrs":{"dltype":["list_str",["f32",1]]}}"#.to_owned(),
            row("neff.json", "attrs.dltype[1][1]", "a string", "1"),
        ),
        (
            r#"{"nodes":[{"name":"x"}],"arg_nodes":"0"}"#.to_owned(),
            row("neff.json", "arg_nodes", "an array", "\"0\""),
        ),
        (
            r#"{"nodes":[{"name":"x"}],"arg_nodes":[5]}"#.to_owned(),
            row("neff.json", "arg_nodes[0]", "a node index in range", "5"),
        ),
        (
            r#"{"nodes":[{"name":"x"}],"heads":{}}"#.to_owned(),
            row("neff.json", "heads", "an array", "{}"),
        ),
        (
            r#"{"nodes":[{"name":"x"}],"heads":[[]]}"#.to_owned(),
            row("neff.json", "heads[0]", HEAD, "[]"),
        ),
        (
            r#"{"nodes":[{"name":"x"}],"heads":[0]}"#.to_owned(),
            row("neff.json", "heads[0]", HEAD, "0"),
        ),
        (
            r#"{"nodes":[{"name":"x"}],"heads":[["a"]]}"#.to_owned(),
            row("neff.json", "heads[0][0]", "a non-negative integer", "\"a\""),
        ),
        (
            r#"{"nodes":[{"name":"x"}],"heads":[[9,0,0]]}"#.to_owned(),
            row("neff.json", "heads[0][0]", "a node index in range", "9"),
        ),
        // An object is read only from an object: serde's derive alone would take an array.
        (r#"{"nodes":[["x"]]}"#.to_owned(), row("neff.json", "nodes[0]", "an object", r#"["x"]"#)),
        (
            r#"{"metadata":{"signatures":{"default":{"inputs":{"x":[1]}}}}}"#.to_owned(),
            row("neff.json", &format!("{sig}.inputs.x"), "an object", "[1]"),
        ),
        (
            r#"{"nodes":[{"name":"x"}],"heads":[[0,0,"v"]]}"#.to_owned(),
            row("neff.json", "heads[0][2]", "a non-negative integer", "\"v\""),
        ),
        (
            r#"{"nodes":[],"attrs":{"shape":["list_shape",[],1]}}"#.to_owned(),
            row("neff.json", "attrs.shape", SHAPES, r#"["list_shape",[],1]"#),
        ),
        (
            r#"{"nodes":[],"attrs":{"shape":[7,[]]}}"#.to_owned(),
            row("neff.json", "attrs.shape", SHAPES, "[7,[]]"),
        ),
        (
            r#"{"nodes":[],"attrs":{"dltype":["list_str"]}}"#.to_owned(),
            row(
                "neff.json",
                "attrs.dltype",
                r#"a tagged list ["list_str", [items]]"#,
                r#"["list_str"]"#,
            ),
        ),
    ];
    let wrong = mismatches(cases.into_iter().map(|(neff_json, want)| {
        let file = neff_with(Some(&neff_json), KELF_SG00, GOOD_DEF);
        (neff_json, file, want)
    }));
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn malformed_kelf_and_def_json_fields_name_their_path() {
    let kelf_cases: [(&[u8], _); 8] = [
        (b"[]", row("kelf-0.json", "(root)", "an object", "[]")),
        (br#"{"graphs":1}"#, row("kelf-0.json", "graphs", "an array", "1")),
        (br#"{"graphs":[1]}"#, row("kelf-0.json", "graphs[0]", "an object", "1")),
        (
            br#"{"graphs":[{"name":"sg00"}]}"#,
            row("kelf-0.json", "graphs[0].definition", "a required field", "absent"),
        ),
        (
            br#"{"graphs":[{"definition":2}]}"#,
            row("kelf-0.json", "graphs[0].definition", "a string", "2"),
        ),
        (
            br#"{"graphs":[{"definition":"sg00/def.json","name":[]}]}"#,
            row("kelf-0.json", "graphs[0].name", "a string", "[]"),
        ),
        (
            br#"{"graphs":[["sg00/def.json"]]}"#,
            row("kelf-0.json", "graphs[0]", "an object", r#"["sg00/def.json"]"#),
        ),
        (
            br#"{"graphs":[{"definition":null}]}"#,
            row("kelf-0.json", "graphs[0].definition", "a string", "null"),
        ),
    ];
    let mut wrong = mismatches(kelf_cases.into_iter().map(|(kelf, want)| {
        (String::from_utf8_lossy(kelf).into_owned(), neff_with(None, kelf, GOOD_DEF), want)
    }));
    let var = |fields: &str| format!(r#"{{"var":{{"out":{{{fields}}}}}}}"#);
    let typed = |extra: &str| var(&format!(r#""type":"output","var_id":0,{extra}"#));
    let def_member = "sg00/def.json";
    let def_cases: Vec<(String, _)> = vec![
        ("[]".to_owned(), row(def_member, "(root)", "an object", "[]")),
        (r#"{"var":[]}"#.to_owned(), row(def_member, "var", "an object", "[]")),
        (r#"{"var":{"out":1}}"#.to_owned(), row(def_member, "var.out", "an object", "1")),
        (var(r#""var_id":0"#), row(def_member, "var.out.type", "a required field", "absent")),
        (var(r#""type":1,"var_id":0"#), row(def_member, "var.out.type", "a string", "1")),
        // `null` is there but is not a value of the field's type; absent is missing.
        (var(r#""type":null,"var_id":0"#), row(def_member, "var.out.type", "a string", "null")),
        (
            var(r#""type":"output","var_id":null"#),
            row(def_member, "var.out.var_id", "an integer in 0..2^32", "null"),
        ),
        (r#"{"var":{"out":[]}}"#.to_owned(), row(def_member, "var.out", "an object", "[]")),
        (
            var(r#""type":"output""#),
            row(def_member, "var.out.var_id", "a required field", "absent"),
        ),
        (
            var(r#""type":"output","var_id":"zero""#),
            row(def_member, "var.out.var_id", "an integer in 0..2^32", "\"zero\""),
        ),
        (
            var(r#""type":"output","var_id":4294967296"#),
            row(def_member, "var.out.var_id", "an integer in 0..2^32", "4294967296"),
        ),
        (
            var(r#""type":"output","var_id":-1"#),
            row(def_member, "var.out.var_id", "an integer in 0..2^32", "-1"),
        ),
        (
            typed(r#""size":"4""#),
            row(def_member, "var.out.size", "a non-negative integer", "\"4\""),
        ),
        (
            typed(r#""alignment":-8"#),
            row(def_member, "var.out.alignment", "a non-negative integer", "-8"),
        ),
        (typed(r#""file_name":7"#), row(def_member, "var.out.file_name", "a string", "7")),
        (
            typed(r#""backing_variable_off":1.5"#),
            row(def_member, "var.out.backing_variable_off", "a non-negative integer", "1.5"),
        ),
        (
            typed(r#""referenced_var_id":4294967296"#),
            row(def_member, "var.out.referenced_var_id", "an integer in 0..2^32", "4294967296"),
        ),
        (typed(r#""list":"1""#), row(def_member, "var.out.list", "an array", "\"1\"")),
        (
            typed(r#""list":[1,"a"]"#),
            row(def_member, "var.out.list[1]", "an integer in 0..2^32", "\"a\""),
        ),
        (
            typed(r#""list":[4294967296]"#),
            row(def_member, "var.out.list[0]", "an integer in 0..2^32", "4294967296"),
        ),
    ];
    wrong.extend(mismatches(def_cases.into_iter().map(|(def_json, want)| {
        let file = neff_with(None, KELF_SG00, def_json.as_bytes());
        (def_json, file, want)
    })));
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// A long wrong value is shortened to 57 characters and `...` in the error, and the message
/// names member, field, what came and what was expected.
#[test]
fn a_long_found_value_is_shortened_in_the_message() {
    let long = "a".repeat(100);
    let def_json = format!(r#"{{"var":{{"out":{{"type":"output","var_id":"{long}"}}}}}}"#);
    let file = neff_with(None, KELF_SG00, def_json.as_bytes());
    let (_, _, _, found) = field_error(&file);
    assert_eq!(found, format!("\"{}...", "a".repeat(56)));
    let error = Neff::parse(&file, &ReadOptions::default()).expect_err("refused");
    let message = error.to_string();
    assert!(message.contains("sg00/def.json"), "{message}");
    assert!(message.contains("var.out.var_id"), "{message}");
    assert!(message.contains("an integer in 0..2^32"), "{message}");
    assert!(message.contains(&found), "{message}");
}

/// Absent and `null` optional fields, unknown fields, `#` comment keys, non-object node
/// `attrs`, a signature not called `default`, and a kelf entry without `name` are all accepted.
#[test]
fn lenient_shapes_are_accepted() {
    let def_json = br##"{"#comment":5,"var":{"#note":"x","out":{"type":"output","var_id":0,
        "size":null,"alignment":null,"file_name":null,"backing_variable_off":null,
        "referenced_var_id":null,"list":null,"unmodelled":{"any":[1]}},
        "in":{"type":"input","var_id":1,"size":8}},"other":[1,2]}"##;
    let neff_json = r#"{"metadata":{"signatures":{"serving":{"inputs":{
        "b":{"id":1,"dtype":null,"shape":null},"a":{"id":0,"dtype":"int8","shape":[2,-1]},
        "c":{}},"outputs":null}},"extra":1},
        "nodes":[{"name":"n","attrs":"not an object","op":"null"},{"attrs":[1],"name":null}],
        "node_row_ptr":null,"arg_nodes":null,"heads":[[0]],"attrs":{"shape":null,"dltype":null,
        "other":1}}"#;
    let kelf: &[u8] = br#"{"graphs":[{"definition":"sg00/def.json","name":null}],"x":1}"#;
    let file = neff_with(Some(neff_json), kelf, def_json);
    let neff = Neff::parse(&file, &ReadOptions::default()).expect("lenient shapes are accepted");
    assert_eq!(neff.graphs.len(), 1);
    assert_eq!(neff.graphs[0].name, "sg00", "a kelf entry without name is named by its folder");
    let vars: Vec<(&str, u32, Option<u64>)> =
        neff.graphs[0].vars.iter().map(|var| (var.name.as_str(), var.var_id, var.size)).collect();
    assert_eq!(vars, [("out", 0, None), ("in", 1, Some(8))]);
    let out = &neff.graphs[0].vars[0];
    assert_eq!((out.alignment, out.file_name.as_ref(), out.list.as_ref()), (None, None, None));
    // Metadata inputs by id, a missing id last; the graph form gives the outputs.
    assert_eq!(
        neff.signature.inputs,
        [
            TensorSignature::new("a", "int8", &[2, -1]),
            TensorSignature::new("b", "", &[]),
            TensorSignature::new("c", "", &[]),
        ]
    );
    assert_eq!(neff.signature.outputs, [TensorSignature::new("n", "", &[])]);

    // Only the chosen signature is read: `default` when there is one, else the first key; a
    // malformed other one does not refuse the file.
    for (neff_json, input) in [
        (r#"{"metadata":{"signatures":{"a":7,"default":{"inputs":{"d":{}}},"z":[]}}}"#, "d"),
        (r#"{"metadata":{"signatures":{"b":{"inputs":{"b":{}}},"c":7}}}"#, "b"),
    ] {
        let file = neff_with(Some(neff_json), KELF_SG00, GOOD_DEF);
        let neff = Neff::parse(&file, &ReadOptions::default()).expect(neff_json);
        assert_eq!(neff.signature.inputs, [TensorSignature::new(input, "", &[])], "{neff_json}");
    }

    // Empty or absent parts give empty lists.
    for neff_json in [
        "{}",
        r#"{"metadata":null,"nodes":null}"#,
        r#"{"metadata":{"signatures":{}}}"#,
        r#"{"metadata":{"signatures":{"default":null}}}"#,
        r#"{"metadata":{"signatures":null}}"#,
    ] {
        let file = neff_with(Some(neff_json), KELF_SG00, GOOD_DEF);
        let neff = Neff::parse(&file, &ReadOptions::default()).expect(neff_json);
        assert!(
            neff.signature.inputs.is_empty() && neff.signature.outputs.is_empty(),
            "{neff_json}"
        );
    }
    // A `def.json` without a var table is an empty graph and `graphs: null` lists no graph: not
    // malformed, only refused for having no output variable.
    for (kelf, def_json) in [
        (KELF_SG00, br#"{}"#.as_slice()),
        (KELF_SG00, br#"{"var":null}"#),
        (br#"{"graphs":null}"#.as_slice(), GOOD_DEF),
    ] {
        let file = neff_with(None, kelf, def_json);
        let neff = Neff::parse(&file, &ReadOptions::default());
        let graphs =
            neff.map(|neff| neff.graphs.iter().map(|graph| graph.vars.len()).sum::<usize>());
        assert!(matches!(graphs, Err(NeffError::NoOutputs)), "{graphs:?}");
    }
}

/// The JSON value at a reported field path (`a.b[1].c`, or `(root)`) of `document`, and for a
/// missing field the object that lacks it with the missing key.
enum AtPath<'a> {
    Value(&'a serde_json::Value),
    Missing(&'a serde_json::Map<String, serde_json::Value>, String),
    Nowhere,
}

fn at_path<'a>(document: &'a serde_json::Value, field: &str) -> AtPath<'a> {
    if field == "(root)" {
        return AtPath::Value(document);
    }
    let mut steps = Vec::new();
    for part in field.split('.') {
        let (key, indexes) = part.split_once('[').map_or((part, ""), |(key, rest)| (key, rest));
        steps.push((key.to_owned(), None));
        for index in indexes.split('[').filter(|index| !index.is_empty()) {
            let index = index.trim_end_matches(']').parse::<usize>().expect("an index");
            steps.push((String::new(), Some(index)));
        }
    }
    let mut value = document;
    let count = steps.len();
    for (step, (key, index)) in steps.into_iter().enumerate() {
        let next = match index {
            Some(index) => value.get(index),
            None => match value {
                serde_json::Value::Object(object) => match object.get(&key) {
                    Some(next) => Some(next),
                    None if step + 1 == count => return AtPath::Missing(object, key),
                    None => None,
                },
                _ => None,
            },
        };
        match next {
            Some(next) => value = next,
            None => return AtPath::Nowhere,
        }
    }
    AtPath::Value(value)
}

fn shortened(value: &serde_json::Value) -> String {
    let text = value.to_string();
    if text.len() <= 60 {
        return text;
    }
    let mut cut = 57;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}...", &text[..cut])
}

/// Valid members the property test mutates, with the member each one is.
const TEMPLATES: [(&str, &str); 4] = [
    (
        "neff.json",
        r#"{"metadata":{"signatures":{"default":{"inputs":{"x":{"id":0,"dtype":"float16",
        "shape":[2,3]}},"outputs":{"o":{"id":0,"dtype":"float16","shape":[2]}}}}}}"#,
    ),
    (
        "neff.json",
        r#"{"nodes":[{"name":"x","op":"null"},{"name":"n","attrs":{"output_names":["o"]}}],
        "node_row_ptr":[0,1,2],"arg_nodes":[0],"heads":[[1,0,0]],
        "attrs":{"shape":["list_shape",[[2],[2]]],"dltype":["list_str",["float32","float32"]]}}"#,
    ),
    ("kelf-0.json", r#"{"graphs":[{"definition":"sg00/def.json","name":"sg00"}]}"#),
    (
        "sg00/def.json",
        r##"{"var":{"#c":1,"out":{"type":"output","var_id":0,"size":8,"alignment":64,
        "file_name":"w.npy","backing_variable_off":0,"referenced_var_id":0,"list":[0]}}}"##,
    ),
];

/// Every JSON pointer into `value` (the root included).
fn pointers(value: &serde_json::Value, prefix: String, into: &mut Vec<String>) {
    match value {
        serde_json::Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                pointers(item, format!("{prefix}/{index}"), into);
            }
        }
        serde_json::Value::Object(object) => {
            for (key, item) in object {
                pointers(
                    item,
                    format!("{prefix}/{}", key.replace('~', "~0").replace('/', "~1")),
                    into,
                );
            }
        }
        _ => {}
    }
    into.push(prefix);
}

fn any_json() -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
    use proptest::prelude::*;
    use serde_json::Value;
    const KEYS: &[&str] = &[
        "metadata",
        "signatures",
        "default",
        "inputs",
        "outputs",
        "id",
        "dtype",
        "shape",
        "nodes",
        "name",
        "output_names",
        "attrs",
        "node_row_ptr",
        "arg_nodes",
        "heads",
        "dltype",
        "graphs",
        "definition",
        "var",
        "type",
        "var_id",
        "size",
        "list",
        "referenced_var_id",
        "#c",
        "x",
    ];
    const STRINGS: &[&str] = &["list_shape", "list_str", "output", "input", "sg00/def.json", "x"];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        (-3i64..8).prop_map(Value::from),
        Just(Value::from(u64::MAX)),
        Just(Value::from(1u64 << 32)),
        Just(Value::from(1.5)),
        prop::sample::select(STRINGS).prop_map(Value::from),
        Just(Value::from("a".repeat(70))),
    ];
    leaf.prop_recursive(4, 32, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(prop::sample::select(KEYS), inner, 0..4).prop_map(
                |entries| {
                    Value::Object(
                        entries.into_iter().map(|(key, value)| (key.to_owned(), value)).collect(),
                    )
                }
            ),
        ]
    })
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(768))]

    /// Whatever a member holds, the reader never panics, and a malformed-field error names a
    /// path that leads, in the document as written, to exactly the value it reports as found
    /// (or to the object that lacks a required field).
    #[test]
    fn a_reported_field_path_leads_to_the_reported_value(
        template in 0..TEMPLATES.len(),
        edits in proptest::collection::vec(
            (proptest::prelude::any::<proptest::sample::Index>(), proptest::option::of(any_json())),
            1..4,
        ),
    ) {
        let (member, text) = TEMPLATES[template];
        let mut document: serde_json::Value = serde_json::from_str(text).expect("a valid template");
        for (at, replacement) in edits {
            let mut all = Vec::new();
            pointers(&document, String::new(), &mut all);
            let pointer = at.get(&all).clone();
            match (replacement, pointer.rsplit_once('/')) {
                (Some(value), _) => *document.pointer_mut(&pointer).expect("a pointer") = value,
                // `None` removes the key (or, at the root or in an array, leaves it).
                (None, Some((parent, key))) => {
                    if let Some(serde_json::Value::Object(object)) = document.pointer_mut(parent) {
                        object.remove(&key.replace("~1", "/").replace("~0", "~"));
                    }
                }
                (None, None) => {}
            }
        }
        let bytes = document.to_string();
        let file = match member {
            "neff.json" => neff_with(Some(&bytes), KELF_SG00, GOOD_DEF),
            "kelf-0.json" => neff_with(None, bytes.as_bytes(), GOOD_DEF),
            _ => neff_with(None, KELF_SG00, bytes.as_bytes()),
        };
        if let Err(NeffError::MalformedField { member: named, field, expected, found }) =
            Neff::parse(&file, &ReadOptions::default())
        {
            proptest::prop_assert_eq!(named.as_str(), member);
            match at_path(&document, &field) {
                AtPath::Value(value) => proptest::prop_assert_eq!(
                    &shortened(value), &found, "{} at {} (expected {})", bytes, field, expected
                ),
                AtPath::Missing(object, key) => {
                    proptest::prop_assert_eq!(found.as_str(), "absent", "{} at {}", bytes, field);
                    proptest::prop_assert!(!object.contains_key(&key));
                }
                AtPath::Nowhere => proptest::prop_assert!(false, "{} leads nowhere in {}", field, bytes),
            }
        }
    }
}
