"""``trace``: a torch function or module as a NEFF and metaneff run by ``forward_v2``.

What torch-neuronx's ``trace`` does, on nrtsim: torch-xla (on its CPU device) lowers the function
to an HLO module; the module's parameters that are not inputs (weights, buffers, constants made
during the call) go into a model folder beside it as ``.npy`` files, which the compile target
folds into the program, as neuronx-cc does with torch-neuronx's folder; the metaneff names the
remaining inputs ``input{i}`` and the outputs ``output{j}`` with torch-neuronx's dtype table;
and the result is a ScriptModule holding a ``torch.classes.neuron.Model`` that calls
``torch.ops.neuron.forward_v2``, saved and loaded with ``torch.jit.save``/``torch.jit.load``.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Union

import torch
from torch.utils import _pytree as pytree

# torch-neuronx's table from a torch element type to the metaneff's DataType.
_DATA_TYPES = {
    torch.float32: "FLOAT",
    torch.float64: "DOUBLE",
    torch.bfloat16: "BFLOAT16",
    torch.float16: "FLOAT16",
    torch.uint8: "UINT8",
    torch.int8: "INT8",
    torch.int16: "INT16",
    torch.int32: "INT32",
    torch.int64: "INT64",
    torch.bool: "BOOL",
}


def _tool() -> str:
    """The ``nrtsim`` executable: ``NRTSIM_TOOL``, the nrtsim wheel's, or ``nrtsim`` on PATH."""
    given = os.environ.get("NRTSIM_TOOL")
    if given:
        return given
    try:
        import nrtsim

        return str(nrtsim.tool())
    except (ImportError, FileNotFoundError):
        found = shutil.which("nrtsim")
        if found:
            return found
    raise RuntimeError(
        "nrtsim.torch.trace needs the nrtsim tool to compile: install the nrtsim wheel or set "
        "NRTSIM_TOOL"
    )


def _run(command: List[str], what: str) -> None:
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed ({' '.join(command)}):\n{done.stderr.strip()}")


def _data_type(tensor: torch.Tensor, what: str) -> str:
    try:
        return _DATA_TYPES[tensor.dtype]
    except KeyError:
        raise TypeError(
            f"{what} has dtype {tensor.dtype}, which a metaneff cannot carry (expected one of "
            f"{', '.join(str(d) for d in _DATA_TYPES)})"
        ) from None


def _meta_tensor(name: str, tensor: torch.Tensor, what: str, user: bool) -> Dict[str, Any]:
    entry: Dict[str, Any] = {
        "name": name,
        "shape": [int(d) for d in tensor.shape],
        "data_type": _data_type(tensor, what),
    }
    if user:
        entry["type"] = "USER_INPUT"
    return entry


def _save_npy(path: Path, tensor: torch.Tensor) -> None:
    import numpy as np

    tensor = tensor.detach().cpu().contiguous()
    if tensor.dtype == torch.bfloat16:
        # numpy has no bfloat16: two-byte void elements, as torch-neuronx writes them.
        array = tensor.view(torch.int16).numpy().view("|V2")
    else:
        array = tensor.numpy()
    np.save(path, array)


def _module_tensors(module: torch.nn.Module) -> Dict[str, torch.Tensor]:
    """A module's parameters and buffers by their dotted names (as they are now: the XLA
    device's while lowering)."""
    tensors = dict(module.named_parameters())
    tensors.update(dict(module.named_buffers()))
    return tensors


def _leaves(value: Any, what: str):
    leaves, spec = pytree.tree_flatten(value)
    for i, leaf in enumerate(leaves):
        if not isinstance(leaf, torch.Tensor):
            raise TypeError(f"{what} leaf {i} is a {type(leaf).__name__}, expected a tensor")
    return leaves, spec


class _Lowered:
    """What torch-xla made of one call: the module, and where each parameter comes from."""

    def __init__(self) -> None:
        self.hlo = b""
        # Per HLO parameter, in parameter order: ("input", flat index), ("state", state index)
        # or ("weight", the CPU tensor).
        self.parameters: List[tuple] = []
        self.outputs: List[torch.Tensor] = []
        self.out_spec = None


@contextlib.contextmanager
def _on_xla(module: Optional[torch.nn.Module]):
    """Moves `module` to the XLA device for the block and back to where it was afterwards."""
    if module is None:
        yield
        return
    devices = {t.device for t in list(module.parameters()) + list(module.buffers())}
    import torch_xla

    module.to(torch_xla.device())
    try:
        yield
    finally:
        module.to(devices.pop() if len(devices) == 1 else torch.device("cpu"))


