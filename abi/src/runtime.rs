//! The libnrt C API subset (ABI-FACTS §4) as an object-safe Rust trait, [`Runtime`].
//!
//! Every backend implements this one trait: the simulator (`sim::SimRuntime`), and later the real
//! `libnrt.so.1` loaded at run time. The binding layer and the conformance harness are written
//! once over `&dyn Runtime`, so they behave the same on a laptop and on a device.
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
//! - **A completed launch is `Ok` even with a warning.** [`Runtime::execute`] returns
//!   `Ok(NrtStatus::Success)` or `Ok(NrtStatus::ExecCompletedWithNumErr)` (1003: outputs are
//!   written, some hold a NaN), so a caller sees both the status and the written outputs, as
//!   libtorchneuron does when it tolerates 1003.
//! - **Free functions of the C API are `Drop` here.** `nrt_free_model_tensor_info` releases the
//!   array [`Runtime::get_model_tensor_info`] returns; in Rust that array is a `Vec` and dropping
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
//!   names are protobuf `bytes` (ABI-FACTS §1), so no UTF-8 check may reject one. A backend that
//!   hands a name to C refuses only what a C string cannot hold (a NUL byte).
//!
//! - **The async API's memory is the backend's.** `nrta_tensor_write` takes the bytes (the
//!   backend keeps them until the request completes) and `nrta_tensor_read` delivers into an
//!   [`AsyncReadBuffer`] the backend fills after it has seen the request complete, so safe Rust
//!   never shares memory that C may still be writing.
//!
//! Lifecycle: each function's pre-init rule is in the function table
//! ([`crate::functions::PreInit`]); the gated ones fail with [`NrtStatus::Uninitialized`] before
//! [`Runtime::init`] and with [`NrtStatus::Closed`] after [`Runtime::close`]. The version, the
//! four core counts and [`Runtime::tensor_get_size`] work in every state.

use std::fmt;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
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

/// The libnrt C API subset of ABI-FACTS §4. Object-safe; every backend is `Send + Sync` and
/// every method may be called from any thread.
///
/// Status codes below are those a conforming backend returns; every gated method also returns
/// [`NrtStatus::Uninitialized`] before [`Runtime::init`] and [`NrtStatus::Closed`] after
/// [`Runtime::close`], and any method may return a status injected by a test backend.
pub trait Runtime: Send + Sync {
    /// `nrt_init`: starts the runtime.
    ///
    /// # Errors
    /// [`NrtStatus::Invalid`] for [`Framework::Invalid`] or when already initialized.
    fn init(
        &self,
        framework: Framework,
        fw_version: &str,
        fal_version: &str,
    ) -> Result<(), NrtError>;

    /// `nrt_close`: unloads every model and releases the NeuronCores. Afterwards gated calls
    /// return [`NrtStatus::Closed`]. Infallible, as in C.
    fn close(&self);

    /// `nrt_load`: loads a NEFF on `vnc_count` NeuronCores starting at `vnc` (`-1`: the first
    /// free ones).
    ///
    /// # Errors
    /// [`NrtStatus::Invalid`] for a malformed NEFF or bad arguments,
    /// [`NrtStatus::UnsupportedNeffVersion`] for a NEFF from a newer format,
    /// [`NrtStatus::LoadNotEnoughNc`] when too few NeuronCores are free,
    /// [`NrtStatus::Resource`] when device memory runs out while staging.
    fn load(&self, neff: &[u8], vnc: i32, vnc_count: i32) -> Result<ModelId, NrtError>;

    /// `nrt_load_collectives`: [`Runtime::load`] for a rank `ctx_device_id` of
    /// `ctx_device_count` in a collective group.
    ///
    /// # Errors
    /// As [`Runtime::load`], and [`NrtStatus::Invalid`] when `ctx_device_id` is not below
    /// `ctx_device_count`.
    fn load_collectives(
        &self,
        neff: &[u8],
        vnc: i32,
        vnc_count: i32,
        ctx_device_id: u32,
        ctx_device_count: u32,
    ) -> Result<ModelId, NrtError>;

