//! Random modules and random mutations of inputs, for the round-trip property and the
//! no-panic runs. A small seeded generator (xorshift) rather than proptest strategies, so the
//! fuzz-style tests can run tens of thousands of cases cheaply and a failing seed reproduces.

#![allow(dead_code, unreachable_pub)]

use hlo::proto::{
    ConvolutionDimensionNumbers, DotDimensionNumbers, FrontendAttributes, GatherDimensionNumbers,
    HloComputationProto, HloInstructionProto, HloModuleProto, LayoutProto, LiteralProto,
    OpMetadata, PaddingConfig, PrimitiveType, ReplicaGroup, ShapeProto, SourceTarget, Window,
    WindowDimension, hlo_instruction_proto::SliceDimensions,
    padding_config::PaddingConfigDimension,
};

/// xorshift64*: tiny, deterministic, good enough to pick shapes and opcodes.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    pub(crate) fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    pub(crate) fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    fn int(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % (hi - lo + 1) as u64) as i64
    }
}

/// Element types whose constants the text form can hold.
const LITERAL_TYPES: &[PrimitiveType] = &[
    PrimitiveType::Pred,
    PrimitiveType::S8,
    PrimitiveType::S16,
    PrimitiveType::S32,
    PrimitiveType::S64,
    PrimitiveType::U8,
    PrimitiveType::U16,
    PrimitiveType::U32,
    PrimitiveType::U64,
    PrimitiveType::F16,
    PrimitiveType::Bf16,
    PrimitiveType::F32,
    PrimitiveType::F64,
    PrimitiveType::C64,
    PrimitiveType::C128,
    PrimitiveType::F8e4m3fn,
    PrimitiveType::F8e5m2,
    PrimitiveType::F8e4m3fnuz,
    PrimitiveType::S4,
    PrimitiveType::U2,
    PrimitiveType::S1,
    PrimitiveType::F4e2m1fn,
    PrimitiveType::F8e8m0fnu,
];

/// A name the text form can hold: letters, digits, `_`, `.`, `-`.
fn name(rng: &mut Rng, prefix: &str, index: usize) -> String {
    let suffixes = ["", ".1", "_x", "-y.2", ".0.3"];
    format!("{prefix}{index}{}", rng.pick(&suffixes))
}

/// A string with the characters escapes must handle.
fn weird_string(rng: &mut Rng) -> String {
    let pieces = ["a", "\"", "\\", "\n", "\t", "é", "jit(f)/mul", " ", "{}", "=", "\u{1}"];
    (0..rng.below(5)).map(|_| *rng.pick(&pieces)).collect()
}

fn array_shape(rng: &mut Rng, ty: PrimitiveType) -> ShapeProto {
    let rank = rng.below(4);
    let dimensions: Vec<i64> = (0..rank).map(|_| rng.int(0, 3)).collect();
    let layout = if rank > 0 && rng.chance(80) {
        let mut order: Vec<i64> = (0..rank as i64).rev().collect();
        if rng.chance(30) {
            for k in (1..order.len()).rev() {
                order.swap(k, rng.below(k + 1));
            }
        }
        Some(LayoutProto { minor_to_major: order, ..Default::default() })
    } else {
        None
    };
    let is_dynamic_dimension =
        if rng.chance(10) { (0..rank).map(|_| rng.chance(50)).collect() } else { vec![] };
    ShapeProto {
        element_type: ty.into(),
        dimensions,
        tuple_shapes: vec![],
        layout,
        is_dynamic_dimension,
    }
}

fn shape(rng: &mut Rng, depth: usize) -> ShapeProto {
    if depth < 2 && rng.chance(15) {
        let elements = (0..rng.below(4)).map(|_| shape(rng, depth + 1)).collect();
        return ShapeProto {
            element_type: PrimitiveType::Tuple.into(),
            tuple_shapes: elements,
            ..Default::default()
        };
    }
    let ty = *rng.pick(LITERAL_TYPES);
    array_shape(rng, ty)
}

fn count(s: &ShapeProto) -> usize {
    s.dimensions.iter().map(|&d| d as usize).product()
}

