"""A kernel inside a graph: the configuration a framework emits as the
``AwsNeuronCustomNativeKernel`` custom call, run by ``nrtsim hlo run`` with no Python at run time.

The graph adds a third input to the kernel's result, so the custom call's value flows on; the
expectation is NumPy's sum of the three inputs.
"""

import json
import os
import subprocess
import tempfile
import unittest

import _setup  # noqa: F401
import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
from neuronxcc.nki.compile import GenericKernel
from neuronxcc.nki.compiler.backends.neuron.FrameworkKernel import UnifiedKernel


def add_kernel(a, b):
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    i = nl.program_id(0)
    rows = i * 64 + nl.arange(64)[:, None]
    cols = nl.arange(32)[None, :]
    nl.store(out[rows, cols], nl.add(nl.load(a[rows, cols]), nl.load(b[rows, cols])))
    return out


def scale_in_place(a, out):
    nl.store(out, nl.multiply(nl.load(a), 3.0))


def hlo_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def run_hlo(text, inputs):
    tool = os.environ["NRTSIM_TOOL"]
    with tempfile.TemporaryDirectory() as folder:
        module = os.path.join(folder, "m.hlo")
        with open(module, "w") as f:
            f.write(text)
        args = [tool, "hlo", "run", module, "--output-dir", folder]
        for k, array in enumerate(inputs):
            path = os.path.join(folder, f"in{k}.npy")
            np.save(path, array)
            args += ["--input", path]
        done = subprocess.run(args, capture_output=True, text=True)
        if done.returncode != 0:
            raise AssertionError(done.stderr)
        return np.load(os.path.join(folder, "output0.npy"))


class KernelInGraph(unittest.TestCase):
    def test_the_framework_classes_are_the_jit_kernels(self):
        self.assertIsInstance(nki.jit(add_kernel), GenericKernel)

    def test_a_grid_kernel_runs_as_a_custom_call(self):
        a = np.random.default_rng(1).random((128, 32), dtype=np.float32)
        b = np.random.default_rng(2).random((128, 32), dtype=np.float32)
        d = np.random.default_rng(3).random((128, 32), dtype=np.float32)
        config = UnifiedKernel.trace(add_kernel, grid=(2,)).dump_config(a, b)
        self.assertEqual(config.return_types, [(np.dtype(np.float32), (128, 32))])
        self.assertEqual(config.operand_output_aliases, {})
        self.assertFalse(config.result_is_sequence)
        self.assertEqual(json.loads(config.dumped_config)["grid"], [2])
        text = f"""HloModule kernel_in_graph

ENTRY main {{
  a = f32[128,32]{{1,0}} parameter(0)
  b = f32[128,32]{{1,0}} parameter(1)
  d = f32[128,32]{{1,0}} parameter(2)
  k = f32[128,32]{{1,0}} custom-call(a, b), custom_call_target="AwsNeuronCustomNativeKernel", backend_config={hlo_string(config.dumped_config)}
  ROOT r = f32[128,32]{{1,0}} add(k, d)
}}
"""
        np.testing.assert_array_equal(run_hlo(text, [a, b, d]), (a + b) + d)

    def test_an_argument_the_kernel_writes_is_an_aliased_result(self):
        a = np.arange(8 * 4, dtype=np.float32).reshape(8, 4)
        out = np.zeros_like(a)
        config = nki.jit(scale_in_place).dump_config(a, out)
        # The kernel returns nothing and writes its second argument: one result, aliased to it.
        self.assertEqual(config.operand_output_aliases, {1: 0})
        text = f"""HloModule in_place

ENTRY main {{
  a = f32[8,4]{{1,0}} parameter(0)
  o = f32[8,4]{{1,0}} parameter(1)
  ROOT k = f32[8,4]{{1,0}} custom-call(a, o), custom_call_target="AwsNeuronCustomNativeKernel", output_to_operand_aliasing={{{{}}: (1, {{}})}}, backend_config={hlo_string(config.dumped_config)}
}}
"""
        np.testing.assert_array_equal(run_hlo(text, [a, out]), a * 3)

    def test_a_call_with_other_shapes_than_traced_is_refused(self):
        a = np.zeros((128, 32), np.float32)
        config = UnifiedKernel.trace(add_kernel, grid=(2,)).dump_config(a, a)
        text = f"""HloModule wrong

ENTRY main {{
  a = f32[128,16]{{1,0}} parameter(0)
  ROOT k = f32[128,32]{{1,0}} custom-call(a, a), custom_call_target="AwsNeuronCustomNativeKernel", backend_config={hlo_string(config.dumped_config)}
}}
"""
        with self.assertRaisesRegex(AssertionError, r"operand 0 is f32\[128, 16\], the kernel `add_kernel` was traced for f32\[128, 32\]"):
            run_hlo(text, [np.zeros((128, 16), np.float32)])


if __name__ == "__main__":
    unittest.main()
