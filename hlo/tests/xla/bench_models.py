#!/usr/bin/env python3
"""The whole-model benchmark set of `cargo bench -p nrtsim-hlo --bench models`: XLA on CPU is the peer.

Usage:
    bench_models.py OUT_DIR [--iters N] [--warmup N] [--only NAME ...] [--no-export] [--list]

Each benchmark is a jax function on seeded inputs. For each, the script lowers it, compiles it
with XLA CPU, runs it `--warmup` times then at least `--iters` times (more for fast graphs, up to
0.2 s of runs), and prints one JSON line:
    {"model", "group", "seconds" (the best run), "flops" (0 where not counted), "ranks"}
Unless `--no-export` is given it first writes OUT_DIR/NAME/:
    module.hlo.pb   the HloModuleProto XLA compiled (as jax lowered it; for the SPMD model the
                    per-device module XLA partitioned, the only form with an all-reduce per rank)
    input_N.npy     the entry parameters (SPMD: rankR_input_N.npy, each rank's shard)
    output_N.npy    XLA's results, the result tuple flattened (SPMD: what every rank returns)
    case.json       model, group, ranks, and the XLA dtype and shape of every input and output
npy cannot name bf16, so the dtype of every file is in case.json, by XLA's name. `--no-export`
only times (the bench runs XLA and the interpreter twice each, in turn, and keeps each one's
better time).

Groups: `models` (the six whose geometric mean is the headline figure), `reduce` (argmax,
argmin, sort, top-k: outside the mean), `small` (small graphs, where a per-call floor decides).
The six models:
    transformer_f32    2-layer encoder, d_model 256, 4 heads, FFN 1024, seq 128, batch 4 (1.8 GFLOP)
    transformer_bf16   the same with bf16 parameters and activations
    cnn_f32            ResNet-style CNN on f32[1,3,64,64]: conv stem, residual blocks, pooling, dense
    mlp_f32            784-1024-1024-10 on a batch of 256
    decoder_kv_bf16    one decoder layer for one new token: the K/V cache (bf16, as real decoders
                       keep it) updated at a position input by dynamic-update-slice, attention
                       over the whole cache with positions past it masked
    allreduce_f32      2 ranks, each a matmul on its shard of the contraction, then psum

XLA keeps its default threading: the point is what XLA CPU achieves on this machine.
"""

import argparse
import json
import os
import sys
import time
import zlib

# Two host devices, for the SPMD model; the single-device models run on device 0.
os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2"
).strip()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import Mesh, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

BF16 = ml_dtypes.bfloat16

XLA_NAMES = {
    np.dtype(np.bool_): "pred",
    np.dtype(np.int32): "s32",
    np.dtype(np.int64): "s64",
    np.dtype(np.uint32): "u32",
    np.dtype(np.float32): "f32",
    np.dtype(BF16): "bf16",
    np.dtype(np.float16): "f16",
}

BENCHES = []

# The timing rule, the same in `benches/models.rs`.
MIN_SECONDS = 0.2
MAX_ITERS = 1000


def bench(name, group="models", flops=0, ranks=1):
    """Register `make(rng) -> (fn, args)` as benchmark `name`."""

    def register(make):
        BENCHES.append((name, group, flops, ranks, make))
        return make

    return register


def normal(rng, shape, dtype=np.float32, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(dtype)


# --------------------------------------------------------------------------------------------
# The six models.


def layer_norm(x, g, b):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) * lax.rsqrt(var + 1e-5) * g + b


def encoder_params(rng, dtype, d, ffn, layers):
    params = []
    for _ in range(layers):
        params += [
            normal(rng, (d, 3 * d), dtype, d**-0.5),  # wqkv
            normal(rng, (d, d), dtype, d**-0.5),  # wo
            np.ones(d, dtype),  # ln1 g
            np.zeros(d, dtype),  # ln1 b
            normal(rng, (d, ffn), dtype, d**-0.5),  # w1
            normal(rng, (ffn,), dtype, 0.02),  # b1
            normal(rng, (ffn, d), dtype, ffn**-0.5),  # w2
            np.ones(d, dtype),  # ln2 g
            np.zeros(d, dtype),  # ln2 b
        ]
    return params


def encoder(x, params, heads):
    batch, seq, d = x.shape
    dh = d // heads
    for i in range(0, len(params), 9):
        wqkv, wo, g1, b1n, w1, b1, w2, g2, b2n = params[i : i + 9]
        qkv = (x @ wqkv).reshape(batch, seq, 3, heads, dh)
        q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
        s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / jnp.sqrt(jnp.asarray(dh, x.dtype))
        p = jax.nn.softmax(s, axis=-1)
        a = jnp.einsum("bhqk,bkhd->bqhd", p, v).reshape(batch, seq, d)
        x = layer_norm(x + a @ wo, g1, b1n)
        h = jax.nn.gelu(x @ w1 + b1)
        x = layer_norm(x + h @ w2, g2, b2n)
    return x


