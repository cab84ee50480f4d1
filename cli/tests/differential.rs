//! The differential property: on generated vectors, the simulator in this process and the
//! simulator behind the C ABI (`capi`, our real-libnrt backend in a child process) give the same
//! failure and the identical trace.
//!
//! Vectors come from `conformance::generate` (metaneff, NEFF, program and inputs within small
//! bounds). The seed is fixed, so a run is reproducible; proptest's regression file beside this
//! one (`differential.proptest-regressions`, committed when it appears) replays past failures
//! first. On a failure the
//! shrunk vector is written to `target/differential/failures/<n>/`, and the message says how to
//! promote it to a hand-written vector.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use conformance::backend::{self, Backend, SimBackend};
use conformance::generate::{self, GENERATED_AREA, GeneratedVector};
use conformance::{judge, vector};
use proptest::test_runner::{
    Config, FileFailurePersistence, RngSeed, TestCaseError, TestError, TestRunner,
};

/// Generated vectors per run: each costs one child process of a few milliseconds on `capi`.
const CASES: u32 = 48;

/// The fixed seed of the generator.
const SEED: u64 = 0x6e72_7473_696d_0001;

#[test]
fn sim_and_capi_agree_on_generated_vectors() {
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_nrtsim"));
    let profile_dir = exe.parent().map(PathBuf::from).unwrap_or_default();
    let capi = backend::by_name("capi", &exe, &profile_dir)
        .unwrap_or_else(|message| panic!("the capi backend is not available: {message}"));
    let scratch = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("differential-{}", std::process::id()));
    let config = Config {
        cases: CASES,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        source_file: Some(file!()),
        rng_seed: RngSeed::Fixed(SEED),
        ..Config::default()
    };
    let mut proptest_runner = TestRunner::new(config);
    let counter = AtomicUsize::new(0);
    let result = proptest_runner.run(&generate::vector_strategy(), |generated| {
        let folder = scratch.join(counter.fetch_add(1, Ordering::Relaxed).to_string());
        let verdict = compare(&generated, &folder.join("vectors"), capi.as_ref());
        // Best effort: a leftover scratch folder under target/ is harmless.
        let _ = std::fs::remove_dir_all(&folder);
        verdict.map_err(TestCaseError::fail)
    });
    let _ = std::fs::remove_dir_all(&scratch);
    match result {
        Ok(()) => {}
        Err(TestError::Fail(reason, generated)) => {
            let kept = keep_failure(&generated);
            panic!(
                "sim and capi disagree on a generated vector (shrunk): {reason}\n\
                 the vector is in {kept}\n\
                 promote it with `cargo xtask vectors promote {kept} --name <behaviour>`"
            );
        }
        Err(TestError::Abort(reason)) => panic!("the property test aborted: {reason}"),
    }
}

/// Writes `generated` under `vectors_dir`, runs it on both backends, and says how they differ.
fn compare(
    generated: &GeneratedVector,
    vectors_dir: &Path,
    capi: &dyn Backend,
) -> Result<(), String> {
    generated.write_into(vectors_dir).map_err(|e| e.to_string())?;
    let name = format!("{GENERATED_AREA}/{}", generated.name);
    let vectors = vector::discover(vectors_dir).map_err(|e| e.to_string())?;
    let vector = vectors
        .iter()
        .find(|v| v.name == name)
        .ok_or_else(|| format!("the generated vector {name} was not discovered"))?;
    vector::sync_inputs(std::slice::from_ref(vector), true).map_err(|e| e.to_string())?;
    let sim = SimBackend.run(vector);
    let over_c_abi = capi.run(vector);
    if sim.failure != over_c_abi.failure {
        return Err(format!(
            "failures differ: sim {:?}, capi {:?}",
            sim.failure, over_c_abi.failure
        ));
    }
    match judge::first_difference(&judge::golden_text(&sim.trace), &over_c_abi.trace) {
        Some(diff) => Err(format!("traces differ (expected = sim, got = capi) at {diff}")),
        None => Ok(()),
    }
}

