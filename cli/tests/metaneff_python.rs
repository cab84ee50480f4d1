//! Cross-implementation check: our metaneff bytes and text against Google's Python protobuf.
//!
//! Python bindings are generated from `abi/proto/metaneff.proto` by grpc_tools' protoc, so the
//! schema is ours and the encoder is independent. The checks, both ways:
//! - messages built in Python decode here and re-encode to Python's exact bytes, also through the
//!   `nrtsim metaneff decode | encode` command line;
//! - messages built here (among them what `metaneff from-hlo` writes for the jax fixtures) are
//!   re-serialized by Python to our exact bytes, and Python's text-format
//!   parser reads our text output back to the same bytes.
//!
//! It needs a Python with the `protobuf` and `grpcio-tools` packages: `NRTSIM_PYTHON`, else the
//! virtual environment `.ci/run` makes in `target/pyenv`, else `python3`. Without one the tests are
//! reported as ignored, with the reason; under CI (`CI` set) they fail instead.

use std::path::{Path, PathBuf};
use std::process::Command;

use abi::metaneff::meta_tensor::{DataType, Type};
use abi::metaneff::{self, MetaNeff, MetaTensor, ModelConfig};
use libtest_mimic::{Arguments, Failed, Trial};

mod support;

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf()
}

fn run_python(python: &Path, mode: &str, dir: &Path) -> Result<(), Failed> {
    let script = workspace_root().join("cli/tests/python/metaneff_interop.py");
    let out = Command::new(python)
        .arg(script)
        .arg(workspace_root().join("abi/proto"))
        .arg(mode)
        .arg(dir)
        .output()
        .map_err(|e| format!("running {}: {e}", python.display()))?;
    if !out.status.success() {
        return Err(
            format!("python {mode} failed: {}", String::from_utf8_lossy(&out.stderr)).into()
        );
    }
    Ok(())
}

/// Files `prefix_N.ext` in `dir`, in N order.
fn numbered(dir: &Path, prefix: &str, ext: &str) -> Vec<PathBuf> {
    let mut files: Vec<(usize, PathBuf)> = std::fs::read_dir(dir)
        .expect("read scratch dir")
        .filter_map(|e| {
            let path = e.ok()?.path();
            let name = path.file_name()?.to_str()?;
            let n = name.strip_prefix(prefix)?.strip_suffix(ext)?.parse().ok()?;
            Some((n, path))
        })
        .collect();
    files.sort();
    files.into_iter().map(|(_, p)| p).collect()
}

fn python_bytes_decode_and_reencode_identically(python: &Path) -> Result<(), Failed> {
    let dir = support::scratch("from-python");
    run_python(python, "gen", &dir)?;
    let files = numbered(&dir, "py_", ".pb");
    if files.len() < 40 {
        return Err(format!("python wrote {} messages, expected at least 40", files.len()).into());
    }
    for file in &files {
        let bytes = std::fs::read(file).map_err(|e| e.to_string())?;
        let decoded = metaneff::decode(&bytes).map_err(|e| format!("{}: {e}", file.display()))?;
        if metaneff::encode(&decoded) != alias_entries_ascending(&bytes) {
            return Err(
                format!("{}: our re-encoding differs from python's bytes", file.display()).into()
            );
        }
    }
    Ok(())
}

