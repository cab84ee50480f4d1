"""What the frontend records: access patterns, masks and instructions of small kernels.

Every expected value here is worked out by hand from the kernel's indexing (row-major strides),
not taken from a run.
"""

import unittest

import _setup  # noqa: F401
import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
from nrtsim_nki import NkiError


def trace(kernel, *args):
    tr, _, _, result = nki.jit(kernel).trace(args, {})
    return tr.document(), result


class Namespaces(unittest.TestCase):
    def test_both_names_are_one_module(self):
        import nki as top
        import nki.language
        import neuronxcc.nki.language

        self.assertIs(top, nki)
        self.assertIs(nki.language, neuronxcc.nki.language)
        self.assertIs(nl, nki.language)


class AccessPatterns(unittest.TestCase):
    def test_arange_indexing_with_an_offset_gives_strides_and_offset(self):
        def kernel(a):
            i_p = nl.arange(64)[:, None]
            i_f = nl.arange(256)[None, :]
            tile = nl.load(a[i_p + 64, i_f + 512])
            return tile

        doc, _ = trace(kernel, np.zeros((128, 1024), np.float32))
        load = doc["instructions"][0]
        self.assertEqual(load["op"], "dma")
        # Row 64 of a 1024-wide tensor starts at 65536; column 512 adds 512.
        self.assertEqual(load["src"], {"t": 0, "off": 64 * 1024 + 512, "ap": [[1024, 64], [1, 256]]})
        self.assertEqual(load["dst"]["ap"], [[256, 64], [1, 256]])

    def test_slices_and_integers_of_a_3d_tensor(self):
        def kernel(a):
            return nl.load(a[2, 0:128, 8:520:2])

        doc, _ = trace(kernel, np.zeros((4, 128, 1024), np.float32))
        src = doc["instructions"][0]["src"]
        # Plane 2 starts at 2 * 128 * 1024; column 8; every other column.
        self.assertEqual(src, {"t": 0, "off": 2 * 128 * 1024 + 8, "ap": [[1024, 128], [2, 256]]})

    def test_mgrid_transposed_view(self):
        def kernel(a):
            g = nl.mgrid[0:32, 0:16]
            return nl.load(a[g.x, g.p])

        doc, _ = trace(kernel, np.zeros((16, 32), np.float32))
        # Result axis 0 (extent 32) walks a's columns, axis 1 (extent 16) its rows.
        self.assertEqual(doc["instructions"][0]["src"]["ap"], [[1, 32], [32, 16]])

    def test_index_tile_is_an_indirect_axis(self):
        def kernel(a):
            idx = nisa.iota(nl.arange(8)[:, None] * 2, dtype=nl.int32)
            i_f = nl.arange(64)[None, :]
            return nl.load(a[idx, i_f])

        doc, _ = trace(kernel, np.zeros((16, 64), np.float32))
        iota, load = doc["instructions"]
        self.assertEqual((iota["op"], iota["c"], iota["k"]), ("iota", [2, 0], 0))
        self.assertEqual(load["src"]["ap"], [[64, 8], [1, 64]])
        self.assertEqual(load["src"]["ind"]["dim"], 0)
        # The index tile [8, 1] varies along axis 0 only.
        self.assertEqual([c for _, c in load["src"]["ind"]["index"]["ap"]], [8, 1])

    def test_partition_dimension_over_128_is_refused(self):
        def kernel(a):
            return nl.ndarray((129, 4), nl.float32)

        with self.assertRaisesRegex(NkiError, "partition dimension .* at most 128"):
            trace(kernel, np.zeros((1,), np.float32))


