"""nki-samples' tutorial kernels on nrtsim's NKI, each against a NumPy reference.

Usage: python tutorials.py NKI_SAMPLES_DIR

The tutorials that carry their own check (a ``__main__`` that compares with NumPy, or a test file
that runs at import) run as scripts: one passes when it exits 0. The matrix-multiplication and
softmax tutorials are checked only by drivers that need torch-xla and a device, so here each
kernel runs at the drivers' shapes against NumPy, with the drivers' tolerances. One line per case
in pytest's ``-rA`` form (``PASSED FILE::CASE``, ``FAILED FILE::CASE - reason``), which
``cargo xtask nki-suites`` counts.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import subprocess
import sys
import traceback
from pathlib import Path

import numpy as np

#: The tutorials that check themselves when run as a script.
SCRIPTS = [
    "average_pool2d/average_pool2d_nki_kernels.py",
    "fused_mamba/mamba_nki_kernels.py",
    "rotary/rotary_nki_kernels.py",
    "tensor_addition/spmd_multiple_nc_tensor_addition_nki_kernels.py",
    "tensor_addition/spmd_tensor_addition_nki_kernels.py",
    "tensor_addition/tensor_addition_nki_kernels.py",
    "transpose2d/transpose2d_nki_kernels.py",
    "attention_fwd_performance/test_attention.py",
]


def report(outcome: str, name: str, reason: str = "") -> None:
    print(f"{outcome} tutorials/{name}" + (f" - {reason}" if reason else ""), flush=True)


def run_script(root: Path, relative: str) -> None:
    path = root / relative
    done = subprocess.run([sys.executable, path.name], cwd=path.parent, capture_output=True,
                          text=True, timeout=1800)
    if done.returncode == 0:
        report("PASSED", f"{relative}::main")
    else:
        lines = (done.stderr or done.stdout).strip().splitlines()
        report("FAILED", f"{relative}::main", lines[-1] if lines else f"exit {done.returncode}")


def load(path: Path, name: str):
    sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def stand_ins(*names):
    """Empty modules under ``names`` while a tutorial file that imports them (and does not use
    them) loads; only names that are not importable get one."""
    import types

    added = []
    for name in names:
        top = name.split(".")[0]
        if name not in sys.modules and (top in added or importlib.util.find_spec(top) is None):
            sys.modules[name] = types.ModuleType(name)
            added.append(name)
    try:
        yield
    finally:
        for name in added:
            sys.modules.pop(name, None)


def check(name: str, compute, reference, rtol: float, atol: float) -> None:
    try:
        got = np.asarray(compute(), dtype=np.float64)
        want = np.asarray(reference, dtype=np.float64)
        if got.shape != want.shape:
            report("FAILED", name, f"shape {got.shape}, expected {want.shape}")
        elif np.allclose(got, want, rtol=rtol, atol=atol):
            report("PASSED", name)
        else:
            worst = float(np.max(np.abs(got - want)))
            report("FAILED", name, f"max abs difference {worst:.3g} over rtol={rtol} atol={atol}")
    except Exception as error:  # noqa: BLE001 (a case's failure is its line, not the run's end)
        last = traceback.format_exception_only(type(error), error)[-1].strip()
        report("FAILED", name, last)


def matmul_cases(root: Path) -> None:
    import ml_dtypes

    relative = "matrix_multiplication/matrix_multiplication_nki_kernels.py"
    try:
        module = load(root / relative, "matrix_multiplication_nki_kernels")
    except ImportError as error:
        report("FAILED", f"{relative}::*", f"the file does not import: {error}")
        return
    rng = np.random.default_rng(0)
    bf16 = ml_dtypes.bfloat16
    lhs = rng.random((64, 128), dtype=np.float32).astype(bf16)
    rhs = rng.random((128, 512), dtype=np.float32).astype(bf16)
    # The driver's tolerances (atol 1e-4, rtol 1e-2) against a float32 product of the bf16 inputs.
    reference = lhs.astype(np.float32) @ rhs.astype(np.float32)
    check(f"{relative}::nki_matmul_basic_", lambda: module.nki_matmul_basic_(np.ascontiguousarray(lhs.T), rhs),
          reference, 1e-2, 1e-4)
    lhs = rng.random((4096, 1024), dtype=np.float32).astype(bf16)
    rhs = rng.random((1024, 2048), dtype=np.float32).astype(bf16)
    lhs_t = np.ascontiguousarray(lhs.T)
    reference = lhs.astype(np.float32) @ rhs.astype(np.float32)
    for kernel in ("nki_matmul_tiled_", "nki_matmul_hoist_load_", "nki_matmul_block_free_dimension_",
                   "nki_matmul_fully_optimized_"):
        check(f"{relative}::{kernel}", lambda k=kernel: getattr(module, k)(lhs_t, rhs), reference, 1e-2, 1e-4)


def softmax_cases(root: Path) -> None:
    relative = "softmax/softmax_nki_kernels.py"
    # The file imports torch-xla's xla_model at its top and never uses it (its device driver is
    # another file): an empty stand-in lets the kernel load without torch-xla.
    with stand_ins("torch_xla", "torch_xla.core", "torch_xla.core.xla_model"):
        try:
            module = load(root / relative, "softmax_nki_kernels")
        except ImportError as error:
            report("FAILED", f"{relative}::nki_softmax_kernel", f"the file does not import: {error}")
            return
    logits = np.array([[1.0, 2.0, 3.0, 4.0, 5.0], [5.0, 4.0, 3.0, 2.0, 1.0]], dtype=np.float32)
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    check(f"{relative}::nki_softmax_kernel", lambda: module.nki_softmax_kernel(logits),
          e / e.sum(axis=1, keepdims=True), 1e-5, 1e-5)


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    root = Path(sys.argv[1]) / "src/nki_samples/tutorials"
    if not root.is_dir():
        print(f"{sys.argv[1]}: expected nki-samples' repository with src/nki_samples/tutorials/",
              file=sys.stderr)
        return 2
    os.environ.setdefault("NRTSIM_QUIET", "1")
    for relative in SCRIPTS:
        run_script(root, relative)
    matmul_cases(root)
    softmax_cases(root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
