//! Data-driven interpreter cases: one named test per folder `hlo/tests/cases/<name>/`, which
//! holds the module (`module.hlo`, HLO text) and a header (`case.toml`) that says what to feed
//! and expect:
//!
//! ```toml
//! about = '''
//! How the expected values were worked out by hand (required).
//! '''
//! inputs = ["f32[2] 1 2.5"]       # one per entry parameter, in order (values row-major)
//! outputs = ["s32[2] 3 4"]        # one per flattened result, in order
//! error = "needs 64 bytes"        # or: evaluation fails and the message contains this text
//! tolerance = 1e-6                # relative tolerance for float outputs (default: exact)
//! budget = 1024                   # EvalOptions::budget_bytes for this case
//! while-limit = 10                # EvalOptions::max_while_iterations for this case
//! exec-timeout-ms = 1             # EvalOptions::device_time_limit ("none": no limit)
//! work-budget = 1000              # EvalOptions::work_budget ("none": no limit)
//! time-limit-ms = 50              # EvalOptions::time_limit for this case
//! ```
//!
//! An array is written as a string, its shape and then its values, so that values TOML has no
//! word for survive: numbers, `nan`, `inf`, `-inf`, `-0`, `true`, `false`. Expected values are
//! worked out by hand (`about` says how), never saved from a run of the interpreter. Floats
//! compare after decoding, NaN equals NaN, and `-0` is told from `0` only when exact. A key the
//! runner does not know fails the case, so a misspelt limit is not silently left out.

mod corpus;

use std::time::Duration;

use hlo::eval::{Array, EvalOptions, Value, evaluate};
use hlo::proto::PrimitiveType;
use libtest_mimic::{Arguments, Failed, Trial};
use toml::Value as Toml;

struct Expected {
    ty: PrimitiveType,
    dims: Vec<i64>,
    values: Vec<f64>,
}

/// What a case's header asks for.
#[derive(Default)]
struct Header {
    inputs: Vec<Expected>,
    outputs: Vec<Expected>,
    error: Option<String>,
    tolerance: f64,
    options: EvalOptions,
}

fn parse_type(name: &str) -> Result<PrimitiveType, String> {
    PrimitiveType::from_str_name(&name.to_ascii_uppercase())
        .ok_or_else(|| format!("unknown type {name}"))
}

fn parse_shape(text: &str) -> Result<(PrimitiveType, Vec<i64>), String> {
    let (ty, rest) = text.split_once('[').ok_or_else(|| format!("shape {text} has no ["))?;
    let dims = rest.trim_end_matches(']');
    let dims = if dims.is_empty() {
        Vec::new()
    } else {
        dims.split(',')
            .map(|d| d.parse::<i64>().map_err(|e| format!("{text}: {e}")))
            .collect::<Result<_, _>>()?
    };
    Ok((parse_type(ty)?, dims))
}

fn parse_value(word: &str) -> Result<f64, String> {
    match word {
        "nan" => Ok(f64::NAN),
        "-nan" => Ok(-f64::NAN),
        "inf" => Ok(f64::INFINITY),
        "-inf" => Ok(f64::NEG_INFINITY),
        "true" => Ok(1.0),
        "false" => Ok(0.0),
        _ => word.parse().map_err(|e| format!("value {word}: {e}")),
    }
}

fn parse_array(text: &str) -> Result<Expected, String> {
    let mut words = text.split_whitespace();
    let shape = words.next().ok_or("missing shape")?;
    let (ty, dims) = parse_shape(shape)?;
    let values = words.map(parse_value).collect::<Result<Vec<_>, _>>()?;
    let n: i64 = dims.iter().product();
    if values.len() as i64 != n {
        return Err(format!("{shape} needs {n} values, got {}", values.len()));
    }
    Ok(Expected { ty, dims, values })
}

fn string<'v>(key: &str, value: &'v Toml) -> Result<&'v str, String> {
    value.as_str().ok_or_else(|| format!("{key}: expected a string, got {value}"))
}

fn count(key: &str, value: &Toml) -> Result<u64, String> {
    value
        .as_integer()
        .and_then(|n| u64::try_from(n).ok())
        .ok_or_else(|| format!("{key}: expected a count, got {value}"))
}

/// A count, or `"none"` for no limit.
fn limit(key: &str, value: &Toml) -> Result<Option<u64>, String> {
    match value.as_str() {
        Some("none") => Ok(None),
        _ => count(key, value).map(Some),
    }
}

fn arrays(key: &str, value: &Toml) -> Result<Vec<Expected>, String> {
    let list = value.as_array().ok_or_else(|| format!("{key}: expected a list, got {value}"))?;
    list.iter().map(|item| parse_array(string(key, item)?)).collect()
}