class Masks(unittest.TestCase):
    def test_mask_predicates_become_coefficients_per_axis(self):
        def kernel(a):
            i_p = nl.arange(128)[:, None]
            i_f = nl.arange(512)[None, :]
            tile = nl.load(a)
            return nl.square(tile, mask=((i_p < 64) & (i_f >= 256)))

        doc, _ = trace(kernel, np.zeros((128, 512), np.float32))
        act = doc["instructions"][1]
        self.assertEqual(act["func"], "square")
        self.assertEqual(act["mask"], [{"c": [1, 0], "k": -64, "cmp": "lt"}, {"c": [0, 1], "k": -256, "cmp": "ge"}])


    def test_and_of_two_predicates_means_both_as_nki_reads_the_source(self):
        def kernel(a):
            ix, iy = nl.mgrid[0:128, 0:512]
            tile = nl.load(a)
            return nl.square(tile, mask=(ix < 64 and iy < 256))

        doc, _ = trace(kernel, np.zeros((128, 512), np.float32))
        self.assertEqual(doc["instructions"][1]["mask"],
                         [{"c": [1, 0], "k": -64, "cmp": "lt"}, {"c": [0, 1], "k": -256, "cmp": "lt"}])

    def test_a_trace_time_condition_in_a_mask(self):
        def kernel(a, keep):
            i_p = nl.arange(128)[:, None]
            tile = nl.load(a)
            return nl.square(tile, mask=(i_p < 64) & keep)

        doc, _ = trace(kernel, np.zeros((128, 4), np.float32), True)
        self.assertEqual(doc["instructions"][1]["mask"], [{"c": [1, 0], "k": -64, "cmp": "lt"}])
        doc, _ = trace(kernel, np.zeros((128, 4), np.float32), False)
        # False masks every element: 0 * i + 1 < 0 holds nowhere.
        self.assertEqual(doc["instructions"][1]["mask"][-1], {"c": [0, 0], "k": 1, "cmp": "lt"})


class Indexing(unittest.TestCase):
    def test_an_integer_after_a_slice_keeps_a_one_element_axis(self):
        def kernel(a):
            tile = nl.load(a)
            return tile[:, 3]

        _, column = trace(kernel, np.zeros((128, 8), np.float32))
        # Column 3 of a [128, 8] tile: [128, 1], one element per partition at offset 3.
        self.assertEqual((column.shape, column.off, column.dims), ((128, 1), 3, [[8, 128], [1, 1]]))

    def test_an_integer_before_every_slice_drops_its_axis(self):
        def kernel(a):
            return nl.load(a[2])

        doc, tile = trace(kernel, np.zeros((4, 128, 8), np.float32))
        self.assertEqual(tile.shape, (128, 8))
        self.assertEqual(doc["instructions"][0]["src"]["off"], 2 * 128 * 8)

    def test_a_partition_vector_broadcasts_along_the_free_axis(self):
        def kernel(a, b):
            return nl.add(nl.load(a), nl.sum(nl.load(b), axis=1))

        doc, out = trace(kernel, np.zeros((128, 16), np.float32), np.zeros((128, 4), np.float32))
        self.assertEqual(out.shape, (128, 16))
        # The row sums [128] are read as [128, 1], stride 0 along the 16 columns.
        self.assertEqual(doc["instructions"][-1]["b"]["ap"], [[1, 128], [0, 16]])

    def test_par_dim_marks_the_partition_axis(self):
        def kernel(a):
            return nl.ndarray((4, nl.par_dim(128), 512), nl.float32)

        doc, _ = trace(kernel, np.zeros((1,), np.float32))
        self.assertEqual(doc["tensors"][-1]["par"], 1)


