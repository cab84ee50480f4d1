#!/usr/bin/env python3
"""Write the jax fixtures of the compiled-model tests (`cli/tests/compiled_models.rs`).

Usage (with the pinned reference Python, pyref/requirements.txt):
    $NRTSIM_PYTHON conformance/tests/models/export_jax.py [OUT_DIR]

OUT_DIR defaults to this script's folder. For each model it writes `OUT_DIR/jax_NAME/`:
    module.hlo.pb        jax's HloModuleProto (`jax.jit(f).lower(*args).compiler_ir("hlo")
                         .as_serialized_hlo_module_proto()`), before any XLA optimisation
    inputs/inputI.npy    every parameter I of the module, weights included (the compiled NEFF's
                         inputs are all of them), seeded numpy, float32
    outputs/outputJ.npy  what jax on CPU computes (`jax.jit(f)(*args)`), the result tuple flattened
    weights.safetensors  the weight parameters by checkpoint key, for the binding-layer path
    fixture.toml         producer, description, compile arguments, tolerances, and [weights]:
                         the `metaneff from-hlo --weight PARAM=KEY` choices and the file

The weights are parameters of the jitted function, not constants, so that the metaneff has
weights to choose; the function's arguments come in the metaneff's order, user inputs first.
Source paths in the module's metadata are cut to the file name, so the bytes do not depend on
where the repository is checked out. The committed files are what the tests read; rerunning with
another jax may give other bytes, which is why no test regenerates and compares.
"""

import json
import os
import struct
import sys

# One CPU device, one thread: results do not depend on the machine's parallelism.
os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

jax.config.update("jax_hlo_source_file_canonicalization_regex", ".*/")

# The arguments neuronx-cc gets after `compile --framework XLA FILE`, as torch-neuronx and
# transformers-neuronx pass them: a target and an output file.
COMPILE_ARGS = ["--target", "trn2", "--output", "model.neff"]

# f32 against XLA on CPU: the interpreter and XLA may sum the up to 32 terms of a dot or a
# convolution (and the softmax sums) in another order, and XLA's exp is its own polynomial; each
# of K additions may round differently, so the error is about K * eps(f32) = 32 * 1.2e-7 ≈ 4e-6
# of the terms' magnitude (order 1 here), below these bounds.
RTOL = 1e-5
ATOL = 1e-5


def mlp(x, w1, b1, w2, b2):
    """Two dense layers with a ReLU between them."""
    hidden = jax.nn.relu(x @ w1 + b1)
    return hidden @ w2 + b2


def attention(x, wq, wk, wv, wo):
    """One head of scaled dot-product attention, softmax(Q Kᵀ / √d) V, then the projection;
    returns the block's output and the attention weights."""
    q, k, v = x @ wq, x @ wk, x @ wv
    d = q.shape[-1]
    weights = jax.nn.softmax(q @ k.T / jnp.sqrt(jnp.float32(d)), axis=-1)
    return weights @ v @ wo, weights


def conv(x, w, b):
    """A 3×3 convolution (NCHW, OIHW, same padding), a per-channel bias, and a ReLU."""
    y = lax.conv_general_dilated(
        x, w, window_strides=(1, 1), padding="SAME", dimension_numbers=("NCHW", "OIHW", "NCHW")
    )
    return jax.nn.relu(y + b[None, :, None, None])


def normal(rng, shape, scale):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


