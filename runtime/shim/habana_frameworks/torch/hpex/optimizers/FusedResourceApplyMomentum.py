"""`hpex.optimizers.FusedResourceApplyMomentum` module (emulated)."""

from hpusim.hpex import (
    FusedResourceApplyMomentum,
)

__all__ = [
    "FusedResourceApplyMomentum",
]
