#!/usr/bin/env python3
"""Write the nkipy fixtures of the compiled-model tests (`cli/tests/compiled_models.rs`).

Usage (a Python with nkipy installed from its source, `pip install --no-deps ./nkipy`, plus
numpy, protobuf and ml_dtypes; no compiler and no device are needed):
    python conformance/tests/models/export_nkipy.py [OUT_DIR]

OUT_DIR defaults to this script's folder. For each kernel it writes `OUT_DIR/nkipy_NAME/`:
    module.hlo.pb        the HloModuleProto nkipy traces for the kernel, the bytes nkipy writes as
                         `hlo_module.pb` before it runs neuronx-cc (`HLOModule.to_proto()`)
    inputs/NAME.npy      every kernel argument, by the name nkipy gives the NEFF input (the
                         argument's name; `NAME.must_alias_input` for an argument the kernel
                         writes in place)
    outputs/NAME.npy     what the same kernel computes when NumPy runs it, by the name nkipy gives
                         the NEFF output (`output{j}`, or the argument's name for an aliased one);
                         a scalar as shape (1,), the shape of its NEFF variable
    fixture.toml         producer, description, nkipy's compile arguments, nkipy's tolerances

The kernels are plain NumPy functions, as nkipy's own tests write them: NumPy running the
function is the CPU reference, the trace is what goes to the compiler (top-k, an nkipy op, has
its NumPy reference beside it). Inputs are seeded, so a
rerun with the same numpy and nkipy writes the same bytes; the tests read the committed files
and never regenerate them.
"""

import os
import sys

import numpy as np
from nkipy.core import tensor_apis
from nkipy.core.trace import NKIPyKernel

# What nkipy passes to neuronx-cc after `compile --framework XLA hlo_module.pb`
# (`nkipy/core/compile.py`: the pipeline, the target it falls back to off-device, its output file
# and `nkipy_compiler_args`).
COMPILE_ARGS = [
    "--pipeline",
    "compile",
    "SaveTemps",
    "--target",
    "trn2",
    "--output=file.neff",
    "--lnc",
    "1",
    "--internal-tensorizer-opt-level=2",
]

# nkipy's own device tolerance (`tests/utils.py`: BAREMETAL_RTOL, BAREMETAL_ATOL).
RTOL = 1e-2
ATOL = 1e-2


def elementwise(a, b):
    return np.exp(a) * b + np.maximum(a, 0.0)


def matmul(a, b):
    return a @ b


def softmax(x):
    shifted = x - np.max(x, axis=-1, keepdims=True)
    e = np.exp(shifted)
    return e / np.sum(e, axis=-1, keepdims=True)


def reduction(a):
    # A row sum and a scalar (a NEFF variable of shape [1]).
    return np.sum(a, axis=1), np.max(a)


def slicing(a):
    # A strided slice with a reversed axis, and one column.
    return a[2:10:2, ::-1], a[:, 3]


def alias(a, b):
    # Writes its argument in place: nkipy names the parameter `a.must_alias_input` and aliases
    # the output `a` to it.
    a[0, :] = b[1, :]
    return a


def topk(x):
    # nkipy's top-k (Neuron's AwsNeuronTopK custom call): the 3 largest of each row.
    return tensor_apis.topk(x, k=3, axis=-1)


def topk_reference(x):
    # NumPy: the 3 largest, largest first, and their indices as u32 (the custom call's type).
    order = np.argsort(-x, axis=-1, kind="stable")[..., :3]
    return np.take_along_axis(x, order, axis=-1), order.astype(np.uint32)


def kernels(rng):
    def normal(*shape, dtype=np.float32):
        return rng.standard_normal(shape).astype(dtype)

    return [
        ("elementwise", "exp(a) * b + max(a, 0), f32 [8,16]", elementwise,
         [("a", normal(8, 16)), ("b", normal(8, 16))]),
        ("matmul", "a @ b, f32 [16,32] @ [32,8]", matmul,
         [("a", normal(16, 32)), ("b", normal(32, 8))]),
        ("softmax", "softmax over the last axis, f32 [4,32]", softmax,
         [("x", normal(4, 32))]),
        ("reduction", "row sums and the scalar max, f32 [8,16]", reduction,
         [("a", normal(8, 16))]),
        ("slicing", "a[2:10:2, ::-1] and a[:, 3], f32 [12,6]", slicing,
         [("a", normal(12, 6))]),
        ("alias", "a[0, :] = b[1, :] in place, f16 [4,8] (an aliased .must_alias_input)", alias,
         [("a", normal(4, 8, dtype=np.float16)), ("b", normal(4, 8, dtype=np.float16))]),
        ("topk", "the 3 largest of each row and their u32 indices, f32 [4,10] (AwsNeuronTopK)",
         topk, [("x", normal(4, 10))], topk_reference),
    ]


def toml_string(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def export(out_dir, name, description, fn, args, reference=None):
    arrays = [value for _, value in args]
    traced = NKIPyKernel.trace(fn, backend="hlo")
    traced.specialize(*[a.copy() for a in arrays])
    ir = traced._code
    proto = ir.to_proto()
    # Source paths in the metadata are cut to the file name, so the bytes do not depend on where
    # the repository is checked out.
    for computation in proto.computations:
        for instruction in computation.instructions:
            if instruction.HasField("metadata") and instruction.metadata.source_file:
                instruction.metadata.source_file = os.path.basename(
                    instruction.metadata.source_file
                )
    module = proto.SerializeToString(deterministic=True)
    expected = (reference or fn)(*[a.copy() for a in arrays])
    if not isinstance(expected, tuple):
        expected = (expected,)
    input_names = [placeholder.name for placeholder in ir.inputs]
    output_names = [placeholder.name for placeholder in ir.outputs]
    if len(input_names) != len(arrays) or len(output_names) != len(expected):
        raise SystemExit(
            f"{name}: nkipy traced {len(input_names)} inputs and {len(output_names)} outputs, "
            f"NumPy gave {len(arrays)} arguments and {len(expected)} results"
        )
    folder = os.path.join(out_dir, f"nkipy_{name}")
    os.makedirs(os.path.join(folder, "inputs"), exist_ok=True)
    os.makedirs(os.path.join(folder, "outputs"), exist_ok=True)
    with open(os.path.join(folder, "module.hlo.pb"), "wb") as f:
        f.write(module)
    for input_name, value in zip(input_names, arrays):
        np.save(os.path.join(folder, "inputs", f"{input_name}.npy"), value)
    for output_name, value in zip(output_names, expected):
        value = np.asarray(value)
        # A scalar result is a NEFF variable of shape [1], and what spike reads back has that
        # shape; the value is NumPy's.
        if value.ndim == 0:
            value = value.reshape(1)
        np.save(os.path.join(folder, "outputs", f"{output_name}.npy"), value)
    with open(os.path.join(folder, "fixture.toml"), "w") as f:
        f.write('producer = "nkipy"\n')
        f.write(f"description = {toml_string('nkipy ' + description)}\n")
        f.write("compile_args = [" + ", ".join(toml_string(a) for a in COMPILE_ARGS) + "]\n")
        f.write("# nkipy's own tolerance for device results (tests/utils.py).\n")
        f.write(f"rtol = {RTOL}\natol = {ATOL}\n")
    print(f"{folder}: inputs {input_names}, outputs {output_names}")


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    rng = np.random.default_rng(22)
    for name, description, fn, args, *reference in kernels(rng):
        export(out_dir, name, description, fn, args, *reference)


if __name__ == "__main__":
    main()
