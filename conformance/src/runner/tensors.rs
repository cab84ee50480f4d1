//! Raw steps on tensors and tensor sets: allocation, reads and writes, batches, completion.

use std::sync::Arc;

use abi::runtime::{SharedBuffer, TensorReadBatch, TensorWriteBatch};

use super::values::{encode_values, hex, parse_hex, placement, same_elements};
use super::{Context, StepResult, check_status, label};
use crate::spec::{
    AddTensorToTensorSetStep, AllocateTensorSetStep, DestroyTensorSetStep, Elements,
    GetTensorFromTensorSetStep, MemcpyToDeviceStep, TensorAllocateEmptyStep,
    TensorAllocateSliceStep, TensorAllocateStep, TensorAttachBufferStep,
    TensorCheckOutputCompletionStep, TensorCopyStep, TensorFreeStep, TensorGetSizeStep,
    TensorGetVaStep, TensorMemsetStep, TensorReadBatchStep, TensorReadStep,
    TensorResetOutputCompletionStep, TensorWriteBatchStep, TensorWriteStep,
};

impl Context<'_> {
    /// The `allocate_tensor_set` step.
    pub(super) fn allocate_tensor_set(&mut self, step: &AllocateTensorSetStep) -> StepResult {
        let rt = self.runtime.clone();
        let AllocateTensorSetStep { label: name, expect } = step;
        let result = rt.allocate_tensor_set();
        check_status(&result, expect)?;
        if let Ok(set) = result {
            self.sets.insert(name.clone(), set);
        }
        Ok(())
    }

    /// The `destroy_tensor_set` step.
    pub(super) fn destroy_tensor_set(&mut self, step: &DestroyTensorSetStep) -> StepResult {
        let rt = self.runtime.clone();
        let DestroyTensorSetStep { set, expect } = step;
        check_status(&rt.destroy_tensor_set(label(&self.sets, set, "tensor set")?), expect)
    }

    /// The `add_tensor_to_tensor_set` step.
    pub(super) fn add_tensor_to_tensor_set(
        &mut self,
        step: &AddTensorToTensorSetStep,
    ) -> StepResult {
        let rt = self.runtime.clone();
        let AddTensorToTensorSetStep { set, name, key_hex, tensor, expect } = step;
        let key = set_key(name, key_hex)?;
        let set = label(&self.sets, set, "tensor set")?;
        let tensor = label(&self.tensors, tensor, "tensor")?;
        check_status(&rt.add_tensor_to_tensor_set(set, &key, tensor), expect)
    }

    /// The `get_tensor_from_tensor_set` step.
    pub(super) fn get_tensor_from_tensor_set(
        &mut self,
        step: &GetTensorFromTensorSetStep,
    ) -> StepResult {
        let rt = self.runtime.clone();
        let GetTensorFromTensorSetStep { set, name, key_hex, label: as_name, expect } = step;
        let key = set_key(name, key_hex)?;
        let result = rt.get_tensor_from_tensor_set(label(&self.sets, set, "tensor set")?, &key);
        check_status(&result, expect)?;
        if let (Ok(tensor), Some(as_name)) = (result, as_name) {
            self.tensors.insert(as_name.clone(), tensor);
        }
        Ok(())
    }

    /// The `tensor_allocate` step.
    pub(super) fn tensor_allocate(&mut self, step: &TensorAllocateStep) -> StepResult {
        let rt = self.runtime.clone();
        let TensorAllocateStep { placement: p, vnc, size, name, label: as_name, expect } = step;
        let result = rt.tensor_allocate(
            placement(*p),
            vnc.unwrap_or(0),
            *size,
            (name.as_deref().unwrap_or(as_name)).as_bytes(),
        );
        check_status(&result, expect)?;
        if let Ok(tensor) = result {
            self.tensors.insert(as_name.clone(), tensor);
        }
        Ok(())
    }

    /// The `tensor_allocate_empty` step.
    pub(super) fn tensor_allocate_empty(&mut self, step: &TensorAllocateEmptyStep) -> StepResult {
        let rt = self.runtime.clone();
        let TensorAllocateEmptyStep { name, label: as_name } = step;
        let tensor = rt
            .tensor_allocate_empty((name.as_deref().unwrap_or(as_name)).as_bytes())
            .map_err(|e| e.to_string())?;
        self.tensors.insert(as_name.clone(), tensor);
        Ok(())
    }

    /// The `tensor_attach_buffer` step.
    pub(super) fn tensor_attach_buffer(&mut self, step: &TensorAttachBufferStep) -> StepResult {
        let rt = self.runtime.clone();
        let TensorAttachBufferStep { tensor, size, expect } = step;
        let buffer = Arc::new(SharedBuffer::zeroed(*size));
        self.buffers.push(buffer.clone());
        check_status(
            &rt.tensor_attach_buffer(label(&self.tensors, tensor, "tensor")?, buffer),
            expect,
        )
    }

    /// The `tensor_allocate_slice` step.
    pub(super) fn tensor_allocate_slice(&mut self, step: &TensorAllocateSliceStep) -> StepResult {
        let rt = self.runtime.clone();
        let TensorAllocateSliceStep { tensor, offset, size, name, label: as_name, expect } = step;
        let source = label(&self.tensors, tensor, "tensor")?;
        let result = rt.tensor_allocate_slice(
            source,
            *offset,
            *size,
            (name.as_deref().unwrap_or(as_name)).as_bytes(),
        );
        check_status(&result, expect)?;
        if let Ok(slice) = result {
            self.tensors.insert(as_name.clone(), slice);
        }
        Ok(())
    }

    /// The `tensor_free` step.
    pub(super) fn tensor_free(&mut self, step: &TensorFreeStep) -> StepResult {
        let rt = self.runtime.clone();
        let TensorFreeStep { tensor, expect } = step;
        check_status(&rt.tensor_free(label(&self.tensors, tensor, "tensor")?), expect)
    }

    /// The `tensor_write` step.
    pub(super) fn tensor_write(&mut self, step: &TensorWriteStep) -> StepResult {
        let rt = self.runtime.clone();
        let TensorWriteStep { tensor, offset, data, expect } = step;
        let bytes = encode_values(data.dtype.0, &data.values)?;
        check_status(
            &rt.tensor_write(label(&self.tensors, tensor, "tensor")?, offset.unwrap_or(0), &bytes),
            expect,
        )
    }

    /// The `tensor_read` step.
    pub(super) fn tensor_read(&mut self, step: &TensorReadStep) -> StepResult {
        let rt = self.runtime.clone();
        let TensorReadStep { tensor, offset, size, expect_values, expect } = step;
        let mut buffer = vec![0u8; *size];
        let result = rt.tensor_read(
            label(&self.tensors, tensor, "tensor")?,
            offset.unwrap_or(0),
            &mut buffer,
        );
        check_status(&result, expect)?;
        match (result, expect_values) {
            (Ok(()), Some(Elements { dtype, values })) => {
                let scalar_type = dtype.0;
                let want = encode_values(scalar_type, values)?;
                if same_elements(scalar_type, &want, &buffer) {
                    Ok(())
                } else {
                    Err(format!("read {}, expected {}", hex(&buffer), hex(&want)))
                }
            }
            _ => Ok(()),
        }
    }

    /// The `tensor_copy` step.
    pub(super) fn tensor_copy(&mut self, step: &TensorCopyStep) -> StepResult {
        let rt = self.runtime.clone();
        let TensorCopyStep { src, src_offset, dst, dst_offset, size, expect } = step;
        let src = label(&self.tensors, src, "tensor")?;
        let dst = label(&self.tensors, dst, "tensor")?;
        check_status(
            &rt.tensor_copy(src, src_offset.unwrap_or(0), dst, dst_offset.unwrap_or(0), *size),
            expect,
        )
    }

    /// The `tensor_memset` step.
    pub(super) fn tensor_memset(&mut self, step: &TensorMemsetStep) -> StepResult {
        let rt = self.runtime.clone();
        let TensorMemsetStep { tensor, offset, value, size, expect } = step;
        check_status(
            &rt.tensor_memset(
                label(&self.tensors, tensor, "tensor")?,
                offset.unwrap_or(0),
                *value,
                *size,
            ),
            expect,
        )
    }

    /// The `tensor_get_size` step.
    pub(super) fn tensor_get_size(&mut self, step: &TensorGetSizeStep) -> StepResult {
        let rt = self.runtime.clone();
        let TensorGetSizeStep { tensor, expect_size, expect } = step;
        let result = rt.tensor_get_size(label(&self.tensors, tensor, "tensor")?);
        check_status(&result, expect)?;
        match (result, expect_size) {
            (Ok(got), Some(want)) if got != *want => Err(format!("size {got}, expected {want}")),
            _ => Ok(()),
        }
    }

    /// The `tensor_write_batch` step.
    pub(super) fn tensor_write_batch(&mut self, step: &TensorWriteBatchStep) -> StepResult {
        let rt = self.runtime.clone();
        let TensorWriteBatchStep { untracked, batches, expect } = step;
        let mut calls = Vec::new();
        for batch in batches {
            let mut ops = Vec::new();
            for op in &batch.ops {
                let bytes = encode_values(op.data.dtype.0, &op.data.values)?;
                ops.push((op.offset.unwrap_or(0), bytes));
            }
            let tensor = label(&self.tensors, &batch.tensor, "tensor")?;
            calls.push(TensorWriteBatch { tensor, ops });
        }
        check_status(&rt.tensor_write_batch(&calls, *untracked), expect)
    }

    /// The `tensor_read_batch` step.
    pub(super) fn tensor_read_batch(&mut self, step: &TensorReadBatchStep) -> StepResult {
        let rt = self.runtime.clone();
        let TensorReadBatchStep { untracked, batches, expect } = step;
        let mut calls = Vec::new();
        for batch in batches {
            let ranges = batch.ranges.iter().map(|range| (range.offset.unwrap_or(0), range.size));
            let tensor = label(&self.tensors, &batch.tensor, "tensor")?;
            calls.push(TensorReadBatch { tensor, ranges: ranges.collect() });
        }
        let result = rt.tensor_read_batch(&calls, *untracked);
        check_status(&result, expect)?;
        let Ok(read) = result else { return Ok(()) };
        let ranges = batches.iter().flat_map(|batch| &batch.ranges);
        if read.len() != ranges.clone().count() {
            return Err(format!("{} ranges read, expected {}", read.len(), ranges.clone().count()));
        }
        for (index, (range, got)) in ranges.zip(&read).enumerate() {
            let Some(Elements { dtype, values }) = &range.expect_values else { continue };
            let scalar_type = dtype.0;
            let want = encode_values(scalar_type, values)?;
            if !same_elements(scalar_type, &want, got) {
                return Err(format!("range {index} read {}, expected {}", hex(got), hex(&want)));
            }
        }
        Ok(())
    }

    /// The `tensor_check_output_completion` step.
    pub(super) fn tensor_check_output_completion(
        &mut self,
        step: &TensorCheckOutputCompletionStep,
    ) -> StepResult {
        let rt = self.runtime.clone();
        let TensorCheckOutputCompletionStep { tensor, timeout_us, expected_count, expect } = step;
        let tensor = label(&self.tensors, tensor, "tensor")?;
        check_status(
            &rt.tensor_check_output_completion(tensor, timeout_us.unwrap_or(0), *expected_count),
            expect,
        )
    }

    /// The `tensor_reset_output_completion` step.
    pub(super) fn tensor_reset_output_completion(
        &mut self,
        step: &TensorResetOutputCompletionStep,
    ) -> StepResult {
        let rt = self.runtime.clone();
        let TensorResetOutputCompletionStep { tensor, expect } = step;
        let tensor = label(&self.tensors, tensor, "tensor")?;
        check_status(&rt.tensor_reset_output_completion(tensor), expect)
    }

    /// The `memcpy_to_device` step.
    pub(super) fn memcpy_to_device(&mut self, step: &MemcpyToDeviceStep) -> StepResult {
        let rt = self.runtime.clone();
        let MemcpyToDeviceStep { tensor, offset, data, expect } = step;
        let bytes = encode_values(data.dtype.0, &data.values)?;
        let va = rt
            .tensor_get_va(label(&self.tensors, tensor, "tensor")?)
            .map_err(|err| format!("nrt_tensor_get_va of {tensor}: {err}"))?;
        let offset = offset.unwrap_or(0);
        let address = va.checked_add(offset).ok_or_else(|| {
            format!("address {va:#x} + offset {offset} overflows, expected a smaller offset")
        })?;
        check_status(&rt.memcpy_to_device(address, &bytes), expect)
    }

    /// The `tensor_get_va` step.
    pub(super) fn tensor_get_va(&mut self, step: &TensorGetVaStep) -> StepResult {
        let TensorGetVaStep {
            tensor,
            label: as_name,
            expect_not_null,
            expect_equals,
            expect_offset,
            expect,
        } = step;
        let result = self.runtime.tensor_get_va(label(&self.tensors, tensor, "tensor")?);
        check_status(&result, expect)?;
        let Ok(va) = result else { return Ok(()) };
        if *expect_not_null && va == 0 {
            return Err(format!("the address of {tensor} is 0, expected a non-null address"));
        }
        if let Some(other) = expect_equals {
            let base = label(&self.addresses, other, "address")?;
            let offset = expect_offset.unwrap_or(0);
            if base.checked_add(offset) != Some(va) {
                return Err(format!(
                    "the address of {tensor} is {va:#x}, expected {other} ({base:#x}) + {offset}"
                ));
            }
        }
        if let Some(as_name) = as_name {
            self.addresses.insert(as_name.clone(), va);
        }
        Ok(())
    }
}

