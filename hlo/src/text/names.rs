//! The spellings of element types and opcodes in HLO text.

use crate::proto::PrimitiveType;

/// Every element type with its text spelling (`f32`, `pred`, ...). Tuples are written with
/// parentheses and have no spelling here.
const TYPES: &[(PrimitiveType, &str)] = &[
    (PrimitiveType::Pred, "pred"),
    (PrimitiveType::S1, "s1"),
    (PrimitiveType::S2, "s2"),
    (PrimitiveType::S4, "s4"),
    (PrimitiveType::S8, "s8"),
    (PrimitiveType::S16, "s16"),
    (PrimitiveType::S32, "s32"),
    (PrimitiveType::S64, "s64"),
    (PrimitiveType::U1, "u1"),
    (PrimitiveType::U2, "u2"),
    (PrimitiveType::U4, "u4"),
    (PrimitiveType::U8, "u8"),
    (PrimitiveType::U16, "u16"),
    (PrimitiveType::U32, "u32"),
    (PrimitiveType::U64, "u64"),
    (PrimitiveType::F16, "f16"),
    (PrimitiveType::F32, "f32"),
    (PrimitiveType::Bf16, "bf16"),
    (PrimitiveType::F64, "f64"),
    (PrimitiveType::F8e5m2, "f8e5m2"),
    (PrimitiveType::F8e4m3, "f8e4m3"),
    (PrimitiveType::F8e4m3fn, "f8e4m3fn"),
    (PrimitiveType::F8e4m3b11fnuz, "f8e4m3b11fnuz"),
    (PrimitiveType::F8e3m4, "f8e3m4"),
    (PrimitiveType::F8e5m2fnuz, "f8e5m2fnuz"),
    (PrimitiveType::F8e4m3fnuz, "f8e4m3fnuz"),
    (PrimitiveType::F4e2m1fn, "f4e2m1fn"),
    (PrimitiveType::F8e8m0fnu, "f8e8m0fnu"),
    (PrimitiveType::C64, "c64"),
    (PrimitiveType::C128, "c128"),
    (PrimitiveType::OpaqueType, "opaque"),
    (PrimitiveType::Token, "token"),
];

/// The element type spelled `name`, if any.
pub(crate) fn type_from_name(name: &str) -> Option<PrimitiveType> {
    TYPES.iter().find(|(_, n)| *n == name).map(|(t, _)| *t)
}

/// The text spelling of `ty`; `None` for TUPLE, BUFFER and the invalid type.
pub(crate) fn type_name(ty: PrimitiveType) -> Option<&'static str> {
    TYPES.iter().find(|(t, _)| *t == ty).map(|(_, n)| *n)
}

/// Every opcode XLA's text form knows. An instruction with another opcode is a parse error that
/// names it: the attributes of an instruction are read according to its opcode, so guessing at an
/// unknown one could silently mean the wrong thing.
pub(crate) const OPCODES: &[&str] = &[
    "abs",
    "add",
    "add-dependency",
    "after-all",
    "all-gather",
    "all-gather-done",
    "all-gather-start",
    "all-reduce",
    "all-reduce-done",
    "all-reduce-start",
    "all-to-all",
    "and",
    "async-done",
    "async-start",
    "async-update",
    "atan2",
    "batch-norm-grad",
    "batch-norm-inference",
    "batch-norm-training",
    "bitcast",
    "bitcast-convert",
    "broadcast",
    "call",
    "cbrt",
    "ceil",
    "cholesky",
    "clamp",
    "collective-broadcast",
    "collective-permute",
    "collective-permute-done",
    "collective-permute-start",
    "compare",
    "complex",
    "concatenate",
    "conditional",
    "constant",
    "convert",
    "convolution",
    "copy",
    "copy-done",
    "copy-start",
    "cosine",
    "count-leading-zeros",
    "custom-call",
    "divide",
    "domain",
    "dot",
    "dynamic-reshape",
    "dynamic-slice",
    "dynamic-update-slice",
    "erf",
    "exponential",
    "exponential-minus-one",
    "fft",
    "floor",
    "fusion",
    "gather",
    "get-dimension-size",
    "get-tuple-element",
    "imag",
    "infeed",
    "iota",
    "is-finite",
    "log",
    "log-plus-one",
    "logistic",
    "map",
    "maximum",
    "minimum",
    "multiply",
    "negate",
    "not",
    "opt-barrier",
    "or",
    "outfeed",
    "pad",
    "parameter",
    "partition-id",
    "popcnt",
    "power",
    "ragged-all-to-all",
    "ragged-dot",
    "real",
    "recv",
    "recv-done",
    "reduce",
    "reduce-precision",
    "reduce-scatter",
    "reduce-window",
    "remainder",
    "replica-id",
    "reshape",
    "reverse",
    "rng",
    "rng-bit-generator",
    "rng-get-and-update-state",
    "round-nearest-afz",
    "round-nearest-even",
    "rsqrt",
    "scatter",
    "select",
    "select-and-scatter",
    "send",
    "send-done",
    "set-dimension-size",
    "shift-left",
    "shift-right-arithmetic",
    "shift-right-logical",
    "sign",
    "sine",
    "slice",
    "sort",
    "sqrt",
    "stochastic-convert",
    "subtract",
    "tan",
    "tanh",
    "topk",
    "transpose",
    "triangular-solve",
    "tuple",
    "while",
    "xor",
];

/// Whether `opcode` is one XLA's text form knows.
pub(crate) fn is_opcode(opcode: &str) -> bool {
    OPCODES.binary_search(&opcode).is_ok()
}

/// The words of the text form a name may not be written bare as: XLA's parser reads a bare
/// `ROOT` or `ENTRY` where a name is expected as the keyword ("expects name"), and takes
/// `%ROOT` as the name. The printer writes such a name with its `%`.
pub(crate) const KEYWORDS: &[&str] = &["ROOT", "ENTRY", "HloModule"];

#[cfg(test)]
mod tests {
    #[test]
    fn opcodes_are_sorted_for_binary_search() {
        assert!(super::OPCODES.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn every_type_name_maps_back() {
        for (ty, name) in super::TYPES {
            assert_eq!(super::type_from_name(name), Some(*ty));
            assert_eq!(super::type_name(*ty), Some(*name));
        }
    }
}
