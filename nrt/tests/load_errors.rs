//! Opening libnrt where there is none, or something else, gives a typed error and a readable
//! message, and never panics.

use std::path::PathBuf;

use nrt::search::{SDK_LIBRARY, SONAME, candidates};
use nrt::{LibrarySource, NrtLoadError, NrtRuntime, OpenOptions};

fn missing(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("nrtsim-no-such-dir-{}", std::process::id())).join(name)
}

#[test]
fn a_missing_library_names_the_path_and_the_reason() {
    let path = missing("libnrt.so.1");
    let err = NrtRuntime::open_path(&path).unwrap_err();
    let NrtLoadError::NotFound { tried } = &err else { panic!("expected NotFound, got {err:?}") };
    assert_eq!(tried.len(), 1);
    assert_eq!(tried[0].candidate, path.to_string_lossy());
    assert!(tried[0].reason.contains("No such file"), "{}", tried[0].reason);
    let message = err.to_string();
    assert!(message.starts_with("libnrt could not be loaded; tried /"), "{message}");
    assert!(message.contains(&*path.to_string_lossy()), "{message}");
}

#[test]
fn every_candidate_is_tried_in_order_and_reported() {
    let first = missing("first.so");
    let second = missing("second.so");
    let err = NrtRuntime::open_first(&[first.clone(), second.clone()], &OpenOptions::default())
        .unwrap_err();
    let NrtLoadError::NotFound { tried } = err else { panic!("expected NotFound") };
    let names: Vec<&str> = tried.iter().map(|attempt| attempt.candidate.as_str()).collect();
    assert_eq!(names, [first.to_string_lossy(), second.to_string_lossy()]);
}

#[test]
fn the_search_starts_with_nrt_lib_path_and_ends_in_the_sdk_folder() {
    let explicit = missing("libnrt.so.1");
    let order = candidates(Some(explicit.clone().into_os_string()));
    assert_eq!(order, [explicit, PathBuf::from(SONAME), PathBuf::from(SDK_LIBRARY)]);
}

#[test]
fn a_library_without_the_c_api_is_a_missing_symbol() {
    // libm is on every glibc system and exports no nrt_* function.
    let options =
        OpenOptions { library: LibrarySource::Path("libm.so.6".into()), ..OpenOptions::default() };
    let err = NrtRuntime::open_with(&options).unwrap_err();
    let NrtLoadError::MissingSymbol { library, symbol, .. } = &err else {
        panic!("expected MissingSymbol, got {err:?}")
    };
    assert_eq!((library.as_str(), *symbol), ("libm.so.6", "nrt_init"));
    assert!(
        err.to_string().starts_with("libm.so.6 is not a usable libnrt: symbol nrt_init is missing")
    );
}
