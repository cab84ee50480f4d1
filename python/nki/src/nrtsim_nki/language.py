"""``nki.language`` (``nl``): tiles, indexing, loops and the tile-level operations.

Each operation records instructions of the traced program (``docs/nki-program.md``); the values
are computed by nrtsim's executor when the kernel runs.
"""

from __future__ import annotations

import builtins as _builtins

import ml_dtypes
import numpy as np

from . import _core, dtypes as _dt
from ._core import (  # noqa: F401  (the public names of nl)
    HBM as hbm,
    PRIVATE_HBM as private_hbm,
    PSUM as psum,
    SBUF as sbuf,
    SHARED_HBM as shared_hbm,
    DSlice,
    NkiError,
    ParDim,
    arange,
    mgrid,
)

# ---------------------------------------------------------------------------------------------
# dtypes

bool_ = np.bool_
int8 = np.int8
int16 = np.int16
int32 = np.int32
uint8 = np.uint8
uint16 = np.uint16
uint32 = np.uint32
float16 = np.float16
float32 = np.float32
bfloat16 = ml_dtypes.bfloat16
tfloat32 = _dt.tfloat32
float8_e4m3 = ml_dtypes.float8_e4m3
float8_e5m2 = ml_dtypes.float8_e5m2


class _FInfo:
    def __init__(self, dtype):
        info = ml_dtypes.finfo(dtype)
        self.min = float(info.min)
        self.max = float(info.max)
        self.eps = float(info.eps)
        self.tiny = float(info.tiny)


fp32 = _FInfo(np.float32)
fp16 = _FInfo(np.float16)
bf16 = _FInfo(ml_dtypes.bfloat16)


def finfo(dtype):
    """The limits of a float dtype (``min``, ``max``, ``eps``, ``tiny``)."""
    return _FInfo(_dt.storage(dtype))


class tile_size:  # noqa: N801 (NKI's name)
    """Hardware tile limits (a PSUM bank holds 512 float32 per partition)."""

    pmax = 128
    psum_fmax = 512
    psum_bank_fmax = 512
    psum_bank_fmax_bytes = 2048
    gemm_stationary_fmax = 128
    gemm_moving_fmax = 512
    bn_stats_fmax = 512
    total_available_sbuf_size = 192 * 1024


def par_dim(n):
    """Marks the partition dimension of a tile's shape."""
    return ParDim(n)


def ds(start, size):
    """A slice of ``size`` elements from ``start``."""
    return DSlice(start, size)


# ---------------------------------------------------------------------------------------------
# loops and SPMD


def affine_range(start, stop=None, step=1):
    """A loop whose iterations do not depend on each other (run in order here)."""
    return range(start, stop, step) if stop is not None else range(start)


sequential_range = affine_range
static_range = affine_range


def dynamic_range(start, stop=None, step=1):
    raise NkiError("nrtsim does not model nl.dynamic_range (a loop bound known only on device)")


def program_id(axis=0):
    trace = _core.current_trace()
    if not 0 <= axis < len(trace.program_id):
        if not trace.program_id and axis == 0:
            return 0
        raise NkiError(f"program_id({axis}): the launch grid has {len(trace.program_id)} axes")
    return trace.program_id[axis]


def num_programs(axes=0):
    trace = _core.current_trace()
    if isinstance(axes, (tuple, list)):
        return int(np.prod([num_programs(a) for a in axes]))
    if not trace.grid_shape:
        return 1
    return trace.grid_shape[axes]


def program_ndim():
    return len(_core.current_trace().grid_shape)


class nc:  # noqa: N801
    """``nl.nc(n)``: a grid axis spread over ``n`` logical NeuronCores."""

    def __init__(self, n):
        self.n = int(n)

    def __mul__(self, other):
        return spmd_dim(self, other)

    __rmul__ = __mul__


class spmd_dim:  # noqa: N801
    """A grid axis made of the product of its parts (``nl.nc(2) * 2`` is 4 programs)."""

    def __init__(self, *parts):
        self.parts = parts

    @property
    def size(self) -> int:
        total = 1
        for part in self.parts:
            total *= part.n if isinstance(part, nc) else (part.size if isinstance(part, spmd_dim) else int(part))
        return total


