"""Tracing: tensors, views, index expressions and the program being recorded.

A kernel runs as ordinary Python once per SPMD program. Every ``nl``/``nisa`` call appends
instructions on access patterns (see ``docs/nki-program.md``) to the current ``Trace``; nothing is
computed here. Shapes, dtypes and index arithmetic are checked as the kernel runs, so a mistake is
reported at the kernel's own line.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Optional

import numpy as np

from . import dtypes as _dt

FORMAT = "nrtsim-nki-program"
VERSION = 1
PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


class NkiError(Exception):
    """A kernel asked for something NKI does not allow, or nrtsim does not model."""


# ---------------------------------------------------------------------------------------------
# Buffers


class Buffer:
    """A memory region: ``nl.sbuf``, ``nl.psum``, ``nl.hbm``, ``nl.shared_hbm``, ``nl.private_hbm``."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"nl.{self.name}"

    @property
    def on_chip(self) -> bool:
        return self.name in ("sbuf", "psum")

    def view(self, dtype, shape, name: str = "", **_):
        """A new tensor in this buffer (``sbuf.view(dtype=..., shape=...)``, the allocation of
        NKI's beta 2 kernels)."""
        return current_trace().new_tensor(shape, dtype, self, name)


SBUF = Buffer("sbuf")
PSUM = Buffer("psum")
HBM = Buffer("hbm")
SHARED_HBM = Buffer("shared_hbm")
PRIVATE_HBM = Buffer("private_hbm")


def buffer_of(value) -> Buffer:
    if isinstance(value, Buffer):
        return value
    raise NkiError(f"expected a buffer (nl.sbuf, nl.psum, nl.hbm, nl.shared_hbm), got {value!r}")


class ParDim(int):
    """``nl.par_dim(n)``: marks a shape's partition dimension; an int otherwise."""


# ---------------------------------------------------------------------------------------------
# Index expressions


class _Var:
    """One index variable of an ``arange``/``mgrid``: ``extent`` values, at axis ``pos``."""

    __slots__ = ("extent",)

    def __init__(self, extent: int):
        self.extent = extent


class IndexExpr:
    """An affine index expression: ``const + Σ coef * var`` over a broadcast shape.

    ``axes`` maps each variable to its axis in a shape of rank ``rank``.
    """

    __slots__ = ("terms", "const", "axes", "rank")

    def __init__(self, terms: dict, const: int, axes: dict, rank: int):
        self.terms = terms
        self.const = const
        self.axes = axes
        self.rank = rank

    # shape ------------------------------------------------------------------------------
    @property
    def shape(self) -> tuple:
        dims = [1] * self.rank
        for var, axis in self.axes.items():
            dims[axis] = max(dims[axis], var.extent)
        return tuple(dims)

    def __getitem__(self, key):
        """``arange(n)[:, None]``: places the axes of the expression in a larger shape."""
        if not isinstance(key, tuple):
            key = (key,)
        old = 0
        mapping = {}
        new_rank = 0
        for item in key:
            if item is None:
                new_rank += 1
            elif isinstance(item, slice) and item == slice(None):
                mapping[old] = new_rank
                old += 1
                new_rank += 1
            else:
                raise NkiError(f"an index expression takes only ':' and None, got {item!r}")
        while old < self.rank:
            mapping[old] = new_rank
            old += 1
            new_rank += 1
        axes = {var: mapping[axis] for var, axis in self.axes.items()}
        return IndexExpr(dict(self.terms), self.const, axes, new_rank)

    # arithmetic -------------------------------------------------------------------------
    def _combine(self, other, sign: int) -> "IndexExpr":
        if isinstance(other, IndexExpr):
            rank = max(self.rank, other.rank)
            axes = {v: a + rank - self.rank for v, a in self.axes.items()}
            for v, a in other.axes.items():
                axes[v] = a + rank - other.rank
            terms = dict(self.terms)
            for v, c in other.terms.items():
                terms[v] = terms.get(v, 0) + sign * c
            return IndexExpr(terms, self.const + sign * other.const, axes, rank)
        value = _as_int(other, "an index expression's operand")
        return IndexExpr(dict(self.terms), self.const + sign * value, dict(self.axes), self.rank)

    def __add__(self, other):
        return self._combine(other, 1)

    __radd__ = __add__

    def __sub__(self, other):
        return self._combine(other, -1)

    def __rsub__(self, other):
        return (-self)._combine(other, 1)

    def __neg__(self):
        return self * -1

    def __mul__(self, other):
        factor = _as_int(other, "an index expression's factor")
        terms = {v: c * factor for v, c in self.terms.items()}
        return IndexExpr(terms, self.const * factor, dict(self.axes), self.rank)

    __rmul__ = __mul__

    # predicates -------------------------------------------------------------------------
    def _cmp(self, other, cmp: str) -> "Predicate":
        return Predicate([(self - other, cmp)])

    def __lt__(self, other):
        return self._cmp(other, "lt")

    def __le__(self, other):
        return self._cmp(other, "le")

    def __gt__(self, other):
        return self._cmp(other, "gt")

    def __ge__(self, other):
        return self._cmp(other, "ge")

    def __eq__(self, other):  # type: ignore[override]
        return self._cmp(other, "eq")

    def __ne__(self, other):  # type: ignore[override]
        return self._cmp(other, "ne")

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        parts = [f"{c}*v{id(v) % 1000}" for v, c in self.terms.items() if c]
        return f"IndexExpr({' + '.join(parts + [str(self.const)])}, shape={self.shape})"


