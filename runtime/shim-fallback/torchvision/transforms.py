"""Stand-in `torchvision.transforms` (hpusim): every public name raises NotImplementedError."""

from typing import Any

from torchvision import missing


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    raise missing(f"torchvision.transforms.{name}")