/// A set key from a step's `name` or `key_hex`, exactly one of which is given.
fn set_key(name: &Option<String>, key_hex: &Option<String>) -> Result<Vec<u8>, String> {
    match (name, key_hex) {
        (Some(name), None) => Ok(name.as_bytes().to_vec()),
        (None, Some(hex)) => parse_hex(hex).map_err(|e| format!("key_hex: {e}")),
        (Some(_), Some(_)) => Err("both name and key_hex, expected one of them".to_owned()),
        (None, None) => Err("no key, expected name (UTF-8) or key_hex (any bytes)".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::set_key;

    #[test]
    fn a_set_key_is_one_of_name_and_key_hex() {
        let text = |s: &str| Some(s.to_owned());
        assert_eq!(set_key(&text("in"), &None), Ok(b"in".to_vec()));
        assert_eq!(set_key(&None, &text("69ff")), Ok(b"i\xff".to_vec()));
        let both = set_key(&text("in"), &text("69")).expect_err("both");
        assert!(both.contains("both name and key_hex"), "{both}");
        let neither = set_key(&None, &None).expect_err("neither");
        assert!(neither.contains("expected name (UTF-8) or key_hex"), "{neither}");
        let odd = set_key(&None, &text("6")).expect_err("odd");
        assert!(odd.starts_with("key_hex: "), "{odd}");
    }
}