    /// `nrt_unload`: frees everything the load staged and releases the NeuronCores.
    ///
    /// # Errors
    /// [`NrtStatus::InvalidHandle`] for an unknown or already unloaded model.
    fn unload(&self, model: ModelId) -> Result<(), NrtError>;

    /// `nrt_execute`: binds the sets' tensors to the model's variables by name, runs the model
    /// once and writes the outputs. `Ok` carries [`NrtStatus::Success`] or
    /// [`NrtStatus::ExecCompletedWithNumErr`] (outputs are written in both cases).
    ///
    /// # Errors
    /// [`NrtStatus::InvalidHandle`] for an unknown model or set; [`NrtStatus::Invalid`] when a
    /// variable's name is missing from its set, a tensor is smaller than its variable, or a
    /// device tensor lives on another NeuronCore; an execution failure status otherwise.
    fn execute(
        &self,
        model: ModelId,
        input_set: SetId,
        output_set: SetId,
    ) -> Result<NrtStatus, NrtError>;

    /// `nrt_execute_repeat`: [`Runtime::execute`] `repeat_count` times; `Ok` carries
    /// [`NrtStatus::ExecCompletedWithNumErr`] if any launch produced a NaN.
    ///
    /// # Errors
    /// As [`Runtime::execute`], and [`NrtStatus::Invalid`] for a `repeat_count` below 1.
    fn execute_repeat(
        &self,
        model: ModelId,
        input_set: SetId,
        output_set: SetId,
        repeat_count: i32,
    ) -> Result<NrtStatus, NrtError>;

    /// `nrt_allocate_tensor_set`: a new, empty name → tensor map.
    ///
    /// # Errors
    /// Only the lifecycle statuses.
    fn allocate_tensor_set(&self) -> Result<SetId, NrtError>;

    /// `nrt_destroy_tensor_set`: forgets the set; frees none of its tensors. Works in any
    /// lifecycle state (a release, like C's `void`).
    ///
    /// # Errors
    /// [`NrtStatus::InvalidHandle`] for an unknown set (the C layer ignores it).
    fn destroy_tensor_set(&self, set: SetId) -> Result<(), NrtError>;

    /// `nrt_add_tensor_to_tensor_set`: adds `tensor` under `name`, replacing any tensor already
    /// there. The name need not equal the tensor's own name.
    ///
    /// # Errors
    /// [`NrtStatus::InvalidHandle`] for an unknown set or tensor.
    fn add_tensor_to_tensor_set(
        &self,
        set: SetId,
        name: &[u8],
        tensor: TensorId,
    ) -> Result<(), NrtError>;

    /// `nrt_get_tensor_from_tensor_set`: the tensor stored under `name`.
    ///
    /// # Errors
    /// [`NrtStatus::Failure`] when the set has no such name; [`NrtStatus::InvalidHandle`] for an
    /// unknown set.
    fn get_tensor_from_tensor_set(&self, set: SetId, name: &[u8]) -> Result<TensorId, NrtError>;

    /// `nrt_tensor_allocate`: a zero-filled tensor of `size` bytes; `vnc` names the NeuronCore
    /// for [`Placement::Device`].
    ///
    /// # Errors
    /// [`NrtStatus::Invalid`] for a NeuronCore that does not exist; [`NrtStatus::Resource`] when
    /// device memory is exhausted or a [`Placement::Host`] tensor is above the host-placement
    /// limit (the code for the latter is to be pinned on a device).
    fn tensor_allocate(
        &self,
        placement: Placement,
        vnc: i32,
        size: usize,
        name: &[u8],
    ) -> Result<TensorId, NrtError>;

    /// `nrt_tensor_allocate_empty`: a tensor with no storage, for
    /// [`Runtime::tensor_attach_buffer`].
    ///
    /// # Errors
    /// Only the lifecycle statuses.
    fn tensor_allocate_empty(&self, name: &[u8]) -> Result<TensorId, NrtError>;

    /// `nrt_tensor_attach_buffer`: makes caller-owned memory the tensor's storage; the tensor's
    /// size becomes the buffer's length.
    ///
    /// # Errors
    /// [`NrtStatus::InvalidHandle`] for an unknown tensor; [`NrtStatus::Invalid`] for a tensor
    /// that owns storage already.
    fn tensor_attach_buffer(
        &self,
        tensor: TensorId,
        buffer: Arc<dyn ExternalBuffer>,
    ) -> Result<(), NrtError>;

