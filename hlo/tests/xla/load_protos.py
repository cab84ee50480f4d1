#!/usr/bin/env python3
"""XLA's side of `text_xla.rs`'s `xla_loads_every_committed_proto`: XLA loads each committed
binary HloModuleProto from the proto (not the text), compiles it for the CPU, runs it on seeded
inputs, and compares its results with those of the module's HLO text, parsed by XLA, on the same
inputs.

Usage: load_protos.py JOBS.json REPORT.json

JOBS.json is a list of `{"proto": PATH, "text": PATH, "params": [{"type", "shape"}], "run": BOOL}`;
with `run` false the proto is only loaded (the modules XLA CPU already optimised: compiling one
again aborts XLA's fusion pass, which is no property of the proto). REPORT.json gets
`{"loaded": N, "ran": N, "failures": ["PATH: why", ...]}`.
"""

import json
import os
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import jax  # noqa: E402
import jaxlib._hlo as hlo  # noqa: E402
import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402
from jax._src.lib import _jax  # noqa: E402

jax.config.update("jax_enable_x64", True)


def dtype(name):
    plain = {"pred": np.bool_, "f16": np.float16, "f32": np.float32, "f64": np.float64}
    if name in plain:
        return np.dtype(plain[name])
    if name[0] in "su" and name[1:].isdigit():
        bits = int(name[1:])
        if bits >= 8:
            return np.dtype(f"{'int' if name[0] == 's' else 'uint'}{bits}")
        return np.dtype(getattr(ml_dtypes, f"{'int' if name[0] == 's' else 'uint'}{bits}"))
    aliases = {"bf16": "bfloat16", "f4e2m1fn": "float4_e2m1fn"}
    return np.dtype(getattr(ml_dtypes, aliases.get(name, name.replace("f8", "float8_"))))


def inputs(params, rng):
    out = []
    for p in params:
        ty = dtype(p["type"])
        shape = tuple(p["shape"])
        if ty == np.bool_:
            out.append(rng.integers(0, 2, shape).astype(np.bool_))
        elif np.issubdtype(ty, np.integer) or ty.kind in "iu" or "int" in ty.name:
            out.append(rng.integers(0, 4, shape).astype(ty))
        else:
            out.append(rng.standard_normal(shape).astype(ty))
    return out


def run(mlir, args):
    device = jax.devices("cpu")[0]
    executable = device.client.compile_and_load(
        mlir, _jax.DeviceList((device,)), _jax.CompileOptions()
    )
    buffers = [jax.device_put(a, device) for a in args]
    results = executable.execute_sharded(buffers).disassemble_into_single_device_arrays()
    return [np.asarray(r[0]) for r in results]


def same(a, b):
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind == "f" or a.dtype.name in ("bfloat16",) or "float" in a.dtype.name:
        x, y = a.astype(np.float64), b.astype(np.float64)
        return bool(np.all((x == y) | (np.isnan(x) & np.isnan(y))))
    return a.tobytes() == b.tobytes()


def main(jobs_path, report_path):
    with open(jobs_path) as f:
        jobs = json.load(f)
    loaded, ran, failures = 0, 0, []
    for job in jobs:
        try:
            with open(job["proto"], "rb") as f:
                from_proto = _jax.mlir.hlo_to_stablehlo(f.read())
            if not job["run"]:
                loaded += 1
                continue
            with open(job["text"]) as f:
                text = hlo.hlo_module_from_text(f.read()).as_serialized_hlo_module_proto()
            args = inputs(job["params"], np.random.default_rng(7))
            ours, theirs = run(from_proto, args), run(_jax.mlir.hlo_to_stablehlo(text), args)
            if len(ours) != len(theirs):
                raise ValueError(f"{len(ours)} results from the proto, {len(theirs)} from the text")
            for j, (a, b) in enumerate(zip(ours, theirs)):
                if not same(a, b):
                    raise ValueError(f"result {j} differs: {a!r} from the proto, {b!r} from the text")
            loaded += 1
            ran += 1
        except Exception as error:  # XLA raises plain exceptions
            failures.append(f"{job['proto']}: {error}")
    with open(report_path, "w") as f:
        json.dump({"loaded": loaded, "ran": ran, "failures": failures}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
