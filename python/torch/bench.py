"""nrtsim's torch layer timed against its baselines in one run (`cli/benches/torch.rs`).

Usage: bench.py MODULE.hlo...  (with NRTSIM_TOOL, NRTSIM_SDK and the package importable)

For each HLO module given (the bench's Rust side times the interpreter on the same module):
`forward_v2` on a `torch.classes.neuron.Model` of it, the median of many calls. Then traced
models against eager torch on the CPU, the same inputs: an MLP and a BERT-like encoder. One JSON
line per figure on standard output.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

import nrtsim_torch

TOOL = os.environ["NRTSIM_TOOL"]


def median_seconds(call, repeat: int) -> float:
    call()  # warm
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def model_of(path: Path):
    with tempfile.TemporaryDirectory() as folder:
        neff, meta = Path(folder) / "m.neff", Path(folder) / "m.metaneff"
        for command in (
            [TOOL, "compile", str(path), "--framework", "XLA", "--target", "trn1", "--output", str(neff)],
            [TOOL, "metaneff", "from-hlo", str(path), "--output", str(meta)],
        ):
            subprocess.run(command, check=True, capture_output=True)
        return torch.classes.neuron.Model(neff.read_bytes(), meta.read_bytes())


def inputs_of(path: Path):
    """One f32 input per entry parameter, shapes from the entry computation's lines (`name =
    f32[..] parameter(i)`), filled with ones."""
    shapes = {}
    text = path.read_text()
    for line in text[text.index("ENTRY"):].splitlines():
        if "parameter(" in line and "f32[" in line:
            dims = line.split("f32[", 1)[1].split("]", 1)[0]
            number = int(line.split("parameter(", 1)[1].split(")", 1)[0])
            shapes[number] = [int(d) for d in dims.split(",") if d.strip()]
    return [torch.ones(shapes[i]) for i in range(len(shapes))]


def main() -> None:
    for name in sys.argv[1:]:
        path = Path(name)
        model = model_of(path)
        inputs = inputs_of(path)
        seconds = median_seconds(lambda: torch.ops.neuron.forward_v2(inputs, model), 200)
        print(json.dumps({"figure": f"forward_v2 {path.stem}", "ours_s": seconds}))

    torch.manual_seed(0)
    mlp = torch.nn.Sequential(
        torch.nn.Linear(512, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 512)
    ).eval()
    x = torch.randn(32, 512)
    traced = nrtsim_torch.trace(mlp, x)
    with torch.no_grad():
        eager = median_seconds(lambda: mlp(x), 50)
    ours = median_seconds(lambda: traced(x), 50)
    print(json.dumps({"figure": "traced mlp 32x512x1024", "ours_s": ours, "eager_s": eager}))

    from transformers import BertConfig, BertModel

    config = BertConfig(
        vocab_size=1000, hidden_size=256, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=1024, max_position_embeddings=128,
    )
    bert = BertModel(config).eval()
    ids = torch.randint(0, 1000, (4, 64))
    mask = torch.ones(4, 64, dtype=torch.int64)
    traced = nrtsim_torch.trace(bert, (ids, mask))
    with torch.no_grad():
        eager = median_seconds(lambda: bert(ids, mask), 20)
    ours = median_seconds(lambda: traced(ids, mask), 20)
    print(json.dumps({"figure": "traced bert-like 2x256, 4x64 tokens", "ours_s": ours, "eager_s": eager}))


if __name__ == "__main__":
    main()
