"""`habana_dataloader.habana_dataset` (emulated)."""

import os
from typing import Any

import torch

from hpusim.hpex import unavailable, unavailable_function

MEDIA_WHY = "the media pipe and aeon loaders decode on the Gaudi's media engines"
ImageFolderWithManifest = unavailable(
    "habana_dataloader.habana_dataset.ImageFolderWithManifest", MEDIA_WHY
)
fetch_habana_unet_loader = unavailable_function(
    "habana_dataloader.fetch_habana_unet_loader", MEDIA_WHY
)


def _is_image_folder(dataset: Any) -> bool:
    return any(c.__name__ in ("ImageFolder", "DatasetFolder") for c in type(dataset).__mro__)


class HabanaDataLoader:
    """`HabanaDataLoader(*args, **kwargs)` with torch DataLoader's arguments.

    ImageFolder / COCO datasets would use the media pipe (Gaudi2) or aeon loader; neither exists
    on the emulated card, and other datasets have no Habana loader at all, so it prints the
    bridge's fallback message and iterates a `torch.utils.data.DataLoader(*args, **kwargs)`.
    `DATALOADER_FALLBACK_EN` is read as the bridge reads it (any set value enables it)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        dataset = kwargs.get("dataset", args[0] if args else None)
        if _is_image_folder(dataset):
            error = f"habana_dataloader: {MEDIA_WHY} (not available under the hpusim emulator)"
        else:
            error = "'NoneType' object is not callable"  # what the bridge's loader choice raises
        if not os.getenv("DATALOADER_FALLBACK_EN", True):
            print(f"Habana dataloader configuration failed: {error}")
            raise RuntimeError(error)
        print(
            f"Failed to initialize Habana Dataloader, error: {error}\nRunning with PyTorch Dataloader"
        )
        self.dataloader = torch.utils.data.DataLoader(*args, **kwargs)
        self.fallback_activated = True

    def __getattr__(self, name: str) -> Any:
        if name == "dataloader":
            raise AttributeError(name)
        return getattr(self.dataloader, name)

    def __iter__(self) -> "HabanaDataLoader":
        self.iter = iter(self.dataloader)
        return self

    def __next__(self) -> Any:
        return next(self.iter)

    def __len__(self) -> int:
        return len(self.dataloader)
