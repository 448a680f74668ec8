"""`hpex.kernels.CustomSoftmax` module (emulated)."""

from hpusim.hpex import (
    CustomSoftmax,
)

__all__ = [
    "CustomSoftmax",
]
