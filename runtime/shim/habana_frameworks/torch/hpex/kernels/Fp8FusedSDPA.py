"""`hpex.kernels.Fp8FusedSDPA` module (emulated: `hpusim.fp8_attention`)."""

from hpusim.hpex import (
    Fp8FusedSDPA,
    fp8_fused_sdpa,
    fp8_sdpa_bwd_wrapper,
    fp8_sdpa_fwd_wrapper,
    gqa_output_reshape,
)

__all__ = [
    "Fp8FusedSDPA",
    "fp8_fused_sdpa",
    "fp8_sdpa_bwd_wrapper",
    "fp8_sdpa_fwd_wrapper",
    "gqa_output_reshape",
]