def transformer(dtype):
    batch, seq, d, heads, ffn, layers = 4, 128, 256, 4, 1024, 2

    def make(rng):
        params = encoder_params(rng, dtype, d, ffn, layers)
        x = normal(rng, (batch, seq, d), dtype)
        return (lambda x, *params: encoder(x, params, heads)), [x, *params]

    return make


TRANSFORMER_FLOPS = 2 * (2 * 4 * 128 * (256 * 768 + 256 * 256 + 2 * 256 * 1024) + 2 * 2 * 4 * 128 * 128 * 256)
bench("transformer_f32", flops=TRANSFORMER_FLOPS)(transformer(np.float32))
bench("transformer_bf16", flops=TRANSFORMER_FLOPS)(transformer(BF16))


def conv(x, w, stride=1):
    pad = w.shape[-1] // 2
    return lax.conv_general_dilated(
        x, w, (stride, stride), ((pad, pad), (pad, pad)), dimension_numbers=("NCHW", "OIHW", "NCHW")
    )


def conv_flops(c_in, c_out, k, h, w):
    return 2 * c_in * c_out * k * k * h * w


CNN_FLOPS = (
    conv_flops(3, 32, 3, 64, 64)
    + 4 * conv_flops(32, 32, 3, 32, 32)
    + conv_flops(32, 64, 3, 16, 16)
    + conv_flops(32, 64, 1, 16, 16)
    + 3 * conv_flops(64, 64, 3, 16, 16)
    + 2 * 64 * 10
)