    /// `nrt_tensor_allocate_slice`: a tensor viewing `size` bytes of `src` from `offset`. The
    /// storage is shared and reference-counted: the slice stays valid after `src` is freed.
    ///
    /// # Errors
    /// [`NrtStatus::Invalid`] when the range does not fit in `src` or `src` has no storage;
    /// [`NrtStatus::InvalidHandle`] for an unknown tensor.
    fn tensor_allocate_slice(
        &self,
        src: TensorId,
        offset: usize,
        size: usize,
        name: &[u8],
    ) -> Result<TensorId, NrtError>;

    /// `nrt_tensor_free`: forgets the handle; the storage goes when its last user does. Works in
    /// any lifecycle state (a release, like C's `void`).
    ///
    /// # Errors
    /// [`NrtStatus::InvalidHandle`] for an unknown tensor (the C layer ignores it).
    fn tensor_free(&self, tensor: TensorId) -> Result<(), NrtError>;

    /// `nrt_tensor_read`: copies `buf.len()` bytes from `offset` of the tensor into `buf`.
    ///
    /// # Errors
    /// [`NrtStatus::Invalid`] when the range does not fit (the message gives it) or the tensor
    /// has no storage; [`NrtStatus::InvalidHandle`] for an unknown tensor.
    fn tensor_read(&self, tensor: TensorId, offset: usize, buf: &mut [u8]) -> Result<(), NrtError>;

    /// `nrt_tensor_write`: copies `bytes` into the tensor from `offset`.
    ///
    /// # Errors
    /// As [`Runtime::tensor_read`].
    fn tensor_write(&self, tensor: TensorId, offset: usize, bytes: &[u8]) -> Result<(), NrtError>;

    /// `nrt_tensor_copy`: copies `size` bytes between two tensors (or within one).
    ///
    /// # Errors
    /// [`NrtStatus::Invalid`] when either range does not fit, or both are device tensors on
    /// different NeuronCores; [`NrtStatus::InvalidHandle`] for an unknown tensor.
    fn tensor_copy(
        &self,
        src: TensorId,
        src_offset: usize,
        dst: TensorId,
        dst_offset: usize,
        size: usize,
    ) -> Result<(), NrtError>;

    /// `nrt_tensor_memset`: sets `size` bytes from `offset` to the low byte of `value`.
    ///
    /// # Errors
    /// As [`Runtime::tensor_read`].
    fn tensor_memset(
        &self,
        tensor: TensorId,
        offset: u64,
        value: i32,
        size: usize,
    ) -> Result<(), NrtError>;

    /// `nrt_tensor_get_size`: the tensor's size in bytes. Works in any lifecycle state.
    ///
    /// # Errors
    /// [`NrtStatus::InvalidHandle`] for an unknown tensor.
    fn tensor_get_size(&self, tensor: TensorId) -> Result<usize, NrtError>;

    /// `nrt_tensor_get_va`: the address of the tensor's first byte, stable for its life.
    ///
    /// # Errors
    /// [`NrtStatus::Invalid`] for a tensor with no storage; [`NrtStatus::InvalidHandle`] for an
    /// unknown tensor.
    fn tensor_get_va(&self, tensor: TensorId) -> Result<usize, NrtError>;

    /// `nrt_get_model_tensor_info`: the model's inputs, then its outputs. Dropping the `Vec` is
    /// `nrt_free_model_tensor_info`.
    ///
    /// # Errors
    /// [`NrtStatus::InvalidHandle`] for an unknown model.
    fn get_model_tensor_info(&self, model: ModelId) -> Result<Vec<TensorInfo>, NrtError>;

    /// `nrt_get_version`: the runtime's version. Works in any lifecycle state.
    ///
    /// # Errors
    /// None from a conforming backend; a library failure for a loaded one.
    fn get_version(&self) -> Result<NrtVersion, NrtError>;

    /// `nrt_get_total_vnc_count`: the NeuronCores of the machine. Works in any lifecycle state.
    ///
    /// # Errors
    /// None from a conforming backend; a library failure for a loaded one.
    fn get_total_vnc_count(&self) -> Result<u32, NrtError>;