def grid_size(axis) -> int:
    if isinstance(axis, nc):
        return axis.n
    if isinstance(axis, spmd_dim):
        return axis.size
    return int(axis)


# ---------------------------------------------------------------------------------------------
# creation


def _shape(shape):
    """A shape as a tuple, keeping ``nl.par_dim`` marks (they say which axis is the partitions)."""
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(d if isinstance(d, ParDim) else int(d) for d in shape)


def ndarray(shape, dtype, buffer=sbuf, name="", **_):
    """A new tensor, unwritten."""
    return _core.current_trace().new_tensor(_shape(shape), dtype, _core.buffer_of(buffer), name)


def empty_like(x, dtype=None, buffer=None, name="", **_):
    return ndarray(x.shape, dtype or x.dtype, buffer or _buffer_like(x), name)


def _buffer_like(x):
    return x.buffer if isinstance(x, (_core.Tensor, _core.View)) else sbuf


def full(shape, fill_value, dtype, buffer=sbuf, name="", **_):
    tile = ndarray(shape, dtype, buffer, name)
    view = tile.full_view()
    _core.current_trace().emit("memset", _engine_of(view), dst=view.ap_json(), value=number(fill_value))
    return tile


def zeros(shape, dtype, buffer=sbuf, name="", **_):
    return full(shape, 0, dtype, buffer, name)


def ones(shape, dtype, buffer=sbuf, name="", **_):
    return full(shape, 1, dtype, buffer, name)


def zeros_like(x, dtype=None, buffer=None, name="", **_):
    return zeros(x.shape, dtype or x.dtype, buffer or _buffer_like(x), name)


def ones_like(x, dtype=None, buffer=None, name="", **_):
    return ones(x.shape, dtype or x.dtype, buffer or _buffer_like(x), name)


def full_like(x, fill_value, dtype=None, buffer=None, name="", **_):
    return full(x.shape, fill_value, dtype or x.dtype, buffer or _buffer_like(x), name)


def shared_identity_matrix(n, dtype=uint8, dst=None, **_):
    """An ``n``×``n`` identity matrix."""
    tile = dst if dst is not None else ndarray((n, n), dtype)
    view = _core.as_view(tile)
    _core.current_trace().emit(
        "select",
        "gpsimd",
        dst=view.ap_json(),
        pred={"affine": {"c": [1, -1], "k": 0, "cmp": "eq"}},
        on_true={"imm": 1.0},
        on_false={"imm": 0.0},
    )
    return tile


def rand(shape, dtype=float32, buffer=sbuf, name="", **_):
    """Uniform random values in [0, 1) from the program's seeded generator."""
    tile = ndarray(shape, dtype, buffer, name)
    view = tile.full_view()
    _core.current_trace().emit(
        "rand2", "gpsimd", dst=view.ap_json(), min={"imm": 0.0}, max={"imm": 1.0}
    )
    return tile


def random_seed(seed, **_):
    raise NkiError("nrtsim seeds its random numbers once per program; nl.random_seed is not modelled")


def shared_constant(constant, dtype=None, **_):
    """A constant tensor in device memory, holding ``constant`` (a numpy array)."""
    trace = _core.current_trace()
    array = np.asarray(constant)
    if dtype is not None:
        array = array.astype(_dt.storage(dtype))
    elif array.dtype == np.float64:
        array = array.astype(np.float32)
    elif array.dtype == np.int64:
        array = array.astype(np.int32)
    tensor = trace.new_tensor(array.shape or (1,), array.dtype, hbm, role="input")
    trace.inputs.append(tensor._id)
    trace.constants.append(np.ascontiguousarray(array))
    return tensor


# ---------------------------------------------------------------------------------------------
# helpers shared with nki.isa


def _engine_of(view) -> str:
    return "gpsimd" if view.buffer.on_chip else "dma"


