"""Runs a traced program with nrtsim's executor (``nrtsim nki run``) and reads its results."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from . import dtypes as _dt
from ._core import NkiError

#: Overrides which ``nrtsim`` executable runs kernels (a build tree's, for instance).
TOOL_ENV = "NRTSIM_TOOL"


def tool() -> str:
    """The ``nrtsim`` executable: ``$NRTSIM_TOOL``, else the installed ``nrtsim`` distribution's."""
    override = os.environ.get(TOOL_ENV)
    if override:
        return override
    try:
        import nrtsim

        return str(nrtsim.tool())
    except (ImportError, FileNotFoundError) as error:
        found = shutil.which("nrtsim")
        if found:
            return found
        raise NkiError(
            f"cannot find nrtsim's executor: install the nrtsim distribution or set {TOOL_ENV} ({error})"
        ) from error


def run(program: str, tensors: list, output_ids: list, arrays: list, strict: bool = False):
    """Runs ``program`` (JSON text) on ``arrays`` (its inputs); returns (output arrays, report).
    ``tensors`` and ``output_ids`` are the program's tensor table and outputs."""
    with tempfile.TemporaryDirectory(prefix="nrtsim-nki-") as folder:
        root = Path(folder)
        program_file = root / "program.json"
        program_file.write_text(program)
        inputs = root / "in"
        outputs = root / "out"
        inputs.mkdir()
        outputs.mkdir()
        for k, array in enumerate(arrays):
            (inputs / f"in{k}.bin").write_bytes(np.ascontiguousarray(array).tobytes())
        report = root / "report.json"
        command = [tool(), "nki", "run", str(program_file), "--inputs", str(inputs), "--outputs", str(outputs),
                   "--report", str(report)]
        if strict:
            command.append("--strict")
        completed = subprocess.run(command, capture_output=True, text=True, check=False)
        if completed.returncode != 0:
            message = completed.stderr.strip() or f"nrtsim nki run exited with status {completed.returncode}"
            error = {}
            if report.exists():
                try:
                    error = json.loads(report.read_text()).get("error") or {}
                except ValueError:
                    error = {}
            if error.get("kind") == "OutOfBounds" and "offset" in error and "numel" in error:
                # numpy's words for the flat access, as indexing the tensor flattened would say.
                # Python's own IndexError, as an out-of-bounds index of the flattened tensor
                # would raise; the executor's message (the kernel's line) is its note and
                # ``detail``.
                exc = IndexError(f"index {error['offset']} is out of bounds for axis 0 with size {error['numel']}")
                exc.detail = message
                if hasattr(exc, "add_note"):
                    exc.add_note(message)
                raise exc
            raise NkiError(message)
        results = []
        for k, tid in enumerate(output_ids):
            tensor = tensors[tid]
            storage = _dt.storage(tensor["dtype"])
            data = (outputs / f"out{k}.bin").read_bytes()
            results.append(np.frombuffer(data, dtype=storage).reshape(tensor["shape"]).copy())
        details = json.loads(report.read_text()) if report.exists() else {}
        return results, details
