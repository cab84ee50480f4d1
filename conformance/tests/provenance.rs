//! Guessed behaviour: the `provenance` key of `case.toml`, the "guess refuted" outcome on a
//! device, and `vectors/GUESSES.md` kept in step with the vectors.

use std::collections::BTreeSet;
use std::path::PathBuf;

use conformance::backend::Backend;
use conformance::judge;
use conformance::report::Outcome;
use conformance::runner::RunOutput;
use conformance::spec::{CaseSpec, ProvenanceKind};
use conformance::vector::{self, Vector};

fn vectors_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../vectors")
}

fn vector(name: &str) -> Vector {
    vector::discover(&vectors_dir())
        .unwrap()
        .into_iter()
        .find(|v| v.name == name)
        .unwrap_or_else(|| panic!("no vector {name}"))
}

/// A backend that reports a fixed failure, as a device that behaves otherwise would.
struct Differs(&'static str);

impl Backend for Differs {
    fn name(&self) -> &'static str {
        self.0
    }

    fn run(&self, _vector: &Vector) -> RunOutput {
        RunOutput {
            trace: Vec::new(),
            failure: Some("step 1 (init): expected NRT_INVALID, got NRT_SUCCESS".to_owned()),
        }
    }
}

#[test]
fn a_guess_that_fails_on_the_device_is_reported_as_refuted() {
    let guessed = vector("lifecycle/init_twice_is_invalid");
    let result = judge::judge(&guessed, &Differs("nrt"), None);
    assert_eq!(result.outcome, Outcome::GuessRefuted);
    assert!(result.outcome.is_failure(), "a refuted guess still fails the run");
    let message = result.message.unwrap();
    assert!(message.starts_with("guess refuted: "), "{message}");
    assert!(message.contains("second nrt_init"), "the guess is named: {message}");
    assert!(message.contains("expected NRT_INVALID, got NRT_SUCCESS"), "{message}");
}

#[test]
fn a_guess_that_fails_on_the_simulator_is_a_plain_failure() {
    let guessed = vector("lifecycle/init_twice_is_invalid");
    assert_eq!(judge::judge(&guessed, &Differs("sim"), None).outcome, Outcome::Failed);
}

#[test]
fn a_fact_that_fails_on_the_device_is_a_plain_failure() {
    let fact = vector("lifecycle/calls_after_close_are_closed");
    assert!(fact.case.provenance.is_none());
    assert_eq!(judge::judge(&fact, &Differs("nrt"), None).outcome, Outcome::Failed);
}

#[test]
fn provenance_must_say_guess_or_fact_with_a_note() {
    let case = |provenance: &str| {
        toml::from_str::<CaseSpec>(&format!("description = \"d\"\nprovenance = {provenance:?}\n"))
    };
    let parsed = case("guess: nobody says").unwrap().provenance.unwrap();
    assert_eq!((parsed.kind, parsed.note.as_str()), (ProvenanceKind::Guess, "nobody says"));
    assert_eq!(case("fact: nrt.h").unwrap().provenance.unwrap().kind, ProvenanceKind::Fact);
    let error = case("maybe: who knows").unwrap_err().to_string();
    assert!(error.contains("expected \"guess: why\" or \"fact: source\""), "{error}");
    let error = case("guess:  ").unwrap_err().to_string();
    assert!(error.contains("expected a note after the colon"), "{error}");
}

#[test]
fn guesses_page_lists_every_guessed_vector() {
    let guessed: BTreeSet<String> = vector::discover(&vectors_dir())
        .unwrap()
        .into_iter()
        .filter(|v| v.case.provenance.as_ref().is_some_and(|p| p.kind == ProvenanceKind::Guess))
        .map(|v| v.name)
        .collect();
    let page = std::fs::read_to_string(vectors_dir().join("GUESSES.md")).unwrap();
    let listed: BTreeSet<String> = page
        .lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .filter_map(|rest| rest.split_once('`').map(|(name, _)| name.to_owned()))
        .collect();
    assert!(guessed.len() >= 6, "the guessed statuses are marked: {guessed:?}");
    assert_eq!(guessed, listed, "vectors/GUESSES.md and the provenance keys differ");
}
