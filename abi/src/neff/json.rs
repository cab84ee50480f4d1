//! Reading NEFF JSON members into typed serde structs, with errors that name the member, the
//! field, what was expected and what came.
//!
//! Design choices:
//! - A member is parsed once into a `serde_json::Value`, then read into the reader's structs by
//!   [`read`]: serde's derive says what each field must be, `serde_path_to_error` says where the
//!   refused value sits, so no reader keeps paths by hand.
//! - [`ValueDeserializer`] reads a `&Value` with this module's error type, so an error carries
//!   what was expected (the visitor's own words, like "a non-negative integer") and the refused
//!   value as JSON text (`"zero"`, `1.5`, `[]`), not serde's description of it (`string "zero"`).
//!   The innermost value an error passes through is the one it names.
//! - A missing optional field and `null` are both `None`; a present field of the wrong shape is an
//!   error. Real files vary in what they include, but a field that is there and malformed means
//!   the reader would otherwise guess. A missing required field is reported at its own path
//!   (`var.x.type`), found "absent".
//! - An object is read only from a JSON object (serde's derive would also take an array for a
//!   struct); unknown fields are ignored.
//! - The leaf types here ([`NonNegative`], [`U32`], [`Integer`], [`Text`], [`List`],
//!   [`Entries`], [`Tagged`]) carry the expected texts, so every member reads the same way.

use std::fmt;
use std::marker::PhantomData;

use serde::de::value::{BorrowedStrDeserializer, MapDeserializer, SeqDeserializer};
use serde::de::{
    self, Deserialize, DeserializeOwned, Deserializer, Expected, IgnoredAny, IntoDeserializer,
    MapAccess, SeqAccess, Unexpected, Visitor,
};
use serde_json::Value;

use super::NeffError;

/// Parses a member as JSON.
pub(crate) fn parse_member(member: &str, bytes: &[u8]) -> Result<Value, NeffError> {
    serde_json::from_slice(bytes).map_err(|error| NeffError::InvalidJson {
        member: member.to_owned(),
        detail: error.to_string(),
    })
}

/// Reads a parsed member into `T`; an error names the member and the path of the refused value.
///
/// The path is tracked only when the first, untracked reading fails: the reading is
/// deterministic, so the second one fails at the same value, and a valid member does not pay
/// for `serde_path_to_error`'s copy of every key (with it, `benches/neff_json.rs` measured
/// `Neff::parse` at 2.1× the bare JSON parse; without it 1.7×, as the hand-written reader was).
pub(crate) fn read<T: DeserializeOwned>(member: &str, value: &Value) -> Result<T, NeffError> {
    if let Ok(read) = T::deserialize(ValueDeserializer(value)) {
        return Ok(read);
    }
    serde_path_to_error::deserialize(ValueDeserializer(value)).map_err(|error| {
        let mut field = match error.path().iter().next() {
            None => String::new(),
            Some(_) => error.path().to_string(),
        };
        let error = error.into_inner();
        if let Some(name) = error.missing {
            if !field.is_empty() {
                field.push('.');
            }
            field.push_str(name);
        }
        if field.is_empty() {
            field.push_str("(root)");
        }
        NeffError::MalformedField {
            member: member.to_owned(),
            field,
            expected: error.expected,
            found: error.found.unwrap_or_default(),
        }
    })
}

/// The error for a value that the structs accept but a later check refuses (a node index out of
/// range); `found` is shortened for the message.
pub(crate) fn malformed(member: &str, field: &str, expected: &str, found: &Value) -> NeffError {
    NeffError::MalformedField {
        member: member.to_owned(),
        field: field.to_owned(),
        expected: expected.to_owned(),
        found: shortened(found),
    }
}

/// A value as JSON text, cut to 57 characters and `...` when longer than 60.
fn shortened(value: &Value) -> String {
    let mut text = value.to_string();
    if text.len() > 60 {
        let mut cut = 57;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str("...");
    }
    text
}

/// What a deserialization refused: the words of the visitor that refused it, the value (filled in
/// by the innermost [`ValueDeserializer`] the error passes) and, for a missing required field, its
/// name.
#[derive(Debug)]
pub(crate) struct JsonError {
    expected: String,
    found: Option<String>,
    missing: Option<&'static str>,
}