    /// `nrt_get_visible_vnc_count`: the NeuronCores this process may use. Works in any
    /// lifecycle state (the public header says so).
    ///
    /// # Errors
    /// None from a conforming backend; a library failure for a loaded one.
    fn get_visible_vnc_count(&self) -> Result<u32, NrtError>;

    // The functions below are the rest of the public headers that a backend can show
    // (`abi::functions`); each is one C function.

    /// `nrt_get_total_nc_count` (deprecated name of the total count). Works in any lifecycle
    /// state.
    ///
    /// # Errors
    /// None from a conforming backend; a library failure, or a library without the function.
    fn get_total_nc_count(&self) -> Result<u32, NrtError>;

    /// `nrt_get_visible_nc_count` (deprecated name of the visible count). Works in any
    /// lifecycle state.
    ///
    /// # Errors
    /// As [`Runtime::get_total_nc_count`].
    fn get_visible_nc_count(&self) -> Result<u32, NrtError>;

    /// `nrt_get_model_nc_count`: the NeuronCores a loaded model occupies.
    ///
    /// # Errors
    /// [`NrtStatus::InvalidHandle`] for an unknown model; the lifecycle statuses.
    fn get_model_nc_count(&self, model: ModelId) -> Result<u32, NrtError>;

    /// `nrt_get_model_vnc_count`: the NeuronCores a loaded model occupies.
    ///
    /// # Errors
    /// As [`Runtime::get_model_nc_count`].
    fn get_model_vnc_count(&self, model: ModelId) -> Result<u32, NrtError>;

    /// `nrt_get_model_instance_count`: how many threads may usefully call `nrt_execute` on the
    /// model at once.
    ///
    /// # Errors
    /// As [`Runtime::get_model_nc_count`].
    fn get_model_instance_count(&self, model: ModelId) -> Result<u32, NrtError>;

    /// `nrt_get_vnc_memory_stats`: device memory in use and available on a NeuronCore.
    ///
    /// # Errors
    /// [`NrtStatus::Invalid`] for a NeuronCore that does not exist; the lifecycle statuses.
    fn get_vnc_memory_stats(&self, vnc: u32) -> Result<VncMemoryStats, NrtError>;

    /// `nrt_tensor_read_batch`: reads every range of every batch, in order, and returns the
    /// bytes of each range (batch by batch, range by range). `untracked` is passed through.
    ///
    /// # Errors
    /// As [`Runtime::tensor_read`] for the first range that fails; a library without the
    /// function.
    fn tensor_read_batch(
        &self,
        batches: &[TensorReadBatch],
        untracked: bool,
    ) -> Result<Vec<Vec<u8>>, NrtError>;

    /// `nrt_tensor_write_batch`: writes every operation of every batch, in order.
    ///
    /// # Errors
    /// As [`Runtime::tensor_write`] for the first operation that fails; a library without the
    /// function.
    fn tensor_write_batch(
        &self,
        batches: &[TensorWriteBatch],
        untracked: bool,
    ) -> Result<(), NrtError>;

    /// `nrt_tensor_check_output_completion`: succeeds once `expected` launches have written
    /// `tensor` as an output since it was made or last reset, waiting at most `timeout_us`
    /// microseconds (a negative timeout waits without bound).
    ///
    /// # Errors
    /// [`NrtStatus::Timeout`] when the count is not reached in time; an unknown tensor; the
    /// lifecycle statuses; a library without the function.
    fn tensor_check_output_completion(
        &self,
        tensor: TensorId,
        timeout_us: i64,
        expected: u64,
    ) -> Result<(), NrtError>;

    /// `nrt_tensor_reset_output_completion`: the tensor's completion count starts again at 0.
    ///
    /// # Errors
    /// An unknown tensor; the lifecycle statuses; a library without the function.
    fn tensor_reset_output_completion(&self, tensor: TensorId) -> Result<(), NrtError>;

    /// `nrt_memcpy_to_device`: copies `bytes` to the device memory at `address` (inside a
    /// device tensor, an address from [`Runtime::tensor_get_va`]).
    ///
    /// # Errors
    /// An address range that is not device memory; the lifecycle statuses; a library without
    /// the function.
    fn memcpy_to_device(&self, address: usize, bytes: &[u8]) -> Result<(), NrtError>;

