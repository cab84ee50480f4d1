"""``nki.isa`` (``nisa``): one function per NeuronCore instruction.

Both calling forms are accepted: the returning form of ``neuronxcc.nki.isa`` (``c =
nisa.tensor_tensor(a, b, op=nl.add)``) and the ``dst=`` form of the ``nki.isa`` namespace
(``nisa.tensor_tensor(dst=c, data1=a, data2=b, op=nl.add)``, or ``dst`` as the first positional
argument). The returning form allocates the result tile (SBUF, or PSUM for the tensor engine).
"""

from __future__ import annotations

import builtins

import numpy as np

from .. import _core, dtypes as _dt, language as nl
from .._core import NkiError


from .constants import (  # noqa: F401
    activation_engine, dge_mode, engine, gpsimd_engine, matmul_perf_mode, nc_version, oob_mode,
    reduce_cmd, scalar_engine, tensor_engine, unknown_engine, vector_engine,
)


def get_nc_version():
    return {"trn1": nc_version.gen2, "trn2": nc_version.gen3, "trn3": nc_version.gen4}[
        _core.current_trace().target
    ]


def _engine(value, default: str) -> str:
    if isinstance(value, engine) and value not in (engine.unknown,):
        return value.name if value.name != "activation" else "scalar"
    return default


# ---------------------------------------------------------------------------------------------
# the two calling forms


def _dst(args, kwargs, tiles_in_old_form: int):
    """Splits a ``dst`` off the call: by keyword, or as an extra leading positional tile."""
    if "dst" in kwargs:
        return kwargs.pop("dst"), list(args)
    leading = 0
    for value in args:
        if _core.is_tile(value):
            leading += 1
        else:
            break
    if leading > tiles_in_old_form:
        return args[0], list(args[1:])
    return None, list(args)


def _bind(names, args, kwargs, defaults=None):
    """Positional and keyword arguments by name, as a dict, with defaults."""
    values = dict(defaults or {})
    if len(args) > len(names):
        raise TypeError(f"too many positional arguments ({len(args)}) for ({', '.join(names)})")
    for name, value in zip(names, args):
        values[name] = value
    for name, value in kwargs.items():
        values[name] = value
    missing = [n for n in names if n not in values]
    if missing:
        raise TypeError(f"missing argument(s): {', '.join(missing)}")
    return values


def _target(dst, shape, dtype, buffer=None):
    """The destination view: ``dst`` checked against ``shape``, or a new tile."""
    if dst is None:
        tile = _core.current_trace().new_tensor(shape, dtype, buffer or nl.sbuf)
        return tile, tile.full_view(), True
    view = _core.as_view(dst)
    if tuple(view.shape) != tuple(shape) and int(np.prod(view.shape)) != int(np.prod(shape)):
        raise NkiError(f"dst has shape {view.shape}, the instruction produces {tuple(shape)}")
    if tuple(view.shape) != tuple(shape):
        view = view.reshape(shape)
    return dst, view, False


def _done(tile, fresh):
    if fresh:
        trace = _core.current_trace()
        trace._fresh = (tile, trace.count - 1)
    return tile


def _emit(opcode, engine_name, mask, shape, **fields):
    if mask is not None:
        fields["mask"] = nl.mask_json(mask, shape)
    return _core.current_trace().emit(opcode, engine_name, **fields)


# ---------------------------------------------------------------------------------------------
# tensor engine