impl fmt::Display for JsonError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let found = self.found.as_deref().unwrap_or("a value");
        write!(formatter, "{found}, expected {}", self.expected)
    }
}

impl std::error::Error for JsonError {}

impl de::Error for JsonError {
    fn custom<T: fmt::Display>(message: T) -> JsonError {
        JsonError { expected: message.to_string(), found: None, missing: None }
    }

    fn invalid_type(_: Unexpected<'_>, expected: &dyn Expected) -> JsonError {
        JsonError { expected: expected.to_string(), found: None, missing: None }
    }

    fn invalid_value(_: Unexpected<'_>, expected: &dyn Expected) -> JsonError {
        JsonError { expected: expected.to_string(), found: None, missing: None }
    }

    fn invalid_length(_: usize, expected: &dyn Expected) -> JsonError {
        JsonError { expected: expected.to_string(), found: None, missing: None }
    }

    fn missing_field(field: &'static str) -> JsonError {
        JsonError {
            expected: "a required field".to_owned(),
            found: Some("absent".to_owned()),
            missing: Some(field),
        }
    }
}

/// A deserializer over a parsed JSON value whose errors are [`JsonError`]s naming that value.
#[derive(Clone, Copy)]
pub(crate) struct ValueDeserializer<'v>(&'v Value);

impl<'v> ValueDeserializer<'v> {
    /// Names this value in an error that does not name one yet.
    fn naming<T>(self, result: Result<T, JsonError>) -> Result<T, JsonError> {
        result.map_err(|mut error| {
            if error.found.is_none() {
                error.found = Some(shortened(self.0));
            }
            error
        })
    }

    fn visit<V: Visitor<'v>>(self, visitor: V) -> Result<V::Value, JsonError> {
        match self.0 {
            Value::Null => visitor.visit_unit(),
            Value::Bool(flag) => visitor.visit_bool(*flag),
            Value::Number(number) => match (number.as_u64(), number.as_i64()) {
                (Some(unsigned), _) => visitor.visit_u64(unsigned),
                (None, Some(signed)) => visitor.visit_i64(signed),
                (None, None) => visitor.visit_f64(number.as_f64().unwrap_or(f64::NAN)),
            },
            Value::String(text) => visitor.visit_borrowed_str(text),
            Value::Array(items) => {
                let mut seq = SeqDeserializer::new(items.iter().map(ValueDeserializer));
                let value = visitor.visit_seq(&mut seq)?;
                seq.end()?;
                Ok(value)
            }
            Value::Object(entries) => {
                let mut map = MapDeserializer::new(entries.iter().map(|(key, value)| {
                    (BorrowedStrDeserializer::new(key.as_str()), ValueDeserializer(value))
                }));
                let value = visitor.visit_map(&mut map)?;
                map.end()?;
                Ok(value)
            }
        }
    }
}

impl<'v> IntoDeserializer<'v, JsonError> for ValueDeserializer<'v> {
    type Deserializer = ValueDeserializer<'v>;

    fn into_deserializer(self) -> ValueDeserializer<'v> {
        self
    }
}

impl<'de> Deserializer<'de> for ValueDeserializer<'de> {
    type Error = JsonError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JsonError> {
        self.naming(self.visit(visitor))
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JsonError> {
        match self.0 {
            Value::Null => self.naming(visitor.visit_none()),
            _ => self.naming(visitor.visit_some(self)),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, JsonError> {
        match self.0 {
            Value::Object(_) => self.deserialize_any(visitor),
            _ => self
                .naming(Err(de::Error::invalid_type(Unexpected::Other("a non-object"), &visitor))),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf unit
        unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
    }
}

/// Declares a leaf type: its visitor says `$expected` and accepts only what its `visit_*`
/// methods take (serde's defaults refuse the rest).
macro_rules! leaf {
    ($(#[$doc:meta])* $name:ident($inner:ty), $expected:literal,
     $(fn $method:ident($value:ident: $arg:ty) $body:block)+) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, Eq)]
        pub(crate) struct $name(pub(crate) $inner);

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<$name, D::Error> {
                struct LeafVisitor;
                impl Visitor<'_> for LeafVisitor {
                    type Value = $name;
                    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                        formatter.write_str($expected)
                    }
                    $(fn $method<E: de::Error>(self, $value: $arg) -> Result<$name, E> {
                        let inner: Result<$inner, Unexpected<'_>> = $body;
                        inner.map($name).map_err(|unexpected| E::invalid_value(unexpected, &self))
                    })+
                }
                deserializer.deserialize_any(LeafVisitor)
            }
        }
    };
}

