"""`hpex.kernels.Fp8FusedSDPA` module (emulated): fp8 attention is device-only."""

from hpusim.hpex import (
    fp8_fused_sdpa,
    fp8_sdpa_bwd_wrapper,
    fp8_sdpa_fwd_wrapper,
    gqa_output_reshape,
)

__all__ = [
    "fp8_fused_sdpa",
    "fp8_sdpa_bwd_wrapper",
    "fp8_sdpa_fwd_wrapper",
    "gqa_output_reshape",
]
