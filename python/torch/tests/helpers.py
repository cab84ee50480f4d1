"""What the tests share: the nrtsim tool, a compiled model from HLO text, a fresh process."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import nrtsim_torch  # noqa: F401 (registers torch.classes.neuron and torch.ops.neuron)

TOOL = os.environ["NRTSIM_TOOL"]
SRC = str(Path(__file__).resolve().parents[1] / "src")


def compile_hlo(text: str, *metaneff_args: str):
    """The NEFF and metaneff bytes of an HLO module: `nrtsim compile`, `metaneff from-hlo`."""
    with tempfile.TemporaryDirectory(prefix="nrtsim-torch-test-") as folder:
        folder = Path(folder)
        (folder / "m.hlo").write_text(text)
        for command in (
            [TOOL, "compile", "m.hlo", "--framework", "XLA", "--target", "trn1", "--output", "m.neff"],
            [TOOL, "metaneff", "from-hlo", "m.hlo", "--output", "m.metaneff", *metaneff_args],
        ):
            subprocess.run(command, cwd=folder, check=True, capture_output=True)
        return (folder / "m.neff").read_bytes(), (folder / "m.metaneff").read_bytes()


def run_fresh(code: str) -> str:
    """Runs `code` in a new Python process with this package importable; returns its stdout."""
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")},
    )
    if done.returncode != 0:
        raise AssertionError(f"the fresh process failed:\n{done.stderr}")
    return done.stdout
