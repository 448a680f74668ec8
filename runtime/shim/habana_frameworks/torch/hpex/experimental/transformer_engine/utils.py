"""`transformer_engine.utils` (emulated): fp8 metadata types; fp8 itself is not available."""

from enum import IntEnum

from hpusim.hpex import unavailable

from .fp8 import REASON


class FP8FwdTensors(IntEnum):
    GEMM1_INPUT = 0
    GEMM1_WEIGHT = 1
    GEMM2_INPUT = 2
    GEMM2_WEIGHT = 3


class FP8BwdTensors(IntEnum):
    GRAD_OUTPUT1 = 0
    GRAD_OUTPUT2 = 1


FP8TensorMeta = unavailable("transformer_engine.utils.FP8TensorMeta", REASON)
FP8 = unavailable("transformer_engine.utils.FP8", REASON)
