//! Finding and opening the real libnrt, once per process, never the recorder itself.

use std::sync::OnceLock;

use abi::c_layout::c_types::nrt_version_t;
use abi::dtype::DtypeNumbering;
use abi::status::NrtStatus;

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

/// A status code's name.
pub(crate) fn status_name(code: u64) -> String {
    NrtStatus::from_code(code as u32).name()
}

/// How the real library numbers element types: its version's numbering (the legacy one when
/// its version is unknown).
pub(crate) fn numbering() -> DtypeNumbering {
    version().map_or(DtypeNumbering::Legacy, |(major, minor)| {
        DtypeNumbering::for_runtime_version(major, minor)
    })
}

/// The real library's major and minor version, read once.
fn version() -> Option<(u64, u64)> {
    static VERSION: std::sync::OnceLock<Option<(u64, u64)>> = std::sync::OnceLock::new();
    *VERSION.get_or_init(|| {
        let text = runtime_version();
        let mut numbers = text.split('.').map(str::parse::<u64>);
        match (numbers.next(), numbers.next()) {
            (Some(Ok(major)), Some(Ok(minor))) => Some((major, minor)),
            _ => None,
        }
    })
}

/// The real library's version (`MAJOR.MINOR.PATCH.MAINT`), for the header.
pub(crate) fn runtime_version() -> String {
    let Some(get_version) = crate::real::functions().and_then(|all| all.nrt_get_version) else {
        return "unknown".to_owned();
    };
    let mut version = std::mem::MaybeUninit::<nrt_version_t>::zeroed();
    // SAFETY: `version` is a zeroed `nrt_version_t` of the size passed; `nrt_get_version` is
    // callable before `nrt_init`.
    let status = unsafe { get_version(version.as_mut_ptr(), size_of::<nrt_version_t>()) };
    if status != 0 {
        return format!("unknown ({})", status_name(u64::from(status)));
    }
    // SAFETY: written by the library (and zero-initialised before).
    let version = unsafe { version.assume_init() };
    format!("{}.{}.{}.{}", version.major, version.minor, version.patch, version.maintenance)
}