fn nrtsim_cli_round_trips_python_bytes(python: &Path) -> Result<(), Failed> {
    let dir = support::scratch("cli");
    run_python(python, "gen", &dir)?;
    for file in numbered(&dir, "py_", ".pb") {
        let original = std::fs::read(&file).map_err(|e| e.to_string())?;
        for format in ["text", "json"] {
            let printed = dir.join(format!("decoded.{format}"));
            let reencoded = dir.join("reencoded.pb");
            let preserved = dir.join("preserved.pb");
            let decode = Command::new(env!("CARGO_BIN_EXE_nrtsim"))
                .args(["metaneff", "decode", "--format", format])
                .arg(&file)
                .output()
                .map_err(|e| e.to_string())?;
            if !decode.status.success() {
                return Err(String::from_utf8_lossy(&decode.stderr).into_owned().into());
            }
            std::fs::write(&printed, &decode.stdout).map_err(|e| e.to_string())?;
            let encode = Command::new(env!("CARGO_BIN_EXE_nrtsim"))
                .args(["metaneff", "encode", "--format", format, "-o"])
                .arg(&reencoded)
                .arg(&printed)
                .output()
                .map_err(|e| e.to_string())?;
            if !encode.status.success() {
                return Err(String::from_utf8_lossy(&encode.stderr).into_owned().into());
            }
            // Encoding is canonical: alias entries ascending, whatever order python wrote.
            let expected = alias_entries_ascending(&original);
            if std::fs::read(&reencoded).map_err(|e| e.to_string())? != expected {
                return Err(format!("{} via {format}: bytes differ", file.display()).into());
            }
            if format == "text" {
                // With --preserve-order, text gives back python's own bytes, entry order included.
                let encode = Command::new(env!("CARGO_BIN_EXE_nrtsim"))
                    .args(["metaneff", "encode", "--preserve-order", "-o"])
                    .arg(&preserved)
                    .arg(&printed)
                    .output()
                    .map_err(|e| e.to_string())?;
                if !encode.status.success() {
                    return Err(String::from_utf8_lossy(&encode.stderr).into_owned().into());
                }
                if std::fs::read(&preserved).map_err(|e| e.to_string())? != original {
                    return Err(format!(
                        "{} via text --preserve-order: bytes differ",
                        file.display()
                    )
                    .into());
                }
            }
        }
    }
    Ok(())
}

/// Messages built here, independently of the Python cases: the worked example of docs/libtorchneuron.md §6 and a deterministic
/// pseudo-random set.
fn rust_messages() -> Vec<MetaNeff> {
    let tensor = |name: &str, shape: &[i64], data_type: DataType, kind: Type| MetaTensor {
        name: name.as_bytes().to_vec().into(),
        shape: shape.to_vec(),
        data_type: data_type as i32,
        r#type: kind as i32,
        ..Default::default()
    };
    let mut messages = vec![MetaNeff {
        input_tensors: vec![tensor("input0", &[1, 1, 1, 32], DataType::Float, Type::UserInput)],
        output_tensors: vec![tensor(
            "output0",
            &[1, 1, 1, 32],
            DataType::Float,
            Type::UndefinedType,
        )],
        model_config: Some(ModelConfig { return_aliases: true, ..Default::default() }),
        serialized_graph_def: b"hlo".to_vec().into(),
        output_aliases_to: [(0, 0)].into(),
        ..Default::default()
    }];
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move |n: u64| {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (state >> 33) % n
    };
    for _ in 0..40 {
        let mut m = MetaNeff::default();
        for side in 0..2 {
            for i in 0..next(4) {
                let mut t = tensor(
                    &format!("{}{i}", if side == 0 { "input" } else { "output" }),
                    &(0..next(5))
                        .map(|_| [0, 1, 3, -2, 1 << 50][next(5) as usize])
                        .collect::<Vec<_>>(),
                    DataType::try_from(next(17) as i32).unwrap_or(DataType::Float),
                    Type::try_from(next(4) as i32).unwrap_or(Type::UserInput),
                );
                t.allow_dynamic_batch_size = next(2) == 1;
                t.checkpoint_key = (next(2) == 1).then(|| b"w".repeat(next(3) as usize).into());
                t.user_input_key = (next(3) == 0).then(|| vec![0xff, 0x00].into());
                t.content = if next(4) == 0 { vec![1, 2, 3].into() } else { Default::default() };
                if side == 0 { m.input_tensors.push(t) } else { m.output_tensors.push(t) }
            }
        }
        if next(2) == 1 {
            m.model_config = Some(ModelConfig {
                timeout: next(3) as i64 - 1,
                lazy_load: next(2) == 1,
                ..Default::default()
            });
        }
        for _ in 0..next(3) {
            m.output_aliases_to.insert(next(5) as i64 - 1, next(4) as i64);
        }
        m.num_weights = next(3) as i64;
        messages.push(m);
    }
    // What `nrtsim metaneff from-hlo` writes for the jax fixtures, with their weights.
    let models = Path::new(env!("CARGO_MANIFEST_DIR")).join("../conformance/tests/models");
    for fixture in testkit::model_fixture::ModelFixture::load_all(&models).expect("fixtures") {
        let Some(weights) = &fixture.weights else { continue };
        let parse = |choices: &[String]| -> Vec<check::from_hlo::ParameterChoice> {
            choices.iter().map(|c| c.parse().expect("a fixture's choice parses")).collect()
        };
        let options = check::from_hlo::FromHloOptions {
            weights: parse(&weights.weight),
            states: parse(&weights.state),
            ..Default::default()
        };
        let module = std::fs::read(fixture.module()).expect("the fixture's module");
        messages.push(
            check::from_hlo::metaneff_message_from_hlo(&module, &options)
                .expect("the fixture's metaneff"),
        );
    }
    messages
}

