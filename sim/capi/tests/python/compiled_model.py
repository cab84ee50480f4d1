#!/usr/bin/env python3
"""A compiled model run through libnrt from Python with ctypes, making the calls spike makes:
init, visible core count, load, tensor info, one tensor per info entry added to its set by name,
write the inputs, execute, read the outputs. Each output is compared with the producer's `.npy`
under numpy.allclose's rule (NaN matching NaN).

Usage: compiled_model.py LIBNRT NEFF INPUTS_DIR OUTPUTS_DIR RTOL ATOL
Prints one line per output with the largest differences, then "compiled model ok"; exits 1 naming
the first failed check. Only ctypes and numpy.
"""

import ctypes
import os
import sys

import numpy as np

NAME_MAX = 256
USAGE_INPUT, USAGE_OUTPUT = 0, 1
PLACEMENT_DEVICE = 0
FRAMEWORK_NO_FW = 1

# nrt_dtype_t in the numbering of our headers (current releases) -> the .npy descr numpy writes
# (bfloat16 as ml_dtypes saves it, raw 2-byte items).
DESCRS = {
    0x1: "<u8", 0x2: "|i1", 0x3: "|u1", 0x4: "<i2", 0x5: "<u2", 0x6: "<V2", 0x7: "<f2",
    0x8: "<i4", 0x9: "<u4", 0xA: "<f4", 0xC: "<i8",
}


class TensorInfo(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char * NAME_MAX),
        ("usage", ctypes.c_int),
        ("size", ctypes.c_size_t),
        ("dtype", ctypes.c_int),
        ("shape", ctypes.POINTER(ctypes.c_uint32)),
        ("ndim", ctypes.c_uint32),
    ]


class TensorInfoArray(ctypes.Structure):
    _fields_ = [("tensor_count", ctypes.c_uint64), ("tensor_array", TensorInfo * 0)]


def fail(message):
    print(message)
    sys.exit(1)


