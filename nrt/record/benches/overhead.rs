//! The recorder's overhead per call: the same libnrt calls made directly on the simulator's
//! `libnrt.so.1` and through the recorder (which forwards to it and copies one line per call
//! into its mapped trace file), in the same run, as a ratio.
//!
//! Three calls: `nrt_tensor_get_size` (the cheapest call, so nearly all recorder cost),
//! `nrt_tensor_write` of 16 bytes (inline bytes) and of 4 KiB (hashed, its bytes kept once).
//! Timing is `std::time::Instant` over many iterations after a warm-up, direct and recorded
//! interleaved, best of [`ROUNDS`]; the numbers are printed (with one `NRTSIM-BENCH` line per
//! call, peer `direct`), never asserted. The process re-runs itself with the recorder's environment set, so that no
//! environment is changed while libraries that read it are loaded.

#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_void};
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Instant;

type Init = unsafe extern "C" fn(u32, *const c_char, *const c_char) -> u32;
type Allocate = unsafe extern "C" fn(u32, c_int, usize, *const c_char, *mut *mut c_void) -> u32;
type GetSize = unsafe extern "C" fn(*const c_void) -> usize;
type Write = unsafe extern "C" fn(*mut c_void, *const c_void, usize, usize) -> u32;

/// A measured call: its name, iterations, and the call on one library.
type Case<'a> = (&'a str, u32, &'a dyn Fn(&Library));

const CHILD: &str = "--overhead-child";

/// Interleaved repetitions of each measurement; the best is reported.
const ROUNDS: u32 = 5;

/// `target/<profile>/deps`, where cargo puts both cdylibs for this benchmark.
fn deps_dir() -> PathBuf {
    std::env::current_exe().expect("the bench has a path").parent().expect("deps").to_owned()
}

struct Library {
    _library: libloading::Library,
    init: Init,
    allocate: Allocate,
    get_size: GetSize,
    write: Write,
}

fn open(path: &Path) -> Library {
    // SAFETY: both libraries are libnrt builds of this workspace; the symbols have the table's
    // signatures.
    unsafe {
        let library = libloading::Library::new(path).expect("open the library");
        let init = *library.get::<Init>(b"nrt_init\0").expect("nrt_init");
        let allocate = *library.get::<Allocate>(b"nrt_tensor_allocate\0").expect("allocate");
        let get_size = *library.get::<GetSize>(b"nrt_tensor_get_size\0").expect("get_size");
        let write = *library.get::<Write>(b"nrt_tensor_write\0").expect("write");
        Library { _library: library, init, allocate, get_size, write }
    }
}

fn time_per_call(iterations: u32, mut body: impl FnMut()) -> f64 {
    for _ in 0..iterations / 10 {
        body();
    }
    let start = Instant::now();
    for _ in 0..iterations {
        body();
    }
    start.elapsed().as_nanos() as f64 / f64::from(iterations)
}

fn child(capi: &Path, recorder: &Path) {
    let direct = open(capi);
    let recorded = open(recorder);
    // SAFETY: C calls with valid arguments: a NUL-terminated name, an output pointer, buffers
    // of the sizes passed.
    unsafe {
        assert_eq!((recorded.init)(1, c"".as_ptr(), c"".as_ptr()), 0, "nrt_init");
        let mut tensor = std::ptr::null_mut();
        assert_eq!((direct.allocate)(0, 0, 4096, c"t".as_ptr(), &mut tensor), 0, "allocate");
        let small = [7u8; 16];
        let large = [7u8; 4096];
        let cases: [Case<'_>; 3] = [
            ("nrt_tensor_get_size", 100_000, &|lib| {
                black_box((lib.get_size)(tensor));
            }),
            ("nrt_tensor_write 16 B", 50_000, &|lib| {
                black_box((lib.write)(tensor, small.as_ptr().cast(), 0, small.len()));
            }),
            ("nrt_tensor_write 4 KiB", 20_000, &|lib| {
                black_box((lib.write)(tensor, large.as_ptr().cast(), 0, large.len()));
            }),
        ];
        for (name, iterations, call) in cases {
            // Interleaved, best of `ROUNDS`: a loaded machine slows a round, not a figure.
            let (mut direct_ns, mut recorded_ns) = (f64::INFINITY, f64::INFINITY);
            for _ in 0..ROUNDS {
                direct_ns = direct_ns.min(time_per_call(iterations, || call(&direct)));
                recorded_ns = recorded_ns.min(time_per_call(iterations, || call(&recorded)));
            }
            println!(
                "{name:<24} direct {direct_ns:>9.0} ns  recorded {recorded_ns:>9.0} ns  \
                 ratio {:.1}x  (+{:.0} ns per call)",
                recorded_ns / direct_ns,
                recorded_ns - direct_ns
            );
            println!(
                "NRTSIM-BENCH {{\"group\":\"recorder\",\"figure\":\"{name}\",\"ours_s\":{:e},\
                 \"peer\":\"direct\",\"peer_s\":{:e},\"detail\":\"overhead {:.0} ns per call, \
                 best of {ROUNDS}\"}}",
                recorded_ns * 1e-9,
                direct_ns * 1e-9,
                recorded_ns - direct_ns
            );
        }
    }
}

fn main() {
    let deps = deps_dir();
    let capi = deps.join("libnrtsim_capi.so");
    let recorder = deps.join("libnrtsim_record.so");
    if std::env::args().any(|arg| arg == CHILD) {
        child(&capi, &recorder);
        return;
    }
    // `cargo bench` passes `--bench`; `cargo test --benches` does not run benchmarks.
    if !std::env::args().any(|arg| arg == "--bench") {
        return;
    }
    let scratch = std::env::temp_dir().join(format!("nrtsim-record-bench-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).expect("scratch folder");
    let trace = scratch.join("bench.trace");
    let status = std::process::Command::new(std::env::current_exe().expect("the bench"))
        .arg(CHILD)
        .env("NRT_LIB_PATH", &capi)
        .env("NRTSIM_RECORD_OUT", &trace)
        .env("NRTSIM_QUIET", "1")
        .env("NRTSIM_CORES", "1")
        .env("NRTSIM_HBM_BYTES", "67108864")
        .status()
        .expect("run the benchmark");
    let lines = std::fs::read_to_string(&trace).map(|t| t.lines().count()).unwrap_or(0);
    println!("(the recorded run wrote {lines} trace lines)");
    let _ = std::fs::remove_dir_all(&scratch);
    assert!(status.success(), "the benchmark process failed");
}
