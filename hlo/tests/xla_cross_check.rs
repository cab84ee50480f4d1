//! Cross-check of the interpreter against XLA itself: jax on CPU is the reference.
//!
//! `tests/xla/export.py` lowers a few dozen jax functions to HLO, writes each module as
//! `HloModuleProto` bytes and as HLO text, and runs it with XLA's CPU backend on seeded inputs; it
//! also writes the module as XLA CPU optimised it (fusions, assigned layouts, copies, bitcasts).
//! Here every module is loaded with `hlo::load_module` in each form, evaluated with
//! `hlo::eval::evaluate`, and each output compared with XLA's: one named test per case × form
//! (`dtype_bf16::proto`, `attention_f32::text`, `mlp_f32::optimized`, …), so `cargo test -p
//! nrtsim-hlo --test xla_cross_check attention` works. The optimised forms the interpreter does
//! not evaluate yet are a reviewed list, `KNOWN_OPTIMIZED_FAILURES`.
//!
//! It needs a Python with jax, jaxlib, numpy and ml_dtypes: `NRTSIM_PYTHON`, else the virtual
//! environment `cargo xtask test` makes in `target/pyenv`, else `python3`. Without one the test is reported
//! as ignored, with the reason; under CI (`CI` set) it fails instead. The export is cached in
//! cargo's test scratch directory and redone when the script or the Python changes.
//!
//! A few exported cases are committed under `tests/xla/fixtures`, a folder per case with its
//! header `case.toml`, found by `tests/corpus` (regenerate them with `export.py
//! hlo/tests/xla/fixtures --only NAME …`, naming every case in its `cases.txt`), so the edge
//! semantics they pin are checked even where there is no Python (`fixture::*` tests).
//!
//! Acceptance: with `NRTSIM_HLO_ACCEPTANCE=path/to/nrtsim`, the export script's second set
//! (graphs no other test runs: a transformer block, a CNN, an RNN via scan, …) is checked too,
//! through the command line — `nrtsim hlo run MODULE --input … --output-dir …` on every form, its
//! `outputN.npy` files compared with XLA's under the same tolerances (`acceptance::*` tests).
//!
//! # Tolerances
//!
//! Integers and pred are always compared exactly. A float output carries a class chosen by the
//! export script for what produced it, and the class gives two bounds in units of the output
//! dtype; an element passes when it meets either one:
//!
//! - `ulps`: the distance in representable values between ours and XLA's;
//! - `k`: `|ours - xla| <= k * eps * scale`, where `eps` is the dtype's machine epsilon and
//!   `scale` the largest finite magnitude in XLA's output (at least 1 for transcendental outputs,
//!   whose natural scale is that of their argument's range).
//!
//! NaN matches any NaN, an infinity only the same infinity, and a finite value never a
//! non-finite one, whatever the bounds. `NRTSIM_XLA_SPREAD=1` prints, for every float output that
//! passes, the largest distance seen in both units, for reviewing the bounds.
//!
//! | class | f64 / f32 | f16 / bf16 / f8 | why |
//! |---|---|---|---|
//! | `exact` | bit-identical | bit-identical | data movement, compare/select/max/min, integer-valued results |
//! | `rounded` | 0 ulps | 1 ulp | one correctly rounded op; in the narrow types XLA may skip an intermediate rounding (its excess-precision option) |
//! | `transc` | 4 ulps or k = 4 | 1 ulp or k = 1 | XLA CPU evaluates exp, log, tanh, sin, erf, pow with its own polynomial approximations, a few ulps from a correctly rounded libm; the narrow types compute in f32 and round once |
//! | `accum:K` | k = 2K + 4 | k = 2K + 4, 1 ulp | sums of about K terms (dot, conv, reduce, softmax, norms): XLA may reassociate and vectorize a reduction, and each of the K additions may round differently |
//! | `CLASS@T` | CLASS's bounds as k, in T's eps | same | the output went through a narrower float T (a bf16 dot read as f32, f32 math in an f64 result): the interpreter rounds to T per instruction as the HLO says, XLA CPU may keep excess precision and skip that rounding |

mod corpus;

use std::path::{Path, PathBuf};
use std::process::Command;

