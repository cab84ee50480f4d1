"""Builds (once per torch, compiler and SDK) and loads the C++ layer."""

from __future__ import annotations

import hashlib
import os
import sys
import threading
from pathlib import Path

_CSRC = Path(__file__).resolve().parent / "csrc" / "neuron.cpp"
_LOCK = threading.Lock()
_LOADED: list[Path] = []


def sdk_root() -> Path:
    """The Neuron SDK folder of nrtsim: ``NRTSIM_SDK`` when set, else the ``nrtsim`` package's."""
    given = os.environ.get("NRTSIM_SDK")
    if given:
        root = Path(given)
    else:
        try:
            import nrtsim
        except ImportError as error:
            raise RuntimeError(
                "nrtsim-torch needs nrtsim's libnrt.so.1: install the nrtsim wheel, or set "
                "NRTSIM_SDK to a folder holding include/nrtsim/bind.h and lib/libnrt.so.1"
            ) from error
        root = nrtsim.sdk_root()
    for part in ("include/nrtsim/bind.h", "lib/libnrt.so.1"):
        if not (root / part).is_file():
            raise RuntimeError(f"the nrtsim SDK folder {root} has no {part}")
    return root.resolve()


def _real_torch_neuronx_loaded() -> bool:
    import torch

    if "torch_neuronx" in sys.modules:
        return True
    try:
        torch.classes.neuron.Model  # noqa: B018 (the lookup is the test)
    except (RuntimeError, AttributeError):
        return False
    return not _LOADED


def _ninja_on_path() -> None:
    """torch builds with the ``ninja`` command; the ``ninja`` wheel's copy is not on ``PATH``
    when a virtual environment's Python runs without the environment activated."""
    try:
        import ninja
    except ImportError:
        return
    folder = getattr(ninja, "BIN_DIR", None)
    if folder and folder not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = os.pathsep.join([folder, os.environ.get("PATH", "")])


def extension_path() -> Path | None:
    """The shared library this process loaded, or ``None`` before ``load()``."""
    return _LOADED[0] if _LOADED else None


def load(verbose: bool = False) -> Path:
    """Builds the C++ layer if needed and registers it with torch; returns the library's path.

    Raises ``RuntimeError`` when torch-neuronx already registered these names in this process,
    and when the SDK folder or a compiler is missing (the message says which).
    """
    with _LOCK:
        if _LOADED:
            return _LOADED[0]
        if _real_torch_neuronx_loaded():
            raise RuntimeError(
                "torch.classes.neuron is already registered in this process (torch-neuronx is "
                "loaded): nrtsim-torch does not shadow a real torch-neuronx"
            )
        import torch
        from torch.utils import cpp_extension

        sdk = sdk_root()
        lib = sdk / "lib"
        # The build's name carries what it depends on, so two SDKs or torches never share one.
        key = hashlib.sha256(
            b"\0".join(
                [
                    _CSRC.read_bytes(),
                    (sdk / "include/nrtsim/bind.h").read_bytes(),
                    str(lib).encode(),
                    torch.__version__.encode(),
                ]
            )
        ).hexdigest()[:16]
        name = f"nrtsim_torch_{key}"
        build = Path(
            os.environ.get("NRTSIM_TORCH_BUILD_DIR")
            or Path(cpp_extension._get_build_directory("nrtsim_torch", verbose)).parent
        ) / name
        build.mkdir(parents=True, exist_ok=True)
        library = build / f"{name}.so"
        if not library.is_file():
            _ninja_on_path()
            cpp_extension.load(
                name=name,
                sources=[str(_CSRC)],
                extra_include_paths=[str(sdk / "include")],
                extra_cflags=["-O2"],
                extra_ldflags=[f"-L{lib}", "-l:libnrt.so.1", f"-Wl,-rpath,{lib}"],
                build_directory=str(build),
                is_python_module=False,
                verbose=verbose,
            )
        else:
            torch.ops.load_library(str(library))
        _LOADED.append(library)
        return library
