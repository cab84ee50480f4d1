//! The fuzz targets' bodies on stable: each runs over its seeds and random mutations of them
//! (`FUZZ_CASES` per target, default 2000). With `FUZZ_SEED_DIR` set, the seeds are also
//! written there, one folder per target, to start a cargo-fuzz corpus from
//! (`cargo +nightly fuzz run TARGET SEED_DIR/TARGET`).

use std::path::{Path, PathBuf};

use conformance::report::{CaseResult, Outcome, Report, RunInfo};

/// xorshift64*: the mutations are the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// `seed` with a few random edits: a byte changed, inserted or removed, a run repeated, or the
/// end cut off.
fn mutate(rng: &mut Rng, seed: &[u8]) -> Vec<u8> {
    let mut bytes = seed.to_vec();
    for _ in 0..=rng.below(4) {
        let at = rng.below(bytes.len() + 1);
        match rng.below(5) {
            0 if at < bytes.len() => bytes[at] = rng.next() as u8,
            1 => bytes.insert(at, rng.next() as u8),
            2 if at < bytes.len() => {
                bytes.remove(at);
            }
            3 => {
                let end = (at + rng.below(16)).min(bytes.len());
                let run = bytes[at..end].to_vec();
                bytes.splice(at..at, run);
            }
            _ => bytes.truncate(at),
        }
    }
    bytes
}

fn cases() -> usize {
    std::env::var("FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(2000)
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Runs `body` on every seed and on `cases()` mutations of them, after writing the seeds to
/// `FUZZ_SEED_DIR/target` when that is set.
fn exercise(target: &str, seeds: &[Vec<u8>], body: fn(&[u8])) {
    assert!(!seeds.is_empty(), "{target} has seeds");
    if let Some(dir) = std::env::var_os("FUZZ_SEED_DIR") {
        let dir = Path::new(&dir).join(target);
        std::fs::create_dir_all(&dir).unwrap();
        for (index, seed) in seeds.iter().enumerate() {
            std::fs::write(dir.join(format!("seed-{index}")), seed).unwrap();
        }
    }
    for seed in seeds {
        body(seed);
    }
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ target.len() as u64);
    for _ in 0..cases() {
        let seed = &seeds[rng.below(seeds.len())];
        body(&mutate(&mut rng, seed));
    }
}

/// Every file under `dir` (recursively) whose name `keep` accepts.
fn files(dir: &Path, keep: &dyn Fn(&Path) -> bool, found: &mut Vec<Vec<u8>>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut paths: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            files(&path, keep, found);
        } else if keep(&path) {
            found.push(std::fs::read(&path).unwrap());
        }
    }
}

/// The modules jax wrote for hlo's tests (`hlo/tests/fixtures/<name>/`) under 64 KiB: the folders
/// sorted, and in each the files in a fixed order, the one they sorted in before they moved into
/// folders, so that the seeds and the mutations drawn from them stayed the same.
fn hlo_modules() -> Vec<Vec<u8>> {
    let dir = repo().join("hlo/tests/fixtures");
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let mut folders: Vec<PathBuf> =
        entries.map(|e| e.unwrap().path()).filter(|path| path.is_dir()).collect();
    folders.sort();
    let mut found = Vec::new();
    for folder in folders {
        for file in ["module.hlo", "jax.pb", "old.hlo", "xla.pb"] {
            let path = folder.join(file);
            if std::fs::metadata(&path).is_ok_and(|m| m.len() < 64 << 10) {
                found.push(std::fs::read(&path).unwrap());
            }
        }
    }
    found
}

#[test]
fn compile_args() {
    let lines = [
        "compile\0model.hlo\0--framework\0XLA\0--target\0trn1\0--output\0out.neff",
        "compile\0m.pb\0--framework=XLA\0--target=trn2\0--lnc\x002\0--pipeline\0compile\0SaveTemps",
        "compile\0m.pb\0--framework\0XLA\0--target\0inf2\0--auto-cast\0none\0-O2",
        "--version",
        "compile\0--help",
        "list-operators\0--framework\0XLA",
        "compile\0m.pb\0--framework\0XLA\0--target\0trn1\0--lnc\x009",
    ];
    let seeds: Vec<Vec<u8>> = lines.iter().map(|line| line.as_bytes().to_vec()).collect();
    exercise("compile_args", &seeds, nrtsim_hlo_fuzz::compile_args);
}

#[test]
fn compile_module() {
    exercise("compile_module", &hlo_modules(), nrtsim_hlo_fuzz::compile_module);
}

#[test]
fn from_hlo() {
    exercise("from_hlo", &hlo_modules(), nrtsim_hlo_fuzz::from_hlo);
}

#[test]
fn metaneff_view() {
    let mut seeds = Vec::new();
    let keep = |path: &Path| path.file_name().is_some_and(|name| name == "metaneff.pb");
    files(&repo().join("vectors"), &keep, &mut seeds);
    exercise("metaneff_view", &seeds, nrtsim_hlo_fuzz::metaneff_view);
}

/// A report of a few results, every outcome once, on two backends.
fn report() -> Report {
    let cases = Outcome::ALL
        .iter()
        .enumerate()
        .map(|(index, &outcome)| CaseResult {
            vector: "dtype/byte_round_trips".to_owned(),
            backend: if index % 2 == 0 { "nrt" } else { "sim" }.to_owned(),
            outcome,
            duration: std::time::Duration::from_millis(index as u64),
            message: (index % 3 == 0).then(|| "a reason".to_owned()),
            first_diff: (index % 2 == 1).then(|| "line 1: expected a / got b".to_owned()),
            run: 0,
            detail: None,
        })
        .filter(|case| case.backend == "sim" || case.outcome == Outcome::Passed)
        .collect();
    Report::new(RunInfo::default(), cases)
}

#[test]
fn report_json() {
    let seeds = vec![report().to_json().into_bytes(), b"{\"cases\": []}".to_vec()];
    exercise("report_json", &seeds, nrtsim_hlo_fuzz::report_json);
}

/// The bundle of [`report`], as the fuzz target takes it: `1` then the `.tar.gz`, `0` then
/// the tar alone, and `2` then the report's JSON.
#[test]
fn bundle() {
    let archive = conformance::bundle::encode(&report()).unwrap();
    let mut tar = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&archive[..]), &mut tar).unwrap();
    let json = report().to_json();
    let seeds = vec![
        [&[1u8][..], &archive].concat(),
        [&[0u8][..], &tar].concat(),
        [&[2u8][..], json.as_bytes()].concat(),
    ];
    exercise("bundle", &seeds, nrtsim_hlo_fuzz::bundle);
}

#[test]
fn safetensors() {
    use safetensors::{Dtype, tensor::TensorView};
    let floats: Vec<u8> = (0..6u32).flat_map(|i| (i as f32).to_le_bytes()).collect();
    let bytes = [7u8, 8, 9];
    let tensors = [
        ("w", TensorView::new(Dtype::F32, vec![2, 3], &floats).unwrap()),
        ("b", TensorView::new(Dtype::U8, vec![3], &bytes).unwrap()),
        ("s", TensorView::new(Dtype::I16, vec![], &bytes[..2]).unwrap()),
    ];
    let mut seeds = vec![safetensors::serialize(tensors.clone(), None).unwrap()];
    let metadata = Some([("format".to_owned(), "pt".to_owned())].into_iter().collect());
    seeds.push(safetensors::serialize(tensors, metadata).unwrap());
    exercise("safetensors", &seeds, nrtsim_hlo_fuzz::safetensors);
}
