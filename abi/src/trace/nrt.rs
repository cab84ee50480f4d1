//! How [`TracingRuntime`] forwards and records the calls of `nrt/nrt.h` (and `nrt_get_version`).

use std::fmt::Write as _;
use std::sync::Arc;

use super::{
    TracingRuntime, format_bytes, framework_name, launch_line, name_text, outcome, placement_name,
};
use crate::functions::LibnrtFunction;
use crate::runtime::{
    ExternalBuffer, Framework, InstanceInfo, ModelId, NrtError, NrtVersion, Placement, RuntimeNrt,
    SetId, TensorId, TensorReadBatch, TensorWriteBatch, VncMemoryStats,
};
use crate::status::NrtStatus;

impl RuntimeNrt for TracingRuntime {
    fn init(
        &self,
        framework: Framework,
        fw_version: &str,
        fal_version: &str,
    ) -> Result<(), NrtError> {
        let result = self.inner.init(framework, fw_version, fal_version);
        self.unit(result, |_| {
            format!(
                "{}({}, {fw_version:?}, {fal_version:?})",
                LibnrtFunction::nrt_init.trace_name(),
                framework_name(framework)
            )
        })
    }

    fn close(&self) {
        self.inner.close();
        self.trace.record(format!("{}()", LibnrtFunction::nrt_close.trace_name()));
    }

    fn load(&self, neff: &[u8], vnc: i32, vnc_count: i32) -> Result<ModelId, NrtError> {
        let result = self.inner.load(neff, vnc, vnc_count);
        self.trace.record_with(|names| {
            let call = format!(
                "{}({}, {vnc}, {vnc_count})",
                LibnrtFunction::nrt_load.trace_name(),
                format_bytes(neff)
            );
            outcome(names, call, &result, |names, &model| Some(names.model(model)))
        });
        result
    }

    fn load_collectives(
        &self,
        neff: &[u8],
        vnc: i32,
        vnc_count: i32,
        ctx_device_id: u32,
        ctx_device_count: u32,
    ) -> Result<ModelId, NrtError> {
        let result =
            self.inner.load_collectives(neff, vnc, vnc_count, ctx_device_id, ctx_device_count);
        self.trace.record_with(|names| {
            let call = format!(
                "{}({}, {vnc}, {vnc_count}, {ctx_device_id}, {ctx_device_count})",
                LibnrtFunction::nrt_load_collectives.trace_name(),
                format_bytes(neff)
            );
            outcome(names, call, &result, |names, &model| Some(names.model(model)))
        });
        result
    }

    fn unload(&self, model: ModelId) -> Result<(), NrtError> {
        let result = self.inner.unload(model);
        self.unit(result, |names| {
            format!("{}({})", LibnrtFunction::nrt_unload.trace_name(), names.model(model))
        })
    }

    fn execute(
        &self,
        model: ModelId,
        input_set: SetId,
        output_set: SetId,
    ) -> Result<NrtStatus, NrtError> {
        let result = self.inner.execute(model, input_set, output_set);
        self.trace.record_with(|names| {
            let call = format!(
                "{}({}, {}, {})",
                LibnrtFunction::nrt_execute.trace_name(),
                names.model(model),
                names.set(input_set),
                names.set(output_set)
            );
            launch_line(&call, &result)
        });
        result
    }

    fn execute_repeat(
        &self,
        model: ModelId,
        input_set: SetId,
        output_set: SetId,
        repeat_count: i32,
    ) -> Result<NrtStatus, NrtError> {
        let result = self.inner.execute_repeat(model, input_set, output_set, repeat_count);
        self.trace.record_with(|names| {
            let call = format!(
                "{}({}, {}, {}, {repeat_count})",
                LibnrtFunction::nrt_execute_repeat.trace_name(),
                names.model(model),
                names.set(input_set),
                names.set(output_set)
            );
            launch_line(&call, &result)
        });
        result
    }

    fn allocate_tensor_set(&self) -> Result<SetId, NrtError> {
        let result = self.inner.allocate_tensor_set();
        self.trace.record_with(|names| {
            outcome(
                names,
                format!("{}()", LibnrtFunction::nrt_allocate_tensor_set.trace_name()),
                &result,
                |names, &set| Some(names.set(set)),
            )
        });
        result
    }

    fn destroy_tensor_set(&self, set: SetId) -> Result<(), NrtError> {
        let result = self.inner.destroy_tensor_set(set);
        self.unit(result, |names| {
            format!("{}({})", LibnrtFunction::nrt_destroy_tensor_set.trace_name(), names.set(set))
        })
    }

