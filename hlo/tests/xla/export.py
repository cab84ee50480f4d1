#!/usr/bin/env python3
"""Export jax functions as XLA HLO modules, with inputs and the outputs XLA on CPU computes for them.

This is the reference side of `hlo/tests/xla_cross_check.rs`: the Rust test runs this script into a
scratch directory under `target/`, then evaluates every module with our interpreter and compares.

Usage:
    export.py OUT_DIR [--set cross|acceptance] [--only NAME ...]

For each case it writes `OUT_DIR/NAME/`:
    module.pb      the HloModuleProto bytes of the module jax lowered (before XLA's optimisations)
    module.hlo     the same module as HLO text (`as_text(dialect="hlo")`)
    optimized.pb   the module as XLA CPU compiled it (after fusion and layout assignment)
    input_N.npy    the entry parameters, in order (seeded numpy, deterministic)
    output_N.npy   XLA's results of the compiled module on CPU, the result tuple flattened
    case.toml      the header: XLA dtype names and shapes of inputs and outputs, per output the
                   tolerance class the Rust test turns into a bound (see that test for the bounds),
                   and `expect = "unsupported"` for a module the interpreter must refuse

npy cannot name bf16 or the f8 types (ml_dtypes saves them as `<V2`, `<V1`, `<f1`), so the dtype
of every file is in case.toml, by XLA's name.

The `cross` set is the cross-check: every dtype and the opcode families jax emits. The `acceptance`
set holds larger graphs the tests never run (a transformer block, a CNN, an RNN via scan), for
checking `nrtsim hlo run` by hand.
"""

import argparse
import os
import sys
import zlib

# One CPU device, few threads: the machine is shared, and results do not depend on it.
os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

jax.config.update("jax_enable_x64", True)

BF16 = ml_dtypes.bfloat16
F8E4M3 = ml_dtypes.float8_e4m3fn
F8E5M2 = ml_dtypes.float8_e5m2
# XLA's F8E4M3 (IEEE-like, with infinities), which nkipy writes for ml_dtypes.float8_e4m3.
F8E4M3_IEEE = ml_dtypes.float8_e4m3

# numpy dtype -> XLA primitive type name (as HLO text spells it).
XLA_NAMES = {
    np.dtype(np.bool_): "pred",
    np.dtype(np.int8): "s8",
    np.dtype(np.int16): "s16",
    np.dtype(np.int32): "s32",
    np.dtype(np.int64): "s64",
    np.dtype(np.uint8): "u8",
    np.dtype(np.uint16): "u16",
    np.dtype(np.uint32): "u32",
    np.dtype(np.uint64): "u64",
    np.dtype(np.float16): "f16",
    np.dtype(BF16): "bf16",
    np.dtype(np.float32): "f32",
    np.dtype(np.float64): "f64",
    np.dtype(F8E4M3): "f8e4m3fn",
    np.dtype(F8E5M2): "f8e5m2",
    np.dtype(F8E4M3_IEEE): "f8e4m3",
}

# Tolerance classes (the Rust test owns the numbers):
#   exact      bit-identical (any NaN matches any NaN); integers and pred are always exact
#   rounded    each output is a short chain of correctly rounded ops (+ - * / sqrt, converts)
#   transc     a transcendental function (exp, log, tanh, sin, erf, pow, ...) at the end of a chain
#   accum:K    sums of about K products (dot, conv, reduce, softmax, norms): XLA may reassociate
#   CLASS@T    CLASS, for an output computed through the narrower float T (XLA may skip rounding
#              to T where the HLO converts back up: excess precision)
EXACT, ROUNDED, TRANSC = "exact", "rounded", "transc"


def accum(k):
    return f"accum:{k}"


CASES = {"cross": [], "acceptance": []}


def case(name, tol=EXACT, set_name="cross", expect=None):
    """Register `make(rng) -> (fn, args)` under `name`; `tol` is a class or a list per output.

    `expect="unsupported"`: the module holds a construct the interpreter reports as unsupported
    (XLA's outputs are still written, for the day it is supported)."""

    def register(make):
        CASES[set_name].append((name, make, tol, expect))
        return make

    return register


def rng_for(name):
    return np.random.default_rng(zlib.crc32(name.encode()))


def normal(rng, shape, dtype=np.float32, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(dtype)


def uniform(rng, shape, lo, hi, dtype=np.float32):
    return rng.uniform(lo, hi, shape).astype(dtype)


def ints(rng, shape, dtype):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)


# --------------------------------------------------------------------------------------------
# Models and their building blocks.


@case("mlp_f32", tol=accum(32))
def _(rng):
    def f(x, w1, b1, w2, b2):
        h = jax.nn.relu(x @ w1 + b1)
        return jnp.tanh(h @ w2 + b2)

    return f, [
        normal(rng, (8, 16)),
        normal(rng, (16, 32), scale=0.25),
        normal(rng, (32,)),
        normal(rng, (32, 4), scale=0.2),
        normal(rng, (4,)),
    ]


@case("attention_f32", tol=accum(32))
def _(rng):
    def f(q, k, v):
        s = jnp.einsum("bhqd,bhkd->bhqk", q, k) / jnp.sqrt(jnp.float32(q.shape[-1]))
        p = jax.nn.softmax(s, axis=-1)
        return jnp.einsum("bhqk,bhkd->bhqd", p, v)

    return f, [normal(rng, (2, 3, 8, 16)) for _ in range(3)]


@case("attention_masked_f32", tol=accum(32))
def _(rng):
    def f(q, k, v):
        s = jnp.einsum("qd,kd->qk", q, k)
        mask = jnp.tril(jnp.ones((q.shape[0], k.shape[0]), bool))
        s = jnp.where(mask, s, -jnp.inf)
        return jax.nn.softmax(s, axis=-1) @ v

    return f, [normal(rng, (6, 8)) for _ in range(3)]


@case("layer_norm_f32", tol=accum(64))
def _(rng):
    def f(x, gamma, beta):
        mean = jnp.mean(x, axis=-1, keepdims=True)
        var = jnp.var(x, axis=-1, keepdims=True)
        return (x - mean) * lax.rsqrt(var + 1e-5) * gamma + beta

    return f, [normal(rng, (4, 64), scale=3.0), normal(rng, (64,)), normal(rng, (64,))]