class Instructions(unittest.TestCase):
    def test_psum_accumulation_retargets_the_matmul(self):
        def kernel(a, b):
            acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(2):
                x = nl.load(a[k * 128 + nl.arange(128)[:, None], nl.arange(128)[None, :]])
                y = nl.load(b[k * 128 + nl.arange(128)[:, None], nl.arange(512)[None, :]])
                acc += nisa.nc_matmul(x, y)
            return acc

        doc, acc = trace(kernel, np.zeros((256, 128), np.float32), np.zeros((256, 512), np.float32))
        matmuls = [i for i in doc["instructions"] if i["op"] == "matmul"]
        self.assertEqual(len(matmuls), 2)
        for m in matmuls:
            self.assertEqual(m["dst"]["t"], acc._id)
        # The first matmul of the group overwrites, the second accumulates.
        self.assertEqual([m["accumulate"] for m in matmuls], [False, True])
        # The second iteration's load starts at row 128 of b (128 * 512).
        loads = [i for i in doc["instructions"] if i["op"] == "dma" and i["src"]["t"] == 1]
        self.assertEqual([l["src"]["off"] for l in loads], [0, 128 * 512])

    def test_reading_a_psum_tile_ends_its_accumulation_group(self):
        def kernel(a, b):
            acc = nl.ndarray((128, 512), nl.float32, buffer=nl.psum)
            out = nl.ndarray((2, 128, 512), nl.float32, buffer=nl.shared_hbm)
            x, y = nl.load(a), nl.load(b)
            for n in nl.affine_range(2):
                for k in nl.affine_range(2):
                    acc += nisa.nc_matmul(x, y)
                nl.store(out[n], nl.copy(acc))
            return out

        doc, _ = trace(kernel, np.zeros((128, 128), np.float32), np.zeros((128, 512), np.float32))
        flags = [i["accumulate"] for i in doc["instructions"] if i["op"] == "matmul"]
        # The copy after each k loop reads the tile: the next n starts a new group.
        self.assertEqual(flags, [False, True, False, True])

    def test_accumulating_into_a_block_of_a_psum_tensor_adds_no_copy(self):
        def kernel(a, b):
            acc = nl.ndarray((1, nl.par_dim(128), 512), nl.float32, buffer=nl.psum)
            x, y = nl.load(a), nl.load(b)
            for k in nl.affine_range(2):
                acc[0] += nisa.nc_matmul(x, y)
            return acc

        doc, _ = trace(kernel, np.zeros((128, 128), np.float32), np.zeros((128, 512), np.float32))
        # Python stores acc[0] back after the +=: no copy of the tile into itself, which would
        # read it and end the accumulation group.
        self.assertEqual([i["op"] for i in doc["instructions"]], ["dma", "dma", "matmul", "matmul"])
        self.assertEqual([i["accumulate"] for i in doc["instructions"][2:]], [False, True])

    def test_assigning_a_fresh_load_writes_straight_into_the_view(self):
        def kernel(a):
            tile = nl.ndarray((128, 1024), nl.float32)
            tile[:, 512:1024] = nl.load(a)
            return tile

        doc, tile = trace(kernel, np.zeros((128, 512), np.float32))
        self.assertEqual(len(doc["instructions"]), 1)
        self.assertEqual(doc["instructions"][0]["dst"], {"t": tile._id, "off": 512, "ap": [[1024, 128], [1, 512]]})

    def test_scalar_operand_gives_tensor_scalar_and_promotes_to_float32(self):
        def kernel(a):
            return nl.add(nl.load(a), 1.5)

        doc, out = trace(kernel, np.zeros((4, 4), np.float16))
        op = doc["instructions"][1]
        self.assertEqual(op["op"], "tensor_scalar")
        self.assertEqual(op["ops"], [{"op": "add", "operand": {"imm": 1.5}, "reverse": False}])
        # A weak float scalar is float32, and (float16, float32) promotes to float32.
        self.assertEqual(doc["tensors"][out._id]["dtype"], "float32")

    def test_spmd_programs_share_shared_hbm_outputs(self):
        def kernel(a):
            out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
            i = nl.program_id(0)
            nl.store(out[i], nl.load(a[i]))
            return out

        tr, _, _, out = nki.jit(kernel)[4].trace((np.zeros((4, 8), np.float32),), {})
        doc = tr.document()
        stores = [i for i in doc["instructions"] if i["dst"]["t"] == out._id]
        self.assertEqual([s["dst"]["off"] for s in stores], [0, 8, 16, 24])
        self.assertEqual(sum(1 for t in doc["tensors"] if t["buffer"] == "shared_hbm"), 2)


class Promotion(unittest.TestCase):
    def test_documented_examples(self):
        from nrtsim_nki import dtypes

        def name(a, b):
            return dtypes.name(dtypes.promote(a, b))

        self.assertEqual(name(np.int32, np.float16), "float16")
        self.assertEqual(name(np.float16, nl.bfloat16), "float32")
        self.assertEqual(name(nl.float8_e4m3, nl.bfloat16), "bfloat16")
        self.assertEqual(name(nl.float8_e4m3, nl.float8_e5m2), "bfloat16")
        self.assertEqual(name(np.int8, np.uint8), "int16")
        self.assertEqual(name(np.int8, np.uint16), "int32")
        self.assertEqual(name(np.uint16, np.int32), "int32")
        self.assertEqual(name(np.int32, np.uint32), "float32")


if __name__ == "__main__":
    unittest.main()
