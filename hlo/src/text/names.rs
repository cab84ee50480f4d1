//! The spellings of element types and opcodes in HLO text, and the instruction names XLA's
//! text parser gives a module.

use std::collections::{BTreeMap, BTreeSet};

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

/// Whether `opcode` is one XLA's text form knows (see [`crate::opcodes`]).
pub(crate) fn is_opcode(opcode: &str) -> bool {
    crate::opcodes::support(opcode).is_some()
}

/// The words of the text form a name may not be written bare as: XLA's parser reads a bare
/// `ROOT` or `ENTRY` where a name is expected as the keyword ("expects name"), and takes
/// `%ROOT` as the name. The printer writes such a name with its `%`.
pub(crate) const KEYWORDS: &[&str] = &["ROOT", "ENTRY", "HloModule"];

/// The names XLA's text parser gives a module's instructions: one namespace for the whole
/// module (XLA's proto reader refuses a name used twice, although the text scopes names to their
/// computation), each name taken in text order and renamed only when it must be.
///
/// A name is first made a valid identifier (a first character that is not a letter or `_`
/// becomes `_`; a type name such as `f32` gets a trailing `_`; a leading `__` not followed by
/// `xla_` becomes `a_`), then split into a stem and a number when it ends in `.` and an integer
/// (`add.3` is `add` and 3; without such an ending the number is 0). A number not yet taken for
/// its stem is kept, written in canonical form (`add.03` becomes `add.3`); a taken one is
/// replaced by the lowest number the stem has not given out, counting on from the last one given
/// out. Number 0 is written only when the name had a number (`add` stays `add`, `add.0` stays
/// `add.0`, and a second `add` becomes `add.1`). Applied to names it produced, it changes
/// nothing, so printing and parsing agree.
#[derive(Debug, Default)]
pub(crate) struct InstructionNames {
    /// Per stem: the numbers taken, and the next number to try when one is taken.
    stems: BTreeMap<String, (BTreeSet<i64>, i64)>,
}

impl InstructionNames {
    /// The name the next instruction named `name` gets.
    pub(crate) fn unique(&mut self, name: &str) -> String {
        let name = valid_identifier(if name.is_empty() { "name" } else { name });
        let (stem, number) = match name.rfind('.') {
            Some(dot) if dot > 0 && dot + 1 < name.len() => match name[dot + 1..].parse::<i64>() {
                Ok(number) => (&name[..dot], Some(number)),
                Err(_) => (name.as_str(), None),
            },
            _ => (name.as_str(), None),
        };
        let (taken, next) = self.stems.entry(stem.to_string()).or_default();
        let wanted = number.unwrap_or(0);
        let given = if taken.insert(wanted) {
            wanted
        } else {
            while !taken.insert(*next) {
                *next += 1;
            }
            *next += 1;
            *next - 1
        };
        if given == 0 && number.is_none() { stem.to_string() } else { format!("{stem}.{given}") }
    }
}

/// `name` as an identifier XLA's uniquer accepts, as described at [`InstructionNames`].
fn valid_identifier(name: &str) -> String {
    let mut out: String = name
        .chars()
        .enumerate()
        .map(|(k, c)| {
            let allowed = if k == 0 {
                c.is_ascii_alphabetic() || c == '_'
            } else {
                c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')
            };
            if allowed { c } else { '_' }
        })
        .collect();
    // Every element type's name is a keyword of the text, bar `tuple`.
    if type_from_name(&out).is_some() || matches!(out.as_str(), "opaque_type" | "buffer") {
        out.push('_');
    }
    if out.starts_with("__") && !out.starts_with("__xla_") {
        out.replace_range(0..1, "a");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::InstructionNames;

    /// Each name in order, and what it becomes; worked out by hand from the rules.
    fn check(names: &[&str], expect: &[&str]) {
        let mut unique = InstructionNames::default();
        let got: Vec<String> = names.iter().map(|n| unique.unique(n)).collect();
        assert_eq!(got, expect, "{names:?}");
        let mut again = InstructionNames::default();
        let twice: Vec<String> = got.iter().map(|n| again.unique(n)).collect();
        assert_eq!(twice, got, "renaming its own names changes nothing");
    }

    #[test]
    fn repeated_names_get_the_lowest_free_number() {
        check(&["x", "x", "x"], &["x", "x.1", "x.2"]);
        check(&["x.1", "x", "x"], &["x.1", "x", "x.2"]);
        check(&["add.3", "add.3", "add.0", "add"], &["add.3", "add.0", "add.1", "add.2"]);
        check(&["x", "x.0"], &["x", "x.1"]);
        check(&["a.b.2", "a.b.2"], &["a.b.2", "a.b.0"]);
    }

    #[test]
    fn unique_names_are_kept_in_canonical_form() {
        check(&["p0", "add.03", "x.", "v0-y.2", "x.-1"], &["p0", "add.3", "x.", "v0-y.2", "x.-1"]);
    }

    #[test]
    fn names_are_made_identifiers() {
        check(
            &["1x", ".5", "f32", "tuple", "__a", "__xla_a", "token"],
            &["_x", "_5", "f32_", "tuple", "a_a", "__xla_a", "token_"],
        );
    }

    #[test]
    fn every_type_name_maps_back() {
        for (ty, name) in super::TYPES {
            assert_eq!(super::type_from_name(name), Some(*ty));
            assert_eq!(super::type_name(*ty), Some(*name));
        }
    }
}
