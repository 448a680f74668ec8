"""DistributedDataParallel, FSDP2 (`fully_shard`) and FSDP1 on emulated Gaudi cards, as Gaudi scripts use
them: each variant trains a model for a few steps and is compared with the same model trained
with explicit gradient all-reduces (the reference). Prints `rank R VARIANT max_abs_diff D` per
variant, and for FSDP2 and FSDP1 `rank R VARIANT freed_after_forward F unsharded U`: the device
memory a separately wrapped layer frees as its forward ends (its unsharded parameters, freed by
resizing their storage to 0), against the bytes of that layer's parameters.

Run under `hpuprof record --emulate --cards N -- python ddp_variants.py`.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel

VARIANTS = (
    "plain",
    "gradient_as_bucket_view",
    "find_unused_parameters",
    "static_graph",
    "allreduce_hook",
    "fp16_compress_hook",
    "no_sync",
    "fully_shard",
    "FullyShardedDataParallel",
)
STEPS = 3


class Net(torch.nn.Module):
    def __init__(self, unused: bool) -> None:
        super().__init__()
        self.a = torch.nn.Linear(8, 32)
        self.b = torch.nn.Linear(32, 4)
        self.unused = torch.nn.Linear(4, 4) if unused else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.nn.functional.gelu(self.a(x)))


def batches(rank: int, n: int) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(1000 + rank)
    return [torch.randn(6, 8, generator=gen) for _ in range(n)]


def reference(variant: str, rank: int, world: int) -> list[torch.Tensor]:
    """The variant's training with one explicit all-reduce per gradient (grads averaged)."""
    torch.manual_seed(0)
    model = Net(variant == "find_unused_parameters").to("hpu")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = batches(rank, 2 * STEPS)
    for step in range(STEPS):
        if variant == "no_sync":  # a local backward first: its gradients accumulate
            model(data[2 * step + 1].to("hpu")).sum().backward()
        model(data[2 * step].to("hpu")).pow(2).mean().backward()
        for p in model.parameters():
            if p.grad is not None:
                dist.all_reduce(p.grad)
                p.grad /= world
        opt.step()
        opt.zero_grad()
    return [p.detach().cpu() for p in model.parameters()]


def train(wrapped: torch.nn.Module, rank: int, no_sync: bool = False) -> None:
    """STEPS steps on this card's data, as a lazy-mode Gaudi script writes them."""
    import habana_frameworks.torch.core as htcore

    opt = torch.optim.SGD(wrapped.parameters(), lr=0.1)
    data = batches(rank, 2 * STEPS)
    for step in range(STEPS):
        if no_sync:  # DDP: a local backward first, its gradients accumulate
            with wrapped.no_sync():  # type: ignore[operator]
                wrapped(data[2 * step + 1].to("hpu")).sum().backward()
        wrapped(data[2 * step].to("hpu")).pow(2).mean().backward()
        htcore.mark_step()
        opt.step()
        opt.zero_grad()
        htcore.mark_step()


def with_ddp(variant: str, rank: int) -> list[torch.Tensor]:
    torch.manual_seed(0)
    model = Net(variant == "find_unused_parameters").to("hpu")
    options = {v: True for v in VARIANTS[1:4] if v == variant}
    ddp = DistributedDataParallel(model, **options)
    if variant == "allreduce_hook":
        ddp.register_comm_hook(None, default_hooks.allreduce_hook)
    if variant == "fp16_compress_hook":
        ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
    train(ddp, rank, no_sync=variant == "no_sync")
    return [p.detach().cpu() for p in model.parameters()]


def with_fully_shard(rank: int) -> list[torch.Tensor]:
    """FSDP2: parameters sharded over the cards, all-gathered for compute, gradients
    reduce-scattered; compared in full (`full_tensor()`)."""
    from torch.distributed.fsdp import fully_shard

    torch.manual_seed(0)
    model = Net(False).to("hpu")
    fully_shard(model)
    train(model, rank)
    return [p.full_tensor().detach().cpu() for p in model.parameters()]  # type: ignore[operator]


def with_fsdp1(rank: int) -> list[torch.Tensor]:
    """FSDP1: one flat parameter per wrapped module, sharded over the cards; compared in full
    (`summon_full_params`)."""
    from torch.distributed.fsdp import FullyShardedDataParallel

    torch.manual_seed(0)
    model = Net(False).to("hpu")
    fsdp = FullyShardedDataParallel(model)
    train(fsdp, rank)
    with FullyShardedDataParallel.summon_full_params(fsdp):
        return [p.detach().cpu() for p in model.parameters()]


TRAIN = {"fully_shard": with_fully_shard, "FullyShardedDataParallel": with_fsdp1}


def freed_after_forward(variant: str, rank: int) -> int:
    """Device bytes layer `a`, wrapped apart, frees as its forward ends (FSDP's post-forward
    reshard: FSDP2 `reshard_after_forward=True`, FSDP1 FULL_SHARD on a non-root unit), read by
    a forward hook before FSDP's and one after it."""
    from torch.distributed.fsdp import FullyShardedDataParallel, ShardingStrategy, fully_shard

    torch.manual_seed(0)
    model = Net(False).to("hpu")
    seen: dict[str, int] = {}

    def reads(key: str) -> Callable[..., None]:
        return lambda *_: seen.__setitem__(key, torch.hpu.memory_allocated())

    model.a.register_forward_hook(reads("before"))
    if variant == "fully_shard":
        for layer in (model.a, model.b):
            fully_shard(layer, reshard_after_forward=True)
        model.a.register_forward_hook(reads("after"))
        fully_shard(model, reshard_after_forward=True)
    else:  # the root holds `b`: without parameters of its own, FSDP1 would ask
        # torch.device(current_device()), which the emulator cannot give (no C++ accelerator)
        full = ShardingStrategy.FULL_SHARD
        model.a = FullyShardedDataParallel(model.a, sharding_strategy=full)
        model.a.register_forward_hook(reads("after"))
        model = FullyShardedDataParallel(model, sharding_strategy=full)
    model(batches(rank, 1)[0].to("hpu"))
    return seen["before"] - seen["after"]


def main() -> None:
    import habana_frameworks.torch.distributed.hccl  # noqa: F401  (registers the backend)

    dist.init_process_group(backend="hccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    for variant in VARIANTS:
        want = reference(variant, rank, world)
        got = TRAIN[variant](rank) if variant in TRAIN else with_ddp(variant, rank)
        diff = max(float((g - w).abs().max()) for g, w in zip(got, want, strict=True))
        print(f"rank {rank} {variant} max_abs_diff {diff:.3g}", flush=True)
    unsharded = sum(p.numel() * p.element_size() for p in Net(False).a.parameters())
    for variant in TRAIN:
        freed = freed_after_forward(variant, rank)
        print(f"rank {rank} {variant} freed_after_forward {freed} unsharded {unsharded}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
