"""torch.classes.neuron.Model, torch.ops.neuron.forward_v2 and the loading ops, on models
compiled from HLO text whose results are worked out by hand."""

from __future__ import annotations

import tempfile
import unittest
from pathlib import Path

import torch

from helpers import compile_hlo, run_fresh

# output0 = x + y, output1 = x * y over f32[2,3].
ADD_MUL = """HloModule m

ENTRY main {
  x = f32[2,3] parameter(0)
  y = f32[2,3] parameter(1)
  s = f32[2,3] add(x, y)
  p = f32[2,3] multiply(x, y)
  ROOT t = (f32[2,3], f32[2,3]) tuple(s, p)
}
"""

# A counter: output0 = c + x with output 0 aliased to input 1 (the state c).
COUNTER = """HloModule m, input_output_alias={ {}: (1, {}, may-alias) }

ENTRY main {
  x = s32[4] parameter(0)
  c = s32[4] parameter(1)
  ROOT r = s32[4] add(c, x)
}
"""

# output0 = -x over f32[2,3], output1 an f32[0,3] slice of it: no bytes.
EMPTY_OUTPUT = """HloModule m

ENTRY main {
  x = f32[2,3] parameter(0)
  n = f32[2,3] negate(x)
  e = f32[0,3] slice(x), slice={[0:0], [0:3]}
  ROOT t = (f32[2,3], f32[0,3]) tuple(n, e)
}
"""


def top_level_field_offset(message: bytes, number: int) -> int:
    """Where the first top-level field `number` of a length-delimited-only message starts."""

    def varint(at):
        value, shift = 0, 0
        while True:
            byte = message[at]
            value |= (byte & 0x7F) << shift
            at += 1
            if byte < 0x80:
                return value, at
            shift += 7

    at = 0
    while at < len(message):
        tag, body = varint(at)
        if tag >> 3 == number:
            return at
        assert tag & 7 == 2, "the metaneff's top-level fields are length-delimited"
        length, body = varint(body)
        at = body + length
    raise AssertionError(f"no field {number}")


class ModelTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.neff, cls.metaneff = compile_hlo(ADD_MUL)

    def model(self):
        return torch.classes.neuron.Model(self.neff, self.metaneff)

    def test_forward_v2_computes_each_output(self):
        x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
        y = torch.full((2, 3), -1.5)
        total, product = torch.ops.neuron.forward_v2([x, y], self.model())
        self.assertTrue(torch.equal(total, torch.tensor([[-1.5, -0.5, 0.5], [1.5, 2.5, 3.5]])))
        self.assertTrue(torch.equal(product, torch.tensor([[-0.0, -1.5, -3.0], [-4.5, -6.0, -7.5]])))

    def test_non_contiguous_inputs_are_read_in_their_logical_order(self):
        x = torch.arange(6, dtype=torch.float32).reshape(3, 2).t()  # [2,3], strides (1, 2)
        self.assertFalse(x.is_contiguous())
        total, _ = torch.ops.neuron.forward_v2([x, torch.zeros(2, 3)], self.model())
        self.assertTrue(torch.equal(total, torch.tensor([[0.0, 2.0, 4.0], [1.0, 3.0, 5.0]])))

    def test_validation_is_libtorchneurons_with_the_inputs_name(self):
        model = self.model()
        x = torch.zeros(2, 3)
        cases = [
            ([x.int(), x], 'dtype input 0 "input0": Expected tensor.dtype() == dtype (expected Float, got Int)'),
            ([x, torch.zeros(3, 2)], 'shape input 1 "input1": Expected tensor.sizes() == sizes (expected [2, 3], got [3, 2])'),
            ([x], "count: Expected npts->impl()->size() == tensors.size() (expected 2, got 1)"),
        ]
        for inputs, message in cases:
            with self.assertRaises(RuntimeError) as caught:
                torch.ops.neuron.forward_v2(inputs, model)
            self.assertIn(message, str(caught.exception))

    def test_an_input_on_another_device_is_named(self):
        with self.assertRaises(RuntimeError) as caught:
            torch.ops.neuron.forward_v2([torch.zeros(2, 3), torch.zeros(2, 3, device="meta")], self.model())
        self.assertIn("input 1 is on meta, expected a CPU tensor", str(caught.exception))

    def test_bytes_that_do_not_load_say_which(self):
        with self.assertRaises(RuntimeError) as caught:
            torch.classes.neuron.Model(b"not a neff", self.metaneff)
        self.assertIn("the NEFF does not load", str(caught.exception))
        with self.assertRaises(RuntimeError) as caught:
            torch.classes.neuron.Model(self.neff, b"\xff\xff")
        self.assertIn("the metaneff does not describe a model", str(caught.exception))

    def test_the_lifecycle_methods(self):
        model = self.model()
        self.assertEqual(model.instance_count(), 1)
        model.unload()
        self.assertEqual(model.instance_count(), 0)
        model.set_lazy_load(True)
        model.blocking_load()
        self.assertEqual(model.instance_count(), 1)
        model.set_neuron_devices(1, 1)  # reloads on NeuronCore 1
        self.assertEqual(model.instance_count(), 1)
        with self.assertRaises(ValueError) as caught:
            model.set_neuron_devices(0, 0)
        self.assertIn("expected a start of -1", str(caught.exception))
        model.set_async_load(True)
        model.unload()
        model.load()
        x = torch.ones(2, 3)
        total, _ = torch.ops.neuron.forward_v2([x, x], model)
        self.assertTrue(torch.equal(total, 2 * x))
        model.load_collectives(0, 1, 0, 1)
        with self.assertRaises(ValueError) as caught:
            torch.ops.neuron._load_collectives_neuron(model, 0, 1, 2, 2)
        self.assertIn("expected 0 <= ctx_device_id < ctx_device_count, got 2 of 2", str(caught.exception))

    def test_set_async_load_edits_the_stored_metaneff(self):
        model = self.model()
        with tempfile.TemporaryDirectory() as folder:
            before = Path(folder) / "before.pb"
            after = Path(folder) / "after.pb"
            self.assertTrue(model.save_metaneff(str(before)))
            model.set_async_load(True)
            self.assertTrue(model.save_metaneff(str(after)))
            self.assertEqual(before.read_bytes(), self.metaneff)
            # ModelConfig (field 3) holding async_load (its field 4) = 1, in field order: before
            # serialized_graph_def (field 4), the other bytes kept.
            at = top_level_field_offset(self.metaneff, 4)
            config = b"\x1a\x02\x20\x01"
            self.assertEqual(after.read_bytes(), self.metaneff[:at] + config + self.metaneff[at:])
            neff = Path(folder) / "m.neff"
            self.assertTrue(model.save_neff(str(neff)))
            self.assertEqual(neff.read_bytes(), self.neff)
            self.assertFalse(model.save_neff(str(Path(folder) / "missing" / "m.neff")))

    def test_a_donated_input_is_updated_in_place(self):
        neff, metaneff = compile_hlo(COUNTER)
        model = torch.classes.neuron.Model(neff, metaneff)
        counter = torch.tensor([0, 1, 2, 3], dtype=torch.int32)
        step = torch.tensor([10, 20, 30, 40], dtype=torch.int32)
        returned = torch.ops.neuron.forward_v2([step, counter], model)
        # return_aliases is unset: the aliased output is not returned, the state holds it.
        self.assertEqual(returned, [])
        self.assertEqual(counter.tolist(), [10, 21, 32, 43])
        torch.ops.neuron.forward_v2([step, counter], model)
        self.assertEqual(counter.tolist(), [20, 41, 62, 83])

    def test_a_donor_that_is_not_contiguous_or_is_given_twice_still_gets_its_new_value(self):
        neff, metaneff = compile_hlo(COUNTER)
        model = torch.classes.neuron.Model(neff, metaneff)
        # Every other element: the forward writes a contiguous copy, which is copied back.
        backing = torch.arange(8, dtype=torch.int32)
        counter = backing[::2]
        self.assertFalse(counter.is_contiguous())
        torch.ops.neuron.forward_v2([torch.ones(4, dtype=torch.int32), counter], model)
        self.assertEqual(backing.tolist(), [1, 1, 3, 3, 5, 5, 7, 7])
        # One tensor as both inputs: the launch reads the old value, the donor gets c + c.
        both = torch.tensor([1, 2, 3, 4], dtype=torch.int32)
        torch.ops.neuron.forward_v2([both, both], model)
        self.assertEqual(both.tolist(), [2, 4, 6, 8])

    def test_each_forward_returns_tensors_of_its_own(self):
        x = torch.ones(2, 3)
        model = self.model()
        first, _ = torch.ops.neuron.forward_v2([x, x], model)
        second, _ = torch.ops.neuron.forward_v2([x * 3, x], model)
        self.assertTrue(torch.equal(first, torch.full((2, 3), 2.0)))
        self.assertTrue(torch.equal(second, torch.full((2, 3), 4.0)))
        self.assertNotEqual(first.data_ptr(), second.data_ptr())
        self.assertNotEqual(first.data_ptr(), x.data_ptr())
        # They are ordinary tensors: resizable, as libtorchneuron's outputs are.
        second.resize_(7)
        self.assertEqual(second.shape, (7,))

    def test_an_empty_output_is_an_empty_tensor(self):
        neff, metaneff = compile_hlo(EMPTY_OUTPUT)
        model = torch.classes.neuron.Model(neff, metaneff)
        x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
        negated, empty = torch.ops.neuron.forward_v2([x], model)
        self.assertTrue(torch.equal(negated, -x))
        self.assertEqual((empty.shape, empty.dtype), ((0, 3), torch.float32))

    def test_a_module_holding_a_model_is_saved_and_loaded_in_another_process(self):
        class Holder(torch.nn.Module):
            def __init__(self, neff, metaneff):
                super().__init__()
                self.model = torch.classes.neuron.Model(neff, metaneff)

            def forward(self, x, y):
                return torch.ops.neuron.forward_v2([x, y], self.model)

        scripted = torch.jit.script(Holder(self.neff, self.metaneff))
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "holder.pt"
            torch.jit.save(scripted, str(path))
            out = run_fresh(
                "import torch, nrtsim_torch\n"
                f"m = torch.jit.load({str(path)!r})\n"
                "s, p = m(torch.full((2, 3), 2.0), torch.full((2, 3), 3.0))\n"
                "print(s.sum().item(), p.sum().item())\n"
            )
        self.assertEqual(out.split(), ["30.0", "36.0"])

    def test_parallel_load_keeps_each_ranks_tensors(self):
        checkpoint = [{"w": torch.arange(4.0)}, {"w": torch.arange(4.0, 8.0)}]
        loaded = torch.ops.neuron._parallel_load(checkpoint)
        self.assertEqual([d["w"].tolist() for d in loaded], [[0, 1, 2, 3], [4, 5, 6, 7]])

    def test_layout_transformation_says_it_is_not_modelled(self):
        with self.assertRaises(NotImplementedError) as caught:
            torch.classes.neuron.LayoutTransformation(self.neff, self.metaneff, 2)
        self.assertIn("LayoutTransformation", str(caught.exception))
        self.assertIn("not modelled by nrtsim", str(caught.exception))


