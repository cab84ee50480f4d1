"""libtorchneuron's objects for torch programs, on nrtsim's simulated device.

Importing this package registers, under the names torch programs use,
``torch.classes.neuron.Model`` and ``SPMDModel``, ``torch.ops.neuron.forward_v2``,
``torch.ops.neuron._parallel_load`` and ``torch.ops.neuron._load_collectives_neuron`` (and
``torch.classes.neuron.LayoutTransformation``, which says it is not modelled). They are a thin
C++ layer over the binding layer of nrtsim's ``libnrt.so.1`` (``nrtsim/bind.h``), built for the
torch you have the first time it is imported (a C++ compiler and ninja are needed; the build is
cached). ``trace`` makes such a model from a torch function, as ``torch_neuronx.trace`` does.

The models run on nrtsim's simulator in this process; with ``NRTSIM_TORCH_LIBNRT`` set to a
``libnrt.so.1`` (a real one on a Neuron instance) they run on that library instead, through
nrtsim's ``nrt`` backend, under the same rules. ``backend()`` says which.

A real torch-neuronx in the same process owns these names: this package then refuses to load
(``RuntimeError``) rather than shadow it.
"""

from __future__ import annotations

from ._extension import extension_path, load
from ._trace import trace


__all__ = ["load", "extension_path", "trace", "backend"]

load()


def backend() -> str:
    """``"sim"``, or ``"nrt PATH"`` when ``NRTSIM_TORCH_LIBNRT`` names the libnrt the models run on."""
    import torch

    return torch.ops.nrtsim.backend()
