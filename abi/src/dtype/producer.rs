//! XLA primitive types and the producers' maps from them to metaneff DataType (docs/abi-facts.md §2).
//!
//! A producer lowers a graph to HLO, then writes one MetaTensor per parameter and result, taking
//! the data_type from the HLO element type through its own table. The tables collapse types the
//! metaneff enum cannot spell (unsigned 32/64-bit) and differ between producers:
//! - torch-neuronx: U32→INT32, U64→INT64, PRED→BOOL, fp8 types to the fp8 DataTypes;
//! - transformers-neuronx: PRED→UINT8 and F8E4M3FN→INT8. docs/abi-facts.md §2 names only
//!   these two differences, so its other rows are taken to be torch-neuronx's.
//!
//! Both tables are columns of one row per XLA type, so they cover the same names.

use std::fmt;

use super::DataType;

/// A producer of metaneff files, which decides how XLA types become metaneff DataTypes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Producer {
    /// torch-neuronx (and neuronx-distributed, which writes through it).
    TorchNeuronx,
    /// transformers-neuronx.
    TransformersNeuronx,
}

/// Declares the XLA type enum with its name and both producers' DataTypes in one row each.
macro_rules! xla_primitive_types {
    ($($variant:ident = $name:literal, torch_neuronx $torch:ident, transformers_neuronx $transformers:ident;)*) => {
        /// An XLA primitive (element) type, by its HLO name.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum XlaPrimitiveType {
            $(#[doc = concat!("`", $name, "`.")] $variant,)*
        }

        impl XlaPrimitiveType {
            /// Every XLA type the producers map.
            pub const ALL: &'static [XlaPrimitiveType] = &[$(XlaPrimitiveType::$variant,)*];

            /// The HLO name, e.g. `"F32"`, `"PRED"`, `"F8E4M3FN"`.
            pub fn name(self) -> &'static str {
                match self {
                    $(XlaPrimitiveType::$variant => $name,)*
                }
            }
        }

        impl Producer {
            /// The metaneff DataType this producer writes for an XLA type.
            pub fn data_type_of(self, xla_type: XlaPrimitiveType) -> DataType {
                match (self, xla_type) {
                    $((Producer::TorchNeuronx, XlaPrimitiveType::$variant) => DataType::$torch,)*
                    $((Producer::TransformersNeuronx, XlaPrimitiveType::$variant) => DataType::$transformers,)*
                }
            }
        }
    };
}

xla_primitive_types! {
    Pred = "PRED", torch_neuronx Bool, transformers_neuronx Uint8;
    S8 = "S8", torch_neuronx Int8, transformers_neuronx Int8;
    S16 = "S16", torch_neuronx Int16, transformers_neuronx Int16;
    S32 = "S32", torch_neuronx Int32, transformers_neuronx Int32;
    S64 = "S64", torch_neuronx Int64, transformers_neuronx Int64;
    U8 = "U8", torch_neuronx Uint8, transformers_neuronx Uint8;
    U16 = "U16", torch_neuronx Uint16, transformers_neuronx Uint16;
    U32 = "U32", torch_neuronx Int32, transformers_neuronx Int32;
    U64 = "U64", torch_neuronx Int64, transformers_neuronx Int64;
    F16 = "F16", torch_neuronx Float16, transformers_neuronx Float16;
    F32 = "F32", torch_neuronx Float, transformers_neuronx Float;
    F64 = "F64", torch_neuronx Double, transformers_neuronx Double;
    Bf16 = "BF16", torch_neuronx Bfloat16, transformers_neuronx Bfloat16;
    F8e4m3fn = "F8E4M3FN", torch_neuronx F8e4m3fn, transformers_neuronx Int8;
    F8e5m2 = "F8E5M2", torch_neuronx F8e5m2, transformers_neuronx Int8;
}

impl XlaPrimitiveType {
    /// The HLO names, for error messages.
    pub(super) fn expected_names() -> String {
        XlaPrimitiveType::ALL.iter().map(|t| t.name()).collect::<Vec<_>>().join(", ")
    }
}

impl fmt::Display for XlaPrimitiveType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