@case("layer_norm_bf16", tol=accum(64))
def _(rng):
    def f(x, gamma):
        x32 = x.astype(jnp.float32)
        mean = jnp.mean(x32, axis=-1, keepdims=True)
        var = jnp.mean(jnp.square(x32 - mean), axis=-1, keepdims=True)
        return ((x32 - mean) * lax.rsqrt(var + 1e-6)).astype(jnp.bfloat16) * gamma

    return f, [normal(rng, (4, 64), BF16), normal(rng, (64,), BF16)]


@case("conv_relu_pool_f32", tol=[accum(27), accum(27), accum(27)])
def _(rng):
    def f(x, w):
        y = lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NCHW", "OIHW", "NCHW"))
        y = jax.nn.relu(y)
        mx = lax.reduce_window(y, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
        avg = lax.reduce_window(y, 0.0, lax.add, (1, 1, 3, 3), (1, 1, 2, 2), "SAME") / 9.0
        return y, mx, avg

    return f, [normal(rng, (2, 3, 10, 10)), normal(rng, (4, 3, 3, 3), scale=0.3)]


@case("conv_nhwc_strided_dilated_grouped_f32", tol=accum(32))
def _(rng):
    def f(x, w):
        return lax.conv_general_dilated(
            x,
            w,
            window_strides=(2, 1),
            padding=((1, 2), (0, 1)),
            lhs_dilation=(1, 2),
            rhs_dilation=(2, 1),
            dimension_numbers=("NHWC", "HWIO", "NHWC"),
            feature_group_count=2,
        )

    return f, [normal(rng, (2, 9, 7, 4)), normal(rng, (3, 2, 2, 6), scale=0.5)]


@case("conv_1d_batch_group_f32", tol=accum(16))
def _(rng):
    def f(x, w):
        return lax.conv_general_dilated(
            x, w, (1,), "VALID", dimension_numbers=("NCH", "OIH", "NCH"), batch_group_count=2
        )

    return f, [normal(rng, (4, 3, 12)), normal(rng, (6, 3, 5), scale=0.5)]


@case("conv_transpose_f32", tol=accum(36))
def _(rng):
    def f(x, w):
        return lax.conv_transpose(x, w, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))

    return f, [normal(rng, (1, 5, 5, 4)), normal(rng, (3, 3, 4, 2), scale=0.3)]


