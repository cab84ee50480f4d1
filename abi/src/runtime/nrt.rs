//! [`RuntimeNrt`]: the methods of `nrt/nrt.h`, the core of libnrt (lifecycle, models, tensor sets,
//! tensors, the NeuronCore counts, collectives set-up and the device's memory and fabric).
//!
//! `nrt_get_version` (`nrt/nrt_version.h`, one function) joins this header here, and
//! `nrt_get_status_as_str` (`nrt/nrt_status.h`) is no method at all: it is
//! [`NrtStatus::identifier`](crate::status::NrtStatus::identifier).

use std::sync::Arc;

use super::{
    ExternalBuffer, Framework, InstanceInfo, ModelId, NrtError, NrtVersion, Placement, SetId,
    TensorId, TensorReadBatch, TensorWriteBatch, VncMemoryStats, declare::runtime_trait,
};
use crate::status::NrtStatus;
use crate::trace::format::{Buffer, Name, Opaque, Untraced};

runtime_trait! {
    /// The functions of `nrt/nrt.h` (and `nrt_get_version`), one method each; see
    /// [`Runtime`](super::Runtime).
    pub trait RuntimeNrt {
        /// `nrt_init`: starts the runtime.
        ///
        /// # Errors
        /// [`NrtStatus::Invalid`] for [`Framework::Invalid`] or when already initialized.
        fn init(
            &self,
            framework: Framework,
            fw_version: &str,
            fal_version: &str,
        ) -> Result<(), NrtError> => nrt_init;

        /// `nrt_close`: unloads every model and releases the NeuronCores. Afterwards gated calls
        /// return [`NrtStatus::Closed`]. Infallible, as in C.
        fn close(&self) => nrt_close;

        /// `nrt_load`: loads a NEFF on `vnc_count` NeuronCores starting at `vnc` (`-1`: the first
        /// free ones).
        ///
        /// # Errors
        /// [`NrtStatus::Invalid`] for a malformed NEFF or bad arguments,
        /// [`NrtStatus::UnsupportedNeffVersion`] for a NEFF from a newer format,
        /// [`NrtStatus::LoadNotEnoughNc`] when too few NeuronCores are free,
        /// [`NrtStatus::Resource`] when device memory runs out while staging.
        fn load(&self, neff: &[u8], vnc: i32, vnc_count: i32) -> Result<ModelId, NrtError>
            => nrt_load;

        /// `nrt_load_collectives`: [`RuntimeNrt::load`] for a rank `ctx_device_id` of
        /// `ctx_device_count` in a collective group.
        ///
        /// # Errors
        /// As [`RuntimeNrt::load`], and [`NrtStatus::Invalid`] when `ctx_device_id` is not below
        /// `ctx_device_count`.
        fn load_collectives(
            &self,
            neff: &[u8],
            vnc: i32,
            vnc_count: i32,
            ctx_device_id: u32,
            ctx_device_count: u32,
        ) -> Result<ModelId, NrtError> => nrt_load_collectives;

        /// `nrt_unload`: frees everything the load staged and releases the NeuronCores.
        ///
        /// # Errors
        /// [`NrtStatus::InvalidHandle`] for an unknown or already unloaded model.
        fn unload(&self, model: ModelId) -> Result<(), NrtError> => nrt_unload;

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
        ) -> Result<NrtStatus, NrtError> => nrt_execute;

        /// `nrt_execute_repeat`: [`RuntimeNrt::execute`] `repeat_count` times; `Ok` carries
        /// [`NrtStatus::ExecCompletedWithNumErr`] if any launch produced a NaN.
        ///
        /// # Errors
        /// As [`RuntimeNrt::execute`], and [`NrtStatus::Invalid`] for a `repeat_count` below 1.
        fn execute_repeat(
            &self,
            model: ModelId,
            input_set: SetId,
            output_set: SetId,
            repeat_count: i32,
        ) -> Result<NrtStatus, NrtError> => nrt_execute_repeat;

        /// `nrt_allocate_tensor_set`: a new, empty name → tensor map.
        ///
        /// # Errors
        /// Only the lifecycle statuses.
        fn allocate_tensor_set(&self) -> Result<SetId, NrtError> => nrt_allocate_tensor_set;

        /// `nrt_destroy_tensor_set`: forgets the set; frees none of its tensors. Works in any
        /// lifecycle state (a release, like C's `void`).
        ///
        /// # Errors
        /// [`NrtStatus::InvalidHandle`] for an unknown set (the C layer ignores it).
        fn destroy_tensor_set(&self, set: SetId) -> Result<(), NrtError> => nrt_destroy_tensor_set;

        /// `nrt_add_tensor_to_tensor_set`: adds `tensor` under `name`, replacing any tensor already
        /// there. The name need not equal the tensor's own name.
        ///
        /// # Errors
        /// [`NrtStatus::InvalidHandle`] for an unknown set or tensor.
        fn add_tensor_to_tensor_set(
            &self,
            set: SetId,
            name: &[u8] as Name(name),
            tensor: TensorId,
        ) -> Result<(), NrtError> => nrt_add_tensor_to_tensor_set;

        /// `nrt_get_tensor_from_tensor_set`: the tensor stored under `name`.
        ///
        /// # Errors
        /// [`NrtStatus::Failure`] when the set has no such name; [`NrtStatus::InvalidHandle`] for
        /// an unknown set.
        fn get_tensor_from_tensor_set(
            &self,
            set: SetId,
            name: &[u8] as Name(name),
        ) -> Result<TensorId, NrtError> => nrt_get_tensor_from_tensor_set;

        /// `nrt_tensor_allocate`: a zero-filled tensor of `size` bytes; `vnc` names the NeuronCore
        /// for [`Placement::Device`].
        ///
        /// # Errors
        /// [`NrtStatus::Invalid`] for a NeuronCore that does not exist; [`NrtStatus::Resource`]
        /// when device memory is exhausted or a [`Placement::Host`] tensor is above the
        /// host-placement limit (the code for the latter is to be pinned on a device).
        fn tensor_allocate(
            &self,
            placement: Placement,
            vnc: i32,
            size: usize,
            name: &[u8] as Name(name),
        ) -> Result<TensorId, NrtError> => nrt_tensor_allocate;

        /// `nrt_tensor_allocate_empty`: a tensor with no storage, for
        /// [`RuntimeNrt::tensor_attach_buffer`].
        ///
        /// # Errors
        /// Only the lifecycle statuses.
        fn tensor_allocate_empty(&self, name: &[u8] as Name(name)) -> Result<TensorId, NrtError>
            => nrt_tensor_allocate_empty;

        /// `nrt_tensor_attach_buffer`: makes caller-owned memory the tensor's storage; the tensor's
        /// size becomes the buffer's length.
        ///
        /// # Errors
        /// [`NrtStatus::InvalidHandle`] for an unknown tensor; [`NrtStatus::Invalid`] for a tensor
        /// that owns storage already.
        fn tensor_attach_buffer(
            &self,
            tensor: TensorId,
            // Measured before the call takes it.
            buffer: Arc<dyn ExternalBuffer> as Buffer(buffer.len()),
        ) -> Result<(), NrtError> => nrt_tensor_attach_buffer;

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
            name: &[u8] as Name(name),
        ) -> Result<TensorId, NrtError> => nrt_tensor_allocate_slice;

        /// `nrt_tensor_free`: forgets the handle; the storage goes when its last user does. Works
        /// in any lifecycle state (a release, like C's `void`).
        ///
        /// # Errors
        /// [`NrtStatus::InvalidHandle`] for an unknown tensor (the C layer ignores it).
        fn tensor_free(&self, tensor: TensorId) -> Result<(), NrtError> => nrt_tensor_free;

        /// `nrt_tensor_read`: copies `buf.len()` bytes from `offset` of the tensor into `buf`.
        ///
        /// # Errors
        /// [`NrtStatus::Invalid`] when the range does not fit (the message gives it) or the tensor
        /// has no storage; [`NrtStatus::InvalidHandle`] for an unknown tensor.
        // The line shows how many bytes were asked for, and on success the bytes read.
        fn tensor_read(
            &self,
            tensor: TensorId,
            offset: usize,
            buf: &mut [u8] as buf.len(),
        ) -> Result<(), NrtError> as buf => nrt_tensor_read;

        /// `nrt_tensor_write`: copies `bytes` into the tensor from `offset`.
        ///
        /// # Errors
        /// As [`RuntimeNrt::tensor_read`].
        fn tensor_write(
            &self,
            tensor: TensorId,
            offset: usize,
            bytes: &[u8],
        ) -> Result<(), NrtError> => nrt_tensor_write;

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
        ) -> Result<(), NrtError> => nrt_tensor_copy;

        /// `nrt_tensor_memset`: sets `size` bytes from `offset` to the low byte of `value`.
        ///
        /// # Errors
        /// As [`RuntimeNrt::tensor_read`].
        fn tensor_memset(
            &self,
            tensor: TensorId,
            offset: u64,
            value: i32,
            size: usize,
        ) -> Result<(), NrtError> => nrt_tensor_memset;

        /// `nrt_tensor_get_size`: the tensor's size in bytes. Works in any lifecycle state.
        ///
        /// # Errors
        /// [`NrtStatus::InvalidHandle`] for an unknown tensor.
        fn tensor_get_size(&self, tensor: TensorId) -> Result<usize, NrtError>
            => nrt_tensor_get_size;

        /// `nrt_tensor_get_va`: the address of the tensor's first byte, stable for its life.
        ///
        /// # Errors
        /// [`NrtStatus::Invalid`] for a tensor with no storage; [`NrtStatus::InvalidHandle`] for an
        /// unknown tensor.
        // The address differs between backends by nature.
        fn tensor_get_va(&self, tensor: TensorId) -> Result<usize, NrtError> as Opaque("<va>")
            => nrt_tensor_get_va;

        /// `nrt_get_version`: the runtime's version. Works in any lifecycle state.
        ///
        /// # Errors
        /// None from a conforming backend; a library failure for a loaded one.
        fn get_version(&self) -> Result<NrtVersion, NrtError> => nrt_get_version;

        /// `nrt_get_total_vnc_count`: the NeuronCores of the machine. Works in any lifecycle state.
        ///
        /// # Errors
        /// None from a conforming backend; a library failure for a loaded one.
        fn get_total_vnc_count(&self) -> Result<u32, NrtError> => nrt_get_total_vnc_count;

        /// `nrt_get_visible_vnc_count`: the NeuronCores this process may use. Works in any
        /// lifecycle state (the public header says so).
        ///
        /// # Errors
        /// None from a conforming backend; a library failure for a loaded one.
        fn get_visible_vnc_count(&self) -> Result<u32, NrtError> => nrt_get_visible_vnc_count;

        /// `nrt_get_total_nc_count` (deprecated name of the total count). Works in any lifecycle
        /// state.
        ///
        /// # Errors
        /// None from a conforming backend; a library failure, or a library without the function.
        fn get_total_nc_count(&self) -> Result<u32, NrtError> => nrt_get_total_nc_count;

        /// `nrt_get_visible_nc_count` (deprecated name of the visible count). Works in any
        /// lifecycle state.
        ///
        /// # Errors
        /// As [`RuntimeNrt::get_total_nc_count`].
        fn get_visible_nc_count(&self) -> Result<u32, NrtError> => nrt_get_visible_nc_count;

        /// `nrt_get_model_nc_count`: the NeuronCores a loaded model occupies.
        ///
        /// # Errors
        /// [`NrtStatus::InvalidHandle`] for an unknown model; the lifecycle statuses.
        fn get_model_nc_count(&self, model: ModelId) -> Result<u32, NrtError>
            => nrt_get_model_nc_count;

        /// `nrt_get_model_vnc_count`: the NeuronCores a loaded model occupies.
        ///
        /// # Errors
        /// As [`RuntimeNrt::get_model_nc_count`].
        fn get_model_vnc_count(&self, model: ModelId) -> Result<u32, NrtError>
            => nrt_get_model_vnc_count;

        /// `nrt_get_vnc_memory_stats`: device memory in use and available on a NeuronCore.
        ///
        /// # Errors
        /// [`NrtStatus::Invalid`] for a NeuronCore that does not exist; the lifecycle statuses.
        fn get_vnc_memory_stats(&self, vnc: u32) -> Result<VncMemoryStats, NrtError>
            => nrt_get_vnc_memory_stats;

        /// `nrt_tensor_read_batch`: reads every range of every batch, in order, and returns the
        /// bytes of each range (batch by batch, range by range). `untracked` is passed through.
        ///
        /// # Errors
        /// As [`RuntimeNrt::tensor_read`] for the first range that fails; a library without the
        /// function.
        fn tensor_read_batch(
            &self,
            batches: &[TensorReadBatch],
            untracked: bool,
        ) -> Result<Vec<Vec<u8>>, NrtError> => nrt_tensor_read_batch;

        /// `nrt_tensor_write_batch`: writes every operation of every batch, in order.
        ///
        /// # Errors
        /// As [`RuntimeNrt::tensor_write`] for the first operation that fails; a library without
        /// the function.
        fn tensor_write_batch(
            &self,
            batches: &[TensorWriteBatch],
            untracked: bool,
        ) -> Result<(), NrtError> => nrt_tensor_write_batch;

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
        ) -> Result<(), NrtError> => nrt_tensor_check_output_completion;

        /// `nrt_tensor_reset_output_completion`: the tensor's completion count starts again at 0.
        ///
        /// # Errors
        /// An unknown tensor; the lifecycle statuses; a library without the function.
        fn tensor_reset_output_completion(&self, tensor: TensorId) -> Result<(), NrtError>
            => nrt_tensor_reset_output_completion;

        /// `nrt_get_instance_info`: the instance family and size the library runs on.
        ///
        /// # Errors
        /// The lifecycle statuses; a library without the function.
        fn get_instance_info(&self) -> Result<InstanceInfo, NrtError> => nrt_get_instance_info;

        /// `nrt_build_global_comm`: joins the communicator of `world` ranks.
        ///
        /// # Errors
        /// [`NrtStatus::Invalid`] for a `vnc` that is not a core, a world of 0 or a rank outside
        /// it; the lifecycle statuses.
        fn build_global_comm(&self, vnc: i32, rank: u32, world: u32) -> Result<(), NrtError>
            => nrt_build_global_comm;

        /// `nrt_cc_global_comm_init`: as [`RuntimeNrt::build_global_comm`].
        ///
        /// # Errors
        /// As [`RuntimeNrt::build_global_comm`].
        fn cc_global_comm_init(&self, vnc: u32, rank: u32, world: u32) -> Result<(), NrtError>
            => nrt_cc_global_comm_init;

        /// `nrt_get_dmabuf_fd`: the dma-buf file descriptor of device memory at `va`.
        ///
        /// # Errors
        /// [`NrtStatus::Invalid`] where no dma-buf exists (the simulator); the lifecycle statuses.
        // What these three return (descriptors, addresses, PCI names) is the machine's own: only
        // the status is traced, and addresses are `<address>`.
        fn get_dmabuf_fd(
            &self,
            va: usize as Opaque("<address>"),
            size: u64,
        ) -> Result<i32, NrtError> as Untraced => nrt_get_dmabuf_fd;

        /// `nrt_get_hbm_mmap_va`: where an HBM region of a device is mapped into this process, and
        /// its size. The address is a number here; nothing dereferences it.
        ///
        /// # Errors
        /// [`NrtStatus::Invalid`] where HBM cannot be mapped (the simulator); the lifecycle
        /// statuses.
        fn get_hbm_mmap_va(
            &self,
            device_id: i32,
            hbm_idx: i32,
        ) -> Result<(usize, usize), NrtError> as Untraced => nrt_get_hbm_mmap_va;

        /// `nrt_get_attached_efa_bdf` into a 64-byte buffer: the PCI address of the EFA device
        /// attached to the device memory at `va`.
        ///
        /// # Errors
        /// [`NrtStatus::Invalid`] where no EFA device is attached (the simulator); the lifecycle
        /// statuses.
        fn get_attached_efa_bdf(
            &self,
            va: usize as Opaque("<address>"),
        ) -> Result<String, NrtError> as Untraced => nrt_get_attached_efa_bdf;
    }
}
