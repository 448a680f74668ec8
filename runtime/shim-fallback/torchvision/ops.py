"""Stand-in `torchvision.ops` (hpusim): every name is a placeholder that raises when used."""

from typing import Any

from torchvision import Missing


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    return Missing(f"torchvision.ops.{name}")