@case("max_pool_grad_select_and_scatter_f32", tol=ROUNDED)
def _(rng):
    def pool_sum(x):
        return jnp.sum(lax.reduce_window(x, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME") ** 2)

    return jax.grad(pool_sum), [normal(rng, (1, 7, 7, 2))]


# --------------------------------------------------------------------------------------------
# Indexing.


@case("gather_indexing_f32")
def _(rng):
    def f(x, idx, idx2):
        return x[idx], x[:, idx2], x[idx, idx2], jnp.take_along_axis(x, idx2[None, :4] % 6, axis=1)

    return f, [
        normal(rng, (10, 8)),
        np.array([3, 0, 9, 3, -1], np.int32),
        np.array([7, 1, 1, 0, 5], np.int32),
    ]


@case("gather_out_of_bounds_clamped_s32")
def _(rng):
    def f(x, idx):
        return jnp.take(x, idx, axis=0, mode="clip"), jnp.take(x, idx, axis=0, mode="fill", fill_value=-1)

    return f, [np.arange(24, dtype=np.int32).reshape(6, 4), np.array([0, 5, 6, -7, 100, 2], np.int32)]


@case("scatter_add_set_f32", tol=[ROUNDED, EXACT, EXACT, EXACT])
def _(rng):
    def f(x, idx, u, uniq):
        return (
            x.at[idx].add(u),
            x.at[uniq].set(u[: uniq.shape[0]]),
            x.at[idx].max(u),
            x.at[idx].min(u, mode="drop"),
        )

    return f, [
        normal(rng, (6, 3)),
        np.array([1, 4, 1, 0, 4, 9], np.int32),
        normal(rng, (6, 3)),
        np.array([5, 2, 0], np.int32),
    ]


@case("scatter_add_s32_2d")
def _(rng):
    def f(x, rows, cols, u):
        return x.at[rows, cols].add(u), x.at[rows, cols].mul(u)

    return f, [
        rng.integers(-50, 50, (5, 4), dtype=np.int32),
        np.array([0, 4, 0, 2, 2], np.int32),
        np.array([3, 1, 3, 0, 2], np.int32),
        rng.integers(-9, 9, (5,), dtype=np.int32),
    ]


@case("dynamic_slice_update_s32")
def _(rng):
    def f(x, i, j, u):
        return (
            lax.dynamic_slice(x, (i, j), (3, 2)),
            lax.dynamic_update_slice(x, u, (i, j)),
            lax.dynamic_slice(x, (i + 10, j - 10), (2, 3)),
            lax.dynamic_update_slice(x, u, (j - 100, i + 100)),
        )

    return f, [np.arange(35, dtype=np.int32).reshape(5, 7), np.int32(2), np.int32(4), -np.ones((2, 3), np.int32)]


# --------------------------------------------------------------------------------------------
# Sorting.


@case("sort_f32_with_nan")
def _(rng):
    def f(x):
        return jnp.sort(x, axis=-1), jnp.sort(x, axis=0, descending=True), jnp.argsort(x, axis=-1, stable=True)

    x = normal(rng, (4, 7))
    x[0, 2] = np.nan
    x[1, 1] = -0.0
    x[1, 3] = 0.0
    x[2, :] = x[2, 0]
    x[3, 4] = np.inf
    return f, [x]


@case("sort_multi_operand_s32")
def _(rng):
    def f(keys, vals, more):
        return lax.sort((keys, vals, more), dimension=0, num_keys=2, is_stable=True)

    return f, [
        rng.integers(0, 3, (9, 2), dtype=np.int32),
        rng.integers(0, 2, (9, 2), dtype=np.int32),
        np.arange(18, dtype=np.float32).reshape(9, 2),
    ]


@case("top_k_f32")
def _(rng):
    def f(x, y):
        return lax.top_k(x, 3), lax.top_k(y, 2)

    y = np.array([[1, 3, 3, 2, 3], [5, 5, 5, 5, 5]], np.int32)
    return f, [normal(rng, (3, 8)), y]


@case("argmax_argmin_f32")
def _(rng):
    def f(x, y):
        return jnp.argmax(x, axis=1), jnp.argmin(x, axis=0), jnp.argmax(y), jnp.argmin(y, axis=1)

    x = normal(rng, (5, 6))
    x[2, 3] = np.nan
    y = np.array([[1, 7, 7, 2], [7, 0, 0, 7]], np.int16)
    return f, [x, y]


# --------------------------------------------------------------------------------------------
# Control flow.


@case("fori_loop_f32", tol=accum(10))
def _(rng):
    def f(x, w):
        return lax.fori_loop(0, 10, lambda i, acc: jnp.tanh(acc @ w) + i.astype(jnp.float32), x)

    return f, [normal(rng, (3, 4)), normal(rng, (4, 4), scale=0.5)]


@case("while_loop_data_dependent_s64")
def _(rng):
    def f(x):
        def cond(c):
            n, steps = c
            return n != 1

        def body(c):
            n, steps = c
            return jnp.where(n % 2 == 0, n // 2, 3 * n + 1), steps + 1

        return lax.while_loop(cond, body, (x, jnp.int64(0)))

    return f, [np.int64(27)]


@case("cond_and_switch_f32", tol=TRANSC)
def _(rng):
    def f(p, i, x):
        a = lax.cond(p, lambda v: jnp.sin(v), lambda v: jnp.cos(v) * 2.0, x)
        b = lax.switch(i, [lambda v: v + 1.0, lambda v: v * v, lambda v: -v], x)
        c = lax.switch(i + 5, [lambda v: v + 1.0, lambda v: v * v, lambda v: -v], x)
        return a, b, c

    return f, [np.bool_(False), np.int32(1), normal(rng, (5,))]


@case("cumulative_ops_f32", tol=[accum(12), accum(12), EXACT, EXACT, EXACT])
def _(rng):
    def f(x, n):
        return (
            jnp.cumsum(x, axis=1),
            jnp.cumprod(x, axis=0),
            lax.cummax(x, axis=1),
            lax.cummin(x, axis=0, reverse=True),
            jnp.cumsum(n, axis=0),
        )

    return f, [uniform(rng, (4, 12), 0.5, 1.5), rng.integers(-100, 100, (7, 2), dtype=np.int32)]


@case("reductions_f32", tol=[accum(60), accum(60), EXACT, EXACT, EXACT, EXACT])
def _(rng):
    def f(x, b):
        return (
            jnp.sum(x, axis=(0, 2)),
            jnp.prod(x, axis=1),
            jnp.max(x, axis=0),
            jnp.min(x),
            jnp.any(b, axis=1),
            jnp.all(b, axis=0),
        )

    return f, [uniform(rng, (3, 4, 5), 0.5, 1.5), rng.integers(0, 2, (4, 3)).astype(bool)]


# --------------------------------------------------------------------------------------------
# Every dtype: the elementwise and reduction basics.


def float_basics(x, y):
    return (
        x + y,
        x - y,
        x * y,
        x / y,
        jnp.maximum(x, y),
        jnp.minimum(x, y),
        x < y,
        x == y,
        -x,
        jnp.abs(x),
        jnp.sign(x),
        jnp.where(x > y, x, y),
        jnp.sum(x, axis=0),
        x.astype(jnp.float32),
    )


FLOAT_TOL = [ROUNDED] * 4 + [EXACT] * 8 + [accum(6), ROUNDED]


for _name, _dt in [("f32", np.float32), ("f64", np.float64), ("f16", np.float16), ("bf16", BF16)]:

    @case(f"dtype_{_name}", tol=FLOAT_TOL)
    def _(rng, _dt=_dt):
        return float_basics, [normal(rng, (6, 5), _dt, 4.0), normal(rng, (6, 5), _dt, 4.0)]


for _name, _dt in [("f8e4m3fn", F8E4M3), ("f8e5m2", F8E5M2), ("f8e4m3", F8E4M3_IEEE)]:

    @case(f"dtype_{_name}", tol=FLOAT_TOL)
    def _(rng, _dt=_dt):
        # Values well inside range, so products and sums stay finite in both formats.
        return float_basics, [normal(rng, (6, 5), _dt, 2.0), normal(rng, (6, 5), _dt, 2.0)]


def int_basics(x, y):
    nz = jnp.where(y == 0, jnp.ones_like(y), y)
    return (
        x + y,
        x - y,
        x * y,
        lax.div(x, nz),
        lax.rem(x, nz),
        jnp.maximum(x, y),
        jnp.minimum(x, y),
        x & y,
        x | y,
        x ^ y,
        ~x,
        x >= y,
        x != y,
        lax.population_count(x),
        lax.clz(x),
        jnp.sum(x, axis=1),
        jnp.prod(y, axis=0),
        x.astype(jnp.float32),
        -x,
        jnp.abs(x),
        jnp.sign(x),
    )


INT_TOL = [EXACT] * 17 + [ROUNDED] + [EXACT] * 3

for _dt in [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]:
    _name = XLA_NAMES[np.dtype(_dt)]

    @case(f"dtype_{_name}", tol=INT_TOL)
    def _(rng, _dt=_dt):
        return int_basics, [ints(rng, (4, 6), _dt), ints(rng, (4, 6), _dt)]


@case("dtype_pred")
def _(rng):
    def f(a, b, x):
        return a & b, a | b, a ^ b, ~a, jnp.where(a, x, -x), a.astype(jnp.int32), a == b, jnp.maximum(a, b)

    return f, [
        rng.integers(0, 2, (3, 5)).astype(bool),
        rng.integers(0, 2, (3, 5)).astype(bool),
        normal(rng, (3, 5)),
    ]


# --------------------------------------------------------------------------------------------
# Edge cases of integer and float semantics.


def int_edge_inputs(dt):
    info = np.iinfo(dt)
    xs = [7, -7, 7, -7, info.min, info.min, 0, 5, info.max, -1, 1]
    ys = [2, 2, -2, -2, -1, 0, 0, 0, -1, info.min, info.max]
    if info.min == 0:
        xs = [v if v >= 0 else info.max - 3 for v in xs]
        ys = [v if v >= 0 else info.max for v in ys]
    return np.array(xs, dt), np.array(ys, dt)


for _dt in [np.int8, np.int32, np.int64, np.uint8, np.uint32]:
    _name = XLA_NAMES[np.dtype(_dt)]

    @case(f"int_division_edges_{_name}")
    def _(rng, _dt=_dt):
        # Division by zero and MIN / -1 as XLA defines them (no trap), straight from lax.div/rem.
        return (lambda x, y: (lax.div(x, y), lax.rem(x, y))), list(int_edge_inputs(_dt))


for _dt in [np.int8, np.int32, np.uint16, np.uint64]:
    _name = XLA_NAMES[np.dtype(_dt)]

    @case(f"shifts_{_name}")
    def _(rng, _dt=_dt):
        bits = np.iinfo(_dt).bits
        x = np.array([1, 3, np.iinfo(_dt).max, np.iinfo(_dt).min, 5, 6, 100, 0x55], _dt)
        amounts = [0, 1, bits - 1, 1, bits, bits + 3, 2, 3]
        if np.iinfo(_dt).min < 0:
            amounts[-1] = -1
        s = np.array(amounts, _dt)

        def f(x, s):
            return lax.shift_left(x, s), lax.shift_right_logical(x, s), lax.shift_right_arithmetic(x, s)

        return f, [x, s]


@case("nan_max_min_f32")
def _(rng):
    def f(x, y):
        return (
            lax.max(x, y),
            lax.min(x, y),
            jnp.fmax(x, y),
            jnp.max(x.reshape(2, 5), axis=1),
            jnp.nanmax(x.reshape(2, 5), axis=1),
            jnp.clip(x, -1.0, 1.0),
        )

    nan, inf = np.nan, np.inf
    # Signed zeros in both orders and both equal pairs: XLA orders -0 below +0 in max and min.
    x = np.array([nan, 1.0, nan, -0.0, 0.0, inf, -inf, 2.0, -0.0, 0.0], np.float32)
    y = np.array([1.0, nan, nan, 0.0, -0.0, nan, 3.0, -inf, -0.0, 0.0], np.float32)
    return f, [x, y]


@case("clamp_select_s32_f32")
def _(rng):
    def f(lo, x, hi, p, a):
        return lax.clamp(lo, x, hi), lax.clamp(np.int32(-3), x, np.int32(3)), lax.select(p, a, -a), lax.clamp(np.float32(0.0), a, np.float32(0.5))

    return f, [
        rng.integers(-10, 0, (6,), dtype=np.int32),
        rng.integers(-20, 20, (6,), dtype=np.int32),
        rng.integers(0, 10, (6,), dtype=np.int32),
        rng.integers(0, 2, (6,)).astype(bool),
        normal(rng, (6,)),
    ]


@case("convert_float_to_int_edges")
def _(rng):
    def f(x, h):
        return (
            x.astype(jnp.int32),
            x.astype(jnp.uint8),
            x.astype(jnp.int8),
            x.astype(jnp.int64),
            x.astype(jnp.float16),
            x.astype(jnp.bfloat16),
            x.astype(F8E4M3),
            x.astype(F8E5M2),
            h.astype(jnp.float32),
            h.astype(jnp.int16),
        )

    x = np.array(
        [0.5, 1.5, 2.5, -0.5, -1.5, 127.9, 128.0, -129.0, 255.5, 256.0, 3e9, -3e9, 1e20, np.nan, np.inf, -np.inf,
         65504.0, 65520.0, 1e-8, 448.0, 464.0, 3.1415927],
        np.float32,
    )
    h = np.array([1.0, -2.5, 65504.0, np.inf, np.nan, 6e-8], np.float16)
    return f, [x, h]


@case("convert_int_to_float_and_int")
def _(rng):
    def f(a, b):
        return (
            a.astype(jnp.float32),
            a.astype(jnp.float16),
            a.astype(jnp.bfloat16),
            a.astype(jnp.int8),
            a.astype(jnp.uint16),
            b.astype(jnp.int64),
            b.astype(jnp.float64),
            b.astype(jnp.float32),
            a.astype(jnp.bool_),
        )

    a = np.array([0, 1, -1, 127, 128, -129, 16777217, -16777219, 2**31 - 1, -(2**31), 70000], np.int32)
    b = np.array([0, 1, 2**63, 2**64 - 1, 2**53 + 1, 12345], np.uint64)
    return f, [a, b]


@case("bitcast_convert_and_reduce_precision")
def _(rng):
    def f(x, w):
        return (
            lax.bitcast_convert_type(x, jnp.uint32),
            lax.bitcast_convert_type(x, jnp.uint8),
            lax.bitcast_convert_type(w, jnp.float32),
            lax.reduce_precision(x, exponent_bits=5, mantissa_bits=10),
            lax.reduce_precision(x, exponent_bits=8, mantissa_bits=7),
            lax.reduce_precision(x, exponent_bits=4, mantissa_bits=3),
        )

    x = normal(rng, (5,), scale=100.0)
    x[0] = np.nan
    x[1] = 1e-30
    x[2] = 70000.0
    return f, [x, np.array([[0, 0, 128, 63], [255, 255, 127, 127]], np.uint8)]


@case("transcendental_f32", tol=TRANSC)
def _(rng):
    def f(x, p):
        return (
            jnp.exp(x),
            jnp.expm1(x),
            jnp.log(p),
            jnp.log1p(p),
            jnp.sqrt(p),
            lax.rsqrt(p),
            jnp.cbrt(x),
            jnp.tanh(x),
            jax.nn.sigmoid(x),
            jnp.sin(x),
            jnp.cos(x),
            jnp.tan(x),
            lax.erf(x),
            jnp.arctan2(x, p - 1.0),
            jnp.power(p, x),
        )

    x = uniform(rng, (40,), -6.0, 6.0)
    x[:4] = [0.0, -0.0, 1e-6, -3e-5]
    return f, [x, uniform(rng, (40,), 0.01, 20.0)]


@case("tanh_f32_bits")
def _(rng):
    # XLA on CPU evaluates tanh as a rational function of its own; the interpreter uses the same
    # one, so every bit must agree: magnitudes from 1e-6 to 12 (log-spaced, both signs), and the
    # edges of the linear range (0.0004), of the clamp (7.9988...) and of the special values.
    mags = np.geomspace(1e-6, 12.0, 2000).astype(np.float32)
    edges = np.array(
        [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-45, 0.0004, 0.00039999998, 0.00040000002,
         7.998811721801758, 7.99881124, 7.9988122, 9.0, 0.625, -0.625, 88.0],
        np.float32,
    )
    return jnp.tanh, [np.concatenate([mags, -mags, edges])]


@case("exp_logistic_f32_bits")
def _(rng):
    # exp (and logistic, which XLA expands through it) as XLA on CPU computes them, bit for bit,
    # wherever the result is a normal float: XLA flushes subnormal results to zero and the
    # interpreter does not (see subnormals_flush_to_zero), so no argument here makes one.
    mags = np.geomspace(1e-7, 87.0, 2000).astype(np.float32)
    edges = np.array(
        [0.0, -0.0, np.inf, -np.inf, np.nan, 88.3, 88.5, 88.72, 88.7228, 88.73, 89.0, 100.0,
         0.34657359, -0.34657359, 2.0794415],
        np.float32,
    )
    x = np.concatenate([mags, -mags, edges])
    return (lambda x: (jnp.exp(x), jax.nn.sigmoid(x))), [x]


@case("transcendental_f64", tol=TRANSC)
def _(rng):
    def f(x, p):
        return jnp.exp(x), jnp.log(p), jnp.tanh(x), jnp.sin(x), jnp.sqrt(p), jnp.power(p, x), lax.logistic(x)

    return f, [uniform(rng, (20,), -5.0, 5.0, np.float64), uniform(rng, (20,), 0.01, 20.0, np.float64)]


@case("transcendental_bf16_f16", tol=TRANSC)
def _(rng):
    def f(x, h):
        return jnp.exp(x), jnp.tanh(x), jnp.log(jnp.abs(x) + 1), jnp.exp(h), lax.logistic(h), jnp.sqrt(jnp.abs(h))

    return f, [uniform(rng, (16,), -4.0, 4.0, BF16), uniform(rng, (16,), -4.0, 4.0, np.float16)]


@case("rounding_and_classification_f32")
def _(rng):
    def f(x):
        return (
            jnp.floor(x),
            jnp.ceil(x),
            lax.round(x, lax.RoundingMethod.AWAY_FROM_ZERO),
            lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN),
            jnp.isfinite(x),
            jnp.sign(x),
            lax.is_finite(x.astype(jnp.float16)),
        )

    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, 1e10, -0.0, np.nan, np.inf, -np.inf, 7.0, 65520.0],
                 np.float32)
    return f, [x]