def _as_int(value, what: str) -> int:
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    raise NkiError(f"{what} must be an integer at trace time, got {type(value).__name__} {value!r}")


#: Clauses of a predicate whose truth was tested (see ``Predicate``).
_PENDING_CONJUNCTS: list = []


def arange(start, stop=None, step=1) -> IndexExpr:
    if stop is None:
        start, stop = 0, start
    start, stop, step = (_as_int(x, "arange's bounds") for x in (start, stop, step))
    count = len(range(start, stop, step))
    if count <= 0:
        raise NkiError(f"arange({start}, {stop}, {step}) is empty")
    var = _Var(count)
    return IndexExpr({var: step}, start, {var: 0}, 1)


class Predicate:
    """A conjunction of ``expr cmp 0``; ``&`` joins two.

    NKI reads a kernel's source, so ``(i < a) and (j < b)`` in a mask means both; Python
    evaluates it as the truth of the first, then the second alone. To mean what NKI means, the
    truth test of a predicate keeps its clauses, and the predicate made next (the right operand
    of that ``and``) takes them in.
    """

    __slots__ = ("clauses",)

    def __init__(self, clauses):
        pending = _PENDING_CONJUNCTS
        self.clauses = pending + list(clauses)
        pending.clear()

    def __bool__(self):
        _PENDING_CONJUNCTS.extend(self.clauses)
        return True

    def __and__(self, other):
        if isinstance(other, (bool, np.bool_)):
            # A condition known at trace time (a loop index against a bound): true keeps the
            # mask, false masks every element.
            return Predicate(self.clauses if other else self.clauses + [(_NEVER, "lt")])
        if not isinstance(other, Predicate):
            raise NkiError(f"a mask joins predicates on indices with &, got {other!r}")
        return Predicate(self.clauses + other.clauses)

    __rand__ = __and__

    def __or__(self, other):
        raise NkiError("a mask is a conjunction (&) of index predicates; | is not supported")


#: The expression 1: ``1 < 0`` is a clause no element satisfies (a mask ``& False``).
_NEVER = IndexExpr({}, 1, {}, 1)


class _Grid:
    """``nl.mgrid[0:128, 0:512]``: one expression per axis, as ``.p``, ``.x``, ``.y``, ``.z``."""

    def __init__(self, exprs):
        self.exprs = exprs

    def __iter__(self):
        return iter(self.exprs)

    def __len__(self):
        return len(self.exprs)

    def __getitem__(self, index):
        return self.exprs[index]

    def __getattr__(self, name):
        order = {"p": 0, "x": 1, "y": 2, "z": 3}
        if name in order and order[name] < len(self.exprs):
            return self.exprs[order[name]]
        raise AttributeError(name)


class _MGrid:
    def __getitem__(self, key) -> _Grid:
        if not isinstance(key, tuple):
            key = (key,)
        rank = len(key)
        exprs = []
        for axis, item in enumerate(key):
            if not isinstance(item, slice) or item.stop is None:
                raise NkiError(f"mgrid takes slices with bounds, like mgrid[0:128, 0:512], got {item!r}")
            start = item.start or 0
            step = item.step or 1
            expr = arange(start, item.stop, step)
            var = next(iter(expr.terms))
            exprs.append(IndexExpr(expr.terms, expr.const, {var: axis}, rank))
        return _Grid(exprs)