def nc_matmul(*args, **kwargs):
    """``dst[m, n] = Σ_k stationary[k, m] * moving[k, n]`` in PSUM (float32)."""
    dst, args = _dst(args, kwargs, 2)
    v = _bind(["stationary", "moving"], args, kwargs, {"mask": None, "accumulate": None, "is_transpose": False})
    stationary = _core.as_view(v["stationary"])
    moving = _core.as_view(v["moving"])
    perf_mode = v.get("perf_mode")
    if isinstance(perf_mode, matmul_perf_mode):
        perf_mode = perf_mode.value
    if perf_mode not in (None, "none"):
        if perf_mode not in ("double_row", "double_row_gen3"):
            raise NkiError(f"nrtsim does not model nc_matmul's perf_mode {perf_mode!r}")
        # Double-row modes contract a [K, 2, M] stationary with a [K, 2, N] moving tile over both
        # K and the pair: two matmuls, the second accumulating, give the same sum.
        if stationary.ndim != 3 or moving.ndim != 3 or stationary.shape[1] != 2 or moving.shape[1] != 2:
            raise NkiError(
                f"perf_mode {perf_mode!r} takes [K, 2, M] and [K, 2, N] tiles, got {stationary.shape} and {moving.shape}"
            )
        shape = (stationary.shape[2], moving.shape[2])
        tile, target, fresh = _target(dst, shape, np.float32, nl.psum)
        for row in range(2):
            halves = [
                _core.View(t.tensor, t.off + row * t.dims[1][0], [list(t.dims[0]), list(t.dims[2])])
                for t in (stationary, moving)
            ]
            nl.matmul_into(target, halves[0], halves[1],
                           accumulate=bool(row) or bool(v["accumulate"]), mask=v["mask"])
        return _done(tile, fresh)
    if v["is_transpose"]:
        # The tensor engine moves `stationary` through unchanged: dst = stationaryᵀ.
        shape = (stationary.shape[1], stationary.shape[0])
        tile, target, fresh = _target(dst, shape, stationary.dtype, nl.psum)
        swapped = _core.View(stationary.tensor, stationary.off, [list(stationary.dims[1]), list(stationary.dims[0])])
        _emit("copy", "tensor", v["mask"], shape, dst=target.ap_json(), src=swapped.ap_json())
        return _done(tile, fresh)
    if stationary.ndim != 2 or moving.ndim != 2:
        raise NkiError(f"nc_matmul takes 2-D tiles, got {stationary.shape} and {moving.shape}")
    shape = (stationary.shape[1], moving.shape[1])
    tile, target, fresh = _target(dst, shape, np.float32, nl.psum)
    if v["accumulate"] is not None:
        accumulate = bool(v["accumulate"])
    else:
        # As the compiler infers it: the first matmul into a PSUM location overwrites it, the
        # next ones accumulate.
        accumulate = _core.current_trace().matmul_written(target)
    nl.matmul_into(target, stationary, moving, accumulate=accumulate, mask=v["mask"])
    return _done(tile, fresh)


def nc_transpose(*args, **kwargs):
    """``dst = dataᵀ`` (2-D), on the tensor engine (or the vector engine for 32×32 blocks)."""
    dst, args = _dst(args, kwargs, 1)
    v = _bind(["data"], args, kwargs, {"mask": None, "dtype": None, "engine": engine.unknown})
    data = _core.as_view(v["data"])
    if data.ndim != 2:
        raise NkiError(f"nc_transpose takes a 2-D tile, got shape {data.shape}")
    eng = _engine(v["engine"], "tensor")
    shape = (data.shape[1], data.shape[0])
    tile, target, fresh = _target(dst, shape, v["dtype"] or data.dtype, nl.psum if eng == "tensor" else nl.sbuf)
    swapped = _core.View(data.tensor, data.off, [list(data.dims[1]), list(data.dims[0])])
    _emit("copy", eng, v["mask"], shape, dst=target.ap_json(), src=swapped.ap_json())
    return _done(tile, fresh)


# ---------------------------------------------------------------------------------------------
# elementwise


def tensor_tensor(*args, **kwargs):
    dst, args = _dst(args, kwargs, 2)
    v = _bind(["data1", "data2", "op"], args, kwargs, {"mask": None, "dtype": None, "engine": engine.unknown})
    a, b = _core.as_view(v["data1"]), _core.as_view(v["data2"])
    shape = nl.broadcast_shape(a.shape, b.shape)
    dtype = v["dtype"] or _dt.promote(a.dtype, b.dtype)
    tile, target, fresh = _target(dst, shape, dtype)
    _emit("tensor_tensor", _engine(v["engine"], "vector"), v["mask"], shape, dst=target.ap_json(),
          a=nl.operand(a, shape), b=nl.operand(b, shape), alu_op=nl.alu_name(v["op"]))
    return _done(tile, fresh)