@case("remainder_power_float_edges", tol=[EXACT, EXACT, TRANSC])
def _(rng):
    def f(x, y):
        return lax.rem(x, y), jnp.fmod(x, y), lax.pow(x, y)

    x = np.array([5.5, -5.5, 5.5, -5.5, 1.0, 0.0, np.inf, 3.0, -8.0, 2.0, 0.0, -2.0], np.float32)
    y = np.array([2.0, 2.0, -2.0, -2.0, 0.0, 3.0, 2.0, np.inf, 1.0 / 3.0, -1.0, -1.0, 3.0], np.float32)
    return f, [x, y]


# --------------------------------------------------------------------------------------------
# Data movement.


@case("concatenate_pad_reverse_f32")
def _(rng):
    def f(a, b):
        return (
            jnp.concatenate([a, b, a], axis=1),
            lax.pad(a, np.float32(0.5), [(1, 2, 0), (-1, 1, 2)]),
            lax.rev(b, (0, 1)),
            jnp.pad(b, ((0, 0), (2, 0)), mode="edge"),
        )

    return f, [normal(rng, (3, 4)), normal(rng, (3, 2))]


@case("iota_broadcast_reshape_transpose")
def _(rng):
    def f(x):
        return (
            lax.iota(jnp.int32, 7),
            lax.broadcasted_iota(jnp.float32, (3, 4), 1),
            lax.broadcasted_iota(jnp.uint8, (2, 3, 2), 0),
            jnp.transpose(x, (2, 0, 1)),
            x.T.reshape(-1, 6),
            jnp.broadcast_to(x[:, :1, None], (2, 3, 2, 4)),
            lax.broadcast_in_dim(x[0, 0], (3, 4), (1,)),
            jnp.flip(jnp.swapaxes(x, 0, 2), axis=1),
        )

    return f, [normal(rng, (2, 3, 4))]