mgrid = _MGrid()


class DSlice:
    """``nl.ds(start, size)``: a dynamic-looking slice; at trace time ``start`` is known."""

    __slots__ = ("start", "size")

    def __init__(self, start, size):
        self.start = _as_int(start, "ds's start")
        self.size = _as_int(size, "ds's size")

    def as_slice(self) -> slice:
        return slice(self.start, self.start + self.size)


# ---------------------------------------------------------------------------------------------
# Tensors and views


class Tensor:
    """A tensor of the kernel: an argument, a result, or a tile on chip."""

    def __init__(self, trace: "Trace", tid: int, shape, dtype, buffer: Buffer, name: str):
        self._trace = trace
        self._id = tid
        self._shape = tuple(int(d) for d in shape)
        self._dtype = dtype
        self._buffer = buffer
        self.name = name

    # what kernels read ---------------------------------------------------------------------
    @property
    def shape(self) -> tuple:
        return self._shape

    @property
    def dtype(self):
        return self._dtype

    @property
    def buffer(self) -> Buffer:
        return self._buffer

    @property
    def ndim(self) -> int:
        return len(self._shape)

    def __len__(self):
        return self._shape[0]

    def full_view(self) -> "View":
        strides = []
        step = 1
        for dim in reversed(self._shape):
            strides.append(step)
            step *= dim
        strides.reverse()
        return View(self, 0, [[s, d] for s, d in zip(strides, self._shape)])

    def __getitem__(self, key) -> "View":
        return self.full_view()[key]

    def __setitem__(self, key, value):
        self.full_view()[key] = value

    def view(self, dtype) -> "Tensor":
        dtype = _dt.canonical(dtype)
        if _dt.name(dtype) == _dt.name(self._dtype):
            return self
        raise NkiError(
            f"nrtsim does not model reinterpreting a {_dt.name(self._dtype)} tensor as {_dt.name(dtype)}"
        )

    def reshape(self, shape) -> "View":
        return self.full_view().reshape(shape)

    def broadcast_to(self, shape):
        from . import language

        return language.broadcast_to(self, shape)

    def ap(self, pattern, offset=0, dtype=None):
        raise NkiError("nrtsim does not model tensor.ap (explicit access patterns) yet")

    # tile arithmetic ----------------------------------------------------------------------
    def __iadd__(self, other):
        return self.full_view().__iadd__(other) and self

    def __repr__(self):
        return f"Tensor({self.name}, {self._shape}, {_dt.name(self._dtype)}, {self._buffer.name})"


def _arith(op_name):
    def forward(self, other):
        from . import language

        return getattr(language, op_name)(self, other)

    def backward(self, other):
        from . import language

        return getattr(language, op_name)(other, self)

    return forward, backward


for _name, _op in (
    ("add", "add"),
    ("sub", "subtract"),
    ("mul", "multiply"),
    ("truediv", "divide"),
    ("pow", "power"),
    ("and", "bitwise_and"),
    ("or", "bitwise_or"),
    ("xor", "bitwise_xor"),
    ("lshift", "left_shift"),
    ("rshift", "right_shift"),
    ("mod", "mod"),
):
    _f, _b = _arith(_op)
    setattr(Tensor, f"__{_name}__", _f)
    setattr(Tensor, f"__r{_name}__", _b)

for _name, _op in (("lt", "less"), ("le", "less_equal"), ("gt", "greater"), ("ge", "greater_equal")):
    setattr(Tensor, f"__{_name}__", _arith(_op)[0])
Tensor.__neg__ = lambda self: __import__("nrtsim_nki.language", fromlist=["x"]).negative(self)


