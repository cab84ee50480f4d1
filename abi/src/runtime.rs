//! The libnrt C API as an object-safe Rust trait, [`Runtime`], declared per public header.
//!
//! Every backend implements this one trait: the simulator (`sim::SimRuntime`), and the real
//! `libnrt.so.1` loaded at run time. The binding layer and the conformance harness are written
//! once over `&dyn Runtime`, so they behave the same on a laptop and on a device.
//!
//! The methods live in one supertrait per header, in `runtime/<stem>.rs`: [`RuntimeNrt`]
//! (`nrt.rs`), [`RuntimeExperimental`] (`experimental.rs`), [`RuntimeAsync`] (`async_exec.rs`),
//! [`RuntimeProfile`] (`profile.rs`) and [`RuntimeSysTrace`] (`sys_trace.rs`); every backend uses
//! the same stems for its implementations. The data types the methods take and return stay here.
//! Each supertrait is declared through `runtime_trait!` (`runtime/declare.rs`), which also
//! derives how [`TracingRuntime`](crate::trace::TracingRuntime) forwards and records its methods,
//! so a new method is traced without a line of tracing code.
//!
//! Design choices:
//! - **One method per C function, same name without the `nrt_` prefix, same semantics.** Where the
//!   C function returns `void` or a bare value but can meet a bad handle in Rust
//!   (`nrt_tensor_free`, `nrt_destroy_tensor_set`, `nrt_tensor_get_size`, `nrt_tensor_get_va`,
//!   the vnc counts), the method returns a `Result` so that the error is visible; a C shim drops
//!   it. `nrt_close` stays infallible, as in C.
//! - **Handles are newtypes** ([`TensorId`], [`SetId`], [`ModelId`]) that a runtime never reuses,
//!   so a stale handle is an error ([`NrtStatus::InvalidHandle`]), never another object.
//! - **One error type carries the exact status**, [`NrtError`], including codes from newer
//!   libraries ([`NrtStatus::Unknown`]). `detail` is for humans; callers match on `status`.
//! - **A completed launch is `Ok` even with a warning.** [`RuntimeNrt::execute`] returns
//!   `Ok(NrtStatus::Success)` or `Ok(NrtStatus::ExecCompletedWithNumErr)` (1003: outputs are
//!   written, some hold a NaN), so a caller sees both the status and the written outputs, as
//!   libtorchneuron does when it tolerates 1003.
//! - **Free functions of the C API are `Drop` here.** `nrt_free_model_tensor_info` releases the
//!   array [`RuntimeExperimental::get_model_tensor_info`] returns; in Rust that array is a `Vec` and dropping
//!   it is the free.
//! - **`nrt_get_status_as_str` is not a method**: it is [`NrtStatus::identifier`] (or
//!   [`NrtStatus::name`], total over unknown codes), which needs no runtime.
//! - **Caller-owned memory is a trait object**, [`ExternalBuffer`]: `nrt_tensor_attach_buffer`
//!   takes a pointer the caller keeps; in safe Rust the caller hands an `Arc` whose contents it
//!   can still read and write. [`SharedBuffer`] is the safe implementation; a C shim implements
//!   the trait over a raw pointer in its own `unsafe` code. The trait is safe, so nothing it
//!   reports is trusted with memory: memory C may write is a `SharedBuffer` (interior-mutable
//!   bytes whose address only that type gives), reached through
//!   [`ExternalBuffer::into_shared_buffer`].
//!
//! - **Names are bytes** (`&[u8]`): libnrt takes C strings and judges them itself, and metaneff
//!   names are protobuf `bytes` (docs/abi-facts.md §1), so no UTF-8 check may reject one. A backend that
//!   hands a name to C refuses only what a C string cannot hold (a NUL byte).
//!
//! - **The async API's memory is the backend's.** `nrta_tensor_write` takes the bytes (the
//!   backend keeps them until the request completes) and `nrta_tensor_read` delivers into an
//!   [`AsyncReadBuffer`] the backend fills after it has seen the request complete, so safe Rust
//!   never shares memory that C may still be writing.
//!
//! Lifecycle: each function's pre-init rule is in the function table
//! ([`crate::functions::PreInit`]); the gated ones fail with [`NrtStatus::Uninitialized`] before
//! [`RuntimeNrt::init`] and with [`NrtStatus::Closed`] after [`RuntimeNrt::close`]. The version, the
//! four core counts and [`RuntimeNrt::tensor_get_size`] work in every state.

