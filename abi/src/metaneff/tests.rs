//! Byte-level tests of the metaneff encoding, decoding and lossless edits.

use super::edit::{self, ConfigFlag, Side};
use super::meta_tensor::{DataType, Type};
use super::*;

/// Parses a hex string with optional spaces and `"text"` runs, as docs/libtorchneuron.md writes bytes.
pub(super) fn hex(spec: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let mut rest = spec;
    while let Some(c) = rest.chars().next() {
        if c.is_whitespace() {
            rest = &rest[1..];
        } else if c == '"' {
            let end = rest[1..].find('"').expect("closing quote") + 1;
            out.extend_from_slice(&rest.as_bytes()[1..end]);
            rest = &rest[end + 1..];
        } else {
            out.push(u8::from_str_radix(&rest[..2], 16).expect("hex byte"));
            rest = &rest[2..];
        }
    }
    out
}

fn tensor(name: &str, shape: &[i64], data_type: DataType, kind: Type) -> MetaTensor {
    MetaTensor {
        name: name.as_bytes().to_vec().into(),
        shape: shape.to_vec(),
        data_type: data_type as i32,
        r#type: kind as i32,
        ..Default::default()
    }
}

/// The worked example of docs/libtorchneuron.md §6: one fp32 [1,1,1,32] user input, one output, return_aliases.
pub(super) fn seed_example() -> MetaNeff {
    MetaNeff {
        input_tensors: vec![tensor("input0", &[1, 1, 1, 32], DataType::Float, Type::UserInput)],
        output_tensors: vec![tensor(
            "output0",
            &[1, 1, 1, 32],
            DataType::Float,
            Type::UndefinedType,
        )],
        model_config: Some(ModelConfig { return_aliases: true, ..Default::default() }),
        serialized_graph_def: b"hlo".to_vec().into(),
        ..Default::default()
    }
}

/// The example's bytes, corrected for proto3: the output's `type` is the default, so no `38 00`.
pub(super) const SEED_EXAMPLE_BYTES: &str = r#"
    0A 12  0A 06 "input0"  12 04 01 01 01 20  18 01  38 01
    12 11  0A 07 "output0" 12 04 01 01 01 20  18 01
    1A 02  30 01
    22 03 "hlo"
"#;

/// `DataType` is declared by hand in `abi::dtype`; its rows must be the schema's enum.
#[test]
fn hand_declared_data_type_is_the_schema_enum() {
    let schema = descriptor_pool()
        .get_enum_by_name("metaneff.MetaTensor.DataType")
        .expect("the schema declares MetaTensor.DataType");
    let schema_rows: Vec<(String, i32)> =
        schema.values().map(|value| (value.name().to_owned(), value.number())).collect();
    let rows: Vec<(String, i32)> = DataType::ALL
        .iter()
        .map(|data_type| (data_type.as_str_name().to_owned(), *data_type as i32))
        .collect();
    assert_eq!(rows, schema_rows);
}

#[test]
fn seed_worked_example_encodes_to_the_corrected_bytes() {
    let bytes = encode(&seed_example());
    assert_eq!(bytes, hex(SEED_EXAMPLE_BYTES));
    assert_eq!(decode(&bytes).unwrap(), seed_example());
}