    /// `nrt_get_model_info`: the NeuronCore a loaded model starts on (`nrt_model_info_t`'s
    /// `vnc`).
    ///
    /// # Errors
    /// An unknown model; the lifecycle statuses; a library without the function.
    fn get_model_info(&self, model: ModelId) -> Result<u32, NrtError>;

    /// `nrt_sys_trace_get_event_types`: the event types a capture can record.
    ///
    /// # Errors
    /// A library failure, or a library without the function.
    fn sys_trace_get_event_types(&self) -> Result<Vec<String>, NrtError>;

    /// `nrt_sys_trace_config_allocate`, the config setters `config` asks for,
    /// `nrt_sys_trace_start`, then `nrt_sys_trace_config_free`: starts a system-trace capture.
    ///
    /// # Errors
    /// [`NrtStatus::Invalid`] for an unknown event type or while a capture runs; the lifecycle
    /// statuses.
    fn sys_trace_start(&self, config: &SysTraceConfig) -> Result<(), NrtError>;

    /// `nrt_sys_trace_fetch_events` (with fetch options as `fetch` asks), then
    /// `nrt_sys_trace_buffer_free`: removes the captured events and returns them as JSON.
    ///
    /// # Errors
    /// [`NrtStatus::Invalid`] without a capture; the lifecycle statuses.
    fn sys_trace_fetch_events(&self, fetch: &SysTraceFetch) -> Result<String, NrtError>;

    /// `nrt_sys_trace_stop`: ends the capture and frees its events.
    ///
    /// # Errors
    /// [`NrtStatus::Invalid`] without a capture; the lifecycle statuses.
    fn sys_trace_stop(&self) -> Result<(), NrtError>;

    /// `nrta_error_tracker_create`: a tracker for the failed requests of NeuronCore `lnc`.
    ///
    /// # Errors
    /// [`NrtStatus::Invalid`] for a NeuronCore that does not exist; the lifecycle statuses.
    fn nrta_error_tracker_create(&self, lnc: u32) -> Result<TrackerId, NrtError>;

    /// `nrta_error_tracker_destroy`. A release, like C's `void`.
    ///
    /// # Errors
    /// [`NrtStatus::InvalidHandle`] for an unknown tracker (the C function ignores it).
    fn nrta_error_tracker_destroy(&self, tracker: TrackerId) -> Result<(), NrtError>;

    /// `nrta_error_tracker_get_list`: the failed requests so far, in completion order.
    ///
    /// # Errors
    /// [`NrtStatus::InvalidHandle`] for an unknown tracker.
    fn nrta_error_tracker_get_list(
        &self,
        tracker: TrackerId,
    ) -> Result<Vec<(SeqId, NrtStatus)>, NrtError>;

    /// `nrta_tensor_write`: schedules a copy of `bytes` into the tensor from `offset`; the
    /// backend keeps the bytes until the request completes.
    ///
    /// # Errors
    /// [`NrtStatus::InvalidHandle`] for an unknown tensor or tracker, [`NrtStatus::Invalid`] for
    /// a bad queue; a failure of the copy itself goes to the tracker.
    fn nrta_tensor_write(
        &self,
        tensor: TensorId,
        offset: u64,
        bytes: &[u8],
        queue: i32,
        tracker: Option<TrackerId>,
    ) -> Result<SeqId, NrtError>;

    /// `nrta_tensor_read`: schedules a read of `size` bytes from `offset`; `into` holds them
    /// once the request has completed (and stays empty if it failed).
    ///
    /// # Errors
    /// As [`Runtime::nrta_tensor_write`].
    fn nrta_tensor_read(
        &self,
        tensor: TensorId,
        offset: u64,
        size: u64,
        queue: i32,
        tracker: Option<TrackerId>,
        into: Arc<AsyncReadBuffer>,
    ) -> Result<SeqId, NrtError>;