use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crate::dtype::NrtDtype;
use crate::status::NrtStatus;

/// A tensor handle (`nrt_tensor_t *`). Never reused within one runtime instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TensorId(pub u64);

/// A tensor-set handle (`nrt_tensor_set_t *`). Never reused within one runtime instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SetId(pub u64);

/// A loaded-model handle (`nrt_model_t *`). Never reused within one runtime instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ModelId(pub u64);

/// A failed runtime call: the exact libnrt status and a human-readable detail.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{status}: {detail}")]
pub struct NrtError {
    /// The status the call returned; never [`NrtStatus::Success`].
    pub status: NrtStatus,
    /// What went wrong, for humans (lowercase, says what was expected and what came).
    pub detail: String,
}

impl NrtError {
    /// An error with `status` and `detail`.
    pub fn new(status: NrtStatus, detail: impl Into<String>) -> NrtError {
        NrtError { status, detail: detail.into() }
    }
}

/// Declares a C enum as a Rust enum with `code()` / `from_code()` from one table.
macro_rules! c_enum {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $code:literal,)* }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $($(#[$vdoc])* $variant,)*
        }

        impl $name {
            /// Every value, in code order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)*];

            /// The raw C value.
            pub fn code(self) -> u32 {
                match self {
                    $($name::$variant => $code,)*
                }
            }

            /// The value for a raw C code; `None` for a code the C enum does not define.
            pub fn from_code(code: u32) -> Option<$name> {
                match code {
                    $($code => Some($name::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

c_enum! {
    /// `nrt_framework_type_t`: which framework calls `nrt_init`.
    Framework {
        /// Not a valid framework.
        Invalid = 0,
        /// No framework.
        NoFw = 1,
        /// TensorFlow.
        Tensorflow = 2,
        /// PyTorch.
        Pytorch = 3,
        /// MXNet.
        Mxnet = 4,
        /// The pre-check tool.
        Precheck = 5,
    }
}

c_enum! {
    /// `nrt_tensor_placement_t`: where a tensor's storage lives.
    Placement {
        /// Device memory (HBM) of one NeuronCore.
        Device = 0,
        /// Pinned host memory (deprecated; libnrt limits it to 4 MiB).
        Host = 1,
        /// Ordinary host memory, copied to the device when a launch needs it.
        Virtual = 2,
    }
}

c_enum! {
    /// `nrt_tensor_usage_t`: whether a model tensor is an input or an output.
    TensorUsage {
        /// A model input.
        Input = 0,
        /// A model output.
        Output = 1,
    }
}

/// One entry of `nrt_tensor_info_array_t`: an input or output of a loaded model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorInfo {
    /// The variable name the tensor set must use for it.
    pub name: String,
    /// Input or output.
    pub usage: TensorUsage,
    /// The variable's size in bytes: the smallest tensor a launch accepts for it.
    pub size: usize,
    /// The element type (logical; the C layer numbers it per runtime version).
    pub dtype: NrtDtype,
    /// The shape.
    pub shape: Vec<u32>,
}

/// `nrt_version_t`: the runtime library's version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NrtVersion {
    /// Major version.
    pub major: u64,
    /// Minor version.
    pub minor: u64,
    /// Patch version.
    pub patch: u64,
    /// Maintenance version.
    pub maintenance: u64,
    /// A free-form description (at most 127 bytes in C).
    pub detail: String,
    /// The git hash of the build (at most 63 bytes in C).
    pub git_hash: String,
}

/// Caller-owned memory that a tensor can be attached to (`nrt_tensor_attach_buffer`).
///
/// The runtime reads and writes through these methods only; the owner keeps access to the same
/// bytes. Offsets are within `0..len()`; the runtime bounds-checks before calling, and an
/// implementation may treat an out-of-range call as a no-op rather than panic.
///
/// The trait is safe to implement, so nothing it reports is trusted with memory: `address` is
/// informational (what `nrt_tensor_get_va` reports) and no backend dereferences it. A backend that
/// hands the memory itself to C (the real-libnrt backend) attaches only what
/// [`ExternalBuffer::into_shared_buffer`] gives, a [`SharedBuffer`], and takes the address and
/// length from that type, never from the trait.
pub trait ExternalBuffer: Send + Sync {
    /// The size in bytes.
    fn len(&self) -> usize;
    /// Whether the buffer holds no bytes.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Copies `out.len()` bytes starting at `offset` into `out`.
    fn read_at(&self, offset: usize, out: &mut [u8]);
    /// Copies `data` into the buffer starting at `offset`.
    fn write_at(&self, offset: usize, data: &[u8]);
    /// The address of the first byte, as an integer (what `nrt_tensor_get_va` reports). Never
    /// used to reach the memory.
    fn address(&self) -> usize;
    /// The [`SharedBuffer`] whose memory stands for this buffer, if there is one. The real-libnrt
    /// backend attaches exactly that buffer's memory (its own address and length) and keeps the
    /// returned `Arc` alive with the tensor, so an implementation that returns some other
    /// `SharedBuffer` only changes which valid memory C uses, never whether it is valid.
    fn into_shared_buffer(self: Arc<Self>) -> Option<Arc<SharedBuffer>> {
        None
    }
}

/// A safe, heap-backed [`ExternalBuffer`] for tests and the binding layer, and the only buffer
/// the real-libnrt backend lets C write.
///
/// Its bytes are one boxed slice of [`AtomicU8`] for the whole life of the value: the block never
/// moves, and because every byte is an interior-mutable cell, Rust never assumes the contents
/// unchanged behind a shared reference, so C may write them while Rust holds an `Arc`. (A
/// `Box<[u8]>` would promise unique ownership, which C's writes break.) Rust reads and writes them
/// with relaxed atomic accesses; C reads and writes them during the libnrt calls that use the
/// tensor, as libnrt's contract for attached buffers says.
pub struct SharedBuffer {
    bytes: Box<[AtomicU8]>,
}

impl SharedBuffer {
    /// A zero-filled buffer of `len` bytes.
    pub fn zeroed(len: usize) -> SharedBuffer {
        SharedBuffer { bytes: (0..len).map(|_| AtomicU8::new(0)).collect() }
    }

    /// A buffer holding `bytes`.
    pub fn from_vec(bytes: Vec<u8>) -> SharedBuffer {
        SharedBuffer { bytes: bytes.into_iter().map(AtomicU8::new).collect() }
    }

    /// A copy of the current contents.
    pub fn to_vec(&self) -> Vec<u8> {
        self.bytes.iter().map(|byte| byte.load(Ordering::Relaxed)).collect()
    }

    /// The size in bytes (the same as [`ExternalBuffer::len`], but of this type, so a caller
    /// handing the memory to C does not depend on a trait implementation).
    pub fn byte_len(&self) -> usize {
        self.bytes.len()
    }

    /// A pointer to the first of [`SharedBuffer::byte_len`] bytes, valid for reads and writes
    /// (from any thread, through the atomic cells' interior mutability) while `self` lives. The
    /// pointer carries the whole slice, not only its first cell.
    pub fn as_mut_ptr(&self) -> *mut u8 {
        // `AtomicU8` has the size, alignment and bit validity of `u8`.
        self.bytes.as_ptr().cast::<u8>().cast_mut()
    }
}

impl fmt::Debug for SharedBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedBuffer").field("len", &self.byte_len()).finish()
    }
}

impl ExternalBuffer for SharedBuffer {
    fn len(&self) -> usize {
        self.byte_len()
    }

    fn read_at(&self, offset: usize, out: &mut [u8]) {
        if let Some(src) = offset.checked_add(out.len()).and_then(|end| self.bytes.get(offset..end))
        {
            for (out, byte) in out.iter_mut().zip(src) {
                *out = byte.load(Ordering::Relaxed);
            }
        }
    }

    fn write_at(&self, offset: usize, data: &[u8]) {
        if let Some(dst) =
            offset.checked_add(data.len()).and_then(|end| self.bytes.get(offset..end))
        {
            for (byte, &value) in dst.iter().zip(data) {
                byte.store(value, Ordering::Relaxed);
            }
        }
    }

    fn address(&self) -> usize {
        self.as_mut_ptr() as usize
    }

    fn into_shared_buffer(self: Arc<Self>) -> Option<Arc<SharedBuffer>> {
        Some(self)
    }
}

mod async_exec;
pub mod call;
mod declare;
mod experimental;
mod nrt;
mod profile;
mod sys_trace;

pub use async_exec::RuntimeAsync;
pub use experimental::RuntimeExperimental;
pub use nrt::RuntimeNrt;
pub use profile::RuntimeProfile;
pub use sys_trace::RuntimeSysTrace;

/// The libnrt C API as one object-safe trait: every backend is `Send + Sync` and every method may
/// be called from any thread.
///
/// The methods are declared per public header, one supertrait each, so that a function's
/// implementation sits in the file of its header in every backend: [`RuntimeNrt`] (`nrt.h`, with
/// `nrt_version.h`), [`RuntimeExperimental`] (`nrt_experimental.h`), [`RuntimeAsync`]
/// (`nrt_async.h`), [`RuntimeProfile`] (`nrt_profile.h`) and [`RuntimeSysTrace`]
/// (`nrt_sys_trace.h`). A backend implements the five; this trait is implemented for it by the
/// blanket impl below, so `Arc<dyn Runtime>` carries them all. Calling a method through
/// `dyn Runtime` needs its supertrait in scope: import [`prelude`].
///
/// `nrt_async_sendrecv.h` and `ndebug_stream.h` have no methods: no backend offers a network
/// between hosts or a debug stream through this trait (the simulator's C exports answer them
/// without a runtime).
///
/// Status codes in the methods' docs are those a conforming backend returns; every gated method
/// also returns [`NrtStatus::Uninitialized`] before [`RuntimeNrt::init`] and
/// [`NrtStatus::Closed`] after [`RuntimeNrt::close`], and any method may return a status injected
/// by a test backend.
pub trait Runtime:
    RuntimeNrt + RuntimeExperimental + RuntimeAsync + RuntimeProfile + RuntimeSysTrace + Send + Sync
{
}

impl<T> Runtime for T where
    T: ?Sized
        + RuntimeNrt
        + RuntimeExperimental
        + RuntimeAsync
        + RuntimeProfile
        + RuntimeSysTrace
        + Send
        + Sync
{
}

/// [`Runtime`] and its per-header supertraits, for `use abi::runtime::prelude::*` wherever
/// runtime methods are called.
pub mod prelude {
    pub use super::{
        Runtime, RuntimeAsync, RuntimeExperimental, RuntimeNrt, RuntimeProfile, RuntimeSysTrace,
    };
}

/// `nrt_instance_info_t`: the instance a library runs on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstanceInfo {
    /// `NRT_INSTANCE_*` family code.
    pub family: u32,
    /// `NRT_INSTANCE_SIZE_*` code.
    pub size: u32,
    /// The architecture name (`arch_name`, up to its NUL).
    pub arch_name: String,
    /// The device revision (`device_revision`, up to its NUL).
    pub device_revision: String,
}

/// The settings of an inspect session (the setters of `nrt_inspect_config_t`); `None` keeps the
/// library's default.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InspectConfig {
    /// `nrt_inspect_config_set_session_id`.
    pub session_id: Option<i32>,
    /// `nrt_inspect_config_set_output_dir`.
    pub output_dir: Option<PathBuf>,
    /// `nrt_inspect_config_set_enable_inspect`.
    pub enable_inspect: Option<bool>,
    /// `nrt_inspect_config_set_enable_inspect_on_fail`.
    pub enable_inspect_on_fail: Option<bool>,
}