fn literal(rng: &mut Rng, s: &ShapeProto) -> LiteralProto {
    let mut lit = LiteralProto { shape: Some(s.clone()), ..Default::default() };
    if s.element_type() == PrimitiveType::Tuple {
        lit.tuple_literals = s.tuple_shapes.iter().map(|t| literal(rng, t)).collect();
        return lit;
    }
    let n = count(s);
    use PrimitiveType as T;
    let bytes = |rng: &mut Rng, k: usize| (0..n * k).map(|_| rng.next() as u8).collect::<Vec<u8>>();
    match s.element_type() {
        T::Pred => lit.preds = (0..n).map(|_| rng.chance(50)).collect(),
        T::S8 => lit.s8s = bytes(rng, 1),
        T::U8 => lit.u8s = bytes(rng, 1),
        T::S16 => lit.s16s = bytes(rng, 2),
        T::U16 => lit.u16s = bytes(rng, 2),
        T::S32 => lit.s32s = (0..n).map(|_| rng.next() as i32).collect(),
        T::S64 => lit.s64s = (0..n).map(|_| rng.next() as i64).collect(),
        T::U32 => lit.u32s = (0..n).map(|_| rng.next() as u32).collect(),
        T::U64 => lit.u64s = (0..n).map(|_| rng.next()).collect(),
        T::F16 => lit.f16s = bytes(rng, 2),
        T::Bf16 => lit.bf16s = bytes(rng, 2),
        T::F32 => lit.f32s = (0..n).map(|_| f32::from_bits(rng.next() as u32)).collect(),
        T::F64 => lit.f64s = (0..n).map(|_| f64::from_bits(rng.next())).collect(),
        T::C64 => lit.c64s = (0..2 * n).map(|_| f32::from_bits(rng.next() as u32)).collect(),
        T::C128 => lit.c128s = (0..2 * n).map(|_| f64::from_bits(rng.next())).collect(),
        T::F8e4m3fn => lit.f8e4m3fns = bytes(rng, 1),
        T::F8e5m2 => lit.f8e5m2s = bytes(rng, 1),
        T::F8e4m3fnuz => lit.f8e4m3fnuzs = bytes(rng, 1),
        // Sub-byte types: one element per byte; the printer must ignore the bits above the width.
        T::S4 => lit.s4s = bytes(rng, 1),
        T::U2 => lit.u2s = bytes(rng, 1),
        T::S1 => lit.s1s = bytes(rng, 1),
        T::F4e2m1fn => lit.f4e2m1fns = bytes(rng, 1),
        T::F8e8m0fnu => lit.f8e8m0fnus = bytes(rng, 1),
        other => unreachable!("{other:?} is not in LITERAL_TYPES"),
    }
    lit
}

/// Fewer than `below` integers in `lo..=hi`.
fn ints(rng: &mut Rng, below: usize, lo: i64, hi: i64) -> Vec<i64> {
    let n = rng.below(below);
    exact_ints(rng, n, lo, hi)
}

fn exact_ints(rng: &mut Rng, n: usize, lo: i64, hi: i64) -> Vec<i64> {
    (0..n).map(|_| rng.int(lo, hi)).collect()
}

fn permutation(rng: &mut Rng, n: usize) -> Vec<i64> {
    let mut p: Vec<i64> = (0..n as i64).collect();
    for k in (1..n).rev() {
        p.swap(k, rng.below(k + 1));
    }
    p
}

