//! The dtype tables of docs/abi-facts.md §2, §4 and §5, checked row by row through one helper per table,
//! plus properties of the byte-size arithmetic.
//!
//! The expected values are written out here as data, independently of the tables in
//! `abi::dtype`, so a wrong row in either place fails a test.

use abi::dtype::{
    DataType, Dltype, DtypeError, DtypeNumbering, NrtDtype, PROTO_AT_DTYPE_MAP, Producer,
    ScalarType, XlaPrimitiveType, dltype_of_raw, item_size_of_raw, n_bytes, n_bytes_of_raw,
    n_bytes_with_batch, n_elements, nrt_dtype_of, nrt_dtype_of_raw, scalar_type_of,
    scalar_type_of_raw,
};
use proptest::prelude::*;

/// One row of the §2 table: the metaneff key (name and wire value), the torch type's c10 name and
/// index, and the item size.
fn check_proto_at_row(key: &str, value: i32, scalar_name: &str, index: u8, item_size: u64) {
    let data_type = DataType::from_str_name(key).expect("the key is a DataType enumerator");
    assert_eq!(data_type as i32, value, "{key}");
    let scalar_type = scalar_type_of(data_type).unwrap_or_else(|e| panic!("{key}: {e}"));
    assert_eq!(scalar_type_of_raw(value), Ok(scalar_type), "{key}");
    assert_eq!(scalar_type.name(), scalar_name, "{key}");
    assert_eq!(scalar_type.index(), index, "{key}");
    assert_eq!(scalar_type.item_size(), item_size, "{key}");
    assert_eq!(item_size_of_raw(value), Ok(item_size), "{key}");
    assert_eq!(ScalarType::from_name(scalar_name), Ok(scalar_type), "{key}");
    assert_eq!(n_bytes(&[2, 3], data_type), Ok(6 * item_size), "{key}");
    assert_eq!(scalar_type.n_bytes(&[2, 3]), Ok(6 * item_size), "{key}");
}

const PROTO_AT_TABLE: [(&str, i32, &str, u8, u64); 14] = [
    ("FLOAT", 1, "Float", 6, 4),
    ("INT32", 2, "Int", 3, 4),
    ("BYTE", 3, "Byte", 0, 1),
    ("BOOL", 5, "Bool", 11, 1),
    ("UINT8", 6, "Byte", 0, 1),
    ("INT8", 7, "Char", 1, 1),
    ("UINT16", 8, "UInt16", 27, 2),
    ("INT16", 9, "Short", 2, 2),
    ("INT64", 10, "Long", 4, 8),
    ("FLOAT16", 12, "Half", 5, 2),
    ("DOUBLE", 13, "Double", 7, 8),
    ("BFLOAT16", 14, "BFloat16", 15, 2),
    ("F8E4M3FN", 15, "Float8_e4m3fn", 24, 1),
    ("F8E5M2", 16, "Float8_e5m2", 23, 1),
];

#[test]
fn every_row_of_the_proto_at_dtype_map_matches_abi_facts() {
    for (key, value, scalar_name, index, item_size) in PROTO_AT_TABLE {
        check_proto_at_row(key, value, scalar_name, index, item_size);
    }
    let keys: Vec<i32> = PROTO_AT_DTYPE_MAP.iter().map(|(key, _)| *key as i32).collect();
    let expected: Vec<i32> = PROTO_AT_TABLE.iter().map(|row| row.1).collect();
    assert_eq!(keys, expected, "the map holds exactly the fourteen keys, in key order");
}

