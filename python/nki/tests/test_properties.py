"""Every elementwise operation the frontend maps to the executor, on random tiles, against NumPy.

Each case is one kernel run over a [128, 64] float32 tile of values drawn for the operation's
domain; NumPy computes the same formula in float64 and the comparison allows float32's rounding
(and the engines' float32 arithmetic). A property holds for every element, not one worked case.
"""

import unittest

import _setup  # noqa: F401
import numpy as np

import nki
import nki.language as nl

RNG = np.random.default_rng(11)


def draw(low, high):
    return RNG.uniform(low, high, size=(128, 64)).astype(np.float32)


def unary_kernel(function):
    @nki.jit
    def kernel(a):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        nl.store(out, function(nl.load(a)))
        return out

    return kernel


def binary_kernel(function):
    @nki.jit
    def kernel(a, b):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        nl.store(out, function(nl.load(a), nl.load(b)))
        return out

    return kernel


def erf(x):
    from math import erf as scalar

    return np.vectorize(scalar)(x)


# name: (nl function, numpy formula, domain)
UNARY = {
    "exp": (nl.exp, np.exp, (-20, 20)),
    "log": (nl.log, np.log, (0.01, 100)),
    "sqrt": (nl.sqrt, np.sqrt, (0, 100)),
    "rsqrt": (nl.rsqrt, lambda x: 1 / np.sqrt(x), (0.01, 100)),
    "tanh": (nl.tanh, np.tanh, (-10, 10)),
    "sigmoid": (nl.sigmoid, lambda x: 1 / (1 + np.exp(-x)), (-20, 20)),
    "relu": (nl.relu, lambda x: np.maximum(x, 0), (-10, 10)),
    "square": (nl.square, np.square, (-100, 100)),
    "abs": (nl.abs, np.abs, (-100, 100)),
    "negative": (nl.negative, np.negative, (-100, 100)),
    "sin": (nl.sin, np.sin, (-10, 10)),
    "cos": (nl.cos, np.cos, (-10, 10)),
    "reciprocal": (nl.reciprocal, lambda x: 1 / x, (0.1, 100)),
    "floor": (nl.floor, np.floor, (-100, 100)),
    "ceil": (nl.ceil, np.ceil, (-100, 100)),
    "sign": (nl.sign, np.sign, (-100, 100)),
    "erf": (nl.erf, erf, (-4, 4)),
    "silu": (nl.silu, lambda x: x / (1 + np.exp(-x)), (-20, 20)),
    "gelu": (nl.gelu, lambda x: 0.5 * x * (1 + erf(x / np.sqrt(2))), (-6, 6)),
    "softplus": (nl.softplus, lambda x: np.log1p(np.exp(x)), (-20, 20)),
}

BINARY = {
    "add": (nl.add, np.add, (-100, 100)),
    "subtract": (nl.subtract, np.subtract, (-100, 100)),
    "multiply": (nl.multiply, np.multiply, (-100, 100)),
    "divide": (nl.divide, np.divide, (0.5, 100)),
    "maximum": (nl.maximum, np.maximum, (-100, 100)),
    "minimum": (nl.minimum, np.minimum, (-100, 100)),
    "power": (nl.power, np.power, (0.5, 4)),
}


class Unary(unittest.TestCase):
    def test_each_function_matches_numpy(self):
        for name, (function, formula, (low, high)) in UNARY.items():
            with self.subTest(name):
                a = draw(low, high)
                got = unary_kernel(function)(a)
                np.testing.assert_allclose(got, formula(a.astype(np.float64)), rtol=2e-6 * 8, atol=1e-6)


class Binary(unittest.TestCase):
    def test_each_operator_matches_numpy(self):
        for name, (function, formula, (low, high)) in BINARY.items():
            with self.subTest(name):
                a, b = draw(low, high), draw(low, high)
                got = binary_kernel(function)(a, b)
                want = formula(a.astype(np.float64), b.astype(np.float64))
                np.testing.assert_allclose(got, want, rtol=2e-6 * 8, atol=1e-6)


class Reductions(unittest.TestCase):
    def test_sum_max_min_along_the_free_axis(self):
        for name, function, formula in (("sum", nl.sum, np.sum), ("max", nl.max, np.max), ("min", nl.min, np.min)):
            with self.subTest(name):
                @nki.jit
                def kernel(a):
                    out = nl.ndarray((a.shape[0], 1), a.dtype, buffer=nl.shared_hbm)
                    nl.store(out, function(nl.load(a), axis=1, keepdims=True))
                    return out

                a = draw(-10, 10)
                want = formula(a.astype(np.float64), axis=1, keepdims=True)
                np.testing.assert_allclose(kernel(a), want, rtol=1e-5, atol=1e-4)


if __name__ == "__main__":
    unittest.main()