@case("slices_strided_f64")
def _(rng):
    def f(x):
        return x[1:4, ::2], x[::-1, 1::3], lax.slice(x, (0, 1), (5, 7), (2, 3)), x[2], x[:, -1]

    return f, [normal(rng, (5, 7), np.float64)]


@case("dot_general_variants", tol=[accum(8), accum(24), EXACT, accum(16), accum(8)])
def _(rng):
    def f(a, b, c, d, i8a, i8b, h, g):
        return (
            lax.dot_general(a, b, (((1,), (2,)), ((0,), (1,)))),
            jnp.einsum("ijk,jkl->il", c, d),
            lax.dot_general(i8a, i8b, (((1,), (0,)), ((), ())), preferred_element_type=jnp.int32),
            lax.dot_general(h, h, (((1,), (1,)), ((), ())), preferred_element_type=jnp.float32),
            jnp.dot(g, g[0]),
        )

    return f, [
        normal(rng, (3, 8, 2)),
        normal(rng, (5, 3, 8)),
        normal(rng, (2, 4, 6)),
        normal(rng, (4, 6, 3)),
        rng.integers(-128, 127, (3, 16), dtype=np.int8),
        rng.integers(-128, 127, (16, 5), dtype=np.int8),
        normal(rng, (4, 16), BF16),
        normal(rng, (8, 8), np.float64),
    ]


# --------------------------------------------------------------------------------------------
# Sizes and variants that take other paths: blocked matrix products, batched (vmapped) indexing,
# windows with dilation, narrow-float kernels, empty arrays, special values.


@case("dot_large_f32", tol=[accum(96), accum(200)])
def _(rng):
    def f(a, b, c):
        return a @ b, jnp.einsum("bij,bjk->bik", c, c)

    return f, [normal(rng, (67, 96)), normal(rng, (96, 130)), normal(rng, (3, 200, 200), scale=0.1)]


@case("dot_s32_wrapping_and_u8")
def _(rng):
    def f(a, b, u, v):
        return a @ b, lax.dot(u, v, preferred_element_type=jnp.uint32), lax.dot(u, v)

    return f, [
        rng.integers(-(2**31), 2**31 - 1, (4, 9), dtype=np.int32),
        rng.integers(-(2**31), 2**31 - 1, (9, 3), dtype=np.int32),
        rng.integers(0, 255, (5, 40), dtype=np.uint8),
        rng.integers(0, 255, (40, 2), dtype=np.uint8),
    ]