class View:
    """An access pattern over a tensor: offset and ``[stride, count]`` per axis.

    ``ind`` is an indirect axis: ``(axis, index_view)``.
    """

    __slots__ = ("tensor", "off", "dims", "ind")

    def __init__(self, tensor: Tensor, off: int, dims, ind=None):
        self.tensor = tensor
        self.off = off
        self.dims = dims
        self.ind = ind

    @property
    def shape(self) -> tuple:
        return tuple(c for _, c in self.dims)

    @property
    def dtype(self):
        return self.tensor.dtype

    @property
    def buffer(self) -> Buffer:
        return self.tensor.buffer

    @property
    def ndim(self) -> int:
        return len(self.dims)

    def __len__(self):
        return self.dims[0][1]

    def ap_json(self) -> dict:
        out = {"t": self.tensor._id, "off": self.off, "ap": [list(d) for d in self.dims]}
        if self.ind is not None:
            axis, index = self.ind
            out["ind"] = {"dim": axis, "index": index.ap_json()}
        return out

    def with_shape(self, shape) -> "View":
        """This view broadcast to ``shape``: size-1 axes get stride 0.

        A tile's first axis is its partition axis, so a lower-rank tile whose axes fit the leading
        axes of ``shape`` (a per-partition vector ``[P]`` against ``[P, F]``) extends to the right;
        any other extends to the left, as numpy's broadcasting does.
        """
        shape = tuple(shape)
        if self.shape == shape:
            return self
        fitted = self._fit(shape)
        if fitted is not None:
            return fitted
        pad = len(shape) - len(self.dims)
        if pad < 0:
            raise NkiError(f"cannot broadcast a tile of shape {self.shape} to {shape}")
        own = [list(d) for d in self.dims]
        right = pad > 0 and own[0][1] == shape[0] and all(c in (1, w) for (_, c), w in zip(own, shape))
        dims = own + [[0, 1]] * pad if right else [[0, 1]] * pad + own
        out = []
        for (stride, count), want in zip(dims, shape):
            if count == want:
                out.append([stride, count])
            elif count == 1:
                out.append([0, want])
            else:
                raise NkiError(f"cannot broadcast a tile of shape {self.shape} to {shape}")
        ind = None
        if self.ind is not None:
            axis, index = self.ind
            index_dims = [list(d) for d in index.dims]
            # The index keeps count 1 where it does not vary: the executor broadcasts it.
            index_dims = index_dims + [[0, 1]] * pad if right else [[0, 1]] * pad + index_dims
            ind = (axis if right else axis + pad, View(index.tensor, index.off, index_dims))
        return View(self.tensor, self.off, out, ind)

    def _fit(self, shape):
        """This view with axes of one element added or dropped to have ``shape``, if that is all
        that differs (``[P]`` as ``[P, 1]``, ``[1, 1]`` as ``[1]``); else None."""
        if self.ind is not None:
            return None
        mine = [d for d in self.dims if d[1] != 1]
        if [c for _, c in mine] != [c for c in shape if c != 1]:
            return None
        taken = iter(mine)
        return View(self.tensor, self.off, [[0, 1] if c == 1 else list(next(taken)) for c in shape])

    def reshape(self, shape) -> "View":
        shape = tuple(int(s) for s in shape)
        if int(np.prod(shape)) != int(np.prod(self.shape)):
            raise NkiError(f"cannot reshape a tile of shape {self.shape} to {shape}")
        if not self._contiguous():
            raise NkiError("nrtsim reshapes only contiguous views")
        strides = []
        step = 1
        for dim in reversed(shape):
            strides.append(step)
            step *= dim
        strides.reverse()
        return View(self.tensor, self.off, [[s, d] for s, d in zip(strides, shape)])

    def _contiguous(self) -> bool:
        step = 1
        for stride, count in reversed(self.dims):
            if count != 1 and stride != step:
                return False
            step *= count
        return self.ind is None

    # indexing -------------------------------------------------------------------------------
    def __getitem__(self, key) -> "View":
        return _index(self, key)

    def __setitem__(self, key, value):
        target = _index(self, key)
        current_trace().assign(target, value)

    def __iadd__(self, other):
        current_trace().accumulate(self, other)
        return self

    def broadcast_to(self, shape):
        from . import language

        return language.broadcast_to(self, shape)

    def __repr__(self):
        return f"View({self.tensor.name}, off={self.off}, ap={self.dims})"


for _name in dir(Tensor):
    if _name.startswith("__") and _name[2:-2] in (
        "add radd sub rsub mul rmul truediv rtruediv pow rpow and rand or ror xor rxor lshift "
        "rlshift rshift rrshift mod rmod lt le gt ge neg"
    ).split():
        setattr(View, _name, getattr(Tensor, _name))


def as_view(value) -> View:
    if isinstance(value, View):
        return value
    if isinstance(value, Tensor):
        return value.full_view()
    raise NkiError(f"expected a tile or tensor, got {type(value).__name__} {value!r}")


