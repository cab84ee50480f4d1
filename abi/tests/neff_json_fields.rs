//! Pins where a malformed `neff.json`, `kelf-N.json` or `def.json` field is reported (member,
//! dotted field path, what was expected, what came) and which shapes are accepted leniently, so
//! a change of the JSON reader cannot move or lose a path unnoticed.

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

fn row(member: &str, field: &str, expected: &str, found: &str) -> (String, String, String, String) {
    (member.to_owned(), field.to_owned(), expected.to_owned(), found.to_owned())
}

fn signature_input(shape: &str) -> String {
    format!(r#"{{"metadata":{{"signatures":{{"default":{{"inputs":{{"x":{shape}}}}}}}}}}}"#)
}

#[test]
fn malformed_neff_json_fields_name_their_path() {
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
            row("neff.json", &format!("{sig}.inputs.x.shape"), "an array of integers", "\"128\""),
        ),
        (
            signature_input(r#"{"shape":[1,1.5]}"#),
            row("neff.json", &format!("{sig}.inputs.x.shape"), "an array of integers", "1.5"),
        ),
        (
            r#"{"metadata":{"signatures":{"default":{"outputs":{"o":{"shape":{}}}}}}}"#.to_owned(),
            row("neff.json", &format!("{sig}.outputs.o.shape"), "an array of integers", "{}"),
        ),
        (r#"{"nodes":{}}"#.to_owned(), row("neff.json", "nodes", "an array", "{}")),
        (r#"{"nodes":[{},1]}"#.to_owned(), row("neff.json", "nodes[1]", "an object", "1")),
        (
            r#"{"nodes":[{"name":3}]}"#.to_owned(),
            row("neff.json", "nodes[0].name", "a string", "3"),
        ),
        (
            r#"{"nodes":[{"output_names":"o"}]}"#.to_owned(),
            row("neff.json", "nodes[0].output_names", "an array of strings", "\"o\""),
        ),
        (
            r#"{"nodes":[{"attrs":{"output_names":[1]}}]}"#.to_owned(),
            row("neff.json", "nodes[0].output_names", "an array of strings", "1"),
        ),
        (
            r#"{"nodes":[],"node_row_ptr":"x"}"#.to_owned(),
            row("neff.json", "node_row_ptr", "an array", "\"x\""),
        ),
        (
            r#"{"nodes":[],"node_row_ptr":[0,-1]}"#.to_owned(),
            row("neff.json", "node_row_ptr", "an array of non-negative integers", "-1"),
        ),
        (r#"{"nodes":[],"attrs":1}"#.to_owned(), row("neff.json", "attrs", "an object", "1")),
        (
            r#"{"nodes":[],"attrs":{"shape":["list_str",[]]}}"#.to_owned(),
            row("neff.json", "attrs.shape", "a tagged list [tag, [items]]", r#"["list_str",[]]"#),
        ),
        (
            r#"{"nodes":[],"attrs":{"shape":["list_shape",5]}}"#.to_owned(),
            row("neff.json", "attrs.shape", "a tagged list [tag, [items]]", "5"),
        ),
        (
            r#"{"nodes":[],"attrs":{"shape":["list_shape",[[1],"x"]]}}"#.to_owned(),
            row("neff.json", "attrs.shape", "an array of integers", "\"x\""),
        ),
        (
            r#"{"nodes":[],"attrs":{"dltype":["list_str",["f32",1]]}}"#.to_owned(),
            row("neff.json", "attrs.dltype", "a string", "1"),
        ),
        (
            r#"{"nodes":[{"name":"x"}],"arg_nodes":"0"}"#.to_owned(),
            row("neff.json", "arg_nodes", "an array", "\"0\""),
        ),
        (
            r#"{"nodes":[{"name":"x"}],"arg_nodes":[5]}"#.to_owned(),
            row("neff.json", "arg_nodes", "a node index in range", "5"),
        ),
        (
            r#"{"nodes":[{"name":"x"}],"heads":{}}"#.to_owned(),
            row("neff.json", "heads", "an array", "{}"),
        ),
        (
            r#"{"nodes":[{"name":"x"}],"heads":[[]]}"#.to_owned(),
            row("neff.json", "heads", "[node, output_idx, version] entries", "[]"),
        ),
        (
            r#"{"nodes":[{"name":"x"}],"heads":[0]}"#.to_owned(),
            row("neff.json", "heads", "[node, output_idx, version] entries", "0"),
        ),
        (
            r#"{"nodes":[{"name":"x"}],"heads":[["a"]]}"#.to_owned(),
            row("neff.json", "heads", "an array of non-negative integers", "\"a\""),
        ),
        (
            r#"{"nodes":[{"name":"x"}],"heads":[[9,0,0]]}"#.to_owned(),
            row("neff.json", "heads", "a node index in range", "9"),
        ),
    ];
    for (neff_json, expected) in cases {
        let file = neff_with(Some(&neff_json), KELF_SG00, GOOD_DEF);
        assert_eq!(field_error(&file), expected, "{neff_json}");
    }
}

#[test]
fn malformed_kelf_and_def_json_fields_name_their_path() {
    let kelf_cases: [(&[u8], _); 6] = [
        (b"[]", row("kelf-0.json", "(root)", "an object", "[]")),
        (br#"{"graphs":1}"#, row("kelf-0.json", "graphs", "an array", "1")),
        (br#"{"graphs":[1]}"#, row("kelf-0.json", "graphs[0]", "an object", "1")),
        (
            br#"{"graphs":[{"name":"sg00"}]}"#,
            row("kelf-0.json", "graphs[0].definition", "a string", "null"),
        ),
        (
            br#"{"graphs":[{"definition":2}]}"#,
            row("kelf-0.json", "graphs[0].definition", "a string", "2"),
        ),
        (
            br#"{"graphs":[{"definition":"sg00/def.json","name":[]}]}"#,
            row("kelf-0.json", "graphs[0].name", "a string", "[]"),
        ),
    ];
    for (kelf, expected) in kelf_cases {
        let file = neff_with(None, kelf, GOOD_DEF);
        assert_eq!(field_error(&file), expected, "{}", String::from_utf8_lossy(kelf));
    }
    let var = |fields: &str| format!(r#"{{"var":{{"out":{{{fields}}}}}}}"#);
    let typed = |extra: &str| var(&format!(r#""type":"output","var_id":0,{extra}"#));
    let def_member = "sg00/def.json";
    let def_cases: Vec<(String, _)> = vec![
        ("[]".to_owned(), row(def_member, "(root)", "an object", "[]")),
        (r#"{"var":[]}"#.to_owned(), row(def_member, "var", "an object", "[]")),
        (r#"{"var":{"out":1}}"#.to_owned(), row(def_member, "var.out", "an object", "1")),
        (var(r#""var_id":0"#), row(def_member, "var.out.type", "a string", "null")),
        (var(r#""type":1,"var_id":0"#), row(def_member, "var.out.type", "a string", "1")),
        (
            var(r#""type":"output""#),
            row(def_member, "var.out.var_id", "an integer in 0..2^32", "null"),
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
            row(def_member, "var.out.list", "an array of non-negative integers", "\"a\""),
        ),
        (
            typed(r#""list":[4294967296]"#),
            row(def_member, "var.out.list", "var_ids in 0..2^32", "4294967296"),
        ),
    ];
    for (def_json, expected) in def_cases {
        let file = neff_with(None, KELF_SG00, def_json.as_bytes());
        assert_eq!(field_error(&file), expected, "{def_json}");
    }
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