@bench("cnn_f32", flops=CNN_FLOPS)
def _(rng):
    def block(x, w1, w2):
        return jax.nn.relu(x + conv(jax.nn.relu(conv(x, w1)), w2))

    def f(x, stem, a1, a2, b1, b2, down, skip, c2, d1, d2, dense, bias):
        x = jax.nn.relu(conv(x, stem))  # 32 x 64 x 64
        x = lax.reduce_window(x, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")  # 32x32
        x = block(x, a1, a2)
        x = block(x, b1, b2)
        y = jax.nn.relu(conv(x, down, 2))  # 64 x 16 x 16
        x = jax.nn.relu(conv(x, skip, 2) + conv(y, c2))
        x = block(x, d1, d2)
        return x.mean((2, 3)) @ dense + bias

    def w(c_out, c_in, k):
        return normal(rng, (c_out, c_in, k, k), scale=(c_in * k * k) ** -0.5)

    return f, [
        normal(rng, (1, 3, 64, 64)),
        w(32, 3, 3),
        w(32, 32, 3),
        w(32, 32, 3),
        w(32, 32, 3),
        w(32, 32, 3),
        w(64, 32, 3),
        w(64, 32, 1),
        w(64, 64, 3),
        w(64, 64, 3),
        w(64, 64, 3),
        normal(rng, (64, 10), scale=0.125),
        normal(rng, (10,), scale=0.1),
    ]


@bench("mlp_f32", flops=2 * 256 * (784 * 1024 + 1024 * 1024 + 1024 * 10))
def _(rng):
    def f(x, w1, b1, w2, b2, w3, b3):
        h = jax.nn.relu(x @ w1 + b1)
        h = jax.nn.relu(h @ w2 + b2)
        return h @ w3 + b3

    return f, [
        normal(rng, (256, 784)),
        normal(rng, (784, 1024), scale=784**-0.5),
        normal(rng, (1024,), scale=0.1),
        normal(rng, (1024, 1024), scale=1024**-0.5),
        normal(rng, (1024,), scale=0.1),
        normal(rng, (1024, 10), scale=1024**-0.5),
        normal(rng, (10,), scale=0.1),
    ]


DEC_BATCH, DEC_LEN, DEC_D, DEC_HEADS, DEC_FFN = 4, 1024, 512, 8, 2048
DEC_FLOPS = 2 * DEC_BATCH * (4 * DEC_D * DEC_D + 2 * DEC_D * DEC_FFN + 2 * DEC_LEN * DEC_D)


@bench("decoder_kv_bf16", flops=DEC_FLOPS)
def _(rng):
    b, length, d, heads, ffn = DEC_BATCH, DEC_LEN, DEC_D, DEC_HEADS, DEC_FFN
    dh = d // heads

    def f(x, cache_k, cache_v, pos, wq, wk, wv, wo, g, w1, w2):
        # x: [b, 1, d], caches: [b, length, heads, dh], pos: s32[] (the new token's position).
        h = layer_norm(x, g, 0)
        q = (h @ wq).reshape(b, 1, heads, dh)
        k = (h @ wk).reshape(b, 1, heads, dh)
        v = (h @ wv).reshape(b, 1, heads, dh)
        cache_k = lax.dynamic_update_slice(cache_k, k, (0, pos, 0, 0))
        cache_v = lax.dynamic_update_slice(cache_v, v, (0, pos, 0, 0))
        s = jnp.einsum("bqhd,bkhd->bhqk", q, cache_k) / jnp.sqrt(jnp.asarray(dh, x.dtype))
        visible = jnp.arange(length)[None, None, None, :] <= pos
        s = jnp.where(visible, s, jnp.asarray(-1e9, s.dtype))
        p = jax.nn.softmax(s, axis=-1)
        a = jnp.einsum("bhqk,bkhd->bqhd", p, cache_v).reshape(b, 1, d)
        x = x + a @ wo
        x = x + jax.nn.gelu(layer_norm(x, g, 0) @ w1) @ w2
        return x, cache_k, cache_v

    return f, [
        normal(rng, (b, 1, d), BF16),
        normal(rng, (b, length, heads, dh), BF16),
        normal(rng, (b, length, heads, dh), BF16),
        np.int32(700),
        *(normal(rng, (d, d), BF16, d**-0.5) for _ in range(4)),
        np.ones(d, BF16),
        normal(rng, (d, ffn), BF16, d**-0.5),
        normal(rng, (ffn, d), BF16, ffn**-0.5),
    ]


AR_M, AR_K, AR_N = 256, 1024, 1024


@bench("allreduce_f32", flops=2 * AR_M * AR_K * AR_N, ranks=2)
def _(rng):
    mesh = Mesh(np.array(jax.devices()[:2]), ("i",))

    def per_rank(x, w):
        return jax.nn.relu(lax.psum(x @ w, "i"))

    f = jax.shard_map(per_rank, mesh=mesh, in_specs=(P(None, "i"), P("i", None)), out_specs=P())
    x = normal(rng, (AR_M, AR_K))
    w = normal(rng, (AR_K, AR_N), scale=AR_K**-0.5)
    shardings = [NamedSharding(mesh, P(None, "i")), NamedSharding(mesh, P("i", None))]
    return f, [jax.device_put(x, shardings[0]), jax.device_put(w, shardings[1])]


# --------------------------------------------------------------------------------------------
# Reductions with an index, sorts: outside the geometric mean.


@bench("argmax_argmin_f32", group="reduce")
def _(rng):
    def f(x):
        return (
            jnp.argmax(x, axis=2).astype(jnp.int32),
            jnp.argmin(x, axis=1).astype(jnp.int32),
            jnp.argmax(x, axis=0).astype(jnp.int32),
        )

    return f, [normal(rng, (32, 64, 128))]


@bench("sort_topk_f32", group="reduce")
def _(rng):
    def f(x, y):
        values, indices = lax.top_k(y, 16)
        return jnp.sort(x, axis=-1), values, indices

    return f, [normal(rng, (128, 1024)), normal(rng, (128, 4096))]


# --------------------------------------------------------------------------------------------
# Small graphs.


@bench("small_elementwise", group="small")
def _(rng):
    return (lambda x, y: jnp.tanh(x * y + 1.0) - jnp.exp(-x)), [normal(rng, (1024,)), normal(rng, (1024,))]


@bench("small_gather", group="small")
def _(rng):
    ids = rng.integers(0, 512, (64,), dtype=np.int32)
    return (lambda table, ids: table[ids] * 2.0), [normal(rng, (512, 32)), ids]


@bench("small_scatter_add", group="small")
def _(rng):
    ids = rng.integers(0, 64, (128,), dtype=np.int32)
    return (lambda acc, ids, u: acc.at[ids].add(u)), [np.zeros((64, 16), np.float32), ids, normal(rng, (128, 16))]


@bench("small_conv", group="small")
def _(rng):
    return conv, [normal(rng, (1, 8, 16, 16)), normal(rng, (8, 8, 3, 3), scale=0.2)]


@bench("small_dot", group="small")
def _(rng):
    return (lambda a, b: a @ b), [normal(rng, (32, 64)), normal(rng, (64, 32))]


@bench("small_sort", group="small")
def _(rng):
    return (lambda x: jnp.sort(x)), [normal(rng, (512,))]


@bench("small_while", group="small")
def _(rng):
    def f(x):
        return lax.fori_loop(0, 20, lambda i, x: jnp.sin(x) + i.astype(x.dtype) * 0.01, x)

    return f, [normal(rng, (256,))]


@bench("small_softmax", group="small")
def _(rng):
    return (lambda x: jax.nn.softmax(x, axis=-1)), [normal(rng, (16, 128))]


@bench("small_reduce", group="small")
def _(rng):
    return (lambda x: (x.sum(0), x.max(1))), [normal(rng, (64, 64))]


@bench("small_cumsum", group="small")
def _(rng):
    return (lambda x: jnp.cumsum(x, axis=1)), [normal(rng, (8, 256))]


@bench("small_transpose_select", group="small")
def _(rng):
    return (lambda x, y: jnp.where(x > 0, x.T, y)), [normal(rng, (64, 64)), normal(rng, (64, 64))]


# --------------------------------------------------------------------------------------------


def desc(a):
    return {"dtype": XLA_NAMES[np.dtype(a.dtype)], "shape": list(a.shape)}


def export(case_dir, meta, lowered, compiled, args, outputs, ranks):
    os.makedirs(case_dir, exist_ok=True)
    if ranks == 1:
        proto = lowered.compiler_ir("hlo").as_serialized_hlo_module_proto()
    else:
        # jax lowers a shard_map to one global module with sharding custom calls; the per-device
        # program with its all-reduce exists only after XLA's partitioner.
        proto = compiled.runtime_executable().hlo_modules()[0].as_serialized_hlo_module_proto()
    with open(os.path.join(case_dir, "module.hlo.pb"), "wb") as f:
        f.write(proto)
    if ranks == 1:
        meta["inputs"] = []
        for i, a in enumerate(args):
            a = np.asarray(a)
            np.save(os.path.join(case_dir, f"input_{i}.npy"), a)
            meta["inputs"].append(desc(a))
    else:
        meta["rank_inputs"] = []
        for r in range(ranks):
            descs = []
            for i, a in enumerate(args):
                shard = next(s for s in a.addressable_shards if s.device == jax.devices()[r])
                data = np.asarray(shard.data)
                np.save(os.path.join(case_dir, f"rank{r}_input_{i}.npy"), data)
                descs.append(desc(data))
            meta["rank_inputs"].append(descs)
    meta["outputs"] = []
    for i, o in enumerate(outputs):
        np.save(os.path.join(case_dir, f"output_{i}.npy"), o)
        meta["outputs"].append(desc(o))
    with open(os.path.join(case_dir, "case.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out_dir")
    parser.add_argument("--iters", type=int, default=5, help="at least this many timed runs")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--no-export", action="store_true")
    parser.add_argument("--list", action="store_true",
                        help="print each name and its group, tab-separated, and exit")
    parser.add_argument("--median", action="store_true",
                        help="report the median run, not the best (for a loaded machine)")
    opts = parser.parse_args()
    if opts.list:
        print("\n".join(f"{name}\t{group}" for name, group, *_ in BENCHES))
        return
    names = []
    for name, group, flops, ranks, make in BENCHES:
        if opts.only and name not in opts.only:
            continue
        fn, args = make(np.random.default_rng(zlib.crc32(name.encode())))
        if ranks == 1:
            args = [jax.device_put(np.asarray(a), jax.devices()[0]) for a in args]
        lowered = jax.jit(fn, keep_unused=True).lower(*args)
        compiled = lowered.compile()
        outputs = [np.asarray(o) for o in jax.tree_util.tree_leaves(compiled(*args))]
        if not opts.no_export:
            meta = {"model": name, "group": group, "ranks": ranks, "flops": flops}
            export(os.path.join(opts.out_dir, name), meta, lowered, compiled, args, outputs, ranks)

        def block(result):
            jax.tree_util.tree_map(lambda o: o.block_until_ready(), result)

        for _ in range(opts.warmup):
            block(compiled(*args))
        # At least --iters runs, and for the fast graphs as many as fit in MIN_SECONDS (the
        # interpreter's bench uses the same rule), so a best-of is a best of many.
        times, spent = [], 0.0
        while len(times) < opts.iters or (spent < MIN_SECONDS and len(times) < MAX_ITERS):
            start = time.perf_counter()
            block(compiled(*args))
            elapsed = time.perf_counter() - start
            times.append(elapsed)
            spent += elapsed
        seconds = sorted(times)[len(times) // 2] if opts.median else min(times)
        names.append(name)
        record = {"model": name, "group": group, "seconds": seconds, "flops": flops, "ranks": ranks}
        print(json.dumps(record), flush=True)
    if not opts.no_export:
        with open(os.path.join(opts.out_dir, "cases.txt"), "w") as f:
            f.write("".join(n + "\n" for n in names))
    print(f"timed {len(names)} benchmarks", file=sys.stderr)


if __name__ == "__main__":
    main()