use corpus::Case;
use hlo::eval::{self, Array, EvalOptions, Value};
use hlo::proto::PrimitiveType;
use libtest_mimic::{Arguments, Failed, Trial};
use toml::Value as Toml;

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/xla/export.py")
}

/// Runs the export script for `set` (`cross` or `acceptance`) into the scratch directory unless
/// it already holds an export by the same script and Python, and returns the directory and the
/// case names in the script's order.
fn export(python: &Path, set: &str) -> Result<(PathBuf, Vec<String>), String> {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("xla-{set}"));
    let mut stamp_text = python.display().to_string().into_bytes();
    stamp_text.push(b'\n');
    stamp_text.extend(std::fs::read(script()).map_err(|e| format!("{}: {e}", script().display()))?);
    let stamp = dir.join("export.stamp");
    let fresh =
        std::fs::read(&stamp).is_ok_and(|old| old == stamp_text) && dir.join("cases.txt").exists();
    if !fresh {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let out = Command::new(python)
            .arg(script())
            .arg(&dir)
            .args(["--set", set])
            .output()
            .map_err(|e| format!("running {}: {e}", python.display()))?;
        if !out.status.success() {
            return Err(format!("export.py failed: {}", String::from_utf8_lossy(&out.stderr)));
        }
        std::fs::write(&stamp, &stamp_text).map_err(|e| format!("{}: {e}", stamp.display()))?;
    }
    let list = std::fs::read_to_string(dir.join("cases.txt")).map_err(|e| e.to_string())?;
    Ok((dir, list.lines().map(str::to_owned).collect()))
}

// ---------------------------------------------------------------------------------------------
// Dtypes, by XLA's name, with what the comparison needs to know about each.

#[derive(Clone, Copy, Debug)]
enum Kind {
    Pred,
    Int,
    /// A binary float format: total bits, mantissa bits.
    Float {
        bits: u32,
        mantissa: u32,
        has_inf: bool,
    },
}

struct Dtype {
    name: &'static str,
    ty: PrimitiveType,
    size: usize,
    kind: Kind,
}

fn dtype(name: &str) -> Result<Dtype, String> {
    let float = |bits, mantissa, has_inf| Kind::Float { bits, mantissa, has_inf };
    let (name, size, kind): (&'static str, usize, Kind) = match name {
        "pred" => ("PRED", 1, Kind::Pred),
        "s8" => ("S8", 1, Kind::Int),
        "s16" => ("S16", 2, Kind::Int),
        "s32" => ("S32", 4, Kind::Int),
        "s64" => ("S64", 8, Kind::Int),
        "u8" => ("U8", 1, Kind::Int),
        "u16" => ("U16", 2, Kind::Int),
        "u32" => ("U32", 4, Kind::Int),
        "u64" => ("U64", 8, Kind::Int),
        "f16" => ("F16", 2, float(16, 10, true)),
        "bf16" => ("BF16", 2, float(16, 7, true)),
        "f32" => ("F32", 4, float(32, 23, true)),
        "f64" => ("F64", 8, float(64, 52, true)),
        "f8e5m2" => ("F8E5M2", 1, float(8, 2, true)),
        "f8e4m3fn" => ("F8E4M3FN", 1, float(8, 3, false)),
        "f8e4m3" => ("F8E4M3", 1, float(8, 3, true)),
        other => {
            return Err(format!("case.toml names dtype {other:?}, which this test does not know"));
        }
    };
    let ty = PrimitiveType::from_str_name(name)
        .ok_or_else(|| format!("hlo::proto::PrimitiveType has no {name}"))?;
    Ok(Dtype { name, ty, size, kind })
}

/// A float's bits as an integer that orders like the value (−0 and +0 both 0), so the distance
/// between two of them counts the representable values between.
fn ordinal(bits: u64, width: u32) -> i128 {
    let sign = 1u64 << (width - 1);
    let magnitude = i128::from(bits & (sign - 1));
    if bits & sign != 0 { -magnitude } else { magnitude }
}

