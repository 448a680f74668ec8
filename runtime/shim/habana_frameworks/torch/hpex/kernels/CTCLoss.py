"""`hpex.kernels.CTCLoss` module (emulated)."""

from hpusim.hpex import (
    CTCLoss,
)

__all__ = [
    "CTCLoss",
]
