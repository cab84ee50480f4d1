//! The conformance suite as tests: one named test per backend × vector
//! (`sim/aliasing/state_accumulates_over_three_launches`), so `cargo test aliasing` filters.
//!
//! Runs every vector on `sim` and on `capi` (our real-libnrt backend over the simulator's
//! `libnrt.so.1`), judged exactly as `cargo xtask conformance` judges them: golden trace,
//! hand-written expectations, and the per-backend lists of known differences.

use std::path::PathBuf;

use conformance::backend;
use conformance::expectations::Expectations;
use conformance::judge;
use conformance::report::Outcome;
use libtest_mimic::{Arguments, Failed, Trial};

/// The backends every vector runs on in `cargo test`.
const BACKENDS: [&str; 2] = ["sim", "capi"];

fn main() {
    let args = Arguments::from_args();
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../vectors");
    let vectors = conformance::vector::discover(&dir).expect("the vectors parse");
    let mut trials = Vec::new();
    for name in BACKENDS {
        let expectations =
            Expectations::load(&dir.join("expectations"), name).expect("expectations parse");
        for vector in &vectors {
            let vector = vector.clone();
            let reason = expectations.reason(&vector.name).map(str::to_owned);
            let ignored = !vector.runs_on(name);
            trials.push(
                Trial::test(format!("{name}/{}", vector.name), move || {
                    let exe = PathBuf::from(env!("CARGO_BIN_EXE_nrtsim"));
                    let profile_dir = exe.parent().map(PathBuf::from).unwrap_or_default();
                    let backend =
                        backend::by_name(name, &exe, &profile_dir).map_err(Failed::from)?;
                    let result = judge::judge(&vector, backend.as_ref(), reason.as_deref());
                    match result.outcome {
                        Outcome::Passed | Outcome::KnownDifference | Outcome::Skipped => Ok(()),
                        Outcome::Failed | Outcome::UnexpectedPass | Outcome::GuessRefuted => {
                            Err(Failed::from(format!(
                                "{}{}",
                                result.message.unwrap_or_default(),
                                result.first_diff.map(|d| format!("\n{d}")).unwrap_or_default()
                            )))
                        }
                    }
                })
                .with_ignored_flag(ignored),
            );
        }
    }
    let vectors_for_check = vectors.clone();
    trials.push(Trial::test("generated_inputs_are_fresh", move || {
        let stale = conformance::vector::sync_inputs(&vectors_for_check, false)
            .map_err(|e| Failed::from(e.to_string()))?;
        if stale.is_empty() {
            Ok(())
        } else {
            Err(Failed::from(format!(
                "stale generated files (run `cargo xtask vectors --bless` and review the diff): {}",
                stale.join(", ")
            )))
        }
    }));
    libtest_mimic::run(&args, trials).exit();
}
