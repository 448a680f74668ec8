"""`transformer_engine.recipe` (emulated): fp8 recipe configuration (the objects exist; fp8
execution does not)."""

from dataclasses import dataclass
from enum import Enum
from typing import Any


class Format(Enum):
    """fp8 formats: E4M3 everywhere, E5M2 everywhere, or E4M3 forward / E5M2 backward."""

    E4M3 = "E4M3"
    E5M2 = "E5M2"
    HYBRID = "HYBRID"


@dataclass
class DelayedScaling:
    """The delayed-scaling recipe's settings (as the transformer engine names them)."""

    margin: int = 0
    interval: int = 1
    fp8_format: Format = Format.HYBRID
    amax_history_len: int = 1
    amax_compute_algo: Any = "most_recent"
    reduce_amax: bool = True