def mask_json(mask, shape) -> list:
    """A mask's predicates over an iteration shape ``shape``."""
    if mask is None:
        return []
    if isinstance(mask, (bool, np.bool_)):
        if mask:
            return []
        return [{"c": [0] * len(shape), "k": 1, "cmp": "lt"}]
    if not isinstance(mask, _core.Predicate):
        raise NkiError(f"a mask is a predicate on indices, like (i_p < 64), got {mask!r}")
    out = []
    rank = len(shape)
    for expr, cmp in mask.clauses:
        coeffs = [0] * rank
        for var, coef in expr.terms.items():
            axis = expr.axes[var] + rank - expr.rank
            if not 0 <= axis < rank:
                raise NkiError(f"a mask of rank {expr.rank} does not fit a tile of rank {rank}")
            coeffs[axis] += coef
        out.append({"c": coeffs, "k": expr.const, "cmp": cmp})
    return out


def number(value):
    """A number of the program: JSON has no infinities or NaN, so those are strings."""
    value = float(value)
    if value != value:
        return "nan"
    if value in (float("inf"), float("-inf")):
        return "inf" if value > 0 else "-inf"
    return value


def operand(value, shape):
    """A scalar-or-tile operand broadcast to ``shape``."""
    if _core.is_tile(value):
        return _core.as_view(value).with_shape(shape).ap_json()
    if isinstance(value, (int, float, bool, np.number, np.bool_)):
        return {"imm": number(value)}
    raise NkiError(f"expected a tile or a number, got {type(value).__name__} {value!r}")


def broadcast_shape(*shapes) -> tuple:
    """The shape tiles of ``shapes`` broadcast to: as numpy's, except that a lower-rank tile
    whose leading axes fit a higher-rank one's (a per-partition ``[P]`` against ``[P, F]``)
    lines up on the partition axis, the first, and extends to the right."""
    shapes = [tuple(s) for s in shapes]
    widest = _builtins.max(shapes, key=len) if shapes else ()
    aligned = []
    for shape in shapes:
        pad = len(widest) - len(shape)
        if pad and shape and shape[0] == widest[0] and _builtins.all(c in (1, w) for c, w in zip(shape, widest)):
            shape = shape + (1,) * pad
        aligned.append(shape)
    try:
        return tuple(np.broadcast_shapes(*aligned))
    except ValueError as error:
        raise NkiError(f"tiles of shapes {' and '.join(map(str, shapes))} do not broadcast") from error


def _emit(opcode, engine, mask=None, shape=None, **fields):
    if mask is not None:
        fields["mask"] = mask_json(mask, shape)
    return _core.current_trace().emit(opcode, engine, **fields)


def _copy_into(target, source, mask=None, engine=None):
    target = _core.as_view(target)
    source = _core.as_view(source)
    if (source.shape != target.shape and int(np.prod(source.shape)) == int(np.prod(target.shape))
            and source._fit(target.shape) is None and source._contiguous()):
        # The same elements in another shape (a [P, 256] result stored into [P, 4, 16, 4]).
        source = source.reshape(target.shape)
    source = source.with_shape(target.shape)
    hbm_side = not target.buffer.on_chip or not source.buffer.on_chip
    op = "dma" if hbm_side else "copy"
    _emit(op, engine or ("dma" if hbm_side else "vector"), mask, target.shape,
          dst=target.ap_json(), src=source.ap_json())


def _binary_into(target, x, y, op, mask=None, engine="vector"):
    target = _core.as_view(target)
    shape = target.shape
    if _core.is_tile(x) and _core.is_tile(y):
        _emit("tensor_tensor", engine, mask, shape, dst=target.ap_json(),
              a=operand(x, shape), b=operand(y, shape), alu_op=op)
    elif _core.is_tile(x):
        _emit("tensor_scalar", engine, mask, shape, dst=target.ap_json(),
              src=operand(x, shape), ops=[{"op": op, "operand": operand(y, shape), "reverse": False}])
    elif _core.is_tile(y):
        _emit("tensor_scalar", engine, mask, shape, dst=target.ap_json(),
              src=operand(y, shape), ops=[{"op": op, "operand": operand(x, shape), "reverse": True}])
    else:
        raise NkiError(f"{op} needs at least one tile")


