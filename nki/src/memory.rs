//! The executor's memory: one byte buffer per tensor, a bitmap of written elements for every
//! tensor that is not an input, and access patterns turned into element offsets.
//!
//! An instruction resolves each AP to a list of offsets, one per element of its iteration shape,
//! with [`SKIP`] where the element is neither read nor written (a false mask predicate, an index
//! outside the tensor under `oob: "skip"`). Kernels then load whole operands as float32, compute,
//! and store: every operand is read before anything is written, as the engines stream a tile.

use std::collections::BTreeMap;

use crate::dtype::Dtype;
use crate::ops::Oob;
use crate::program::{Ap, Engine, Pred, Program};
use crate::random::SplitMix64;
use crate::{RunErrorKind, Warning, WarningKind};

/// The offset of an element that is neither read nor written.
pub(crate) const SKIP: usize = usize::MAX;

/// One tensor's storage.
pub(crate) struct TensorMemory {
    /// The elements, little-endian, row-major.
    pub(crate) bytes: Vec<u8>,
    /// One bit per element, set once written; `None` for inputs (written by the caller).
    pub(crate) written: Option<Vec<u64>>,
    /// How many elements no instruction has written yet (0 for inputs): once 0, reads and
    /// writes skip the bitmap.
    pub(crate) unwritten: u64,
    /// The element type.
    pub(crate) dtype: Dtype,
}

impl TensorMemory {
    /// Whether every element may be read without a look at the bitmap.
    fn all_written(&self) -> bool {
        self.unwritten == 0
    }

    fn is_written(&self, offset: usize) -> bool {
        match &self.written {
            None => true,
            Some(bits) => bits[offset / 64] >> (offset % 64) & 1 == 1,
        }
    }

    /// How many elements no instruction wrote, and the first of them.
    pub(crate) fn unwritten(&self, numel: usize) -> (u64, Option<usize>) {
        let Some(bits) = &self.written else { return (0, None) };
        let mut count = 0u64;
        let mut first = None;
        for (word_index, &word) in bits.iter().enumerate() {
            let valid = numel.saturating_sub(word_index * 64).min(64);
            let mask = if valid == 64 { u64::MAX } else { (1u64 << valid) - 1 };
            let missing = !word & mask;
            if missing != 0 {
                count += u64::from(missing.count_ones());
                first.get_or_insert(word_index * 64 + missing.trailing_zeros() as usize);
            }
        }
        (count, first)
    }
}

/// Allocates a zeroed vector of `n` items, or says how many bytes it could not get.
pub(crate) fn zeroed<T: Clone + Default>(n: usize) -> Result<Vec<T>, RunErrorKind> {
    let mut vec = Vec::new();
    vec.try_reserve_exact(n).map_err(|_| RunErrorKind::Allocation {
        bytes: (n as u128) * std::mem::size_of::<T>() as u128,
    })?;
    vec.resize(n, T::default());
    Ok(vec)
}

/// The state of a run: the tensors and what the run has noticed so far.
pub(crate) struct Memory<'p> {
    pub(crate) program: &'p Program,
    pub(crate) tensors: Vec<TensorMemory>,
    pub(crate) strict: bool,
    pub(crate) warnings: Vec<Warning>,
    /// The instruction being executed, for warnings.
    pub(crate) current: usize,
    /// Each engine's accumulator registers (`reduce_cmd`), one per partition of an
    /// instruction: `None` where no command set one, or an `idle` instruction left it
    /// undefined.
    pub(crate) accumulators: BTreeMap<Engine, Vec<Option<f32>>>,
    /// The random stream of `rng`, `rand2`, `dropout` (seeded by the program's `seed`).
    pub(crate) random: SplitMix64,
}

/// Pushes the offsets of every element of `dims` (row-major) onto `out`.
fn push_offsets(base: i64, dims: &[[i64; 2]], out: &mut Vec<i64>) {
    match dims {
        [] => out.push(base),
        [[stride, count]] => out.extend((0..*count).map(|j| base + j * stride)),
        [[stride, count], rest @ ..] => {
            for j in 0..*count {
                push_offsets(base + j * stride, rest, out);
            }
        }
    }
}

