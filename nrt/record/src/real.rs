//! Finding and opening the real libnrt, once per process, never the recorder itself.

use std::sync::OnceLock;

use crate::exports::{MARKER, RealFunctions, own_nrt_init};

/// The opened library (kept open for the life of the process) and its functions.
struct Real {
    _library: libloading::Library,
    functions: RealFunctions,
    /// The path, and the candidates skipped before it.
    path: String,
}

static REAL: OnceLock<Result<Real, String>> = OnceLock::new();

fn open() -> Result<Real, String> {
    let mut tried = Vec::new();
    for candidate in nrt::search::default_candidates() {
        let name = candidate.to_string_lossy().into_owned();
        // SAFETY: loading libnrt runs its initialisers, which is what a client linked against
        // it would do; the candidates are those `NrtRuntime` opens.
        let library = match unsafe { libloading::Library::new(&candidate) } {
            Ok(library) => library,
            Err(error) => {
                tried.push(format!("{name} ({error})"));
                continue;
            }
        };
        let functions = RealFunctions::resolve(&library);
        let Some(init) = functions.nrt_init else {
            tried.push(format!("{name} (no nrt_init)"));
            continue;
        };
        if init as usize == own_nrt_init() {
            tried.push(format!("{name} (is the recorder itself)"));
            continue;
        }
        // SAFETY: only the symbol's presence is looked at.
        if unsafe { library.get::<*const u8>(MARKER) }.is_ok() {
            tried.push(format!("{name} (is another recorder)"));
            continue;
        }
        let path =
            if tried.is_empty() { name } else { format!("{name} (skipped {})", tried.join(", ")) };
        return Ok(Real { _library: library, functions, path });
    }
    Err(format!("the real libnrt could not be loaded; tried {}", tried.join(", ")))
}

fn real() -> Option<&'static Real> {
    REAL.get_or_init(|| {
        let result = open();
        if let Err(why) = &result {
            // Once: every call then returns NRT_FAILURE (NULL, 0) and is recorded as missing.
            eprintln!("nrtsim-record: {why}; every libnrt call fails");
        }
        result
    })
    .as_ref()
    .ok()
}

/// The real library's functions, `None` (after one line on stderr) when it cannot be opened.
pub(crate) fn functions() -> Option<&'static RealFunctions> {
    real().map(|real| &real.functions)
}

/// The path of the real library, or why there is none.
pub(crate) fn describe() -> Result<&'static str, &'static str> {
    match real() {
        Some(real) => Ok(&real.path),
        None => Err(REAL.get().and_then(|r| r.as_ref().err()).map_or("not opened", String::as_str)),
    }
}
