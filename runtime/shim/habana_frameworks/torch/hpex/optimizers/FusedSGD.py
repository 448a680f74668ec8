"""`hpex.optimizers.FusedSGD` module (emulated)."""

from hpusim.hpex import (
    FusedSGD,
)

__all__ = [
    "FusedSGD",
]
