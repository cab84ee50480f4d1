//! The driver: inputs into memory, the capacity check, the instruction loop, outputs and the
//! report. Kernels are in [`crate::kernels`]; this module never computes an element.

use std::collections::BTreeMap;

use crate::kernels;
use crate::memory::{Memory, TensorMemory, zeroed};
use crate::program::{Buffer, Program};
use crate::random::SplitMix64;
use crate::{Report, RunError, RunErrorKind, RunOptions, RunResult, Stats, Warning, WarningKind};

/// Each tensor's first and last instruction (an indirect dimension's index counts), or
/// `usize::MAX` and 0 for a tensor no instruction touches.
fn lifetimes(program: &Program) -> (Vec<usize>, Vec<usize>) {
    let mut first = vec![usize::MAX; program.tensors.len()];
    let mut last = vec![0usize; program.tensors.len()];
    for (index, instruction) in program.instructions.iter().enumerate() {
        for ap in instruction.op.aps() {
            let mut touched = Some(ap);
            while let Some(ap) = touched {
                first[ap.t] = first[ap.t].min(index);
                last[ap.t] = last[ap.t].max(index);
                touched = ap.ind.as_deref().map(|ind| &ind.index);
            }
        }
    }
    (first, last)
}

/// The bytes a tensor takes in the executor: its elements and, unless it is an input, a bit
/// per element.
fn storage_bytes(program: &Program, t: usize) -> u128 {
    let tensor = &program.tensors[t];
    let mut bytes = u128::from(tensor.n_bytes());
    if !program.inputs.contains(&t) {
        bytes += u128::from(tensor.numel().div_ceil(64) * 8);
    }
    bytes
}

/// When each tensor's storage exists: from its first instruction (inputs and outputs from the
/// start) to its last (outputs and inputs to the end), so a kernel that allocates a tile per
/// loop iteration holds only the live ones. Returns, per instruction, the tensors to allocate
/// before it and to free after it, and the most bytes live at once.
fn storage_plan(
    program: &Program,
    first: &[usize],
    last: &[usize],
) -> (Vec<Vec<usize>>, Vec<Vec<usize>>, u128) {
    let n = program.instructions.len();
    let mut allocate = vec![Vec::new(); n.max(1)];
    let mut free = vec![Vec::new(); n.max(1)];
    let mut delta = vec![0i128; n + 2];
    for t in 0..program.tensors.len() {
        let pinned = program.inputs.contains(&t) || program.outputs.contains(&t);
        let (start, end) = if pinned {
            (0, n)
        } else if first[t] == usize::MAX {
            continue;
        } else {
            (first[t], last[t])
        };
        let bytes = storage_bytes(program, t) as i128;
        delta[start] += bytes;
        delta[end + 1] -= bytes;
        if !pinned {
            allocate[start].push(t);
            free[end].push(t);
        }
    }
    let mut live = 0i128;
    let mut peak = 0i128;
    for change in &delta {
        live += change;
        peak = peak.max(live);
    }
    (allocate, free, peak.max(0) as u128)
}

/// A tensor's storage, zeroed (an input's bytes copied in).
fn allocate(program: &Program, t: usize, input: Option<&[u8]>) -> Result<TensorMemory, RunError> {
    let tensor = &program.tensors[t];
    let mut bytes = zeroed::<u8>(tensor.n_bytes() as usize).map_err(RunError::bare)?;
    let written = match input {
        Some(data) => {
            bytes.copy_from_slice(data);
            None
        }
        None => Some(zeroed::<u64>(tensor.numel().div_ceil(64) as usize).map_err(RunError::bare)?),
    };
    let unwritten = if written.is_some() { tensor.numel() } else { 0 };
    Ok(TensorMemory { bytes, written, unwritten, dtype: tensor.dtype })
}

/// The storage of a tensor that has none (before its first instruction, after its last).
fn absent(program: &Program, t: usize) -> TensorMemory {
    TensorMemory { bytes: Vec::new(), written: None, unwritten: 0, dtype: program.tensors[t].dtype }
}

