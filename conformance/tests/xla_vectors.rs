//! XLA validity of every vector's device program: XLA on CPU (jax's jaxlib, the pinned Python
//! `cargo xtask test` installs) parses each `model.hlo` with its own parser, compiles it, and runs
//! it on the arguments of every launch the simulator made while running the vector; its results
//! must equal the simulator's byte for byte (any NaN equals any NaN). One trial per vector. The
//! launches of a collective program (`nrt_load_collectives`) run round by round: the ranks of one
//! round as one XLA execution of that many replicas, so a collective's results are XLA's too.
//!
//! The module the vector carries as protos is XLA's too: XLA loads each of them from the proto,
//! not the text — `model.hlo.pb`, the metaneff's `serialized_graph_def` and the NEFF's
//! `sim/model.hlo.pb` member — and runs them on the same launches; their results must equal the
//! text's and the simulator's. The host program shape we derive for text without an
//! `entry_computation_layout` must equal the one XLA's parser derives. The test prints how many
//! protos XLA loaded of each kind.
//!
//! It needs a Python with jax, jaxlib, numpy and ml_dtypes, found by `pyref`. Without one every
//! trial is reported ignored with the reason; under CI (`CI` set) they fail instead.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use abi::runtime::prelude::*;
use conformance::vector::{self, HLO_TEXT_FILE, Vector};
use hlo::proto::{PrimitiveType, ProgramShapeProto};
use libtest_mimic::{Arguments, Failed, Trial};

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf()
}

/// An HLO element type name and dimensions.
type Leaf = (String, Vec<i64>);

/// The HLO text type and dimensions of each entry parameter, and the number of result leaves.
fn leaves(text: &str) -> Result<(Vec<Leaf>, usize), String> {
    let bytes = text.as_bytes();
    let (params, results) =
        sim::device_program::entry_signature(bytes).map_err(|e| e.to_string())?;
    let named = params
        .iter()
        .map(|(dltype, dims)| (sim::hlo_text::type_name(*dltype).to_owned(), dims.clone()))
        .collect();
    Ok((named, results.len()))
}

fn is_float(ty: &str) -> Option<PrimitiveType> {
    match ty {
        "f32" => Some(PrimitiveType::F32),
        "f64" => Some(PrimitiveType::F64),
        "f16" => Some(PrimitiveType::F16),
        "bf16" => Some(PrimitiveType::Bf16),
        _ => None,
    }
}

/// Whether two results are equal, any NaN matching any NaN for the float types.
fn same(ty: Option<PrimitiveType>, ours: &[u8], xla: &[u8]) -> bool {
    if ours.len() != xla.len() {
        return false;
    }
    let nan = |chunk: &[u8]| match ty {
        Some(PrimitiveType::F32) => {
            f32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]).is_nan()
        }
        Some(PrimitiveType::F64) => {
            let mut raw = [0u8; 8];
            raw.copy_from_slice(chunk);
            f64::from_le_bytes(raw).is_nan()
        }
        Some(PrimitiveType::F16) => {
            let h = u16::from_le_bytes([chunk[0], chunk[1]]);
            h & 0x7c00 == 0x7c00 && h & 0x03ff != 0
        }
        Some(PrimitiveType::Bf16) => {
            let h = u16::from_le_bytes([chunk[0], chunk[1]]);
            h & 0x7f80 == 0x7f80 && h & 0x007f != 0
        }
        _ => false,
    };
    let size = match ty {
        Some(PrimitiveType::F32) => 4,
        Some(PrimitiveType::F64) => 8,
        Some(_) => 2,
        None => return ours == xla,
    };
    ours.chunks_exact(size).zip(xla.chunks_exact(size)).all(|(a, b)| a == b || (nan(a) && nan(b)))
}

/// A vector run on a recording simulator, its launches written for XLA.
struct Prepared {
    scratch: PathBuf,
    launches: Vec<sim::LaunchRecord>,
    result_types: Vec<Option<PrimitiveType>>,
    /// The labels of the protos XLA loads for this vector (a subfolder of each launch's results).
    protos: Vec<&'static str>,
    /// The host program shape of our `model.hlo.pb`.
    host_program_shape: Option<ProgramShapeProto>,
    job: serde_json::Value,
}

