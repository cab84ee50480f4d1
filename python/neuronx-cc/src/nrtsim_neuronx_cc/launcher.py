"""The ``neuronx-cc`` command of this distribution.

It is the one file of the shim at a path a real neuronx-cc also owns (``bin/neuronx-cc``), and
pip overwrites another distribution's file without a word. So the command checks first: when a
real ``neuronxcc`` is importable or a ``neuronx-cc`` distribution is installed, it refuses to run
(exit status 2) and says how to restore the real command, instead of compiling for the simulator
in an environment meant for a device.
"""

from __future__ import annotations

import sys
from importlib import metadata

from nrtsim_neuronx_cc.compiler import run
from nrtsim_neuronx_cc.finder import real_neuronxcc_origin


def real_compiler() -> str | None:
    """A description of the real neuronx-cc this environment has, if any."""
    try:
        return f"the neuronx-cc distribution {metadata.version('neuronx-cc')}"
    except metadata.PackageNotFoundError:
        pass
    origin = real_neuronxcc_origin()
    return f"a neuronxcc package at {origin}" if origin else None


def main() -> int:
    real = real_compiler()
    if real is not None:
        print(
            f"neuronx-cc: refusing to run nrtsim's simulator compiler: this environment has {real}, "
            "and nrtsim-neuronx-cc's command took the place of its neuronx-cc command. Restore it "
            "with `pip uninstall nrtsim-neuronx-cc` and `pip install --force-reinstall neuronx-cc`.",
            file=sys.stderr,
        )
        return 2
    return run(sys.argv[1:])
