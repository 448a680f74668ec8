# ruff: noqa: I001  (lightning_habana is imported before lightning, as its docs require)
"""Lightning on HPU in the style of lightning-habana's docs: fit/validate/test/predict with
HPUAccelerator + SingleHPUStrategy and lightning-habana's HPUProfiler, and a custom profiled
action (`self.trainer.profiler.profile(...)`) inside the training step."""

import os
import sys

from lightning_habana.pytorch.accelerator import HPUAccelerator  # before lightning (its docs)
from lightning_habana.pytorch.profiler import HPUProfiler
from lightning_habana.pytorch.strategies import SingleHPUStrategy

import torch
from lightning.pytorch import LightningModule, Trainer
from torch.utils.data import DataLoader, TensorDataset


class LitClassifier(LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4)
        )

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        with self.trainer.profiler.profile("my_loss_action"):
            loss = torch.nn.functional.cross_entropy(self(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", torch.nn.functional.cross_entropy(self(x), y))

    def test_step(self, batch, batch_idx):
        x, y = batch
        acc = (self(x).argmax(-1) == y).float().mean()
        self.log("test_acc", acc)

    def predict_step(self, batch, batch_idx):
        return self(batch[0]).argmax(-1)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def loader(n=64):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 32, generator=g)
    y = x[:, :4].argmax(-1)
    return DataLoader(TensorDataset(x, y), batch_size=16)


def trainer(out, stage):
    """One Trainer per stage, each with its own HPUProfiler (lightning 2.4's profiler cannot be
    torn down twice in one Trainer under torch 2.13, on any accelerator)."""
    return Trainer(
        accelerator=HPUAccelerator(),
        devices=1,
        strategy=SingleHPUStrategy(),
        max_epochs=2,
        profiler=HPUProfiler(dirpath=out, filename=stage),
        default_root_dir=out,
        enable_progress_bar=False,
        logger=False,
        enable_checkpointing=False,
    )


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "lightning_logs"
    model = LitClassifier()
    trainer(out, "fit").fit(model, loader(), loader())
    print("validate", trainer(out, "validate").validate(model, loader()))
    print("test", trainer(out, "test").test(model, loader()))
    preds = trainer(out, "predict").predict(model, loader())
    print("predict", torch.cat([p.cpu() for p in preds]).shape)
    print("files", sorted(os.listdir(out)))
