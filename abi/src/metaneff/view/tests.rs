//! The one-pass view against the reference decoder (the schema walk, then prost): the same
//! messages for every metaneff we have, the same errors for every malformed one.

use std::path::{Path, PathBuf};

use proptest::prelude::*;

use super::super::tests::{SEED_EXAMPLE_BYTES, hex, properties::arb_metaneff, with_unknown_fields};
use super::super::{check_wire, decode, decode_owned, decode_reference, encode};
use super::*;

/// What the view makes of `bytes`, as an owned message, or its error.
fn through_view(bytes: &[u8]) -> Result<MetaNeff, MetaneffDecodeError> {
    MetaneffView::decode(bytes)?.to_owned()
}

/// The one check every test here makes: the view, `decode` and `decode_owned` give exactly what
/// the reference decoder gives (the same message, or the same offset, path and reason), and the
/// view counts the unknown fields the schema walk lists.
fn check_agrees_with_reference(bytes: &[u8]) {
    let expected = decode_reference(bytes);
    assert_eq!(through_view(bytes), expected, "view on {bytes:02x?}");
    assert_eq!(decode(bytes), expected, "decode on {bytes:02x?}");
    assert_eq!(
        decode_owned(prost::bytes::Bytes::copy_from_slice(bytes)),
        expected,
        "decode_owned on {bytes:02x?}"
    );
    if let Ok(view) = MetaneffView::decode(bytes) {
        let unknown = check_wire(bytes).expect("the reference accepted it");
        assert_eq!(view.n_unknown_fields, unknown.len(), "unknown fields in {bytes:02x?}");
    }
}

/// Every `metaneff.pb` under `dir`, recursively.
pub(in crate::metaneff) fn metaneff_files(dir: &Path, found: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            metaneff_files(&path, found);
        } else if path.file_name().is_some_and(|name| name == "metaneff.pb") {
            found.push(path);
        }
    }
}

