"""`hpex.optimizers.distributed` (emulated): the ZeRO-sharded FusedAdamW is not emulated."""

from hpusim.hpex import unavailable

FusedAdamW = unavailable(
    "habana_frameworks.torch.hpex.optimizers.distributed.FusedAdamW",
    "the sharded optimizer relies on HCCL reduce-scatter buffers of the real bridge",
)