/// Decodes a little-endian float of any of our formats to f64 (exact: every format fits).
fn decode_float(bytes: &[u8], bits: u32, mantissa: u32, has_inf: bool) -> f64 {
    let mut raw = [0u8; 8];
    raw[..bytes.len()].copy_from_slice(bytes);
    let raw = u64::from_le_bytes(raw);
    match bits {
        64 => return f64::from_bits(raw),
        32 => return f64::from(f32::from_bits(raw as u32)),
        _ => {}
    }
    let exponent_bits = bits - 1 - mantissa;
    let bias = (1i32 << (exponent_bits - 1)) - 1;
    let sign = if raw >> (bits - 1) & 1 == 1 { -1.0 } else { 1.0 };
    let exponent = ((raw >> mantissa) & ((1 << exponent_bits) - 1)) as i32;
    let fraction = raw & ((1 << mantissa) - 1);
    let max_exponent = (1i32 << exponent_bits) - 1;
    if has_inf && exponent == max_exponent {
        return if fraction == 0 { sign * f64::INFINITY } else { f64::NAN };
    }
    if !has_inf && exponent == max_exponent && fraction == (1 << mantissa) - 1 {
        return f64::NAN;
    }
    let scale = |e: i32| 2f64.powi(e);
    if exponent == 0 {
        sign * fraction as f64 * scale(1 - bias - mantissa as i32)
    } else {
        sign * (1.0 + fraction as f64 * scale(-(mantissa as i32))) * scale(exponent - bias)
    }
}

// ---------------------------------------------------------------------------------------------
// Tolerances (see the table in the module docs).

struct Bound {
    /// Largest accepted distance in representable values.
    ulps: i128,
    /// Largest accepted `|ours - xla| / (eps * scale)`.
    k: f64,
    /// The machine epsilon `k` counts in: the output dtype's, or a narrower intermediate's.
    eps: f64,
    /// Scale at least 1 (outputs of transcendental functions), else the output's own magnitude.
    unit_scale: bool,
}

fn bound(class: &str, mantissa: u32) -> Result<Bound, String> {
    if let Some((base, intermediate)) = class.split_once('@') {
        // The output went through a narrower dtype, whose rounding XLA may skip: the base class's
        // bounds, counted in that dtype's epsilon only.
        let Kind::Float { mantissa: narrower, .. } = dtype(intermediate)?.kind else {
            return Err(format!("tolerance class {class:?} names a dtype that is not a float"));
        };
        let b = bound(base, narrower.min(mantissa))?;
        return Ok(Bound { ulps: 0, k: b.k.max(b.ulps as f64), ..b });
    }
    let narrow = mantissa <= 10;
    let eps = 2f64.powi(-(mantissa as i32));
    let b = |ulps, k, unit_scale| Ok(Bound { ulps, k, eps, unit_scale });
    match class {
        "exact" => b(0, 0.0, false),
        "rounded" => b(i128::from(narrow), 0.0, false),
        "transc" if narrow => b(1, 1.0, true),
        "transc" => b(4, 4.0, true),
        _ => {
            let terms: f64 = class
                .strip_prefix("accum:")
                .and_then(|k| k.parse().ok())
                .ok_or_else(|| format!("unknown tolerance class {class:?}"))?;
            b(i128::from(narrow), 2.0 * terms + 4.0, false)
        }
    }
}

// ---------------------------------------------------------------------------------------------
// npy files: only what numpy writes for a C-order array (versions 1 to 3).

fn read_npy(path: &Path, dtype: &Dtype, shape: &[i64]) -> Result<Array, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let fail = |what: &str| format!("{}: {what}", path.display());
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err(fail("not an npy file"));
    }
    let (header_len, start) = match bytes[6] {
        1 => (usize::from(u16::from_le_bytes([bytes[8], bytes[9]])), 10),
        2 | 3 if bytes.len() >= 12 => {
            (u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize, 12)
        }
        _ => return Err(fail("unknown npy version")),
    };
    let header = bytes
        .get(start..start + header_len)
        .and_then(|h| std::str::from_utf8(h).ok())
        .ok_or_else(|| fail("truncated header"))?;
    if header.contains("'fortran_order': True") {
        return Err(fail("fortran order"));
    }
    if header.contains("'descr': '>") {
        return Err(fail("big-endian data"));
    }
    let n_elems: i64 = shape.iter().product();
    let data = &bytes[start + header_len..];
    if data.len() as i64 != n_elems * dtype.size as i64 {
        return Err(fail(&format!(
            "{} data bytes, expected {n_elems} elements of {} bytes",
            data.len(),
            dtype.size
        )));
    }
    Ok(Array { ty: dtype.ty, dims: shape.to_vec(), bytes: data.to_vec() })
}