/// docs/abi-facts.md §2: the fourteen value immediates read from libtorchneuron are the c10
/// indices of the map's values in key order. The fifteenth immediate, 0x10, is the key 16 itself,
/// not a value, so no key maps to c10 index 16.
#[test]
fn seed_immediates_are_the_scalar_type_indices_in_key_order() {
    let seed_immediates: [u8; 14] =
        [0x06, 0x03, 0x00, 0x0b, 0x00, 0x01, 0x1b, 0x02, 0x04, 0x05, 0x07, 0x0f, 0x18, 0x17];
    let indices: Vec<u8> = PROTO_AT_DTYPE_MAP.iter().map(|(_, s)| s.index()).collect();
    assert_eq!(indices, seed_immediates);
    assert_eq!(PROTO_AT_DTYPE_MAP.last().map(|(key, _)| *key as i32), Some(0x10));
    assert_eq!(ScalarType::from_index(0x10), None);
}

#[test]
fn keys_outside_the_map_are_rejected_naming_the_value() {
    let cases = [
        (
            0,
            "unsupported metaneff data_type UNDEFINED (0): libtorchneuron's PROTO_AT_DTYPE_MAP has no entry for it",
        ),
        (
            4,
            "unsupported metaneff data_type STRING (4): libtorchneuron's PROTO_AT_DTYPE_MAP has no entry for it",
        ),
        (
            11,
            "unsupported metaneff data_type 11 (no such DataType): libtorchneuron's PROTO_AT_DTYPE_MAP has no entry for it",
        ),
        (17, "unsupported metaneff data_type 17 (no such DataType)"),
        (-1, "unsupported metaneff data_type -1 (no such DataType)"),
        (i32::MAX, "unsupported metaneff data_type 2147483647 (no such DataType)"),
    ];
    for (value, message_prefix) in cases {
        let expected = DtypeError::UnsupportedDataType { value };
        assert_eq!(scalar_type_of_raw(value), Err(expected.clone()));
        assert_eq!(item_size_of_raw(value), Err(expected.clone()));
        assert_eq!(n_bytes_of_raw(&[1], value), Err(expected.clone()));
        assert_eq!(nrt_dtype_of_raw(value), Err(expected.clone()));
        assert_eq!(dltype_of_raw(value), Err(expected.clone()));
        let message = expected.to_string();
        assert!(message.starts_with(message_prefix), "{message}");
        assert!(message.contains("(expected one of FLOAT (1), INT32 (2), BYTE (3), BOOL (5)"));
    }
    assert_eq!(scalar_type_of(DataType::String), Err(DtypeError::UnsupportedDataType { value: 4 }));
    assert_eq!(
        n_bytes(&[], DataType::Undefined),
        Err(DtypeError::UnsupportedDataType { value: 0 })
    );
}

#[test]
fn byte_reads_as_torch_byte_but_torch_byte_writes_uint8() {
    assert_eq!(scalar_type_of(DataType::Byte), Ok(ScalarType::Byte));
    assert_eq!(scalar_type_of(DataType::Uint8), Ok(ScalarType::Byte));
    assert_eq!(ScalarType::Byte.canonical_data_type(), DataType::Uint8);
}

/// One logical dtype with its code in each numbering (`None`: that numbering has no code).
fn check_nrt_row(dtype: NrtDtype, legacy: Option<u32>, hardware: Option<u32>) {
    for (numbering, code) in
        [(DtypeNumbering::Legacy, legacy), (DtypeNumbering::Hardware2026, hardware)]
    {
        assert_eq!(dtype.code(numbering), code, "{dtype:?} under {numbering:?}");
        if let Some(code) = code {
            assert_eq!(NrtDtype::from_code(numbering, code), dtype, "{numbering:?} code {code}");
        }
    }
}