    fn add_tensor_to_tensor_set(
        &self,
        set: SetId,
        name: &[u8],
        tensor: TensorId,
    ) -> Result<(), NrtError> {
        let result = self.inner.add_tensor_to_tensor_set(set, name, tensor);
        self.unit(result, |names| {
            format!(
                "{}({}, {}, {})",
                LibnrtFunction::nrt_add_tensor_to_tensor_set.trace_name(),
                names.set(set),
                name_text(name),
                names.tensor(tensor)
            )
        })
    }

    fn get_tensor_from_tensor_set(&self, set: SetId, name: &[u8]) -> Result<TensorId, NrtError> {
        let result = self.inner.get_tensor_from_tensor_set(set, name);
        self.trace.record_with(|names| {
            let call = format!(
                "{}({}, {})",
                LibnrtFunction::nrt_get_tensor_from_tensor_set.trace_name(),
                names.set(set),
                name_text(name)
            );
            outcome(names, call, &result, |names, &tensor| Some(names.tensor(tensor)))
        });
        result
    }

    fn tensor_allocate(
        &self,
        placement: Placement,
        vnc: i32,
        size: usize,
        name: &[u8],
    ) -> Result<TensorId, NrtError> {
        let result = self.inner.tensor_allocate(placement, vnc, size, name);
        self.trace.record_with(|names| {
            let call = format!(
                "{}({}, {vnc}, {size}, {})",
                LibnrtFunction::nrt_tensor_allocate.trace_name(),
                placement_name(placement),
                name_text(name)
            );
            outcome(names, call, &result, |names, &tensor| Some(names.tensor(tensor)))
        });
        result
    }

    fn tensor_allocate_empty(&self, name: &[u8]) -> Result<TensorId, NrtError> {
        let result = self.inner.tensor_allocate_empty(name);
        self.trace.record_with(|names| {
            let call = format!(
                "{}({})",
                LibnrtFunction::nrt_tensor_allocate_empty.trace_name(),
                name_text(name)
            );
            outcome(names, call, &result, |names, &tensor| Some(names.tensor(tensor)))
        });
        result
    }

    fn tensor_attach_buffer(
        &self,
        tensor: TensorId,
        buffer: Arc<dyn ExternalBuffer>,
    ) -> Result<(), NrtError> {
        let n_bytes = buffer.len();
        let result = self.inner.tensor_attach_buffer(tensor, buffer);
        self.unit(result, |names| {
            format!(
                "{}({}, {})",
                LibnrtFunction::nrt_tensor_attach_buffer.trace_name(),
                names.tensor(tensor),
                super::buffer_text(n_bytes as u64)
            )
        })
    }

    fn tensor_allocate_slice(
        &self,
        src: TensorId,
        offset: usize,
        size: usize,
        name: &[u8],
    ) -> Result<TensorId, NrtError> {
        let result = self.inner.tensor_allocate_slice(src, offset, size, name);
        self.trace.record_with(|names| {
            let call = format!(
                "{}({}, {offset}, {size}, {})",
                LibnrtFunction::nrt_tensor_allocate_slice.trace_name(),
                names.tensor(src),
                name_text(name)
            );
            outcome(names, call, &result, |names, &tensor| Some(names.tensor(tensor)))
        });
        result
    }

    fn tensor_free(&self, tensor: TensorId) -> Result<(), NrtError> {
        let result = self.inner.tensor_free(tensor);
        self.unit(result, |names| {
            format!("{}({})", LibnrtFunction::nrt_tensor_free.trace_name(), names.tensor(tensor))
        })
    }

    fn tensor_read(&self, tensor: TensorId, offset: usize, buf: &mut [u8]) -> Result<(), NrtError> {
        let result = self.inner.tensor_read(tensor, offset, buf);
        self.trace.record_with(|names| {
            let call = format!(
                "{}({}, {offset}, {})",
                LibnrtFunction::nrt_tensor_read.trace_name(),
                names.tensor(tensor),
                buf.len()
            );
            outcome(names, call, &result, |_, ()| Some(format_bytes(buf)))
        });
        result
    }

    fn tensor_write(&self, tensor: TensorId, offset: usize, bytes: &[u8]) -> Result<(), NrtError> {
        let result = self.inner.tensor_write(tensor, offset, bytes);
        self.unit(result, |names| {
            format!(
                "{}({}, {offset}, {})",
                LibnrtFunction::nrt_tensor_write.trace_name(),
                names.tensor(tensor),
                format_bytes(bytes)
            )
        })
    }