def is_tile(value) -> bool:
    return isinstance(value, (View, Tensor))


def _slice_bounds(item: slice, count: int):
    """A slice's start, stop and step on an axis of ``count``, not clamped to the axis: in NKI a
    slice is as long as it says (``a[256:384]`` of 288 rows is 128 rows), and what reaches past
    the tensor is the executor's to refuse, element by element, unless a mask keeps it out.
    Negative bounds count from the end, and a missing bound is the axis's end, as in Python."""
    step = _as_int(item.step, "a slice's step") if item.step is not None else 1
    if step <= 0:
        raise NkiError(f"a slice's step must be positive, got {step}")
    start = _as_int(item.start, "a slice's start") if item.start is not None else 0
    stop = _as_int(item.stop, "a slice's stop") if item.stop is not None else count
    if start < 0:
        start += count
    if stop < 0:
        stop += count
    return start, stop, step


def _index(view: View, key) -> View:
    if view.ind is not None:
        raise NkiError("nrtsim does not index a view with an indirect axis again")
    if isinstance(key, _Grid):
        key = tuple(key.exprs)
    if not isinstance(key, tuple):
        key = (key,)
    # Ellipsis and missing trailing axes become full slices.
    if any(k is Ellipsis for k in key):
        at = next(i for i, k in enumerate(key) if k is Ellipsis)
        fill = len(view.dims) - (len(key) - 1)
        key = key[:at] + (slice(None),) * fill + key[at + 1 :]
    if len(key) > len(view.dims):
        # A per-partition vector [P] indexes as the [P, 1] tile it stands for.
        extra = key[len(view.dims):]
        if all(k == slice(None) or (isinstance(k, (int, np.integer)) and k == 0) for k in extra):
            view = View(view.tensor, view.off, [list(d) for d in view.dims] + [[0, 1]] * len(extra), view.ind)
        else:
            raise NkiError(f"too many indices ({len(key)}) for a tile of rank {len(view.dims)}")
    key = key + (slice(None),) * (len(view.dims) - len(key))
    key = tuple(k.as_slice() if isinstance(k, DSlice) else k for k in key)
    if len(key) == 1 and isinstance(key[0], _Grid):
        key = tuple(key[0].exprs)
    advanced = any(isinstance(k, (IndexExpr, View, Tensor)) for k in key)
    if not advanced:
        off = view.off
        dims = []
        for (stride, count), item in zip(view.dims, key):
            if isinstance(item, slice):
                start, stop, step = _slice_bounds(item, count)
                n = len(range(start, stop, step))
                if n <= 0:
                    raise NkiError(f"the slice {item} of an axis of size {count} is empty")
                off += start * stride
                dims.append([stride * step, n])
            else:
                i = _as_int(item, "an index")
                if i < 0:
                    i += count
                if not 0 <= i < count:
                    raise NkiError(f"index {item} is out of bounds for an axis of size {count}")
                off += i * stride
                # An integer before every slice selects a block and drops its axis; one after a
                # slice picks a column of the tile and keeps it, as one element (tile[:, 0] is
                # [P, 1], the per-partition scalar NKI's instructions take).
                if dims:
                    dims.append([stride, 1])
        if not dims:
            dims = [[1, 1]]
        return View(view.tensor, off, dims)
    # Advanced: every non-integer item becomes an expression over the result's axes.
    nonint = [k for k in key if not isinstance(k, (int, np.integer))]
    rank = max(
        [k.rank for k in key if isinstance(k, IndexExpr)]
        + [as_view(k).ndim for k in key if isinstance(k, (View, Tensor))]
        + [len(nonint)]
    )
    exprs = []
    slot = 0
    for (stride, count), item in zip(view.dims, key):
        if isinstance(item, slice):
            start, stop, step = _slice_bounds(item, count)
            expr = arange(start, stop, step)
            var = next(iter(expr.terms))
            axis = slot + rank - len(nonint)
            exprs.append(IndexExpr(expr.terms, expr.const, {var: axis}, rank))
            slot += 1
        elif isinstance(item, IndexExpr):
            exprs.append(item[(None,) * (rank - item.rank) + (slice(None),) * item.rank] if item.rank < rank else item)
            slot += 1
        elif isinstance(item, (View, Tensor)):
            exprs.append(as_view(item))
            slot += 1
        else:
            exprs.append(_as_int(item, "an index"))
    shape = [1] * rank
    for e in exprs:
        if isinstance(e, IndexExpr):
            for axis, n in enumerate(e.shape):
                if n != 1:
                    if shape[axis] not in (1, n):
                        raise NkiError(f"index expressions of extents {shape[axis]} and {n} share an axis")
                    shape[axis] = n
        elif isinstance(e, View):
            eshape = (1,) * (rank - e.ndim) + e.shape
            for axis, n in enumerate(eshape):
                if n != 1:
                    if shape[axis] not in (1, n):
                        raise NkiError(f"an index tile of shape {e.shape} does not fit the index shape {shape}")
                    shape[axis] = n
    off = view.off
    strides = [0] * rank
    ind = None
    for (stride, count), e in zip(view.dims, exprs):
        if isinstance(e, int):
            if not 0 <= e < count:
                raise NkiError(f"index {e} is out of bounds for an axis of size {count}")
            off += e * stride
        elif isinstance(e, IndexExpr):
            # Bounds are the executor's to check, element by element: a mask may keep an
            # expression that reaches past the axis from touching memory.
            off += e.const * stride
            for var, coef in e.terms.items():
                strides[e.axes[var]] += coef * stride
        else:  # an index tile: an indirect axis
            if ind is not None:
                raise NkiError("nrtsim models one indirect axis per access")
            if e.ndim > rank:
                raise NkiError(f"an index tile of rank {e.ndim} is deeper than the index shape")
            index = View(e.tensor, e.off, [[0, 1]] * (rank - e.ndim) + [list(d) for d in e.dims])
            # The indirect axis is the result axis the index tile lies along (its first axis of
            # more than one value); the index tile's value replaces that axis's own term.
            axes = [a for a, (_, n) in enumerate(index.dims) if n != 1]
            axis = axes[0] if axes else 0
            if strides[axis] != 0:
                raise NkiError("an indirect axis cannot also carry an index expression")
            strides[axis] = stride
            ind = (axis, index)
    dims = [[s, n] for s, n in zip(strides, shape)]
    return View(view.tensor, off, dims, ind)


