"""`habana_frameworks.torch.hpex.normalization` (emulated): FusedClipNorm, FusedRMSNorm."""

from hpusim.hpex import (
    FusedClipNorm,
    FusedRMSNorm,
    RmsNormBwdMode,
)

__all__ = [
    "FusedClipNorm",
    "FusedRMSNorm",
    "RmsNormBwdMode",
]
