"""Stand-in `torchvision` of the hpusim emulator (see runtime/shim-fallback/README.md).

Every name resolves (so `from torchvision.models import resnet50` at a library's import time
works) to a placeholder that raises NotImplementedError naming the emulator when it is called,
instantiated or subclassed-and-instantiated."""

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


class Missing:
    """A placeholder for `qualname`: attributes are placeholders too; using it raises."""

    def __init__(self, qualname: str) -> None:
        self._qualname = qualname

    def __getattr__(self, name: str) -> "Missing":
        if name.startswith("__"):
            raise AttributeError(name)
        return Missing(f"{self._qualname}.{name}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise missing(self._qualname)

    def __mro_entries__(self, bases: tuple[Any, ...]) -> tuple[type, ...]:
        qualname = self._qualname

        class Base:
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                raise missing(qualname)

        Base.__name__ = qualname.rsplit(".", 1)[-1]
        return (Base,)

    def __repr__(self) -> str:
        return f"<{self._qualname} (hpusim stand-in: not available)>"


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    return Missing(f"torchvision.{name}")
