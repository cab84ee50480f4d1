//! The plan: what the compiler builds and the executor runs, and every kernel's part of it.
//! Decoded instructions (`Op`, `Instr`), computations (`Comp`), the module (`Program`), and each
//! op family's checked attributes (`DotPlan`, `ConvPlan`, `GatherPlan`, … and the fused groups'
//! `fused::FusedPlan`).
//!
//! This module imports only the leaves below it (shapes, tensors, the scalar opcodes), so kernels
//! read their plans from here without importing the compiler, the executor or each other. A
//! kernel that runs a called computation (a reducer, a comparator) does it through
//! [`Subcomputations`], which the executor implements.

use std::sync::Arc;

use super::error::Fail;
use super::options::EvalOptions;
use super::scalar::{Binary, Direction, Unary};
use super::shape::Shape;
use super::tensor::{BufferPool, Data, Tensor};
use crate::dtype::ElementType;

pub(crate) mod fused;

/// What a kernel may ask of the run it is part of about the plan's other computations: read one
/// (its recognised reducer or comparator), or run one on scalars. The executor implements it;
/// a kernel sees nothing else of the run.
pub(crate) trait Subcomputations {
    /// The computation at plan index `index`.
    fn computation(&self, index: usize) -> &Comp;

    /// Runs the computation at plan index `index`, which takes and returns scalars, on `args`
    /// (with the recognised fast paths).
    fn apply_scalars(&self, index: usize, args: &[Data]) -> Result<Vec<Data>, Fail>;
}

/// A scalar computation recognised as one operation of its two parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reducer {
    Binary(Binary),
    /// Returns its second parameter (scatter's assignment).
    Replace,
}

/// A sort comparator recognised as one compare of parameters `2k` and `2k+1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SimpleComparator {
    pub(crate) operand: usize,
    pub(crate) direction: Direction,
    pub(crate) total_order: bool,
    /// Whether the compare reads (2k+1, 2k) instead of (2k, 2k+1).
    pub(crate) swapped: bool,
}

/// Replica groups of a collective: each inner list is a group of rank ids; empty is one group
/// of all ranks.
pub(crate) type Groups = Vec<Vec<usize>>;

/// A decoded instruction.
#[derive(Clone, Debug)]
pub(crate) enum Op {
    Parameter(usize),
    Constant(Arc<Tensor>),
    Tuple,
    GetTupleElement(usize),
    Call(usize),
    While {
        condition: usize,
        body: usize,
    },
    Conditional {
        branches: Vec<usize>,
    },
    Broadcast(Vec<usize>),
    /// reshape, copy, and a bitcast between default layouts of one element type: the logical
    /// elements are unchanged.
    Reshape,
    /// Any other bitcast: the operand's bytes in its layout (minor-to-major `from`), read as the
    /// result's element type in the result's layout (`to`). XLA's optimised modules use it for
    /// a transpose that only changes the layout, and to reinterpret f32 as s32 in comparators.
    Bitcast {
        from: Vec<i64>,
        to: Vec<i64>,
    },
    Transpose(Vec<usize>),
    Convert(ElementType),
    BitcastConvert,
    Slice {
        starts: Vec<usize>,
        steps: Vec<usize>,
    },
    DynamicSlice,
    DynamicUpdateSlice,
    Concatenate(usize),
    Pad(Vec<PadDim>),
    Iota(usize),
    Reverse(Vec<usize>),
    Select,
    Clamp,
    Compare {
        direction: Direction,
        total_order: bool,
    },
    Unary(Unary),
    Binary(Binary),
    Dot(DotPlan),
    Convolution(Box<ConvPlan>),
    Reduce {
        computation: usize,
        dims: Vec<usize>,
    },
    ReduceWindow {
        computation: usize,
        window: Vec<WindowDim>,
    },
    SelectAndScatter {
        select: usize,
        scatter: usize,
        window: Vec<WindowDim>,
    },
    Gather(Box<GatherPlan>),
    /// `batch-norm-training` (a tuple of result, means, variances) or `batch-norm-inference`.
    BatchNorm {
        feature: usize,
        epsilon: f32,
        training: bool,
    },
    Scatter(Box<ScatterPlan>),
    Sort {
        dim: usize,
        computation: usize,
    },
    /// An NKI kernel traced by nrtsim's NKI (`AwsNeuronCustomNativeKernel`).
    NkiKernel(Arc<NkiCall>),
    TopK {
        k: usize,
        largest: bool,
        /// The indices' element type: s32 (XLA), or u32 for Neuron's `AwsNeuronTopK`.
        indices: ElementType,
    },
    Map(usize),
    ReducePrecision {
        exponent_bits: u32,
        mantissa_bits: u32,
    },
    /// opt-barrier, add-dependency: the first operand, unchanged.
    PassThrough,
    AfterAll,
    ReplicaId,
    AllReduce {
        computation: usize,
        groups: Groups,
    },
    AllGather {
        dim: usize,
        groups: Groups,
    },
    ReduceScatter {
        dim: usize,
        computation: usize,
        groups: Groups,
    },
    AllToAll {
        split_dim: Option<usize>,
        groups: Groups,
    },
    CollectivePermute {
        pairs: Vec<(usize, usize)>,
    },
    /// A fused elementwise group rooted here; its operands are the group's outside values.
    Fused(Box<fused::FusedPlan>),
    /// Charged its work where it stands, it makes no value: a member of a fused group, a view
    /// every user reads through, or a call whose callee was inlined and that callee's parameters.
    Absorbed,
}

