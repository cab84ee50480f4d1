"""nrtsim's NKI: run Neuron Kernel Interface kernels on a laptop, on nrtsim's simulated device.

Imported as ``nki`` or ``neuronxcc.nki`` when no real NKI is installed (see ``finder``). A kernel
is traced as NKI traces it (its Python runs once per SPMD program) into a program of instructions
on tiles (``docs/nki-program.md`` in nrtsim), which nrtsim's executor runs. The executor checks
what the device does not: tiles over 128 partitions, SBUF and PSUM over capacity, accesses out of
bounds, reads of memory nothing wrote, and outputs left partly unwritten.

    import numpy as np
    import nki, nki.language as nl

    @nki.jit
    def add(a, b):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.add(nl.load(a), nl.load(b)))
        return out

    add(np.ones((128, 512), np.float32), np.ones((128, 512), np.float32))
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
import warnings

import numpy as np

from . import _core, _run, compiler, dtypes, isa, language, typing  # noqa: F401
from ._core import NkiError

__all__ = [
    "jit", "trace", "simulate", "simulate_kernel", "baremetal", "benchmark", "profile",
    "language", "isa", "typing", "compiler", "NkiError", "NkiWarning", "tile_size",
]

tile_size = language.tile_size

NOTICE = (
    "nki: this is nrtsim's NKI simulator (the nrtsim-nki package), not AWS's; kernels run on "
    "nrtsim's executor"
)
_announced = False


def _announce() -> None:
    global _announced
    if not _announced:
        _announced = True
        if os.environ.get("NRTSIM_QUIET") != "1":
            print(NOTICE, file=sys.stderr, flush=True)


class NkiWarning(UserWarning):
    """What the executor found that the device would not report (an unwritten output, a read
    of memory no instruction wrote). ``NRTSIM_NKI_STRICT=1`` makes them errors."""


_TARGETS = {"trn1": "trn1", "inf2": "trn1", "gen2": "trn1", "trn2": "trn2", "gen3": "trn2",
            "trn3": "trn3", "gen4": "trn3"}


def _target(requested) -> str:
    value = os.environ.get("NEURON_PLATFORM_TARGET_OVERRIDE") or requested or "trn3"
    key = str(value).lower()
    if key not in _TARGETS:
        raise NkiError(f"unknown platform target {value!r}: expected one of {', '.join(_TARGETS)}")
    return _TARGETS[key]


class Kernel:
    """A kernel function with its launch options; call it with numpy arrays to run it."""

    def __init__(self, func, mode="auto", platform_target=None, grid=(), **options):
        if isinstance(func, Kernel):
            func = func.func
        self.func = func
        self.mode = mode
        self.platform_target = platform_target
        self.grid = tuple(grid)
        self.options = options
        #: The executor's report of the last run: ``stats``, ``warnings``, ``prints``.
        self.last_report = None
        self.benchmark_result = None
        functools.update_wrapper(self, func)

    def summary(self) -> str:
        """The last run's summary: instructions per engine, DMA bytes, peak SBUF and PSUM use,
        and the warnings (``last_report`` holds the same as data)."""
        if self.last_report is None:
            return f"{self.func.__name__}: not run yet"
        stats = self.last_report.get("stats", {})
        engines = stats.get("instructions_per_engine", {})
        lines = [
            f"{self.func.__name__}: {stats.get('instructions', 0)} instructions "
            f"({', '.join(f'{name} {count}' for name, count in sorted(engines.items()))})",
            f"  DMA {stats.get('dma_bytes', 0)} bytes; peak per partition: SBUF "
            f"{stats.get('peak_sbuf_bytes_per_partition', 0)} bytes, PSUM "
            f"{stats.get('peak_psum_bytes_per_partition', 0)} bytes",
        ]
        for warning in self.last_report.get("warnings", []):
            lines.append(f"  warning: {warning.get('loc', '')}: {warning.get('message', '')}")
        return "\n".join(lines)

    # what frameworks call to embed the kernel in a graph (nrtsim_nki.framework) -------------
    @property
    def opts(self):
        from .framework import Options

        return self.__dict__.setdefault("_opts", Options())

    @opts.setter
    def opts(self, value):
        self.__dict__["_opts"] = value

    def bind_arguments(self, **arguments):
        from .framework import bound_arguments

        return bound_arguments(self, **arguments)

    def dump_config_with_boundargs(self, boundargs):
        from .framework import config_for

        return config_for(self, boundargs.args, boundargs.kwargs)

    def dump_config(self, *args, **kwargs):
        from .framework import config_for

        return config_for(self, args, kwargs)

    def __getitem__(self, grid) -> "Kernel":
        if not isinstance(grid, tuple):
            grid = (grid,)
        kernel = Kernel(self.func, self.mode, self.platform_target, grid, **self.options)
        return kernel

    def __call__(self, *args, **kwargs):
        if _core._CURRENT:
            # A kernel called from a kernel being traced is part of it, as in NKI.
            return self.func(*args, **kwargs)
        return self.run(args, kwargs)

    # tracing --------------------------------------------------------------------------------
    def trace(self, args, kwargs):
        """Traces the kernel for ``args``; returns (trace, input arrays, input tensors)."""
        _announce()
        code = self.func.__code__
        seed = int(os.environ.get("NRTSIM_NKI_SEED", "0"))
        sizes = tuple(language.grid_size(g) for g in self.grid)
        trace = _core.Trace(self.func.__name__, code.co_filename, code.co_firstlineno,
                            _target(self.platform_target), list(sizes), seed)
        trace.grid_shape = sizes
        try:
            bound = inspect.signature(self.func).bind(*args, **kwargs)
        except TypeError as error:
            raise TypeError(f"{self.func.__name__}: {error}") from None
        arrays = []
        tensors = []
        call_args = {}
        _core._CURRENT.append(trace)
        try:
            for name, value in bound.arguments.items():
                if isinstance(value, np.ndarray) or _is_torch(value):
                    array = _to_numpy(value)
                    tensor = trace.new_tensor(array.shape or (1,), array.dtype, _core.SHARED_HBM, name, role="input")
                    trace.inputs.append(tensor._id)
                    arrays.append(array)
                    tensors.append((value, tensor))
                    call_args[name] = tensor
                else:
                    call_args[name] = value
            result = None
            ids = [()] if not sizes else list(np.ndindex(*sizes))
            func = _with_buffer_names(self.func)
            for index, pid in enumerate(ids):
                trace.start_program(tuple(int(i) for i in pid))
                returned = func(**call_args)
                if index == 0:
                    result = returned
        finally:
            _core._CURRENT.pop()
        return trace, arrays, tensors, result

    def run(self, args, kwargs):
        trace, arrays, tensors, result = self.trace(args, kwargs)
        returned = _returned_tensors(trace, result, self.func.__name__)
        for tensor in returned:
            trace.outputs.append(tensor._id)
        trace._flush()
        written_inputs = [(v, t) for v, t in tensors if t._id in trace.written
                          and t._id not in trace.outputs]
        trace.outputs.extend(t._id for _, t in written_inputs)
        strict = os.environ.get("NRTSIM_NKI_STRICT") == "1"
        outputs, report = _run.run(trace.document_json(), trace.tensors, trace.outputs,
                                   arrays + trace.constants, strict=strict)
        self.last_report = report
        if self.mode == "benchmark":
            self.benchmark_result = BenchmarkResult(report)
        _relay(report)
        if os.environ.get("NRTSIM_NKI_SUMMARY") == "1":
            print(self.summary(), file=sys.stderr)
        by_id = dict(zip(trace.outputs, outputs))
        for value, tensor in written_inputs:
            _copy_back(value, by_id[tensor._id])
        values = [by_id[t._id] for t in returned]
        values = [_like_inputs(v, tensors) for v in values]
        if result is None:
            return None
        if isinstance(result, (tuple, list)):
            return type(result)(values) if isinstance(result, tuple) else values
        return values[0]


def _flatten(result):
    if result is None:
        return []
    if isinstance(result, (tuple, list)):
        out = []
        for item in result:
            out.extend(_flatten(item))
        return out
    return [result]


#: The names NKI's beta 2 kernels use without importing them (the frontend reads the kernel's
#: source and provides them): the memory regions, whose ``view`` allocates.
_BUFFER_NAMES = {"sbuf": _core.SBUF, "psum": _core.PSUM, "hbm": _core.HBM,
                 "shared_hbm": _core.SHARED_HBM, "private_hbm": _core.PRIVATE_HBM}


def _with_buffer_names(func):
    """``func`` seeing the buffer names its module does not define itself."""
    import types

    missing = {k: v for k, v in _BUFFER_NAMES.items()
               if k in func.__code__.co_names and k not in func.__globals__}
    if not missing:
        return func
    scope = dict(func.__globals__)
    scope.update(missing)
    wrapped = types.FunctionType(func.__code__, scope, func.__name__, func.__defaults__, func.__closure__)
    wrapped.__kwdefaults__ = func.__kwdefaults__
    return wrapped


class BenchmarkResult:
    """What ``nki.benchmark`` leaves on a kernel after a run. nrtsim models no timing, so there
    is no latency to report: ``nc_latency`` says so, and ``report`` has the executor's counts."""

    def __init__(self, report):
        self.report = report

    @property
    def nc_latency(self):
        raise NkiError(
            "nrtsim's NKI has no timing model, so a benchmark has no latency; the kernel's "
            "last_report (or summary()) has its instructions per engine and DMA bytes"
        )