@case("dot_conv_narrow_floats", tol=[accum(64), accum(64), accum(36), accum(36)])
def _(rng):
    def f(a, b, h, x, w):
        return (
            a @ b,
            h @ h.T,
            lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NCHW", "OIHW", "NCHW")),
            lax.conv_general_dilated(
                x, w, (1, 1), "SAME", dimension_numbers=("NCHW", "OIHW", "NCHW"), preferred_element_type=jnp.float32
            ),
        )

    return f, [
        normal(rng, (8, 64), BF16),
        normal(rng, (64, 8), BF16),
        normal(rng, (6, 64), np.float16),
        normal(rng, (1, 4, 6, 6), BF16),
        normal(rng, (3, 4, 3, 3), BF16),
    ]


# Narrow dot and convolution deep enough (K = 1024 and 1152) for the order of the f32 sums to
# matter: both sides sum in f32 and round to the narrow type once per output element.
@case("dot_conv_narrow_floats_deep", tol=[accum(1024), accum(1024), accum(1152), accum(1152)])
def _(rng):
    def f(a, b, h, g, x, w, y, v):
        conv = lambda x, w: lax.conv_general_dilated(
            x, w, (1, 1), "SAME", dimension_numbers=("NCHW", "OIHW", "NCHW")
        )
        return a @ b, h @ g, conv(x, w), conv(y, v)

    return f, [
        normal(rng, (20, 1024), BF16),
        normal(rng, (1024, 40), BF16),
        normal(rng, (20, 1024), np.float16),
        normal(rng, (1024, 40), np.float16, 0.25),
        normal(rng, (2, 128, 7, 7), BF16),
        normal(rng, (24, 128, 3, 3), BF16),
        normal(rng, (2, 128, 7, 7), np.float16),
        normal(rng, (24, 128, 3, 3), np.float16, 0.25),
    ]


@case("conv_large_f32", tol=accum(288))
def _(rng):
    def f(x, w):
        return lax.conv_general_dilated(x, w, (1, 1), ((1, 1), (1, 1)), dimension_numbers=("NCHW", "OIHW", "NCHW"))

    return f, [normal(rng, (2, 32, 12, 12)), normal(rng, (48, 32, 3, 3), scale=0.1)]


@case("vmapped_gather_scatter_batching_dims", tol=[EXACT, ROUNDED, EXACT])
def _(rng):
    def f(xs, idx, us):
        g = jax.vmap(lambda x, i: x[i])(xs, idx)
        s = jax.vmap(lambda x, i, u: x.at[i].add(u))(xs, idx, us)
        t = jax.vmap(lambda x, i: jnp.take_along_axis(x[:3], i[:, None] % 3, axis=1))(xs, idx)
        return g, s, t

    return f, [
        normal(rng, (4, 6, 3)),
        np.array([[0, 5, 5], [1, 1, 2], [3, 0, 4], [5, 5, 5]], np.int32),
        normal(rng, (4, 3, 3)),
    ]


@case("reduce_window_dilated_and_narrow", tol=[EXACT, accum(12), accum(8), EXACT])
def _(rng):
    def f(x, h):
        return (
            lax.reduce_window(x, -jnp.inf, lax.max, (2, 3), (1, 2), ((1, 1), (2, 0)), window_dilation=(2, 1)),
            lax.reduce_window(x, 0.0, lax.add, (3, 2), (2, 1), "VALID", base_dilation=(2, 1)),
            jnp.cumsum(h, axis=0),
            lax.reduce_window(h, -jnp.inf, lax.max, (2,), (1,), "SAME"),
        )

    return f, [normal(rng, (7, 9)), normal(rng, (8,), BF16)]


@case("sort_narrow_and_unsigned", tol=EXACT)
def _(rng):
    def f(b, h, u, big):
        return (
            jnp.sort(b),
            jnp.sort(h, descending=True),
            jnp.sort(u),
            jnp.argsort(u, stable=True, descending=True),
            lax.top_k(big, 5),
        )

    b = normal(rng, (9,), BF16)
    b[3] = np.nan
    b[4] = -0.0
    h = normal(rng, (7,), np.float16)
    h[0] = -np.inf
    u = np.array([3, 2**63, 0, 2**64 - 1, 3, 7, 2**63], np.uint64)
    big = np.round(normal(rng, (3, 1500)) * 4).astype(np.float32)
    return f, [b, h, u, big]


@case("float_special_values", tol=[TRANSC] * 8 + [EXACT] * 2)
def _(rng):
    def f(x):
        return (
            jnp.log(x),
            lax.rsqrt(x),
            jnp.sqrt(x),
            jnp.exp(x),
            jnp.tanh(x),
            jnp.power(x, -1.0),
            jnp.log1p(x),
            jnp.expm1(x * 1e-7),
            jnp.floor(x),
            lax.clamp(np.float32(-1.0), x, np.float32(1.0)),
        )

    # No subnormals here: XLA CPU flushes them (see subnormals_flush_to_zero).
    x = np.array([0.0, -0.0, -1.0, np.inf, -np.inf, np.nan, 1e-37, 100.0, -100.0, 89.0, -1.0 + 1e-7, 1e-30],
                 np.float32)
    return f, [x]


@case("narrow_float_overflow_and_rounding", tol=EXACT)
def _(rng):
    def f(a, b, h, x):
        return (
            a + b,
            a * b,
            (a * b).astype(jnp.float32),
            h.astype(F8E5M2),
            h.astype(F8E4M3),
            x.astype(jnp.bfloat16),
            x.astype(jnp.float16),
            jnp.round(h),
            lax.iota(jnp.bfloat16, 300),
        )

    a = np.array([448, 256, -448, 0.015625, 240, 2, -0.0, 1.5], F8E4M3)
    b = np.array([448, 256, 64, 0.001953125, 16, 0.5, 0.0, 1.5], F8E4M3)
    h = np.array([1.0, 57344.0, 61440.0, 65504.0, 0.1, -3.5, 2.5, 6e-5, 500.0, 448.0, 465.0, np.nan], np.float16)
    x = np.array([1e-37, -1e-37, 3.4e38, 65519.0, 65520.0, 1.00390625, 1.01171875, -0.0, np.nan, 5.96e-8],
                 np.float64)
    return f, [a, b, h, x]


@case("subnormals_flush_to_zero")
def _(rng):
    # XLA CPU runs with subnormals flushed to zero, on input and output of arithmetic (x86 FTZ and
    # DAZ), in f32 and f64 alike; moving data keeps their bits. The Rust test lists the outputs
    # where the interpreter differs as known differences.
    def f(x, d, y, e):
        return (
            lax.max(x, y),
            x > y,
            x.astype(jnp.float64),
            d.astype(jnp.float32),
            d > 0,
            x.astype(jnp.bfloat16),
            jnp.reshape(x, (5, 1)),
            lax.bitcast_convert_type(x, jnp.int32),
            e.astype(jnp.bfloat16),
        )

    x = np.array([1e-45, -1e-45, 1e-39, 1.2e-38, 1.0], np.float32)
    e = np.array([1e-40, -1e-40, 1.0], np.float64)
    return f, [x, np.array([1e-310, 5e-324, 1.0], np.float64), np.zeros(5, np.float32), e]


