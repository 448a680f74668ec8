"""`habana_frameworks.torch.hpex.optimizers` (emulated): one fused optimizer op per parameter group."""

from .FusedAdagrad import FusedAdagrad
from .FusedAdamW import FusedAdamW
from .FusedLamb import FusedLamb
from .FusedLars import FusedLars
from .FusedResourceApplyMomentum import FusedResourceApplyMomentum
from .FusedSGD import FusedSGD
from .MarkstepAdam import Adam
from .MarkstepAdamW import AdamW

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