if __name__ == "__main__":
    unittest.main()


class BackendTest(unittest.TestCase):
    """NRTSIM_TORCH_LIBNRT puts the models on another libnrt.so.1 through the nrt backend: here a
    copy of the simulator's library, at another path, as the conformance `capi` backend uses it."""

    def test_the_models_run_on_the_libnrt_the_variable_names(self):
        import os
        import shutil

        from helpers import SDK

        self.assertEqual(__import__("nrtsim_torch").backend(), "sim")
        neff, metaneff = compile_hlo(ADD_MUL)
        with tempfile.TemporaryDirectory() as folder:
            library = Path(folder) / "libnrt.so.1"
            shutil.copy(SDK / "lib" / "libnrt.so.1", library)
            (Path(folder) / "m.neff").write_bytes(neff)
            (Path(folder) / "m.metaneff").write_bytes(metaneff)
            code = (
                "import os, torch, nrtsim_torch\n"
                f"os.chdir({folder!r})\n"
                "print(nrtsim_torch.backend())\n"
                "m = torch.classes.neuron.Model(open('m.neff', 'rb').read(), open('m.metaneff', 'rb').read())\n"
                "s, p = torch.ops.neuron.forward_v2([torch.full((2, 3), 2.0), torch.full((2, 3), 5.0)], m)\n"
                "print(s.sum().item(), p.sum().item())\n"
                "try:\n"
                "    torch.ops.neuron.forward_v2([torch.zeros(2, 3, dtype=torch.int32), torch.zeros(2, 3)], m)\n"
                "except RuntimeError as e:\n"
                "    print('refused:', 'Expected tensor.dtype() == dtype' in str(e))\n"
            )
            env_before = os.environ.get("NRTSIM_TORCH_LIBNRT")
            os.environ["NRTSIM_TORCH_LIBNRT"] = str(library)
            try:
                out = run_fresh(code).split("\n")
            finally:
                if env_before is None:
                    del os.environ["NRTSIM_TORCH_LIBNRT"]
                else:
                    os.environ["NRTSIM_TORCH_LIBNRT"] = env_before
            self.assertEqual(out[0], f"nrt {library}")
            self.assertEqual(out[1].split(), ["42.0", "60.0"])
            self.assertEqual(out[2], "refused: True")
            # A path that is not a libnrt is named at the first model.
            os.environ["NRTSIM_TORCH_LIBNRT"] = str(Path(folder) / "missing.so")
            try:
                with self.assertRaises(AssertionError) as caught:
                    run_fresh(
                        "import torch, nrtsim_torch\n"
                        f"torch.classes.neuron.Model(open({str(Path(folder) / 'm.neff')!r}, 'rb').read(), b'')\n"
                    )
            finally:
                del os.environ["NRTSIM_TORCH_LIBNRT"]
            self.assertIn("NRTSIM_TORCH_LIBNRT=", str(caught.exception))
            self.assertIn("missing.so", str(caught.exception))