impl Op {
    /// The computations (plan indices) this instruction may run when it runs.
    pub(crate) fn callees(&self) -> Vec<usize> {
        match self {
            Op::Call(c) | Op::Map(c) => vec![*c],
            Op::While { condition, body } => vec![*condition, *body],
            Op::Conditional { branches } => branches.clone(),
            Op::Reduce { computation, .. }
            | Op::ReduceWindow { computation, .. }
            | Op::Sort { computation, .. }
            | Op::AllReduce { computation, .. }
            | Op::ReduceScatter { computation, .. } => vec![*computation],
            Op::SelectAndScatter { select, scatter, .. } => vec![*select, *scatter],
            Op::Scatter(plan) => vec![plan.computation],
            Op::Parameter(_)
            | Op::Constant(_)
            | Op::Tuple
            | Op::GetTupleElement(_)
            | Op::Broadcast(_)
            | Op::Reshape
            | Op::Bitcast { .. }
            | Op::Transpose(_)
            | Op::Convert(_)
            | Op::BitcastConvert
            | Op::Slice { .. }
            | Op::DynamicSlice
            | Op::DynamicUpdateSlice
            | Op::Concatenate(_)
            | Op::Pad(_)
            | Op::Iota(_)
            | Op::Reverse(_)
            | Op::Select
            | Op::Clamp
            | Op::Compare { .. }
            | Op::Unary(_)
            | Op::Binary(_)
            | Op::Dot(_)
            | Op::Convolution(_)
            | Op::Gather(_)
            | Op::TopK { .. }
            | Op::BatchNorm { .. }
            | Op::NkiKernel(_)
            | Op::ReducePrecision { .. }
            | Op::PassThrough
            | Op::AfterAll
            | Op::ReplicaId
            | Op::AllGather { .. }
            | Op::AllToAll { .. }
            | Op::CollectivePermute { .. }
            | Op::Fused(_)
            | Op::Absorbed => Vec::new(),
        }
    }
}

/// One instruction of the plan.
#[derive(Clone, Debug)]
pub(crate) struct Instr {
    pub(crate) name: String,
    pub(crate) op: Op,
    pub(crate) operands: Vec<usize>,
    pub(crate) shape: Shape,
    /// Values (by instruction index) whose last use is this instruction.
    pub(crate) frees: Vec<usize>,
    /// The work this instruction is charged when it runs (see the `eval` module docs).
    pub(crate) work: u64,
    /// The device time, in femtoseconds, it is charged when it runs (`eval::device_time`).
    pub(crate) device_fs: u64,
    /// The computation an inlined instruction was written in (see `inline`), which its errors
    /// name; `None` for the computation's own instructions.
    pub(crate) inlined_from: Option<Arc<str>>,
}

impl Instr {
    /// The computation an error of this instruction names: the one it was written in.
    pub(crate) fn computation_name<'a>(&'a self, comp: &'a Comp) -> &'a str {
        self.inlined_from.as_deref().unwrap_or(&comp.name)
    }
}

