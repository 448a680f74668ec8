"""`hpex.movingavrg.FusedEMA` module (emulated)."""

from hpusim.hpex import (
    FusedEMA,
)

__all__ = [
    "FusedEMA",
]
