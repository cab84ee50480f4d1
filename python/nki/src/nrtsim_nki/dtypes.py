"""NKI's element types as numpy dtypes (ml_dtypes for bfloat16 and the fp8 types).

A kernel uses them where numpy takes a dtype (``np.ones(..., dtype=nl.float8_e5m2)``), so they are
numpy's own types; ``tfloat32`` has no numpy type and is a named marker stored as float32.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np


class _Marker:
    """A dtype numpy does not have: its storage is ``storage``."""

    def __init__(self, name: str, storage):
        self.name = name
        self.storage = storage

    def __repr__(self) -> str:
        return f"nl.{self.name}"


tfloat32 = _Marker("tfloat32", np.float32)

#: Our name of each dtype, keyed by numpy dtype.
_NAMES = {
    np.dtype(np.float32): "float32",
    np.dtype(np.float16): "float16",
    np.dtype(ml_dtypes.bfloat16): "bfloat16",
    np.dtype(ml_dtypes.float8_e4m3): "float8_e4m3",
    np.dtype(ml_dtypes.float8_e5m2): "float8_e5m2",
    np.dtype(np.int8): "int8",
    np.dtype(np.uint8): "uint8",
    np.dtype(np.int16): "int16",
    np.dtype(np.uint16): "uint16",
    np.dtype(np.int32): "int32",
    np.dtype(np.uint32): "uint32",
    np.dtype(np.int64): "int64",
    np.dtype(np.uint64): "uint64",
    np.dtype(np.bool_): "bool",
}

_ALIASES = {
    "fp32": np.float32,
    "float32": np.float32,
    "fp16": np.float16,
    "float16": np.float16,
    "bf16": ml_dtypes.bfloat16,
    "bfloat16": ml_dtypes.bfloat16,
    "float8_e4m3": ml_dtypes.float8_e4m3,
    "float8_e5m2": ml_dtypes.float8_e5m2,
    "int8": np.int8,
    "uint8": np.uint8,
    "int16": np.int16,
    "uint16": np.uint16,
    "int32": np.int32,
    "uint32": np.uint32,
    "int64": np.int64,
    "uint64": np.uint64,
    "bool": np.bool_,
    "bool_": np.bool_,
    "tfloat32": tfloat32,
}


def canonical(dtype):
    """The numpy dtype (or marker) of ``dtype`` given as a type, a dtype or a name."""
    if isinstance(dtype, _Marker):
        return dtype
    if isinstance(dtype, str) and dtype in _ALIASES:
        value = _ALIASES[dtype]
        return value if isinstance(value, _Marker) else np.dtype(value)
    try:
        value = np.dtype(dtype)
    except TypeError as error:
        raise TypeError(f"{dtype!r} is not a dtype NKI has") from error
    if value == np.dtype(np.float64):
        # NKI has no float64: a float64 numpy argument is an error at the call, not here.
        return value
    if value not in _NAMES:
        raise TypeError(f"{value} is not a dtype NKI has (float32, bfloat16, float16, fp8, integers)")
    return value


def name(dtype) -> str:
    dtype = canonical(dtype)
    if isinstance(dtype, _Marker):
        return dtype.name
    if dtype not in _NAMES:
        raise TypeError(f"{dtype} is not a dtype NKI has")
    return _NAMES[dtype]


def storage(dtype) -> np.dtype:
    """The numpy dtype holding ``dtype``'s elements."""
    dtype = canonical(dtype)
    return np.dtype(dtype.storage) if isinstance(dtype, _Marker) else dtype


def is_float(dtype) -> bool:
    return name(dtype) in ("float32", "tfloat32", "float16", "bfloat16", "float8_e4m3", "float8_e5m2")


def itemsize(dtype) -> int:
    return storage(dtype).itemsize


_FLOAT_RANK = {"float8_e4m3": 1, "float8_e5m2": 1, "bfloat16": 2, "float16": 2, "tfloat32": 3, "float32": 4}


def weak(value):
    """The dtype a Python scalar takes in arithmetic: bool uint8, int int32, float float32."""
    if isinstance(value, (bool, np.bool_)):
        return np.dtype(np.uint8)
    if isinstance(value, (int, np.integer)) and not isinstance(value, np.generic):
        return np.dtype(np.int32)
    if isinstance(value, np.generic):
        return canonical(value.dtype)
    return np.dtype(np.float32)


def promote(a, b):
    """The result dtype of arithmetic between dtypes ``a`` and ``b`` (NKI's promotion rules).

    A float with an integer gives the float; two floats the wider, or a wider one when neither
    holds the other (float16 and bfloat16 give float32, the two fp8 types bfloat16); two integers
    the wider, or a wider one when signs differ (int8 and uint8 give int16, int32 and uint32
    float32, as the engines have no 64-bit integers).
    """
    na, nb = name(a), name(b)
    if na == nb:
        return canonical(a)
    fa, fb = is_float(a), is_float(b)
    if fa and not fb:
        return canonical(a)
    if fb and not fa:
        return canonical(b)
    if fa and fb:
        ra, rb = _FLOAT_RANK[na], _FLOAT_RANK[nb]
        if ra != rb:
            return canonical(a) if ra > rb else canonical(b)
        return ml_dtypes_bfloat16() if ra == 1 else np.dtype(np.float32)
    if na == "bool":
        return canonical(b)
    if nb == "bool":
        return canonical(a)
    sa, sb = storage(a), storage(b)
    if sa.kind == sb.kind:
        return sa if sa.itemsize >= sb.itemsize else sb
    signed, unsigned = (sa, sb) if sa.kind == "i" else (sb, sa)
    if signed.itemsize > unsigned.itemsize:
        return signed
    if unsigned.itemsize >= 4:
        return np.dtype(np.float32)
    return np.dtype(f"i{unsigned.itemsize * 2}")


def ml_dtypes_bfloat16():
    return np.dtype(ml_dtypes.bfloat16)