# ---------------------------------------------------------------------------------------------
# The trace


_CURRENT: list = []


def current_trace() -> "Trace":
    if not _CURRENT:
        raise NkiError("NKI operations run only inside a kernel (call it through nki.jit)")
    return _CURRENT[-1]


_IN_PACKAGE: dict = {}


def _in_package(filename: str) -> bool:
    """Whether code of ``filename`` is this package's (remembered per file name)."""
    known = _IN_PACKAGE.get(filename)
    if known is None:
        known = os.path.abspath(filename).startswith(PACKAGE_DIR + os.sep)
        _IN_PACKAGE[filename] = known
    return known


class Trace:
    """The program being recorded for one kernel call."""

    def __init__(self, name: str, file: str, line: int, target: str, grid, seed: int = 0):
        self.name = name
        self.file = file
        self.line = line
        self.target = target
        self.grid = list(grid)
        self.seed = seed
        self.files: list = []
        self._file_index: dict = {}
        self.tensors: list = []
        self.tensor_objects: list = []
        self.inputs: list = []
        self.outputs: list = []
        # Instructions already final, each as its JSON text (a large kernel has millions, so
        # they are not kept as dicts), then the last one, a dict: a later assignment may still
        # retarget it (see ``take_fresh``).
        self._encoded: list = []
        self._last: Optional[dict] = None
        #: The tensors some instruction writes (a destination), by id.
        self.written: set = set()
        #: Constant data (``nl.shared_constant``), passed as extra inputs after the arguments.
        self.constants: list = []
        self.program_id: tuple = ()
        self.grid_shape: tuple = ()
        # Shared HBM tensors of program 0, by allocation order, reused by the other programs.
        self._shared: list = []
        self._shared_cursor = 0
        # The fresh result of the last instruction: (tensor, instruction index).
        self._fresh: Optional[tuple] = None
        # The PSUM accesses matmuls wrote in the current accumulation groups, by tensor id, for
        # nc_matmul's inferred accumulation.
        self._matmul_targets: dict = {}

    # locations ----------------------------------------------------------------------------
    def loc(self) -> list:
        frame = sys._getframe(1)
        while frame is not None and _in_package(frame.f_code.co_filename):
            frame = frame.f_back
        if frame is None:
            return [self._file(self.file), self.line]
        return [self._file(frame.f_code.co_filename), frame.f_lineno]

    def _file(self, path: str) -> int:
        if path not in self._file_index:
            self._file_index[path] = len(self.files)
            self.files.append(path)
        return self._file_index[path]

    # tensors ------------------------------------------------------------------------------
    def new_tensor(self, shape, dtype, buffer: Buffer, name: str = "", role: str = "scratch") -> Tensor:
        marked = [axis for axis, d in enumerate(shape) if isinstance(d, ParDim)]
        par = marked[0] if marked else 0
        shape = tuple(int(d) for d in shape)
        if not shape:
            shape = (1,)
        for d in shape:
            if d <= 0:
                raise NkiError(f"a tensor's dimensions must be positive, got shape {shape}")
        dtype = _dt.canonical(dtype)
        if buffer.on_chip and shape[par] > 128:
            raise NkiError(
                f"the partition dimension of a {buffer.name} tile is at most 128, got shape {shape}"
            )
        if buffer.name == "shared_hbm" and self.program_id and any(self.program_id) and role == "scratch":
            if self._shared_cursor < len(self._shared):
                tensor = self._shared[self._shared_cursor]
                self._shared_cursor += 1
                if tensor.shape != shape or _dt.name(tensor.dtype) != _dt.name(dtype):
                    raise NkiError("the SPMD programs allocate different shared_hbm tensors")
                return tensor
        tid = len(self.tensors)
        name = name or f"t{tid}"
        record = {"name": name, "dtype": _dt.name(dtype), "shape": list(shape), "buffer": buffer.name}
        if par:
            record["par"] = par
        tiles = getattr(buffer, "tiles", None)
        if tiles is not None and par:
            record["blocks"] = tiles
        if getattr(buffer, "placed", False):
            record["placed"] = True
        record["loc"] = self.loc()
        self.tensors.append(record)
        tensor = Tensor(self, tid, shape, dtype, buffer, name)
        self.tensor_objects.append(tensor)
        if buffer.name == "shared_hbm" and role == "scratch" and not any(self.program_id):
            self._shared.append(tensor)
        return tensor

    def matmul_written(self, target: "View") -> bool:
        """Whether a matmul already wrote ``target`` (the same PSUM access) in the current
        accumulation group; records that one now does. A group ends when an instruction reads
        the tile (its result is used) or a new SPMD program starts: the first matmul of a group
        overwrites, the next ones accumulate, as NKI's compiler infers ``accumulate``."""
        key = (target.off, tuple(tuple(d) for d in target.dims))
        accesses = self._matmul_targets.setdefault(target.tensor._id, set())
        seen = key in accesses
        accesses.add(key)
        return seen

    def start_program(self, program_id: tuple):
        self.program_id = program_id
        self._matmul_targets = {}
        self._shared_cursor = 0
        self._fresh = None

    # instructions -------------------------------------------------------------------------
    def emit(self, opcode: str, engine: str, fresh: Optional[Tensor] = None, **fields) -> dict:
        self._flush()
        instruction = {"op": opcode, "engine": engine, "loc": self.loc()}
        for key, value in fields.items():
            instruction[key] = value
        if self._matmul_targets:
            # Reading a PSUM tile ends its accumulation group: the next matmul into it
            # overwrites (see ``matmul_written``).
            read: set = set()
            _collect_read(instruction, read)
            for tensor_id in read:
                self._matmul_targets.pop(tensor_id, None)
        self._last = instruction
        self._fresh = (fresh, self.count - 1) if fresh is not None else None
        return instruction

    @property
    def count(self) -> int:
        """The number of instructions recorded."""
        return len(self._encoded) + (self._last is not None)

    def _flush(self) -> None:
        if self._last is not None:
            _collect_written(self._last, self.written)
            self._encoded.append(json.dumps(finite(self._last), separators=(",", ":")))
            self._last = None

    @property
    def instructions(self) -> list:
        """The instructions as dicts (for tests and small kernels: it decodes every one)."""
        done = [json.loads(text) for text in self._encoded]
        return done + ([self._last] if self._last is not None else [])

    def take_fresh(self, value) -> Optional[dict]:
        """The instruction that made ``value``, if ``value`` is a whole fresh tile nobody read."""
        if self._fresh is None or not isinstance(value, Tensor):
            return None
        tensor, index = self._fresh
        if tensor is not value or index != self.count - 1 or self._last is None:
            return None
        return self._last

    def assign(self, target: View, value):
        """``target[...] = value``: a store, a copy or a broadcast fill."""
        from . import language

        if isinstance(value, language._LoopReduce):
            language._binary_into(target, target, value.x, language.alu_name(value.op), value.mask)
            return
        if not is_tile(value):
            if isinstance(value, (int, float, np.number, bool)):
                from .language import number

                self.emit("memset", _engine_for(target), dst=target.ap_json(), value=number(value))
                return
            raise NkiError(f"cannot assign {type(value).__name__} to a tile")
        if isinstance(value, View) and (value.tensor, value.off, value.dims, value.ind) == (
            target.tensor, target.off, target.dims, target.ind
        ):
            # ``tile[i] += x`` stores tile[i] back into itself after the in-place add: nothing
            # to do (a copy would read the tile and end a PSUM accumulation group).
            return
        fresh = self.take_fresh(value)
        if (
            fresh is not None
            and tuple(value.shape) == target.shape
            and "dst" in fresh
            and (fresh["op"] != "matmul" or target.buffer.name == "psum")
        ):
            fresh["dst"] = target.ap_json()
            self._fresh = None
            return
        language._copy_into(target, as_view(value).with_shape(target.shape))

    def accumulate(self, target: View, value):
        """``psum_tile += value``: a matmul accumulates in place, anything else adds."""
        fresh = self.take_fresh(value)
        if fresh is not None and fresh["op"] == "matmul" and tuple(value.shape) == target.shape:
            fresh["dst"] = target.ap_json()
            # The first matmul of an accumulation group starts it (a fresh PSUM tile need not
            # be zeroed first), the next ones add to it.
            fresh["accumulate"] = self.matmul_written(target)
            self._fresh = None
            return
        from . import language

        language._binary_into(target, target, value, "add")

    def _header(self) -> dict:
        return {
            "format": FORMAT,
            "version": VERSION,
            "kernel": {"name": self.name, "file": self.file, "line": self.line},
            "target": self.target,
            "grid": self.grid,
            "seed": self.seed,
            "files": self.files,
            "tensors": self.tensors,
            "inputs": self.inputs,
            "outputs": self.outputs,
        }

    def document(self) -> dict:
        """The program as a dict (decodes every instruction: for tests and small kernels)."""
        document = self._header()
        document["instructions"] = self.instructions
        return document

    def document_json(self) -> str:
        """The program as JSON text, the instructions joined as they were encoded."""
        self._flush()
        header = json.dumps(finite(self._header()), separators=(",", ":"))
        return header[:-1] + ',"instructions":[' + ",".join(self._encoded) + "]}"