    /// `nrta_execute_schedule`: schedules `nrt_execute` on the model's compute queue.
    ///
    /// # Errors
    /// [`NrtStatus::InvalidHandle`] for an unknown model, set or tracker, [`NrtStatus::Invalid`]
    /// for a queue other than 0; a failed launch goes to the tracker.
    fn nrta_execute_schedule(
        &self,
        model: ModelId,
        input_set: SetId,
        output_set: SetId,
        queue: i32,
        tracker: Option<TrackerId>,
    ) -> Result<SeqId, NrtError>;

    /// `nrta_is_completed`.
    ///
    /// # Errors
    /// [`NrtStatus::Invalid`] for a sequence id never issued.
    fn nrta_is_completed(&self, seq: SeqId) -> Result<bool, NrtError>;

    /// `nrt_async_drain_queued_execs`: blocks until every request scheduled on `vnc` has
    /// completed.
    ///
    /// # Errors
    /// [`NrtStatus::Invalid`] for a NeuronCore that does not exist; the lifecycle statuses.
    fn nrt_async_drain_queued_execs(&self, vnc: i32) -> Result<(), NrtError>;

    // Instance information and profiling (`nrt.h`, `nrt_profile.h`).

    /// `nrt_get_instance_info`: the instance family and size the library runs on.
    ///
    /// # Errors
    /// The lifecycle statuses; a library without the function.
    fn get_instance_info(&self) -> Result<InstanceInfo, NrtError>;

    /// `nrt_profile_start`: records the launches of `model` until [`Runtime::profile_stop`];
    /// `filename` is where the profile goes when the stop names none (`None`: NULL).
    ///
    /// # Errors
    /// An unknown model; [`NrtStatus::Invalid`] while a profile is recorded; the lifecycle
    /// statuses.
    fn profile_start(&self, model: ModelId, filename: Option<&Path>) -> Result<(), NrtError>;

    /// `nrt_profile_stop`: writes the profile to `filename` (`None`: the name given at start).
    ///
    /// # Errors
    /// [`NrtStatus::Invalid`] without a model profile or without any file name; a file that
    /// cannot be written; the lifecycle statuses.
    fn profile_stop(&self, filename: Option<&Path>) -> Result<(), NrtError>;

    /// `nrt_profile_continuous_start` with NULL options: from now on the latest launch of each
    /// NeuronCore can be saved.
    ///
    /// # Errors
    /// [`NrtStatus::Invalid`] while a profile is recorded; the lifecycle statuses.
    fn profile_continuous_start(&self) -> Result<(), NrtError>;

    /// `nrt_profile_continuous_options_allocate`, `…_set_output_dir(output_dir)`,
    /// `nrt_profile_continuous_save(vnc, options)`, then `…_options_free`: saves the latest
    /// launch on `vnc` into `output_dir`.
    ///
    /// # Errors
    /// [`NrtStatus::Invalid`] without continuous profiling or a launch on `vnc`; the lifecycle
    /// statuses.
    fn profile_continuous_save(&self, vnc: u32, output_dir: &Path) -> Result<(), NrtError>;

    /// `nrt_profile_continuous_stop`.
    ///
    /// # Errors
    /// [`NrtStatus::Invalid`] without continuous profiling; the lifecycle statuses.
    fn profile_continuous_stop(&self) -> Result<(), NrtError>;

    /// `nrt_inspect_config_allocate`, the setters `config` asks for,
    /// `nrt_inspect_begin_with_options`, then `nrt_inspect_config_free`.
    ///
    /// # Errors
    /// [`NrtStatus::Invalid`] while a profile is recorded; the lifecycle statuses.
    fn inspect_begin_with_options(&self, config: &InspectConfig) -> Result<(), NrtError>;

    /// `nrt_inspect_stop`: writes what was recorded since the begin into the output folder.
    ///
    /// # Errors
    /// [`NrtStatus::Invalid`] without an inspect session; the lifecycle statuses.
    fn inspect_stop(&self) -> Result<(), NrtError>;

    // Collectives over the ranks of one process (`nrt.h`, `nrt_experimental.h`): `vnc` is the
    // rank's NeuronCore, `rank` its global rank (`g_device_id`), `world` the global count of ranks
    // (`g_device_count`).

    /// `nrt_build_global_comm`: joins the communicator of `world` ranks.
    ///
    /// # Errors
    /// [`NrtStatus::Invalid`] for a `vnc` that is not a core, a world of 0 or a rank outside it;
    /// the lifecycle statuses.
    fn build_global_comm(&self, vnc: i32, rank: u32, world: u32) -> Result<(), NrtError>;