// ---------------------------------------------------------------------------------------------
// One case in one form.

#[derive(Clone, Copy)]
enum Form {
    Proto,
    Text,
    /// The module after XLA CPU's optimisations (fusions, layout assignment, copies).
    Optimized,
}

impl Form {
    fn name(self) -> &'static str {
        match self {
            Form::Proto => "proto",
            Form::Text => "text",
            Form::Optimized => "optimized",
        }
    }

    fn file(self) -> &'static str {
        match self {
            Form::Proto => "module.pb",
            Form::Text => "module.hlo",
            Form::Optimized => "optimized.pb",
        }
    }
}

fn shape_of(desc: &Toml) -> Result<(Dtype, Vec<i64>), String> {
    let ty =
        dtype(desc.get("dtype").and_then(Toml::as_str).ok_or("case.toml: dtype is not a string")?)?;
    let shape = desc
        .get("shape")
        .and_then(Toml::as_array)
        .ok_or("case.toml: shape is not a list")?
        .iter()
        .map(|d| d.as_integer().ok_or("case.toml: dimension is not an integer"))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((ty, shape))
}

/// The case's `inputs` or `outputs`: an array of tables, absent when there is none.
fn descs<'c>(case: &'c Case, key: &str) -> Result<&'c [Toml], String> {
    match case.header.get(key) {
        None => Ok(&[]),
        Some(list) => {
            list.as_array().map(Vec::as_slice).ok_or(format!("case.toml: {key} is not a list"))
        }
    }
}

fn flatten(value: Value, out: &mut Vec<Array>) {
    match value {
        Value::Array(a) => out.push(a),
        Value::Tuple(items) => items.into_iter().for_each(|v| flatten(v, out)),
    }
}

/// The case's inputs, as case.toml describes them.
fn inputs(case: &Case) -> Result<Vec<Array>, String> {
    let mut args = Vec::new();
    for (i, desc) in descs(case, "inputs")?.iter().enumerate() {
        let (ty, shape) = shape_of(desc)?;
        args.push(read_npy(&case.file(&format!("input_{i}.npy")), &ty, &shape)?);
    }
    Ok(args)
}

/// Loads the module in `form` and evaluates it with this crate.
fn evaluate_here(case: &Case, form: Form) -> Result<Vec<Array>, String> {
    let source = std::fs::read(case.file(form.file())).map_err(|e| e.to_string())?;
    let module = hlo::load_module(&source).map_err(|e| format!("load_module: {e}"))?;
    let result = eval::evaluate(&module, &inputs(case)?, &EvalOptions::default())
        .map_err(|e| format!("evaluate: {e}"))?;
    let mut ours = Vec::new();
    flatten(result, &mut ours);
    Ok(ours)
}

/// Runs `nrtsim hlo run` on the module in `form` and reads back the outputs it wrote.
fn run_command(nrtsim: &Path, case: &Case, form: Form) -> Result<Vec<Array>, String> {
    let out_dir = case.file(&format!("nrtsim-{}", form.name()));
    let _ = std::fs::remove_dir_all(&out_dir);
    let n_inputs = descs(case, "inputs")?.len();
    let out = Command::new(nrtsim)
        .args(["hlo", "run"])
        .arg(case.file(form.file()))
        .args((0..n_inputs).flat_map(|i| {
            [std::ffi::OsString::from("--input"), case.file(&format!("input_{i}.npy")).into()]
        }))
        .arg("--output-dir")
        .arg(&out_dir)
        .output()
        .map_err(|e| format!("running {}: {e}", nrtsim.display()))?;
    if !out.status.success() {
        return Err(format!("nrtsim hlo run failed: {}", String::from_utf8_lossy(&out.stderr)));
    }
    let descs = descs(case, "outputs")?;
    let mut ours = Vec::new();
    for (i, desc) in descs.iter().enumerate() {
        let (ty, shape) = shape_of(desc)?;
        ours.push(read_npy(&out_dir.join(format!("output{i}.npy")), &ty, &shape)?);
    }
    if out_dir.join(format!("output{}.npy", descs.len())).exists() {
        return Err(format!("nrtsim hlo run wrote more than the {} outputs", descs.len()));
    }
    Ok(ours)
}