#[test]
fn both_nrt_dtype_numberings_match_abi_facts() {
    let table = [
        (NrtDtype::Invalid, Some(0), Some(0)),
        (NrtDtype::Float32, Some(1), Some(10)),
        (NrtDtype::Float16, Some(2), Some(7)),
        (NrtDtype::BFloat16, Some(3), Some(6)),
        (NrtDtype::Int8, Some(4), Some(2)),
        (NrtDtype::Uint8, Some(5), Some(3)),
        (NrtDtype::Int16, Some(6), Some(4)),
        (NrtDtype::Uint16, Some(7), Some(5)),
        (NrtDtype::Int32, Some(8), Some(8)),
        (NrtDtype::Uint32, Some(9), Some(9)),
        (NrtDtype::Int64, Some(10), Some(12)),
        (NrtDtype::Uint64, Some(11), Some(1)),
        (NrtDtype::Fp32r, None, Some(11)),
        (NrtDtype::Fp8E3, None, Some(13)),
        (NrtDtype::Fp8E4, None, Some(14)),
        (NrtDtype::Fp8E5, None, Some(15)),
    ];
    for (dtype, legacy, hardware) in table {
        check_nrt_row(dtype, legacy, hardware);
    }
    assert_eq!(table.len(), NrtDtype::ALL.len());
}

#[test]
fn the_same_code_means_different_types_across_numberings() {
    assert_eq!(NrtDtype::from_code(DtypeNumbering::Legacy, 1), NrtDtype::Float32);
    assert_eq!(NrtDtype::from_code(DtypeNumbering::Hardware2026, 1), NrtDtype::Uint64);
    assert_eq!(NrtDtype::from_code(DtypeNumbering::Hardware2026, 10), NrtDtype::Float32);
    assert_eq!(NrtDtype::from_code(DtypeNumbering::Legacy, 10), NrtDtype::Int64);
    // Only INT32, UINT32 and the empty code 0 keep their number.
    let same: Vec<NrtDtype> = NrtDtype::ALL
        .iter()
        .copied()
        .filter(|d| d.code(DtypeNumbering::Legacy) == d.code(DtypeNumbering::Hardware2026))
        .collect();
    assert_eq!(same, [NrtDtype::Invalid, NrtDtype::Int32, NrtDtype::Uint32]);
}

#[test]
fn unknown_nrt_codes_survive_and_round_trip() {
    for numbering in DtypeNumbering::ALL {
        for code in [16, 99, u32::MAX] {
            let dtype = NrtDtype::from_code(numbering, code);
            assert_eq!(dtype, NrtDtype::Unknown { numbering, code });
            assert_eq!(dtype.code(numbering), Some(code));
        }
    }
    // FP8 codes are unknown to a legacy runtime.
    assert_eq!(
        NrtDtype::from_code(DtypeNumbering::Legacy, 14),
        NrtDtype::Unknown { numbering: DtypeNumbering::Legacy, code: 14 }
    );
}

#[test]
fn metaneff_types_map_to_nrt_dtypes_except_bool_and_double() {
    let table = [
        (DataType::Float, Some(NrtDtype::Float32)),
        (DataType::Int32, Some(NrtDtype::Int32)),
        (DataType::Byte, Some(NrtDtype::Uint8)),
        (DataType::Bool, None),
        (DataType::Uint8, Some(NrtDtype::Uint8)),
        (DataType::Int8, Some(NrtDtype::Int8)),
        (DataType::Uint16, Some(NrtDtype::Uint16)),
        (DataType::Int16, Some(NrtDtype::Int16)),
        (DataType::Int64, Some(NrtDtype::Int64)),
        (DataType::Float16, Some(NrtDtype::Float16)),
        (DataType::Double, None),
        (DataType::Bfloat16, Some(NrtDtype::BFloat16)),
        (DataType::F8e4m3fn, Some(NrtDtype::Fp8E4)),
        (DataType::F8e5m2, Some(NrtDtype::Fp8E5)),
    ];
    for (data_type, expected) in table {
        let scalar_type = scalar_type_of(data_type).expect("a key of the map");
        match expected {
            Some(nrt_dtype) => {
                assert_eq!(nrt_dtype_of(data_type), Ok(nrt_dtype), "{data_type:?}");
                assert_eq!(nrt_dtype.scalar_type(), Some(scalar_type), "{data_type:?}");
            }
            None => {
                let err = nrt_dtype_of(data_type).unwrap_err();
                assert_eq!(err, DtypeError::NoNrtDtype { value: data_type as i32, scalar_type });
            }
        }
    }
    assert_eq!(
        DtypeError::NoNrtDtype { value: 5, scalar_type: ScalarType::Bool }.to_string(),
        "metaneff data_type BOOL (5) has no nrt_dtype_t: expected a type with a libnrt code, and \
         neither numbering has one for torch Bool"
    );
}

