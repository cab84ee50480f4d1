"""torch.classes.neuron.SPMDModel with local_ranks = world_size = 2 on a module whose ranks meet
in an all-reduce: forward, forward_ranked and the other forms, weights per rank, saving."""

from __future__ import annotations

import tempfile
import unittest
from pathlib import Path

import torch

from helpers import compile_hlo, run_fresh

# r = all-reduce(x * w) over both ranks, w a weight of each rank's own.
ALL_REDUCE = """HloModule m, replica_count=2

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY main {
  x = f32[4] parameter(0)
  w = f32[4] parameter(1)
  p = f32[4] multiply(x, w)
  ROOT r = f32[4] all-reduce(p), replica_groups={{0,1}}, to_apply=add
}
"""


class SpmdTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.neff, cls.metaneff = compile_hlo(ALL_REDUCE, "--weight", "1=w")

    def initialized(self, w0, w1):
        model = torch.classes.neuron.SPMDModel(self.neff, self.metaneff, 2, 2)
        model.initialize([], [{"w": torch.tensor(w0)}, {"w": torch.tensor(w1)}], 0)
        return model

    def test_forward_ranked_sums_each_ranks_product(self):
        model = self.initialized([1.0, 1.0, 1.0, 1.0], [2.0, 2.0, 2.0, 2.0])
        x0 = torch.tensor([1.0, 2.0, 3.0, 4.0])
        x1 = torch.tensor([10.0, 20.0, 30.0, 40.0])
        want = [21.0, 42.0, 63.0, 84.0]  # x0 * 1 + x1 * 2
        for method in ("forward_ranked", "forward_ranked_to_cpu", "forward_async"):
            ranks = getattr(model, method)([[x0], [x1]])
            self.assertEqual([[t.tolist() for t in rank] for rank in ranks], [[want], [want]], method)

    def test_forward_gives_every_rank_the_same_inputs_and_returns_rank_0s_outputs(self):
        model = self.initialized([1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 1.0, 0.0])
        (out,) = model.forward([torch.tensor([5.0, 6.0, 7.0, 8.0])])
        self.assertEqual(out.tolist(), [5.0, 6.0, 14.0, 0.0])

    def test_a_missing_weight_and_a_wrong_rank_count_are_named(self):
        model = torch.classes.neuron.SPMDModel(self.neff, self.metaneff, 2, 2)
        with self.assertRaises(ValueError) as caught:
            model.forward([torch.zeros(4)])
        self.assertIn('missing weight "w"', str(caught.exception))
        model = self.initialized([1.0] * 4, [1.0] * 4)
        with self.assertRaises(ValueError) as caught:
            model.forward_ranked([[torch.zeros(4)], [torch.zeros(4)], [torch.zeros(4)]])
        self.assertIn("expected one input list per local rank (2), got 3", str(caught.exception))
        with self.assertRaises(RuntimeError) as caught:
            model.forward_ranked([[torch.zeros(4)], [torch.zeros(4, dtype=torch.int32)]])
        self.assertIn("rank 1", str(caught.exception))
        self.assertIn("Expected tensor.dtype() == dtype", str(caught.exception))
        with self.assertRaises(NotImplementedError) as caught:
            model.initialize([], [{"w": torch.ones(4)}, {"w": torch.ones(4)}], 2)
        self.assertIn("start_rank 2", str(caught.exception))
        with self.assertRaises(ValueError):
            torch.classes.neuron.SPMDModel(self.neff, self.metaneff, 3, 2)

    def test_the_neff_and_metaneff_come_back_and_the_model_survives_saving(self):
        model = torch.classes.neuron.SPMDModel(self.neff, self.metaneff, 2, 2)
        with tempfile.TemporaryDirectory() as folder:
            self.assertTrue(model.save_neff(str(Path(folder) / "m.neff")))
            self.assertTrue(model.save_metaneff(str(Path(folder) / "m.metaneff")))
            self.assertEqual((Path(folder) / "m.neff").read_bytes(), self.neff)
            self.assertEqual((Path(folder) / "m.metaneff").read_bytes(), self.metaneff)

            class Holder(torch.nn.Module):
                def __init__(self, spmd):
                    super().__init__()
                    self.spmd = spmd

                def forward(self, x: torch.Tensor):
                    return self.spmd.forward_ranked([[x], [x]])

            path = Path(folder) / "spmd.pt"
            torch.jit.save(torch.jit.script(Holder(model)), str(path))
            out = run_fresh(
                "import torch, nrtsim_torch\n"
                f"m = torch.jit.load({str(path)!r})\n"
                "m.spmd.initialize([], [{'w': torch.ones(4)}, {'w': torch.full((4,), 3.0)}], 0)\n"
                "print(m(torch.arange(4.0))[1][0].tolist())\n"
            )
        self.assertEqual(out.strip(), "[0.0, 4.0, 8.0, 12.0]")


if __name__ == "__main__":
    unittest.main()
