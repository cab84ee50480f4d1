"""Runs the ``nrtsim`` tool as ``neuronx-cc``.

The tool behaves as neuronx-cc when its ``argv[0]`` is ``neuronx-cc``; ``subprocess`` gives it
that name while executing the file ``nrtsim.tool()`` finds. The first run in a process says once
on standard error that this is nrtsim's simulator compiler (``NRTSIM_QUIET=1`` silences it).
"""

from __future__ import annotations

import os
import subprocess
import sys

_announced = False

#: Names the ``nrtsim`` executable to run instead of the installed distribution's (a build
#: tree's), the same variable nrtsim's NKI reads.
TOOL_ENV = "NRTSIM_TOOL"

NOTICE = (
    "neuronx-cc: this is nrtsim's simulator compiler (the nrtsim-neuronx-cc package), not AWS's "
    "neuronx-cc; its NEFFs run on nrtsim's simulated libnrt only"
)


def announce() -> None:
    """Writes the notice on standard error, once per process."""
    global _announced
    if _announced:
        return
    _announced = True
    if os.environ.get("NRTSIM_QUIET") != "1":
        print(NOTICE, file=sys.stderr, flush=True)


def run(args: list[str]) -> int:
    """Runs ``neuronx-cc ARGS`` with nrtsim's tool; returns its exit status."""
    announce()
    tool = os.environ.get(TOOL_ENV)
    try:
        if not tool:
            import nrtsim

            tool = nrtsim.tool()
    except (ImportError, FileNotFoundError) as error:
        print(f"neuronx-cc: cannot find nrtsim's tool: {error}", file=sys.stderr)
        return 127
    # Whatever Python buffered goes out before the tool writes to the same streams.
    sys.stdout.flush()
    sys.stderr.flush()
    completed = subprocess.run(["neuronx-cc", *args], executable=str(tool), check=False)
    return completed.returncode