/// Fills the attributes of one instruction at random (meaningful or not: the printer and
/// parser must carry them, not judge them).
fn attributes(rng: &mut Rng, i: &mut HloInstructionProto) {
    let op = i.opcode.clone();
    match op.as_str() {
        "broadcast" | "transpose" | "reduce" | "reverse" => i.dimensions = ints(rng, 3, 0, 3),
        "iota" => i.dimensions = vec![rng.int(0, 2)],
        "get-tuple-element" => i.tuple_index = rng.int(0, 3),
        "slice" => {
            i.slice_dimensions = (0..rng.below(3))
                .map(|_| SliceDimensions {
                    start: rng.int(0, 2),
                    limit: rng.int(2, 5),
                    stride: rng.int(1, 2),
                })
                .collect()
        }
        "pad" => {
            i.padding_config = Some(PaddingConfig {
                dimensions: (0..1 + rng.below(3))
                    .map(|_| PaddingConfigDimension {
                        edge_padding_low: rng.int(-2, 2),
                        edge_padding_high: rng.int(-2, 2),
                        interior_padding: rng.int(0, 2),
                    })
                    .collect(),
            })
        }
        "convolution" => {
            let spatial = rng.below(3);
            let dims = |rng: &mut Rng| permutation(rng, spatial + 2);
            let (a, b, c) = (dims(rng), dims(rng), dims(rng));
            i.convolution_dimension_numbers = Some(Box::new(ConvolutionDimensionNumbers {
                input_batch_dimension: a[0],
                input_feature_dimension: a[1],
                input_spatial_dimensions: a[2..].to_vec(),
                kernel_input_feature_dimension: b[0],
                kernel_output_feature_dimension: b[1],
                kernel_spatial_dimensions: b[2..].to_vec(),
                output_batch_dimension: c[0],
                output_feature_dimension: c[1],
                output_spatial_dimensions: c[2..].to_vec(),
            }));
            if spatial > 0 {
                i.window = Some(Window {
                    dimensions: (0..spatial)
                        .map(|_| WindowDimension {
                            size: rng.int(1, 3),
                            stride: rng.int(1, 2),
                            padding_low: rng.int(-1, 1),
                            padding_high: rng.int(0, 2),
                            window_dilation: rng.int(1, 2),
                            base_dilation: rng.int(1, 2),
                            window_reversal: rng.chance(20),
                        })
                        .collect(),
                });
            }
            i.feature_group_count = rng.int(1, 2);
            i.batch_group_count = rng.int(1, 2);
        }
        "dot" => {
            i.dot_dimension_numbers = Some(Box::new(DotDimensionNumbers {
                lhs_contracting_dimensions: ints(rng, 2, 0, 2),
                rhs_contracting_dimensions: ints(rng, 2, 0, 2),
                lhs_batch_dimensions: ints(rng, 2, 0, 2),
                rhs_batch_dimensions: ints(rng, 2, 0, 2),
            }))
        }
        "compare" => {
            i.comparison_direction = rng.pick(&["EQ", "NE", "LT", "LE", "GT", "GE"]).to_string();
            if rng.chance(50) {
                i.comparison_type =
                    rng.pick(&["FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"]).to_string();
            }
        }
        "gather" => {
            i.gather_dimension_numbers = Some(Box::new(GatherDimensionNumbers {
                offset_dims: ints(rng, 3, 0, 3),
                collapsed_slice_dims: ints(rng, 2, 0, 3),
                start_index_map: {
                    let n = 1 + rng.below(2);
                    exact_ints(rng, n, 0, 3)
                },
                index_vector_dim: rng.int(0, 2),
                operand_batching_dims: ints(rng, 2, 0, 3),
                start_indices_batching_dims: vec![],
            }));
            i.gather_slice_sizes = ints(rng, 3, 1, 3);
            i.indices_are_sorted = rng.chance(50);
        }
        "all-reduce" | "all-gather" => {
            let n = rng.below(3);
            i.replica_groups =
                (0..n).map(|_| ReplicaGroup { replica_ids: ints(rng, 3, 0, 7) }).collect();
            i.channel_id = rng.int(0, 3);
            i.use_global_device_ids = rng.chance(30);
        }
        "collective-permute" => {
            i.source_target_pairs = (0..rng.below(3))
                .map(|_| SourceTarget { source: rng.int(0, 3), target: rng.int(0, 3) })
                .collect();
        }
        "custom-call" => {
            i.custom_call_target = weird_string(rng);
            i.backend_config = (0..rng.below(6)).map(|_| rng.next() as u8).collect();
            i.custom_call_has_side_effect = rng.chance(30);
        }
        "sort" => {
            i.dimensions = vec![rng.int(0, 2)];
            i.is_stable = rng.chance(50);
        }
        "topk" => {
            i.k = rng.int(0, 5);
            i.largest = rng.chance(50);
        }
        "reduce-precision" => {
            i.exponent_bits = rng.int(1, 8) as i32;
            i.mantissa_bits = rng.int(0, 23) as i32;
        }
        _ => {}
    }
    if rng.chance(20) {
        i.metadata = Some(Box::new(OpMetadata {
            op_type: weird_string(rng),
            op_name: weird_string(rng),
            source_file: weird_string(rng),
            source_line: rng.int(-1, 100) as i32,
        }));
    }
    if rng.chance(10) {
        let map = (0..rng.below(3)).map(|_| (weird_string(rng), weird_string(rng))).collect();
        i.frontend_attributes = Some(FrontendAttributes { map });
    }
}