/// Discrepancy (docs/libtorchneuron.md §6): the disassembly notes show `38 00` for `type = UNDEFINED_TYPE`. A proto3 encoder
/// never writes it, but a reader must accept it and see the same message.
#[test]
fn seed_discrepancy_explicit_default_type_decodes_to_the_same_message() {
    let seed_bytes = hex(r#"
        0A 12  0A 06 "input0"  12 04 01 01 01 20  18 01  38 01
        12 13  0A 07 "output0" 12 04 01 01 01 20  18 01  38 00
        1A 02  30 01
        22 03 "hlo"
    "#);
    let message = decode(&seed_bytes).unwrap();
    assert_eq!(message, seed_example());
    assert_ne!(encode(&message), seed_bytes, "re-encoding drops the explicit default");
}

#[test]
fn alias_entries_always_carry_key_and_value() {
    let mut message = seed_example();
    message.output_aliases_to.insert(0, 0);
    message.output_aliases_to.insert(2, 1);
    let mut expected = hex(SEED_EXAMPLE_BYTES);
    expected.extend(hex("32 04 08 00 10 00  32 04 08 02 10 01"));
    let bytes = encode(&message);
    assert_eq!(bytes, expected);
    assert_eq!(decode(&bytes).unwrap(), message);
}

#[test]
fn alias_entries_sit_in_field_order_before_later_fields() {
    let message = MetaNeff {
        output_aliases_to: [(1, 3)].into(),
        num_user_inputs: 2,
        name: b"m".to_vec().into(),
        ..Default::default()
    };
    assert_eq!(encode(&message), hex(r#"2A 01 "m"  32 04 08 01 10 03  38 02"#));
}

#[test]
fn shape_is_accepted_packed_and_unpacked() {
    let packed = hex(r#"0A 0C 0A 06 "input0" 12 02 02 03"#);
    let unpacked = hex(r#"0A 0E 0A 06 "input0" 10 02 10 03 12 00"#);
    let mixed = hex(r#"0A 0D 0A 06 "input0" 10 02 12 01 03"#);
    for bytes in [&packed, &unpacked, &mixed] {
        assert_eq!(decode(bytes).unwrap().input_tensors[0].shape, vec![2, 3], "{bytes:02x?}");
    }
    // What we write is always the packed form.
    assert_eq!(encode(&decode(&unpacked).unwrap()), packed);
}

#[test]
fn optional_keys_distinguish_unset_from_empty() {
    let unset = MetaTensor { name: b"input0".to_vec().into(), ..Default::default() };
    let empty = MetaTensor { checkpoint_key: Some(Default::default()), ..unset.clone() };
    let both = MetaTensor {
        user_input_key: Some(b"x".to_vec().into()),
        checkpoint_key: Some(Default::default()),
        ..unset.clone()
    };
    let wrap = |t: &MetaTensor| MetaNeff { input_tensors: vec![t.clone()], ..Default::default() };

    assert_eq!(encode(&wrap(&unset)), hex(r#"0A 08 0A 06 "input0""#));
    assert_eq!(encode(&wrap(&empty)), hex(r#"0A 0A 0A 06 "input0" 32 00"#));
    assert_eq!(encode(&wrap(&both)), hex(r#"0A 0D 0A 06 "input0" 32 00 42 01 "x""#));
    for t in [&unset, &empty, &both] {
        assert_eq!(&decode(&encode(&wrap(t))).unwrap().input_tensors[0], t);
    }
}

#[test]
fn names_are_bytes_and_need_not_be_utf8() {
    let bytes = hex("0A 04 0A 02 FF FE");
    assert_eq!(decode(&bytes).unwrap().input_tensors[0].name, vec![0xff, 0xfe]);
    assert!(text::to_text(&bytes).unwrap().text.contains(r#"name: "\377\376""#));
}

/// One malformed input, the byte offset and field path the error must name, whichever owned
/// decoder reads it: the prost message from a slice or an owned buffer, or [`Decoded`] from
/// either.
fn check_decode_error(bytes: &str, offset: usize, path: &str, reason_part: &str) {
    let bytes = hex(bytes);
    let owned = || prost::bytes::Bytes::copy_from_slice(&bytes);
    for (decoder, error) in [
        ("decode", decode(&bytes).err()),
        ("decode_owned", decode_owned(owned()).err()),
        ("Decoded::decode", Decoded::decode(&bytes).err()),
        ("Decoded::decode_owned", Decoded::decode_owned(owned()).err()),
    ] {
        let error = error.unwrap_or_else(|| panic!("{decoder} accepted {bytes:02x?}"));
        assert_eq!((error.offset, error.path.as_str()), (offset, path), "{decoder}: {error}");
        assert!(error.reason.contains(reason_part), "{decoder}: {error}");
    }
}

#[test]
fn decode_errors_name_the_offset_and_the_field() {
    check_decode_error("0A 05 0A 03", 1, "MetaNeff", "length prefix says 5 bytes, 2 left");
    check_decode_error(
        r#"0A 06 0A 02 "ab" 18 80"#,
        7,
        "MetaNeff.input_tensors[0]",
        "inside a varint",
    );
    check_decode_error("12 02 0A 09", 3, "MetaNeff.output_tensors[0]", "9 bytes, 0 left");
    check_decode_error(
        "1A 02 22 00",
        2,
        "MetaNeff.model_config.async_load",
        "wire type LEN, expected VARINT",
    );
    check_decode_error("0A 03 12 01 80", 4, "MetaNeff.input_tensors[0].shape[0]", "packed list");
    check_decode_error("1F", 0, "MetaNeff", "wire type 7");
    // The second tensor's first shape field as a fixed32: its tag is byte 4, after `0A 00 0A 05`.
    check_decode_error(
        "0A 00 0A 05 15 01 00 00 00",
        4,
        "MetaNeff.input_tensors[1].shape[0]",
        "wire type I32, expected VARINT",
    );
}

/// A metaneff with unknown fields at every level: 99 in MetaNeff, 20 in a MetaTensor, 15 in
/// ModelConfig, and an unknown group. Every edit must copy them byte for byte.
pub(super) fn with_unknown_fields() -> Vec<u8> {
    hex(r#"
        0A 13  0A 06 "input0"  12 02 02 03  18 01  38 01  A0 01 07
        0A 11  0A 06 "input1"  12 01 04  18 0E  38 02  32 00
        12 0E  0A 07 "output0" 12 01 04  28 01
        1A 06  08 03  78 2A  20 01
        9B 06  08 01  9C 06
        98 06 2A
    "#)
}

#[test]
fn unknown_fields_are_found_with_their_paths() {
    let unknown = check_wire(&with_unknown_fields()).unwrap();
    let seen: Vec<String> =
        unknown.iter().map(|u| format!("{} {} {}", u.path, u.number, u.wire_type)).collect();
    assert_eq!(
        seen,
        [
            "MetaNeff.input_tensors[0] 20 VARINT",
            "MetaNeff.model_config 15 VARINT",
            "MetaNeff 99 SGROUP",
            "MetaNeff 99 VARINT",
        ]
    );
}

/// One edit, and the bytes it must produce from [`with_unknown_fields`].
fn check_edit(edit: impl Fn(&[u8]) -> Vec<u8>, expected: &str) {
    let original = with_unknown_fields();
    let edited = edit(&original);
    assert_eq!(edited, hex(expected), "edited: {edited:02x?}");
    assert_eq!(check_wire(&edited).unwrap().len(), 4, "unknown fields kept");
}

const UNCHANGED_TAIL: &str = r#"9B 06  08 01  9C 06   98 06 2A"#;

#[test]
fn setting_a_config_flag_keeps_every_other_byte() {
    // Re-serialized as libprotobuf does: ModelConfig's known fields 1, 4 and the new 5 in number
    // order, the unknown field 15 after them; input1's checkpoint_key (6) before its type (7).
    check_edit(
        |b| edit::set_config_flag(b, ConfigFlag::LazyLoad, true).unwrap(),
        &format!(
            r#"0A 13  0A 06 "input0"  12 02 02 03  18 01  38 01  A0 01 07
               0A 11  0A 06 "input1"  12 01 04  18 0E  32 00  38 02
               12 0E  0A 07 "output0" 12 01 04  28 01
               1A 08  08 03  20 01  28 01  78 2A
               {UNCHANGED_TAIL}"#
        ),
    );
    // Setting an absent flag to false changes no value; the order is still libprotobuf's.
    check_edit(
        |b| edit::set_config_flag(b, ConfigFlag::ReturnAliases, false).unwrap(),
        &format!(
            r#"0A 13  0A 06 "input0"  12 02 02 03  18 01  38 01  A0 01 07
               0A 11  0A 06 "input1"  12 01 04  18 0E  32 00  38 02
               12 0E  0A 07 "output0" 12 01 04  28 01
               1A 06  08 03  20 01  78 2A
               {UNCHANGED_TAIL}"#
        ),
    );
}

/// A ModelConfig out of field order, as a hand-edited file may have it (field 1, unknown 15, field 4).
#[test]
fn edits_reserialize_in_libprotobuf_field_order() {
    let edited =
        edit::set_config_flag(&hex("1A 06 08 03 78 2A 20 01"), ConfigFlag::LazyLoad, true).unwrap();
    assert_eq!(edited, hex("1A 08 08 03 20 01 28 01 78 2A"));
    // At the top level too: unknown fields after every known one, known ones by number, the
    // repeated field's occurrences in their order, nested messages reordered as well.
    let bytes = hex(r#"98 06 2A  2A 01 "m"  0A 05 18 01 0A 01 "a"  0A 03 0A 01 "b"  1A 00"#);
    let edited = edit::set_config_flag(&bytes, ConfigFlag::AsyncLoad, true).unwrap();
    assert_eq!(
        edited,
        hex(r#"0A 05 0A 01 "a" 18 01  0A 03 0A 01 "b"  1A 02 20 01  2A 01 "m"  98 06 2A"#)
    );
}

#[test]
fn clearing_dynamic_batch_removes_the_field_and_keeps_the_rest() {
    check_edit(
        |b| edit::set_allow_dynamic_batch_size(b, |_, _| Some(false)).unwrap(),
        &format!(
            r#"0A 13  0A 06 "input0"  12 02 02 03  18 01  38 01  A0 01 07
               0A 11  0A 06 "input1"  12 01 04  18 0E  32 00  38 02
               12 0C  0A 07 "output0" 12 01 04
               1A 06  08 03  20 01  78 2A
               {UNCHANGED_TAIL}"#
        ),
    );
}

#[test]
fn setting_dynamic_batch_on_chosen_tensors_only() {
    check_edit(
        |b| {
            edit::set_allow_dynamic_batch_size(b, |side, i| {
                (side == Side::Input && i == 1).then_some(true)
            })
            .unwrap()
        },
        &format!(
            r#"0A 13  0A 06 "input0"  12 02 02 03  18 01  38 01  A0 01 07
               0A 13  0A 06 "input1"  12 01 04  18 0E  28 01  32 00  38 02
               12 0E  0A 07 "output0" 12 01 04  28 01
               1A 06  08 03  20 01  78 2A
               {UNCHANGED_TAIL}"#
        ),
    );
}

#[test]
fn a_missing_model_config_is_created_like_the_cpp_setter_does() {
    let bytes =
        encode(&MetaNeff { name: b"m".to_vec().into(), num_states: 1, ..Default::default() });
    let on = edit::set_config_flag(&bytes, ConfigFlag::AsyncLoad, true).unwrap();
    assert_eq!(on, hex(r#"1A 02 20 01  2A 01 "m"  40 01"#));
    let off = edit::set_config_flag(&bytes, ConfigFlag::AsyncLoad, false).unwrap();
    assert_eq!(off, hex(r#"1A 00  2A 01 "m"  40 01"#));
    assert!(decode(&on).unwrap().model_config.unwrap().async_load);
}

#[test]
fn edits_refuse_malformed_input() {
    let error = edit::set_config_flag(&hex("0A 05 00"), ConfigFlag::LazyLoad, true).unwrap_err();
    assert_eq!(error.offset, 1);
}

#[test]
fn text_format_round_trips_and_lists_unknown_fields() {
    let printed = text::to_text(&with_unknown_fields()).unwrap();
    assert_eq!(printed.unknown_fields.len(), 4);
    assert!(
        printed
            .text
            .starts_with("# unknown field 20 (VARINT) of MetaNeff.input_tensors[0] at byte 18")
    );
    let reparsed = text::from_text(&printed.text).unwrap();
    let mut expected = decode(&with_unknown_fields()).unwrap();
    assert_eq!(decode(&reparsed).unwrap(), expected);
    expected.input_tensors[1].checkpoint_key = None;
    assert_ne!(decode(&reparsed).unwrap(), expected, "set-but-empty checkpoint_key survives text");
}

#[test]
fn text_keeps_the_wire_order_of_alias_entries() {
    // Descending keys, as Python's upb writes them, and a key-less entry as prost writes {0: 5}.
    let bytes = hex("32 04 08 03 10 03  32 04 08 00 10 01  32 02 10 05");
    let printed = text::to_text(&bytes).unwrap().text;
    let first = printed.find("key: 3").unwrap();
    assert!(first < printed.find("key: 0").unwrap(), "{printed}");
    assert_eq!(printed, text::to_text(&bytes).unwrap().text, "deterministic");
    // Back from text in the written order: the wire order again, and every entry with both key
    // and value, as libprotobuf writes.
    assert_eq!(
        text::from_text_in_written_order(&printed).unwrap(),
        hex("32 04 08 03 10 03  32 04 08 00 10 01  32 04 08 00 10 05")
    );
    // Canonically: ascending, and the repeated key 0 holds its last value, as a map does.
    assert_eq!(text::from_text(&printed).unwrap(), hex("32 04 08 00 10 05  32 04 08 03 10 03"));
    // JSON has no order: its bytes are ascending.
    let json = text::to_json(&bytes).unwrap().text;
    assert_eq!(text::from_json(&json).unwrap(), hex("32 04 08 00 10 05  32 04 08 03 10 03"));
}

#[test]
fn json_round_trips() {
    let mut message = seed_example();
    message.output_aliases_to.insert(0, 0);
    message.input_tensors[0].checkpoint_key = Some(Default::default());
    let bytes = encode(&message);
    let json = text::to_json(&bytes).unwrap().text;
    assert!(json.contains("\"input_tensors\""), "{json}");
    assert_eq!(text::from_json(&json).unwrap(), bytes);
}

#[test]
fn text_errors_name_line_and_column() {
    let error = text::from_text("input_tensors {\n  name: \"a\"\n  shape: x\n}\n").unwrap_err();
    assert_eq!((error.line, error.column), (3, 10), "{error}");
    let error = text::from_text("input_tensors {\n  nome: \"a\"\n}\n").unwrap_err();
    assert_eq!((error.line, error.column), (2, 3), "{error}");
    let error = text::from_json("{\n \"input_tensors\": 3\n}").unwrap_err();
    assert_eq!(error.line, 2, "{error}");
}

pub(super) mod properties {
    use proptest::prelude::*;

    use super::super::*;

    fn arb_bytes() -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec(any::<u8>(), 0..12)
    }

    fn arb_tensor() -> impl Strategy<Value = MetaTensor> {
        (
            arb_bytes(),
            prop::collection::vec(any::<i64>(), 0..5),
            -2i32..20,
            arb_bytes(),
            any::<bool>(),
            prop::option::of(arb_bytes()),
            -1i32..5,
            prop::option::of(arb_bytes()),
        )
            .prop_map(|(name, shape, data_type, content, dynamic, ckpt, kind, user)| {
                MetaTensor {
                    name: name.into(),
                    shape,
                    data_type,
                    content: content.into(),
                    allow_dynamic_batch_size: dynamic,
                    checkpoint_key: ckpt.map(Into::into),
                    r#type: kind,
                    user_input_key: user.map(Into::into),
                }
            })
    }

    fn arb_config() -> impl Strategy<Value = ModelConfig> {
        (any::<i64>(), any::<i64>(), any::<i64>(), any::<bool>(), any::<bool>(), any::<bool>())
            .prop_map(|(a, b, c, d, e, f)| ModelConfig {
                num_infer: a,
                timeout: b,
                optimal_ncg_size: c,
                async_load: d,
                lazy_load: e,
                return_aliases: f,
            })
    }

    pub(in crate::metaneff) fn arb_metaneff() -> impl Strategy<Value = MetaNeff> {
        (
            prop::collection::vec(arb_tensor(), 0..4),
            prop::collection::vec(arb_tensor(), 0..3),
            prop::option::of(arb_config()),
            arb_bytes(),
            arb_bytes(),
            prop::collection::btree_map(any::<i64>(), any::<i64>(), 0..4),
            (any::<i64>(), any::<i64>(), any::<i64>()),
        )
            .prop_map(|(inputs, outputs, config, graph, name, aliases, (u, s, w))| {
                MetaNeff {
                    input_tensors: inputs,
                    output_tensors: outputs,
                    model_config: config,
                    serialized_graph_def: graph.into(),
                    name: name.into(),
                    output_aliases_to: aliases,
                    num_user_inputs: u,
                    num_states: s,
                    num_weights: w,
                }
            })
    }

    proptest! {
        #[test]
        fn encode_decode_encode_is_identity(message in arb_metaneff()) {
            let bytes = encode(&message);
            let decoded = decode(&bytes).unwrap();
            prop_assert_eq!(&decoded, &message);
            prop_assert_eq!(encode(&decoded), bytes);
        }

        #[test]
        fn text_and_json_round_trip(message in arb_metaneff()) {
            let bytes = encode(&message);
            let text = text::to_text(&bytes).unwrap().text;
            prop_assert_eq!(text::from_text(&text).unwrap(), bytes.clone());
            prop_assert_eq!(text::from_text_in_written_order(&text).unwrap(), bytes.clone());
            let json = text::to_json(&bytes).unwrap().text;
            prop_assert_eq!(text::from_json(&json).unwrap(), bytes);
        }

        #[test]
        fn truncated_messages_are_errors_or_shorter_messages(message in arb_metaneff(), cut in any::<prop::sample::Index>()) {
            let bytes = encode(&message);
            prop_assume!(!bytes.is_empty());
            let cut = cut.index(bytes.len());
            // Never a panic; a cut inside a field is an error naming an offset within the bytes.
            if let Err(error) = decode(&bytes[..cut]) {
                prop_assert!(error.offset <= cut);
            }
        }

        #[test]
        fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
            let _ = decode(&bytes);
            let _ = text::to_text(&bytes);
            let _ = edit::set_config_flag(&bytes, edit::ConfigFlag::AsyncLoad, true);
        }

        #[test]
        fn edits_change_only_their_field(message in arb_metaneff(), flag in any::<bool>()) {
            let bytes = encode(&message);
            let edited = edit::set_config_flag(&bytes, edit::ConfigFlag::LazyLoad, flag).unwrap();
            let mut expected = message.clone();
            expected.model_config.get_or_insert_with(Default::default).lazy_load = flag;
            prop_assert_eq!(decode(&edited).unwrap(), expected.clone());
            // On canonical input the edit gives canonical output.
            prop_assert_eq!(edited, encode(&expected));

            let edited = edit::set_allow_dynamic_batch_size(&bytes, |_, i| (i % 2 == 0).then_some(flag)).unwrap();
            let mut expected = message;
            for (i, t) in expected.input_tensors.iter_mut().enumerate() {
                if i % 2 == 0 { t.allow_dynamic_batch_size = flag; }
            }
            for (i, t) in expected.output_tensors.iter_mut().enumerate() {
                if i % 2 == 0 { t.allow_dynamic_batch_size = flag; }
            }
            prop_assert_eq!(edited, encode(&expected));
        }
    }
}

#[test]
fn decode_owned_shares_the_graph_with_its_input_and_agrees_with_decode() {
    let message = MetaNeff {
        input_tensors: vec![MetaTensor {
            name: b"input0".to_vec().into(),
            ..MetaTensor::default()
        }],
        serialized_graph_def: vec![7u8; 4096].into(),
        ..MetaNeff::default()
    };
    let input = prost::bytes::Bytes::from(encode(&message));
    let decoded = decode_owned(input.clone()).expect("decodes");
    assert_eq!(decoded, decode(&input).expect("decodes"));
    let graph = decoded.serialized_graph_def.as_ptr_range();
    let whole = input.as_ptr_range();
    assert!(
        whole.start <= graph.start && graph.end <= whole.end,
        "serialized_graph_def was copied out of the input"
    );
}

#[test]
fn decode_owned_reports_the_offset_and_path_as_decode_does() {
    let mut bytes = encode(&MetaNeff {
        input_tensors: vec![MetaTensor { shape: vec![1, 2, 3], ..MetaTensor::default() }],
        ..MetaNeff::default()
    });
    // Cut the message inside the packed shape.
    bytes.truncate(bytes.len() - 1);
    let owned = decode_owned(bytes.clone().into()).unwrap_err();
    assert_eq!(owned, decode(&bytes).unwrap_err());
    assert_eq!(owned.path, "MetaNeff");
}

#[test]
fn message_descriptors_are_found_by_name_and_an_unknown_name_is_none() {
    for name in ["MetaNeff", "MetaTensor", "ModelConfig"] {
        let descriptor = find_message_descriptor(name).expect("a message of the schema");
        assert_eq!(descriptor.full_name(), format!("metaneff.{name}"));
    }
    assert!(find_message_descriptor("NoSuchMessage").is_none());
    assert!(find_message_descriptor("metaneff.MetaNeff").is_none(), "names are without package");
}

/// A message with `n_inputs` empty input tensors and `n_outputs` output tensors of the shape
/// `dims`, written one shape element per field when `scattered`.
fn many(n_inputs: usize, n_outputs: usize, dims: usize, scattered: bool) -> Vec<u8> {
    let mut bytes = Vec::new();
    for _ in 0..n_inputs {
        bytes.extend([0x0a, 0x00]);
    }
    let tensor: Vec<u8> = if scattered {
        (0..dims).flat_map(|_| [0x10, 0x01]).collect()
    } else {
        let mut packed = vec![0x12, dims as u8];
        packed.extend(std::iter::repeat_n(0x01, dims));
        packed
    };
    for _ in 0..n_outputs {
        bytes.push(0x12);
        bytes.push(tensor.len() as u8);
        bytes.extend(&tensor);
    }
    bytes
}

#[test]
fn tensors_at_the_limit_are_read_and_one_more_is_refused_with_the_named_limit() {
    let limits = MetaneffLimits { max_tensors: 5, ..MetaneffLimits::default() };
    let at = decode_with_limits(&many(5, 5, 1, false), &limits).expect("at the limit");
    assert_eq!((at.input_tensors.len(), at.output_tensors.len()), (5, 5));
    let error = decode_with_limits(&many(6, 0, 1, false), &limits).expect_err("one input more");
    assert_eq!(error.exceeded, Some(MetaneffLimitExceeded::TooManyTensors { limit: 5 }));
    assert_eq!((error.path.as_str(), error.offset), ("MetaNeff.input_tensors[5]", 12));
    assert!(error.reason.contains("more than 5 input_tensors"), "{error}");
    let error = decode_with_limits(&many(0, 6, 1, false), &limits).expect_err("one output more");
    assert_eq!(error.path, "MetaNeff.output_tensors[5]");
}

#[test]
fn shape_dims_at_the_limit_are_read_and_one_more_is_refused_in_either_form() {
    let limits = MetaneffLimits { max_shape_dims: 8, ..MetaneffLimits::default() };
    for scattered in [false, true] {
        let at = decode_with_limits(&many(0, 1, 8, scattered), &limits).expect("at the limit");
        assert_eq!(at.output_tensors[0].shape, vec![1; 8]);
        let error =
            decode_with_limits(&many(0, 1, 9, scattered), &limits).expect_err("one dim more");
        assert_eq!(
            error.exceeded,
            Some(MetaneffLimitExceeded::TooManyShapeDims { count: 9, limit: 8 }),
            "scattered {scattered}"
        );
        assert_eq!(error.path, "MetaNeff.output_tensors[0].shape");
    }
}

#[test]
fn the_default_limits_apply_to_decode() {
    assert_eq!(
        MetaneffLimits::default(),
        MetaneffLimits { max_tensors: 65_536, max_shape_dims: 64 }
    );
    assert!(decode(&many(0, 1, 64, false)).is_ok());
    let error = decode(&many(0, 1, 65, false)).expect_err("65 dimensions");
    assert!(matches!(error.exceeded, Some(MetaneffLimitExceeded::TooManyShapeDims { .. })));
    let error = decode(&many(65_537, 0, 0, false)).expect_err("65 537 inputs");
    assert_eq!(error.exceeded, Some(MetaneffLimitExceeded::TooManyTensors { limit: 65_536 }));
}
