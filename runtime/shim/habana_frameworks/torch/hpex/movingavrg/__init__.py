"""`habana_frameworks.torch.hpex.movingavrg` (emulated)."""

from .FusedEMA import FusedEMA

__all__ = [
    "FusedEMA",
]