/// The bytes of every `metaneff.pb` the vectors hold, each checked to be a valid metaneff.
pub(in crate::metaneff) fn vector_metaneffs() -> Vec<Vec<u8>> {
    let vectors = Path::new(env!("CARGO_MANIFEST_DIR")).join("../vectors");
    let mut files = Vec::new();
    metaneff_files(&vectors, &mut files);
    // The vectors hold about fifty; far fewer means the walk looked in the wrong place.
    assert!(
        files.len() >= 40,
        "only {} metaneff.pb files under {}",
        files.len(),
        vectors.display()
    );
    files
        .iter()
        .map(|file| {
            let bytes = std::fs::read(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            assert!(decode_reference(&bytes).is_ok(), "{} is a valid metaneff", file.display());
            bytes
        })
        .collect()
}

/// Valid messages written byte by byte, each for one wire form a decoder must read as the
/// reference does.
pub(in crate::metaneff) fn byte_level_fixtures() -> Vec<Vec<u8>> {
    vec![
        hex(SEED_EXAMPLE_BYTES),
        with_unknown_fields(),
        // The explicit default `type`.
        hex(r#"0A 0E 0A 06 "input0" 12 02 01 20 38 00"#),
        // Shapes packed, one element per field, mixed, several runs, and a ten-byte dimension.
        hex(r#"0A 0C 0A 06 "input0" 12 02 02 03"#),
        hex(r#"0A 0E 0A 06 "input0" 10 02 10 03 12 00"#),
        hex(r#"0A 0D 0A 06 "input0" 10 02 12 01 03"#),
        hex(r#"0A 0E 0A 06 "input0" 12 01 02 12 01 03"#),
        hex("0A 0C 12 0A FF FF FF FF FF FF FF FF FF 01"),
        // Alias entries descending, key-less, and a repeated key (the later one wins).
        hex("32 04 08 03 10 03  32 04 08 00 10 01  32 02 10 05"),
        hex("32 04 08 01 10 02  32 04 08 03 10 00  32 04 08 01 10 05"),
        // model_config twice: the occurrences merge field by field.
        hex("1A 04 08 03 20 01  1A 02 28 01  1A 02 08 07"),
        // Scalars and byte fields twice: the last one wins.
        hex(r#"2A 01 "a"  2A 01 "b"  38 01 38 02  0A 06 0A 01 "x" 0A 01 "y""#),
        // Empty optional keys, negative and ten-byte varints.
        hex(r#"0A 04 32 00 42 00  38 FF FF FF FF FF FF FF FF FF 01"#),
        // A non-UTF-8 name, content, a tensor with nothing set, and an output only.
        hex("0A 04 0A 02 FF FE"),
        hex(r#"0A 05 22 03 "abc""#),
        hex("0A 00"),
        hex(r#"12 09 0A 07 "output0""#),
        // Known tags written in two bytes, between tags written shortest.
        hex(r#"8A 00 0A  8A 00 01 "a"  12 01 02  98 00 03  0A 03 0A 01 "b""#),
        // The empty message.
        Vec::new(),
    ]
}

#[test]
fn every_vector_metaneff_decodes_as_the_reference_does() {
    for bytes in vector_metaneffs() {
        check_agrees_with_reference(&bytes);
    }
}

#[test]
fn the_byte_level_fixtures_decode_as_the_reference_does() {
    for bytes in byte_level_fixtures() {
        check_agrees_with_reference(&bytes);
    }
}

#[test]
fn malformed_messages_get_the_reference_decoders_errors() {
    for bytes in [
        // From the decoder's own error tests.
        "0A 05 0A 03",
        r#"0A 06 0A 02 "ab" 18 80"#,
        "12 02 0A 09",
        "1A 02 22 00",
        "0A 03 12 01 80",
        "1F",
        "0A 05 00",
        // Tags: field number 0, number too large, wire types 6 and 7, an end-group tag.
        "00 01",
        "F8 FF FF FF 7F 00",
        "0E",
        "0A 02 0F 00",
        "0C",
        // Varints: truncated, eleven bytes, a tenth byte above 1.
        "38 80",
        "38 FF FF FF FF FF FF FF FF FF FF 01",
        "38 FF FF FF FF FF FF FF FF FF 02",
        // Known fields with the wrong wire type, at each level.
        "38 01 3A 00",
        "09 00 00 00 00 00 00 00 00",
        "0A 02 18 01 0A 02 1A 00",
        "0A 02 15 00",
        "1A 02 09 00",
        "32 02 0A 00",
        "32 02 12 00",
        // Lengths past the end of the message or of the enclosing field.
        "22 05 01 02",
        "0A 02 0A 05 00 00 00",
        "1A 01 08",
        // Unknown fields: truncated fixed widths, an unterminated or mismatched group.
        "99 06 00 00 00",
        "9D 06 00 00",
        "9B 06 08 01",
        "9B 06 08 01 A4 06",
        "0A 03 A3 01 08",
        // A packed shape ending inside a varint, in the middle of a tensor.
        r#"0A 08 12 02 01 80 0A 02 "ab""#,
    ] {
        let bytes = hex(bytes);
        assert!(decode_reference(&bytes).is_err(), "{bytes:02x?} is malformed");
        check_agrees_with_reference(&bytes);
    }
}

/// `depth` unknown groups (field 99) nested around one varint leaf.
fn nested_groups(depth: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for _ in 0..depth {
        out.extend([0x9B, 0x06]);
    }
    out.extend([0x98, 0x06, 0x01]);
    for _ in 0..depth {
        out.extend([0x9C, 0x06]);
    }
    out
}

/// prost refuses a field when its recursion budget of 100 is spent (one per nested message,
/// one per group), which the schema walk alone would let through: the view follows prost.
#[test]
fn nested_groups_are_refused_where_prost_refuses_them() {
    for depth in [0, 1, 97, 98, 99, 100, 101] {
        let top = nested_groups(depth);
        check_agrees_with_reference(&top);
        let mut in_tensor = vec![0x0A];
        put_varint(&mut in_tensor, top.len());
        in_tensor.extend(&top);
        check_agrees_with_reference(&in_tensor);
    }
    // The limit is really met inside the range tried above, at both levels.
    assert!(decode_reference(&nested_groups(98)).is_ok());
    assert!(decode_reference(&nested_groups(100)).is_err());
    assert!(MetaneffView::decode(&nested_groups(99)).is_ok());
    assert!(MetaneffView::decode(&nested_groups(100)).is_err());
}

fn put_varint(out: &mut Vec<u8>, value: usize) {
    crate::wire::put_varint(out, value as u64);
}

#[test]
fn the_view_borrows_names_keys_and_the_graph_from_its_input() {
    let bytes = hex(r#"0A 10 0A 06 "input0" 12 03 01 80 01 32 01 "k"  22 03 "hlo"  2A 01 "m""#);
    let view = MetaneffView::decode(&bytes).expect("decodes");
    let inside = |field: &[u8]| {
        let whole = bytes.as_ptr_range();
        let part = field.as_ptr_range();
        whole.start <= part.start && part.end <= whole.end
    };
    let tensor = &view.input_tensors[0];
    assert_eq!(tensor.name, b"input0");
    assert!(inside(tensor.name) && inside(view.serialized_graph_def) && inside(view.name));
    assert_eq!(tensor.checkpoint_key, Some(&b"k"[..]));
    assert!(inside(tensor.checkpoint_key.expect("set")));
    // The shape is its packed run in the input, read on demand.
    assert_eq!(tensor.shape.packed_bytes(), Some(&[0x01, 0x80, 0x01][..]));
    assert!(inside(tensor.shape.packed_bytes().expect("packed")));
    assert_eq!(tensor.shape.iter().collect::<Vec<_>>(), [1, 128]);
    assert_eq!(tensor.shape.iter().len(), 2);
}

#[test]
fn a_scattered_shape_reads_every_run_in_order() {
    // Runs [2], 3, [4, 5] with a name between them.
    let bytes = hex(r#"0A 0C 12 01 02 10 03 0A 01 "a" 12 02 04 05"#);
    let view = MetaneffView::decode(&bytes).expect("decodes");
    let shape = view.input_tensors[0].shape;
    assert_eq!((shape.len(), shape.packed_bytes()), (4, None));
    assert_eq!(shape.iter().collect::<Vec<_>>(), [2, 3, 4, 5]);
    assert_eq!(shape.to_vec().expect("allocates"), [2, 3, 4, 5]);
    // Equal to the same dimensions written as one run.
    let packed = hex("0A 06 12 04 02 03 04 05");
    assert_eq!(shape, MetaneffView::decode(&packed).expect("decodes").input_tensors[0].shape);
}

/// The in-order fast path takes a field only when its length or value fits the byte after its
/// tag; any field past that (a name of 200 bytes, a data type of 300) hands the rest of the
/// tensor to the general loop. Every combination of short and long fields, in every position,
/// decodes to the message that was encoded, as the reference decoder reads it, and so does a
/// message with many more tensors than the input list is first reserved for.
#[test]
fn tensors_with_long_fields_anywhere_decode_as_encoded() {
    let text = |long: bool, fill: u8| vec![fill; if long { 200 } else { 3 }];
    for mask in 0u32..1 << 8 {
        let long = |bit: u32| mask & (1 << bit) != 0;
        let tensor = MetaTensor {
            name: text(long(0), b'n').into(),
            // Fifteen dimensions of nine bytes each: a run of 135 bytes.
            shape: if long(1) { vec![1 << 56; 15] } else { vec![2, 3] },
            data_type: if long(2) { 300 } else { 14 },
            content: text(long(3), b'c').into(),
            allow_dynamic_batch_size: true,
            checkpoint_key: Some(text(long(5), b'k').into()),
            r#type: if long(6) { 1000 } else { 3 },
            user_input_key: Some(text(long(7), b'u').into()),
        };
        // Bit 4 has no long form of its own (a bool): it writes the tensor twice instead,
        // so that the second copy starts where the first one's last field ended.
        let copies = if long(4) { 2 } else { 1 };
        let message = MetaNeff {
            input_tensors: vec![tensor.clone(); copies],
            output_tensors: vec![tensor],
            ..MetaNeff::default()
        };
        let bytes = encode(&message);
        assert_eq!(through_view(&bytes), Ok(message), "mask {mask:08b}");
        check_agrees_with_reference(&bytes);
    }
    let many = MetaNeff {
        input_tensors: (0..3000)
            .map(|i| MetaTensor { r#type: i % 4, ..MetaTensor::default() })
            .collect(),
        ..MetaNeff::default()
    };
    let bytes = encode(&many);
    assert_eq!(through_view(&bytes), Ok(many));
}

#[test]
fn enum_accessors_name_known_values_only() {
    let bytes = hex("0A 04 18 0E 38 02  0A 04 18 0B 38 09");
    let view = MetaneffView::decode(&bytes).expect("decodes");
    let [bf16, unknown] = &view.input_tensors[..] else { panic!("two tensors: {view:?}") };
    assert_eq!(
        (bf16.dtype(), bf16.tensor_type()),
        (Some(DataType::Bfloat16), Some(Type::InputState))
    );
    // 11 is reserved in the schema and 9 names no type: kept as numbers, named by nothing.
    assert_eq!((unknown.data_type, unknown.r#type), (11, 9));
    assert_eq!((unknown.dtype(), unknown.tensor_type()), (None, None));
}

#[test]
fn the_last_alias_entry_for_an_output_wins() {
    let bytes = hex("32 04 08 01 10 02  32 04 08 03 10 00  32 04 08 01 10 05");
    let view = MetaneffView::decode(&bytes).expect("decodes");
    assert_eq!(view.output_aliases_to, [(1, 2), (3, 0), (1, 5)]);
    assert_eq!((view.alias_of(1), view.alias_of(3), view.alias_of(0)), (Some(5), Some(0), None));
    let owned = view.to_owned().expect("allocates");
    assert_eq!(owned.output_aliases_to, [(1, 5), (3, 0)].into());
}

/// The bytes of `message` changed at a few places: bytes overwritten, inserted or removed, so
/// that most results are malformed somewhere inside a field.
pub(in crate::metaneff) fn mutated(
    message: MetaNeff,
    edits: Vec<(prop::sample::Index, u8, u8)>,
) -> Vec<u8> {
    let mut bytes = encode(&message);
    for (at, kind, value) in edits {
        let position = at.index(bytes.len() + 1);
        match kind % 3 {
            0 if position < bytes.len() => bytes[position] = value,
            1 => bytes.insert(position, value),
            _ if position < bytes.len() => {
                bytes.remove(position);
            }
            _ => bytes.push(value),
        }
    }
    bytes
}

/// A tensor written as no encoder writes it but every decoder must read it: a stale name
/// first (a later one wins), then the fields in reverse number order, the shape one element per
/// field.
fn scrambled_tensor(tensor: &MetaTensor) -> Vec<u8> {
    use crate::wire::{put_len_field, put_varint_field};
    let mut out = Vec::new();
    put_len_field(&mut out, 1, b"stale");
    if let Some(key) = &tensor.user_input_key {
        put_len_field(&mut out, 8, key);
    }
    put_varint_field(&mut out, 7, tensor.r#type as u64);
    if let Some(key) = &tensor.checkpoint_key {
        put_len_field(&mut out, 6, key);
    }
    put_varint_field(&mut out, 5, u64::from(tensor.allow_dynamic_batch_size));
    put_len_field(&mut out, 4, &tensor.content);
    put_varint_field(&mut out, 3, tensor.data_type as u64);
    for &dim in &tensor.shape {
        put_varint_field(&mut out, 2, dim as u64);
    }
    put_len_field(&mut out, 1, &tensor.name);
    out
}

/// A whole message written out of order: scalars first, `model_config` in two occurrences
/// that merge, outputs before inputs, alias entries value first.
pub(in crate::metaneff) fn scrambled(message: &MetaNeff) -> Vec<u8> {
    use crate::wire::{put_len_field, put_varint_field};
    let mut out = Vec::new();
    put_varint_field(&mut out, 9, message.num_weights as u64);
    put_varint_field(&mut out, 8, message.num_states as u64);
    put_varint_field(&mut out, 7, message.num_user_inputs as u64);
    put_len_field(&mut out, 5, &message.name);
    put_len_field(&mut out, 4, &message.serialized_graph_def);
    if let Some(config) = &message.model_config {
        let mut first = Vec::new();
        put_varint_field(&mut first, 6, u64::from(config.return_aliases));
        put_varint_field(&mut first, 1, config.num_infer as u64);
        put_varint_field(&mut first, 2, 12345);
        put_len_field(&mut out, 3, &first);
        let mut second = Vec::new();
        put_varint_field(&mut second, 2, config.timeout as u64);
        put_varint_field(&mut second, 3, config.optimal_ncg_size as u64);
        put_varint_field(&mut second, 4, u64::from(config.async_load));
        put_varint_field(&mut second, 5, u64::from(config.lazy_load));
        put_len_field(&mut out, 3, &second);
    }
    for tensor in &message.output_tensors {
        put_len_field(&mut out, 2, &scrambled_tensor(tensor));
    }
    for (&output, &input) in &message.output_aliases_to {
        let mut entry = Vec::new();
        put_varint_field(&mut entry, 2, input as u64);
        put_varint_field(&mut entry, 1, output as u64);
        put_len_field(&mut out, 6, &entry);
    }
    for tensor in &message.input_tensors {
        put_len_field(&mut out, 1, &scrambled_tensor(tensor));
    }
    out
}

proptest! {
    #[test]
    fn messages_written_out_of_order_decode_as_the_reference_does(message in arb_metaneff()) {
        let bytes = scrambled(&message);
        prop_assert_eq!(decode_reference(&bytes), Ok(message.clone()));
        prop_assert_eq!(through_view(&bytes), Ok(message.clone()));
        let view = MetaneffView::decode(&bytes).unwrap();
        for (tensor, owned) in view.input_tensors.iter().zip(&message.input_tensors) {
            prop_assert_eq!(tensor.shape.len(), owned.shape.len());
            prop_assert_eq!(tensor.shape.iter().collect::<Vec<_>>(), owned.shape.clone());
        }
    }

    #[test]
    fn generated_messages_decode_as_encoded(message in arb_metaneff()) {
        let bytes = encode(&message);
        let view = MetaneffView::decode(&bytes).unwrap();
        prop_assert_eq!(view.to_owned().unwrap(), message.clone());
        for (tensor, owned) in view.input_tensors.iter().zip(&message.input_tensors) {
            prop_assert_eq!(tensor.shape.len(), owned.shape.len());
            prop_assert_eq!(tensor.shape.iter().collect::<Vec<_>>(), owned.shape.clone());
        }
        prop_assert_eq!(decode_reference(&bytes), Ok(message));
    }

    #[test]
    fn mutated_messages_get_the_reference_result(
        message in arb_metaneff(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), any::<u8>()), 1..4),
    ) {
        let bytes = mutated(message, edits);
        let expected = decode_reference(&bytes);
        prop_assert_eq!(through_view(&bytes), expected.clone());
        prop_assert_eq!(decode_owned(bytes.clone().into()), expected);
    }

    #[test]
    fn random_bytes_get_the_reference_result(bytes in prop::collection::vec(any::<u8>(), 0..48)) {
        prop_assert_eq!(through_view(&bytes), decode_reference(&bytes));
    }
}