@case("empty_and_scalar_arrays")
def _(rng):
    def f(e, s, x):
        return (
            jnp.sum(e, axis=0),
            jnp.max(e, axis=0, initial=-jnp.inf),
            jnp.concatenate([e, x[:0]], axis=0),
            e.T,
            s * 2,
            jnp.argmax(x),
            jnp.sort(x[:0]),
        )

    return f, [np.zeros((0, 3), np.float32), np.int64(21), normal(rng, (4, 3))]


@case("control_flow_nested_and_tuples", tol=[EXACT, accum(8), EXACT])
def _(rng):
    def f(n, x, flags):
        def outer(i, carry):
            total, acc = carry

            def inner(j, t):
                return t + (i * j).astype(jnp.int32)

            total = lax.fori_loop(0, i, inner, total)
            acc = lax.cond(flags[i], lambda a: a * 0.5, lambda a: a + 1.0, acc)
            return total, acc

        total, acc = lax.fori_loop(0, n, outer, (jnp.int32(0), x))
        idx = lax.switch(jnp.clip(n - 3, 0, 2), [lambda: jnp.int8(-1), lambda: jnp.int8(5), lambda: jnp.int8(9)])
        return total, acc, idx

    return f, [np.int32(5), normal(rng, (3,)), np.array([True, False, True, True, False], bool)]


@case("scan_reverse_and_cumulative_ints", tol=[accum(10), EXACT, EXACT, EXACT])
def _(rng):
    def f(xs, n):
        carry, ys = lax.scan(lambda c, x: (c * 0.9 + x, c), jnp.zeros(3, jnp.float32), xs, reverse=True)
        return carry, lax.cumsum(n, axis=0, reverse=True), lax.cummax(n, axis=0), lax.cumprod(n.astype(jnp.int8), axis=0)

    return f, [normal(rng, (10, 3)), rng.integers(-100, 100, (6, 2), dtype=np.int32)]


@case("convert_wide_ints_and_f64")
def _(rng):
    def f(s, u, d):
        return (
            s.astype(jnp.uint64),
            s.astype(jnp.int8),
            u.astype(jnp.int64),
            u.astype(jnp.float32),
            d.astype(jnp.int64),
            d.astype(jnp.uint64),
            d.astype(jnp.uint32),
            d.astype(jnp.float32),
            s.astype(jnp.float64),
        )

    s = np.array([-1, 0, 2**63 - 1, -(2**63), 300, -129, 2**53 + 1], np.int64)
    u = np.array([0, 1, 2**63, 2**64 - 1, 2**24 + 1, 2**53 + 1, 5], np.uint64)
    d = np.array([-1.5, 1e19, 2e19, -1e19, np.nan, 4294967295.5, 3.4e39], np.float64)
    return f, [s, u, d]


@case("random_threefry", tol=[ROUNDED, TRANSC, EXACT, EXACT, EXACT])
def _(rng):
    # jax's default generator is threefry in plain HLO (u32 arithmetic, shifts, a while loop).
    def f(k):
        key = jax.random.wrap_key_data(k)
        k1, k2 = jax.random.split(key)
        return (
            jax.random.uniform(k1, (6,)),
            jax.random.normal(k2, (4,), jnp.float32),
            jax.random.randint(key, (5,), 0, 10),
            jax.random.bits(k2, (3,), jnp.uint32),
            jax.random.permutation(k1, 8),
        )

    return f, [np.asarray(jax.random.key_data(jax.random.PRNGKey(42)))]


@case("unsupported_rng_bit_generator", expect="unsupported")
def _(rng):
    return (lambda k: lax.rng_bit_generator(k, (4,), dtype=jnp.uint32)), [np.arange(4, dtype=np.uint32)]


@case("unsupported_custom_call_lapack", tol=ROUNDED, expect="unsupported")
def _(rng):
    a = normal(rng, (3, 3))
    return jnp.linalg.cholesky, [a @ a.T + 3 * np.eye(3, dtype=np.float32)]


# --------------------------------------------------------------------------------------------
# Acceptance: graphs the tests never run, for `nrtsim hlo run`.


