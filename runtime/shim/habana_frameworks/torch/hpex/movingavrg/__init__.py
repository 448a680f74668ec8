"""`habana_frameworks.torch.hpex.movingavrg` (emulated)."""

from hpusim.hpex import (
    FusedEMA,
)

__all__ = [
    "FusedEMA",
]