/// The peak per-partition bytes of live SBUF and PSUM tensors, or the `Capacity` error at the
/// first instruction where the live tensors do not fit.
fn check_capacity(
    program: &Program,
    first: &[usize],
    last: &[usize],
) -> Result<(u64, u64), RunError> {
    let n_instructions = program.instructions.len();
    // Per buffer, the change of live bytes at each instruction (a tensor joins at its first
    // instruction and leaves after its last).
    let mut delta = [vec![0i128; n_instructions + 1], vec![0i128; n_instructions + 1]];
    let capacities =
        [program.target.sbuf_bytes_per_partition(), program.target.psum_bytes_per_partition()];
    for (t, tensor) in program.tensors.iter().enumerate() {
        let slot = match tensor.buffer {
            Buffer::Sbuf => 0,
            Buffer::Psum => 1,
            _ => continue,
        };
        if first[t] == usize::MAX {
            continue;
        }
        let bytes = i128::from(tensor.bytes_per_partition());
        if tensor.placed {
            // The kernel chose its address, and the tensors sharing it are the kernel's to
            // keep apart: only its own size must fit.
            let capacity = capacities[slot];
            if tensor.bytes_per_partition() > capacity {
                return Err(RunError::at(
                    program,
                    first[t],
                    RunErrorKind::Capacity {
                        buffer: if slot == 0 { "SBUF" } else { "PSUM" },
                        live: tensor.bytes_per_partition(),
                        capacity,
                        largest: vec![(tensor.name.clone(), tensor.bytes_per_partition())],
                    },
                ));
            }
            continue;
        }
        delta[slot][first[t]] += bytes;
        delta[slot][last[t] + 1] -= bytes;
    }
    let mut peaks = [0u64; 2];
    for slot in 0..2 {
        let mut live = 0i128;
        for (index, change) in delta[slot].iter().take(n_instructions).enumerate() {
            live += change;
            let bytes = u64::try_from(live).unwrap_or(u64::MAX);
            peaks[slot] = peaks[slot].max(bytes);
            if bytes > capacities[slot] {
                let buffer = if slot == 0 { Buffer::Sbuf } else { Buffer::Psum };
                let mut largest: Vec<(String, u64)> = program
                    .tensors
                    .iter()
                    .enumerate()
                    .filter(|(t, tensor)| {
                        tensor.buffer == buffer
                            && !tensor.placed
                            && first[*t] <= index
                            && index <= last[*t]
                    })
                    .map(|(_, tensor)| (tensor.name.clone(), tensor.bytes_per_partition()))
                    .collect();
                largest.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
                largest.truncate(3);
                return Err(RunError::at(
                    program,
                    index,
                    RunErrorKind::Capacity {
                        buffer: if slot == 0 { "SBUF" } else { "PSUM" },
                        live: bytes,
                        capacity: capacities[slot],
                        largest,
                    },
                ));
            }
        }
    }
    Ok((peaks[0], peaks[1]))
}