/// The labels of the protos a vector carries, in the order of the count printed at the end.
const PROTO_KINDS: [&str; 3] = ["model.hlo.pb", "serialized_graph_def", "neff_member"];

/// The binary modules `vector` carries, by label: its `model.hlo.pb`, its metaneff's
/// `serialized_graph_def` and its NEFF's `sim/model.hlo.pb` member (each when present).
fn carried_protos(vector: &Vector, encoded: &[u8]) -> Result<Vec<(&'static str, Vec<u8>)>, String> {
    let mut protos = vec![(PROTO_KINDS[0], encoded.to_vec())];
    if vector.dir.join(vector::METANEFF_FILE).is_file() {
        let bytes = vector.read(vector::METANEFF_FILE).map_err(|e| e.to_string())?;
        let meta = abi::metaneff::decode(&bytes).map_err(|e| format!("metaneff.pb: {e}"))?;
        if !meta.serialized_graph_def.is_empty() {
            protos.push((PROTO_KINDS[1], meta.serialized_graph_def.to_vec()));
        }
    }
    if vector.dir.join(vector::NEFF_FILE).is_file() {
        let bytes = vector.read(vector::NEFF_FILE).map_err(|e| e.to_string())?;
        // The load-error vectors' NEFFs are broken on purpose (a bad header, a truncated
        // payload): libnrt never gets to their member, and neither does this check.
        if let Ok(neff) = abi::neff::Neff::parse(&bytes, &abi::neff::ReadOptions::loader())
            && let Some(member) = neff.members.get(sim::device_program::HLO_MEMBER)
        {
            protos.push((PROTO_KINDS[2], member.bytes().to_vec()));
        }
    }
    Ok(protos)
}

/// XLA writes an empty layout for a scalar, which says nothing; the text form and our parser
/// have none. Dropped before comparing program shapes.
fn without_scalar_layouts(mut p: ProgramShapeProto) -> ProgramShapeProto {
    fn shape(s: &mut hlo::proto::ShapeProto) {
        if s.dimensions.is_empty() && s.layout.as_ref().is_some_and(|l| l.minor_to_major.is_empty())
        {
            s.layout = None;
        }
        s.tuple_shapes.iter_mut().for_each(shape);
    }
    p.parameters.iter_mut().for_each(shape);
    p.result.iter_mut().for_each(shape);
    p
}