def tensor_scalar(*args, **kwargs):
    dst, args = _dst(args, kwargs, 1)
    v = _bind(["data", "op0", "operand0"], args, kwargs,
              {"reverse0": False, "op1": None, "operand1": None, "reverse1": False,
               "mask": None, "dtype": None, "engine": engine.unknown})
    if len(args) > 3:
        for name, value in zip(["reverse0", "op1", "operand1", "reverse1"], args[3:]):
            v[name] = value
    data = _core.as_view(v["data"])
    shape = data.shape
    tile, target, fresh = _target(dst, shape, v["dtype"] or data.dtype)
    ops = [{"op": nl.alu_name(v["op0"]), "operand": nl.operand(v["operand0"], shape), "reverse": bool(v["reverse0"])}]
    if v["op1"] is not None:
        ops.append({"op": nl.alu_name(v["op1"]), "operand": nl.operand(v["operand1"], shape), "reverse": bool(v["reverse1"])})
    _emit("tensor_scalar", _engine(v["engine"], "vector"), v["mask"], shape, dst=target.ap_json(),
          src=data.ap_json(), ops=ops)
    return _done(tile, fresh)


def scalar_tensor_tensor(*args, **kwargs):
    dst, args = _dst(args, kwargs, 1)
    v = _bind(["data", "op0", "operand0", "op1", "operand1"], args, kwargs,
              {"reverse0": False, "reverse1": False, "mask": None, "dtype": None})
    data = _core.as_view(v["data"])
    shape = data.shape
    tile, target, fresh = _target(dst, shape, v["dtype"] or data.dtype)
    _emit("scalar_tensor_tensor", "vector", v["mask"], shape, dst=target.ap_json(), data=data.ap_json(),
          op0=nl.alu_name(v["op0"]), operand0=nl.operand(v["operand0"], shape),
          op1=nl.alu_name(v["op1"]), operand1=nl.operand(v["operand1"], shape),
          reverse0=bool(v["reverse0"]), reverse1=bool(v["reverse1"]))
    return _done(tile, fresh)


def activation(*args, **kwargs):
    """``dst = op(data * scale + bias)``, optionally reducing each partition into ``reduce_res``."""
    dst, args = _dst(args, kwargs, 0)
    v = _bind(["op", "data"], args, kwargs,
              {"bias": None, "scale": 1.0, "reduce_op": None, "reduce_res": None,
               "reduce_cmd": reduce_cmd.idle, "mask": None, "dtype": None})
    data = _core.as_view(v["data"])
    shape = data.shape
    tile, target, fresh = _target(dst, shape, v["dtype"] or data.dtype)
    reduce = None
    if v["reduce_res"] is not None:
        reduce = {"op": nl.alu_name(v["reduce_op"] or nl.add), "dst": _core.as_view(v["reduce_res"]).ap_json()}
    bias = None if v["bias"] is None else nl.operand(v["bias"], shape)
    _emit("activation", "scalar", v["mask"], shape, dst=target.ap_json(), src=data.ap_json(),
          func=nl.act_name(v["op"]), scale=nl.operand(v["scale"], shape), bias=bias, reduce=reduce)
    return _done(tile, fresh)


def activation_reduce(*args, **kwargs):
    dst, args = _dst(args, kwargs, 0)
    v = _bind(["op", "data"], args, kwargs, {"bias": None, "scale": 1.0, "mask": None, "dtype": None})
    if dst is not None:
        v["dst"] = dst
    return activation(**v)


def exponential(*args, **kwargs):
    raise NkiError("nrtsim does not model nisa.exponential yet")


def reciprocal(*args, **kwargs):
    dst, args = _dst(args, kwargs, 1)
    v = _bind(["data"], args, kwargs, {"mask": None, "dtype": None})
    data = _core.as_view(v["data"])
    tile, target, fresh = _target(dst, data.shape, v["dtype"] or data.dtype)
    _emit("tensor_scalar", "vector", v["mask"], data.shape, dst=target.ap_json(), src=data.ap_json(),
          ops=[{"op": "divide", "operand": {"imm": 1.0}, "reverse": True}])
    return _done(tile, fresh)


def tensor_copy(*args, **kwargs):
    dst, args = _dst(args, kwargs, 1)
    v = _bind(["src"], args, kwargs, {"mask": None, "dtype": None, "engine": engine.unknown})
    src = _core.as_view(v["src"])
    tile, target, fresh = _target(dst, src.shape, v["dtype"] or src.dtype)
    _emit("copy", _engine(v["engine"], "vector"), v["mask"], src.shape, dst=target.ap_json(), src=src.ap_json())
    return _done(tile, fresh)