    /// `nrt_cc_global_comm_init`: as [`Runtime::build_global_comm`].
    ///
    /// # Errors
    /// As [`Runtime::build_global_comm`].
    fn cc_global_comm_init(&self, vnc: u32, rank: u32, world: u32) -> Result<(), NrtError>;

    /// `nrt_barrier`: returns once every rank of the world has called it in this round.
    ///
    /// # Errors
    /// As [`Runtime::build_global_comm`]; [`NrtStatus::Timeout`] when a peer does not come.
    fn barrier(&self, vnc: i32, rank: u32, world: u32) -> Result<(), NrtError>;

    /// `nrt_all_gather`: every rank's `input`, concatenated in rank order (`world ×
    /// input.len()` bytes), once every rank has brought its own.
    ///
    /// # Errors
    /// As [`Runtime::barrier`]; [`NrtStatus::Invalid`] when the ranks' sizes differ.
    fn all_gather(
        &self,
        vnc: i32,
        rank: u32,
        world: u32,
        input: &[u8],
    ) -> Result<Vec<u8>, NrtError>;

    // Interfaces of the device's memory and fabric (`nrt.h`), which a simulator does not have
    // (it answers `NRT_INVALID`), and the legacy trace (`nrt_experimental.h`).

    /// `nrt_get_dmabuf_fd`: the dma-buf file descriptor of device memory at `va`.
    ///
    /// # Errors
    /// [`NrtStatus::Invalid`] where no dma-buf exists (the simulator); the lifecycle statuses.
    fn get_dmabuf_fd(&self, va: usize, size: u64) -> Result<i32, NrtError>;

    /// `nrt_get_hbm_mmap_va`: where an HBM region of a device is mapped into this process, and
    /// its size. The address is a number here; nothing dereferences it.
    ///
    /// # Errors
    /// [`NrtStatus::Invalid`] where HBM cannot be mapped (the simulator); the lifecycle statuses.
    fn get_hbm_mmap_va(&self, device_id: i32, hbm_idx: i32) -> Result<(usize, usize), NrtError>;

    /// `nrt_get_attached_efa_bdf` into a 64-byte buffer: the PCI address of the EFA device
    /// attached to the device memory at `va`.
    ///
    /// # Errors
    /// [`NrtStatus::Invalid`] where no EFA device is attached (the simulator); the lifecycle
    /// statuses.
    fn get_attached_efa_bdf(&self, va: usize) -> Result<String, NrtError>;

    /// `nrt_trace_start`: the legacy trace of every NeuronCore, with memory allocations when
    /// `trace_mem`.
    ///
    /// # Errors
    /// [`NrtStatus::Invalid`] while a trace or profile is recorded; the lifecycle statuses.
    fn trace_start(&self, trace_mem: bool) -> Result<(), NrtError>;

    /// `nrt_trace_stop`: writes the legacy trace to `filename` (`None`: NULL) and ends it.
    ///
    /// # Errors
    /// [`NrtStatus::Invalid`] without a trace started or without a file name; a file that
    /// cannot be written; the lifecycle statuses.
    fn trace_stop(&self, filename: Option<&Path>) -> Result<(), NrtError>;

    /// `nrta_get_completion_handle`: a descriptor that becomes readable when request `seq`
    /// has completed (use it with `poll` only); dropping it closes it, as the header asks.
    ///
    /// # Errors
    /// [`NrtStatus::Invalid`] for a sequence id never issued; the lifecycle statuses.
    fn nrta_get_completion_handle(&self, seq: SeqId) -> Result<OwnedFd, NrtError>;
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

/// One tensor's ranges in [`Runtime::tensor_read_batch`] (an `nrt_tensor_batch_t` whose
/// buffers the runtime provides).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorReadBatch {
    /// The tensor read.
    pub tensor: TensorId,
    /// `(offset, size)` of each range, in order.
    pub ranges: Vec<(usize, usize)>,
}

/// One tensor's operations in [`Runtime::tensor_write_batch`] (an `nrt_tensor_batch_t`).
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