/// Runs `vector` on a recording simulator and writes its module and launch arguments.
fn prepare(vector: &Vector) -> Result<Prepared, String> {
    let text = std::fs::read_to_string(vector.dir.join(HLO_TEXT_FILE))
        .map_err(|e| format!("{HLO_TEXT_FILE}: {e}"))?;
    let config = conformance::backend::sim_config(&vector.case.sim).map_err(|e| e.to_string())?;
    let sim = sim::SimRuntime::new_shared(config).map_err(|e| e.to_string())?;
    sim.record_launches();
    let run = conformance::runner::run_on(vector, sim.clone() as Arc<dyn Runtime>);
    if let Some(failure) = run.failure {
        return Err(format!("the vector fails on the simulator: {failure}"));
    }
    let launches = sim.launches();
    let scratch = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("xla-vectors")
        .join(vector.name.replace('/', "__"));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).map_err(|e| e.to_string())?;
    let hlo_path = scratch.join("model.hlo");
    std::fs::write(&hlo_path, &text).map_err(|e| e.to_string())?;
    let (params, _) = leaves(&text)?;
    let encoded = vector.read(vector::HLO_FILE).map_err(|e| e.to_string())?;
    let mut runs = Vec::new();
    // The launches of a collective program's current round, by world size: a full round runs in
    // XLA as one execution of `world` replicas, rank r as replica r.
    let mut rounds: BTreeMap<usize, Vec<(usize, serde_json::Value)>> = BTreeMap::new();
    for (index, launch) in launches.iter().enumerate() {
        if launch.hlo != text.as_bytes() && launch.hlo != encoded {
            return Err(format!("launch {index} ran another module than {HLO_TEXT_FILE}"));
        }
        let mut args = Vec::new();
        for (i, ((ty, dims), data)) in params.iter().zip(&launch.args).enumerate() {
            let file = scratch.join(format!("launch{index}_arg{i}.bin"));
            std::fs::write(&file, data).map_err(|e| e.to_string())?;
            args.push(serde_json::json!({ "file": file, "type": ty, "shape": dims }));
        }
        let out = scratch.join(format!("launch{index}"));
        let run = serde_json::json!({ "args": args, "out": out });
        let Some((rank, world)) = launch.collective else {
            runs.push(run);
            continue;
        };
        let round = rounds.entry(world).or_default();
        round.push((rank, run));
        if round.len() == world {
            let mut round = std::mem::take(round);
            round.sort_by_key(|(rank, _)| *rank);
            if !round.iter().map(|(rank, _)| *rank).eq(0..world) {
                let ranks: Vec<usize> = round.iter().map(|(rank, _)| *rank).collect();
                return Err(format!(
                    "a round of {world} ranks had the launches of ranks {ranks:?}"
                ));
            }
            let replicas: Vec<serde_json::Value> = round.into_iter().map(|(_, run)| run).collect();
            runs.push(serde_json::json!({ "replicas": replicas }));
        }
    }
    if let Some((world, round)) = rounds.iter().find(|(_, round)| !round.is_empty()) {
        return Err(format!("a round of {world} ranks ended with {} launches", round.len()));
    }
    let mut protos = Vec::new();
    let mut labels = Vec::new();
    for (label, bytes) in carried_protos(vector, &encoded)? {
        let path = scratch.join(format!("{label}.pb"));
        std::fs::write(&path, bytes).map_err(|e| e.to_string())?;
        protos.push(serde_json::json!({ "label": label, "path": path }));
        labels.push(label);
    }
    let host_program_shape = hlo::decode_module(&encoded)
        .map_err(|e| format!("{}: {e}", vector::HLO_FILE))?
        .host_program_shape;
    let job = serde_json::json!({
        "hlo": hlo_path,
        "error": scratch.join("error.txt"),
        "runs": runs,
        "protos": protos,
        "xla_parse": scratch.join("xla_parse.pb"),
    });
    let (_, results) =
        sim::device_program::entry_signature(text.as_bytes()).map_err(|e| e.to_string())?;
    let result_types =
        results.iter().map(|(dltype, _)| is_float(sim::hlo_text::type_name(*dltype))).collect();
    Ok(Prepared { scratch, launches, result_types, protos: labels, host_program_shape, job })
}

/// Compares the simulator's results of a prepared vector with what XLA wrote.
fn verify(prepared: &Prepared) -> Result<(), Failed> {
    if let Ok(error) = std::fs::read_to_string(prepared.scratch.join("error.txt")) {
        return Err(error.trim().to_owned().into());
    }
    let xla_parse = std::fs::read(prepared.scratch.join("xla_parse.pb"))
        .map_err(|e| format!("XLA's parse of the text: {e}"))?;
    let xla_shape = hlo::decode_module(&xla_parse)
        .map_err(|e| format!("XLA's parse of the text: {e}"))?
        .host_program_shape
        .map(without_scalar_layouts);
    if xla_shape != prepared.host_program_shape {
        return Err(format!(
            "{}: host program shape {:?}, XLA's parser derives {:?}",
            vector::HLO_FILE,
            prepared.host_program_shape,
            xla_shape
        )
        .into());
    }
    for (index, launch) in prepared.launches.iter().enumerate() {
        for (j, ty) in prepared.result_types.iter().enumerate() {
            let path = prepared.scratch.join(format!("launch{index}/result_{j}.bin"));
            let xla = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            if !same(*ty, &launch.results[j], &xla) {
                return Err(format!(
                    "launch {index}, result {j}: the simulator wrote {:02x?}, XLA computes {:02x?}",
                    launch.results[j], xla
                )
                .into());
            }
            for label in &prepared.protos {
                let path = prepared.scratch.join(format!("launch{index}/{label}/result_{j}.bin"));
                let from_proto =
                    std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
                if !same(*ty, &xla, &from_proto) {
                    return Err(format!(
                        "launch {index}, result {j}: XLA computes {xla:02x?} from the text and \
                         {from_proto:02x?} from {label}"
                    )
                    .into());
                }
            }
        }
    }
    Ok(())
}