/// Pushes the offsets of every element of `dims` (row-major) onto `out`, as indices: the
/// caller knows every offset is inside its tensor, so each is in `0..usize::MAX`.
fn push_indices(base: i64, dims: &[[i64; 2]], out: &mut Vec<usize>) {
    match dims {
        [] => out.push(base as usize),
        [[1, count]] => out.extend((base..base + count).map(|o| o as usize)),
        [[stride, count]] => out.extend((0..*count).map(|j| (base + j * stride) as usize)),
        [[stride, count], rest @ ..] => {
            for j in 0..*count {
                push_indices(base + j * stride, rest, out);
            }
        }
    }
}

/// An AP's dimensions with those of count 1 dropped and each dimension merged into the one
/// outside it when the two make one run (outer stride = inner stride × inner count): the same
/// offsets in the same order, in as few, as long rows as the pattern allows.
fn merged_dims(ap: &Ap) -> Vec<[i64; 2]> {
    let mut dims: Vec<[i64; 2]> = Vec::with_capacity(ap.ap.len());
    for &[stride, count] in &ap.ap {
        if count == 1 {
            continue;
        }
        match dims.last_mut() {
            Some(last) if last[0] == stride * count => {
                // The previous (outer) dimension steps exactly over this one.
                *last = [stride, last[1] * count];
            }
            _ => dims.push([stride, count]),
        }
    }
    dims
}

/// Calls `row(base, stride, count)` for each innermost row of `dims` from `base`, row-major.
fn for_each_row(base: i64, dims: &[[i64; 2]], row: &mut impl FnMut(i64, i64, usize)) {
    match dims {
        [] => row(base, 1, 1),
        [[stride, count]] => row(base, *stride, *count as usize),
        [[stride, count], rest @ ..] => {
            for j in 0..*count {
                for_each_row(base + j * stride, rest, row);
            }
        }
    }
}

/// Where an instruction writes: every element of its AP (no mask, no indirect dimension, all
/// inside the tensor), or the offsets of each element, [`SKIP`] where it writes none.
pub(crate) enum Target {
    /// Every element of the AP.
    Whole,
    /// One offset per element.
    Offsets(Vec<usize>),
}

impl Target {
    /// Whether element `i` is written.
    pub(crate) fn writes(&self, i: usize) -> bool {
        match self {
            Target::Whole => true,
            Target::Offsets(offsets) => offsets[i] != SKIP,
        }
    }
}

/// The number of elements of a shape (validated to fit).
pub(crate) fn numel(shape: &[u64]) -> usize {
    shape.iter().product::<u64>() as usize
}

/// The row-major index of linear position `position` in `shape`.
pub(crate) fn unravel(mut position: usize, shape: &[u64]) -> Vec<u64> {
    let mut index = vec![0u64; shape.len()];
    for (d, &count) in shape.iter().enumerate().rev() {
        if count > 0 {
            index[d] = position as u64 % count;
            position /= count as usize;
        }
    }
    index
}

/// Which elements of `shape` every predicate of `mask` allows, or `None` for all of them.
pub(crate) fn mask_active(shape: &[u64], mask: &[Pred]) -> Result<Option<Vec<bool>>, RunErrorKind> {
    if mask.is_empty() {
        return Ok(None);
    }
    let mut active = zeroed::<bool>(numel(shape))?;
    active.fill(true);
    let mut values = Vec::new();
    for pred in mask {
        values.clear();
        values
            .try_reserve_exact(active.len())
            .map_err(|_| RunErrorKind::Allocation { bytes: active.len() as u128 * 8 })?;
        let dims: Vec<[i64; 2]> =
            pred.c.iter().zip(shape).map(|(&c, &count)| [c, count as i64]).collect();
        push_offsets(pred.k, &dims, &mut values);
        for (flag, &value) in active.iter_mut().zip(&values) {
            *flag &= pred.cmp.holds(value);
        }
    }
    Ok(Some(active))
}

