"""Stand-in `torchvision` of the hpusim emulator (see runtime/shim-fallback/README.md): its
submodules import, every public name raises NotImplementedError."""

import importlib
from typing import Any

__version__ = "0.0.0+hpusim.standin"
_SUBMODULES = ("datasets", "io", "models", "ops", "transforms", "utils")
WHY = (
    "torchvision is not installed for this CPU torch: under the hpusim emulator only this "
    "stand-in exists (PyPI's torchvision is a CUDA build that does not import beside it)"
)


def missing(qualname: str) -> NotImplementedError:
    return NotImplementedError(f"{qualname}: {WHY}")


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise missing(f"torchvision.{name}")