/// Differences from XLA that are known and reviewed: case, output index, and why. Such an output
/// must differ (an unexpected pass fails, so the list stays true); every other output must match.
const KNOWN_DIFFERENCES: &[(&str, usize, &str)] = &[
    // XLA CPU flushes subnormal inputs and results of arithmetic to zero (x86 FTZ/DAZ); the
    // interpreter keeps IEEE subnormals. Outputs 3 (f64 → f32, which underflows anyway), 5
    // (f32 → bf16, a rounding of the bits), 6 and 7 (reshape, bitcast) agree.
    ("subnormals_flush_to_zero", 0, "max(subnormal, 0) is 0 on XLA CPU"),
    ("subnormals_flush_to_zero", 1, "subnormal > 0 is false on XLA CPU"),
    ("subnormals_flush_to_zero", 2, "f32 subnormal converts to f64 0 on XLA CPU"),
    ("subnormals_flush_to_zero", 4, "f64 subnormal > 0 is false on XLA CPU"),
    ("subnormals_flush_to_zero", 8, "f64 to bf16 subnormal gives 0 on XLA CPU"),
];

/// Compares our outputs with XLA's, every output with its own tolerance class.
fn compare_outputs(case: &Case, ours: &[Array]) -> Result<(), Failed> {
    let outputs = descs(case, "outputs")?;
    if ours.len() != outputs.len() {
        return Err(format!("{} outputs, XLA gave {}", ours.len(), outputs.len()).into());
    }
    let known = |i: usize| KNOWN_DIFFERENCES.iter().any(|&(c, o, _)| c == case.name && o == i);
    let mut problems = Vec::new();
    for (i, (desc, ours)) in outputs.iter().zip(ours).enumerate() {
        let (ty, shape) = shape_of(desc)?;
        let class = desc["tolerance"].as_str().unwrap_or("exact");
        let xla = read_npy(&case.file(&format!("output_{i}.npy")), &ty, &shape)?;
        if ours.ty != xla.ty || ours.dims != xla.dims {
            problems.push(format!(
                "output {i}: ours is {:?}{:?}, XLA's {}{:?}",
                ours.ty, ours.dims, ty.name, xla.dims
            ));
            continue;
        }
        match (compare(ours, &xla, &ty, class), known(i)) {
            (Err(e), false) => {
                problems.push(format!("output {i} ({}{:?}, {class}): {e}", ty.name, xla.dims))
            }
            (Ok(_), true) => problems.push(format!(
                "output {i} matches XLA, but KNOWN_DIFFERENCES says it differs: remove it there"
            )),
            (Ok(spread), false) if std::env::var_os("NRTSIM_XLA_SPREAD").is_some() => {
                // For reviewing the tolerances: how close the passing outputs really are.
                eprintln!(
                    "spread {} output {i} {} {class}: {} ulps, k = {:.2}, {} of {} differ in bits",
                    case.name,
                    ty.name,
                    spread.ulps,
                    spread.k,
                    spread.differing,
                    xla.bytes.len() / ty.size
                );
            }
            _ => {}
        }
    }
    if problems.is_empty() { Ok(()) } else { Err(problems.join("\n").into()) }
}

/// How far apart two float arrays are, over the elements where both are finite.
#[derive(Default)]
struct Spread {
    /// The largest distance in representable values.
    ulps: i128,
    /// The largest `|ours - xla| / (eps * scale)`.
    k: f64,
    /// How many elements are not bit-identical (NaNs of any payload being alike).
    differing: usize,
}