/// Writes the shrunk failure to the next free `target/differential/failures/<n>/`.
fn keep_failure(generated: &GeneratedVector) -> String {
    let target = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .map_or_else(|| PathBuf::from("target"), Path::to_path_buf);
    let failures = target.join("differential/failures");
    let mut n = 1;
    while failures.join(n.to_string()).exists() {
        n += 1;
    }
    let dir = failures.join(n.to_string());
    let files = [
        ("case.toml", &generated.case_toml),
        ("metaneff.txtpb", &generated.metaneff_text),
        ("model.hlo", &generated.hlo_text),
    ];
    let written = std::fs::create_dir_all(&dir).and_then(|()| {
        files.iter().try_for_each(|(file, text)| std::fs::write(dir.join(file), text))
    });
    match written {
        Ok(()) => dir.display().to_string(),
        Err(error) => format!(
            "(not written: {}: {error})\n--- case.toml\n{}\n--- metaneff.txtpb\n{}\n--- model.hlo\n{}",
            dir.display(),
            generated.case_toml,
            generated.metaneff_text,
            generated.hlo_text
        ),
    }
}

#[test]
fn promote_copies_a_generated_vector_and_blesses_it() {
    use proptest::strategy::{Strategy, ValueTree};
    let root =
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("promote-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let mut proptest_runner =
        TestRunner::new(Config { rng_seed: RngSeed::Fixed(SEED), ..Config::default() });
    // The first generated vector the simulator runs without a failure (promote refuses others).
    let mut source = None;
    for attempt in 0..32 {
        let generated = generate::vector_strategy()
            .new_tree(&mut proptest_runner)
            .expect("the generator draws a vector")
            .current();
        let vectors_dir = root.join(format!("source{attempt}/vectors"));
        let dir = generated.write_into(&vectors_dir).expect("the generated vector is written");
        let vectors = vector::discover(&vectors_dir).expect("the generated vector parses");
        vector::sync_inputs(&vectors, true).expect("the generated inputs are written");
        if SimBackend.run(&vectors[0]).failure.is_none() {
            source = Some((generated, dir));
            break;
        }
    }
    let (generated, source) = source.expect("one of 32 generated vectors runs on the simulator");
    let vectors_dir = root.join("vectors");
    std::fs::create_dir_all(vectors_dir.join("expectations")).expect("vectors folder is created");

    let target = conformance::bless::promote(&source, &vectors_dir, "first_generated")
        .expect("promote succeeds");
    assert_eq!(target, vectors_dir.join("promoted/first_generated"));
    let case = std::fs::read_to_string(target.join("case.toml")).expect("case.toml is copied");
    assert_eq!(case, generated.case_toml);
    for file in [
        "metaneff.txtpb",
        "model.hlo",
        "model.hlo.pb",
        "metaneff.pb",
        "model.neff",
        "expected.trace",
    ] {
        assert!(target.join(file).is_file(), "promote did not write {file}");
    }
    // The promoted vector passes as a normal vector on both backends.
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_nrtsim"));
    let profile_dir = exe.parent().map(PathBuf::from).unwrap_or_default();
    let vectors = vector::discover(&vectors_dir).expect("the promoted vector parses");
    for name in ["sim", "capi"] {
        let backend = backend::by_name(name, &exe, &profile_dir).expect("backend opens");
        let result = judge::judge(&vectors[0], backend.as_ref(), None);
        assert_eq!(result.message, None, "{name}: {:?}", result.first_diff);
    }

    let again = conformance::bless::promote(&source, &vectors_dir, "first_generated");
    let error = again.expect_err("promote must refuse to overwrite");
    assert!(
        matches!(&error, conformance::bless::BlessError::Exists { target: existing } if *existing == target),
        "{error}"
    );
    assert!(error.to_string().contains(&target.display().to_string()), "{error}");

    // The command line: `nrtsim vectors promote DIR --name NAME --vectors DIR`.
    let status = std::process::Command::new(&exe)
        .args(["vectors", "promote"])
        .arg(&source)
        .args(["--name", "from_the_command_line", "--vectors"])
        .arg(&vectors_dir)
        .output()
        .expect("nrtsim runs");
    assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
    assert!(vectors_dir.join("promoted/from_the_command_line/expected.trace").is_file());
    let _ = std::fs::remove_dir_all(&root);
}
