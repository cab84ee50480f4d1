//! Field-level differences between two metaneffs, for review (`nrtsim metaneff diff`).
//!
//! Design choices:
//! - **Tensors are matched by name, then by index.** A tensor is the same tensor in both files
//!   when it has the same name (the k-th of a repeated name matches the k-th); what is left
//!   unmatched on both sides is paired by position in the list, so a renamed tensor shows as a
//!   name change rather than a removal and an addition. A tensor that moved is reported with its
//!   `index` changed, since binding depends on the order of inputs.
//! - **Every field, unknown ones included.** Unknown fields are compared by their place (the
//!   top-level message, `model_config`, or the matched tensor), field number, wire type and raw
//!   bytes, because binding ignores them but a producer may depend on them.
//! - **One line per side.** A difference is a path with the value in A and the value in B;
//!   [`render`] prints it as `-path: a` / `+path: b`, so the output reads as a review diff and
//!   has no addresses or file offsets in it. Large bytes are never dumped: the graph
//!   (`serialized_graph_def`) is shown by length and the first differing byte with its value on
//!   each side, other long bytes by length and a hash, so values that differ never print alike.

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;

use super::{
    MetaNeff, MetaTensor, MetaneffDecodeError, MetaneffLimits, UnknownField, check_wire,
    decode_with_limits,
};
use crate::hex::to_hex_spaced;
use crate::wire;

/// One field that differs. `None` means the field (or tensor, or entry) is absent on that side.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    /// The field, such as `input_tensors["x"].shape` or `model_config.async_load`.
    pub path: String,
    /// Its value in A, as text.
    pub a: Option<String>,
    /// Its value in B, as text.
    pub b: Option<String>,
}

/// Which of the two inputs a decoding error is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    /// The first input.
    A,
    /// The second input.
    B,
}

/// One of the two inputs is not a metaneff.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{source}")]
pub struct DiffError {
    /// Which input.
    pub which: Which,
    /// Why it does not decode.
    pub source: MetaneffDecodeError,
}

/// The differences between two metaneffs, in field order (scalars, model config, tensors,
/// aliases, unknown fields); empty when they are equal field by field.
///
/// # Errors
/// A [`DiffError`] saying which input does not decode, with its byte offset and field path.
pub fn diff(a: &[u8], b: &[u8]) -> Result<Vec<Difference>, DiffError> {
    diff_with_limits(a, b, &MetaneffLimits::default())
}

/// [`diff`] with both inputs decoded under count limits other than the defaults.
///
/// # Errors
/// As [`diff`]; an input past a limit is refused with [`MetaneffDecodeError::exceeded`] set.
pub fn diff_with_limits(
    a: &[u8],
    b: &[u8],
    limits: &MetaneffLimits,
) -> Result<Vec<Difference>, DiffError> {
    let side_a = Decoded::new(a, limits).map_err(|source| DiffError { which: Which::A, source })?;
    let side_b = Decoded::new(b, limits).map_err(|source| DiffError { which: Which::B, source })?;
    let mut out = Vec::new();
    let (ma, mb) = (&side_a.message, &side_b.message);
    field(&mut out, "name", bytes_text(&ma.name), bytes_text(&mb.name));
    field(
        &mut out,
        "num_user_inputs",
        ma.num_user_inputs.to_string(),
        mb.num_user_inputs.to_string(),
    );
    field(&mut out, "num_states", ma.num_states.to_string(), mb.num_states.to_string());
    field(&mut out, "num_weights", ma.num_weights.to_string(), mb.num_weights.to_string());
    model_config(&mut out, ma, mb);
    field(
        &mut out,
        "serialized_graph_def",
        graph_text(&ma.serialized_graph_def, &mb.serialized_graph_def),
        graph_text(&mb.serialized_graph_def, &ma.serialized_graph_def),
    );
    tensors(&mut out, "input_tensors", &side_a, &side_b, Kind::Input);
    tensors(&mut out, "output_tensors", &side_a, &side_b, Kind::Output);
    let keys: std::collections::BTreeSet<i64> =
        ma.output_aliases_to.keys().chain(mb.output_aliases_to.keys()).copied().collect();
    for key in keys {
        let value = |m: &MetaNeff| m.output_aliases_to.get(&key).map(i64::to_string);
        push(&mut out, format!("output_aliases_to[{key}]"), value(ma), value(mb));
    }
    unknown(&mut out, "", side_a.unknown_at("MetaNeff"), side_b.unknown_at("MetaNeff"));
    unknown(
        &mut out,
        "model_config.",
        side_a.unknown_at("MetaNeff.model_config"),
        side_b.unknown_at("MetaNeff.model_config"),
    );
    Ok(out)
}

