//! The C struct layouts of the libnrt API (docs/abi-facts.md §4), declared once for both sides of the
//! FFI: the real-libnrt backend (`nrt`) reads them from the library, the simulator's C ABI
//! (`sim/capi`) writes them for C callers.
//!
//! Plain `#[repr(C)]` data with compile-time layout checks; nothing here dereferences the raw
//! pointer fields, so no `unsafe` is needed (that stays in the two FFI crates).

use std::ffi::c_char;
use std::mem::{offset_of, size_of};

/// `nrt_tensor_info_t`: 296 bytes.
#[repr(C)]
#[derive(Debug)]
pub struct NrtTensorInfoC {
    /// The tensor name, NUL-terminated.
    pub name: [c_char; 256],
    /// `nrt_tensor_usage_t`: INPUT 0, OUTPUT 1.
    pub usage: u32,
    /// Size in bytes.
    pub size: usize,
    /// `nrt_dtype_t`, in the library's numbering.
    pub dtype: u32,
    /// `ndim` dimensions, owned by the info array.
    pub shape: *mut u32,
    /// Number of dimensions.
    pub ndim: u32,
}

/// `nrt_version_t`: 224 bytes.
#[repr(C)]
#[derive(Debug)]
pub struct NrtVersionC {
    /// Major version.
    pub major: u64,
    /// Minor version.
    pub minor: u64,
    /// Patch version.
    pub patch: u64,
    /// Maintenance version.
    pub maintenance: u64,
    /// Free text, NUL-terminated.
    pub detail: [c_char; 128],
    /// The build's git hash, NUL-terminated.
    pub git_hash: [c_char; 64],
}

/// `ndebug_stream_event_header_t` (`ndebug_stream.h`): 64 bytes, the header of one debug event.
#[repr(C)]
#[derive(Debug)]
pub struct NdebugStreamEventHeaderC {
    /// Bytes of the payload that follows.
    pub data_size: u64,
    /// The event's `ndebug_stream_event_type_t` (`type` in C).
    pub event_type: u32,
    /// Reserved.
    pub reserved: [c_char; 52],
}

/// Bytes before the first entry of `nrt_tensor_info_array_t` (its `uint64_t tensor_count`).
pub const INFO_ARRAY_HEADER: usize = 8;

const _: () = {
    assert!(size_of::<NrtTensorInfoC>() == 296);
    assert!(offset_of!(NrtTensorInfoC, usage) == 256);
    assert!(offset_of!(NrtTensorInfoC, size) == 264);
    assert!(offset_of!(NrtTensorInfoC, dtype) == 272);
    assert!(offset_of!(NrtTensorInfoC, shape) == 280);
    assert!(offset_of!(NrtTensorInfoC, ndim) == 288);
    assert!(size_of::<NrtTensorInfoC>() % 8 == 0);
    assert!(size_of::<NrtVersionC>() == 224);
    assert!(offset_of!(NrtVersionC, detail) == 32);
    assert!(offset_of!(NrtVersionC, git_hash) == 160);
    assert!(size_of::<NdebugStreamEventHeaderC>() == 64);
    assert!(offset_of!(NdebugStreamEventHeaderC, event_type) == 8);
    assert!(offset_of!(NdebugStreamEventHeaderC, reserved) == 12);
};

/// The C type names the function table ([`crate::functions`]) uses, as Rust types: the default
/// mapping for code that expands the table. Handles are opaque; enums are their 4-byte value;
/// structs are `#[repr(C)]` with the public headers' layout (checked below). An FFI crate may
/// shadow a handle type with its own (say `c_void`), since only the layout crosses the ABI.
#[allow(non_camel_case_types)]
pub mod c_types {
    use std::ffi::c_void;
    use std::marker::{PhantomData, PhantomPinned};
    use std::mem::{offset_of, size_of};

    pub use std::ffi::{c_char, c_int};

    pub use super::{
        NdebugStreamEventHeaderC as ndebug_stream_event_header_t,
        NrtTensorInfoC as nrt_tensor_info_t, NrtVersionC as nrt_version_t,
    };

