"""`hpex.optimizers.MarkstepAdam` module (emulated)."""

from hpusim.hpex import (
    Adam,
)

__all__ = [
    "Adam",
]