def _returned_tensors(trace, result, name):
    """The kernel's results as tensors in device memory, in order."""
    return [_to_device_memory(trace, value, name) for value in _flatten(result)]


def _to_device_memory(trace, value, name):
    """A returned tensor in device memory: an on-chip tile (or a view) is copied to a new one,
    as the result of a kernel lives in HBM."""
    if isinstance(value, _core.Tensor) and not value.buffer.on_chip:
        return value
    if not _core.is_tile(value):
        raise NkiError(f"{name} returns {type(value).__name__}; a kernel returns tensors")
    view = _core.as_view(value)
    _core._CURRENT.append(trace)
    try:
        out = trace.new_tensor(view.shape, view.dtype, _core.SHARED_HBM, role="result")
        language._copy_into(out, view, engine="dma")
    finally:
        _core._CURRENT.pop()
    return out


def _is_torch(value) -> bool:
    return type(value).__module__.startswith("torch") and hasattr(value, "numpy")


def _to_numpy(value) -> np.ndarray:
    if isinstance(value, np.ndarray):
        array = value
    else:
        array = value.detach().cpu().numpy()
    if array.dtype == np.float64:
        raise NkiError("NKI has no float64: pass float32 (or a narrower type)")
    dtypes.name(array.dtype)
    return array


def _copy_back(value, array):
    if isinstance(value, np.ndarray):
        if value.flags.writeable:
            np.copyto(value, array.reshape(value.shape), casting="unsafe")
    else:
        import torch

        value.copy_(torch.from_numpy(array.reshape(tuple(value.shape))))


