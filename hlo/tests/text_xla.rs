//! Our HLO text and proto handling against XLA's own, on modules jax 0.10.2 wrote.
//!
//! The fixtures (`tests/fixtures/<name>/`: `module.hlo`, `old.hlo`, `xla.pb`, `jax.pb`) are
//! output of XLA, made by `tests/fixtures/export.py`: the text jax prints, the same module in
//! XLA's old print style, XLA's parse of the text serialized as a proto, and the proto jax lowered.
//! The expected values are XLA's, never ours. Each folder's header, `case.toml`, is written by
//! hand: what the module exercises (`about`) and what wrote it (`producer`).
//! One named test per fixture and check (`cargo test -p nrtsim-hlo --test text_xla conv`).
//!
//! `xla_loads_every_committed_proto` has XLA load every committed binary module under `tests/`
//! from the proto (not the text) and compute, on seeded inputs, what it computes from the text.
//! `xla_names_instructions_as_we_do` has XLA parse a text whose instruction names repeat across
//! computations, and load our encoding of it.
//!
//! `fresh_export_matches_the_fixtures` re-runs the export with the pinned jax and requires the
//! same bytes, so the fixtures are known to be XLA's output. It needs a Python with jax:
//! `NRTSIM_PYTHON`, else `target/pyenv/bin/python` (made by `cargo xtask test`), else `python3`; without
//! one it reports itself ignored with the reason, and under CI (`CI` set) it fails.

mod corpus;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use corpus::Case;
use hlo::proto::{HloModuleProto, ShapeProto};
use libtest_mimic::{Arguments, Failed, Trial};

fn fixture_dir() -> PathBuf {
    corpus::root().join("tests/fixtures")
}

/// The fixtures, each with a header that says what the module exercises and what wrote it.
fn fixtures() -> Vec<Case> {
    let cases = corpus::cases("fixtures");
    assert!(cases.len() >= 10, "fixtures missing from {}", fixture_dir().display());
    for case in &cases {
        let keys: Vec<&str> = case.header.keys().map(String::as_str).collect();
        assert_eq!(keys, ["about", "producer"], "{}/case.toml", case.folder.display());
        for value in case.header.values() {
            assert!(value.as_str().is_some(), "{}/case.toml: {value}", case.folder.display());
        }
    }
    cases
}

