"""A meta-path finder that provides ``neuronxcc`` when nothing else does.

It is appended to the end of ``sys.meta_path``, after Python's own finders: a ``neuronxcc``
anywhere on ``sys.path`` (a real neuronx-cc) is found first, and this finder is asked only when
the import would otherwise fail. It then gives the ``neuronxcc`` package kept inside this
distribution (``nrtsim_neuronx_cc/neuronxcc``); its submodules are found the ordinary way, through
that package's ``__path__``. Start-up cost: one list append per interpreter.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from pathlib import Path

#: The shim's ``neuronxcc`` package.
PACKAGE_DIR = Path(__file__).resolve().parent / "neuronxcc"


class ShimFinder(importlib.abc.MetaPathFinder):
    """Finds the top-level ``neuronxcc`` in this distribution."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "neuronxcc" or path is not None:
            return None
        return importlib.util.spec_from_file_location(
            "neuronxcc",
            PACKAGE_DIR / "__init__.py",
            submodule_search_locations=[str(PACKAGE_DIR)],
        )


def install() -> None:
    """Appends the finder to ``sys.meta_path`` once."""
    if not any(isinstance(finder, ShimFinder) for finder in sys.meta_path):
        sys.meta_path.append(ShimFinder())


def real_neuronxcc_origin() -> str | None:
    """Where a ``neuronxcc`` other than the shim's would be imported from, if one is importable.

    Asks Python's path-based finder directly, so the shim's finder is not consulted.
    """
    import importlib.machinery

    spec = importlib.machinery.PathFinder.find_spec("neuronxcc")
    if spec is None:
        return None
    locations = list(spec.submodule_search_locations or [])
    return spec.origin or (locations[0] if locations else "neuronxcc")
