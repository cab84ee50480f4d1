#!/usr/bin/env python3
"""Time XLA on CPU on the gemm graphs of `cargo bench -p nrtsim-hlo --bench gemm`, its baseline.

Usage:
    bench_gemm.py [--iters N] [--warmup N] [--export DIR] [GRAPH ...]

The graphs are dots in f32, bf16 and f16 of 512x512 by 512x512 and of 128x4096 by 4096x4096 (the
result in the operands' type, as `jnp.dot` gives it), and a 3x3 convolution (NCHW [1,64,56,56],
OIHW [64,64,3,3], padding 1) in f32 and bf16. All of them when none is named. For each it compiles
the graph once, runs it `--warmup` times, then `--iters` times, and prints one JSON line:
{"graph", "seconds" (the best run), "flops", "gflops"}. The inputs are seeded normals.

With `--export DIR` it also writes DIR/GRAPH.pb (the module XLA compiled, as jax lowered it), so
the bench times the very same module. XLA keeps its default threading.
"""

import argparse
import json
import os
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

TYPES = {"f32": np.float32, "bf16": jnp.bfloat16, "f16": np.float16}


def dot_graph(m, k, n, ty):
    def make(rng):
        a = rng.standard_normal((m, k)).astype(TYPES[ty])
        b = rng.standard_normal((k, n)).astype(TYPES[ty])
        return (lambda a, b: lax.dot(a, b)), [a, b], 2 * m * k * n

    return make


def conv_graph(ty):
    def make(rng):
        x = rng.standard_normal((1, 64, 56, 56)).astype(TYPES[ty])
        w = rng.standard_normal((64, 64, 3, 3)).astype(TYPES[ty])

        def f(x, w):
            return lax.conv_general_dilated(
                x, w, (1, 1), ((1, 1), (1, 1)), dimension_numbers=("NCHW", "OIHW", "NCHW")
            )

        return f, [x, w], 2 * 1 * 64 * 56 * 56 * 64 * 3 * 3

    return make


GRAPHS = {}
for ty in TYPES:
    GRAPHS[f"dot_{ty}_512"] = dot_graph(512, 512, 512, ty)
    GRAPHS[f"dot_{ty}_128x4096x4096"] = dot_graph(128, 4096, 4096, ty)
for ty in ("f32", "bf16"):
    GRAPHS[f"conv3x3_{ty}_1x64x56x56"] = conv_graph(ty)


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
        compiled = lowered.compile()
        device_args = [jax.device_put(a) for a in args]
        for _ in range(opts.warmup):
            compiled(*device_args).block_until_ready()
        best = float("inf")
        for _ in range(opts.iters):
            start = time.perf_counter()
            compiled(*device_args).block_until_ready()
            best = min(best, time.perf_counter() - start)
        record = {"graph": name, "seconds": best, "flops": flops, "gflops": flops / best / 1e9}
        print(json.dumps(record), flush=True)


if __name__ == "__main__":
    main()