def _collect_read(value, found: set, key=None) -> None:
    """The tensor ids an instruction reads: every access pattern but its destinations."""
    if isinstance(value, dict):
        if "t" in value and key not in ("dst", "dst_idx", "reduce_res"):
            found.add(value["t"])
        for k, v in value.items():
            if k not in ("dst", "dst_idx", "reduce_res"):
                _collect_read(v, found, k)
    elif isinstance(value, list):
        for v in value:
            _collect_read(v, found, key)


def _collect_written(value, found: set, key=None) -> None:
    """The tensor ids an instruction writes: its ``dst``, ``dst_idx`` and ``reduce_res`` access
    patterns, also inside nested operands (an activation's ``reduce``)."""
    if isinstance(value, dict):
        if key in ("dst", "dst_idx", "reduce_res") and "t" in value:
            found.add(value["t"])
        for k, v in value.items():
            _collect_written(v, found, k)
    elif isinstance(value, list):
        for v in value:
            _collect_written(v, found, key)


def finite(value):
    """``value`` (a program document) with every non-finite float as the string the program
    format uses (``"inf"``, ``"-inf"``, ``"nan"``), since JSON has none."""
    if isinstance(value, float):
        if value != value:
            return "nan"
        if value in (float("inf"), float("-inf")):
            return "inf" if value > 0 else "-inf"
        return value
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite(v) for v in value]
    return value


def _engine_for(view: View) -> str:
    return "gpsimd" if view.buffer.on_chip else "dma"