def tensor_copy_predicated(*args, **kwargs):
    """``dst[i] = src[i]`` where ``predicate[i]`` is nonzero (zero with ``reverse_pred``)."""
    v = _bind(["dst", "src", "predicate"], args, kwargs, {"reverse_pred": False, "mask": None, "dtype": None})
    target = _core.as_view(v["dst"])
    shape = target.shape
    pred = nl.operand(v["predicate"], shape)
    on_true, on_false = nl.operand(v["src"], shape), target.ap_json()
    if v["reverse_pred"]:
        on_true, on_false = on_false, on_true
    _emit("select", "vector", v["mask"], shape, dst=target.ap_json(), pred=pred, on_true=on_true, on_false=on_false)


def memset(*args, **kwargs):
    if "dst" in kwargs or (args and _core.is_tile(args[0])):
        v = _bind(["dst", "value"], args, kwargs, {"engine": engine.unknown, "mask": None})
        target = _core.as_view(v["dst"])
        _emit("memset", _engine(v["engine"], "vector"), v["mask"], target.shape, dst=target.ap_json(), value=nl.number(v["value"]))
        return v["dst"]
    v = _bind(["shape", "value", "dtype"], args, kwargs, {"engine": engine.unknown, "mask": None})
    tile, target, fresh = _target(None, nl._shape(v["shape"]), v["dtype"])
    _emit("memset", _engine(v["engine"], "vector"), v["mask"], target.shape, dst=target.ap_json(), value=nl.number(v["value"]))
    return _done(tile, fresh)


def iota(*args, **kwargs):
    """Index values: ``expr``'s value at each position (an ``nl.arange`` expression)."""
    if "dst" in kwargs or (args and _core.is_tile(args[0])):
        v = _bind(["dst", "pattern"], args, kwargs, {"offset": 0, "channel_multiplier": 0, "mask": None})
        target = _core.as_view(v["dst"])
        coeffs = [int(v["channel_multiplier"])] + [int(step) for step, _ in v["pattern"]]
        if len(coeffs) != target.ndim:
            raise NkiError(f"iota's pattern has {len(coeffs) - 1} free axes, dst has {target.ndim - 1}")
        _emit("iota", "gpsimd", v["mask"], target.shape, dst=target.ap_json(), c=coeffs, k=int(v["offset"]))
        return v["dst"]
    v = _bind(["expr", "dtype"], args, kwargs, {"mask": None})
    expr = v["expr"]
    if not isinstance(expr, _core.IndexExpr):
        raise NkiError(f"iota takes an index expression (nl.arange/nl.mgrid), got {expr!r}")
    shape = expr.shape
    if len(shape) == 1:
        shape = (shape[0], 1)
    coeffs = [0] * len(shape)
    for var, coef in expr.terms.items():
        coeffs[expr.axes[var] + len(shape) - expr.rank] += coef
    tile, target, fresh = _target(None, shape, v["dtype"])
    _emit("iota", "gpsimd", v["mask"], shape, dst=target.ap_json(), c=coeffs, k=expr.const)
    return _done(tile, fresh)


def affine_select(*args, **kwargs):
    """``dst[i] = pred(i) ? on_true_tile[i] : on_false_value`` for an affine ``pred`` of indices."""
    dst, args = _dst(args, kwargs, 0)
    v = _bind(["pred", "on_true_tile", "on_false_value"], args, kwargs, {"mask": None, "dtype": None})
    on_true = _core.as_view(v["on_true_tile"])
    shape = on_true.shape
    pred = v["pred"]
    clauses = nl.mask_json(pred, shape)
    if len(clauses) != 1:
        raise NkiError("affine_select takes one comparison of an affine index expression")
    tile, target, fresh = _target(dst, shape, v["dtype"] or on_true.dtype)
    _emit("select", "gpsimd", v["mask"], shape, dst=target.ap_json(), pred={"affine": clauses[0]},
          on_true=on_true.ap_json(), on_false={"imm": nl.number(v["on_false_value"])})
    return _done(tile, fresh)


# ---------------------------------------------------------------------------------------------
# reductions