    /// Declares opaque C handle types.
    macro_rules! opaque {
        ($($(#[$doc:meta])* $name:ident;)*) => {$(
            $(#[$doc])*
            #[repr(C)]
            pub struct $name {
                _opaque: [u8; 0],
                _marker: PhantomData<(*mut u8, PhantomPinned)>,
            }
        )*};
    }

    opaque! {
        /// `nrt_model_t`: a loaded model.
        nrt_model_t;
        /// `nrt_tensor_t`: a tensor.
        nrt_tensor_t;
        /// `nrt_cc_context_t`: a prepared collective operation.
        nrt_cc_context_t;
        /// `nrta_error_tracker_t`: the failed requests of one NeuronCore's async queues.
        nrta_error_tracker_t;
        /// `nrt_sys_trace_config_t`: options of a system-trace capture.
        nrt_sys_trace_config_t;
        /// `nrt_sys_trace_fetch_options_t`: options of a fetch of captured events.
        nrt_sys_trace_fetch_options_t;
        /// `nrt_profile_continuous_options_t`: options of continuous profiling.
        nrt_profile_continuous_options_t;
        /// `nrt_inspect_config_t`: options of inspect profiling.
        nrt_inspect_config_t;
        /// `nrt_async_sendrecv_comm_t`: a send or receive communicator.
        nrt_async_sendrecv_comm_t;
        /// `nrt_async_sendrecv_request_t`: a send or receive in flight.
        nrt_async_sendrecv_request_t;
    }

    /// `nrt_tensor_set_t` is `void` in C.
    pub type nrt_tensor_set_t = c_void;
    /// `nrt_tensor_info_array_t`: a `uint64_t` count, then the entries (a flexible array).
    #[repr(C)]
    pub struct nrt_tensor_info_array_t {
        /// Number of entries.
        pub tensor_count: u64,
        /// The entries (inputs, then outputs).
        pub tensor_array: [nrt_tensor_info_t; 0],
    }

    /// `NRT_STATUS`, a 4-byte enum.
    pub type NRT_STATUS = u32;
    /// `nrt_framework_type_t`.
    pub type nrt_framework_type_t = u32;
    /// `nrt_tensor_placement_t`.
    pub type nrt_tensor_placement_t = u32;
    /// `nrt_dtype_t`.
    pub type nrt_dtype_t = u32;
    /// `nrt_op_type_t`.
    pub type nrt_op_type_t = u32;
    /// `nrt_cc_op_type_t`.
    pub type nrt_cc_op_type_t = u32;
    /// `nrta_xu_t`: an execution unit kind.
    pub type nrta_xu_t = u32;
    /// `nrta_seq_t`: execution unit id in the top 16 bits, sequence number in the low 48.
    pub type nrta_seq_t = u64;

    /// `NRT_ASYNC_EXEC_STATUS_CALLBACK`: `(params, model_id, vnc, job_id, status)`. A type
    /// only, not unsafe code: a pointer of it can be called only inside the FFI crates' `unsafe`
    /// blocks, so the crate keeps `#![forbid(unsafe_code)]`.
    pub type NRT_ASYNC_EXEC_STATUS_CALLBACK =
        Option<unsafe extern "C" fn(*mut c_void, u32, u32, u64, NRT_STATUS)>;

    /// `nrt_instance_info_t`: 32 bytes.
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct nrt_instance_info_t {
        /// `NRT_INSTANCE_*` family code.
        pub family: u32,
        /// `NRT_INSTANCE_SIZE_*` code.
        pub size: u32,
        /// Architecture name, NUL-terminated.
        pub arch_name: [c_char; 16],
        /// Device revision, NUL-terminated.
        pub device_revision: [c_char; 8],
    }

    /// `nrt_tensor_batch_op_t`: one range of a batched read or write, 24 bytes.
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct nrt_tensor_batch_op_t {
        /// Offset in the tensor.
        pub offset: u64,
        /// Bytes.
        pub size: u64,
        /// Host memory read from or written to.
        pub buffer: *mut c_void,
    }

    /// `nrt_tensor_batch_t`: the operations on one tensor, 24 bytes.
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct nrt_tensor_batch_t {
        /// The tensor.
        pub tensor: *const nrt_tensor_t,
        /// `num_ops` operations.
        pub ops: *const nrt_tensor_batch_op_t,
        /// Number of operations.
        pub num_ops: u32,
    }

    /// `nrt_tensor_device_allocation_info_t`: 24 bytes.
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct nrt_tensor_device_allocation_info_t {
        /// Address in the device's memory space.
        pub physical_address: u64,
        /// Bytes of the allocation (at least the tensor's size).
        pub size: usize,
        /// Which HBM holds it.
        pub hbm_index: c_int,
    }

    /// `nrt_vnc_memory_stats_t`: 16 bytes (fields are only ever appended).
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct nrt_vnc_memory_stats_t {
        /// Device bytes in use.
        pub bytes_used: usize,
        /// Device bytes available in all.
        pub bytes_limit: usize,
    }

    /// `nrt_cc_comm_t`: a communicator of out-of-NEFF collectives, 32 bytes.
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct nrt_cc_comm_t {
        /// `rank_n` participants.
        pub replica_group: *mut u32,
        /// This rank in the group.
        pub rank: u32,
        /// Size of the group.
        pub rank_n: u32,
        /// Device id in the context.
        pub ctx_device_id: u32,
        /// Devices in the context.
        pub ctx_device_count: u32,
        /// Local NeuronCore.
        pub vnc: u32,
    }

    /// `nrt_tensor_list_t`: 16 bytes.
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct nrt_tensor_list_t {
        /// `num_tensors` tensors.
        pub tensors: *mut *mut nrt_tensor_t,
        /// Number of tensors.
        pub num_tensors: usize,
    }

    /// `nrta_error_t`: one failed async request, 16 bytes.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct nrta_error_t {
        /// The request's sequence id.
        pub seq_id: nrta_seq_t,
        /// Its `NRT_STATUS`, widened to 64 bits.
        pub error_code: u64,
    }

    /// `nrt_ucode_img`: 16 bytes.
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct nrt_ucode_img {
        /// The image.
        pub bin: *mut u8,
        /// Its size.
        pub size: usize,
    }

    /// `nrt_ucode_info`: 32 bytes.
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct nrt_ucode_info {
        /// Instruction memory image.
        pub iram: nrt_ucode_img,
        /// Data memory image.
        pub dram: nrt_ucode_img,
    }

    /// `nrt_model_info_t`: 4 bytes (fields are only ever appended).
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct nrt_model_info_t {
        /// The model's first NeuronCore.
        pub vnc: u32,
    }

    const _: () = {
        assert!(size_of::<nrt_instance_info_t>() == 32);
        assert!(offset_of!(nrt_instance_info_t, arch_name) == 8);
        assert!(offset_of!(nrt_instance_info_t, device_revision) == 24);
        assert!(size_of::<nrt_tensor_batch_op_t>() == 24);
        assert!(size_of::<nrt_tensor_batch_t>() == 24);
        assert!(offset_of!(nrt_tensor_batch_t, num_ops) == 16);
        assert!(size_of::<nrt_tensor_device_allocation_info_t>() == 24);
        assert!(offset_of!(nrt_tensor_device_allocation_info_t, hbm_index) == 16);
        assert!(size_of::<nrt_vnc_memory_stats_t>() == 16);
        assert!(size_of::<nrt_cc_comm_t>() == 32);
        assert!(offset_of!(nrt_cc_comm_t, vnc) == 24);
        assert!(size_of::<nrt_tensor_list_t>() == 16);
        assert!(size_of::<nrta_error_t>() == 16);
        assert!(size_of::<nrt_ucode_info>() == 32);
        assert!(size_of::<nrt_model_info_t>() == 4);
        assert!(offset_of!(nrt_tensor_info_array_t, tensor_array) == super::INFO_ARRAY_HEADER);
    };
}