    fn tensor_copy(
        &self,
        src: TensorId,
        src_offset: usize,
        dst: TensorId,
        dst_offset: usize,
        size: usize,
    ) -> Result<(), NrtError> {
        let result = self.inner.tensor_copy(src, src_offset, dst, dst_offset, size);
        self.unit(result, |names| {
            format!(
                "{}({}, {src_offset}, {}, {dst_offset}, {size})",
                LibnrtFunction::nrt_tensor_copy.trace_name(),
                names.tensor(src),
                names.tensor(dst)
            )
        })
    }

    fn tensor_memset(
        &self,
        tensor: TensorId,
        offset: u64,
        value: i32,
        size: usize,
    ) -> Result<(), NrtError> {
        let result = self.inner.tensor_memset(tensor, offset, value, size);
        self.unit(result, |names| {
            format!(
                "{}({}, {offset}, {value}, {size})",
                LibnrtFunction::nrt_tensor_memset.trace_name(),
                names.tensor(tensor)
            )
        })
    }

    fn tensor_get_size(&self, tensor: TensorId) -> Result<usize, NrtError> {
        let result = self.inner.tensor_get_size(tensor);
        self.trace.record_with(|names| {
            let call = format!(
                "{}({})",
                LibnrtFunction::nrt_tensor_get_size.trace_name(),
                names.tensor(tensor)
            );
            outcome(names, call, &result, |_, size| Some(size.to_string()))
        });
        result
    }

    fn tensor_get_va(&self, tensor: TensorId) -> Result<usize, NrtError> {
        let result = self.inner.tensor_get_va(tensor);
        self.trace.record_with(|names| {
            let call = format!(
                "{}({})",
                LibnrtFunction::nrt_tensor_get_va.trace_name(),
                names.tensor(tensor)
            );
            outcome(names, call, &result, |_, _| Some("<va>".to_owned()))
        });
        result
    }

    fn get_version(&self) -> Result<NrtVersion, NrtError> {
        let result = self.inner.get_version();
        self.trace.record_with(|names| {
            outcome(
                names,
                format!("{}()", LibnrtFunction::nrt_get_version.trace_name()),
                &result,
                |_, _| Some("<version>".to_owned()),
            )
        });
        result
    }

    fn get_total_vnc_count(&self) -> Result<u32, NrtError> {
        let result = self.inner.get_total_vnc_count();
        self.trace.record_with(|names| {
            outcome(
                names,
                format!("{}()", LibnrtFunction::nrt_get_total_vnc_count.trace_name()),
                &result,
                |_, count| Some(count.to_string()),
            )
        });
        result
    }

    fn get_visible_vnc_count(&self) -> Result<u32, NrtError> {
        let result = self.inner.get_visible_vnc_count();
        self.trace.record_with(|names| {
            outcome(
                names,
                format!("{}()", LibnrtFunction::nrt_get_visible_vnc_count.trace_name()),
                &result,
                |_, count| Some(count.to_string()),
            )
        });
        result
    }

    fn get_total_nc_count(&self) -> Result<u32, NrtError> {
        let result = self.inner.get_total_nc_count();
        self.count_line(LibnrtFunction::nrt_get_total_nc_count, String::new(), &result);
        result
    }

    fn get_visible_nc_count(&self) -> Result<u32, NrtError> {
        let result = self.inner.get_visible_nc_count();
        self.count_line(LibnrtFunction::nrt_get_visible_nc_count, String::new(), &result);
        result
    }

    fn get_model_nc_count(&self, model: ModelId) -> Result<u32, NrtError> {
        let result = self.inner.get_model_nc_count(model);
        self.model_count_line(LibnrtFunction::nrt_get_model_nc_count, model, &result);
        result
    }

    fn get_model_vnc_count(&self, model: ModelId) -> Result<u32, NrtError> {
        let result = self.inner.get_model_vnc_count(model);
        self.model_count_line(LibnrtFunction::nrt_get_model_vnc_count, model, &result);
        result
    }

    fn get_vnc_memory_stats(&self, vnc: u32) -> Result<VncMemoryStats, NrtError> {
        let result = self.inner.get_vnc_memory_stats(vnc);
        // The byte counts differ between backends by nature (allocation granules, what a
        // device reserves): only the status is traced.
        self.trace.record_with(|names| {
            let call = format!("{}({vnc})", LibnrtFunction::nrt_get_vnc_memory_stats.trace_name());
            outcome(names, call, &result, |_, _| Some("<stats>".to_owned()))
        });
        result
    }