def _lower(func, example: tuple, flat_inputs, in_spec, state_names: List[str]) -> _Lowered:
    os.environ.setdefault("PJRT_DEVICE", "CPU")
    try:
        import torch_xla
    except ImportError as error:
        raise RuntimeError(
            "nrtsim.torch.trace lowers with torch-xla, which is not installed (pip install "
            "torch-xla, the release matching your torch; its CPU wheels are for Linux x86_64)"
        ) from error
    xla = torch_xla._XLAC
    module = func if isinstance(func, torch.nn.Module) else None
    lowered = _Lowered()
    with _on_xla(module), torch.no_grad():
        device = torch_xla.device()
        xla_inputs = [t.detach().to(device) for t in flat_inputs]
        input_ids = {xla._xla_get_tensor_id(t): i for i, t in enumerate(xla_inputs)}
        state_ids = {}
        if module is not None:
            named = _module_tensors(module)
            for s, name in enumerate(state_names):
                state_ids[xla._xla_get_tensor_id(named[name])] = s
        result = func(*pytree.tree_unflatten(xla_inputs, in_spec))
        outputs, lowered.out_spec = _leaves(result, "the function's result")
        if not outputs:
            raise ValueError("the function returns no tensor, so there is nothing to compile")
        ids, values = xla._get_tensors_xla_device_data_node(outputs)
        lowered.hlo = xla._get_xla_tensors_hlo_proto(outputs)
        for tensor_id, value in zip(ids, values):
            if tensor_id in input_ids:
                lowered.parameters.append(("input", input_ids[tensor_id]))
            elif tensor_id in state_ids:
                lowered.parameters.append(("state", state_ids[tensor_id]))
            else:
                lowered.parameters.append(("weight", value.cpu()))
        lowered.outputs = [o.cpu() for o in outputs]
    return lowered


class _NeuronModule(torch.nn.Module):
    """The traced result: inputs in the NEFF's order, states appended, outputs packed back."""

    def __init__(self, neff: bytes, metaneff: bytes, sources, states, aliased, n_outputs, out_spec):
        super().__init__()
        self.model = torch.classes.neuron.Model(neff, metaneff)
        self.states = torch.nn.ParameterList(
            [torch.nn.Parameter(s.detach().clone(), requires_grad=False) for s in states]
        )
        self._sources = sources
        self._aliased = aliased
        self._n_outputs = n_outputs
        self._out_spec = out_spec

    def forward(self, *args):
        flat, _ = pytree.tree_flatten(args)
        inputs = [flat[i] if kind == "input" else self.states[i] for kind, i in self._sources]
        returned = torch.ops.neuron.forward_v2(inputs, self.model)
        # Outputs donated to a state are not returned (return_aliases is unset, as
        # torch-neuronx leaves it); the state holds the new value.
        returned = list(returned)
        outputs = []
        for j in range(self._n_outputs):
            state = self._aliased.get(j)
            outputs.append(self.states[state] if state is not None else returned.pop(0))
        return pytree.tree_unflatten(outputs, self._out_spec)


