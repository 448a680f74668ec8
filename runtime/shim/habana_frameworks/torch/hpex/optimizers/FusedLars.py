"""`hpex.optimizers.FusedLars` module (emulated)."""

from hpusim.hpex import (
    FusedLars,
)

__all__ = [
    "FusedLars",
]
