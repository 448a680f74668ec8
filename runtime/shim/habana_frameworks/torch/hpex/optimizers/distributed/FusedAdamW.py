"""`hpex.optimizers.distributed.FusedAdamW` module (emulated; see the package)."""

from hpusim.hpex import GradientsFusedAdamW as FusedAdamW

__all__ = ["FusedAdamW"]
