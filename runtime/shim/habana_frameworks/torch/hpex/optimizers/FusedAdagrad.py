"""`hpex.optimizers.FusedAdagrad` module (emulated)."""

from hpusim.hpex import (
    FusedAdagrad,
)

__all__ = [
    "FusedAdagrad",
]