def tensor_reduce(*args, **kwargs):
    dst, args = _dst(args, kwargs, 0)
    v = _bind(["op", "data", "axis"], args, kwargs, {"mask": None, "dtype": None, "negate": False, "keepdims": False})
    data = _core.as_view(v["data"])
    axes = nl._axes(v["axis"], data.ndim)
    kept = tuple(1 if i in axes else n for i, n in enumerate(data.shape))
    tile, target, fresh = _target(dst, kept, v["dtype"] or data.dtype)
    _emit("reduce", "vector", v["mask"], data.shape, dst=target.ap_json(), src=data.ap_json(),
          alu_op=nl.alu_name(v["op"]), axes=axes, negate=bool(v["negate"]))
    _done(tile, fresh)
    if v["keepdims"] or dst is not None:
        return tile
    shape = tuple(n for i, n in enumerate(kept) if i not in axes) or (1,)
    return _core.as_view(tile).reshape(shape)


def tensor_partition_reduce(*args, **kwargs):
    dst, args = _dst(args, kwargs, 0)
    v = _bind(["op", "data"], args, kwargs, {"mask": None, "dtype": None})
    data = _core.as_view(v["data"])
    shape = (1,) + tuple(data.shape[1:])
    tile, target, fresh = _target(dst, shape, v["dtype"] or data.dtype)
    _emit("partition_reduce", "gpsimd", v["mask"], data.shape, dst=target.ap_json(), src=data.ap_json(),
          alu_op=nl.alu_name(v["op"]))
    return _done(tile, fresh)


# ---------------------------------------------------------------------------------------------
# data movement


def dma_copy(*args, **kwargs):
    v = _bind(["dst", "src"], args, kwargs,
              {"mask": None, "dst_rmw_op": None, "oob_mode": oob_mode.error, "dge_mode": dge_mode.unknown,
               "engine": engine.unknown, "priority": None, "name": None})
    target = _core.as_view(v["dst"])
    src = _core.as_view(v["src"]).with_shape(target.shape) if tuple(_core.as_view(v["src"]).shape) != target.shape else _core.as_view(v["src"])
    fields = {"dst": target.ap_json(), "src": src.ap_json()}
    if v["oob_mode"] == oob_mode.skip:
        fields["oob"] = "skip"
    if v["dst_rmw_op"] is not None:
        fields["accumulate"] = nl.alu_name(v["dst_rmw_op"])
    _emit("dma", "dma", v["mask"], target.shape, **fields)


def dma_transpose(*args, **kwargs):
    dst, args = _dst(args, kwargs, 1)
    v = _bind(["src"], args, kwargs, {"axes": None, "mask": None, "dtype": None, "dge_mode": None})
    src = _core.as_view(v["src"])
    axes = tuple(v["axes"]) if v["axes"] is not None else tuple(reversed(range(src.ndim)))
    if sorted(axes) != list(range(src.ndim)):
        raise NkiError(f"dma_transpose's axes {axes} are not a permutation of {src.ndim} axes")
    permuted = _core.View(src.tensor, src.off, [list(src.dims[a]) for a in axes],
                          None if src.ind is None else (axes.index(src.ind[0]), _permute_index(src.ind[1], axes)))
    tile, target, fresh = _target(dst, permuted.shape, v["dtype"] or src.dtype)
    _emit("dma", "dma", v["mask"], permuted.shape, dst=target.ap_json(), src=permuted.ap_json())
    return _done(tile, fresh)


def _permute_index(index, axes):
    return _core.View(index.tensor, index.off, [list(index.dims[a]) for a in axes])


def local_gather(*args, **kwargs):
    dst, args = _dst(args, kwargs, 2)
    v = _bind(["src_buffer", "index", "num_elem_per_idx", "num_valid_indices"], args, kwargs,
              {"num_elem_per_idx": 1, "num_valid_indices": None, "mask": None})
    src = _core.as_view(v["src_buffer"])
    index = _core.as_view(v["index"])
    per = int(v["num_elem_per_idx"])
    valid = v["num_valid_indices"]
    if valid is None:
        # Each GpSimd core serves 16 partitions and reads all their indices.
        valid = int(np.prod(index.shape[1:])) * builtins.min(16, index.shape[0])
    shape = (index.shape[0], int(valid) * per)
    tile, target, fresh = _target(dst, shape, src.dtype)
    fields = {"dst": target.ap_json(), "src_buffer": src.ap_json(), "index": index.ap_json(), "num_elem_per_idx": per}
    if v["num_valid_indices"] is not None:
        fields["num_valid_indices"] = int(v["num_valid_indices"])
    _emit("local_gather", "gpsimd", v["mask"], target.shape, **fields)
    return _done(tile, fresh)