/// One line for the log: how many protos of each kind XLA loaded and ran to the text's results.
fn proto_count(prepared: &[Result<Prepared, String>]) -> String {
    let passed: Vec<&Prepared> = prepared.iter().flatten().filter(|p| verify(p).is_ok()).collect();
    let counts: Vec<String> = PROTO_KINDS
        .iter()
        .map(|kind| {
            let n = passed
                .iter()
                .map(|p| p.protos.iter().filter(|l| *l == kind).count())
                .sum::<usize>();
            format!("{n} {kind}")
        })
        .collect();
    let total: usize = passed.iter().map(|p| p.protos.len()).sum();
    format!(
        "xla_vectors: XLA loaded {total} protos of {} vectors from the proto and computed the text's results ({})",
        passed.len(),
        counts.join(", ")
    )
}

/// Prepares every vector, then runs XLA once over all of them (one Python start).
fn run_all(vectors: &[Vector], python: &Path) -> Vec<Result<Prepared, String>> {
    let mut prepared: Vec<Result<Prepared, String>> = vectors.iter().map(prepare).collect();
    let jobs: Vec<&serde_json::Value> = prepared.iter().flatten().map(|p| &p.job).collect();
    let jobs_path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("xla-vectors/jobs.json");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/xla/run_vectors.py");
    let outcome = std::fs::write(
        &jobs_path,
        serde_json::Value::from(jobs.into_iter().cloned().collect::<Vec<_>>()).to_string(),
    )
    .map_err(|e| e.to_string())
    .and_then(|()| {
        Command::new(python).arg(&script).arg(&jobs_path).output().map_err(|e| e.to_string())
    })
    .and_then(|out| {
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{} failed: {}",
                script.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
    });
    if let Err(reason) = outcome {
        for item in &mut prepared {
            *item = Err(reason.clone());
        }
    }
    prepared
}

fn main() {
    let args = Arguments::from_args();
    let root = workspace_root().join("vectors");
    let vectors = vector::discover(&root).expect("the vectors parse");
    let required = pyref::required();
    let python = pyref::find_for("xla_vectors", &["jax", "jaxlib", "numpy", "ml_dtypes"]);
    let with_hlo: Vec<Vector> =
        vectors.into_iter().filter(|v| v.dir.join(HLO_TEXT_FILE).is_file()).collect();
    assert!(with_hlo.len() >= 60, "only {} vectors have a {HLO_TEXT_FILE}", with_hlo.len());
    let trials: Vec<Trial> = match &python {
        Ok(python) => {
            let filtered: Vec<Vector> = with_hlo
                .into_iter()
                .filter(|v| args.filter.as_deref().is_none_or(|f| v.name.contains(f)))
                .collect();
            let prepared = run_all(&filtered, python);
            eprintln!("{}", proto_count(&prepared));
            filtered
                .iter()
                .zip(prepared)
                .map(|(vector, prepared)| {
                    Trial::test(vector.name.clone(), move || match &prepared {
                        Ok(prepared) => verify(prepared),
                        Err(reason) => Err(reason.clone().into()),
                    })
                })
                .collect()
        }
        Err(reason) => with_hlo
            .iter()
            .map(|vector| {
                let reason = reason.clone();
                Trial::test(vector.name.clone(), move || Err(reason.clone().into()))
                    .with_ignored_flag(!required)
            })
            .collect(),
    };
    libtest_mimic::run(&args, trials).exit();
}
