"""`hpex.optimizers.distributed` (emulated): FusedAdamW in the functional form, whose `step`
takes the gradients (`hpusim.hpex.GradientsFusedAdamW`; the bridge's is not sharded either)."""

from .FusedAdamW import FusedAdamW

__all__ = ["FusedAdamW"]
