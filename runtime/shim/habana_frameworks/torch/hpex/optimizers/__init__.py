"""`habana_frameworks.torch.hpex.optimizers` (emulated): one fused optimizer op per parameter group."""

from hpusim.hpex import (
    Adam,
    AdamW,
    FusedAdagrad,
    FusedAdamW,
    FusedLamb,
    FusedLars,
    FusedResourceApplyMomentum,
    FusedSGD,
)

__all__ = [
    "Adam",
    "AdamW",
    "FusedAdagrad",
    "FusedAdamW",
    "FusedLamb",
    "FusedLars",
    "FusedResourceApplyMomentum",
    "FusedSGD",
]
