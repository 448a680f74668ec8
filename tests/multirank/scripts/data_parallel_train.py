"""Data-parallel training on emulated Gaudi cards, one process per card, as a Gaudi script
writes it. `--mode` chooses how the gradients meet:

- `allreduce` (default): one `dist.all_reduce` of the gradients' flattened concatenation per
  step (one bucket), after the backward;
- `per-gradient`: one `dist.all_reduce` per gradient, each divided by the world size before the
  next all-reduce, no mark_step between them (the next all-reduce's flush launches each
  division, which reads what the previous all-reduce reduced);
- `ddp`: DistributedDataParallel; `--bucket-cap-mb` small against the layers' gradients (each
  `--width` x `--width` float32) gives one bucket per layer or so, all-reduced during the
  backward as each bucket becomes ready;
- `fsdp`: FSDP2 (`fully_shard`) on each hidden layer and on the model: parameters all-gathered
  for the forward and backward, gradients reduce-scattered.

`--layers 0` (default) is the small model of two Linear layers; `--layers L` stacks L hidden
Linear(width, width) + GELU layers before the output layer.

Run under `hpuprof record --emulate --cards N -- python data_parallel_train.py [--slow-rank R]`:
rank R does extra host work before each step (a planted straggler).
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.distributed as dist


def model_of(layers: int, width: int) -> torch.nn.Module:
    if not layers:
        return torch.nn.Sequential(
            torch.nn.Linear(64, 128), torch.nn.GELU(), torch.nn.Linear(128, 8)
        )
    hidden = [
        torch.nn.Sequential(torch.nn.Linear(64 if i == 0 else width, width), torch.nn.GELU())
        for i in range(layers)
    ]
    return torch.nn.Sequential(*hidden, torch.nn.Linear(width, 8))


def wrapped(model: torch.nn.Module, mode: str, bucket_cap_mb: float) -> torch.nn.Module:
    if mode == "ddp":
        from torch.nn.parallel import DistributedDataParallel

        return DistributedDataParallel(model, bucket_cap_mb=bucket_cap_mb)
    if mode == "fsdp":
        from torch.distributed.fsdp import fully_shard

        for layer in list(model)[:-1]:
            fully_shard(layer)
        fully_shard(model)
    return model


def average_gradients(model: torch.nn.Module, world: int) -> None:
    """One all-reduce of all the gradients, flattened (one bucket), averaged."""
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    flat = torch.cat([g.reshape(-1) for g in grads])
    dist.all_reduce(flat)
    flat /= world
    offset = 0
    for g in grads:
        g.copy_(flat[offset : offset + g.numel()].view_as(g))
        offset += g.numel()


def main() -> None:
    import habana_frameworks.torch.core as htcore
    import habana_frameworks.torch.distributed.hccl  # noqa: F401  (registers the backend)

    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--mode", choices=("allreduce", "per-gradient", "ddp", "fsdp"), default="allreduce"
    )
    parser.add_argument("--layers", type=int, default=0)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--bucket-cap-mb", type=float, default=25.0)  # DDP's default
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--slow-rank", type=int, default=-1)
    parser.add_argument("--slow-s", type=float, default=0.05)
    args = parser.parse_args()
    dist.init_process_group(backend="hccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("hpu")
    torch.manual_seed(0)
    model = wrapped(model_of(args.layers, args.width).to(device), args.mode, args.bucket_cap_mb)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    gen = torch.Generator().manual_seed(100 + rank)
    for step in range(args.steps):
        if rank == args.slow_rank:
            # this card's host is slow (waiting for its data, say): it reaches each
            # collective slow_s late (a sleep is host time on the projected clock too)
            time.sleep(args.slow_s)
        x = torch.randn(args.batch, 64, generator=gen).to(device)
        loss = model(x).pow(2).mean()
        loss.backward()
        if args.mode == "allreduce":
            average_gradients(model, world)
        elif args.mode == "per-gradient":
            for p in model.parameters():
                dist.all_reduce(p.grad)
                p.grad /= world
        htcore.mark_step()
        opt.step()
        opt.zero_grad(set_to_none=True)
        htcore.mark_step()
        print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
