"""Real models against eager torch on the CPU, same inputs: a BERT-like encoder and a GPT-2-like
decoder built from `transformers` configurations with random weights, torchvision's resnet18
with random weights, and an MLP with dynamic batching. Each is traced, saved, loaded in a fresh
process and run there; the errors are printed (max abs and max relative) and held to bounds."""

from __future__ import annotations

import sys
import tempfile
import time
import unittest
from pathlib import Path

import torch

from helpers import run_fresh
from nrtsim_torch import trace

# What the fresh process runs: load the saved module, run it on the saved inputs, save outputs.
RUN_SAVED = """
import sys, time, torch, nrtsim_torch
folder = sys.argv[1] if len(sys.argv) > 1 else {folder!r}
module = torch.jit.load(folder + "/model.pt")
inputs = torch.load(folder + "/inputs.pt")
start = time.perf_counter()
outputs = module(*inputs)
elapsed = time.perf_counter() - start
torch.save(outputs, folder + "/outputs.pt")
print(elapsed)
"""


def leaves(value):
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        return [leaf for key in sorted(value) for leaf in leaves(value[key])]
    if isinstance(value, (list, tuple)):
        return [leaf for item in value for leaf in leaves(item)]
    return []


def errors(got, want):
    """(max abs error, max relative error where |want| > 1e-3), over every output leaf."""
    worst_abs, worst_rel = 0.0, 0.0
    for g, w in zip(leaves(got), leaves(want), strict=True):
        diff = (g.double() - w.double()).abs()
        worst_abs = max(worst_abs, diff.max().item())
        big = w.double().abs() > 1e-3
        if big.any():
            worst_rel = max(worst_rel, (diff[big] / w.double().abs()[big]).max().item())
    return worst_abs, worst_rel


class ModelsTest(unittest.TestCase):
    def check(self, name, model, inputs, abs_bound, rel_bound):
        torch.manual_seed(0)
        model = model.eval()
        with torch.no_grad():
            start = time.perf_counter()
            want = model(*inputs)
            eager = time.perf_counter() - start
        with tempfile.TemporaryDirectory() as folder:
            start = time.perf_counter()
            traced = trace(model, inputs)
            traced_in = time.perf_counter() - start
            torch.jit.save(traced, folder + "/model.pt")
            torch.save(inputs, folder + "/inputs.pt")
            ours = float(run_fresh(RUN_SAVED.format(folder=folder)).strip())
            got = torch.load(folder + "/outputs.pt")
        worst_abs, worst_rel = errors(got, want)
        print(
            f"\n{name}: max abs error {worst_abs:.3g}, max rel error {worst_rel:.3g}; "
            f"trace {traced_in:.1f} s; forward {ours * 1e3:.1f} ms on nrtsim (fresh process, "
            f"first call), {eager * 1e3:.1f} ms eager",
            file=sys.stderr,
        )
        self.assertLessEqual(worst_abs, abs_bound, name)
        self.assertLessEqual(worst_rel, rel_bound, name)

    def test_a_bert_like_encoder(self):
        from transformers import BertConfig, BertModel

        torch.manual_seed(0)
        config = BertConfig(
            vocab_size=1000, hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
            intermediate_size=256, max_position_embeddings=64,
        )
        model = BertModel(config)
        model.config.return_dict = False
        ids = torch.randint(0, 1000, (2, 16))
        mask = torch.ones(2, 16, dtype=torch.int64)
        self.check("bert-like encoder", model, (ids, mask), 1e-4, 1e-2)

    def test_a_gpt2_like_decoder(self):
        from transformers import GPT2Config, GPT2LMHeadModel

        torch.manual_seed(0)
        config = GPT2Config(vocab_size=1000, n_positions=64, n_embd=128, n_layer=2, n_head=4)
        config.use_cache = False

        class Logits(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lm = GPT2LMHeadModel(config)

            def forward(self, ids):
                return self.lm(input_ids=ids).logits

        model = Logits()
        ids = torch.randint(0, 1000, (2, 16))
        self.check("gpt2-like decoder", model, (ids,), 1e-4, 1e-2)

    def test_resnet18(self):
        import torchvision

        torch.manual_seed(0)
        model = torchvision.models.resnet18(weights=None)
        image = torch.randn(1, 3, 64, 64)
        self.check("resnet18", model, (image,), 1e-3, 1e-2)

    def test_an_mlp_with_dynamic_batching(self):
        torch.manual_seed(0)
        mlp = torch.nn.Sequential(
            torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8)
        ).eval()
        traced = trace(mlp, torch.randn(4, 32))
        traced.model.set_dynamic_batching(True)
        for batch in (4, 8, 12):  # whole multiples of the compiled batch of 4
            x = torch.randn(batch, 32)
            got = traced(x)
            self.assertEqual(tuple(got.shape), (batch, 8))
            torch.testing.assert_close(got, mlp(x), rtol=1e-5, atol=1e-5)


if __name__ == "__main__":
    unittest.main()