def nc_stream_shuffle(*args, **kwargs):
    v = _bind(["src", "dst", "shuffle_mask"], args, kwargs, {"mask": None, "dtype": None})
    src, target = _core.as_view(v["src"]), _core.as_view(v["dst"])
    _emit("nc_stream_shuffle", "vector", v["mask"], target.shape, dst=target.ap_json(), src=src.ap_json(),
          shuffle_mask=[int(x) for x in v["shuffle_mask"]])


# ---------------------------------------------------------------------------------------------
# specialised vector and gpsimd instructions


def _box(mask, shape):
    """A mask that keeps a box at the start of each axis (``i < n``, ``i <= n``), as the bounds
    per axis; the instructions that take no mask get their operands sliced to it instead."""
    bounds = list(shape)
    for clause in nl.mask_json(mask, shape):
        axes = [a for a, c in enumerate(clause["c"]) if c != 0]
        if len(axes) != 1 or clause["c"][axes[0]] != 1 or clause["cmp"] not in ("lt", "le"):
            raise NkiError("this instruction takes a mask only as a box of leading index ranges "
                           "(i < n on each axis)")
        axis = axes[0]
        bound = -clause["k"] + (1 if clause["cmp"] == "le" else 0)
        bounds[axis] = max(0, min(bounds[axis], bound))
    return bounds


def _sliced(value, bounds, axes=None):
    """``value`` (a tile) cut to ``bounds`` on its leading axes (all, or ``axes`` of them)."""
    view = _core.as_view(value)
    count = len(view.dims) if axes is None else axes
    key = tuple(slice(0, bounds[a]) for a in range(min(count, len(bounds))))
    return view[key]


def _simple(op, names, shape_of, dtype_of, engine_name="vector", defaults=None):
    def function(*args, **kwargs):
        dst, args = _dst(args, kwargs, len(names))
        v = _bind(names, args, kwargs, dict({"mask": None, "dtype": None}, **(defaults or {})))
        shape = shape_of(v)
        tile, target, fresh = _target(dst, shape, v["dtype"] or dtype_of(v))
        if v["mask"] is not None:
            # These instructions take no mask: a box mask cuts their operands and the result's
            # partitions instead.
            bounds = _box(v["mask"], _core.as_view(v[names[0]]).shape)
            v["mask"] = None
            v[names[0]] = _sliced(v[names[0]], bounds)
            for name in names[1:]:
                if _core.is_tile(v[name]):
                    v[name] = _sliced(v[name], bounds, axes=1)
            target = _sliced(target, bounds, axes=1)
        fields = {"dst": target.ap_json()}
        for name in names:
            value = v[name]
            if _core.is_tile(value):
                fields[name] = _core.as_view(value).ap_json()
            elif isinstance(value, (int, float, np.number)):
                fields[name] = {"imm": nl.number(value)}
            else:
                fields[name] = value
        _emit(op, engine_name, v["mask"], _core.as_view(v[names[0]]).shape, **fields)
        return _done(tile, fresh)

    function.__name__ = op
    return function


max8 = _simple("max8", ["src"], lambda v: (_core.as_view(v["src"]).shape[0], 8), lambda v: v["src"].dtype)
nc_find_index8 = _simple(
    "nc_find_index8", ["data", "vals"], lambda v: (_core.as_view(v["data"]).shape[0], 8), lambda v: np.uint32
)
bn_stats = _simple("bn_stats", ["data"], lambda v: (_core.as_view(v["data"]).shape[0], 6), lambda v: v["data"].dtype)
bn_aggr = _simple("bn_aggr", ["data"], lambda v: (_core.as_view(v["data"]).shape[0], 2), lambda v: v["data"].dtype)
sequence_bounds = _simple(
    "sequence_bounds", ["segment_ids"], lambda v: (_core.as_view(v["segment_ids"]).shape[0], 2,
                                                   _core.as_view(v["segment_ids"]).shape[-1]),
    lambda v: v["segment_ids"].dtype, "gpsimd",
)