/// Compares two arrays of the same dtype and shape element by element.
fn compare(ours: &Array, xla: &Array, ty: &Dtype, class: &str) -> Result<Spread, String> {
    if ours.bytes.len() != xla.bytes.len() {
        return Err(format!("{} bytes, XLA's {}", ours.bytes.len(), xla.bytes.len()));
    }
    let pairs = ours.bytes.chunks_exact(ty.size).zip(xla.bytes.chunks_exact(ty.size));
    let mut bad = Vec::new();
    let mut n_bad = 0usize;
    let mut spread = Spread::default();
    match ty.kind {
        Kind::Pred | Kind::Int => {
            for (index, (a, b)) in pairs.enumerate() {
                if a != b {
                    n_bad += 1;
                    if bad.len() < 6 {
                        bad.push(format!("[{index}] ours {a:02x?} XLA {b:02x?}"));
                    }
                }
            }
        }
        Kind::Float { bits, mantissa, has_inf } => {
            let bound = bound(class, mantissa)?;
            let decode = |b: &[u8]| decode_float(b, bits, mantissa, has_inf);
            let raw = |b: &[u8]| {
                let mut r = [0u8; 8];
                r[..b.len()].copy_from_slice(b);
                u64::from_le_bytes(r)
            };
            let eps = bound.eps;
            let max_abs = xla
                .bytes
                .chunks_exact(ty.size)
                .map(decode)
                .filter(|v| v.is_finite())
                .fold(0.0f64, |m, v| m.max(v.abs()));
            let scale = if bound.unit_scale { max_abs.max(1.0) } else { max_abs };
            for (index, (a, b)) in pairs.enumerate() {
                let (va, vb) = (decode(a), decode(b));
                let ulps = (ordinal(raw(a), bits) - ordinal(raw(b), bits)).abs();
                if raw(a) != raw(b) && !(va.is_nan() && vb.is_nan()) {
                    spread.differing += 1;
                }
                if va.is_finite() && vb.is_finite() {
                    spread.ulps = spread.ulps.max(ulps);
                    if scale > 0.0 {
                        spread.k = spread.k.max((va - vb).abs() / (eps * scale));
                    }
                }
                let ok = if va.is_nan() || vb.is_nan() {
                    va.is_nan() && vb.is_nan()
                } else if !va.is_finite() || !vb.is_finite() {
                    va == vb
                } else if class == "exact" {
                    raw(a) == raw(b)
                } else {
                    ulps <= bound.ulps || (va - vb).abs() <= bound.k * eps * scale
                };
                if !ok {
                    n_bad += 1;
                    if bad.len() < 6 {
                        bad.push(format!("[{index}] ours {va:e} XLA {vb:e} ({ulps} ulps)"));
                    }
                }
            }
        }
    }
    if n_bad == 0 {
        Ok(spread)
    } else {
        Err(format!("{n_bad} of {} elements differ: {}", xla.bytes.len() / ty.size, bad.join(", ")))
    }
}

/// The comparison's own pieces against values worked out by hand, so a decoder that says
/// everything is zero cannot make every case pass.
fn comparison_is_sound() -> Result<(), Failed> {
    let float = |name: &str, raw: u64| {
        let ty = dtype(name).expect("known dtype");
        let Kind::Float { bits, mantissa, has_inf } = ty.kind else { panic!("{name} is a float") };
        decode_float(&raw.to_le_bytes()[..ty.size], bits, mantissa, has_inf)
    };
    let known = [
        ("bf16", 0x3f80, 1.0),
        ("bf16", 0xc0a0, -5.0),
        ("f16", 0x3c00, 1.0),
        ("f16", 0x7bff, 65504.0),
        ("f16", 0x0001, 2f64.powi(-24)),
        ("f8e4m3fn", 0x7e, 448.0),
        ("f8e4m3fn", 0x01, 2f64.powi(-9)),
        ("f8e4m3fn", 0xb8, -1.0),
        ("f8e5m2", 0x7b, 57344.0),
        ("f8e5m2", 0x3c, 1.0),
        ("f8e5m2", 0x7c, f64::INFINITY),
        ("f32", 0x3fc0_0000, 1.5),
    ];
    for (name, raw, value) in known {
        let got = float(name, raw);
        if got != value {
            return Err(format!("{name} {raw:#x} decodes to {got}, expected {value}").into());
        }
    }
    for (name, raw) in [("f8e4m3fn", 0x7f), ("f8e4m3fn", 0xff), ("f8e5m2", 0x7d), ("bf16", 0x7fc0)]
    {
        if !float(name, raw).is_nan() {
            return Err(format!("{name} {raw:#x} is NaN").into());
        }
    }
    if ordinal(0x8000_0000, 32) != ordinal(0, 32)
        || ordinal(0xbf80_0001, 32) >= ordinal(0xbf80_0000, 32)
    {
        return Err("ordinal does not order floats by value".into());
    }
    let f32s = |values: &[f32]| Array::from_f32(&[values.len() as i64], values);
    let ty = dtype("f32")?;
    let one_up = f32::from_bits(1.0f32.to_bits() + 1);
    let cases: [(&[f32], &[f32], &str, bool); 10] = [
        (&[1.0, f32::NAN], &[1.0, -f32::NAN], "exact", true),
        (&[one_up], &[1.0], "exact", false),
        (&[-0.0], &[0.0], "exact", false),
        (&[one_up], &[1.0], "rounded", false),
        (&[one_up], &[1.0], "transc", true),
        (&[f32::INFINITY], &[f32::MAX], "accum:1000", false),
        (&[1.0 + 1e-5], &[1.0], "accum:10", false),
        (&[1.0 + 1e-6], &[1.0], "accum:10", true),
        (&[1.0 + 1e-3], &[1.0], "rounded@bf16", true),
        (&[1.0 + 1e-2], &[1.0], "rounded@bf16", false),
    ];
    for (ours, xla, class, pass) in cases {
        if compare(&f32s(ours), &f32s(xla), &ty, class).is_ok() != pass {
            return Err(format!("{ours:?} vs {xla:?} under {class}: expected pass = {pass}").into());
        }
    }
    if compare(&f32s(&[1.0]), &f32s(&[1.0]), &dtype("s32")?, "exact").is_err()
        || compare(&f32s(&[1.0]), &f32s(&[2.0]), &dtype("s32")?, "accum:9").is_ok()
    {
        return Err("integers are not compared bytewise".into());
    }
    Ok(())
}

