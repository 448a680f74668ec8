"""`hpex.kernels.PySDPA` module (emulated)."""

from hpusim.hpex import (
    PySDPA,
    PySDPAHinted,
)

__all__ = [
    "PySDPA",
    "PySDPAHinted",
]