/// Prints differences as a review diff: `-path: a` then `+path: b` for each, absent sides left
/// out.
pub fn render(differences: &[Difference]) -> String {
    let mut out = String::new();
    for difference in differences {
        // Writing to a String cannot fail.
        if let Some(a) = &difference.a {
            let _ = writeln!(out, "-{}: {a}", difference.path);
        }
        if let Some(b) = &difference.b {
            let _ = writeln!(out, "+{}: {b}", difference.path);
        }
    }
    out
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Input,
    Output,
}

/// A decoded message with its unknown fields as raw bytes, by the path of their message.
struct Decoded {
    message: MetaNeff,
    unknown: BTreeMap<String, Vec<String>>,
}

impl Decoded {
    fn new(bytes: &[u8], limits: &MetaneffLimits) -> Result<Decoded, MetaneffDecodeError> {
        // The limits first: the schema walk lists every unknown field, whatever their count.
        let message = decode_with_limits(bytes, limits)?;
        let fields = check_wire(bytes)?;
        let mut unknown = BTreeMap::<String, Vec<String>>::new();
        for field in fields {
            let text = unknown_text(bytes, &field);
            unknown.entry(field.path.clone()).or_default().push(text);
        }
        Ok(Decoded { message, unknown })
    }

    fn unknown_at(&self, path: &str) -> &[String] {
        self.unknown.get(path).map_or(&[], Vec::as_slice)
    }
}

/// An unknown field as `field N (wire type): hex bytes of the whole field`.
fn unknown_text(bytes: &[u8], field: &UnknownField) -> String {
    // The walk that found the field read it whole, so reading it again from its tag succeeds.
    let raw = wire::fields(&bytes[field.offset..])
        .next()
        .and_then(Result::ok)
        .map_or(&[][..], |parsed| &bytes[field.offset..field.offset + parsed.end]);
    format!("field {} ({}) {}", field.number, field.wire_type, to_hex_spaced(raw))
}

fn push(out: &mut Vec<Difference>, path: String, a: Option<String>, b: Option<String>) {
    if a != b {
        out.push(Difference { path, a, b });
    }
}

fn field(out: &mut Vec<Difference>, path: &str, a: String, b: String) {
    push(out, path.to_owned(), Some(a), Some(b));
}

/// Bytes as a quoted string when they are short printable UTF-8, else by length and hex; long
/// bytes by length and a hash of their content, so two values of one length that differ never
/// print alike (a difference is found by comparing these texts).
fn bytes_text(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) if bytes.len() <= 80 && !text.chars().any(char::is_control) => format!("{text:?}"),
        _ if bytes.len() <= 32 => format!("<{} bytes: {}>", bytes.len(), to_hex_spaced(bytes)),
        _ => format!("<{} bytes, fnv1a64 {:016x}>", bytes.len(), fnv1a64(bytes)),
    }
}

/// The 64-bit FNV-1a hash: short, dependency-free and deterministic, which is all a review
/// diff needs to tell two long values apart.
fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// A graph's bytes, by length and, when the other side differs, the first differing byte and
/// its value on this side. With the value, two graphs of one length that differ print
/// differently (the offset alone is the same on both sides).
fn graph_text(this: &[u8], other: &[u8]) -> String {
    if this == other {
        return format!("<{} bytes>", this.len());
    }
    let first =
        this.iter().zip(other).position(|(x, y)| x != y).unwrap_or(this.len().min(other.len()));
    match this.get(first) {
        Some(byte) => {
            format!("<{} bytes, first difference at byte {first}: {byte:02x}>", this.len())
        }
        None => format!("<{} bytes, first difference at byte {first}: end>", this.len()),
    }
}

