//! `decode_module` against wire bytes written by hand from the protobuf encoding rules.

use hlo::proto::{HloComputationProto, HloModuleProto};
use hlo::{DecodeError, decode_module};

/// name = "m" (field 1), computations = [{ name = "c", id = 3 }] (field 3), an undeclared
/// length-delimited field 12 (XLA's `spmd_output_sharding`), entry_computation_id = 3 (field 6).
const SMALL_MODULE: &[u8] = &[
    0x0a, 0x01, b'm', // 1: name
    0x1a, 0x05, 0x0a, 0x01, b'c', 0x28, 0x03, // 3: computations[0] { 1: name, 5: id }
    0x62, 0x02, 0x08, 0x01, // 12: not in our schema, skipped
    0x30, 0x03, // 6: entry_computation_id
];

#[test]
fn decodes_fields_and_skips_undeclared_ones() {
    let module = decode_module(SMALL_MODULE).unwrap();
    let expected = HloModuleProto {
        name: "m".into(),
        entry_computation_id: 3,
        computations: vec![HloComputationProto { name: "c".into(), id: 3, ..Default::default() }],
        ..Default::default()
    };
    assert_eq!(module, expected);
}

#[test]
fn encode_then_decode_is_identity() {
    let module = decode_module(SMALL_MODULE).unwrap();
    assert_eq!(decode_module(&hlo::encode_module(&module)).unwrap(), module);
}

#[test]
fn empty_input_is_an_error() {
    assert!(matches!(decode_module(&[]), Err(DecodeError::Empty)));
}

#[test]
fn truncated_input_is_an_error_naming_the_length() {
    for cut in 1..SMALL_MODULE.len() {
        // Every cut inside a field must fail; cuts at a field boundary are valid shorter modules.
        let boundaries = [3, 10, 14];
        let result = decode_module(&SMALL_MODULE[..cut]);
        if boundaries.contains(&cut) {
            assert!(result.is_ok(), "cut at {cut}: {result:?}");
        } else {
            let err = result.unwrap_err();
            assert!(matches!(err, DecodeError::Malformed { len, .. } if len == cut), "{err}");
            assert!(err.to_string().starts_with("malformed HloModuleProto"), "{err}");
        }
    }
}

#[test]
fn text_is_not_a_binary_module() {
    let err = decode_module(b"HloModule m\n\nENTRY e {\n}\n").unwrap_err();
    assert!(matches!(err, DecodeError::Malformed { .. }), "{err}");
}

/// A decoded instruction pays inline only for what most instructions have (its shape, ids,
/// names); the large optional sub-messages (a constant's literal, metadata, dimension numbers,
/// replica groups) are boxed, so an instruction without them costs no more than this. The count
/// limits (`hlo::LoadLimits`) are set from this size.
#[test]
fn an_instruction_holds_its_large_optional_parts_boxed() {
    let size = std::mem::size_of::<hlo::proto::HloInstructionProto>();
    assert!(size <= 1024, "an instruction is {size} bytes, expected at most 1024");
}
