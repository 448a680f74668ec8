# ruff: noqa: I001  (lightning_habana is imported before lightning, as its docs require)
"""Lightning's data parallel training on emulated Gaudi cards in the style of lightning-habana's
docs: `Trainer(accelerator=HPUAccelerator(), devices=N, strategy=HPUDDPStrategy())`, with the
model of `lightning_stages.py`. Each card trains on its own shard of the data (Lightning's
DistributedSampler); prints the sum of the first weight per rank, which DDP keeps equal on every
card.

Run under `hpuprof record --emulate --cards N -- python lightning_ddp.py`.
"""

from lightning_habana.pytorch.accelerator import HPUAccelerator  # before lightning (its docs)
from lightning_habana.pytorch.strategies import HPUDDPStrategy

import torch
from lightning.pytorch import Trainer

from lightning_stages import LitClassifier, loader


def main():
    torch.manual_seed(0)
    trainer = Trainer(
        accelerator=HPUAccelerator(),
        devices=2,
        strategy=HPUDDPStrategy(),
        max_epochs=1,
        limit_val_batches=2,
        enable_progress_bar=False,
        enable_checkpointing=False,
        logger=False,
    )
    model = LitClassifier()
    trainer.fit(model, loader(), loader())
    first = next(model.parameters()).detach().cpu()
    print(f"rank {trainer.global_rank} weight_sum {float(first.sum())!r}", flush=True)


if __name__ == "__main__":
    main()
