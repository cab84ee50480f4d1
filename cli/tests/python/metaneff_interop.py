"""Cross-implementation check of the metaneff encoding against Google's Python protobuf.

Run by cli/tests/metaneff_python.rs; it is written for this project.

    metaneff_interop.py PROTO_DIR gen DIR       build messages with the Python bindings and write
                                                py_N.pb (deterministic bytes) and py_N.txt
    metaneff_interop.py PROTO_DIR reencode DIR  for every rs_N.pb: parse and write rs_N.pb.py.pb;
                                                for every rs_N.txt: parse text, write rs_N.txt.py.pb

The bindings are generated from abi/proto/metaneff.proto with grpc_tools' bundled protoc, so the
schema is ours and the implementation is Google's.
"""

import atexit
import importlib
import os
import random
import shutil
import sys
import tempfile


def bindings(proto_dir):
    from grpc_tools import protoc

    out = tempfile.mkdtemp(prefix="metaneff_pb2_")
    # The generated module is imported below and not needed once the process ends.
    atexit.register(shutil.rmtree, out, ignore_errors=True)
    status = protoc.main(
        ["protoc", f"-I{proto_dir}", f"--python_out={out}", os.path.join(proto_dir, "metaneff.proto")]
    )
    if status != 0:
        raise SystemExit(f"protoc failed with status {status}")
    sys.path.insert(0, out)
    return importlib.import_module("metaneff_pb2")


def cases(pb):
    T = pb.MetaTensor
    out = []

    # The worked example of docs/libtorchneuron.md §6, with an alias.
    m = pb.MetaNeff()
    t = m.input_tensors.add(name=b"input0", shape=[1, 1, 1, 32], data_type=T.FLOAT, type=T.USER_INPUT)
    m.output_tensors.add(name=b"output0", shape=[1, 1, 1, 32], data_type=T.FLOAT)
    m.model_config.return_aliases = True
    m.serialized_graph_def = b"hlo"
    m.output_aliases_to[0] = 0
    out.append(m)

    # States and weights with optional keys set, one of them empty.
    m = pb.MetaNeff(name=b"llama")
    m.input_tensors.add(name=b"input0", shape=[4, 128], data_type=T.INT64, type=T.USER_INPUT,
                        user_input_key=b"input_ids", allow_dynamic_batch_size=True)
    m.input_tensors.add(name=b"input1", shape=[4, 8, 128, 64], data_type=T.BFLOAT16,
                        type=T.INPUT_STATE, checkpoint_key=b"kv.0")
    m.input_tensors.add(name=b"input2", shape=[4096], data_type=T.FLOAT16, type=T.INPUT_WEIGHT,
                        checkpoint_key=b"")
    m.output_tensors.add(name=b"output0", shape=[4, 128, 32000], data_type=T.FLOAT)
    m.output_tensors.add(name=b"output1", shape=[4, 8, 128, 64], data_type=T.BFLOAT16)
    m.output_aliases_to[1] = 1
    m.output_aliases_to[3] = 2
    m.num_user_inputs = 1
    m.num_states = 1
    m.num_weights = 1
    m.model_config.num_infer = 2
    m.model_config.timeout = -1
    m.model_config.async_load = True
    m.model_config.lazy_load = True
    out.append(m)

    # Edge values: negative dims and keys, every dtype, non-UTF-8 names, an empty config.
    m = pb.MetaNeff()
    for value in sorted(T.DataType.values()):
        m.input_tensors.add(name=bytes([0xFF, value]), shape=[-1, 0, 2**62], data_type=value)
    m.model_config.SetInParent()
    m.output_aliases_to[-5] = 2**63 - 1
    out.append(m)

    # Random messages from a fixed seed.
    rng = random.Random(20261129)
    for _ in range(40):
        m = pb.MetaNeff()
        for side in (m.input_tensors, m.output_tensors):
            for _ in range(rng.randrange(4)):
                t = side.add()
                t.name = bytes(rng.randrange(256) for _ in range(rng.randrange(8)))
                t.shape.extend(rng.choice([0, 1, 7, -3, 2**40]) for _ in range(rng.randrange(5)))
                t.data_type = rng.choice(list(T.DataType.values()))
                t.type = rng.randrange(4)
                t.allow_dynamic_batch_size = rng.random() < 0.5
                if rng.random() < 0.5:
                    t.content = bytes(rng.randrange(256) for _ in range(rng.randrange(5)))
                if rng.random() < 0.5:
                    t.checkpoint_key = bytes(rng.randrange(97, 123) for _ in range(rng.randrange(4)))
                if rng.random() < 0.3:
                    t.user_input_key = b"arg"
        if rng.random() < 0.5:
            c = m.model_config
            c.num_infer = rng.randrange(-2, 3)
            c.optimal_ncg_size = rng.randrange(3)
            c.return_aliases = rng.random() < 0.5
        for _ in range(rng.randrange(3)):
            m.output_aliases_to[rng.randrange(-1, 4)] = rng.randrange(0, 4)
        m.num_states = rng.randrange(3)
        out.append(m)
    return out


def main():
    proto_dir, mode, directory = sys.argv[1:4]
    pb = bindings(proto_dir)
    from google.protobuf import text_format

    if mode == "gen":
        for i, m in enumerate(cases(pb)):
            with open(os.path.join(directory, f"py_{i}.pb"), "wb") as f:
                f.write(m.SerializeToString(deterministic=True))
            with open(os.path.join(directory, f"py_{i}.txt"), "w") as f:
                f.write(text_format.MessageToString(m))
    elif mode == "reencode":
        for name in sorted(os.listdir(directory)):
            path = os.path.join(directory, name)
            if name.startswith("rs_") and name.endswith(".pb"):
                m = pb.MetaNeff()
                with open(path, "rb") as f:
                    m.ParseFromString(f.read())
            elif name.startswith("rs_") and name.endswith(".txt"):
                m = pb.MetaNeff()
                with open(path) as f:
                    text_format.Parse(f.read(), m)
            else:
                continue
            with open(path + ".py.pb", "wb") as f:
                f.write(m.SerializeToString(deterministic=True))
    else:
        raise SystemExit(f"unknown mode {mode!r}, expected gen or reencode")


if __name__ == "__main__":
    main()
