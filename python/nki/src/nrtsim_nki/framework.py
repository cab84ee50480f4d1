"""Kernels inside a framework's graph: the ``AwsNeuronCustomNativeKernel`` custom call.

A framework (nkipy, a JAX or torch integration) asks a kernel for its configuration for given
operands; the configuration carries the traced program (``docs/nki-program.md``) as the custom
call's ``backend_config``, which ``nrtsim compile`` accepts and the simulated runtime runs with no
Python at run time. The operands are the kernel's tensor arguments, then its constants; the
results are its returned tensors, then the arguments it writes, each such argument aliased to
its result.
"""

from __future__ import annotations

import contextlib
import dataclasses
import numpy as np

from . import _core, dtypes as _dt

#: The custom call target frameworks emit.
CUSTOM_CALL_TARGET = "AwsNeuronCustomNativeKernel"


@dataclasses.dataclass(frozen=True)
class Options:
    """Compilation options frameworks set (kept; they do not change the simulator's results)."""

    enable_const_rewrite: bool = False
    experimental_flags: str = ""


@dataclasses.dataclass
class KernelConfig:
    """What a framework needs to emit the custom call for one specialisation of a kernel."""

    #: The traced program, the custom call's ``backend_config``.
    dumped_config: str
    #: Each result's ``(dtype, shape)``, in order.
    return_types: list
    #: Constant operands (numpy arrays) that follow the tensor arguments.
    constant_values: list
    #: ``{argument index: result index}`` for each argument the kernel writes.
    operand_output_aliases: dict
    #: Whether the kernel returns a sequence (the custom call returns a tuple).
    result_is_sequence: bool
    #: nrtsim's kernels have no collectives.
    has_collectives: bool = False


def config_for(kernel, args, kwargs) -> KernelConfig:
    """Traces ``kernel`` (a ``Kernel``) for ``args``/``kwargs`` (numpy arrays or objects with
    ``shape`` and ``dtype``) and returns its configuration."""
    args = [_as_array(a) for a in args]
    kwargs = {k: _as_array(v) for k, v in kwargs.items()}
    trace, _arrays, tensors, result = kernel.trace(args, kwargs)
    from . import _returned_tensors

    returned = _returned_tensors(trace, result, kernel.func.__name__)
    trace.outputs.extend(t._id for t in returned)
    trace._flush()
    written = trace.written
    aliases = {}
    for index, (_, tensor) in enumerate(tensors):
        if tensor._id in trace.outputs:
            # An argument the kernel returns (a mutable tensor): its result is that memory.
            aliases[index] = trace.outputs.index(tensor._id)
        elif tensor._id in written:
            aliases[index] = len(trace.outputs)
            trace.outputs.append(tensor._id)
    text = trace.document_json()
    return_types = [
        (_dt.storage(trace.tensor_objects[tid].dtype), tuple(trace.tensor_objects[tid].shape))
        for tid in trace.outputs
    ]
    return KernelConfig(
        dumped_config=text,
        return_types=return_types,
        constant_values=list(trace.constants),
        operand_output_aliases=aliases,
        result_is_sequence=isinstance(result, (tuple, list)) or len(trace.outputs) > 1,
    )


def _as_array(value):
    """An operand as an array of its shape and dtype (a framework's tensor reference too)."""
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "shape") and hasattr(value, "dtype") and not _core.is_tile(value):
        return np.empty(tuple(value.shape), dtype=_dt.storage(value.dtype))
    return value


class UnifiedKernel:
    """A kernel traced for a framework: ``UnifiedKernel.trace(kernel, grid=...)``, then
    ``dump_config(*operands)``."""

    def __init__(self, func=None, grid=(), platform_target=None, **options):
        from . import Kernel

        self.kernel = Kernel(func, "trace", platform_target, grid) if func is not None else None
        self.opts = Options(experimental_flags=options.get("experimental_flags", "") or "")

    @classmethod
    def trace(cls, kernel, grid=(), kernel_return=True, experimental_flags="", enable_cache=False,
              platform_target=None, **options):
        return cls(kernel, grid=tuple(grid or ()), platform_target=platform_target,
                   experimental_flags=experimental_flags)

    def dump_config(self, *operands, **kwargs) -> KernelConfig:
        return config_for(self.kernel, operands, kwargs)


@contextlib.contextmanager
def bound_arguments(kernel, **arguments):
    """``kernel.bind_arguments(**arguments)``: the arguments, bound to the kernel's parameters."""
    import inspect

    bound = inspect.signature(kernel.func).bind(**arguments)
    bound.apply_defaults()
    yield bound