/// How a case's module is run: by this crate in process, or by `nrtsim hlo run`.
#[derive(Clone)]
enum Runner {
    Library,
    Command(PathBuf),
}

/// Cases whose module after XLA's optimisations the interpreter does not yet evaluate as XLA
/// does, and why. Such a case's `optimized` test must fail (an unexpected pass fails, so the list
/// stays true); its `proto` and `text` tests are unaffected.
// Empty since the interpreter evaluates XLA CPU's custom-call TopK (what the optimiser rewrites
// `topk` into); keep the list for the next construct an optimised module uses.
const KNOWN_OPTIMIZED_FAILURES: &[(&str, &str)] = &[];

/// Runs one case in one form and checks the outcome: XLA's outputs within their tolerances, or,
/// for a case whose case.toml says `expect = "unsupported"`, a clear unsupported error (the
/// variant from the library; the word in the command's message). After XLA's optimisations an
/// unsupported construct may be gone (XLA expands rng-bit-generator into plain arithmetic): then
/// the outputs must match instead.
fn check(runner: &Runner, case: &Case, form: Form) -> Result<(), Failed> {
    let outcome = check_outcome(runner, case, form);
    let known = KNOWN_OPTIMIZED_FAILURES.iter().find(|&&(c, _)| c == case.name);
    match (form, known, outcome) {
        (Form::Optimized, Some(_), Err(_)) => Ok(()),
        (Form::Optimized, Some((_, why)), Ok(())) => Err(format!(
            "passes, but KNOWN_OPTIMIZED_FAILURES says it fails ({why}): remove it there"
        )
        .into()),
        (_, _, outcome) => outcome,
    }
}

fn check_outcome(runner: &Runner, case: &Case, form: Form) -> Result<(), Failed> {
    let unsupported = case.header.get("expect").and_then(Toml::as_str) == Some("unsupported");
    let may_be_gone = matches!(form, Form::Optimized);
    match runner {
        Runner::Library if unsupported => {
            let source = std::fs::read(case.file(form.file())).map_err(|e| e.to_string())?;
            let module = hlo::load_module(&source).map_err(|e| format!("load_module: {e}"))?;
            match eval::evaluate(&module, &inputs(case)?, &EvalOptions::default()) {
                Err(eval::EvalError::Unsupported { .. }) => Ok(()),
                Err(e) => Err(format!("expected an unsupported error, got: {e}").into()),
                Ok(result) if may_be_gone => {
                    let mut ours = Vec::new();
                    flatten(result, &mut ours);
                    compare_outputs(case, &ours)
                }
                Ok(_) => Err("evaluated a module expected to be unsupported".into()),
            }
        }
        Runner::Library => compare_outputs(case, &evaluate_here(case, form)?),
        Runner::Command(nrtsim) => match run_command(nrtsim, case, form) {
            Ok(ours) if !unsupported || may_be_gone => compare_outputs(case, &ours),
            Ok(_) => Err("nrtsim hlo run succeeded on a module expected to be unsupported".into()),
            Err(e) if unsupported && e.contains("unsupported") => Ok(()),
            Err(e) => Err(e.into()),
        },
    }
}