    fn tensor_read_batch(
        &self,
        batches: &[TensorReadBatch],
        untracked: bool,
    ) -> Result<Vec<Vec<u8>>, NrtError> {
        let result = self.inner.tensor_read_batch(batches, untracked);
        self.trace.record_with(|names| {
            let mut args = String::new();
            for batch in batches {
                let ranges: Vec<String> =
                    batch.ranges.iter().map(|(offset, size)| format!("{offset}+{size}")).collect();
                let _ = write!(args, "{} [{}], ", names.tensor(batch.tensor), ranges.join(" "));
            }
            let call = format!(
                "{}({args}{untracked})",
                LibnrtFunction::nrt_tensor_read_batch.trace_name()
            );
            outcome(names, call, &result, |_, read| {
                let read: Vec<String> = read.iter().map(|bytes| format_bytes(bytes)).collect();
                (!read.is_empty()).then(|| read.join(" "))
            })
        });
        result
    }

    fn tensor_write_batch(
        &self,
        batches: &[TensorWriteBatch],
        untracked: bool,
    ) -> Result<(), NrtError> {
        let result = self.inner.tensor_write_batch(batches, untracked);
        self.unit(result, |names| {
            let mut args = String::new();
            for batch in batches {
                let ops: Vec<String> = batch
                    .ops
                    .iter()
                    .map(|(offset, bytes)| format!("{offset}:{}", format_bytes(bytes)))
                    .collect();
                let _ = write!(args, "{} [{}], ", names.tensor(batch.tensor), ops.join(" "));
            }
            format!("{}({args}{untracked})", LibnrtFunction::nrt_tensor_write_batch.trace_name())
        })
    }

    fn tensor_check_output_completion(
        &self,
        tensor: TensorId,
        timeout_us: i64,
        expected: u64,
    ) -> Result<(), NrtError> {
        let result = self.inner.tensor_check_output_completion(tensor, timeout_us, expected);
        self.unit(result, |names| {
            format!(
                "{}({}, {timeout_us}, {expected})",
                LibnrtFunction::nrt_tensor_check_output_completion.trace_name(),
                names.tensor(tensor)
            )
        })
    }

    fn tensor_reset_output_completion(&self, tensor: TensorId) -> Result<(), NrtError> {
        let result = self.inner.tensor_reset_output_completion(tensor);
        self.unit(result, |names| {
            format!(
                "{}({})",
                LibnrtFunction::nrt_tensor_reset_output_completion.trace_name(),
                names.tensor(tensor)
            )
        })
    }

    // Instance information and profiling: paths are traced as `<path>` (they name a folder of
    // the run), and what the calls return or write is checked by the vectors' expectations.

    fn get_instance_info(&self) -> Result<InstanceInfo, NrtError> {
        let result = self.inner.get_instance_info();
        // The instance is the machine's on a device and configured on the simulator: only the
        // status is traced.
        self.sys_trace_line(LibnrtFunction::nrt_get_instance_info, String::new(), &result);
        result
    }

    fn build_global_comm(&self, vnc: i32, rank: u32, world: u32) -> Result<(), NrtError> {
        let result = self.inner.build_global_comm(vnc, rank, world);
        let function = LibnrtFunction::nrt_build_global_comm;
        self.unit(result, |_| format!("{}({vnc}, {rank}, {world})", function.trace_name()))
    }

    fn cc_global_comm_init(&self, vnc: u32, rank: u32, world: u32) -> Result<(), NrtError> {
        let result = self.inner.cc_global_comm_init(vnc, rank, world);
        let function = LibnrtFunction::nrt_cc_global_comm_init;
        self.unit(result, |_| format!("{}({vnc}, {rank}, {world})", function.trace_name()))
    }

    // What these calls return (descriptors, addresses, PCI names) is the machine's own: only
    // the status is traced, and addresses are `<address>`.

    fn get_dmabuf_fd(&self, va: usize, size: u64) -> Result<i32, NrtError> {
        let result = self.inner.get_dmabuf_fd(va, size);
        let args = format!("<address>, {size}");
        self.sys_trace_line(LibnrtFunction::nrt_get_dmabuf_fd, args, &result);
        result
    }

    fn get_hbm_mmap_va(&self, device_id: i32, hbm_idx: i32) -> Result<(usize, usize), NrtError> {
        let result = self.inner.get_hbm_mmap_va(device_id, hbm_idx);
        let args = format!("{device_id}, {hbm_idx}");
        self.sys_trace_line(LibnrtFunction::nrt_get_hbm_mmap_va, args, &result);
        result
    }

    fn get_attached_efa_bdf(&self, va: usize) -> Result<String, NrtError> {
        let result = self.inner.get_attached_efa_bdf(va);
        let args = "<address>".to_owned();
        self.sys_trace_line(LibnrtFunction::nrt_get_attached_efa_bdf, args, &result);
        result
    }
}
