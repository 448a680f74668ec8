"""`habana_frameworks.mediapipe.fn` (emulated): every media operator raises when built."""

from typing import Any

from hpusim.hpex import unavailable

from . import WHY


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    return unavailable(f"habana_frameworks.mediapipe.fn.{name}", WHY)