/// One neff.json dltype: its string, item size, libnrt type, metaneff type and XLA type.
fn check_dltype_row(
    name: &str,
    item_size: u64,
    nrt_dtype: Option<NrtDtype>,
    data_type: Option<DataType>,
    xla_name: &str,
) {
    let dltype = Dltype::from_name(name).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(dltype.name(), name);
    assert_eq!(dltype.item_size(), item_size, "{name}");
    assert_eq!(dltype.nrt_dtype(), nrt_dtype, "{name}");
    assert_eq!(dltype.data_type(), data_type, "{name}");
    assert_eq!(dltype.xla_primitive_type().name(), xla_name, "{name}");
    if let Some(nrt_dtype) = nrt_dtype {
        assert_eq!(Dltype::from_nrt_dtype(nrt_dtype), Some(dltype), "{name}");
    }
}

#[test]
fn every_dltype_matches_abi_facts() {
    let table = [
        ("float32", 4, Some(NrtDtype::Float32), Some(DataType::Float), "F32"),
        ("float16", 2, Some(NrtDtype::Float16), Some(DataType::Float16), "F16"),
        ("bfloat16", 2, Some(NrtDtype::BFloat16), Some(DataType::Bfloat16), "BF16"),
        ("float64", 8, None, Some(DataType::Double), "F64"),
        ("int8", 1, Some(NrtDtype::Int8), Some(DataType::Int8), "S8"),
        ("uint8", 1, Some(NrtDtype::Uint8), Some(DataType::Uint8), "U8"),
        ("int16", 2, Some(NrtDtype::Int16), Some(DataType::Int16), "S16"),
        ("uint16", 2, Some(NrtDtype::Uint16), Some(DataType::Uint16), "U16"),
        ("int32", 4, Some(NrtDtype::Int32), Some(DataType::Int32), "S32"),
        ("uint32", 4, Some(NrtDtype::Uint32), None, "U32"),
        ("int64", 8, Some(NrtDtype::Int64), Some(DataType::Int64), "S64"),
        ("uint64", 8, Some(NrtDtype::Uint64), None, "U64"),
        ("bool", 1, None, Some(DataType::Bool), "PRED"),
        ("float8_e4m3fn", 1, Some(NrtDtype::Fp8E4), Some(DataType::F8e4m3fn), "F8E4M3FN"),
        ("float8_e5m2", 1, Some(NrtDtype::Fp8E5), Some(DataType::F8e5m2), "F8E5M2"),
    ];
    for (name, item_size, nrt_dtype, data_type, xla_name) in table {
        check_dltype_row(name, item_size, nrt_dtype, data_type, xla_name);
    }
    assert_eq!(table.len(), Dltype::ALL.len());
    for nrt_dtype in [NrtDtype::Invalid, NrtDtype::Fp32r, NrtDtype::Fp8E3] {
        assert_eq!(Dltype::from_nrt_dtype(nrt_dtype), None, "{nrt_dtype:?}");
    }
    assert_eq!(dltype_of_raw(DataType::Byte as i32), Ok(Dltype::Uint8));
}

