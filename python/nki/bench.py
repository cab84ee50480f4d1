"""Kernels on nrtsim's NKI against NumPy computing the same result, in the same run.

Usage: python bench.py [--runs N] [--samples NKI_SAMPLES_DIR]

One JSON line per kernel on standard output:
``{"kernel", "ours_s", "numpy_s", "instructions"}``: the median over N runs of a whole kernel
call (trace, executor, results back), NumPy's median for the same arithmetic, and the
instructions the executor ran. With ``--samples``, nki-samples'
flash-attention forward at its simulation test size (one head, 4096 x 4096, d 128) is a row too.
``cli/benches/nki.rs`` turns the lines into ``cargo xtask bench``'s table.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE / "src"), str(HERE.parent / "neuronx-cc" / "src")]
os.environ.setdefault("NRTSIM_QUIET", "1")

import nrtsim_neuronx_cc.finder  # noqa: E402
import nrtsim_nki.finder  # noqa: E402

nrtsim_neuronx_cc.finder.install()
nrtsim_nki.finder.install()

import numpy as np  # noqa: E402

import neuronxcc.nki as nki  # noqa: E402
import neuronxcc.nki.isa as nisa  # noqa: E402
import neuronxcc.nki.language as nl  # noqa: E402


@nki.jit
def add(a, b):
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(a.shape[0] // 128):
        rows = nl.ds(i * 128, 128)
        nl.store(out[rows, :], nl.add(nl.load(a[rows, :]), nl.load(b[rows, :])))
    return out


@nki.jit
def matmul(lhs_t, rhs):
    k, m = lhs_t.shape
    _, n = rhs.shape
    out = nl.ndarray((m, n), nl.float32, buffer=nl.shared_hbm)
    for mi in nl.affine_range(m // 128):
        for ni in nl.affine_range(n // 512):
            acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
            for ki in nl.affine_range(k // 128):
                x = nl.load(lhs_t[nl.ds(ki * 128, 128), nl.ds(mi * 128, 128)])
                y = nl.load(rhs[nl.ds(ki * 128, 128), nl.ds(ni * 512, 512)])
                acc += nisa.nc_matmul(x, y)
            nl.store(out[nl.ds(mi * 128, 128), nl.ds(ni * 512, 512)], nl.copy(acc))
    return out


@nki.jit
def softmax(x):
    out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(x.shape[0] // 128):
        rows = nl.ds(i * 128, 128)
        nl.store(out[rows, :], nl.softmax(nl.load(x[rows, :]), axis=1))
    return out


def numpy_softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def timed(function, runs):
    times = []
    result = None
    for _ in range(runs):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def row(name, kernel, call, reference, runs, check):
    ours, result = timed(call, runs)
    numpy_s, expected = timed(reference, runs)
    check(result, expected)
    stats = kernel.last_report["stats"]
    print(json.dumps({"kernel": name, "ours_s": ours, "numpy_s": numpy_s,
                      "instructions": stats["instructions"]}), flush=True)


def close(rtol, atol):
    def check(got, want):
        np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=rtol, atol=atol)
    return check


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--samples", type=Path)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    a = rng.random((1024, 2048), dtype=np.float32)
    b = rng.random((1024, 2048), dtype=np.float32)
    row("add 1024x2048 f32", add, lambda: add(a, b), lambda: a + b, args.runs, close(0, 0))
    lhs_t = rng.random((512, 512), dtype=np.float32)
    rhs = rng.random((512, 1024), dtype=np.float32)
    row("matmul 512x512x1024 f32", matmul, lambda: matmul(lhs_t, rhs), lambda: lhs_t.T @ rhs,
        args.runs, close(1e-5, 1e-3))
    x = rng.random((1024, 512), dtype=np.float32) * 4
    row("softmax 1024x512 f32", softmax, lambda: softmax(x), lambda: numpy_softmax(x), args.runs,
        close(1e-5, 1e-6))
    if args.samples is not None:
        flash_row(args.samples, rng, args.runs)
    return 0


def flash_row(samples: Path, rng, runs: int) -> None:
    """nki-samples' flash-attention forward at its simulation test size, against NumPy: causal
    softmax(qᵀk / √d) v, the kernel's layout (q and k [d, seq], v and the result [seq, d])."""
    sys.path.insert(0, str(samples / "src"))
    from nki_samples.reference.attention import FlashConfig, flash_fwd

    d, seqlen = 128, 4096
    q = ((rng.random((1, 1, d, seqlen)) - 0.5) * 2).astype(np.float32)
    k = ((rng.random((1, 1, d, seqlen)) - 0.5) * 2).astype(np.float32)
    v = ((rng.random((1, 1, seqlen, d)) - 0.5) * 2).astype(np.float32)
    config = FlashConfig(seq_tile_size=2048, training=False, should_transpose_v=False)
    kernel = flash_fwd[1, 1]

    def ours():
        return kernel(q, k, v, None, use_causal_mask=True, mixed_precision=True, config=config)

    def reference():
        scores = (q[0, 0].T * (1.0 / d ** 0.5)) @ k[0, 0]
        scores = np.where(np.tril(np.ones((seqlen, seqlen), bool)), scores, -np.inf)
        return (numpy_softmax(scores) @ v[0, 0])[None, None]

    ours_s, result = timed(ours, runs)
    numpy_s, expected = timed(reference, runs)
    # nki-samples' test's tolerance.
    np.testing.assert_allclose(np.asarray(result), expected, rtol=0, atol=1e-2)
    print(json.dumps({"kernel": "flash_fwd 4096x4096 d128 causal (nki-samples)", "ours_s": ours_s,
                      "numpy_s": numpy_s, "instructions": kernel.last_report["stats"]["instructions"]}),
          flush=True)


if __name__ == "__main__":
    sys.exit(main())
