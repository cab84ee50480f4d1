#!/usr/bin/env python3
"""XLA's side of `conformance/tests/xla_vectors.rs`: parse each vector's HLO text with XLA's own
parser, compile it for the CPU, and run it on the arguments the simulator's launches had.

Usage: run_vectors.py JOBS.json

JOBS.json is a list of jobs `{"hlo": PATH, "error": PATH, "runs": [RUN]}` where a RUN is one
launch `{"args": [{"file", "type", "shape"}], "out": DIR}`, or one round of the ranks of a
collective program `{"replicas": [LAUNCH, ...]}`, rank by rank. Every job's module is parsed and
compiled (once per replica count: a round of N ranks runs as one execution of N replicas, one per
CPU device), and for each launch the result leaves are written to DIR/result_J.bin as raw
little-endian bytes. Argument files are raw little-endian bytes too; `type` is the HLO element
type name. When XLA refuses a module (or a run fails) its message is written to the job's `error`
file and the next job goes on.

A job may also list `"protos": [{"label", "path"}]`: binary `HloModuleProto`s of the same module
(the vector's `model.hlo.pb`, its metaneff's `serialized_graph_def`, its NEFF's member). Each is
loaded by XLA from the proto, not the text, compiled and run on the same launches, its results
written to DIR/LABEL/result_J.bin. `"xla_parse"`, when given, is where XLA's own parse of the text
is written as a serialized `HloModuleProto`, for comparing the program shapes XLA derives.
"""

import json
import os
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
# Up to MAX_REPLICAS CPU devices, for the rounds of collective programs.
MAX_REPLICAS = 8

import jax  # noqa: E402
import jaxlib._hlo as hlo  # noqa: E402
import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402
from jax._src.lib import _jax  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec  # noqa: E402

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_num_cpu_devices", MAX_REPLICAS)

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
    devices = jax.devices("cpu")
    for job in jobs:
        try:
            run_job(job, devices)
        except Exception as error:  # XLA's parser and compiler raise plain exceptions
            with open(job["error"], "w") as f:
                f.write(f"{job['hlo']}: XLA: {error}\n")
    return 0


def compile_for(mlir, devices, replicas):
    """The module compiled to run as `replicas` replicas, replica r on CPU device r."""
    if replicas > len(devices):
        raise ValueError(f"a round of {replicas} ranks, but only {len(devices)} CPU devices")
    options = _jax.CompileOptions()
    if replicas > 1:
        build = options.executable_build_options
        build.num_replicas = replicas
        build.num_partitions = 1
        build.device_assignment = _jax.DeviceAssignment.create(
            np.arange(replicas).reshape(replicas, 1)
        )
    chosen = tuple(devices[:replicas])
    return chosen, devices[0].client.compile_and_load(mlir, _jax.DeviceList(chosen), options)


def run_job(job, devices):
    with open(job["hlo"]) as f:
        text = f.read()
    module = hlo.hlo_module_from_text(text)
    serialized = module.as_serialized_hlo_module_proto()
    if job.get("xla_parse"):
        with open(job["xla_parse"], "wb") as f:
            f.write(serialized)
    run_module(_jax.mlir.hlo_to_stablehlo(serialized), job["runs"], devices, None)
    for proto in job.get("protos", []):
        with open(proto["path"], "rb") as f:
            data = f.read()
        try:
            mlir = _jax.mlir.hlo_to_stablehlo(data)
        except Exception as error:
            raise RuntimeError(f"loading {proto['label']} from the proto: {error}") from error
        run_module(mlir, job["runs"], devices, proto["label"])


def run_module(mlir, runs, devices, label):
    """Runs every launch of `runs`; results go to each launch's `out`, or its LABEL subfolder."""
    compiled = {}
    if not runs:
        # No launch to run: still compile, so a module XLA cannot build is found.
        compile_for(mlir, devices, 1)
    for run in runs:
        launches = run.get("replicas", [run])
        replicas = len(launches)
        if replicas not in compiled:
            compiled[replicas] = compile_for(mlir, devices, replicas)
        chosen, executable = compiled[replicas]
        mesh = Mesh(np.array(chosen), ("replica",))
        args = []
        for i, arg in enumerate(launches[0]["args"]):
            shards = [
                jax.device_put(load(launch["args"][i]), device)
                for launch, device in zip(launches, chosen)
            ]
            # One buffer per replica, each the whole parameter. The array is declared replicated
            # so its shards have the parameter's shape; XLA reads each device's own buffer, which
            # is what makes the replicas' arguments differ.
            args.append(
                jax.make_array_from_single_device_arrays(
                    tuple(arg["shape"]), NamedSharding(mesh, PartitionSpec()), shards
                )
            )
        results = executable.execute_sharded(args).disassemble_into_single_device_arrays()
        for r, launch in enumerate(launches):
            out = launch["out"] if label is None else os.path.join(launch["out"], label)
            os.makedirs(out, exist_ok=True)
            for j, per_device in enumerate(results):
                array = np.ascontiguousarray(np.asarray(per_device[r]))
                array.tofile(os.path.join(out, f"result_{j}.bin"))


def load(arg):
    data = np.fromfile(arg["file"], dtype=TYPES[arg["type"]])
    return data.reshape(arg["shape"])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