fn parse_header(header: &toml::Table) -> Result<Header, String> {
    let mut case = Header::default();
    for (key, value) in header {
        match key.as_str() {
            "about" => {
                if string(key, value)?.trim().is_empty() {
                    return Err(
                        "about is empty: say how the expected values were worked out".into()
                    );
                }
            }
            "inputs" => case.inputs = arrays(key, value)?,
            "outputs" => case.outputs = arrays(key, value)?,
            "error" => case.error = Some(string(key, value)?.trim().to_owned()),
            "tolerance" => {
                case.tolerance = value
                    .as_float()
                    .ok_or_else(|| format!("tolerance: expected a float, got {value}"))?
            }
            "budget" => case.options.budget_bytes = count(key, value)?,
            "while-limit" => case.options.max_while_iterations = Some(count(key, value)?),
            "exec-timeout-ms" => {
                case.options.device_time_limit = limit(key, value)?.map(Duration::from_millis)
            }
            "work-budget" => case.options.work_budget = limit(key, value)?,
            "time-limit-ms" => {
                case.options.time_limit = Some(Duration::from_millis(count(key, value)?))
            }
            other => return Err(format!("case.toml: unknown key {other}")),
        }
    }
    if !header.contains_key("about") {
        return Err("a case needs `about`: how the expected values were worked out".into());
    }
    if case.outputs.is_empty() && case.error.is_none() {
        return Err("a case needs `outputs` or `error`".into());
    }
    Ok(case)
}

/// Builds an input array by converting the case's numbers with a one-instruction `convert`
/// module would be circular; instead bytes are written directly per type.
fn input_array(e: &Expected) -> Result<Array, String> {
    let mut bytes = Vec::new();
    for &v in &e.values {
        match e.ty {
            PrimitiveType::Pred => bytes.push(u8::from(v != 0.0)),
            PrimitiveType::S8 => bytes.extend((v as i8).to_le_bytes()),
            PrimitiveType::S16 => bytes.extend((v as i16).to_le_bytes()),
            PrimitiveType::S32 => bytes.extend((v as i32).to_le_bytes()),
            PrimitiveType::S64 => bytes.extend((v as i64).to_le_bytes()),
            PrimitiveType::U8 => bytes.extend((v as u8).to_le_bytes()),
            PrimitiveType::U16 => bytes.extend((v as u16).to_le_bytes()),
            PrimitiveType::U32 => bytes.extend((v as u32).to_le_bytes()),
            PrimitiveType::U64 => bytes.extend((v as u64).to_le_bytes()),
            PrimitiveType::F32 => bytes.extend((v as f32).to_le_bytes()),
            PrimitiveType::F64 => bytes.extend(v.to_le_bytes()),
            // bf16 inputs in cases are exactly representable: the top half of the f32.
            PrimitiveType::Bf16 => {
                bytes.extend((((v as f32).to_bits() >> 16) as u16).to_le_bytes())
            }
            other => {
                return Err(format!(
                    "inputs of type {} are not supported by the runner",
                    other.as_str_name()
                ));
            }
        }
    }
    Array::new(e.ty, e.dims.clone(), bytes).map_err(|e| e.to_string())
}

fn same(got: f64, want: f64, tolerance: f64) -> bool {
    if want.is_nan() {
        return got.is_nan();
    }
    if tolerance == 0.0 {
        return got == want && got.is_sign_negative() == want.is_sign_negative();
    }
    got == want || (got - want).abs() <= tolerance * want.abs().max(1e-30)
}

fn run_case(found: &corpus::Case) -> Result<(), Failed> {
    let case = parse_header(&found.header)?;
    let path = found.file("module.hlo");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let module = hlo::text::parse_module(&text).map_err(|e| format!("parse: {e}"))?;
    let args = case.inputs.iter().map(input_array).collect::<Result<Vec<_>, _>>()?;
    let result = evaluate(&module, &args, &case.options);
    match (&case.error, result) {
        (Some(want), Err(e)) => {
            let message = e.to_string();
            if message.contains(want.as_str()) {
                Ok(())
            } else {
                Err(format!("error {message:?} does not contain {want:?}").into())
            }
        }
        (Some(want), Ok(v)) => {
            Err(format!("expected an error containing {want:?}, got {v:?}").into())
        }
        (None, Err(e)) => Err(format!("evaluation failed: {e}").into()),
        (None, Ok(value)) => {
            let leaves: Vec<&Array> = match &value {
                Value::Array(_) | Value::Tuple(_) => value.flatten(),
            };
            if leaves.len() != case.outputs.len() {
                return Err(
                    format!("{} outputs, expected {}", leaves.len(), case.outputs.len()).into()
                );
            }
            for (i, (got, want)) in leaves.iter().zip(&case.outputs).enumerate() {
                if got.ty != want.ty || got.dims != want.dims {
                    return Err(format!(
                        "output {i} is {}{:?}, expected {}{:?}",
                        got.ty.as_str_name(),
                        got.dims,
                        want.ty.as_str_name(),
                        want.dims
                    )
                    .into());
                }
                let values = got.to_f64().map_err(|e| e.to_string())?;
                for (j, (&g, &w)) in values.iter().zip(&want.values).enumerate() {
                    if !same(g, w, case.tolerance) {
                        return Err(format!(
                            "output {i} element {j}: got {g}, expected {w}\nall: {values:?}"
                        )
                        .into());
                    }
                }
            }
            Ok(())
        }
    }
}

fn main() {
    let args = Arguments::from_args();
    let trials = corpus::cases("cases")
        .into_iter()
        .map(|case| Trial::test(case.name.clone(), move || run_case(&case)))
        .collect();
    libtest_mimic::run(&args, trials).exit();
}