def nc_match_replace8(*args, **kwargs):
    dst, args = _dst(args, kwargs, 2)
    v = _bind(["data", "vals", "imm"], args, kwargs, {"dst_idx": None, "mask": None, "dtype": None})
    data = _core.as_view(v["data"])
    tile, target, fresh = _target(dst, data.shape, v["dtype"] or data.dtype)
    if v["mask"] is not None:
        # No mask on this instruction: a box mask cuts its operands and results instead.
        bounds = _box(v["mask"], data.shape)
        data, target = _sliced(data, bounds), _sliced(target, bounds)
        v["vals"] = _sliced(v["vals"], bounds, axes=1)
        if v["dst_idx"] is not None:
            v["dst_idx"] = _sliced(v["dst_idx"], bounds, axes=1)
        v["mask"] = None
    fields = {"dst": target.ap_json(), "data": data.ap_json(), "vals": _core.as_view(v["vals"]).ap_json(),
              "imm": nl.number(v["imm"])}
    if v["dst_idx"] is not None:
        fields["dst_idx"] = _core.as_view(v["dst_idx"]).ap_json()
    _emit("nc_match_replace8", "vector", v["mask"], data.shape, **fields)
    return _done(tile, fresh)


def dropout(*args, **kwargs):
    dst, args = _dst(args, kwargs, 1)
    v = _bind(["data", "prob"], args, kwargs, {"mask": None, "dtype": None})
    data = _core.as_view(v["data"])
    tile, target, fresh = _target(dst, data.shape, v["dtype"] or data.dtype)
    _emit("dropout", "vector", v["mask"], data.shape, dst=target.ap_json(), data=data.ap_json(),
          prob=nl.operand(v["prob"], data.shape))
    return _done(tile, fresh)


def tensor_tensor_scan(*args, **kwargs):
    dst, args = _dst(args, kwargs, 2)
    v = _bind(["data0", "data1", "initial", "op0", "op1"], args, kwargs,
              {"reverse0": False, "reverse1": False, "mask": None, "dtype": None})
    d0, d1 = _core.as_view(v["data0"]), _core.as_view(v["data1"])
    shape = d0.shape
    tile, target, fresh = _target(dst, shape, v["dtype"] or _dt.promote(d0.dtype, d1.dtype))
    initial = nl.operand(v["initial"], (shape[0], 1))
    _emit("scan", "vector", v["mask"], shape, dst=target.ap_json(), data0=d0.ap_json(), data1=d1.with_shape(shape).ap_json(),
          initial=initial, op0=nl.alu_name(v["op0"]), op1=nl.alu_name(v["op1"]),
          reverse0=bool(v["reverse0"]), reverse1=bool(v["reverse1"]))
    return _done(tile, fresh)


def _reduce_cmd(value) -> str:
    return value.name if isinstance(value, reduce_cmd) else str(value)


def tensor_scalar_cumulative(*args, **kwargs):
    dst, args = _dst(args, kwargs, 1)
    v = _bind(["src", "op0", "op1", "imm0"], args, kwargs,
              {"imm1": None, "reduce_cmd": reduce_cmd.reset_reduce, "mask": None, "dtype": None})
    src = _core.as_view(v["src"])
    shape = src.shape
    tile, target, fresh = _target(dst, shape, v["dtype"] or src.dtype)
    fields = {"dst": target.ap_json(), "src": src.ap_json(), "op0": nl.alu_name(v["op0"]),
              "op1": nl.alu_name(v["op1"]), "imm0": nl.operand(v["imm0"], (shape[0], 1)),
              "reduce_cmd": _reduce_cmd(v["reduce_cmd"])}
    if v["imm1"] is not None:
        fields["imm1"] = nl.operand(v["imm1"], (shape[0], 1))
    _emit("tensor_scalar_cumulative", "vector", v["mask"], shape, **fields)
    return _done(tile, fresh)


def tensor_scalar_reduce(*args, **kwargs):
    dst, args = _dst(args, kwargs, 1)
    v = _bind(["data", "op0", "operand0", "reduce_op", "reduce_res"], args, kwargs,
              {"reverse0": False, "mask": None, "dtype": None})
    data = _core.as_view(v["data"])
    shape = data.shape
    tile, target, fresh = _target(dst, shape, v["dtype"] or data.dtype)
    _emit("tensor_scalar_reduce", "vector", v["mask"], shape, dst=target.ap_json(), data=data.ap_json(),
          op0=nl.alu_name(v["op0"]), operand0=nl.operand(v["operand0"], shape), reverse0=bool(v["reverse0"]),
          reduce_op=nl.alu_name(v["reduce_op"]), reduce_res=_core.as_view(v["reduce_res"]).ap_json())
    return _done(tile, fresh)


