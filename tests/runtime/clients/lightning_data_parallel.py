# ruff: noqa: I001  (lightning_habana is imported before lightning, as its docs require)
"""Lightning's data parallel training on emulated Gaudi cards in the style of lightning-habana's
docs: `Trainer(accelerator=HPUAccelerator(), devices=N, strategy=HPUDDPStrategy())` (argument
`ddp`) or `HPUFSDPStrategy()` (argument `fsdp`: FSDP1 with its default bf16-mixed precision),
with the model of `lightning_stages.py`. Each card trains on its own shard of the data
(Lightning's DistributedSampler); prints the sum of the whole first weight per rank, which data
parallel training keeps equal on every card.

Run under `hpuprof record --emulate --cards N -- python lightning_data_parallel.py ddp|fsdp`.
"""

import contextlib
import sys

from lightning_habana.pytorch.accelerator import HPUAccelerator  # before lightning (its docs)
from lightning_habana.pytorch.strategies import HPUDDPStrategy, HPUFSDPStrategy

import torch
from lightning.pytorch import Trainer
from torch.distributed.fsdp import FullyShardedDataParallel

from lightning_stages import LitClassifier, loader


def two_card_trainer(strategy, plugins=()):
    """One epoch on 2 cards with `strategy` (and precision `plugins`), nothing logged or saved."""
    return Trainer(
        accelerator=HPUAccelerator(),
        devices=2,
        strategy=strategy,
        plugins=list(plugins),
        max_epochs=1,
        limit_val_batches=2,
        enable_progress_bar=False,
        enable_checkpointing=False,
        logger=False,
    )


def main():
    fsdp = sys.argv[1] == "fsdp"
    torch.manual_seed(0)
    trainer = two_card_trainer(HPUFSDPStrategy() if fsdp else HPUDDPStrategy())
    model = LitClassifier()
    trainer.fit(model, loader(), loader())
    whole = (
        FullyShardedDataParallel.summon_full_params(trainer.strategy.model)
        if fsdp
        else contextlib.nullcontext()
    )
    with whole:
        first = next(model.parameters()).detach().cpu()
    print(f"rank {trainer.global_rank} weight_sum {float(first.float().sum())!r}", flush=True)


if __name__ == "__main__":
    main()