def _dtype_of(value):
    if _core.is_tile(value):
        return value.dtype
    return _dt.weak(value)


def _result(shape, dtype, buffer=None):
    return _core.current_trace().new_tensor(shape, dtype, buffer or sbuf)


def _fresh(tile):
    trace = _core.current_trace()
    index = trace.count - 1
    trace._fresh = (tile, index)
    return tile


# ---------------------------------------------------------------------------------------------
# memory


def load(src, dtype=None, mask=None, **_):
    """Copies a tensor (usually in HBM) into a new SBUF tile."""
    view = _core.as_view(src)
    tile = _result(view.shape, dtype or view.dtype)
    _emit("dma" if not view.buffer.on_chip else "copy", "dma" if not view.buffer.on_chip else "vector",
          mask, view.shape, dst=tile.full_view().ap_json(), src=view.ap_json())
    return _fresh(tile)


def store(dst, value, mask=None, **_):
    """Writes a tile (or a number) into ``dst``."""
    target = _core.as_view(dst)
    if not _core.is_tile(value):
        _emit("memset", "dma", mask, target.shape, dst=target.ap_json(), value=number(value))
        return
    _copy_into(target, value, mask, engine="dma")


def load_transpose2d(src, dtype=None, mask=None, **_):
    view = _core.as_view(src)
    if view.ndim != 2:
        raise NkiError(f"load_transpose2d takes a 2-D tensor, got shape {view.shape}")
    swapped = _core.View(view.tensor, view.off, [list(view.dims[1]), list(view.dims[0])])
    return load(swapped, dtype=dtype, mask=mask)


def copy(x, dtype=None, mask=None, **_):
    view = _core.as_view(x)
    tile = _result(view.shape, dtype or view.dtype)
    _copy_into(tile, view, mask)
    return _fresh(tile)


def device_print(prefix, tensor, **_):
    view = _core.as_view(tensor)
    _core.current_trace().emit("print", "sync", label=str(prefix), src=view.ap_json())


def gather_flattened(data, indices, axis=0, dtype=None, mask=None, **_):
    """``result[p, j] = data[p, indices[p, j]]`` over each partition's flattened free axes."""
    source = _core.as_view(data)
    index = _core.as_view(indices)
    free = int(np.prod(source.shape[1:]))
    if not source._contiguous():
        raise NkiError("gather_flattened reads a contiguous tile")
    if index.ndim != 2 or index.shape[0] != source.shape[0]:
        raise NkiError(f"gather_flattened's indices are [P, N] with P = {source.shape[0]}, got {index.shape}")
    count = index.shape[1]
    gathered = _core.View(source.tensor, source.off, [[free, source.shape[0]], [1, count]], (1, index))
    tile = _result((source.shape[0], count), dtype or source.dtype)
    _emit("copy", "gpsimd", mask, tile.shape, dst=tile.full_view().ap_json(), src=gathered.ap_json())
    return _fresh(tile)


def broadcast_to(x, shape, dtype=None, **_):
    view = _core.as_view(x)
    tile = _result(_shape(shape), dtype or view.dtype)
    _copy_into(tile, view.with_shape(_shape(shape)))
    return _fresh(tile)


def expand_dims(x, axis):
    view = _core.as_view(x)
    shape = list(view.shape)
    axes = axis if isinstance(axis, (tuple, list)) else [axis]
    for a in sorted(a if a >= 0 else a + len(shape) + 1 for a in axes):
        shape.insert(a, 1)
    return view.reshape(shape)


# ---------------------------------------------------------------------------------------------
# elementwise


def _binary(op, engine="vector"):
    def function(x, y, dtype=None, mask=None, **_):
        shape = broadcast_shape(
            x.shape if _core.is_tile(x) else (), y.shape if _core.is_tile(y) else ()
        )
        if not shape:
            raise NkiError(f"nl.{op} needs at least one tile")
        out_dtype = dtype or _dt.promote(_dtype_of(x), _dtype_of(y))
        tile = _result(shape, out_dtype)
        _binary_into(tile, x, y, op, mask, engine)
        return _fresh(tile)

    function.__name__ = op
    function._alu = op
    return function