/// One computation of the plan.
#[derive(Clone, Debug)]
pub(crate) struct Comp {
    pub(crate) name: String,
    pub(crate) instrs: Vec<Instr>,
    /// Instruction index of parameter `i`.
    pub(crate) params: Vec<usize>,
    pub(crate) param_shapes: Vec<Shape>,
    pub(crate) root: usize,
    pub(crate) reducer: Option<Reducer>,
    pub(crate) comparator: Option<SimpleComparator>,
    /// Multi-instruction reducers and comparators run as direct loops.
    pub(crate) recognised: Recognised,
}

impl Comp {
    pub(crate) fn result_shape(&self) -> &Shape {
        &self.instrs[self.root].shape
    }
}

/// A compiled module: run it with [`Program::run`] as often as needed.
#[derive(Clone, Debug)]
pub struct Program {
    pub(crate) comps: Vec<Comp>,
    pub(crate) entry: usize,
    pub(crate) options: EvalOptions,
    /// Large buffers kept from one run for the next.
    pub(crate) pool: BufferPool,
    /// Per entry parameter leaf: whether [`Program::run`] lends the caller's bytes (decided once,
    /// at compile; see [`Program::lent_leaves`]).
    pub(crate) lent: Vec<bool>,
}

// ---------------------------------------------------------------------------------------------
// A dot (run by `dot`).

/// A checked dot.
#[derive(Clone, Debug)]
pub(crate) struct DotPlan {
    pub(crate) lhs_dims: Vec<usize>,
    pub(crate) rhs_dims: Vec<usize>,
    pub(crate) lhs_perm: Vec<usize>,
    pub(crate) rhs_perm: Vec<usize>,
    /// How many of `rhs_perm`'s leading axes are batch, and how many after them contracting.
    pub(crate) rhs_split: (usize, usize),
    pub(crate) batch: usize,
    pub(crate) m: usize,
    pub(crate) k: usize,
    pub(crate) n: usize,
    /// Per operand (lhs, rhs): where its elements lie in the value the dot reads instead, when
    /// the operand is a slice of that value through reshapes (see `dot::read_slices_in_place`).
    pub(crate) views: [Option<OperandView>; 2],
}

/// An operand of a dot read where it lies in another value: element `i` of the operand (in its
/// own dimensions, row-major) is element `offset + Σ i_d · strides[d]` of that value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct OperandView {
    pub(crate) offset: usize,
    pub(crate) strides: Vec<usize>,
}

// ---------------------------------------------------------------------------------------------
// A convolution (run by `conv`).

#[derive(Clone, Debug)]
pub(crate) struct SpatialDim {
    pub(crate) input: usize,
    pub(crate) kernel: usize,
    pub(crate) output: usize,
    pub(crate) stride: usize,
    pub(crate) pad_low: i64,
    pub(crate) base_dilation: usize,
    pub(crate) window_dilation: usize,
    pub(crate) reversal: bool,
}

/// A checked convolution.
#[derive(Clone, Debug)]
pub(crate) struct ConvPlan {
    pub(crate) input_dims: Vec<usize>,
    pub(crate) kernel_dims: Vec<usize>,
    pub(crate) input_perm: Vec<usize>,
    pub(crate) kernel_perm: Vec<usize>,
    /// Output dimension j is canonical dimension `output_perm[j]`.
    pub(crate) output_perm: Vec<usize>,
    pub(crate) batch: usize,
    pub(crate) channels: usize,
    pub(crate) out_features: usize,
    pub(crate) kernel_in: usize,
    pub(crate) feature_groups: usize,
    pub(crate) batch_groups: usize,
    pub(crate) spatial: Vec<SpatialDim>,
}

// ---------------------------------------------------------------------------------------------
// Gather and scatter (run by `gather`).

/// How the index array is read: its batch dims (all but `index_vector_dim`) and the vector.
#[derive(Clone, Debug)]
pub(crate) struct IndexLayout {
    pub(crate) dims: Vec<usize>,
    pub(crate) strides: Vec<usize>,
    pub(crate) vector_dim: usize,
    /// Batch dims of the index array, in order.
    pub(crate) batch_dims: Vec<usize>,
    pub(crate) vector_len: usize,
}

