"""`habana_frameworks.torch.hpex.normalization` (emulated): FusedClipNorm, FusedRMSNorm."""

from .FusedClipNorm import FusedClipNorm
from .FusedRMSNorm import FusedRMSNorm, RmsNormBwdMode

__all__ = [
    "FusedClipNorm",
    "FusedRMSNorm",
    "RmsNormBwdMode",
]