add = _binary("add")
subtract = _binary("subtract")
multiply = _binary("multiply")
divide = _binary("divide")
maximum = _binary("maximum")
minimum = _binary("minimum")
abs_max = _binary("abs_max")
abs_min = _binary("abs_min")
power = _binary("power")
fmod = _binary("fmod")
mod = _binary("mod")
equal = _binary("equal")
not_equal = _binary("not_equal")
less = _binary("less")
less_equal = _binary("less_equal")
greater = _binary("greater")
greater_equal = _binary("greater_equal")
bitwise_and = _binary("bitwise_and")
bitwise_or = _binary("bitwise_or")
bitwise_xor = _binary("bitwise_xor")
left_shift = _binary("left_shift")
right_shift = _binary("right_shift")
logical_and = _binary("logical_and")
logical_or = _binary("logical_or")
logical_xor = _binary("logical_xor")


def _unary(func, engine="scalar"):
    def function(x, dtype=None, mask=None, **_):
        view = _core.as_view(x)
        tile = _result(view.shape, dtype or view.dtype)
        shape = view.shape
        _emit("activation", engine, mask, shape, dst=tile.full_view().ap_json(), src=view.ap_json(),
              func=func, scale={"imm": 1.0}, bias=None, reduce=None)
        return _fresh(tile)

    function.__name__ = func
    function._act = func
    return function


exp = _unary("exp")
log = _unary("log")
sqrt = _unary("sqrt")
rsqrt = _unary("rsqrt")
tanh = _unary("tanh")
sigmoid = _unary("sigmoid")
relu = _unary("relu")
gelu = _unary("gelu")
gelu_apprx_tanh = _unary("gelu_apprx_tanh")
gelu_apprx_sigmoid = _unary("gelu_apprx_sigmoid")
gelu_dx = _unary("gelu_dx")
silu = _unary("silu")
silu_dx = _unary("silu_dx")
softplus = _unary("softplus")
mish = _unary("mish")
erf = _unary("erf")
erf_dx = _unary("erf_dx")
reciprocal = _unary("reciprocal")
sin = _unary("sin")
cos = _unary("cos")
tan = _unary("tan")
arctan = _unary("arctan")
ceil = _unary("ceil", "vector")
floor = _unary("floor", "vector")
trunc = _unary("trunc", "vector")
sign = _unary("sign")
abs = _unary("abs")
square = _unary("square")
negative = _unary("negative", "vector")
invert = _unary("invert", "vector")
logical_not = _unary("logical_not", "vector")
identity = _unary("identity")
# Activation functions that are names only (isa.activation's op).
bypass = _unary("copy")
bypass._alu = "bypass"


def where(condition, x, y, dtype=None, mask=None, **_):
    shapes = [v.shape for v in (condition, x, y) if _core.is_tile(v)]
    shape = broadcast_shape(*shapes)
    out_dtype = dtype or _dt.promote(_dtype_of(x), _dtype_of(y))
    tile = _result(shape, out_dtype)
    _emit("select", "vector", mask, shape, dst=tile.full_view().ap_json(),
          pred=operand(condition, shape), on_true=operand(x, shape), on_false=operand(y, shape))
    return _fresh(tile)


# ---------------------------------------------------------------------------------------------
# reductions


def _axes(axis, rank):
    axes = axis if isinstance(axis, (tuple, list)) else [axis]
    out = sorted({int(a) + rank if int(a) < 0 else int(a) for a in axes})
    for a in out:
        if not 0 <= a < rank:
            raise NkiError(f"axis {a} is out of range for a tile of rank {rank}")
    return out


def reduce_into(view, op, axis, dtype=None, keepdims=False, mask=None, negate=False, engine="vector"):
    view = _core.as_view(view)
    axes = _axes(axis, view.ndim)
    kept = tuple(1 if i in axes else n for i, n in enumerate(view.shape))
    tile = _result(kept, dtype or view.dtype)
    _emit("reduce", engine, mask, view.shape, dst=tile.full_view().ap_json(), src=view.ap_json(),
          alu_op=op, axes=axes, negate=negate)
    _fresh(tile)
    if keepdims:
        return tile
    shape = tuple(n for i, n in enumerate(kept) if i not in axes) or (1,)
    return tile.full_view().reshape(shape)


