//! The flat decoded form against the reference decoder (the schema walk, then prost): every
//! accessor gives the prost message's field for the same bytes, and every refusal is the same
//! error.

use proptest::prelude::*;

use super::super::tests::properties::arb_metaneff;
use super::super::tests::{SEED_EXAMPLE_BYTES, hex};
use super::super::view::tests::{byte_level_fixtures, mutated, scrambled, vector_metaneffs};
use super::super::{
    MetaneffLimitExceeded, check_wire, decode_reference, decode_with_limits, encode,
};
use super::*;

/// Every accessor of `decoded` against the field of `message` it stands for.
fn assert_same(decoded: &Decoded, message: &MetaNeff) {
    for (side, list, expected) in [
        ("input", decoded.input_tensors(), &message.input_tensors),
        ("output", decoded.output_tensors(), &message.output_tensors),
    ] {
        assert_eq!(list.len(), expected.len(), "{side} count");
        assert_eq!(list.is_empty(), expected.is_empty(), "{side} emptiness");
        assert_eq!(list.iter().len(), expected.len(), "{side} iterator length");
        for (index, (tensor, expected)) in list.iter().zip(expected).enumerate() {
            let at = format!("{side} {index}");
            assert_eq!(tensor.name(), &expected.name[..], "{at} name");
            assert_eq!(tensor.shape(), &expected.shape[..], "{at} shape");
            assert_eq!(tensor.data_type(), expected.data_type, "{at} data_type");
            assert_eq!(tensor.dtype(), DataType::try_from(expected.data_type).ok(), "{at}");
            assert_eq!(tensor.content(), &expected.content[..], "{at} content");
            assert_eq!(
                tensor.allow_dynamic_batch_size(),
                expected.allow_dynamic_batch_size,
                "{at} allow_dynamic_batch_size"
            );
            assert_eq!(tensor.checkpoint_key(), expected.checkpoint_key.as_deref(), "{at} key");
            assert_eq!(tensor.r#type(), expected.r#type, "{at} type");
            assert_eq!(tensor.tensor_type(), Type::try_from(expected.r#type).ok(), "{at}");
            assert_eq!(tensor.user_input_key(), expected.user_input_key.as_deref(), "{at}");
            assert_eq!(&tensor.to_message().expect("allocates"), expected, "{at} message");
            assert_eq!(list.get(index).map(|t| t.name()), Some(&expected.name[..]), "{at} get");
        }
        assert!(list.get(expected.len()).is_none(), "{side} get past the end");
        let backwards: Vec<_> = list.iter().rev().map(|t| t.name()).collect();
        let expected_backwards: Vec<_> = expected.iter().rev().map(|t| &t.name[..]).collect();
        assert_eq!(backwards, expected_backwards, "{side} reversed");
    }
    assert_eq!(decoded.model_config(), message.model_config.as_ref());
    assert_eq!(decoded.serialized_graph_def(), &message.serialized_graph_def[..]);
    assert_eq!(decoded.serialized_graph_def_shared(), message.serialized_graph_def);
    assert_eq!(decoded.name(), &message.name[..]);
    let aliases: Vec<(i64, i64)> =
        message.output_aliases_to.iter().map(|(&k, &v)| (k, v)).collect();
    assert_eq!(decoded.output_aliases_to(), &aliases[..]);
    for (&output, &input) in &message.output_aliases_to {
        assert_eq!(decoded.alias_of(output), Some(input), "alias of {output}");
    }
    let absent = (-3..=3).chain([i64::MIN, i64::MAX]);
    for output in absent.filter(|output| !message.output_aliases_to.contains_key(output)) {
        assert_eq!(decoded.alias_of(output), None, "alias of {output}");
    }
    assert_eq!(decoded.num_user_inputs(), message.num_user_inputs);
    assert_eq!(decoded.num_states(), message.num_states);
    assert_eq!(decoded.num_weights(), message.num_weights);
    assert_eq!(&decoded.to_message().expect("allocates"), message);
}

/// The one check most tests here make: from a slice and from an owned buffer, [`Decoded`] gives
/// what the reference decoder gives (every field the same, or the same error), and counts the
/// unknown fields the schema walk lists.
fn check_agrees_with_reference(bytes: &[u8]) {
    let expected = decode_reference(bytes);
    for decoded in [Decoded::decode(bytes), Decoded::decode_owned(Bytes::copy_from_slice(bytes))] {
        match (&decoded, &expected) {
            (Ok(decoded), Ok(message)) => {
                assert_same(decoded, message);
                let unknown = check_wire(bytes).expect("the reference accepted it");
                assert_eq!(decoded.n_unknown_fields(), unknown.len(), "unknown fields");
                assert_eq!(&decoded.message_bytes()[..], bytes);
            }
            (Err(error), Err(expected)) => assert_eq!(error, expected, "on {bytes:02x?}"),
            _ => panic!("on {bytes:02x?}: {decoded:?}, expected {expected:?}"),
        }
    }
}

#[test]
fn every_vector_metaneff_reads_as_the_reference_decodes_it() {
    for bytes in vector_metaneffs() {
        check_agrees_with_reference(&bytes);
    }
}

#[test]
fn the_byte_level_fixtures_read_as_the_reference_decodes_them() {
    for bytes in byte_level_fixtures() {
        check_agrees_with_reference(&bytes);
    }
}

#[test]
fn malformed_messages_get_the_reference_decoders_errors() {
    for bytes in [
        "0A 05 0A 03",
        r#"0A 06 0A 02 "ab" 18 80"#,
        "12 02 0A 09",
        "1A 02 22 00",
        "0A 03 12 01 80",
        "1F",
        "00 01",
        "0E",
        "38 80",
        "38 FF FF FF FF FF FF FF FF FF 02",
        "38 01 3A 00",
    ] {
        let bytes = hex(bytes);
        assert!(decode_reference(&bytes).is_err(), "{bytes:02x?} is malformed");
        check_agrees_with_reference(&bytes);
    }
}

#[test]
fn truncated_messages_get_the_errors_decode_gives() {
    let bytes = hex(SEED_EXAMPLE_BYTES);
    for end in 0..bytes.len() {
        check_agrees_with_reference(&bytes[..end]);
    }
}

/// A message with `n_inputs` empty input tensors and one output of `dims` ones, packed.
fn many(n_inputs: usize, dims: usize) -> Vec<u8> {
    let mut bytes = Vec::new();
    for _ in 0..n_inputs {
        bytes.extend([0x0a, 0x00]);
    }
    bytes.extend([0x12, dims as u8 + 2, 0x12, dims as u8]);
    bytes.extend(std::iter::repeat_n(0x01, dims));
    bytes
}

#[test]
fn count_limits_give_the_errors_decode_with_limits_gives() {
    let limits = MetaneffLimits { max_tensors: 5, max_shape_dims: 8 };
    let at = Decoded::decode_with_limits(&many(5, 8), &limits).expect("at the limits");
    assert_eq!((at.input_tensors().len(), at.output_tensors().len()), (5, 1));
    assert_eq!(at.output_tensors().get(0).expect("one output").shape(), [1; 8]);
    for (bytes, exceeded) in [
        (many(6, 1), MetaneffLimitExceeded::TooManyTensors { limit: 5 }),
        (many(0, 9), MetaneffLimitExceeded::TooManyShapeDims { count: 9, limit: 8 }),
    ] {
        let error = Decoded::decode_with_limits(&bytes, &limits).expect_err("past a limit");
        assert_eq!(error.exceeded, Some(exceeded));
        assert_eq!(error, decode_with_limits(&bytes, &limits).expect_err("past a limit"));
    }
    // The defaults apply to both entry points.
    for error in [
        Decoded::decode(&many(0, 65)).expect_err("65 dimensions"),
        Decoded::decode_owned(many(0, 65).into()).expect_err("65 dimensions"),
    ] {
        assert!(matches!(error.exceeded, Some(MetaneffLimitExceeded::TooManyShapeDims { .. })));
    }
}

#[test]
fn an_owned_input_is_shared_not_copied() {
    let message = MetaNeff {
        input_tensors: vec![MetaTensor {
            name: b"input0".to_vec().into(),
            shape: vec![2, 3],
            ..MetaTensor::default()
        }],
        serialized_graph_def: vec![7u8; 4096].into(),
        ..MetaNeff::default()
    };
    let input = Bytes::from(encode(&message));
    let decoded = Decoded::decode_owned(input.clone()).expect("decodes");
    let whole = input.as_ptr_range();
    let inside =
        |part: std::ops::Range<*const u8>| whole.start <= part.start && part.end <= whole.end;
    assert!(inside(decoded.serialized_graph_def().as_ptr_range()), "the graph was copied");
    assert!(inside(decoded.serialized_graph_def_shared().as_ptr_range()), "the graph was copied");
    let name = decoded.input_tensors().get(0).expect("one input").name();
    assert!(inside(name.as_ptr_range()), "the name was copied");
    assert!(inside(decoded.to_message().expect("allocates").serialized_graph_def.as_ptr_range()));
}

#[test]
fn dimensions_of_all_tensors_lie_end_to_end_each_tensor_its_own() {
    // Shapes [2, 3], [], [4] scattered over fields, [5, 6, 7]; then an output [8].
    let bytes = hex("0A 04 12 02 02 03  0A 00  0A 02 10 04  0A 05 12 03 05 06 07  12 03 12 01 08");
    let decoded = Decoded::decode(&bytes).expect("decodes");
    let shapes: Vec<&[i64]> = decoded.input_tensors().iter().map(|t| t.shape()).collect();
    assert_eq!(shapes, [&[2, 3][..], &[], &[4], &[5, 6, 7]]);
    assert_eq!(decoded.output_tensors().get(0).expect("one output").shape(), [8]);
    check_agrees_with_reference(&bytes);
}

#[test]
fn the_last_alias_entry_for_an_output_wins_and_aliases_are_sorted() {
    let bytes = hex("32 04 08 03 10 02  32 04 08 01 10 00  32 04 08 03 10 05  32 02 10 09");
    let decoded = Decoded::decode(&bytes).expect("decodes");
    assert_eq!(decoded.output_aliases_to(), [(0, 9), (1, 0), (3, 5)]);
    assert_eq!(
        (decoded.alias_of(3), decoded.alias_of(0), decoded.alias_of(2)),
        (Some(5), Some(9), None)
    );
}

#[test]
fn debug_shows_the_fields() {
    let decoded = Decoded::decode(&hex(SEED_EXAMPLE_BYTES)).expect("decodes");
    let text = format!("{decoded:?}");
    for part in ["input_tensors", "shape: [1, 1, 1, 32]", "3 bytes", "return_aliases: true"] {
        assert!(text.contains(part), "{part:?} in {text}");
    }
}

proptest! {
    #[test]
    fn generated_messages_read_as_encoded(message in arb_metaneff()) {
        let bytes = encode(&message);
        let decoded = Decoded::decode(&bytes).unwrap();
        assert_same(&decoded, &message);
        prop_assert_eq!(decoded.n_unknown_fields(), 0);
    }

    #[test]
    fn messages_written_out_of_order_read_as_the_reference_decodes_them(
        message in arb_metaneff(),
    ) {
        let bytes = scrambled(&message);
        assert_same(&Decoded::decode(&bytes).unwrap(), &message);
        check_agrees_with_reference(&bytes);
    }

    #[test]
    fn mutated_messages_get_the_reference_result(
        message in arb_metaneff(),
        edits in prop::collection::vec(
            (any::<prop::sample::Index>(), any::<u8>(), any::<u8>()),
            1..4,
        ),
    ) {
        check_agrees_with_reference(&mutated(message, edits));
    }

    #[test]
    fn random_bytes_get_the_reference_result(bytes in prop::collection::vec(any::<u8>(), 0..48)) {
        check_agrees_with_reference(&bytes);
    }
}