def main():
    if len(sys.argv) != 7:
        fail("usage: compiled_model.py LIBNRT NEFF INPUTS_DIR OUTPUTS_DIR RTOL ATOL")
    lib_path, neff_path, inputs_dir, outputs_dir = sys.argv[1:5]
    rtol, atol = float(sys.argv[5]), float(sys.argv[6])
    assert ctypes.sizeof(TensorInfo) == 296, "nrt_tensor_info_t is 296 bytes"
    nrt = ctypes.CDLL(lib_path)
    nrt.nrt_get_status_as_str.restype = ctypes.c_char_p

    def expect(what, status):
        if status != 0:
            fail(f"{what} returned {nrt.nrt_get_status_as_str(status).decode()} ({status}), expected NRT_SUCCESS (0)")

    expect("nrt_init", nrt.nrt_init(FRAMEWORK_NO_FW, b"", b""))
    visible = ctypes.c_uint32(0)
    expect("nrt_get_visible_nc_count", nrt.nrt_get_visible_nc_count(ctypes.byref(visible)))
    if visible.value < 1:
        fail("no visible NeuronCore")
    with open(neff_path, "rb") as f:
        neff = f.read()
    model = ctypes.c_void_p()
    expect("nrt_load", nrt.nrt_load(neff, ctypes.c_size_t(len(neff)), 0, 1, ctypes.byref(model)))
    info_pointer = ctypes.POINTER(TensorInfoArray)()
    expect("nrt_get_model_tensor_info", nrt.nrt_get_model_tensor_info(model, ctypes.byref(info_pointer)))
    count = info_pointer.contents.tensor_count
    entries = ctypes.cast(
        ctypes.addressof(info_pointer.contents) + TensorInfoArray.tensor_array.offset,
        ctypes.POINTER(TensorInfo * count),
    ).contents

    inputs, outputs = ctypes.c_void_p(), ctypes.c_void_p()
    expect("nrt_allocate_tensor_set", nrt.nrt_allocate_tensor_set(ctypes.byref(inputs)))
    expect("nrt_allocate_tensor_set", nrt.nrt_allocate_tensor_set(ctypes.byref(outputs)))
    tensors = []
    for entry in entries:
        name = entry.name.decode()
        if entry.dtype not in DESCRS:
            fail(f"{name}: dtype {entry.dtype}, which this script does not compare")
        tensor = ctypes.c_void_p()
        expect("nrt_tensor_allocate", nrt.nrt_tensor_allocate(
            PLACEMENT_DEVICE, 0, ctypes.c_size_t(entry.size), entry.name, ctypes.byref(tensor)))
        tensors.append(tensor)
        if entry.usage == USAGE_INPUT:
            data = load(inputs_dir, name, DESCRS[entry.dtype], entry.size)
            expect("nrt_tensor_write", nrt.nrt_tensor_write(tensor, data, ctypes.c_size_t(0), ctypes.c_size_t(entry.size)))
            expect("nrt_add_tensor_to_tensor_set", nrt.nrt_add_tensor_to_tensor_set(inputs, entry.name, tensor))
        else:
            expect("nrt_add_tensor_to_tensor_set", nrt.nrt_add_tensor_to_tensor_set(outputs, entry.name, tensor))

    expect("nrt_execute", nrt.nrt_execute(model, inputs, outputs))

    for entry, tensor in zip(entries, tensors):
        if entry.usage != USAGE_OUTPUT:
            continue
        name, descr = entry.name.decode(), DESCRS[entry.dtype]
        buffer = ctypes.create_string_buffer(entry.size)
        expect("nrt_tensor_read", nrt.nrt_tensor_read(tensor, buffer, ctypes.c_size_t(0), ctypes.c_size_t(entry.size)))
        got = values(descr, buffer.raw)
        want = values(descr, load(outputs_dir, name, descr, entry.size))
        same = (np.isnan(got) & np.isnan(want)) | (got == want)
        difference = np.where(same, 0.0, np.abs(got - want))
        bad = ~same & ~(difference <= atol + rtol * np.abs(want))
        if bad.any():
            k = int(np.argmax(bad))
            fail(f"{name}[{k}] is {float(got[k])!r}, expected {float(want[k])!r} within atol {atol} + rtol {rtol}")
        nonzero = want != 0
        max_rel = float(np.max(difference[nonzero] / np.abs(want[nonzero]))) if nonzero.any() else 0.0
        print(f"{name}: {got.size} elements, max abs {float(np.max(difference, initial=0.0)):.3e}, max rel {max_rel:.3e}")

    for tensor in tensors:
        nrt.nrt_tensor_free(ctypes.byref(tensor))
    nrt.nrt_destroy_tensor_set(ctypes.byref(inputs))
    nrt.nrt_destroy_tensor_set(ctypes.byref(outputs))
    expect("nrt_free_model_tensor_info", nrt.nrt_free_model_tensor_info(info_pointer))
    expect("nrt_unload", nrt.nrt_unload(model))
    nrt.nrt_close()
    print("compiled model ok")


def load(folder, name, descr, size):
    """The data bytes of FOLDER/NAME.npy, after checking its dtype, order and size."""
    path = os.path.join(folder, f"{name}.npy")
    array = np.load(path, allow_pickle=False)
    # A PRED tensor crosses libnrt as uint8: numpy saves the producer's bools as |b1.
    found = "|u1" if array.dtype.str == "|b1" else array.dtype.str
    if found.replace("|", "<") != descr.replace("|", "<"):
        fail(f"{path}: dtype {array.dtype.str}, expected {descr} (the tensor info's dtype)")
    data = np.ascontiguousarray(array).tobytes()
    if len(data) != size:
        fail(f"{path}: {len(data)} data bytes, expected the tensor's {size}")
    return data


def values(descr, data):
    """The elements of raw bytes as float64 (bfloat16 widened to float32 by its bits)."""
    if descr == "<V2":
        return (np.frombuffer(data, "<u2").astype("<u4") << 16).view("<f4").astype(np.float64)
    return np.frombuffer(data, descr).astype(np.float64)


if __name__ == "__main__":
    main()