def sum(x, axis, dtype=None, keepdims=False, mask=None, **_):  # noqa: A001
    return reduce_into(x, "add", axis, dtype, keepdims, mask)


def max(x, axis, dtype=None, keepdims=False, mask=None, **_):  # noqa: A001
    return reduce_into(x, "maximum", axis, dtype, keepdims, mask)


def min(x, axis, dtype=None, keepdims=False, mask=None, **_):  # noqa: A001
    return reduce_into(x, "minimum", axis, dtype, keepdims, mask)


def prod(x, axis, dtype=None, keepdims=False, mask=None, **_):
    return reduce_into(x, "multiply", axis, dtype, keepdims, mask)


def all(x, axis, dtype=None, keepdims=False, mask=None, **_):  # noqa: A001
    return reduce_into(x, "logical_and", axis, dtype, keepdims, mask)


sum._alu = "add"
max._alu = "maximum"
min._alu = "minimum"
prod._alu = "multiply"
all._alu = "logical_and"


def mean(x, axis, dtype=None, keepdims=False, mask=None, **_):
    view = _core.as_view(x)
    axes = _axes(axis, view.ndim)
    count = int(np.prod([view.shape[a] for a in axes]))
    total = reduce_into(view, "add", axes, float32, True, mask)
    out = multiply(total, 1.0 / count, dtype=dtype or view.dtype)
    if keepdims:
        return out
    shape = tuple(n for i, n in enumerate(out.shape) if i not in axes) or (1,)
    return out.full_view().reshape(shape)


def var(x, axis, dtype=None, keepdims=False, mask=None, **_):
    view = _core.as_view(x)
    centred = subtract(view, mean(view, axis, float32, True), dtype=float32)
    return mean(multiply(centred, centred), axis, dtype or view.dtype, keepdims)


def softmax(x, axis=-1, dtype=None, mask=None, **_):
    view = _core.as_view(x)
    top = reduce_into(view, "maximum", axis, float32, True)
    shifted = exp(subtract(view, top, dtype=float32))
    total = reduce_into(shifted, "add", axis, float32, True)
    return divide(shifted, total, dtype=dtype or view.dtype)


def rms_norm(x, w, axis, n, epsilon=1e-6, dtype=None, compute_dtype=None, mask=None, **_):
    view = _core.as_view(x)
    squares = multiply(view, view, dtype=float32)
    total = reduce_into(squares, "add", axis, float32, True)
    scale = rsqrt(add(multiply(total, 1.0 / n), epsilon))
    return multiply(multiply(view, scale, dtype=float32), w, dtype=dtype or view.dtype)


# ---------------------------------------------------------------------------------------------
# matmul and transpose


def transpose(x, dtype=None, mask=None, **_):
    view = _core.as_view(x)
    if view.ndim != 2:
        raise NkiError(f"nl.transpose takes a 2-D tile, got shape {view.shape}")
    tile = _result((view.shape[1], view.shape[0]), dtype or view.dtype)
    swapped = _core.View(view.tensor, view.off, [list(view.dims[1]), list(view.dims[0])])
    _emit("copy", "tensor", mask, tile.shape, dst=tile.full_view().ap_json(), src=swapped.ap_json())
    return _fresh(tile)


def matmul(x, y, transpose_x=False, mask=None, **_):
    """``x @ y`` (or ``x.T @ y`` with ``transpose_x``) on the tensor engine, in a PSUM tile."""
    stationary = _core.as_view(x) if transpose_x else _core.as_view(transpose(x))
    moving = _core.as_view(y)
    return matmul_into(None, stationary, moving, mask=mask)


