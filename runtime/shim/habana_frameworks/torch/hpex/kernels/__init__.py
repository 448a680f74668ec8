"""`habana_frameworks.torch.hpex.kernels` (emulated): fused kernels, each ONE fused device op
(see hpusim.hpex); what needs the device's fp8 hardware raises NotImplementedError."""

from hpusim.hpex import (
    CTCLoss,
    CustomSoftmax,
    FusedSDPA,
    PySDPA,
    PySDPAHinted,
    RotaryPosEmbeddingHelperV1,
    RotaryPosEmbeddingHelperV2,
    RotaryPosEmbeddingHelperV3,
    RotaryPosEmbeddingMode,
    apply_rotary_pos_emb,
    fp8_fused_sdpa,
    fp8_sdpa_bwd_wrapper,
    fp8_sdpa_fwd_wrapper,
    gqa_output_reshape,
)

__all__ = [
    "CTCLoss",
    "CustomSoftmax",
    "FusedSDPA",
    "PySDPA",
    "PySDPAHinted",
    "RotaryPosEmbeddingHelperV1",
    "RotaryPosEmbeddingHelperV2",
    "RotaryPosEmbeddingHelperV3",
    "RotaryPosEmbeddingMode",
    "apply_rotary_pos_emb",
    "fp8_fused_sdpa",
    "fp8_sdpa_bwd_wrapper",
    "fp8_sdpa_fwd_wrapper",
    "gqa_output_reshape",
]
