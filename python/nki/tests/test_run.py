"""Kernels run end to end on nrtsim's executor, against NumPy.

The kernels are small and written here; each expectation is NumPy's result for the same
arithmetic (or a value worked out by hand), never a saved output of our own.
"""

import os
import unittest
import warnings

import _setup  # noqa: F401
import ml_dtypes
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl
from nrtsim_nki import NkiError, NkiWarning

RNG = np.random.default_rng(7)


def rand(*shape, dtype=np.float32):
    return (RNG.random(shape, dtype=np.float32) * 2 - 1).astype(dtype)


@nki.jit
def add_kernel(a, b):
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.add(nl.load(a), nl.load(b)))
    return out


@nki.jit
def matmul_kernel(lhs_t, rhs):
    """lhs_t is [K, M] (K a multiple of 128), rhs [K, N]: out = lhs_tᵀ @ rhs."""
    k, m = lhs_t.shape
    _, n = rhs.shape
    out = nl.ndarray((m, n), nl.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((m, n), nl.float32, buffer=nl.psum)
    for i in nl.affine_range(k // 128):
        x = nl.load(lhs_t[i * 128:(i + 1) * 128, :])
        y = nl.load(rhs[i * 128:(i + 1) * 128, :])
        acc += nisa.nc_matmul(x, y)
    nl.store(out, nl.copy(acc))
    return out


@nki.jit
def softmax_kernel(x):
    out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.softmax(nl.load(x), axis=1))
    return out


@nki.jit
def masked_square_kernel(a):
    out = nl.ndarray((64, 256), a.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(512)[None, :]
    tile = nl.load(a[i_p, i_f])
    sq = nl.square(tile, mask=((i_p < 64) & (i_f < 256)))
    nl.store(out[i_p, i_f], sq[i_p, i_f], mask=((i_p < 64) & (i_f < 256)))
    return out


@nki.jit
def copy_rows_kernel(a):
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    i = nl.program_id(0)
    nl.store(out[i], nl.load(a[i]))
    return out


def in_place_kernel(a, out):
    nl.store(out, nl.multiply(nl.load(a), 2.0))


@nki.jit
def partial_output_kernel(a):
    out = nl.ndarray((128, 8), a.dtype, buffer=nl.shared_hbm)
    nl.store(out[:, 0:4], nl.load(a[:, 0:4]))
    return out


class Results(unittest.TestCase):
    def test_add_equals_numpy(self):
        a, b = rand(128, 512), rand(128, 512)
        np.testing.assert_array_equal(add_kernel(a, b), a + b)

    def test_bf16_add_rounds_once_to_nearest_even(self):
        a = np.array([[1.0, 256.0]], dtype=ml_dtypes.bfloat16)
        # 1 + 2^-8 is halfway between 1 and 1 + 2^-7 in bfloat16: ties go to the even, 1.0;
        # 256 + 1 is halfway between 256 and 258: to 256 as well.
        b = np.array([[2.0 ** -8, 1.0]], dtype=ml_dtypes.bfloat16)
        out = add_kernel(a, b)
        self.assertEqual(out.dtype, np.dtype(ml_dtypes.bfloat16))
        np.testing.assert_array_equal(out.astype(np.float32), np.array([[1.0, 256.0]], np.float32))

    def test_tiled_matmul_accumulates_in_psum(self):
        lhs_t, rhs = rand(256, 128), rand(256, 512)
        out = matmul_kernel(lhs_t, rhs)
        np.testing.assert_allclose(out, lhs_t.astype(np.float64).T @ rhs, rtol=1e-5, atol=1e-4)

    def test_softmax_rows_sum_to_one(self):
        x = rand(128, 64) * 4
        out = softmax_kernel(x)
        e = np.exp(x - x.max(axis=1, keepdims=True))
        np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)

    def test_masked_store_writes_only_the_masked_region(self):
        a = rand(128, 512)
        np.testing.assert_allclose(masked_square_kernel(a), np.square(a[:64, :256]), rtol=1e-6)

    def test_spmd_grid_runs_each_program(self):
        a = rand(4, 128, 32)
        np.testing.assert_array_equal(copy_rows_kernel[4](a), a)

    def test_an_output_passed_as_argument_is_written_in_place(self):
        a = rand(128, 16)
        out = np.zeros_like(a)
        self.assertIsNone(nki.simulate_kernel(in_place_kernel, a, out))
        np.testing.assert_array_equal(out, a * 2)


class Summary(unittest.TestCase):
    def test_the_summary_counts_what_the_kernel_did(self):
        a, b = rand(128, 512), rand(128, 512)
        add_kernel(a, b)
        stats = add_kernel.last_report["stats"]
        # Two loads and a store on the DMA queues, one add on the vector engine.
        self.assertEqual(stats["instructions_per_engine"], {"dma": 3, "vector": 1})
        # Each DMA moves 128 x 512 float32: 256 KiB, three times.
        self.assertEqual(stats["dma_bytes"], 3 * 128 * 512 * 4)
        # The three SBUF tiles are live together at the add: 3 x 512 x 4 bytes per partition.
        self.assertEqual(stats["peak_sbuf_bytes_per_partition"], 3 * 512 * 4)
        self.assertIn("4 instructions (dma 3, vector 1)", add_kernel.summary())


class Benchmark(unittest.TestCase):
    def test_a_benchmark_runs_and_says_it_has_no_latency(self):
        kernel = nki.benchmark(warmup=5, iters=10)(add_kernel)
        a = rand(128, 8)
        np.testing.assert_array_equal(kernel(a, a), a + a)
        self.assertEqual(kernel.benchmark_result.report["stats"]["instructions"], 4)
        with self.assertRaisesRegex(NkiError, "no timing model"):
            kernel.benchmark_result.nc_latency.get_latency_percentile(50)


class Findings(unittest.TestCase):
    def test_an_output_element_never_written_is_a_warning_naming_the_line(self):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = partial_output_kernel(rand(128, 8))
        found = [w for w in caught if issubclass(w.category, NkiWarning)]
        self.assertTrue(found, "expected an NkiWarning for the unwritten half of the output")
        self.assertIn("test_run.py", str(found[0].message))
        np.testing.assert_array_equal(out[:, 4:], 0)

    def test_strict_mode_makes_the_warning_an_error(self):
        os.environ["NRTSIM_NKI_STRICT"] = "1"
        try:
            with self.assertRaises(NkiError):
                partial_output_kernel(rand(128, 8))
        finally:
            del os.environ["NRTSIM_NKI_STRICT"]

    def test_an_access_past_the_tensor_is_an_index_error_at_the_kernel_line(self):
        @nki.jit
        def past_the_end(a):
            out = nl.ndarray((128, 4), a.dtype, buffer=nl.shared_hbm)
            nl.store(out, nl.load(a[nl.arange(128)[:, None] + 1, nl.arange(4)[None, :]]))
            return out

        with self.assertRaises(IndexError) as caught:
            past_the_end(rand(128, 4))
        # Row 128 of a [128, 4] tensor starts at flat offset 512, the first outside.
        self.assertEqual(str(caught.exception), "index 512 is out of bounds for axis 0 with size 512")
        self.assertIn("test_run.py", caught.exception.detail)

    def test_sbuf_over_capacity_is_an_error(self):
        @nki.jit(platform_target="trn1")
        def too_big(a):
            out = nl.ndarray((128, 4), a.dtype, buffer=nl.shared_hbm)
            big = nl.zeros((128, 60 * 1024), nl.float32)  # 240 KiB per partition > 192 KiB
            nl.store(out, nl.load(a))
            nl.store(out, big[:, 0:4])
            return out

        with self.assertRaisesRegex(NkiError, "SBUF"):
            too_big(rand(128, 4))


if __name__ == "__main__":
    unittest.main()