/// One XLA type with the DataType each producer writes for it.
fn check_producer_row(xla_name: &str, torch_neuronx: DataType, transformers_neuronx: DataType) {
    let xla_type = XlaPrimitiveType::from_name(xla_name).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(xla_type.name(), xla_name);
    assert_eq!(Producer::TorchNeuronx.data_type_of(xla_type), torch_neuronx, "{xla_name}");
    assert_eq!(Producer::TorchNeuronx.data_type_of_name(xla_name), Ok(torch_neuronx));
    assert_eq!(
        Producer::TransformersNeuronx.data_type_of_name(xla_name),
        Ok(transformers_neuronx),
        "{xla_name}"
    );
    // Whatever a producer writes, libtorchneuron can allocate.
    assert!(scalar_type_of(torch_neuronx).is_ok(), "{xla_name}");
    assert!(scalar_type_of(transformers_neuronx).is_ok(), "{xla_name}");
}

#[test]
fn producer_maps_match_abi_facts() {
    use DataType as D;
    let table = [
        ("PRED", D::Bool, D::Uint8),
        ("S8", D::Int8, D::Int8),
        ("S16", D::Int16, D::Int16),
        ("S32", D::Int32, D::Int32),
        ("S64", D::Int64, D::Int64),
        ("U8", D::Uint8, D::Uint8),
        ("U16", D::Uint16, D::Uint16),
        ("U32", D::Int32, D::Int32),
        ("U64", D::Int64, D::Int64),
        ("F16", D::Float16, D::Float16),
        ("F32", D::Float, D::Float),
        ("F64", D::Double, D::Double),
        ("BF16", D::Bfloat16, D::Bfloat16),
        ("F8E4M3FN", D::F8e4m3fn, D::Int8),
        ("F8E5M2", D::F8e5m2, D::Int8),
    ];
    for (xla_name, torch_neuronx, transformers_neuronx) in table {
        check_producer_row(xla_name, torch_neuronx, transformers_neuronx);
    }
    assert_eq!(table.len(), XlaPrimitiveType::ALL.len());
}

#[test]
fn unknown_xla_names_are_errors_naming_the_name() {
    for name in ["C64", "f32", "", "TOKEN"] {
        let err = Producer::TorchNeuronx.data_type_of_name(name).unwrap_err();
        assert_eq!(err, DtypeError::UnknownXlaPrimitiveType { name: name.to_owned() });
        let expected = format!("unknown XLA primitive type {name:?}: expected one of PRED, S8,");
        assert!(err.to_string().starts_with(&expected), "{err}");
    }
}

/// One byte-size case: shape, data_type, dynamic batch, and the expected size or error.
fn check_n_bytes(
    shape: &[i64],
    data_type: DataType,
    batch: Option<i64>,
    expected: Result<u64, DtypeError>,
) {
    assert_eq!(n_bytes_with_batch(shape, data_type, batch), expected, "{shape:?} {batch:?}");
}

#[test]
fn byte_size_edge_cases() {
    use DtypeError as E;
    check_n_bytes(&[], DataType::Float, None, Ok(4));
    check_n_bytes(&[0], DataType::Double, None, Ok(0));
    check_n_bytes(&[128, 256], DataType::Float16, None, Ok(65536));
    check_n_bytes(&[8, 3], DataType::Float, Some(2), Ok(24));
    check_n_bytes(&[8, 3], DataType::Float, Some(0), Ok(0));
    check_n_bytes(
        &[2, -5, 3],
        DataType::Int8,
        None,
        Err(E::NegativeDimension { index: 1, value: -5 }),
    );
    check_n_bytes(&[], DataType::Float, Some(4), Err(E::ScalarWithDynamicBatch { batch: 4 }));
    check_n_bytes(&[8, 3], DataType::Float, Some(-1), Err(E::NegativeBatch { batch: -1 }));
    let overflow = E::ByteSizeOverflow { shape: vec![1 << 62, 2], item_size: 8 };
    check_n_bytes(&[1 << 62, 2], DataType::Int64, None, Err(overflow));
    // 2^61 int64 elements are exactly 2^64 bytes: one past u64::MAX.
    let overflow = E::ByteSizeOverflow { shape: vec![1 << 61], item_size: 8 };
    check_n_bytes(&[1 << 61], DataType::Int64, None, Err(overflow));
    check_n_bytes(&[(1 << 61) - 1], DataType::Int64, None, Ok(u64::MAX - 7));
    assert!(
        DtypeError::ScalarWithDynamicBatch { batch: 4 }
            .to_string()
            .starts_with("scalar tensor cannot have allow_dynamic_batch_size=True")
    );
    assert_eq!(
        DtypeError::NegativeDimension { index: 1, value: -5 }.to_string(),
        "expected a non-negative dimension at shape index 1, got -5"
    );
    assert_eq!(
        n_elements(&[i64::MAX, 3]),
        Err(DtypeError::ElementCountOverflow { shape: vec![i64::MAX, 3] })
    );
}

