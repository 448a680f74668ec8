# ruff: noqa: I001  (lightning_habana is imported before lightning, as its docs require)
"""DeepSpeed through Lightning on emulated Gaudi cards in the style of lightning-habana's
DeepSpeed docs: `Trainer(accelerator=HPUAccelerator(), devices=N,
strategy=HPUDeepSpeedStrategy(stage=S), plugins=[HPUDeepSpeedPrecisionPlugin("bf16-mixed")])`,
with the model of `lightning_stages.py` (SGD, a client optimizer: `zero_allow_untested_optimizer`
is the strategy's default). lightning-habana accepts only Habana's DeepSpeed fork; PyPI's runs
here after `hpuprof.integrations.deepspeed.accept_pypi_deepspeed()`. Prints the sum of the whole
weights per rank after training, which ZeRO keeps equal on every card.

Run under `hpuprof record --emulate --cards N -- python lightning_deepspeed.py STAGE`.
"""

import sys

from lightning_habana.pytorch.plugins import HPUDeepSpeedPrecisionPlugin
from lightning_habana.pytorch.strategies import HPUDeepSpeedStrategy

import torch

from hpuprof.integrations.deepspeed import accept_pypi_deepspeed
from lightning_data_parallel import two_card_trainer
from lightning_stages import LitClassifier, loader


def main():
    stage = int(sys.argv[1])
    print("deepspeed", accept_pypi_deepspeed(), flush=True)
    torch.manual_seed(0)
    trainer = two_card_trainer(
        HPUDeepSpeedStrategy(stage=stage), [HPUDeepSpeedPrecisionPlugin(precision="bf16-mixed")]
    )
    model = LitClassifier()
    trainer.fit(model, loader(), loader())
    total = sum(float(p.detach().float().sum()) for p in model.parameters())
    print(f"rank {trainer.global_rank} weights {total:.6f}", flush=True)


if __name__ == "__main__":
    main()