fn model_config(out: &mut Vec<Difference>, a: &MetaNeff, b: &MetaNeff) {
    let (ca, cb) = (a.model_config.as_ref(), b.model_config.as_ref());
    if ca.is_none() || cb.is_none() {
        let present = |c: Option<_>| c.map_or("absent", |_| "present").to_owned();
        field(out, "model_config", present(ca), present(cb));
    }
    let ca = ca.copied().unwrap_or_default();
    let cb = cb.copied().unwrap_or_default();
    let rows: [(&str, String, String); 6] = [
        ("num_infer", ca.num_infer.to_string(), cb.num_infer.to_string()),
        ("timeout", ca.timeout.to_string(), cb.timeout.to_string()),
        ("optimal_ncg_size", ca.optimal_ncg_size.to_string(), cb.optimal_ncg_size.to_string()),
        ("async_load", ca.async_load.to_string(), cb.async_load.to_string()),
        ("lazy_load", ca.lazy_load.to_string(), cb.lazy_load.to_string()),
        ("return_aliases", ca.return_aliases.to_string(), cb.return_aliases.to_string()),
    ];
    for (name, va, vb) in rows {
        field(out, &format!("model_config.{name}"), va, vb);
    }
}

/// Pairs the tensors of A and B: by name (k-th with k-th), then the rest by position. Unpaired
/// tensors are `None` on the other side. The pairs are in A's order, then B's leftovers.
fn pair(a: &[MetaTensor], b: &[MetaTensor]) -> Vec<(Option<usize>, Option<usize>)> {
    let mut by_name = BTreeMap::<&[u8], VecDeque<usize>>::new();
    for (index, tensor) in b.iter().enumerate() {
        by_name.entry(&tensor.name).or_default().push_back(index);
    }
    let mut matched_b = vec![false; b.len()];
    let mut pairs: Vec<(Option<usize>, Option<usize>)> = a
        .iter()
        .enumerate()
        .map(|(index, tensor)| {
            let other = by_name.get_mut(&tensor.name[..]).and_then(VecDeque::pop_front);
            if let Some(other) = other {
                matched_b[other] = true;
            }
            (Some(index), other)
        })
        .collect();
    // An unmatched A tensor takes the unmatched B tensor at the same index, if there is one.
    for pair in &mut pairs {
        if let (Some(index), None) = *pair {
            if matched_b.get(index) == Some(&false) {
                matched_b[index] = true;
                pair.1 = Some(index);
            }
        }
    }
    pairs.extend((0..b.len()).filter(|&index| !matched_b[index]).map(|index| (None, Some(index))));
    pairs
}

fn data_type_text(value: i32) -> String {
    super::meta_tensor::DataType::try_from(value)
        .map_or_else(|_| value.to_string(), |data_type| data_type.as_str_name().to_owned())
}

fn type_text(value: i32) -> String {
    super::meta_tensor::Type::try_from(value)
        .map_or_else(|_| value.to_string(), |kind| kind.as_str_name().to_owned())
}

fn optional_bytes(value: Option<&prost::bytes::Bytes>) -> String {
    value.map_or_else(|| "(unset)".to_owned(), |bytes| bytes_text(bytes))
}