leaf!(
    /// A non-negative integer.
    NonNegative(u64), "a non-negative integer",
    fn visit_u64(value: u64) { Ok(value) }
);
leaf!(
    /// A non-negative integer that fits 32 bits (a var_id).
    U32(u32), "an integer in 0..2^32",
    fn visit_u64(value: u64) { u32::try_from(value).map_err(|_| Unexpected::Unsigned(value)) }
);
leaf!(
    /// An integer of either sign (a shape dimension; negative ones are kept as written).
    Integer(i64), "an integer",
    fn visit_i64(value: i64) { Ok(value) }
    fn visit_u64(value: u64) { i64::try_from(value).map_err(|_| Unexpected::Unsigned(value)) }
);
leaf!(
    /// A string.
    Text(String), "a string",
    fn visit_str(text: &str) { Ok(text.to_owned()) }
);

/// A JSON array whose every item is a `T`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct List<T>(pub(crate) Vec<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for List<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<List<T>, D::Error> {
        struct ListVisitor<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for ListVisitor<T> {
            type Value = List<T>;
            fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str("an array")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<List<T>, A::Error> {
                // The items already sit in the parsed value, so this list is no larger than it.
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(List(items))
            }
        }
        deserializer.deserialize_any(ListVisitor(PhantomData))
    }
}

/// A JSON object read as `(key, value)` entries in the object's order. With `SKIP_COMMENTS`,
/// keys starting with `#` are comments and their values are not read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Entries<T, const SKIP_COMMENTS: bool = false>(pub(crate) Vec<(String, T)>);

impl<'de, T: Deserialize<'de>, const SKIP_COMMENTS: bool> Deserialize<'de>
    for Entries<T, SKIP_COMMENTS>
{
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct EntriesVisitor<T, const SKIP_COMMENTS: bool>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>, const SKIP_COMMENTS: bool> Visitor<'de>
            for EntriesVisitor<T, SKIP_COMMENTS>
        {
            type Value = Entries<T, SKIP_COMMENTS>;
            fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut entries = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    if SKIP_COMMENTS && key.starts_with('#') {
                        map.next_value::<IgnoredAny>()?;
                    } else {
                        let value = map.next_value()?;
                        entries.push((key, value));
                    }
                }
                Ok(Entries(entries))
            }
        }
        deserializer.deserialize_any(EntriesVisitor(PhantomData))
    }
}

/// The tag of a [`Tagged`] list.
pub(crate) trait Tag {
    /// The tag, such as `list_shape`.
    const TAG: &'static str;
}

/// A tagged list `[tag, [items]]` (the graph form of `neff.json` writes its attributes so).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Tagged<T, G>(pub(crate) Vec<T>, PhantomData<G>);

impl<'de, T: Deserialize<'de>, G: Tag> Deserialize<'de> for Tagged<T, G> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Tagged<T, G>, D::Error> {
        struct TaggedVisitor<T, G>(PhantomData<(T, G)>);
        impl<'de, T: Deserialize<'de>, G: Tag> Visitor<'de> for TaggedVisitor<T, G> {
            type Value = Tagged<T, G>;
            fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(formatter, "a tagged list [\"{}\", [items]]", G::TAG)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let refused = |visitor: &Self| {
                    <A::Error as de::Error>::invalid_value(Unexpected::Seq, visitor)
                };
                let tag = seq.next_element::<Value>()?;
                if tag.as_ref().and_then(Value::as_str) != Some(G::TAG) {
                    return Err(refused(&self));
                }
                let Some(List(items)) = seq.next_element::<List<T>>()? else {
                    return Err(refused(&self));
                };
                if seq.next_element::<IgnoredAny>()?.is_some() {
                    return Err(refused(&self));
                }
                Ok(Tagged(items, PhantomData))
            }
        }
        deserializer.deserialize_any(TaggedVisitor(PhantomData))
    }
}
