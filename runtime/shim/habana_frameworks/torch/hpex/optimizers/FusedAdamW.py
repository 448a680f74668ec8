"""`hpex.optimizers.FusedAdamW` module (emulated)."""

from hpusim.hpex import (
    FusedAdamW,
)

__all__ = [
    "FusedAdamW",
]
