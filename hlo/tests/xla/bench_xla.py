#!/usr/bin/env python3
"""Time XLA on CPU on the benchmark graphs of `cargo bench -p nrtsim-hlo`, the baseline for `ours/xla`.

Usage:
    bench_xla.py [--iters N] [--warmup N] [--export DIR] [GRAPH ...]

GRAPH is one of `dot_f32_512` (f32[512,512] x f32[512,512]) and `conv3x3_f32_1x64x56x56`
(NCHW f32[1,64,56,56], OIHW f32[64,64,3,3], stride 1, padding 1); all of them when none is named.
For each it compiles the graph once, runs it `--warmup` times, then `--iters` times, and prints one
JSON line: {"graph", "seconds" (the best run), "flops", "gflops"}. The inputs are seeded normals.

With `--export DIR` it also writes DIR/GRAPH.pb and DIR/GRAPH.hlo (the module XLA compiled, as jax
lowered it), so the interpreter's bench can time the very same module.

XLA keeps its default threading here: the point is what XLA CPU achieves on this machine.
"""

import argparse
import json
import os
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402


def dot_graph(rng):
    a = rng.standard_normal((512, 512)).astype(np.float32)
    b = rng.standard_normal((512, 512)).astype(np.float32)
    return (lambda a, b: lax.dot(a, b)), [a, b], 2 * 512**3


def conv_graph(rng):
    x = rng.standard_normal((1, 64, 56, 56)).astype(np.float32)
    w = rng.standard_normal((64, 64, 3, 3)).astype(np.float32)

    def f(x, w):
        return lax.conv_general_dilated(
            x, w, (1, 1), ((1, 1), (1, 1)), dimension_numbers=("NCHW", "OIHW", "NCHW")
        )

    return f, [x, w], 2 * 1 * 64 * 56 * 56 * 64 * 3 * 3


GRAPHS = {"dot_f32_512": dot_graph, "conv3x3_f32_1x64x56x56": conv_graph}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("graphs", nargs="*", choices=[*GRAPHS, []])
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--export", default=None)
    opts = parser.parse_args()
    for name in opts.graphs or list(GRAPHS):
        fn, args, flops = GRAPHS[name](np.random.default_rng(0))
        lowered = jax.jit(fn).lower(*args)
        if opts.export:
            os.makedirs(opts.export, exist_ok=True)
            with open(os.path.join(opts.export, f"{name}.pb"), "wb") as f:
                f.write(lowered.compiler_ir("hlo").as_serialized_hlo_module_proto())
            with open(os.path.join(opts.export, f"{name}.hlo"), "w") as f:
                f.write(lowered.as_text(dialect="hlo"))
        compiled = lowered.compile()
        device_args = [jax.device_put(a) for a in args]
        for _ in range(opts.warmup):
            compiled(*device_args).block_until_ready()
        best = float("inf")
        for _ in range(opts.iters):
            start = time.perf_counter()
            compiled(*device_args).block_until_ready()
            best = min(best, time.perf_counter() - start)
        print(json.dumps({"graph": name, "seconds": best, "flops": flops, "gflops": flops / best / 1e9}), flush=True)


if __name__ == "__main__":
    main()
