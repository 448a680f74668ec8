"""`hpex.normalization.FusedRMSNorm` module (emulated)."""

from hpusim.hpex import (
    FusedRMSNorm,
    RmsNormBwdMode,
)

__all__ = [
    "FusedRMSNorm",
    "RmsNormBwdMode",
]