fn python_reads_our_bytes_and_text(python: &Path) -> Result<(), Failed> {
    let dir = support::scratch("from-rust");
    let messages = rust_messages();
    for (i, message) in messages.iter().enumerate() {
        let bytes = metaneff::encode(message);
        std::fs::write(dir.join(format!("rs_{i}.pb")), &bytes).map_err(|e| e.to_string())?;
        let text = metaneff::text::to_text(&bytes).map_err(|e| e.to_string())?.text;
        std::fs::write(dir.join(format!("rs_{i}.txt")), text).map_err(|e| e.to_string())?;
    }
    run_python(python, "reencode", &dir)?;
    for (i, message) in messages.iter().enumerate() {
        let ours = metaneff::encode(message);
        for source in ["pb", "txt"] {
            let path = dir.join(format!("rs_{i}.{source}.py.pb"));
            let theirs = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            if alias_entries_ascending(&theirs) != ours {
                return Err(format!(
                    "message {i} from our {source}: python wrote {theirs:02x?}, we wrote {ours:02x?}"
                )
                .into());
            }
        }
    }
    Ok(())
}

/// `bytes` with its top-level `output_aliases_to` entries (field 6) sorted by key, each in one of
/// the places the entries held, every other byte unchanged. Python's upb writes map entries in
/// descending key order even in deterministic mode, libprotobuf and we in ascending order; this is
/// the only difference these checks allow, and only in the library-level comparisons (the command
/// line keeps the order it was given).
fn alias_entries_ascending(bytes: &[u8]) -> Vec<u8> {
    let fields: Vec<_> = abi::wire::fields(bytes).collect::<Result<_, _>>().expect("well-formed");
    let mut entries: Vec<(i64, &[u8])> = fields
        .iter()
        .filter(|f| f.number == 6)
        .map(|f| {
            let key = match f.value {
                abi::wire::FieldValue::Len(entry) => abi::wire::fields(entry)
                    .flatten()
                    .find(|e| e.number == 1)
                    .and_then(|e| match e.value {
                        abi::wire::FieldValue::Varint(v) => Some(v as i64),
                        _ => None,
                    })
                    .unwrap_or(0),
                _ => 0,
            };
            (key, &bytes[f.start..f.end])
        })
        .collect();
    entries.sort_by_key(|&(key, _)| key);
    let mut sorted = entries.into_iter();
    let mut out = Vec::with_capacity(bytes.len());
    for f in &fields {
        match f.number {
            6 => out.extend_from_slice(sorted.next().expect("same count").1),
            _ => out.extend_from_slice(&bytes[f.start..f.end]),
        }
    }
    out
}

fn main() {
    let args = Arguments::from_args();
    let python = pyref::find_for("metaneff_python", &["google.protobuf", "grpc_tools"]);
    type Check = fn(&Path) -> Result<(), Failed>;
    let checks: [(&str, Check); 3] = [
        (
            "python_bytes_decode_and_reencode_identically",
            python_bytes_decode_and_reencode_identically,
        ),
        ("nrtsim_cli_round_trips_python_bytes", nrtsim_cli_round_trips_python_bytes),
        ("python_reads_our_bytes_and_text", python_reads_our_bytes_and_text),
    ];
    let trials = checks
        .into_iter()
        .map(|(name, check)| {
            let python = python.clone();
            let ignored = pyref::ignored(&python);
            Trial::test(name, move || match &python {
                Ok(python) => check(python),
                Err(reason) => Err(reason.clone().into()),
            })
            .with_ignored_flag(ignored)
        })
        .collect();
    libtest_mimic::run(&args, trials).exit();
}