/// Runs a validated program (see [`crate::run`]).
pub(crate) fn run(
    program: &Program,
    inputs: &[&[u8]],
    options: &RunOptions,
) -> Result<RunResult, RunError> {
    if inputs.len() != program.inputs.len() {
        return Err(RunError::bare(RunErrorKind::InputCount {
            expected: program.inputs.len(),
            found: inputs.len(),
        }));
    }
    for (k, (&t, bytes)) in program.inputs.iter().zip(inputs).enumerate() {
        let tensor = &program.tensors[t];
        if bytes.len() as u64 != tensor.n_bytes() {
            return Err(RunError::bare(RunErrorKind::InputSize {
                index: k,
                tensor: tensor.name.clone(),
                expected: tensor.n_bytes(),
                found: bytes.len() as u64,
            }));
        }
    }
    // Memory: each tensor's bytes (and, unless it is an input, a bit per element) while it is
    // live; the limit is on the most live at once.
    let (first, last) = lifetimes(program);
    let (to_allocate, to_free, needed) = storage_plan(program, &first, &last);
    if needed > u128::from(options.max_memory_bytes) {
        return Err(RunError::bare(RunErrorKind::MemoryLimit {
            needed,
            limit: options.max_memory_bytes,
        }));
    }
    let (peak_sbuf, peak_psum) = check_capacity(program, &first, &last)?;
    let mut tensors = Vec::new();
    tensors
        .try_reserve_exact(program.tensors.len())
        .map_err(|_| RunError::bare(RunErrorKind::Allocation { bytes: needed }))?;
    for t in 0..program.tensors.len() {
        let input = program.inputs.iter().position(|&i| i == t);
        if input.is_some() || program.outputs.contains(&t) {
            tensors.push(allocate(program, t, input.map(|k| inputs[k]))?);
        } else {
            tensors.push(absent(program, t));
        }
    }
    let mut mem = Memory {
        program,
        tensors,
        strict: options.strict,
        warnings: Vec::new(),
        current: 0,
        accumulators: BTreeMap::new(),
        random: SplitMix64::new(program.seed),
    };
    let mut stats = Stats {
        instructions_per_engine: BTreeMap::new(),
        dma_bytes: 0,
        instructions: 0,
        peak_sbuf_bytes_per_partition: peak_sbuf,
        peak_psum_bytes_per_partition: peak_psum,
    };
    let mut prints = Vec::new();
    for (index, instruction) in program.instructions.iter().enumerate() {
        mem.current = index;
        for &t in &to_allocate[index] {
            mem.tensors[t] = allocate(program, t, None)?;
        }
        let effects = match kernels::execute(&mut mem) {
            Ok(effects) => effects,
            Err(kind) => {
                let mut error = RunError::at(program, index, kind);
                let warnings = std::mem::take(&mut mem.warnings);
                error.partial_report =
                    Some(Box::new(Report { error: None, warnings, prints, stats }));
                return Err(error);
            }
        };
        *stats.instructions_per_engine.entry(instruction.engine.name().to_owned()).or_default() +=
            1;
        stats.instructions += 1;
        stats.dma_bytes += effects.dma_bytes;
        prints.extend(effects.print);
        for &t in &to_free[index] {
            mem.tensors[t] = absent(program, t);
        }
    }
    let mut warnings = std::mem::take(&mut mem.warnings);
    let mut outputs = Vec::with_capacity(program.outputs.len());
    for (k, &t) in program.outputs.iter().enumerate() {
        let tensor = &program.tensors[t];
        let (count, first) = mem.tensors[t].unwritten(tensor.numel() as usize);
        if count > 0 {
            let kind = RunErrorKind::UnwrittenOutput {
                index: k,
                tensor: tensor.name.clone(),
                count,
                offset: first.unwrap_or(0),
            };
            let loc = program.source_loc(tensor.loc);
            if options.strict {
                let report = Report { error: None, warnings, prints, stats };
                return Err(RunError {
                    instruction: None,
                    loc: Some(loc),
                    kind: Box::new(kind),
                    partial_report: Some(Box::new(report)),
                });
            }
            warnings.push(Warning {
                kind: WarningKind::UnwrittenOutput,
                message: kind.to_string(),
                loc: Some(loc.to_string()),
            });
        }
        // An output listed again later keeps its bytes for that copy.
        if program.outputs[k + 1..].contains(&t) {
            let mut copy = zeroed::<u8>(mem.tensors[t].bytes.len()).map_err(RunError::bare)?;
            copy.copy_from_slice(&mem.tensors[t].bytes);
            outputs.push(copy);
        } else {
            outputs.push(std::mem::take(&mut mem.tensors[t].bytes));
        }
    }
    Ok(RunResult { outputs, report: Report { error: None, warnings, prints, stats } })
}
