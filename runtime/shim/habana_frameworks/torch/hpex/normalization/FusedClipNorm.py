"""`hpex.normalization.FusedClipNorm` module (emulated)."""

from hpusim.hpex import (
    FusedClipNorm,
)

__all__ = [
    "FusedClipNorm",
]