def trace(
    func: Union[Callable, torch.nn.Module],
    example_inputs: Any,
    *_,
    input_output_aliases: Dict = {},  # noqa: B006 (torch_neuronx.trace's signature)
    compiler_workdir: Optional[Union[str, os.PathLike]] = None,
    compiler_args: Optional[Union[List[str], str]] = None,
    **kwargs,
) -> torch.jit.ScriptModule:
    """Compiles ``func`` for nrtsim's device and returns a ScriptModule that runs it there.

    ``example_inputs`` is a tensor or a (nested) tuple of tensors. ``input_output_aliases`` maps
    a parameter or buffer of ``func`` (a module) to the index of the output that updates it: the
    returned module keeps it as a state, passed to the model at each call and updated in place.
    ``compiler_workdir`` keeps the model folder, NEFF and metaneff (a temporary folder
    otherwise); ``compiler_args`` go to the compiler as neuronx-cc's.
    """
    if _:
        raise TypeError(
            "trace takes func and example_inputs positionally and the rest by keyword "
            "(input_output_aliases=, compiler_workdir=, compiler_args=)"
        )
    if "partitioner_config" in kwargs:
        raise NotImplementedError(
            "partitioner_config (partitioning unsupported operators out to the CPU) is not "
            "modelled by nrtsim"
        )
    if kwargs:
        raise TypeError(f"unexpected keyword arguments: {sorted(kwargs)}")
    example = example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)
    flat_inputs, in_spec = _leaves(example, "example_inputs")

    state_names: List[str] = []
    aliased: Dict[int, int] = {}
    if input_output_aliases:
        if not isinstance(func, torch.nn.Module):
            raise TypeError("input_output_aliases needs func to be a module whose tensors they are")
        by_identity = {id(t): n for n, t in _module_tensors(func).items()}
        for tensor, output in input_output_aliases.items():
            name = by_identity.get(id(tensor))
            if name is None:
                raise ValueError(
                    "an input_output_aliases key is not a parameter or buffer of func; expected "
                    "the module's own tensors"
                )
            aliased[int(output)] = len(state_names)
            state_names.append(name)
    initial_states = []
    if state_names:
        named = _module_tensors(func)
        initial_states = [named[n].detach().clone() for n in state_names]

    lowered = _lower(func, example, flat_inputs, in_spec, state_names)
    if state_names:
        # Lowering ran the function once on the XLA device; the states start from where they
        # were before it.
        named = _module_tensors(func)
        with torch.no_grad():
            for name, value in zip(state_names, initial_states):
                named[name].copy_(value)
    for output in aliased:
        if output >= len(lowered.outputs):
            raise ValueError(
                f"input_output_aliases names output {output}, the function has "
                f"{len(lowered.outputs)}"
            )

    context = (
        contextlib.nullcontext(compiler_workdir)
        if compiler_workdir is not None
        else tempfile.TemporaryDirectory(prefix="nrtsim-trace-")
    )
    with context as workdir:
        workdir = Path(workdir)
        model_dir = workdir / "model"
        (model_dir / "weights").mkdir(parents=True, exist_ok=True)
        (model_dir / "graph.hlo").write_bytes(lowered.hlo)
        weights = {}
        sources = []
        for number, (kind, what) in enumerate(lowered.parameters):
            if kind == "weight":
                _save_npy(model_dir / "weights" / f"{number}.npy", what)
                weights[str(number)] = f"weights/{number}.npy"
            else:
                sources.append((kind, what))
        metadata = {"model_files": "graph.hlo", "version": "1.0", "weights": weights}
        (model_dir / "metadata.json").write_text(json.dumps(metadata, indent=4))

        inputs_meta = []
        for i, (kind, index) in enumerate(sources):
            tensor = flat_inputs[index] if kind == "input" else initial_states[index]
            inputs_meta.append(_meta_tensor(f"input{i}", tensor, f"input {i}", user=True))
        outputs_meta = [
            _meta_tensor(f"output{j}", t, f"output {j}", user=False)
            for j, t in enumerate(lowered.outputs)
        ]
        position = {("state", s): i for i, (kind, s) in enumerate(sources) if kind == "state"}
        meta = {"input_tensors": inputs_meta, "output_tensors": outputs_meta}
        if aliased:
            meta["output_aliases_to"] = {
                str(j): position[("state", s)] for j, s in sorted(aliased.items())
            }
        # Names are bytes in the schema: proto3 JSON spells them in base64.
        for entry in inputs_meta + outputs_meta:
            entry["name"] = base64.b64encode(entry["name"].encode()).decode()
        (workdir / "metaneff.json").write_text(json.dumps(meta, indent=2))

        tool = _tool()
        neff_path = workdir / "graph.neff"
        command = [
            tool, "compile", str(model_dir), "--framework", "XLA", "--target", "trn1",
            "--output", str(neff_path),
        ]
        if isinstance(compiler_args, str):
            command += shlex.split(compiler_args)
        elif compiler_args:
            command += [str(a) for a in compiler_args]
        (workdir / "command.txt").write_text(" ".join(command) + "\n")
        _run(command, "compiling the traced module")
        metaneff_path = workdir / "metaneff.pb"
        _run(
            [tool, "metaneff", "encode", "--format", "json", str(workdir / "metaneff.json"),
             "--output", str(metaneff_path)],
            "encoding the metaneff",
        )
        neff = neff_path.read_bytes()
        metaneff = metaneff_path.read_bytes()

    wrapper = _NeuronModule(
        neff, metaneff, sources, initial_states, aliased, len(lowered.outputs), lowered.out_spec
    )
    saved = [s.detach().clone() for s in wrapper.states]
    traced = torch.jit.trace(wrapper, example, strict=False, check_trace=False)
    # Tracing ran the model once; its states start from the traced function's.
    parameters = dict(traced.named_parameters())
    with torch.no_grad():
        for i, value in enumerate(saved):
            parameters[f"states.{i}"].copy_(value)
    return traced
