"""`hpex.kernels.FusedSDPA` module (emulated)."""

from hpusim.hpex import (
    FusedSDPA,
    gqa_input_reshape_fwd,
    gqa_output_reshape,
    is_gqa,
)

__all__ = [
    "FusedSDPA",
    "gqa_input_reshape_fwd",
    "gqa_output_reshape",
    "is_gqa",
]
