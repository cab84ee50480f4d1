//! The recorder: a library with every libnrt function that forwards each call to the real
//! `libnrt.so.1` and appends it to a trace file, in the conformance trace format.
//!
//! Preloaded (`LD_PRELOAD=libnrtsim_record.so`) or placed first on the library path under the
//! name `libnrt.so.1`, it records any unmodified client; `nrtsim record` does the preloading.
//! `nrtsim replay` re-issues the calls on the simulator and reports the first divergence.
//!
//! Design choices:
//! - **Derived from the one function table.** `exports` expands `abi::for_each_libnrt_function!`
//!   into one forwarding function per entry and a trampoline symbol versioned `NRT_2.0.0` (the
//!   mechanism of `sim/capi/src/symbols.rs`), so a function added to the table is forwarded
//!   without a line here. Each forwarder hands its arguments, as raw words, to `lines`, which
//!   records them as `nrt::record::plan` says for the function (each function's entry sits
//!   beside the C call its `Runtime` method makes, in `nrt`'s file of its header): the calls
//!   a replay needs are decoded into the typed call of their method (`abi::runtime::call`),
//!   every other call is recorded by name and status only.
//! - **The real library is found as `NrtRuntime` finds it** (`nrt::search`: `NRT_LIB_PATH`, then
//!   `libnrt.so.1` through the loader, then the SDK folder), and never itself: a candidate whose
//!   `nrt_init` is our own is skipped with that reason (`real`).
//! - **One normaliser, one writer.** A decoded call's line is the typed call's own
//!   (`TypedCall::trace_line`), written by the writer `TracingRuntime` uses, with
//!   `abi::trace`'s renaming ([`abi::trace::Trace`]), so a replay compares lines and the
//!   recorder has no formatter of its own. Handles are renamed by generation: a pointer the real
//!   library reuses after a free gets a new name, as a simulator handle would.
//! - **Nothing lost, no system call per line.** Each line is copied into a shared mapping of
//!   the trace file (`sink`), so it is the kernel's the moment it is copied: a client killed
//!   (even by SIGKILL), aborted or crashed leaves every whole line it recorded, then zero
//!   padding where the recording ends; a normal exit truncates the file to its lines. Input
//!   buffers longer than the inline limit (NEFFs, tensor writes) are kept beside it, in
//!   `FILE.blobs/`, named by their hash, so a replay can re-issue them.
//! - **The recorder never changes a call**: what the real library returns is returned; a
//!   recorder that cannot write its file says so once on stderr and keeps forwarding; a panic
//!   while recording loses the line, never the call. Calls the real library makes to its own
//!   exported names while serving one (interposed by a preloaded recorder) are forwarded
//!   unrecorded: only the client's calls are the trace.
//! - **What it costs and disturbs**: formatting one line per call and copying it (the benchmark
//!   states the overhead; the bytes a call takes are copied before it, since it may overwrite
//!   them, and bytes longer than the inline limit are hashed once); an `atexit` and a
//!   `pthread_atfork` handler, no signal handler; for a client that exposes tensor memory, one extra real `nrt_tensor_read` per
//!   exposed tensor before each call that reads tensors, which a fault plan counting reads in
//!   the real library would see.

#![allow(unsafe_code)]

mod exports;
mod exposed;
mod lines;
mod real;
mod sink;

pub use sink::{FORMAT_VERSION, HEADER_MAGIC, OUT_ENV};
