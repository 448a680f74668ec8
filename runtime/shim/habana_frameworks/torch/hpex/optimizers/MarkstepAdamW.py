"""`hpex.optimizers.MarkstepAdamW` module (emulated)."""

from hpusim.hpex import (
    AdamW,
)

__all__ = [
    "AdamW",
]