/// A checked gather.
#[derive(Clone, Debug)]
pub(crate) struct GatherPlan {
    pub(crate) operand_dims: Vec<usize>,
    pub(crate) index: IndexLayout,
    pub(crate) offset_dims: Vec<usize>,
    pub(crate) start_index_map: Vec<usize>,
    pub(crate) operand_batching_dims: Vec<usize>,
    pub(crate) indices_batching_dims: Vec<usize>,
    pub(crate) slice_sizes: Vec<usize>,
    /// Operand dims that are windows (not collapsed, not batching), in order.
    pub(crate) window_dims: Vec<usize>,
    pub(crate) out_dims: Vec<usize>,
}

/// A checked scatter.
#[derive(Clone, Debug)]
pub(crate) struct ScatterPlan {
    pub(crate) operand_dims: Vec<usize>,
    pub(crate) update_dims: Vec<usize>,
    pub(crate) index: IndexLayout,
    pub(crate) update_window_dims: Vec<usize>,
    pub(crate) scatter_dims_to_operand_dims: Vec<usize>,
    pub(crate) input_batching_dims: Vec<usize>,
    pub(crate) indices_batching_dims: Vec<usize>,
    /// Operand dims that update windows cover, in order.
    pub(crate) window_dims: Vec<usize>,
    pub(crate) computation: usize,
}

// ---------------------------------------------------------------------------------------------
// Windows of reduce-window and select-and-scatter (run by `reduce`).

/// One dimension of a window.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct WindowDim {
    pub(crate) size: usize,
    pub(crate) stride: usize,
    pub(crate) pad_low: i64,
    pub(crate) pad_high: i64,
    pub(crate) base_dilation: usize,
    pub(crate) window_dilation: usize,
}

// ---------------------------------------------------------------------------------------------
// Padding (run by `shape_ops`).

/// Per-dimension padding: `low` and `high` may be negative (cropping), `interior` ≥ 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PadDim {
    pub(crate) low: i64,
    pub(crate) high: i64,
    pub(crate) interior: i64,
}

// ---------------------------------------------------------------------------------------------
// An NKI kernel call (run by `nki_call`).

/// A compiled NKI kernel call: the validated program and its results' types.
#[derive(Debug)]
pub(crate) struct NkiCall {
    pub(crate) program: nki::Program,
    /// Each result's element type and dimensions, in the program's output order.
    pub(crate) outputs: Vec<(ElementType, Vec<usize>)>,
}

// ---------------------------------------------------------------------------------------------
// What the recognisers found in a called computation (`recognise`), run as direct loops by
// `reduce` and `sort`.

/// What the recognisers found in one computation.
#[derive(Clone, Debug, Default)]
pub(crate) struct Recognised {
    pub(crate) arg: Option<ArgReducer>,
    pub(crate) sort: Option<SortComparator>,
}

/// A reducer of (value, index) pairs; parameters (acc_value, acc_index, value, index).
///
/// With the accumulator `(a, ai)` and the element `(b, bi)`:
/// `keep = compare(a, b, keep) || (keep_nan && compare(a, a, NE))`,
/// `keep_index = keep || (compare(a, b, EQ) && compare(ai, bi, tie))`, and the result is
/// `(keep ? a : b, keep_index ? ai : bi)`; every compare is the partial (non-total) one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ArgReducer {
    pub(crate) keep: Direction,
    pub(crate) keep_nan: bool,
    pub(crate) tie: Direction,
}

/// A comparator that is a lexicographic order over `keys` (at least one).
#[derive(Clone, Debug)]
pub(crate) struct SortComparator {
    pub(crate) keys: Vec<SortKey>,
}

/// One key of a [`SortComparator`].
#[derive(Clone, Debug)]
pub(crate) struct SortKey {
    /// The sort operand the key reads (parameters `2 * operand` and `2 * operand + 1`).
    pub(crate) operand: usize,
    /// Whether "less" means a greater key (`GT`, or `LT` with the pair's parameters swapped).
    pub(crate) descending: bool,
    pub(crate) canon: Option<Canon>,
}

/// `select(x != x, nan, select(x == zero, zero, x))`: the scalar constants a float key is
/// canonicalised to before it is compared.
#[derive(Clone, Debug)]
pub(crate) struct Canon {
    pub(crate) nan: Arc<Tensor>,
    pub(crate) zero: Arc<Tensor>,
}
