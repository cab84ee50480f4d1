//! Small helpers to read NEFF JSON members with errors that name the member and the field.
//!
//! Design choice: a missing optional field is `Ok(None)`, a present field of the wrong shape is
//! an error. Real files vary in what they include, but a field that is there and malformed means
//! the reader would otherwise guess.

use serde_json::{Map, Value};

use super::NeffError;

/// Parses a member as JSON.
pub(crate) fn parse_member(member: &str, bytes: &[u8]) -> Result<Value, NeffError> {
    serde_json::from_slice(bytes).map_err(|error| NeffError::InvalidJson {
        member: member.to_owned(),
        detail: error.to_string(),
    })
}

/// The error for a present field of the wrong shape; `found` is shortened for the message.
pub(crate) fn malformed(
    member: &str,
    field: &str,
    expected: &'static str,
    found: &Value,
) -> NeffError {
    let mut found = found.to_string();
    if found.len() > 60 {
        let mut cut = 57;
        while !found.is_char_boundary(cut) {
            cut -= 1;
        }
        found.truncate(cut);
        found.push_str("...");
    }
    NeffError::MalformedField {
        member: member.to_owned(),
        field: field.to_owned(),
        expected,
        found,
    }
}

/// Where a field is read from, for error messages.
pub(crate) struct FieldContext<'a> {
    pub(crate) member: &'a str,
    pub(crate) path: String,
}

impl FieldContext<'_> {
    fn field(&self, key: &str) -> String {
        if self.path.is_empty() { key.to_owned() } else { format!("{}.{key}", self.path) }
    }

    /// An object field that must be an object when present.
    pub(crate) fn object<'v>(
        &self,
        object: &'v Map<String, Value>,
        key: &str,
    ) -> Result<Option<&'v Map<String, Value>>, NeffError> {
        match object.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Object(inner)) => Ok(Some(inner)),
            Some(other) => Err(malformed(self.member, &self.field(key), "an object", other)),
        }
    }

    /// An array field.
    pub(crate) fn array<'v>(
        &self,
        object: &'v Map<String, Value>,
        key: &str,
    ) -> Result<Option<&'v Vec<Value>>, NeffError> {
        match object.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(inner)) => Ok(Some(inner)),
            Some(other) => Err(malformed(self.member, &self.field(key), "an array", other)),
        }
    }

    /// A string field.
    pub(crate) fn string(
        &self,
        object: &Map<String, Value>,
        key: &str,
    ) -> Result<Option<String>, NeffError> {
        match object.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => Ok(Some(text.clone())),
            Some(other) => Err(malformed(self.member, &self.field(key), "a string", other)),
        }
    }

    /// A non-negative integer field.
    pub(crate) fn u64(
        &self,
        object: &Map<String, Value>,
        key: &str,
    ) -> Result<Option<u64>, NeffError> {
        match object.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => value.as_u64().map(Some).ok_or_else(|| {
                malformed(self.member, &self.field(key), "a non-negative integer", value)
            }),
        }
    }

    /// A non-negative integer field that fits 32 bits.
    pub(crate) fn u32(
        &self,
        object: &Map<String, Value>,
        key: &str,
    ) -> Result<Option<u32>, NeffError> {
        match object.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => {
                value.as_u64().and_then(|number| u32::try_from(number).ok()).map(Some).ok_or_else(
                    || malformed(self.member, &self.field(key), "an integer in 0..2^32", value),
                )
            }
        }
    }

    /// An array of non-negative integers.
    pub(crate) fn u64_list(
        &self,
        object: &Map<String, Value>,
        key: &str,
    ) -> Result<Option<Vec<u64>>, NeffError> {
        let Some(items) = self.array(object, key)? else {
            return Ok(None);
        };
        u64_items(self.member, &self.field(key), items).map(Some)
    }
}

/// Every item of an array as a non-negative integer.
pub(crate) fn u64_items(member: &str, field: &str, items: &[Value]) -> Result<Vec<u64>, NeffError> {
    items
        .iter()
        .map(|item| {
            item.as_u64()
                .ok_or_else(|| malformed(member, field, "an array of non-negative integers", item))
        })
        .collect()
}
