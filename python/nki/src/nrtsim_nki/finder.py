"""A meta-path finder that provides ``nki`` and ``neuronxcc.nki`` when nothing else does.

A real ``nki`` on ``sys.path`` (a module or package with code) is always imported first, and a
real neuronx-cc's ``neuronxcc.nki`` is its own: ``neuronxcc.nki`` is provided only under
nrtsim's compiler shim. Otherwise it gives the modules of ``nrtsim_nki`` under the asked name:
one module object for each, whichever name imported it first, so ``nki.language`` and
``neuronxcc.nki.language`` are the same module.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys

#: The names this finder answers for, and the package they alias.
PREFIXES = ("nki", "neuronxcc.nki")
PACKAGE = "nrtsim_nki"


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, target: str):
        self.target = target
        self.original = None

    def create_module(self, spec):
        module = importlib.import_module(self.target)
        self.original = module.__spec__
        # Register every loaded submodule under the alias too, so `import nki.language` after
        # `import nki` finds it instead of executing the file a second time.
        prefix = spec.name[: len(spec.name) - (len(self.target) - len(PACKAGE))]
        for name, loaded in list(sys.modules.items()):
            if name == PACKAGE or name.startswith(PACKAGE + "."):
                sys.modules.setdefault(prefix + name[len(PACKAGE):], loaded)
        return module

    def exec_module(self, module):
        # The import system gave the module the alias's spec; its own keeps relative imports
        # (and ``__spec__.parent == __package__``) true.
        if self.original is not None:
            module.__spec__ = self.original


def _alias_spec(fullname):
    for prefix in PREFIXES:
        if fullname == prefix or fullname.startswith(prefix + "."):
            rest = fullname[len(prefix):]
            if importlib.util.find_spec(PACKAGE + rest) is None:
                return None
            return importlib.util.spec_from_loader(fullname, _AliasLoader(PACKAGE + rest))
    return None


class NkiFinder(importlib.abc.MetaPathFinder):
    """Finds ``nki`` and ``neuronxcc.nki`` in this distribution when no real one is importable.

    It asks Python's path-based finder first: a regular ``nki`` module or package anywhere on the
    path (a real NKI) is imported as usual. A folder that merely happens to be named ``nki`` (a
    namespace package, such as the ``nki/`` of an aws-neuron-sdk checkout in the current
    directory) does not count as one.
    """

    def find_spec(self, fullname, path=None, target=None):
        if fullname == "nki":
            if _real(importlib.machinery.PathFinder.find_spec("nki")):
                return None
            return _alias_spec(fullname)
        if fullname == "neuronxcc.nki" and _neuronxcc_is_ours():
            return _alias_spec(fullname)
        return None


def _real(spec) -> bool:
    """Whether ``spec`` is a module or package with code (not a namespace package)."""
    return spec is not None and spec.origin is not None and spec.loader is not None


class NkiSubmoduleFinder(importlib.abc.MetaPathFinder):
    """Finds the submodules of an ``nki`` or ``neuronxcc.nki`` that is this distribution's,
    first, so each is the one module object of ``nrtsim_nki`` and never a second copy."""

    def find_spec(self, fullname, path=None, target=None):
        parent, _, _ = fullname.rpartition(".")
        if not parent:
            return None
        module = sys.modules.get(parent)
        name = getattr(module, "__name__", "")
        if name != PACKAGE and not name.startswith(PACKAGE + "."):
            return None
        return _alias_spec(fullname)


def _neuronxcc_is_ours() -> bool:
    """True when the imported ``neuronxcc`` is nrtsim's compiler shim, not a real neuronx-cc."""
    module = sys.modules.get("neuronxcc")
    origin = getattr(module, "__file__", "") or ""
    return "nrtsim_neuronx_cc" in origin


def install() -> None:
    """Puts the two finders first on ``sys.meta_path``, once: the top-level one defers to any
    real ``nki`` itself, and the submodule one answers only under this distribution's modules."""
    if not any(isinstance(finder, NkiFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, NkiFinder())
    if not any(isinstance(finder, NkiSubmoduleFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, NkiSubmoduleFinder())