/// Opcodes the generator uses beyond parameter and constant, with how many operands they take.
const OPS: &[(&str, usize)] = &[
    ("negate", 1),
    ("add", 2),
    ("select", 3),
    ("broadcast", 1),
    ("transpose", 1),
    ("reverse", 1),
    ("slice", 1),
    ("pad", 2),
    ("convolution", 2),
    ("dot", 2),
    ("compare", 2),
    ("gather", 2),
    ("all-reduce", 1),
    ("all-gather", 1),
    ("collective-permute", 1),
    ("custom-call", 2),
    ("get-tuple-element", 1),
    ("tuple", 3),
    ("iota", 0),
    ("topk", 1),
    ("reduce-precision", 1),
];

/// A random module the printer accepts: unique names and ids, parameters numbered densely,
/// operands earlier in their computation, calls to earlier computations only.
pub(crate) fn module(rng: &mut Rng) -> HloModuleProto {
    let n_computations = 1 + rng.below(3);
    let mut computations: Vec<HloComputationProto> = Vec::new();
    for c_index in 0..n_computations {
        let c_id = c_index as i64 + rng.int(0, 1) * 100;
        let mut instructions: Vec<HloInstructionProto> = Vec::new();
        let n_params = rng.below(3);
        let n = n_params + 1 + rng.below(6);
        for k in 0..n {
            let mut i = HloInstructionProto {
                name: name(rng, "v", k),
                id: (c_id << 32) + k as i64 * (1 + rng.below(2) as i64),
                ..Default::default()
            };
            // Ids only need to be unique; make them so regardless of the stride above.
            i.id = (c_id << 32) | (k as i64 * 2);
            if k < n_params {
                i.opcode = "parameter".into();
                i.parameter_number = k as i64;
                i.shape = Some(shape(rng, 0));
            } else if k == n_params || instructions.is_empty() || rng.chance(20) {
                i.opcode = "constant".into();
                let s = shape(rng, 0);
                i.literal = Some(Box::new(literal(rng, &s)));
                i.shape = Some(s);
            } else {
                let (op, arity) = *rng.pick(OPS);
                i.opcode = op.into();
                i.shape = Some(shape(rng, 0));
                i.operand_ids = (0..arity).map(|_| rng.pick(&instructions).id).collect();
                if rng.chance(10) {
                    i.control_predecessor_ids = vec![rng.pick(&instructions).id];
                }
                attributes(rng, &mut i);
                if !computations.is_empty()
                    && matches!(op, "all-reduce" | "custom-call")
                    && rng.chance(60)
                {
                    i.called_computation_ids = vec![rng.pick(&computations).id];
                }
            }
            instructions.push(i);
        }
        let root_id = rng.pick(&instructions).id;
        computations.push(HloComputationProto {
            name: name(rng, "comp", c_index),
            id: c_id,
            root_id,
            instructions,
            ..Default::default()
        });
    }
    let entry = computations.last().unwrap();
    HloModuleProto {
        name: name(rng, "module", 0),
        entry_computation_name: entry.name.clone(),
        entry_computation_id: entry.id,
        computations,
        ..Default::default()
    }
}

/// Mutates bytes: flips, inserts, deletes, duplicates a slice, or truncates.
pub(crate) fn mutate(rng: &mut Rng, input: &[u8]) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        let len = out.len();
        match rng.below(6) {
            0 if len > 0 => {
                let k = rng.below(len);
                out[k] ^= 1 << rng.below(8);
            }
            1 => {
                let k = rng.below(len + 1);
                let interesting = [
                    b'{', b'}', b'(', b')', b',', b'=', b'"', b'\\', b'%', b'-', b'\n', 0, 0xff,
                    b'9', b'x',
                ];
                out.insert(k, *rng.pick(&interesting));
            }
            2 if len > 0 => {
                let k = rng.below(len);
                out.remove(k);
            }
            3 if len > 1 => {
                let a = rng.below(len);
                let b = (a + 1 + rng.below(16)).min(len);
                let piece = out[a..b].to_vec();
                let at = rng.below(out.len() + 1);
                out.splice(at..at, piece);
            }
            4 => out.truncate(rng.below(len + 1)),
            _ => {
                let k = rng.below(len + 1);
                out.insert(k, rng.next() as u8);
            }
        }
    }
    out
}
