"""What the tests share: the nrtsim tool, a compiled model from HLO text, a fresh process.

The tests run against the package from this source folder (`cli/tests/torch_python.rs` puts
`src` on PYTHONPATH and names this build's tool and SDK folder) or against the installed wheels
(`python/tests/torch_installed.py`): then the tool and the SDK folder are the nrtsim wheel's,
found as a user's program finds them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import nrtsim_torch  # noqa: F401 (registers torch.classes.neuron and torch.ops.neuron)
from nrtsim_torch import _extension, _trace

TOOL = _trace._tool()
SDK = _extension.sdk_root()
SRC = str(Path(__file__).resolve().parents[1] / "src")
# Whether the package under test is this source folder's (a fresh process must then be told).
FROM_SOURCE = Path(nrtsim_torch.__file__).resolve().is_relative_to(Path(SRC).resolve())


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
    env = dict(os.environ)
    if FROM_SOURCE:
        env["PYTHONPATH"] = SRC + os.pathsep + os.environ.get("PYTHONPATH", "")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise AssertionError(f"the fresh process failed:\n{done.stderr}")
    return done.stdout
