"""``nrtsim.torch``: libtorchneuron's objects for torch programs and ``trace``, on nrtsim.

They are the ``nrtsim-torch`` distribution (``nrtsim_torch``); importing this module registers
``torch.classes.neuron`` and ``torch.ops.neuron`` and gives ``trace``.
"""

from __future__ import annotations

import importlib.util

if importlib.util.find_spec("nrtsim_torch") is None:
    raise ImportError(
        "nrtsim.torch is the nrtsim-torch distribution, which is not installed: "
        "pip install nrtsim-torch (and torch-xla for trace)"
    )

from nrtsim_torch import backend, extension_path, load, trace  # noqa: E402

__all__ = ["trace", "load", "extension_path", "backend"]