/// An async request's sequence id (`nrta_seq_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SeqId(pub u64);

/// An error tracker (`nrta_error_tracker_t *`). Never reused within one runtime instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TrackerId(pub u64);

/// Where the bytes of an `nrta_tensor_read` arrive: empty until the request has completed.
///
/// The backend fills it (the real-libnrt backend copies from memory only it and libnrt touch,
/// after it has seen the request complete), so Rust never reads memory C may still write.
#[derive(Debug, Default)]
pub struct AsyncReadBuffer {
    bytes: Mutex<Option<Vec<u8>>>,
}

impl AsyncReadBuffer {
    /// An empty buffer.
    pub fn new() -> AsyncReadBuffer {
        AsyncReadBuffer::default()
    }

    /// Stores the bytes of a completed read.
    pub fn fill(&self, bytes: Vec<u8>) {
        *self.bytes.lock().unwrap_or_else(PoisonError::into_inner) = Some(bytes);
    }

    /// The bytes read, once the request has completed; `None` before (or after a failure).
    pub fn bytes(&self) -> Option<Vec<u8>> {
        self.bytes.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

/// What a system-trace capture records (the setters of `nrt_sys_trace_config_t`); the default
/// is the library's default config.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SysTraceConfig {
    /// `nrt_sys_trace_config_set_max_events_per_nc`, when set.
    pub max_events_per_nc: Option<u64>,
    /// NeuronCores switched off (`nrt_sys_trace_config_set_capture_enabled_for_nc`).
    pub disabled_ncs: Vec<u32>,
    /// Event types switched off (`nrt_sys_trace_config_set_capture_enabled_for_event_type`).
    pub disabled_event_types: Vec<String>,
}

/// What a fetch returns (the setters of `nrt_sys_trace_fetch_options_t`); the default fetches
/// every event of every core.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SysTraceFetch {
    /// `nrt_sys_trace_fetch_options_set_max_events_per_nc`, when set.
    pub max_events_per_nc: Option<u64>,
    /// `nrt_sys_trace_fetch_options_set_nc_idx`, when set.
    pub nc: Option<u64>,
}

