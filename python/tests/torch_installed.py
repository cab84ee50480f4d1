"""nrtsim-torch installed from its wheel, as a torch user gets it, running its own tests.

Usage: python3 python/tests/torch_installed.py [WHEEL_DIR] [TORCH_PYTHON]
       (defaults: target/wheels, target/pyenv/bin/python)

Made for `.ci/run`, after `cargo xtask wheel` and `cargo xtask test` (which makes target/pyenv
with the pinned torch, torch-xla, torchvision and transformers of pyref/requirements.txt).

A fresh virtual environment sees the pinned torch of TORCH_PYTHON through a `.pth` file (a
second copy would be another 7 GB), and pip installs `nrtsim-torch` into it from WHEEL_DIR alone
(`--no-index`): its dependencies (`nrtsim`, torch, ninja, numpy) must resolve to the wheel beside
it and the environment's torch (the torch environment's commands, ninja's among them, follow the
fresh environment's on PATH). Then `python/torch/tests` run with that environment's Python and
nothing pointing at this source tree: no PYTHONPATH, NRTSIM_TOOL or NRTSIM_SDK, so the package,
the `nrtsim` tool and the SDK folder its C++ layer builds against are the installed wheels', and
the layer is built into a fresh torch extensions folder. The exit status is non-zero when pip or
a test failed; the last line says how many test files passed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "python" / "torch" / "tests"
FILES = ["test_objects", "test_spmd", "test_trace", "test_models"]
# What the environment must not carry into the tests: each would point them at the source tree
# or at this build's files instead of the installed wheels.
SOURCE_VARIABLES = ["PYTHONPATH", "NRTSIM_TOOL", "NRTSIM_SDK", "NRTSIM_TORCH_BUILD_DIR"]


def run(command: list[str], **kwargs) -> None:
    print("+", " ".join(str(part) for part in command), flush=True)
    subprocess.run(command, check=True, **kwargs)


def site_packages(python: Path) -> Path:
    out = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    )
    return Path(out.stdout.strip())


def main() -> int:
    wheels = Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "target" / "wheels").resolve()
    # Absolute, not resolved: the venv's python is a link to its base interpreter.
    torch_python = Path(
        os.path.abspath(
            sys.argv[2] if len(sys.argv) > 2 else ROOT / "target" / "pyenv" / "bin" / "python"
        )
    )
    if not torch_python.exists():
        print(f"error: {torch_python} does not exist: run `cargo xtask test` first", file=sys.stderr)
        return 2
    torch_site = site_packages(torch_python)
    with tempfile.TemporaryDirectory(prefix="nrtsim-torch-installed-") as scratch:
        scratch = Path(scratch)
        venv = scratch / "venv"
        # The same interpreter version as TORCH_PYTHON's, or its compiled packages would not load.
        base = subprocess.run(
            [str(torch_python), "-c", "import sys; print(sys._base_executable)"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        run([base, "-m", "venv", str(venv)])
        python = venv / "bin" / "python"
        (site_packages(python) / "pinned_torch.pth").write_text(f"{torch_site}\n")
        run(
            [str(python), "-m", "pip", "install", "--quiet", "--no-index", "--find-links",
             str(wheels), "nrtsim-torch"],
        )
        env = {key: value for key, value in os.environ.items() if key not in SOURCE_VARIABLES}
        env.update(
            # The fresh environment's commands first; then the torch environment's, where the
            # ninja wheel put the `ninja` executable that torch builds the layer with.
            PATH=os.pathsep.join([str(venv / "bin"), str(torch_python.parent), env.get("PATH", "")]),
            TORCH_EXTENSIONS_DIR=str(scratch / "torch_extensions"),
            PJRT_DEVICE="CPU",
            NRTSIM_QUIET="1",
        )
        # The package imported must be the installed one, not this tree's.
        where = subprocess.run(
            [str(python), "-c", "import nrtsim_torch; print(nrtsim_torch.__file__)"],
            check=True,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=scratch,
        ).stdout.strip()
        if not Path(where).resolve().is_relative_to(venv.resolve()):
            print(f"error: nrtsim_torch came from {where}, not the fresh environment", file=sys.stderr)
            return 1
        print(f"ok: nrtsim_torch imported from {where}", flush=True)
        passed = 0
        for name in FILES:
            done = subprocess.run([str(python), "-m", "unittest", name], cwd=TESTS, env=env)
            if done.returncode == 0:
                passed += 1
                print(f"ok: {name}", flush=True)
            else:
                print(f"FAILED: {name}", flush=True)
    print(f"{passed} of {len(FILES)} test files passed against the installed wheels")
    return 0 if passed == len(FILES) else 1


if __name__ == "__main__":
    sys.exit(main())
