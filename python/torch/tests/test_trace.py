"""nrtsim_torch.trace against eager torch on the CPU: the numbers, the metaneff it writes, the
states, nested structures, bfloat16 weights, saving and loading in another process, and the
errors."""

from __future__ import annotations

import json
import subprocess
import tempfile
import unittest
from pathlib import Path

import torch

from helpers import TOOL, run_fresh
from nrtsim_torch import trace


class Mlp(torch.nn.Module):
    def __init__(self, dtype=torch.float32):
        super().__init__()
        self.up = torch.nn.Linear(16, 32, dtype=dtype)
        self.down = torch.nn.Linear(32, 4, dtype=dtype)

    def forward(self, x):
        return self.down(torch.nn.functional.gelu(self.up(x)))


class Counter(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.total = torch.nn.Parameter(torch.zeros(3), requires_grad=False)

    def forward(self, x):
        self.total.add_(x)
        return x * 2, self.total


class TraceTest(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(0)

    def test_an_mlp_matches_eager_torch(self):
        model = Mlp().eval()
        x = torch.randn(8, 16)
        traced = trace(model, x)
        self.assertIsInstance(traced, torch.jit.ScriptModule)
        for batch in (x, torch.randn(8, 16)):
            torch.testing.assert_close(traced(batch), model(batch), rtol=1e-5, atol=1e-5)

    def test_the_workdir_holds_torch_neuronxs_folder_and_metaneff(self):
        model = Mlp().eval()
        with tempfile.TemporaryDirectory() as folder:
            trace(model, torch.randn(2, 16), compiler_workdir=folder)
            work = Path(folder)
            metadata = json.loads((work / "model/metadata.json").read_text())
            self.assertEqual(metadata["model_files"], "graph.hlo")
            # The four parameters of the two layers are weights; the input is not.
            self.assertEqual(len(metadata["weights"]), 4)
            decoded = subprocess.run(
                [TOOL, "metaneff", "decode", str(work / "metaneff.pb")],
                capture_output=True, text=True, check=True,
            ).stdout
            self.assertIn('name: "input0"', decoded)
            self.assertIn("shape: [2, 16]", decoded)
            self.assertIn('name: "output0"', decoded)
            self.assertIn("shape: [2, 4]", decoded)
            self.assertNotIn("input1", decoded)
            self.assertTrue((work / "graph.neff").is_file())

    def test_a_state_aliased_to_an_output_accumulates_across_calls(self):
        model = Counter()
        traced = trace(model, torch.ones(3), input_output_aliases={model.total: 1})
        # Tracing ran the function; the traced module and the model start from zeros.
        self.assertEqual(model.total.tolist(), [0.0, 0.0, 0.0])
        doubled, total = traced(torch.tensor([1.0, 2.0, 3.0]))
        self.assertEqual(doubled.tolist(), [2.0, 4.0, 6.0])
        self.assertEqual(total.tolist(), [1.0, 2.0, 3.0])
        _, total = traced(torch.tensor([1.0, 2.0, 3.0]))
        self.assertEqual(total.tolist(), [2.0, 4.0, 6.0])

    def test_nested_inputs_and_outputs_keep_their_structure(self):
        def func(pair, scale):
            a, b = pair
            return a + b, {"scaled_a": a * scale, "scaled_b": b * scale}

        a, b, scale = torch.randn(3), torch.randn(3), torch.randn(3)
        traced = trace(func, ((a, b), scale))
        total, scaled = traced((a, b), scale)
        self.assertEqual(sorted(scaled), ["scaled_a", "scaled_b"])
        torch.testing.assert_close(total, a + b)
        torch.testing.assert_close(scaled["scaled_b"], b * scale)

    def test_bfloat16_weights_round_trip_through_the_model_folder(self):
        model = Mlp(dtype=torch.bfloat16).eval()
        x = torch.randn(4, 16, dtype=torch.bfloat16)
        traced = trace(model, x)
        got = traced(x)
        self.assertEqual(got.dtype, torch.bfloat16)
        # Against eager in float32 with the same bfloat16 weights and input: the interpreter
        # rounds as XLA does, within a few bfloat16 ulps.
        torch.testing.assert_close(got.float(), model(x).float(), rtol=2e-2, atol=2e-2)

    def test_a_traced_module_is_saved_and_loaded_in_another_process(self):
        model = Mlp().eval()
        x = torch.randn(8, 16)
        want = model(x)
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "mlp.pt"
            torch.jit.save(trace(model, x), str(path))
            torch.save(x, Path(folder) / "x.pt")
            out = run_fresh(
                "import torch, nrtsim_torch\n"
                f"m = torch.jit.load({str(path)!r})\n"
                f"x = torch.load({str(Path(folder) / 'x.pt')!r})\n"
                "print(repr(m(x).flatten().tolist()))\n"
            )
        got = torch.tensor(eval(out))
        torch.testing.assert_close(got, want.flatten().detach(), rtol=1e-5, atol=1e-5)

    def test_arguments_torch_neuronx_deprecated_or_we_do_not_model_are_refused(self):
        with self.assertRaises(TypeError):
            trace(Mlp(), torch.randn(2, 16), None)
        with self.assertRaises(NotImplementedError):
            trace(Mlp(), torch.randn(2, 16), partitioner_config=object())
        with self.assertRaises(TypeError) as caught:
            trace(Mlp(), torch.randn(2, 16), compiler_flags="-O1")
        self.assertIn("compiler_flags", str(caught.exception))
        with self.assertRaises(TypeError) as caught:
            trace(lambda x: x.shape, torch.randn(2))
        self.assertIn("expected a tensor", str(caught.exception))

    def test_an_alias_key_that_is_not_the_modules_own_is_refused(self):
        with self.assertRaises(ValueError):
            trace(Counter(), torch.ones(3), input_output_aliases={torch.zeros(3): 1})


if __name__ == "__main__":
    unittest.main()