def _reduce_op_name(op):
    if op in (np.amax, np.max, nl.max, nl.maximum, max):
        return "maximum"
    if op in (np.amin, np.min, nl.min, nl.minimum, min):
        return "minimum"
    return nl.alu_name(op)


def select_reduce(*args, **kwargs):
    v = _bind(["dst", "predicate", "on_true", "on_false"], args, kwargs,
              {"reduce_res": None, "reduce_cmd": reduce_cmd.idle, "reduce_op": np.amax,
               "reverse_pred": False, "mask": None, "dtype": None})
    target = _core.as_view(v["dst"])
    shape = target.shape
    fields = {"dst": target.ap_json(), "predicate": nl.operand(v["predicate"], shape),
              "on_true": nl.operand(v["on_true"], shape), "on_false": nl.operand(v["on_false"], shape),
              "reduce_cmd": _reduce_cmd(v["reduce_cmd"]), "reduce_op": _reduce_op_name(v["reduce_op"]),
              "reverse_pred": bool(v["reverse_pred"])}
    if v["reduce_res"] is not None:
        fields["reduce_res"] = _core.as_view(v["reduce_res"]).ap_json()
    _emit("select_reduce", "vector", v["mask"], shape, **fields)
    return v["dst"]


def range_select(*args, **kwargs):
    dst, args = _dst(args, kwargs, 0)
    v = _bind(["on_true_tile", "comp_op0", "comp_op1", "bound0", "bound1"], args, kwargs,
              {"reduce_cmd": reduce_cmd.reset_reduce, "reduce_res": None, "reduce_op": np.amax, "range_start": 0,
               "on_false_value": nl.fp32.min, "mask": None, "dtype": None})
    on_true = _core.as_view(v["on_true_tile"])
    shape = on_true.shape
    tile, target, fresh = _target(dst, shape, v["dtype"] or on_true.dtype)
    fields = {"dst": target.ap_json(), "on_true_tile": on_true.ap_json(),
              "comp_op0": nl.alu_name(v["comp_op0"]), "comp_op1": nl.alu_name(v["comp_op1"]),
              "bound0": nl.operand(v["bound0"], (shape[0], 1)), "bound1": nl.operand(v["bound1"], (shape[0], 1)),
              "reduce_cmd": _reduce_cmd(v["reduce_cmd"]), "reduce_op": _reduce_op_name(v["reduce_op"]),
              "range_start": nl.number(v["range_start"]), "on_false_value": nl.number(v["on_false_value"])}
    if v["reduce_res"] is not None:
        fields["reduce_res"] = _core.as_view(v["reduce_res"]).ap_json()
    _emit("range_select", "vector", v["mask"], shape, **fields)
    return _done(tile, fresh)


def rng(*args, **kwargs):
    v = _bind(["dst"], args, kwargs, {"engine": engine.vector})
    target = _core.as_view(v["dst"])
    _emit("rng", _engine(v["engine"], "vector"), None, target.shape, dst=target.ap_json())
    return v["dst"]


def rand2(*args, **kwargs):
    v = _bind(["dst", "min", "max"], args, kwargs, {})
    target = _core.as_view(v["dst"])
    _emit("rand2", "gpsimd", None, target.shape, dst=target.ap_json(),
          min=nl.operand(v["min"], target.shape), max=nl.operand(v["max"], target.shape))
    return v["dst"]


def _unsupported(name):
    def function(*args, **kwargs):
        raise NkiError(f"nrtsim does not model nisa.{name} yet")

    function.__name__ = name
    return function


for _name in ("nc_matmul_mx", "nc_n_gather", "activate2", "set_rng_seed", "rand_set_state", "rand_get_state",
              "core_barrier", "dma_compute", "quantize_mx", "sendrecv", "register_alloc", "register_move",
              "register_load", "register_store", "nonzero_with_count", "topk", "builtin_custom_op",
              "tensor_copy_dynamic_src", "tensor_copy_dynamic_dst"):
    globals()[_name] = _unsupported(_name)