fn read(case: &Case, file: &str) -> Vec<u8> {
    let path = case.file(file);
    fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn text(case: &Case, file: &str) -> String {
    String::from_utf8(read(case, file)).unwrap()
}

fn xla_text_prints_back_byte_for_byte(case: &Case) {
    let src = text(case, "module.hlo");
    let module =
        hlo::text::parse_module(&src).unwrap_or_else(|e| panic!("{}: {e}", case.folder.display()));
    let printed = hlo::text::print_module(&module).unwrap();
    assert_eq!(printed, src, "{}", case.folder.display());
}

/// The one place we read text differently from XLA: its lexer takes `-0` for the integer 0, so a
/// float constant printed as `-0` comes back as +0 (its old-style print of the parse says `0`).
/// We keep the sign, so that printing stays a fixed point. Comparisons with XLA's parse map -0
/// to +0 on both sides first.
fn without_negative_zeros(mut m: HloModuleProto) -> HloModuleProto {
    fn literal(l: &mut hlo::proto::LiteralProto) {
        l.f32s.iter_mut().filter(|v| **v == 0.0).for_each(|v| *v = 0.0);
        l.f64s.iter_mut().filter(|v| **v == 0.0).for_each(|v| *v = 0.0);
        l.tuple_literals.iter_mut().for_each(literal);
    }
    for c in &mut m.computations {
        c.instructions.iter_mut().filter_map(|i| i.literal.as_deref_mut()).for_each(literal);
    }
    m
}

fn old_style_text_parses_to_the_same_module(case: &Case) {
    let new = without_negative_zeros(hlo::text::parse_module(&text(case, "module.hlo")).unwrap());
    let old = hlo::text::parse_module(&text(case, "old.hlo"))
        .unwrap_or_else(|e| panic!("{}: {e}", case.file("old.hlo").display()));
    let old = without_negative_zeros(old);
    assert_eq!(hlo::encode_module(&old), hlo::encode_module(&new), "{}", case.folder.display());
}

fn xla_binary_prints_as_xla_text(case: &Case) {
    let module = hlo::decode_module(&read(case, "xla.pb")).unwrap();
    let printed = hlo::text::print_module(&module)
        .unwrap_or_else(|e| panic!("{}: {e}", case.folder.display()));
    // XLA's parse turned `-0` into +0 (see `without_negative_zeros`), so its proto prints `0`.
    let expected = text(case, "module.hlo").replace("constant(-0)", "constant(0)");
    assert_eq!(printed, expected, "{}", case.folder.display());
}

/// jax's own proto (the lowering's ids, with metadata) prints as jax's text when metadata is off.
fn jax_proto_prints_as_jax_text(case: &Case) {
    let module = hlo::decode_module(&read(case, "jax.pb")).unwrap();
    let options = hlo::text::PrintOptions { metadata: false };
    let printed = hlo::text::print_module_with(&module, &options)
        .unwrap_or_else(|e| panic!("{}: {e}", case.folder.display()));
    assert_eq!(printed, text(case, "module.hlo"), "{}", case.folder.display());
}

/// XLA writes a layout for scalars too, and empty metadata and frontend attributes on every
/// instruction; the text form has neither, so they are dropped before comparing. (A literal's
/// shape keeps its scalar layouts: XLA's reader requires them, and our parser writes them.)
fn without_xla_noise(mut m: HloModuleProto) -> HloModuleProto {
    fn shape(s: &mut ShapeProto) {
        if s.dimensions.is_empty() && s.layout.as_ref().is_some_and(|l| l.minor_to_major.is_empty())
        {
            s.layout = None;
        }
        s.tuple_shapes.iter_mut().for_each(shape);
    }
    for c in &mut m.computations {
        if let Some(p) = &mut c.program_shape {
            p.parameters.iter_mut().for_each(shape);
            p.result.iter_mut().for_each(shape);
        }
        for i in &mut c.instructions {
            i.shape.iter_mut().for_each(shape);
            if i.metadata == Some(Default::default()) {
                i.metadata = None;
            }
            if i.frontend_attributes == Some(Default::default()) {
                i.frontend_attributes = None;
            }
        }
    }
    if let Some(p) = &mut m.host_program_shape {
        p.parameters.iter_mut().for_each(shape);
        p.result.iter_mut().for_each(shape);
    }
    m
}

fn our_parse_equals_xla_parse_field_by_field(case: &Case) {
    // Our constants carry scalar layouts (XLA's reader needs them), which the noise filter drops.
    let ours = without_xla_noise(without_negative_zeros(
        hlo::text::parse_module(&text(case, "module.hlo")).unwrap(),
    ));
    let xla = without_xla_noise(hlo::decode_module(&read(case, "xla.pb")).unwrap());
    let name = case.folder.display();
    assert_eq!(ours.entry_computation_id, xla.entry_computation_id, "{name}");
    assert_eq!(ours.computations.len(), xla.computations.len(), "{name}");
    for (c_ours, c_xla) in ours.computations.iter().zip(&xla.computations) {
        assert_eq!(
            (c_ours.id, c_ours.root_id, &c_ours.name),
            (c_xla.id, c_xla.root_id, &c_xla.name),
            "{name}"
        );
        assert_eq!(c_ours.instructions.len(), c_xla.instructions.len(), "{name} {}", c_ours.name);
        for (i_ours, i_xla) in c_ours.instructions.iter().zip(&c_xla.instructions) {
            // Byte equality, so that NaN constants compare equal to themselves.
            assert!(
                prost::Message::encode_to_vec(i_ours) == prost::Message::encode_to_vec(i_xla),
                "{name} {}:\n ours {i_ours:?}\n xla  {i_xla:?}",
                c_ours.name
            );
        }
        assert_eq!(c_ours.program_shape, c_xla.program_shape, "{name} {}", c_ours.name);
    }
    assert_eq!(ours.host_program_shape, xla.host_program_shape, "{name}");
}

/// Re-runs the export into a scratch directory and requires the committed bytes.
fn fresh_export_matches_the_fixtures(python: &Path) -> Result<(), Failed> {
    let scratch = std::env::temp_dir().join(format!("nrtsim-hlo-export-{}", std::process::id()));
    let _ = fs::remove_dir_all(&scratch);
    let out = Command::new(python)
        .arg(fixture_dir().join("export.py"))
        .arg(&scratch)
        .output()
        .map_err(|e| format!("running {}: {e}", python.display()))?;
    if !out.status.success() {
        return Err(format!("export.py failed: {}", String::from_utf8_lossy(&out.stderr)).into());
    }
    let mut problems = Vec::new();
    let mut count = 0;
    // Every file the export wrote (each ends with ""), by its path in the scratch folder.
    for path in corpus::files_under(&scratch, &[""]) {
        let name = path.strip_prefix(&scratch).map_err(|e| e.to_string())?;
        let committed = fs::read(fixture_dir().join(name));
        count += 1;
        match committed {
            Ok(bytes) if bytes == fs::read(&path).map_err(|e| e.to_string())? => {}
            Ok(_) => problems.push(format!("{} differs", name.display())),
            Err(_) => problems.push(format!("{} is not committed", name.display())),
        }
    }
    let _ = fs::remove_dir_all(&scratch);
    if count == 0 {
        problems.push("the export wrote nothing".into());
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "re-export with {}: {} (rerun export.py and review)",
            python.display(),
            problems.join(", ")
        )
        .into())
    }
}