# name, description, function, [(argument name, shape, scale, checkpoint key or None)]
MODELS = [
    (
        "mlp",
        "jax MLP: relu(x @ w1 + b1) @ w2 + b2, x [4,16], hidden 32, out 8",
        mlp,
        [
            ("x", (4, 16), 1.0, None),
            ("w1", (16, 32), 0.25, "fc1.weight"),
            ("b1", (32,), 0.1, "fc1.bias"),
            ("w2", (32, 8), 0.2, "fc2.weight"),
            ("b2", (8,), 0.1, "fc2.bias"),
        ],
    ),
    (
        "attention",
        "jax attention block: softmax(Q K^T / sqrt(16)) V @ wo over x [8,16], and the weights",
        attention,
        [
            ("x", (8, 16), 1.0, None),
            ("wq", (16, 16), 0.25, "attn.q"),
            ("wk", (16, 16), 0.25, "attn.k"),
            ("wv", (16, 16), 0.25, "attn.v"),
            ("wo", (16, 16), 0.25, "attn.out"),
        ],
    ),
    (
        "conv",
        "jax convolution: relu(conv3x3(x, w, SAME) + b), x [1,3,8,8] NCHW, w [4,3,3,3] OIHW",
        conv,
        [
            ("x", (1, 3, 8, 8), 1.0, None),
            ("w", (4, 3, 3, 3), 0.3, "conv.weight"),
            ("b", (4,), 0.1, "conv.bias"),
        ],
    ),
]


def safetensors(tensors):
    """The safetensors bytes of float32 arrays by name: the 8-byte little-endian header length,
    the JSON header (keys sorted, padded with spaces to a multiple of 8), then the data in key
    order."""
    header, offset, data = {}, 0, b""
    for key in sorted(tensors):
        raw = np.ascontiguousarray(tensors[key], dtype="<f4").tobytes()
        header[key] = {"dtype": "F32", "shape": list(tensors[key].shape), "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        data += raw
    text = json.dumps(header, separators=(",", ":"), sort_keys=True).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def toml_string(text):
    return json.dumps(text)


def export(out_dir, name, description, function, arguments, seed):
    rng = np.random.default_rng(seed)
    args = [normal(rng, shape, scale) for (_, shape, scale, _) in arguments]
    lowered = jax.jit(function).lower(*args)
    module = lowered.compiler_ir("hlo").as_serialized_hlo_module_proto()
    results = jax.jit(function)(*args)
    if not isinstance(results, tuple):
        results = (results,)
    folder = os.path.join(out_dir, f"jax_{name}")
    os.makedirs(os.path.join(folder, "inputs"), exist_ok=True)
    os.makedirs(os.path.join(folder, "outputs"), exist_ok=True)
    with open(os.path.join(folder, "module.hlo.pb"), "wb") as f:
        f.write(module)
    for i, arg in enumerate(args):
        np.save(os.path.join(folder, "inputs", f"input{i}.npy"), arg)
    for j, result in enumerate(results):
        np.save(os.path.join(folder, "outputs", f"output{j}.npy"), np.asarray(result))
    weights = {key: arg for (_, _, _, key), arg in zip(arguments, args) if key is not None}
    with open(os.path.join(folder, "weights.safetensors"), "wb") as f:
        f.write(safetensors(weights))
    choices = [f"{i}={key}" for i, (_, _, _, key) in enumerate(arguments) if key is not None]
    lines = [
        'producer = "jax"',
        f"description = {toml_string(description)}",
        f"compile_args = [{', '.join(toml_string(a) for a in COMPILE_ARGS)}]",
        "# f32 sums of up to 32 terms may round differently in XLA and the interpreter (about",
        "# K * eps(f32) = 4e-6 of the terms' size, order 1 here), and XLA's exp is its own polynomial.",
        f"rtol = {RTOL}",
        f"atol = {ATOL}",
        "",
        "[weights]",
        'file = "weights.safetensors"',
        f"weight = [{', '.join(toml_string(c) for c in choices)}]",
        "",
    ]
    with open(os.path.join(folder, "fixture.toml"), "w") as f:
        f.write("\n".join(lines))
    print(f"wrote {folder}: {len(module)} bytes of HLO, {len(args)} inputs, {len(results)} outputs")


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    print(f"jax {jax.__version__}", file=sys.stderr)
    for seed, (name, description, function, arguments) in enumerate(MODELS):
        export(out_dir, name, description, function, arguments, seed)


if __name__ == "__main__":
    main()