/// One trial per case × form of `set`, checked by `check`; or one trial saying why there are none.
fn trials_for(python: &Result<PathBuf, String>, set: &'static str, runner: Runner) -> Vec<Trial> {
    let python = match python {
        Ok(python) => python,
        Err(reason) => {
            // No reference to compare with: ignored with the reason, or a failure under CI.
            let reason = reason.clone();
            return vec![
                Trial::test(format!("{set}::xla_reference"), move || Err(reason.clone().into()))
                    .with_ignored_flag(!pyref::required()),
            ];
        }
    };
    let fail = |reason: String| {
        vec![Trial::test(format!("{set}::export"), move || Err(reason.clone().into()))]
    };
    let (dir, names) = match export(python, set) {
        Ok(exported) => exported,
        Err(reason) => return fail(reason),
    };
    let minimum = if set == "cross" { 40 } else { 3 };
    if names.len() < minimum {
        return fail(format!("export.py wrote {} cases, expected at least {minimum}", names.len()));
    }
    let mut trials = Vec::new();
    for name in names {
        for form in [Form::Proto, Form::Text, Form::Optimized] {
            let dir = dir.join(&name);
            let runner = runner.clone();
            let label = if set == "cross" { name.clone() } else { format!("{set}::{name}") };
            trials.push(Trial::test(format!("{label}::{}", form.name()), move || {
                check(&runner, &Case::open(&dir)?, form)
            }));
        }
    }
    trials
}

/// The few exported cases committed under `tests/xla/fixtures` (edge semantics of integer
/// division, shifts, NaN, converts, sort, top-k and the narrow floats; in their optimised form
/// XLA's layout and type bitcasts and its TopK custom call), checked with or without Python.
/// Their `cases.txt`, which the export wrote and which regenerating them names, must list the
/// same cases as the folders.
fn fixture_trials() -> Vec<Trial> {
    let cases = corpus::cases("xla/fixtures");
    let mut trials = Vec::new();
    let list = corpus::root().join("tests/xla/fixtures/cases.txt");
    let listed = std::fs::read_to_string(&list).map(|text| {
        let mut names: Vec<String> = text.lines().map(str::to_owned).collect();
        names.sort();
        names
    });
    let names: Vec<String> = cases.iter().map(|case| case.name.clone()).collect();
    match listed {
        Ok(listed) if listed == names => {}
        Ok(listed) => {
            let reason = format!("{} lists {listed:?}, the folders are {names:?}", list.display());
            trials.push(Trial::test("fixture::list", move || Err(reason.clone().into())));
        }
        Err(e) => {
            let reason = format!("{}: {e}", list.display());
            trials.push(Trial::test("fixture::list", move || Err(reason.clone().into())));
        }
    }
    for case in cases {
        for form in [Form::Proto, Form::Text, Form::Optimized] {
            let case = case.clone();
            trials
                .push(Trial::test(format!("fixture::{}::{}", case.name, form.name()), move || {
                    check(&Runner::Library, &case, form)
                }));
        }
    }
    trials
}

fn main() {
    let args = Arguments::from_args();
    let python = pyref::find_for("xla_cross_check", &["jax", "jaxlib", "numpy", "ml_dtypes"]);
    let mut trials = vec![Trial::test("comparison_is_sound", comparison_is_sound)];
    trials.extend(fixture_trials());
    trials.extend(trials_for(&python, "cross", Runner::Library));
    // Acceptance by hand: graphs the tests never run, through the command line, when asked
    // for with the path of an `nrtsim` binary.
    if let Some(nrtsim) = std::env::var_os("NRTSIM_HLO_ACCEPTANCE") {
        trials.extend(trials_for(&python, "acceptance", Runner::Command(nrtsim.into())));
    }
    libtest_mimic::run(&args, trials).exit();
}