# The f64 scale constant makes the output f64 (x64 is on), its value computed mostly in f32.
@case("transformer_block_f32", tol=accum(64) + "@f32", set_name="acceptance")
def _(rng):
    d, h, t = 32, 4, 10

    def ln(x, g):
        m = x.mean(-1, keepdims=True)
        return (x - m) * lax.rsqrt(((x - m) ** 2).mean(-1, keepdims=True) + 1e-5) * g

    def f(x, wqkv, wo, w1, w2, g1, g2):
        y = ln(x, g1)
        q, k, v = jnp.split(y @ wqkv, 3, axis=-1)
        split = lambda z: z.reshape(t, h, d // h).transpose(1, 0, 2)
        q, k, v = split(q), split(k), split(v)
        s = jnp.einsum("hqd,hkd->hqk", q, k) / np.sqrt(d // h)
        s = jnp.where(jnp.tril(jnp.ones((t, t), bool)), s, -1e9)
        o = jnp.einsum("hqk,hkd->hqd", jax.nn.softmax(s, -1), v).transpose(1, 0, 2).reshape(t, d)
        x = x + o @ wo
        return x + jax.nn.gelu(ln(x, g2) @ w1) @ w2

    return f, [
        normal(rng, (t, d)),
        normal(rng, (d, 3 * d), scale=d**-0.5),
        normal(rng, (d, d), scale=d**-0.5),
        normal(rng, (d, 4 * d), scale=d**-0.5),
        normal(rng, (4 * d, d), scale=(4 * d) ** -0.5),
        normal(rng, (d,)) * 0.1 + 1,
        normal(rng, (d,)) * 0.1 + 1,
    ]


@case("cnn_f32", tol=accum(72), set_name="acceptance")
def _(rng):
    def f(x, w1, w2, wd, bd):
        y = jax.nn.relu(lax.conv_general_dilated(x, w1, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")))
        y = lax.reduce_window(y, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        y = jax.nn.relu(lax.conv_general_dilated(y, w2, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")))
        y = y.mean(axis=(1, 2))
        return jax.nn.log_softmax(y @ wd + bd)

    return f, [
        normal(rng, (2, 16, 16, 3)),
        normal(rng, (3, 3, 3, 8), scale=0.3),
        normal(rng, (3, 3, 8, 16), scale=0.15),
        normal(rng, (16, 10), scale=0.3),
        normal(rng, (10,)),
    ]


@case("rnn_scan_f32", tol=accum(48), set_name="acceptance")
def _(rng):
    def f(xs, h0, wx, wh, b):
        def cell(h, x):
            h = jnp.tanh(x @ wx + h @ wh + b)
            return h, h.sum()

        return lax.scan(cell, h0, xs)

    return f, [
        normal(rng, (12, 2, 8)),
        np.zeros((2, 16), np.float32),
        normal(rng, (8, 16), scale=0.35),
        normal(rng, (16, 16), scale=0.25),
        normal(rng, (16,), scale=0.1),
    ]


# The bf16 dot is read as f32: XLA skips its rounding to bf16 (excess precision).
@case("gru_bf16_sort_gather", tol=[ROUNDED + "@bf16", EXACT, EXACT], set_name="acceptance")
def _(rng):
    def f(x, w, table, ids):
        hid = jax.nn.sigmoid((x @ w).astype(jnp.float32))
        emb = table[ids]
        vals, idx = lax.top_k(emb.sum(-1), 3)
        return hid, jnp.sort(emb, axis=0), idx

    return f, [
        normal(rng, (4, 8), BF16),
        normal(rng, (8, 6), BF16),
        rng.integers(-50, 50, (10, 3), dtype=np.int32),
        np.array([9, 0, 3, 3, 7], np.int32),
    ]


@case("mlp_training_step_f32", tol=accum(64), set_name="acceptance")
def _(rng):
    def loss(params, x, y):
        w1, b1, w2 = params
        h = jax.nn.relu(x @ w1 + b1)
        logits = h @ w2
        return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * y, axis=-1))

    def f(w1, b1, w2, x, labels):
        y = jax.nn.one_hot(labels, 5, dtype=jnp.float32)
        value, grads = jax.value_and_grad(loss)((w1, b1, w2), x, y)
        w1, b1, w2 = [p - 0.1 * g for p, g in zip((w1, b1, w2), grads)]
        return value, w1, b1, w2

    return f, [
        normal(rng, (12, 16), scale=0.3),
        np.zeros(16, np.float32),
        normal(rng, (16, 5), scale=0.3),
        normal(rng, (8, 12)),
        rng.integers(0, 5, (8,), dtype=np.int32),
    ]


@case("attention_bf16_params_f32_accumulate", tol=[accum(16) + "@bf16"], set_name="acceptance")
def _(rng):
    def f(x, wq, wk, wv):
        q, k, v = (jnp.dot(x, w, preferred_element_type=jnp.float32) for w in (wq, wk, wv))
        p = jax.nn.softmax(q @ k.T / 4.0, axis=-1)
        return (p @ v).astype(jnp.bfloat16)

    return f, [normal(rng, (6, 16), BF16), *(normal(rng, (16, 16), BF16, 0.25) for _ in range(3))]


@case("linear_solve_lapack", tol=ROUNDED, set_name="acceptance", expect="unsupported")
def _(rng):
    a = normal(rng, (4, 4)) + 4 * np.eye(4, dtype=np.float32)
    return jnp.linalg.solve, [a, normal(rng, (4,))]


# --------------------------------------------------------------------------------------------


def export(out_dir, name, make, tol, expect):
    fn, args = make(rng_for(name))
    args = [np.asarray(a) for a in args]
    lowered = jax.jit(fn, keep_unused=True).lower(*args)
    text = lowered.as_text(dialect="hlo")
    proto = lowered.compiler_ir("hlo").as_serialized_hlo_module_proto()
    compiled = lowered.compile()
    outputs = [np.asarray(o) for o in jax.tree_util.tree_leaves(compiled(*args))]
    optimized = compiled.runtime_executable().hlo_modules()[0].as_serialized_hlo_module_proto()
    tols = tol if isinstance(tol, list) else [tol] * len(outputs)
    if len(tols) != len(outputs):
        raise SystemExit(f"{name}: {len(tols)} tolerances for {len(outputs)} outputs")

    case_dir = os.path.join(out_dir, name)
    os.makedirs(case_dir, exist_ok=True)
    with open(os.path.join(case_dir, "module.pb"), "wb") as f:
        f.write(proto)
    with open(os.path.join(case_dir, "module.hlo"), "w") as f:
        f.write(text)
    with open(os.path.join(case_dir, "optimized.pb"), "wb") as f:
        f.write(optimized)
    for i, a in enumerate(args):
        np.save(os.path.join(case_dir, f"input_{i}.npy"), a)
    for i, o in enumerate(outputs):
        np.save(os.path.join(case_dir, f"output_{i}.npy"), o)

    # TOML by hand: Python's standard library reads TOML but cannot write it. Every value is a
    # name from this script or a list of integers, so none needs escaping; `inputs` and `outputs`
    # are arrays of tables, absent when there is none.
    def desc(table, a):
        return [f"[[{table}]]", f'dtype = "{XLA_NAMES[a.dtype]}"', f"shape = {list(a.shape)}"]

    lines = [f'expect = "{expect}"', ""] if expect else []
    for a in args:
        lines += [*desc("inputs", a), ""]
    for o, t in zip(outputs, tols):
        lines += [*desc("outputs", o), f'tolerance = "{t}"', ""]
    with open(os.path.join(case_dir, "case.toml"), "w") as f:
        f.write("\n".join(lines))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out_dir")
    parser.add_argument("--set", dest="set_name", choices=sorted(CASES), default="cross")
    parser.add_argument("--only", nargs="*", default=None)
    opts = parser.parse_args()
    os.makedirs(opts.out_dir, exist_ok=True)
    names = []
    for name, make, tol, expect in CASES[opts.set_name]:
        if opts.only and name not in opts.only:
            continue
        export(opts.out_dir, name, make, tol, expect)
        names.append(name)
    with open(os.path.join(opts.out_dir, "cases.txt"), "w") as f:
        f.write("".join(n + "\n" for n in names))
    print(f"exported {len(names)} cases to {opts.out_dir}", file=sys.stderr)


if __name__ == "__main__":
    main()
