//! nrtsim's torch layer against its baselines, in the same run (`python/torch/bench.py`):
//!
//! - `forward_v2` overhead: one `torch.ops.neuron.forward_v2` call on a `Model` of a module
//!   against the interpreter running the same module directly (`Program::run`, timed here), for
//!   a module whose work is negligible (the overhead itself), a small MLP, the sum of a
//!   16 MiB input (the cost per input byte: the copy to the device, none on the host first) and
//!   the negation of one (per output byte too: the read from the device, straight into the
//!   tensor returned);
//! - traced models against eager torch on the CPU with the same inputs.
//!
//! One `NRTSIM-BENCH {json}` line per figure for `cargo xtask bench` (group `torch`). It needs a
//! Python with torch, torch-xla, transformers and ninja, found by `pyref`; without one it says
//! so and measures nothing.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// `output0 = x + y` over f32[2,3]: a launch with no work to speak of.
const TINY: &str = "HloModule tiny\n\nENTRY main {\n  x = f32[2,3] parameter(0)\n  y = f32[2,3] parameter(1)\n  ROOT s = f32[2,3] add(x, y)\n}\n";

/// A two-layer MLP, [32,512] x [512,512] twice with a maximum between.
const MLP: &str = "HloModule mlp\n\nENTRY main {\n  x = f32[32,512] parameter(0)\n  w1 = f32[512,512] parameter(1)\n  w2 = f32[512,512] parameter(2)\n  h = f32[32,512] dot(x, w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n  z = f32[] constant(0)\n  zs = f32[32,512] broadcast(z), dimensions={}\n  r = f32[32,512] maximum(h, zs)\n  ROOT o = f32[32,512] dot(r, w2), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n";

/// The sum of an f32[4096,1024] input (16 MiB): what a launch costs per input byte, the host
/// copies of the way in included (the sum itself is a few milliseconds' fraction).
const SUM_16MIB: &str = "HloModule sum_16mib\n\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n\nENTRY main {\n  x = f32[4096,1024] parameter(0)\n  z = f32[] constant(0)\n  ROOT r = f32[] reduce(x, z), dimensions={0,1}, to_apply=add\n}\n";

/// The negation of an f32[4096,1024] input: 16 MiB in and 16 MiB out.
const NEGATE_16MIB: &str = "HloModule negate_16mib\n\nENTRY main {\n  x = f32[4096,1024] parameter(0)\n  ROOT r = f32[4096,1024] negate(x)\n}\n";

/// The median time of `Program::run` on the module with every input ones.
fn interpreter_seconds(text: &str, repeat: usize) -> f64 {
    let module = hlo::load_module(text.as_bytes()).expect("the bench's modules parse");
    let program = hlo::eval::Program::compile(&module, &hlo::eval::EvalOptions::default())
        .expect("the bench's modules compile");
    let entry = module
        .computations
        .iter()
        .find(|c| c.id == module.entry_computation_id)
        .expect("an entry computation");
    let mut parameters: Vec<_> =
        entry.instructions.iter().filter(|i| i.opcode == "parameter").collect();
    parameters.sort_by_key(|i| i.parameter_number);
    let args: Vec<hlo::eval::Array> = parameters
        .iter()
        .map(|p| {
            let dims = p.shape.as_ref().expect("a shape").dimensions.clone();
            let n: i64 = dims.iter().product();
            hlo::eval::Array {
                ty: hlo::proto::PrimitiveType::F32,
                dims,
                bytes: (0..n).flat_map(|_| 1.0f32.to_le_bytes()).collect(),
            }
        })
        .collect();
    program.run(&args).expect("a run");
    let mut times: Vec<f64> = (0..repeat)
        .map(|_| {
            let start = Instant::now();
            program.run(&args).expect("a run");
            start.elapsed().as_secs_f64()
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn sdk(profile: &Path, at: &Path) -> PathBuf {
    let library = conformance::backend::stage_capi_library(profile).expect("the built libnrt.so.1");
    std::fs::create_dir_all(at.join("include/nrtsim")).expect("create the SDK folder");
    std::fs::create_dir_all(at.join("lib")).expect("create the SDK folder");
    let header = Path::new(env!("CARGO_MANIFEST_DIR")).join("../sim/capi/include/nrtsim/bind.h");
    std::fs::copy(header, at.join("include/nrtsim/bind.h")).expect("copy the header");
    std::fs::copy(library, at.join("lib/libnrt.so.1")).expect("copy the library");
    at.to_owned()
}

fn main() {
    if !std::env::args().any(|arg| arg == "--bench") {
        println!("torch: benchmarks run only under `cargo bench`");
        return;
    }
    let python = match pyref::find(&["torch", "torch_xla", "transformers", "ninja"]) {
        Ok(python) => python,
        Err(reason) => {
            println!("torch: {reason}; nothing measured");
            return;
        }
    };
    let nrtsim = Path::new(env!("CARGO_BIN_EXE_nrtsim"));
    let profile = nrtsim.parent().expect("nrtsim is in target/<profile>");
    let scratch = std::env::temp_dir().join(format!("nrtsim-torch-bench-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).expect("create a scratch folder");
    let modules =
        [("tiny", TINY), ("mlp", MLP), ("sum_16mib", SUM_16MIB), ("negate_16mib", NEGATE_16MIB)];
    let mut paths = Vec::new();
    for (name, text) in modules {
        let path = scratch.join(format!("{name}.hlo"));
        std::fs::write(&path, text).expect("write a module");
        paths.push(path);
    }
    let sdk = sdk(profile, &profile.join("torch-bench-sdk"));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../python/torch/bench.py");
    let out = Command::new(&python)
        .arg(&script)
        .args(&paths)
        .env("NRTSIM_TOOL", nrtsim)
        .env("NRTSIM_SDK", &sdk)
        .env("NRTSIM_TORCH_BUILD_DIR", profile.join("torch-bench-extension"))
        .env("PYTHONPATH", Path::new(env!("CARGO_MANIFEST_DIR")).join("../python/torch/src"))
        .env("PJRT_DEVICE", "CPU")
        .output()
        .expect("run python/torch/bench.py");
    assert!(out.status.success(), "bench.py: {}", String::from_utf8_lossy(&out.stderr));
    let _ = std::fs::remove_dir_all(&scratch);
    let direct: Vec<f64> = modules.iter().map(|(_, text)| interpreter_seconds(text, 200)).collect();
    println!("{:<44} {:>11} {:>11} {:>11}", "figure", "ours", "peer", "overhead");
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let row: serde_json::Value = serde_json::from_str(line).expect("bench.py prints JSON");
        let figure = row["figure"].as_str().unwrap_or("?").to_owned();
        let ours = row["ours_s"].as_f64().unwrap_or(f64::NAN);
        let (peer_name, peer) = match modules.iter().position(|(name, _)| figure.ends_with(name)) {
            Some(k) => ("interpreter", direct[k]),
            None => ("eager", row["eager_s"].as_f64().unwrap_or(f64::NAN)),
        };
        println!(
            "{figure:<44} {:>9.1}us {:>9.1}us {:>9.1}us  ({peer_name} ÷ ours {:.3})",
            ours * 1e6,
            peer * 1e6,
            (ours - peer) * 1e6,
            peer / ours
        );
        let record = serde_json::json!({
            "group": "torch",
            "figure": figure,
            "ours_s": ours,
            "peer": peer_name,
            "peer_s": peer,
            "detail": format!("{:.1} us over the {peer_name}", (ours - peer) * 1e6),
        });
        println!("NRTSIM-BENCH {record}");
    }
}
