"""`habana_dataloader` (emulated; a Gaudi installation's `habana-torch-dataloader`, present only
while emulating). `HabanaDataLoader` falls back to torch's DataLoader with the bridge's message,
as a Gaudi does when its media pipe / aeon loaders cannot serve the dataset."""

from .habana_dataset import HabanaDataLoader, ImageFolderWithManifest, fetch_habana_unet_loader

__all__ = ["HabanaDataLoader", "ImageFolderWithManifest", "fetch_habana_unet_loader"]