def _like_inputs(array, tensors):
    if tensors and _is_torch(tensors[0][0]):
        import torch

        return torch.from_numpy(array)
    return array


def _relay(report) -> None:
    for item in report.get("prints", []):
        values = np.array(item.get("values", [])).reshape(item.get("shape", [-1]))
        print(f"{item.get('label', '')} {values}")
    for warning in report.get("warnings", []):
        warnings.warn(f"{warning.get('loc', '')}: {warning.get('message', '')}", NkiWarning, stacklevel=4)


# ---------------------------------------------------------------------------------------------
# entry points


def jit(func=None, mode="auto", platform_target=None, **options):
    """Makes ``func`` an NKI kernel. With numpy (or torch CPU) arrays it runs on nrtsim's executor,
    whatever ``mode`` says (``simulation``, ``baremetal``, ``benchmark``, ``auto``)."""
    if func is None:
        return lambda f: Kernel(f, mode, platform_target, **options)
    return Kernel(func, mode, platform_target, **options)


trace = jit


def simulate_kernel(kernel, *args, **kwargs):
    """Runs ``kernel`` (a ``jit`` kernel or a plain function) on numpy arrays; returns its outputs."""
    if not isinstance(kernel, Kernel):
        kernel = Kernel(kernel, "simulation")
    return kernel(*args, **kwargs)


def simulate(kernel):
    """A callable running ``kernel`` on nrtsim's executor (``nki.simulate(k)(a, b)``)."""
    if not isinstance(kernel, Kernel):
        kernel = Kernel(kernel, "simulation")
    return kernel


def baremetal(kernel=None, **options):
    """As ``jit(mode="baremetal")``: here the device is nrtsim's."""
    return jit(kernel, mode="baremetal", **options)


def benchmark(kernel=None, **options):
    """As ``jit(mode="benchmark")``: runs the kernel; nrtsim has no timing model, so
    ``benchmark_result`` holds the executor's instruction counts and no latency."""
    return jit(kernel, mode="benchmark", **options)


def profile(kernel=None, **options):
    return jit(kernel, mode="profile", **options)


# The modules that name Kernel, imported once it exists.
from . import compile, framework  # noqa: E402,F401