fn any_supported_data_type() -> impl Strategy<Value = DataType> {
    prop::sample::select(PROTO_AT_DTYPE_MAP.iter().map(|(key, _)| *key).collect::<Vec<_>>())
}

/// The exact byte size computed in 128 bits, or `None` when it does not fit in `u64`. The shape
/// must be non-negative.
fn exact_n_bytes(shape: &[i64], item_size: u64) -> Option<u64> {
    if shape.contains(&0) {
        return Some(0);
    }
    let mut product = u128::from(item_size);
    for &dim in shape {
        // Every dimension is at least 1 here, so once the product leaves u64 it stays out.
        product = product.checked_mul(u128::try_from(dim).ok()?)?;
        u64::try_from(product).ok()?;
    }
    u64::try_from(product).ok()
}

proptest! {
    #[test]
    fn n_bytes_is_item_size_times_element_count(
        shape in prop::collection::vec(0i64..=4096, 0..6),
        data_type in any_supported_data_type(),
    ) {
        let item_size = scalar_type_of(data_type).unwrap().item_size();
        let expected = exact_n_bytes(&shape, item_size).expect("small shapes do not overflow");
        prop_assert_eq!(n_bytes(&shape, data_type), Ok(expected));
        prop_assert_eq!(n_elements(&shape).map(|n| n * item_size), Ok(expected));
    }

    #[test]
    fn n_bytes_is_exact_or_an_error_for_any_shape(
        shape in prop::collection::vec(prop_oneof![any::<i64>(), -4i64..=4, Just(i64::MAX)], 0..8),
        data_type in any_supported_data_type(),
        batch in prop::option::of(any::<i64>()),
    ) {
        let item_size = scalar_type_of(data_type).unwrap().item_size();
        let result = n_bytes_with_batch(&shape, data_type, batch);
        let effective: Option<Vec<i64>> = match batch {
            None => Some(shape.clone()),
            Some(b) if b >= 0 && !shape.is_empty() => {
                Some(std::iter::once(b).chain(shape[1..].iter().copied()).collect())
            }
            Some(_) => None,
        };
        match effective {
            None => {
                let rejected = matches!(
                    result,
                    Err(DtypeError::NegativeBatch { .. }
                        | DtypeError::ScalarWithDynamicBatch { .. })
                );
                prop_assert!(rejected, "expected a batch error, got {:?}", result);
            }
            Some(effective) => {
                if let Some(index) = effective.iter().position(|&d| d < 0) {
                    prop_assert_eq!(
                        result,
                        Err(DtypeError::NegativeDimension { index, value: effective[index] })
                    );
                } else {
                    match exact_n_bytes(&effective, item_size) {
                        Some(expected) => prop_assert_eq!(result, Ok(expected)),
                        None => prop_assert_eq!(
                            result,
                            Err(DtypeError::ByteSizeOverflow { shape: effective, item_size })
                        ),
                    }
                }
            }
        }
    }

    #[test]
    fn nrt_codes_round_trip_under_both_numberings(
        code in any::<u32>(),
        hardware in any::<bool>(),
    ) {
        let numbering =
            if hardware { DtypeNumbering::Hardware2026 } else { DtypeNumbering::Legacy };
        prop_assert_eq!(NrtDtype::from_code(numbering, code).code(numbering), Some(code));
    }
}
