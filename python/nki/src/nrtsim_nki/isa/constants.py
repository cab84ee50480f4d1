"""The enumerations of ``nki.isa``: engines, reduce commands, DMA modes, matmul modes."""

from __future__ import annotations

import enum


class engine(enum.Enum):  # noqa: N801
    unknown = 0
    tensor = 1
    vector = 2
    scalar = 3
    gpsimd = 4
    activation = 3
    dma = 5
    sync = 6


tensor_engine = engine.tensor
vector_engine = engine.vector
scalar_engine = engine.scalar
gpsimd_engine = engine.gpsimd
activation_engine = engine.scalar
unknown_engine = engine.unknown


class reduce_cmd(enum.Enum):  # noqa: N801
    idle = 0
    reset = 1
    reset_reduce = 2
    reduce = 3
    load_reduce = 4


class oob_mode(enum.Enum):  # noqa: N801
    error = 0
    skip = 1


class dge_mode(enum.Enum):  # noqa: N801
    unknown = 0
    none = 1
    swdge = 2
    hwdge = 3


class matmul_perf_mode(enum.Enum):  # noqa: N801
    none = "none"
    double_row = "double_row"
    double_row_gen3 = "double_row_gen3"


class nc_version(enum.IntEnum):  # noqa: N801
    gen2 = 2
    gen3 = 3
    gen4 = 4