/// `nrt_vnc_memory_stats_t`: device memory of one NeuronCore.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VncMemoryStats {
    /// Bytes in use.
    pub bytes_used: u64,
    /// Bytes available in all.
    pub bytes_limit: u64,
}

/// One tensor's ranges in [`RuntimeNrt::tensor_read_batch`] (an `nrt_tensor_batch_t` whose
/// buffers the runtime provides).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorReadBatch {
    /// The tensor read.
    pub tensor: TensorId,
    /// `(offset, size)` of each range, in order.
    pub ranges: Vec<(usize, usize)>,
}

/// One tensor's operations in [`RuntimeNrt::tensor_write_batch`] (an `nrt_tensor_batch_t`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorWriteBatch {
    /// The tensor written.
    pub tensor: TensorId,
    /// `(offset, bytes)` of each operation, in order.
    pub ops: Vec<(usize, Vec<u8>)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_enums_round_trip_their_codes() {
        assert_eq!(Framework::ALL.len(), 6);
        for &framework in Framework::ALL {
            assert_eq!(Framework::from_code(framework.code()), Some(framework));
        }
        assert_eq!(Framework::Pytorch.code(), 3);
        assert_eq!(Placement::Virtual.code(), 2);
        assert_eq!(Placement::from_code(3), None);
        assert_eq!(TensorUsage::Output.code(), 1);
        assert_eq!(TensorUsage::from_code(0), Some(TensorUsage::Input));
    }

    #[test]
    fn nrt_error_displays_status_then_detail() {
        let err = NrtError::new(NrtStatus::Invalid, "offset 4 + size 8 past size 10");
        assert_eq!(err.to_string(), "NRT_INVALID (2): offset 4 + size 8 past size 10");
    }

    #[test]
    fn shared_buffer_reads_and_writes_in_range_only() {
        let buffer = SharedBuffer::zeroed(4);
        buffer.write_at(1, &[7, 8]);
        buffer.write_at(3, &[9, 9]);
        let mut out = [0u8; 4];
        buffer.read_at(0, &mut out);
        assert_eq!(out, [0, 7, 8, 0]);
        assert_eq!(buffer.len(), 4);
        assert_ne!(buffer.address(), 0);
    }

    #[test]
    fn shared_buffer_address_is_its_own_memory() {
        let buffer = Arc::new(SharedBuffer::from_vec(vec![1, 2, 3]));
        assert_eq!(buffer.address(), buffer.as_mut_ptr() as usize);
        assert_eq!(buffer.byte_len(), 3);
        let shared = Arc::clone(&buffer).into_shared_buffer().expect("a shared buffer");
        assert!(Arc::ptr_eq(&shared, &buffer));
    }

    #[test]
    fn other_buffers_are_not_shared_buffers_by_default() {
        struct Plain;
        impl ExternalBuffer for Plain {
            fn len(&self) -> usize {
                1
            }
            fn read_at(&self, _: usize, _: &mut [u8]) {}
            fn write_at(&self, _: usize, _: &[u8]) {}
            fn address(&self) -> usize {
                16
            }
        }
        assert!(Arc::new(Plain).into_shared_buffer().is_none());
    }

    fn _runtime_is_object_safe(runtime: &dyn Runtime) -> &dyn Runtime {
        runtime
    }
}