/// The values `k + Σ c_d i_d` over `shape` (validated to stay in i64).
pub(crate) fn affine_values(c: &[i64], k: i64, shape: &[u64]) -> Result<Vec<i64>, RunErrorKind> {
    let mut values = Vec::new();
    values
        .try_reserve_exact(numel(shape))
        .map_err(|_| RunErrorKind::Allocation { bytes: numel(shape) as u128 * 8 })?;
    let dims: Vec<[i64; 2]> = c.iter().zip(shape).map(|(&c, &count)| [c, count as i64]).collect();
    push_offsets(k, &dims, &mut values);
    Ok(values)
}

impl Memory<'_> {
    fn tensor_name(&self, t: usize) -> &str {
        &self.program.tensors[t].name
    }

    /// Records `count` reads of unwritten elements of tensor `t` (an error when strict).
    fn uninitialized(&mut self, t: usize, count: u64, first: usize) -> Result<(), RunErrorKind> {
        let kind = RunErrorKind::UninitializedRead {
            tensor: self.tensor_name(t).to_owned(),
            count,
            offset: first,
        };
        if self.strict {
            return Err(kind);
        }
        let instruction = &self.program.instructions[self.current];
        self.warnings.push(Warning {
            kind: WarningKind::UninitializedRead,
            message: format!("instruction {} (`{}`): {kind}", self.current, instruction.op.name()),
            loc: Some(self.program.source_loc(instruction.loc).to_string()),
        });
        Ok(())
    }

    /// The element offsets of `ap` over its shape, with [`SKIP`] where `active` is false and,
    /// under [`Oob::Skip`], where an indirect index leaves the tensor.
    pub(crate) fn offsets(
        &mut self,
        ap: &Ap,
        active: Option<&[bool]>,
        oob: Oob,
        operand: &str,
    ) -> Result<Vec<usize>, RunErrorKind> {
        let shape = ap.shape();
        let n = numel(&shape);
        let tensor = &self.program.tensors[ap.t];
        if ap.ind.is_none() && ap.first_outside(tensor.numel()).is_none() {
            // The whole pattern is inside the tensor: no element needs a check.
            let mut offsets = Vec::new();
            offsets
                .try_reserve_exact(n)
                .map_err(|_| RunErrorKind::Allocation { bytes: n as u128 * 8 })?;
            push_indices(ap.off, &ap.ap, &mut offsets);
            if let Some(active) = active {
                for (offset, &on) in offsets.iter_mut().zip(active) {
                    if !on {
                        *offset = SKIP;
                    }
                }
            }
            return Ok(offsets);
        }
        let mut raw: Vec<i64> = Vec::new();
        raw.try_reserve_exact(n).map_err(|_| RunErrorKind::Allocation { bytes: n as u128 * 8 })?;
        let mut dims = ap.ap.clone();
        if let Some(ind) = &ap.ind {
            dims[ind.dim][0] = 0;
        }
        push_offsets(ap.off, &dims, &mut raw);
        if let Some(ind) = &ap.ind {
            let stride = ap.ap[ind.dim][0];
            let values = self.index_values(&ind.index, &shape)?;
            for (offset, value) in raw.iter_mut().zip(values) {
                // An index whose term overflows is as far outside the tensor as it gets.
                *offset = value
                    .checked_mul(stride)
                    .and_then(|t| t.checked_add(*offset))
                    .unwrap_or(i64::MIN);
            }
        }
        let tensor = &self.program.tensors[ap.t];
        let numel = tensor.numel() as i64;
        let mut offsets = zeroed::<usize>(n)?;
        for (position, (out, &offset)) in offsets.iter_mut().zip(&raw).enumerate() {
            if active.is_some_and(|active| !active[position]) {
                *out = SKIP;
            } else if (0..numel).contains(&offset) {
                *out = offset as usize;
            } else if oob == Oob::Skip && ap.ind.is_some() {
                *out = SKIP;
            } else {
                return Err(RunErrorKind::OutOfBounds {
                    operand: operand.to_owned(),
                    tensor: tensor.name.clone(),
                    index: unravel(position, &shape),
                    offset: if offset == i64::MIN { None } else { Some(offset) },
                    numel: tensor.numel(),
                });
            }
        }
        Ok(offsets)
    }

    /// The integer values of an index AP over `shape` (its count-1 dimensions broadcast).
    fn index_values(&mut self, index: &Ap, shape: &[u64]) -> Result<Vec<i64>, RunErrorKind> {
        let dims: Vec<[i64; 2]> = index
            .ap
            .iter()
            .zip(shape)
            .map(|(&[stride, count], &n)| [if count == 1 { 0 } else { stride }, n as i64])
            .collect();
        let mut raw = Vec::new();
        raw.try_reserve_exact(numel(shape))
            .map_err(|_| RunErrorKind::Allocation { bytes: numel(shape) as u128 * 8 })?;
        push_offsets(index.off, &dims, &mut raw);
        let memory = &self.tensors[index.t];
        let size = memory.dtype.n_bytes();
        let mut unwritten = (0u64, 0usize);
        let mut values = zeroed::<i64>(raw.len())?;
        for (value, &offset) in values.iter_mut().zip(&raw) {
            // Validated: an index AP lies inside its tensor (`Checker::ap`).
            let offset = offset as usize;
            if memory.is_written(offset) {
                *value = memory.dtype.read_i64(&memory.bytes[offset * size..]);
            } else {
                if unwritten.0 == 0 {
                    unwritten.1 = offset;
                }
                unwritten.0 += 1;
            }
        }
        if unwritten.0 > 0 {
            self.uninitialized(index.t, unwritten.0, unwritten.1)?;
        }
        Ok(values)
    }

    /// Reads the elements of tensor `t` at `offsets` as float32 into `out` (0 at [`SKIP`];
    /// an unwritten element reads as NaN, 0 for integer types, with a warning).
    pub(crate) fn load(
        &mut self,
        t: usize,
        offsets: &[usize],
        out: &mut [f32],
    ) -> Result<(), RunErrorKind> {
        let memory = &self.tensors[t];
        let dtype = memory.dtype;
        let size = dtype.n_bytes();
        let bytes = &memory.bytes;
        if dtype == Dtype::Float32 {
            for (value, &offset) in out.iter_mut().zip(offsets) {
                *value = if offset == SKIP {
                    0.0
                } else {
                    let at = offset * 4;
                    f32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
                };
            }
        } else {
            for (value, &offset) in out.iter_mut().zip(offsets) {
                *value = if offset == SKIP { 0.0 } else { dtype.read_f32(&bytes[offset * size..]) };
            }
        }
        if !memory.all_written() {
            let mut unwritten = (0u64, 0usize);
            let fill = dtype.uninitialized_value();
            for (value, &offset) in out.iter_mut().zip(offsets) {
                if offset != SKIP && !memory.is_written(offset) {
                    if unwritten.0 == 0 {
                        unwritten.1 = offset;
                    }
                    unwritten.0 += 1;
                    *value = fill;
                }
            }
            if unwritten.0 > 0 {
                self.uninitialized(t, unwritten.0, unwritten.1)?;
            }
        }
        Ok(())
    }

    /// Whether an instruction reaches every element of `ap` with nothing to check: no mask, no
    /// indirect dimension, and the pattern's offsets all inside its tensor.
    fn is_whole(&self, ap: &Ap, active: Option<&[bool]>) -> bool {
        active.is_none()
            && ap.ind.is_none()
            && ap.first_outside(self.program.tensors[ap.t].numel()).is_none()
    }

    /// Where an instruction under `active` writes `ap` (its bounds checked).
    pub(crate) fn target(
        &mut self,
        ap: &Ap,
        active: Option<&[bool]>,
        operand: &str,
    ) -> Result<Target, RunErrorKind> {
        if self.is_whole(ap, active) {
            return Ok(Target::Whole);
        }
        Ok(Target::Offsets(self.offsets(ap, active, Oob::Error, operand)?))
    }

    /// Writes `values` (one per element of `ap`) as its tensor's dtype where `target` says.
    pub(crate) fn store_target(&mut self, ap: &Ap, target: &Target, values: &[f32]) {
        match target {
            Target::Offsets(offsets) => self.store(ap.t, offsets, values),
            Target::Whole => {
                let memory = &mut self.tensors[ap.t];
                let dtype = memory.dtype;
                let size = dtype.n_bytes();
                let mut values = values.iter();
                for_each_row(ap.off, &merged_dims(ap), &mut |base, stride, count| {
                    let base = base as usize;
                    if stride == 1 && dtype == Dtype::Float32 {
                        let bytes = &mut memory.bytes[base * 4..(base + count) * 4];
                        for (element, value) in bytes.chunks_exact_mut(4).zip(values.by_ref()) {
                            element.copy_from_slice(&value.to_le_bytes());
                        }
                    } else {
                        for j in 0..count {
                            let offset = (base as i64 + j as i64 * stride) as usize;
                            let value = values.next().copied().unwrap_or(0.0);
                            dtype.write_f32(value, &mut memory.bytes[offset * size..][..size]);
                        }
                    }
                });
                if !memory.all_written() {
                    for_each_row(ap.off, &merged_dims(ap), &mut |base, stride, count| {
                        for j in 0..count {
                            self.mark_written(ap.t, (base + j as i64 * stride) as usize);
                        }
                    });
                }
            }
        }
    }

    /// Loads every element of `ap` (a [`Target::Whole`] pattern of a tensor whose elements
    /// are all written), row by row.
    fn load_whole(&self, ap: &Ap) -> Result<Vec<f32>, RunErrorKind> {
        let memory = &self.tensors[ap.t];
        let dtype = memory.dtype;
        let size = dtype.n_bytes();
        let n = numel(&ap.shape());
        let mut out = Vec::new();
        out.try_reserve_exact(n).map_err(|_| RunErrorKind::Allocation { bytes: n as u128 * 4 })?;
        for_each_row(ap.off, &merged_dims(ap), &mut |base, stride, count| {
            let base = base as usize;
            if stride == 1 && dtype == Dtype::Float32 {
                let bytes = &memory.bytes[base * 4..(base + count) * 4];
                out.extend(
                    bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
                );
            } else {
                for j in 0..count {
                    let offset = (base as i64 + j as i64 * stride) as usize;
                    out.push(dtype.read_f32(&memory.bytes[offset * size..]));
                }
            }
        });
        Ok(out)
    }

    /// Loads an AP over its shape into a new vector (with `active` as the mask).
    pub(crate) fn load_ap(
        &mut self,
        ap: &Ap,
        active: Option<&[bool]>,
        operand: &str,
    ) -> Result<Vec<f32>, RunErrorKind> {
        if self.is_whole(ap, active) && self.tensors[ap.t].all_written() {
            return self.load_whole(ap);
        }
        let offsets = self.offsets(ap, active, Oob::Error, operand)?;
        let mut values = zeroed::<f32>(offsets.len())?;
        self.load(ap.t, &offsets, &mut values)?;
        Ok(values)
    }

    fn mark_written(&mut self, t: usize, offset: usize) {
        let memory = &mut self.tensors[t];
        if let Some(bits) = &mut memory.written {
            let word = &mut bits[offset / 64];
            let bit = 1 << (offset % 64);
            if *word & bit == 0 {
                *word |= bit;
                memory.unwritten -= 1;
            }
        }
    }

    /// Writes `values` as tensor `t`'s dtype at `offsets` (nothing at [`SKIP`]).
    pub(crate) fn store(&mut self, t: usize, offsets: &[usize], values: &[f32]) {
        let memory = &mut self.tensors[t];
        let dtype = memory.dtype;
        let size = dtype.n_bytes();
        if dtype == Dtype::Float32 {
            for (&value, &offset) in values.iter().zip(offsets) {
                if offset != SKIP {
                    memory.bytes[offset * 4..offset * 4 + 4].copy_from_slice(&value.to_le_bytes());
                }
            }
        } else {
            for (&value, &offset) in values.iter().zip(offsets) {
                if offset != SKIP {
                    dtype.write_f32(value, &mut memory.bytes[offset * size..offset * size + size]);
                }
            }
        }
        if !memory.all_written() {
            for &offset in offsets {
                if offset != SKIP {
                    self.mark_written(t, offset);
                }
            }
        }
    }

    /// Writes exact integers as tensor `t`'s dtype at `offsets` (nothing at [`SKIP`]).
    pub(crate) fn store_i64(&mut self, t: usize, offsets: &[usize], values: &[i64]) {
        let dtype = self.tensors[t].dtype;
        let size = dtype.n_bytes();
        for (&value, &offset) in values.iter().zip(offsets) {
            if offset != SKIP {
                let bytes = &mut self.tensors[t].bytes[offset * size..offset * size + size];
                dtype.write_i64(value, bytes);
                self.mark_written(t, offset);
            }
        }
    }

    /// Writes the low `size` bytes of each of `bits` (little-endian) at `offsets` of tensor `t`
    /// (nothing at [`SKIP`]): `rng`'s truncation of 32 random bits to the dtype.
    pub(crate) fn store_low_bits(&mut self, t: usize, offsets: &[usize], bits: &[u32]) {
        let size = self.tensors[t].dtype.n_bytes().min(4);
        for (&value, &offset) in bits.iter().zip(offsets) {
            if offset != SKIP {
                let bytes = &mut self.tensors[t].bytes[offset * size..offset * size + size];
                bytes.copy_from_slice(&value.to_le_bytes()[..size]);
                self.mark_written(t, offset);
            }
        }
    }

    /// Copies elements between two tensors of the same dtype bit for bit; an unwritten source
    /// element is written as what a read of it gives (NaN or 0), with a warning. Every source
    /// element is read before any is written, so the two may be one tensor.
    pub(crate) fn copy_bits(
        &mut self,
        dst: usize,
        dst_offsets: &[usize],
        src: usize,
        src_offsets: &[usize],
    ) -> Result<(), RunErrorKind> {
        let dtype = self.tensors[src].dtype;
        let size = dtype.n_bytes();
        if src != dst && self.tensors[src].all_written() {
            // Two tensors and every source element written: copy each run of consecutive
            // elements (consecutive on both sides) at once, straight into the destination.
            let mut target = std::mem::take(&mut self.tensors[dst].bytes);
            let source = &self.tensors[src].bytes;
            let n = dst_offsets.len().min(src_offsets.len());
            let mut i = 0;
            while i < n {
                let (to, from) = (dst_offsets[i], src_offsets[i]);
                if to == SKIP || from == SKIP {
                    i += 1;
                    continue;
                }
                let mut run = 1;
                while i + run < n
                    && dst_offsets[i + run] == to + run
                    && src_offsets[i + run] == from + run
                {
                    run += 1;
                }
                target[to * size..(to + run) * size]
                    .copy_from_slice(&source[from * size..(from + run) * size]);
                i += run;
            }
            self.tensors[dst].bytes = target;
            if !self.tensors[dst].all_written() {
                for &to in &dst_offsets[..n] {
                    if to != SKIP {
                        self.mark_written(dst, to);
                    }
                }
            }
            return Ok(());
        }
        let mut fill = [0u8; 8];
        dtype.write_f32(dtype.uninitialized_value(), &mut fill);
        let mut unwritten = (0u64, 0usize);
        // Read every moved element first, then write them.
        let mut moved = zeroed::<u8>(src_offsets.len() * size)?;
        let source = &self.tensors[src];
        for ((&to, &from), element) in
            dst_offsets.iter().zip(src_offsets).zip(moved.chunks_exact_mut(size))
        {
            if to == SKIP || from == SKIP {
                continue;
            }
            if source.is_written(from) {
                element.copy_from_slice(&source.bytes[from * size..from * size + size]);
            } else {
                if unwritten.0 == 0 {
                    unwritten.1 = from;
                }
                unwritten.0 += 1;
                element.copy_from_slice(&fill[..size]);
            }
        }
        for ((&to, &from), element) in
            dst_offsets.iter().zip(src_offsets).zip(moved.chunks_exact(size))
        {
            if to == SKIP || from == SKIP {
                continue;
            }
            self.tensors[dst].bytes[to * size..to * size + size].copy_from_slice(element);
            self.mark_written(dst, to);
        }
        if unwritten.0 > 0 {
            self.uninitialized(src, unwritten.0, unwritten.1)?;
        }
        Ok(())
    }
}
