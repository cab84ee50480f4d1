"""nrtsim, the Neuron runtime simulator, installed as a Python package.

The package holds a Neuron SDK folder (``sdk_root()``: ``lib/libnrt.so.1``, ``lib/libnrt.so``,
``lib/pkgconfig/nrt.pc`` and ``include/nrt/*.h``) so that build systems configured with a Neuron
SDK folder find the simulator (``cmake -DNEURON_ROOT=$(python -m nrtsim sdk-root)``), and
programs linked against libnrt run on it (``LD_LIBRARY_PATH=$(python -m nrtsim sdk-root)/lib``).
The ``nrtsim`` command is the Rust tool itself, installed by the wheel as a script; ``tool()``
finds it. The compiler shim (the ``nrtsim-neuronx-cc`` distribution) runs it as ``neuronx-cc``.
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

__all__ = ["sdk_root", "tool", "__version__"]

try:
    __version__ = metadata.version("nrtsim")
except metadata.PackageNotFoundError:  # imported from a source tree, not installed
    __version__ = "0+unknown"


def sdk_root() -> Path:
    """The SDK folder inside the installed package."""
    return Path(__file__).resolve().parent / "sdk"


def tool() -> Path:
    """The installed ``nrtsim`` executable.

    It is a file of the ``nrtsim`` distribution (a script of the wheel), found through the
    distribution's record of installed files, so it is the right one whichever scheme pip
    installed into (a virtual environment, ``--user``, ``--prefix``) and whatever ``PATH`` says.

    Raises ``FileNotFoundError`` when the distribution is not installed or lacks the file.
    """
    try:
        files = metadata.distribution("nrtsim").files or []
    except metadata.PackageNotFoundError as error:
        raise FileNotFoundError("the nrtsim distribution is not installed") from error
    for file in files:
        if file.name == "nrtsim" and file.parent.name == "bin":
            path = Path(file.locate()).resolve()
            if path.is_file():
                return path
    raise FileNotFoundError(
        "the nrtsim distribution has no bin/nrtsim among its installed files; reinstall it"
    )
