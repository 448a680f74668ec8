"""`hpex.optimizers.FusedLamb` module (emulated)."""

from hpusim.hpex import (
    FusedLamb,
)

__all__ = [
    "FusedLamb",
]