/// Every committed binary module under `tests/` (the fixtures' `xla.pb` and `jax.pb`, and
/// `xla/fixtures/*/module.pb` and `optimized.pb`), with the HLO text it came from.
fn committed_protos() -> Vec<(PathBuf, PathBuf)> {
    let mut pairs = Vec::new();
    for case in fixtures() {
        for file in ["xla.pb", "jax.pb"] {
            let proto = case.file(file);
            if proto.is_file() {
                pairs.push((proto, case.file("module.hlo")));
            }
        }
    }
    for case in corpus::cases("xla/fixtures") {
        for file in ["module.pb", "optimized.pb"] {
            pairs.push((case.file(file), case.file("module.hlo")));
        }
    }
    pairs
}

/// XLA loads every committed proto from the proto and computes, on seeded inputs, what it
/// computes from the module's text (all but the modules XLA CPU already optimised, which are
/// only loaded); prints the counts.
fn xla_loads_every_committed_proto(python: &Path) -> Result<(), Failed> {
    let scratch = Path::new(env!("CARGO_TARGET_TMPDIR")).join("xla-load-protos");
    fs::create_dir_all(&scratch).map_err(|e| e.to_string())?;
    let pairs = committed_protos();
    let mut jobs = Vec::new();
    for (proto, text) in &pairs {
        let module = hlo::decode_module(&fs::read(proto).map_err(|e| e.to_string())?)
            .map_err(|e| format!("{}: {e}", proto.display()))?;
        let shape = module
            .host_program_shape
            .ok_or_else(|| format!("{}: no host program shape", proto.display()))?;
        let params: Vec<serde_json::Value> = shape
            .parameters
            .iter()
            .map(|p| {
                serde_json::json!({
                    "type": p.element_type().as_str_name().to_lowercase(),
                    "shape": p.dimensions,
                })
            })
            .collect();
        // A module XLA CPU already optimised is loaded only: compiling it again aborts XLA.
        let run = !proto.ends_with("optimized.pb");
        jobs.push(
            serde_json::json!({ "proto": proto, "text": text, "params": params, "run": run }),
        );
    }
    let jobs_path = scratch.join("jobs.json");
    let report_path = scratch.join("report.json");
    fs::write(&jobs_path, serde_json::Value::from(jobs).to_string()).map_err(|e| e.to_string())?;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/xla/load_protos.py");
    let out = Command::new(python)
        .arg(&script)
        .arg(&jobs_path)
        .arg(&report_path)
        .output()
        .map_err(|e| format!("running {}: {e}", python.display()))?;
    if !out.status.success() {
        return Err(
            format!("load_protos.py failed: {}", String::from_utf8_lossy(&out.stderr)).into()
        );
    }
    let report: serde_json::Value =
        serde_json::from_slice(&fs::read(&report_path).map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
    let loaded = report["loaded"].as_u64().unwrap_or(0);
    let ran = report["ran"].as_u64().unwrap_or(0);
    eprintln!(
        "text_xla: XLA loaded {loaded} of {} committed protos under hlo/tests from the proto, and \
         computed the text's results from {ran} (the already-optimised ones are only loaded)",
        pairs.len()
    );
    let failures: Vec<&str> =
        report["failures"].as_array().into_iter().flatten().filter_map(|f| f.as_str()).collect();
    if !failures.is_empty() || loaded != pairs.len() as u64 {
        return Err(failures.join("\n").into());
    }
    Ok(())
}

/// Instruction names that repeat across computations (and need making identifiers), as
/// `text.rs`'s renaming case has them and more.
const REPEATED_NAMES: &str = "HloModule m

f {
  x = f32[] parameter(0)
  y.3 = f32[] negate(x)
  ROOT y = f32[] negate(y.3)
}

ENTRY e {
  x = f32[] parameter(0)
  y.3 = f32[] negate(x)
  y.03 = f32[] negate(y.3)
  x.0 = f32[] negate(y.03)
  ROOT y = f32[] call(x.0), to_apply=f
}
";

/// XLA parses [`REPEATED_NAMES`] and names every instruction as our parse does, and XLA's proto
/// reader loads our encoding of it (it refuses a name used twice).
fn xla_names_instructions_as_we_do(python: &Path) -> Result<(), Failed> {
    let scratch = Path::new(env!("CARGO_TARGET_TMPDIR")).join("xla-names");
    fs::create_dir_all(&scratch).map_err(|e| e.to_string())?;
    let (text_path, xla_path, ours_path) =
        (scratch.join("names.hlo"), scratch.join("xla.pb"), scratch.join("ours.pb"));
    let ours = hlo::load_module(REPEATED_NAMES.as_bytes()).map_err(|e| e.to_string())?;
    fs::write(&text_path, REPEATED_NAMES).map_err(|e| e.to_string())?;
    fs::write(&ours_path, hlo::encode_module(&ours)).map_err(|e| e.to_string())?;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/xla/parse_text.py");
    let out = Command::new(python)
        .arg(&script)
        .args([&text_path, &xla_path, &ours_path])
        .output()
        .map_err(|e| format!("running {}: {e}", python.display()))?;
    if !out.status.success() {
        return Err(
            format!("parse_text.py failed: {}", String::from_utf8_lossy(&out.stderr)).into()
        );
    }
    let xla = hlo::decode_module(&fs::read(&xla_path).map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    let names = |m: &HloModuleProto| -> Vec<String> {
        m.computations.iter().flat_map(|c| &c.instructions).map(|i| i.name.clone()).collect()
    };
    if names(&ours) != names(&xla) {
        return Err(format!("ours {:?}, XLA's {:?}", names(&ours), names(&xla)).into());
    }
    Ok(())
}

fn main() {
    let args = Arguments::from_args();
    type Check = fn(&Case);
    let checks: [(&str, Check); 5] = [
        ("prints_back_byte_for_byte", xla_text_prints_back_byte_for_byte),
        ("old_style_parses_to_the_same_module", old_style_text_parses_to_the_same_module),
        ("xla_binary_prints_as_xla_text", xla_binary_prints_as_xla_text),
        ("parse_equals_xla_parse", our_parse_equals_xla_parse_field_by_field),
        ("jax_proto_prints_as_jax_text", jax_proto_prints_as_jax_text),
    ];
    let mut trials = Vec::new();
    for case in fixtures() {
        for (check_name, check) in checks {
            let case = case.clone();
            trials.push(Trial::test(format!("{}::{check_name}", case.name), move || {
                check(&case);
                Ok(())
            }));
        }
    }
    let python = pyref::find_for("text_xla: fresh_export_matches_the_fixtures", &["jax", "jaxlib"]);
    let ignored = pyref::ignored(&python);
    trials.push(
        Trial::test("fresh_export_matches_the_fixtures", move || match &python {
            Ok(python) => fresh_export_matches_the_fixtures(python),
            Err(reason) => Err(reason.clone().into()),
        })
        .with_ignored_flag(ignored),
    );
    let python = pyref::find_for(
        "text_xla: xla_loads_every_committed_proto",
        &["jax", "jaxlib", "numpy", "ml_dtypes"],
    );
    let ignored = pyref::ignored(&python);
    trials.push(
        Trial::test("xla_loads_every_committed_proto", move || match &python {
            Ok(python) => xla_loads_every_committed_proto(python),
            Err(reason) => Err(reason.clone().into()),
        })
        .with_ignored_flag(ignored),
    );
    let python = pyref::find_for("text_xla: xla_names_instructions_as_we_do", &["jax", "jaxlib"]);
    let ignored = pyref::ignored(&python);
    trials.push(
        Trial::test("xla_names_instructions_as_we_do", move || match &python {
            Ok(python) => xla_names_instructions_as_we_do(python),
            Err(reason) => Err(reason.clone().into()),
        })
        .with_ignored_flag(ignored),
    );
    libtest_mimic::run(&args, trials).exit();
}
