//! `kbin_mr_type`: the kind of memory reference a NEFF variable becomes on the device.
//!
//! Design choices:
//! - One macro row per type holds its number, its C name and its `def.json` type string, so the
//!   three can never disagree, and the `def.json` ↔ `MrType` mapping lives in this one table.
//! - `dge-table` → [`MrType::PtrTable`] (10) is the most likely reading of libnrt (a table filled
//!   with the addresses of the var_ids in `list`), not a certainty: [`MrType::List`] (9) is the
//!   other candidate. It is to be pinned on a device; changing it means changing one row here.
//! - [`MrType::Invalid`] and [`MrType::BufferStaged`] have no `def.json` type: the first is the
//!   zero value, the second is produced by the runtime, not written by compilers.

/// Declares the enum and its tables from one list of rows.
macro_rules! mr_types {
    ($($(#[$doc:meta])* $variant:ident = $id:literal, $name:literal, $def_type:expr;)*) => {
        /// A `kbin_mr_type` value.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum MrType {
            $($(#[$doc])* $variant,)*
        }

        impl MrType {
            /// Every type, in number order.
            pub const ALL: &'static [MrType] = &[$(MrType::$variant,)*];

            /// The C enum value.
            pub fn id(self) -> u32 {
                match self {
                    $(MrType::$variant => $id,)*
                }
            }

            /// The C name, such as `MR_INPUT`.
            pub fn name(self) -> &'static str {
                match self {
                    $(MrType::$variant => $name,)*
                }
            }

            /// The `def.json` `type` string that compilers write for this type, if any.
            pub fn def_type(self) -> Option<&'static str> {
                match self {
                    $(MrType::$variant => $def_type,)*
                }
            }
        }
    };
}

mr_types! {
    /// The zero value; never a real variable.
    Invalid = 0, "MR_INVALID", None;
    /// On-chip state buffer (`state-buffer`).
    Sb = 1, "MR_SB", Some("state-buffer");
    /// A buffer staged by the runtime; no `def.json` type.
    BufferStaged = 2, "MR_BUFFER_STAGED", None;
    /// A constant from the tar, staged to HBM at load (`file`).
    Buffer = 3, "MR_BUFFER", Some("file");
    /// Scratch memory (`tmp-buf`).
    TmpBuf = 4, "MR_TMP_BUF", Some("tmp-buf");
    /// A model input, resolved at execute (`input`).
    Input = 5, "MR_INPUT", Some("input");
    /// A model output, resolved at execute (`output`).
    Output = 6, "MR_OUTPUT", Some("output");
    /// An 8-byte pointer to another variable (`pointer`).
    Ptr = 7, "MR_PTR", Some("pointer");
    /// A window at `backing_variable_off` in a shared scratchpad (`virtual`).
    VirtualTmpBuf = 8, "MR_VIRTUAL_TMP_BUF", Some("virtual");
    /// A list (`list`); seen in libnrt's parser, not in the public type list.
    List = 9, "MR_LIST", Some("list");
    /// A table of variable addresses (`dge-table`, most likely; see the module docs).
    PtrTable = 10, "MR_PTR_TABLE", Some("dge-table");
    /// Memory on another device (`remote`).
    Remote = 11, "MR_REMOTE", Some("remote");
}

impl MrType {
    /// The type for a C enum value.
    pub fn from_id(id: u32) -> Option<MrType> {
        MrType::ALL.iter().copied().find(|mr_type| mr_type.id() == id)
    }

    /// The type for a `def.json` `type` string; `None` for a string this table does not know.
    pub fn from_def_type(def_type: &str) -> Option<MrType> {
        MrType::ALL.iter().copied().find(|mr_type| mr_type.def_type() == Some(def_type))
    }

    /// Whether libnrt stages this type at load time (the others resolve at execute).
    pub fn is_staged_at_load(self) -> bool {
        matches!(self, MrType::Sb | MrType::Buffer | MrType::TmpBuf | MrType::VirtualTmpBuf)
    }

    /// The known `def.json` type strings, comma-separated, for error messages.
    pub(crate) fn known_def_types() -> String {
        MrType::ALL.iter().filter_map(|mr_type| mr_type.def_type()).collect::<Vec<_>>().join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_dense_and_round_trip() {
        for (idx, mr_type) in MrType::ALL.iter().enumerate() {
            assert_eq!(mr_type.id() as usize, idx);
            assert_eq!(MrType::from_id(mr_type.id()), Some(*mr_type));
            if let Some(def_type) = mr_type.def_type() {
                assert_eq!(MrType::from_def_type(def_type), Some(*mr_type));
            }
        }
        assert_eq!(MrType::from_id(12), None);
    }

    #[test]
    fn def_types_map_as_abi_facts_says() {
        let expect = [
            ("state-buffer", "MR_SB", 1),
            ("file", "MR_BUFFER", 3),
            ("tmp-buf", "MR_TMP_BUF", 4),
            ("input", "MR_INPUT", 5),
            ("output", "MR_OUTPUT", 6),
            ("pointer", "MR_PTR", 7),
            ("virtual", "MR_VIRTUAL_TMP_BUF", 8),
            ("list", "MR_LIST", 9),
            ("dge-table", "MR_PTR_TABLE", 10),
            ("remote", "MR_REMOTE", 11),
        ];
        for (def_type, name, id) in expect {
            let mr_type = MrType::from_def_type(def_type);
            assert_eq!(mr_type.map(|mr_type| (mr_type.name(), mr_type.id())), Some((name, id)));
        }
        assert_eq!(MrType::from_def_type("semaphore"), None);
    }
}
