"""`habana_frameworks.torch.hpex.kernels` (emulated): fused kernels, each ONE fused device op
(see hpusim.hpex); what needs the device's fp8 hardware raises NotImplementedError."""

from .CTCLoss import CTCLoss
from .CustomSoftmax import CustomSoftmax
from .Fp8FusedSDPA import (
    fp8_fused_sdpa,
    fp8_sdpa_bwd_wrapper,
    fp8_sdpa_fwd_wrapper,
    gqa_output_reshape,
)
from .FusedSDPA import FusedSDPA
from .PySDPA import PySDPA, PySDPAHinted
from .RotaryPosEmbeddingHelper import (
    RotaryPosEmbeddingHelperV1,
    RotaryPosEmbeddingHelperV2,
    RotaryPosEmbeddingHelperV3,
    RotaryPosEmbeddingMode,
    apply_rotary_pos_emb,
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
