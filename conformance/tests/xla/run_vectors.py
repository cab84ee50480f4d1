#!/usr/bin/env python3
"""XLA's side of `conformance/tests/xla_vectors.rs`: parse each vector's HLO text with XLA's own
parser, compile it for the CPU, and run it on the arguments the simulator's launches had.

Usage: run_vectors.py JOBS.json

JOBS.json is a list of jobs `{"hlo": PATH, "error": PATH, "runs": [{"args": [{"file", "type",
"shape"}], "out": DIR}]}`: every job's module is parsed and compiled, and for each run the result
leaves are written to DIR/result_J.bin as raw little-endian bytes. Argument files are raw
little-endian bytes too; `type` is the HLO element type name. When XLA refuses a module (or a run
fails) its message is written to the job's `error` file and the next job goes on.
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

TYPES = {
    "pred": np.bool_,
    "s8": np.int8,
    "s16": np.int16,
    "s32": np.int32,
    "s64": np.int64,
    "u8": np.uint8,
    "u16": np.uint16,
    "u32": np.uint32,
    "u64": np.uint64,
    "f16": np.float16,
    "bf16": ml_dtypes.bfloat16,
    "f32": np.float32,
    "f64": np.float64,
    "f8e4m3fn": ml_dtypes.float8_e4m3fn,
    "f8e5m2": ml_dtypes.float8_e5m2,
}


def main(jobs_path):
    with open(jobs_path) as f:
        jobs = json.load(f)
    device = jax.devices("cpu")[0]
    for job in jobs:
        try:
            run_job(job, device)
        except Exception as error:  # XLA's parser and compiler raise plain exceptions
            with open(job["error"], "w") as f:
                f.write(f"{job['hlo']}: XLA: {error}\n")
    return 0


def run_job(job, device):
    with open(job["hlo"]) as f:
        text = f.read()
    module = hlo.hlo_module_from_text(text)
    mlir = _jax.mlir.hlo_to_stablehlo(module.as_serialized_hlo_module_proto())
    executable = device.client.compile_and_load(
        mlir, _jax.DeviceList((device,)), _jax.CompileOptions()
    )
    for run in job["runs"]:
        args = []
        for arg in run["args"]:
            data = np.fromfile(arg["file"], dtype=TYPES[arg["type"]])
            args.append(jax.device_put(data.reshape(arg["shape"]), device))
        results = executable.execute_sharded(args).disassemble_into_single_device_arrays()
        os.makedirs(run["out"], exist_ok=True)
        for j, per_device in enumerate(results):
            array = np.ascontiguousarray(np.asarray(per_device[0]))
            array.tofile(os.path.join(run["out"], f"result_{j}.bin"))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