/// A tensor in one line, for a tensor present on one side only.
fn tensor_line(index: usize, tensor: &MetaTensor, kind: Kind) -> String {
    let mut out = format!(
        "{{ index: {index} shape: {:?} data_type: {}",
        tensor.shape,
        data_type_text(tensor.data_type)
    );
    if kind == Kind::Input {
        let _ = write!(out, " type: {}", type_text(tensor.r#type));
    }
    if tensor.allow_dynamic_batch_size {
        out.push_str(" allow_dynamic_batch_size: true");
    }
    if let Some(key) = &tensor.checkpoint_key {
        let _ = write!(out, " checkpoint_key: {}", bytes_text(key));
    }
    if let Some(key) = &tensor.user_input_key {
        let _ = write!(out, " user_input_key: {}", bytes_text(key));
    }
    if !tensor.content.is_empty() {
        let _ = write!(out, " content: {}", bytes_text(&tensor.content));
    }
    out.push_str(" }");
    out
}

/// The field rows of a tensor, for comparing matched tensors.
fn tensor_rows(index: usize, tensor: &MetaTensor) -> [(&'static str, String); 9] {
    [
        ("name", bytes_text(&tensor.name)),
        ("index", index.to_string()),
        ("shape", format!("{:?}", tensor.shape)),
        ("data_type", data_type_text(tensor.data_type)),
        ("content", bytes_text(&tensor.content)),
        ("allow_dynamic_batch_size", tensor.allow_dynamic_batch_size.to_string()),
        ("checkpoint_key", optional_bytes(tensor.checkpoint_key.as_ref())),
        ("type", type_text(tensor.r#type)),
        ("user_input_key", optional_bytes(tensor.user_input_key.as_ref())),
    ]
}

fn tensors(out: &mut Vec<Difference>, list: &str, a: &Decoded, b: &Decoded, kind: Kind) {
    let pick = |m: &MetaNeff| -> Vec<MetaTensor> {
        match kind {
            Kind::Input => m.input_tensors.clone(),
            Kind::Output => m.output_tensors.clone(),
        }
    };
    let (ta, tb) = (pick(&a.message), pick(&b.message));
    for (ia, ib) in pair(&ta, &tb) {
        let label = |tensor: &MetaTensor| format!("{list}[{}]", bytes_text(&tensor.name));
        let unknown_of = |side: &Decoded, index: usize| -> Vec<String> {
            side.unknown_at(&format!("MetaNeff.{list}[{index}]")).to_vec()
        };
        match (ia, ib) {
            (Some(ia), Some(ib)) => {
                let path = label(&ta[ia]);
                for ((name, va), (_, vb)) in
                    tensor_rows(ia, &ta[ia]).into_iter().zip(tensor_rows(ib, &tb[ib]))
                {
                    field(out, &format!("{path}.{name}"), va, vb);
                }
                unknown(out, &format!("{path}."), &unknown_of(a, ia), &unknown_of(b, ib));
            }
            (Some(ia), None) => {
                push(out, label(&ta[ia]), Some(tensor_line(ia, &ta[ia], kind)), None);
            }
            (None, Some(ib)) => {
                push(out, label(&tb[ib]), None, Some(tensor_line(ib, &tb[ib], kind)));
            }
            (None, None) => {}
        }
    }
}

/// Unknown fields of one place, compared as multisets of their text.
fn unknown(out: &mut Vec<Difference>, prefix: &str, a: &[String], b: &[String]) {
    let mut only_b: Vec<&String> = b.iter().collect();
    for field in a {
        if let Some(position) = only_b.iter().position(|other| *other == field) {
            only_b.remove(position);
        } else {
            push(out, format!("{prefix}unknown"), Some(field.clone()), None);
        }
    }
    for field in only_b {
        push(out, format!("{prefix}unknown"), None, Some(field.clone()));
    }
}

#[cfg(test)]
mod tests {
    use prost::Message as _;
    use prost_reflect::{DynamicMessage, Kind, MapKey, MessageDescriptor, ReflectMessage, Value};

    use super::*;
    use crate::metaneff::message_descriptor;
    use crate::metaneff::text::from_text;

    fn bytes(text: &str) -> Vec<u8> {
        from_text(text).expect("test text encodes")
    }

    /// Diffs two texts (each with raw bytes appended) and compares the rendered diff.
    fn check(a: (&str, &[u8]), b: (&str, &[u8]), expect: &str) {
        let mut bytes_a = bytes(a.0);
        bytes_a.extend_from_slice(a.1);
        let mut bytes_b = bytes(b.0);
        bytes_b.extend_from_slice(b.1);
        let differences = diff(&bytes_a, &bytes_b).expect("both decode");
        assert_eq!(render(&differences), expect);
    }

    const TWO_INPUTS: &str = r#"
input_tensors { name: "x" shape: [4] data_type: FLOAT type: USER_INPUT }
input_tensors { name: "y" shape: [4] data_type: INT32 type: USER_INPUT }
output_tensors { name: "out" shape: [4] data_type: FLOAT }
"#;

    #[test]
    fn equal_messages_have_no_differences() {
        check((TWO_INPUTS, &[]), (TWO_INPUTS, &[]), "");
    }

    #[test]
    fn a_changed_scalar_is_one_line_per_side() {
        check(
            (r#"name: "a""#, &[]),
            (r#"name: "b" model_config { lazy_load: true }"#, &[]),
            "-name: \"a\"\n+name: \"b\"\n-model_config: absent\n+model_config: present\n\
             -model_config.lazy_load: false\n+model_config.lazy_load: true\n",
        );
    }

    #[test]
    fn reordered_tensors_are_matched_by_name_and_show_their_new_index() {
        let b = r#"
input_tensors { name: "y" shape: [4] data_type: INT32 type: USER_INPUT }
input_tensors { name: "x" shape: [8] data_type: FLOAT type: USER_INPUT }
output_tensors { name: "out" shape: [4] data_type: FLOAT }
"#;
        check(
            (TWO_INPUTS, &[]),
            (b, &[]),
            "-input_tensors[\"x\"].index: 0\n+input_tensors[\"x\"].index: 1\n\
             -input_tensors[\"x\"].shape: [4]\n+input_tensors[\"x\"].shape: [8]\n\
             -input_tensors[\"y\"].index: 1\n+input_tensors[\"y\"].index: 0\n",
        );
    }

    #[test]
    fn a_renamed_tensor_is_matched_by_index() {
        let b = TWO_INPUTS.replace(r#"name: "y""#, r#"name: "z""#);
        check(
            (TWO_INPUTS, &[]),
            (&b, &[]),
            "-input_tensors[\"y\"].name: \"y\"\n+input_tensors[\"y\"].name: \"z\"\n",
        );
    }

    #[test]
    fn removed_and_added_tensors_are_shown_whole() {
        let b = r#"
input_tensors { name: "x" shape: [4] data_type: FLOAT type: USER_INPUT }
output_tensors { name: "out" shape: [4] data_type: FLOAT }
output_tensors { name: "extra" shape: [] data_type: BFLOAT16 }
"#;
        check(
            (TWO_INPUTS, &[]),
            (b, &[]),
            "-input_tensors[\"y\"]: { index: 1 shape: [4] data_type: INT32 type: USER_INPUT }\n\
             +output_tensors[\"extra\"]: { index: 1 shape: [] data_type: BFLOAT16 }\n",
        );
    }

    #[test]
    fn alias_entries_are_compared_by_key() {
        check(
            ("output_aliases_to { key: 0 value: 1 } output_aliases_to { key: 2 value: 0 }", &[]),
            ("output_aliases_to { key: 0 value: 0 } output_aliases_to { key: 1 value: 0 }", &[]),
            "-output_aliases_to[0]: 1\n+output_aliases_to[0]: 0\n+output_aliases_to[1]: 0\n\
             -output_aliases_to[2]: 0\n",
        );
    }

    #[test]
    fn unknown_fields_are_compared_with_their_bytes() {
        // Field 20 as a varint: tag a0 01, then the value.
        check(
            (r#"name: "m""#, &[0xa0, 0x01, 0x01]),
            (r#"name: "m""#, &[0xa0, 0x01, 0x02]),
            "-unknown: field 20 (VARINT) a0 01 01\n+unknown: field 20 (VARINT) a0 01 02\n",
        );
        check((r#"name: "m""#, &[0xa0, 0x01, 0x01]), (r#"name: "m""#, &[0xa0, 0x01, 0x01]), "");
    }

    #[test]
    fn unknown_fields_of_a_tensor_follow_it_when_it_moves() {
        // An input tensor { name: "t" field 9 varint 5 } written by hand, once at index 0 and
        // once at index 1 behind another tensor.
        let tensor_t: &[u8] = &[0x0a, 0x05, 0x0a, 0x01, b't', 0x48, 0x05];
        let tensor_u: &[u8] = &[0x0a, 0x03, 0x0a, 0x01, b'u'];
        let a = tensor_t.to_vec();
        let b = [tensor_u, tensor_t].concat();
        let differences = diff(&a, &b).expect("both decode");
        assert_eq!(
            render(&differences),
            "-input_tensors[\"t\"].index: 0\n+input_tensors[\"t\"].index: 1\n\
             +input_tensors[\"u\"]: { index: 0 shape: [] data_type: UNDEFINED type: UNDEFINED_TYPE }\n"
        );
    }

    #[test]
    fn graph_bytes_are_shown_by_length_and_first_difference() {
        let a = MetaNeff { serialized_graph_def: vec![1, 2, 3, 4].into(), ..MetaNeff::default() };
        let b =
            MetaNeff { serialized_graph_def: vec![1, 2, 9, 4, 5].into(), ..MetaNeff::default() };
        let differences =
            diff(&crate::metaneff::encode(&a), &crate::metaneff::encode(&b)).expect("decode");
        assert_eq!(
            render(&differences),
            "-serialized_graph_def: <4 bytes, first difference at byte 2: 03>\n\
             +serialized_graph_def: <5 bytes, first difference at byte 2: 09>\n"
        );
        // One graph a prefix of the other: the shorter side ends where they part.
        let c = MetaNeff { serialized_graph_def: vec![1, 2].into(), ..MetaNeff::default() };
        let differences =
            diff(&crate::metaneff::encode(&a), &crate::metaneff::encode(&c)).expect("decode");
        assert_eq!(
            render(&differences),
            "-serialized_graph_def: <4 bytes, first difference at byte 2: 03>\n\
             +serialized_graph_def: <2 bytes, first difference at byte 2: end>\n"
        );
    }

    #[test]
    fn graphs_of_one_length_that_differ_are_a_difference() {
        // The same length and so the same first differing offset on both sides
        // once printed the same text, and the change went unreported.
        let a = MetaNeff { serialized_graph_def: vec![7; 64].into(), ..MetaNeff::default() };
        let mut changed = vec![7; 64];
        changed[40] = 8;
        let b = MetaNeff { serialized_graph_def: changed.into(), ..MetaNeff::default() };
        let differences =
            diff(&crate::metaneff::encode(&a), &crate::metaneff::encode(&b)).expect("decode");
        assert_eq!(
            render(&differences),
            "-serialized_graph_def: <64 bytes, first difference at byte 40: 07>\n\
             +serialized_graph_def: <64 bytes, first difference at byte 40: 08>\n"
        );
    }

    #[test]
    fn a_changed_user_input_key_of_a_matched_tensor_is_reported() {
        // The key a producer binds a user input by.
        let a = r#"input_tensors { name: "x" user_input_key: "x0" type: USER_INPUT }"#;
        let b = r#"input_tensors { name: "x" user_input_key: "x1" type: USER_INPUT }"#;
        check(
            (a, &[]),
            (b, &[]),
            "-input_tensors[\"x\"].user_input_key: \"x0\"\n\
             +input_tensors[\"x\"].user_input_key: \"x1\"\n",
        );
        let unset = r#"input_tensors { name: "x" type: USER_INPUT }"#;
        check(
            (a, &[]),
            (unset, &[]),
            "-input_tensors[\"x\"].user_input_key: \"x0\"\n\
             +input_tensors[\"x\"].user_input_key: (unset)\n",
        );
    }

    #[test]
    fn long_bytes_of_one_length_that_differ_are_a_difference() {
        // Past 80 bytes a value prints by length and hash; without the hash two contents of one
        // length printed alike.
        let long = |byte: char| format!("{:a<100}{byte}", "");
        let a = format!(r#"input_tensors {{ name: "x" content: "{}" }}"#, long('b'));
        let b = format!(r#"input_tensors {{ name: "x" content: "{}" }}"#, long('c'));
        let differences = diff(&bytes(&a), &bytes(&b)).expect("both decode");
        assert_eq!(differences.len(), 1, "{differences:?}");
        assert_eq!(differences[0].path, "input_tensors[\"x\"].content");
        assert!(differences[0].a.as_deref().is_some_and(|t| t.starts_with("<101 bytes, fnv1a64 ")));
    }

    /// A message with every field of its descriptor set to a value that is not the default:
    /// bytes long (past the length where they print by summary) or short.
    fn filled(descriptor: &MessageDescriptor, long: bool) -> DynamicMessage {
        let mut message = DynamicMessage::new(descriptor.clone());
        for field in descriptor.fields() {
            let one = match field.kind() {
                Kind::Int64 => Value::I64(5 + i64::from(field.number())),
                Kind::Bool => Value::Bool(true),
                Kind::Bytes if long => Value::Bytes(vec![b'a' + field.number() as u8; 100].into()),
                Kind::Bytes => Value::Bytes(vec![b'a' + field.number() as u8; 2].into()),
                Kind::Enum(values) => {
                    let second = values.values().nth(1).expect("an enum with two values");
                    Value::EnumNumber(second.number())
                }
                Kind::Message(sub) if field.is_map() => {
                    let key = sub.map_entry_key_field();
                    assert!(matches!(key.kind(), Kind::Int64), "a map keyed by int64");
                    Value::Map([(MapKey::I64(0), Value::I64(1))].into_iter().collect())
                }
                Kind::Message(sub) => Value::Message(filled(&sub, long)),
                other => panic!("field {} has kind {other:?}: teach this test it", field.name()),
            };
            let value = if field.is_list() {
                match one {
                    Value::I64(_) => Value::List(vec![Value::I64(2), Value::I64(3)]),
                    other => Value::List(vec![other]),
                }
            } else {
                one
            };
            message.set_field(&field, value);
        }
        message
    }

    /// `value` changed to another value of `kind`, of the same length where it has one.
    fn changed(kind: &Kind, value: &Value) -> Value {
        match (kind, value) {
            (_, Value::I64(x)) => Value::I64(x + 1),
            (_, Value::Bool(x)) => Value::Bool(!x),
            (_, Value::Bytes(x)) => {
                let mut bytes = x.to_vec();
                let last = bytes.len() - 1;
                bytes[last] ^= 1;
                Value::Bytes(bytes.into())
            }
            (Kind::Enum(values), Value::EnumNumber(x)) => Value::EnumNumber(
                values.values().map(|v| v.number()).find(|n| n != x).expect("another value"),
            ),
            (_, other) => panic!("no change for {other:?}: teach this test it"),
        }
    }

    /// Every message that differs from `message` in one field only (recursing into messages
    /// and the first element of a repeated message), with that field's path.
    fn variants(message: &DynamicMessage) -> Vec<(String, DynamicMessage)> {
        let mut out = Vec::new();
        for field in message.descriptor().fields() {
            let name = field.name().to_owned();
            let value = message.get_field(&field).into_owned();
            let with = |value: Value| {
                let mut copy = message.clone();
                copy.set_field(&field, value);
                copy
            };
            match (field.kind(), value) {
                (Kind::Message(sub), Value::Map(map)) => {
                    let kind = sub.map_entry_value_field().kind();
                    let map = map.iter().map(|(k, v)| (k.clone(), changed(&kind, v))).collect();
                    out.push((name, with(Value::Map(map))));
                }
                (Kind::Message(_), Value::List(items)) => {
                    let first = items[0].as_message().expect("a message element");
                    for (path, one) in variants(first) {
                        let mut items = items.clone();
                        items[0] = Value::Message(one);
                        out.push((format!("{name}.{path}"), with(Value::List(items))));
                    }
                    // The element removed: a tensor on one side only.
                    out.push((name, with(Value::List(Vec::new()))));
                }
                (kind, Value::List(items)) => {
                    let mut items = items.clone();
                    let last = items.len() - 1;
                    items[last] = changed(&kind, &items[last]);
                    out.push((name, with(Value::List(items))));
                }
                (Kind::Message(_), Value::Message(sub)) => {
                    for (path, one) in variants(&sub) {
                        out.push((format!("{name}.{path}"), with(Value::Message(one))));
                    }
                }
                (kind, value) => out.push((name.clone(), with(changed(&kind, &value)))),
            }
            if field.supports_presence() {
                let mut copy = message.clone();
                copy.clear_field(&field);
                out.push((field.name().to_owned(), copy));
            }
        }
        out
    }

    /// A difference's path without its tensor names and map keys: `input_tensors["x"].shape`
    /// is `input_tensors.shape`, `output_aliases_to[0]` is `output_aliases_to`.
    fn schema_path(path: &str) -> String {
        let mut out = String::new();
        let mut depth = 0;
        for c in path.chars() {
            match c {
                '[' => depth += 1,
                ']' => depth -= 1,
                _ if depth == 0 => out.push(c),
                _ => {}
            }
        }
        out
    }

    #[test]
    fn every_field_of_the_schema_is_reported_when_it_alone_changes() {
        // Driven by the descriptor, so a field added to the schema is covered here unchanged.
        for long in [false, true] {
            let base = filled(&message_descriptor("MetaNeff"), long);
            let base_bytes = base.encode_to_vec();
            let mut covered = std::collections::BTreeSet::new();
            for (path, one) in variants(&base) {
                let differences = diff(&base_bytes, &one.encode_to_vec()).expect("both decode");
                assert!(
                    differences.iter().any(|d| schema_path(&d.path) == path),
                    "{path} changed (long bytes: {long}) but the diff is {differences:?}"
                );
                covered.extend(path.split('.').map(str::to_owned));
            }
            for message in ["MetaNeff", "ModelConfig", "MetaTensor"] {
                for field in message_descriptor(message).fields() {
                    assert!(
                        covered.contains(field.name()),
                        "{message}.{} not covered",
                        field.name()
                    );
                }
            }
        }
    }

    #[test]
    fn a_malformed_input_is_named() {
        let error = diff(&bytes(TWO_INPUTS), &[0x0a, 0x05, 0x0a]).unwrap_err();
        assert_eq!(error.which, Which::B);
        assert_eq!(error.source.offset, 1);
    }
}