def matmul_into(dst, stationary, moving, accumulate=False, mask=None):
    stationary = _core.as_view(stationary)
    moving = _core.as_view(moving)
    if stationary.ndim != 2 or moving.ndim != 2:
        raise NkiError(f"a matmul takes 2-D tiles, got {stationary.shape} and {moving.shape}")
    k, m = stationary.shape
    k2, n = moving.shape
    if k != k2:
        raise NkiError(
            f"a matmul contracts the partition axes: stationary {stationary.shape} and moving "
            f"{moving.shape} differ there"
        )
    tile = dst if dst is not None else _result((m, n), float32, psum)
    target = _core.as_view(tile)
    _emit("matmul", "tensor", mask, target.shape, dst=target.ap_json(),
          stationary=stationary.ap_json(), moving=moving.ap_json(), accumulate=bool(accumulate))
    if dst is None:
        _fresh(tile)
    return tile


def no_reorder():
    import contextlib

    return contextlib.nullcontext()


# numpy's ufuncs, as some kernels pass them as ALU ops.
ALU_BY_UFUNC = {
    np.add: "add",
    np.subtract: "subtract",
    np.multiply: "multiply",
    np.divide: "divide",
    np.maximum: "maximum",
    np.minimum: "minimum",
    np.power: "power",
    np.equal: "equal",
    np.not_equal: "not_equal",
    np.less: "less",
    np.less_equal: "less_equal",
    np.greater: "greater",
    np.greater_equal: "greater_equal",
    np.bitwise_and: "bitwise_and",
    np.bitwise_or: "bitwise_or",
    np.bitwise_xor: "bitwise_xor",
    np.left_shift: "left_shift",
    np.right_shift: "right_shift",
    np.logical_and: "logical_and",
    np.logical_or: "logical_or",
    np.logical_xor: "logical_xor",
    np.fmod: "fmod",
    np.mod: "mod",
    np.max: "maximum",
    np.amax: "maximum",
    np.min: "minimum",
    np.amin: "minimum",
    np.sum: "add",
    np.prod: "multiply",
}

ACT_BY_UFUNC = {
    np.exp: "exp",
    np.log: "log",
    np.sqrt: "sqrt",
    np.tanh: "tanh",
    np.abs: "abs",
    np.square: "square",
    np.sin: "sin",
    np.cos: "cos",
    np.negative: "negative",
    np.reciprocal: "reciprocal",
    np.sign: "sign",
    np.floor: "floor",
    np.ceil: "ceil",
}


def alu_name(op) -> str:
    """The ALU op name of ``op`` (an ``nl`` function or a numpy ufunc)."""
    if op is None:
        raise NkiError("an ALU operation is required here")
    name = getattr(op, "_alu", None)
    if name is not None:
        return name
    if op in ALU_BY_UFUNC:
        return ALU_BY_UFUNC[op]
    if isinstance(op, str):
        return op
    raise NkiError(f"{getattr(op, '__name__', op)!r} is not an ALU operation nrtsim models")


def act_name(op) -> str:
    """The activation function name of ``op``."""
    if op is None:
        return "copy"
    name = getattr(op, "_act", None)
    if name is not None:
        return name
    if op in ACT_BY_UFUNC:
        return ACT_BY_UFUNC[op]
    if isinstance(op, str):
        return op
    raise NkiError(f"{getattr(op, '__name__', op)!r} is not an activation function nrtsim models")



def static_cast(x, dtype):
    """``x`` converted to ``dtype``: a numpy array on the host (``astype``), a copy on the device."""
    if isinstance(x, np.ndarray):
        return x.astype(_dt.storage(dtype))
    return copy(x, dtype=dtype)


class _LoopReduce:
    """``nl.loop_reduce(x, op, ...)``: folds ``x`` into the tile it is assigned to
    (``dst[...] = nl.loop_reduce(x, op=np.add, loop_indices=[i])`` is ``dst = dst op x``)."""

    def __init__(self, x, op, dtype, mask):
        self.x = x
        self.op = op
        self.dtype = dtype
        self.mask = mask

    def __getattr__(self, name):
        raise NkiError("nl.loop_reduce's result is assigned to the tile it accumulates into "
                       "(dst[...] = nl.loop_reduce(x, ...)); nrtsim models only that use")


def loop_reduce(x, op, loop_indices=(), dtype=None, mask=None, **_):
    """A reduction over loop iterations into the tile the result is assigned to."""
    return _LoopReduce(x, op, dtype, mask)
