"""The shim's ``neuronxcc.driver.CommandDriver``: ``main()`` compiles with nrtsim.

``main()`` takes its arguments from ``sys.argv[1:]``, as neuronx-cc's does (nkipy sets
``sys.argv = ["neuronx-cc", "compile", ...]`` and calls ``main()`` with none), runs the nrtsim
tool as ``neuronx-cc`` in the current directory with standard output and error passed through,
and returns its exit status, 0 on success. A real ``neuronx-cc`` command is
``sys.exit(main())`` over this function, so a failure is a non-zero return value, not an
exception; a caller in process sees it in the value, and in the NEFF that was not written.
"""

from __future__ import annotations

import sys

from nrtsim_neuronx_cc.compiler import run


def main() -> int:
    """Compiles with ``sys.argv[1:]``; returns the exit status."""
    return run(sys.argv[1:])
