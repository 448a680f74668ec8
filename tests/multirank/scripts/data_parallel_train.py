"""Data-parallel training on emulated Gaudi cards, one process per card, as a Gaudi script
writes it: `--ddp` wraps the model in DistributedDataParallel, else the gradients are averaged
with one `dist.all_reduce` of their flattened concatenation per step (one bucket).

Run under `hpuprof record --emulate --cards N -- python data_parallel_train.py [--slow-rank R]`:
rank R does extra host work before each step (a planted straggler).
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.distributed as dist


def main() -> None:
    import habana_frameworks.torch.core as htcore
    import habana_frameworks.torch.distributed.hccl  # noqa: F401  (registers the backend)

    parser = argparse.ArgumentParser()
    parser.add_argument("--ddp", action="store_true")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--slow-rank", type=int, default=-1)
    parser.add_argument("--slow-s", type=float, default=0.05)
    args = parser.parse_args()
    dist.init_process_group(backend="hccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("hpu")
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(64, 128), torch.nn.GELU(), torch.nn.Linear(128, 8)
    ).to(device)
    if args.ddp:
        from torch.nn.parallel import DistributedDataParallel

        model = DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    gen = torch.Generator().manual_seed(100 + rank)
    for step in range(args.steps):
        if rank == args.slow_rank:
            # this card's host is slow (waiting for its data, say): it reaches each
            # collective slow_s late (a sleep is host time on the projected clock too)
            time.sleep(args.slow_s)
        x = torch.randn(16, 64, generator=gen).to(device)
        loss = model(x).pow(2).mean()
        loss.backward()
        if not args.ddp:
            grads = [p.grad for p in model.parameters()]
            flat = torch.cat([g.reshape(-1) for g in grads])
            dist.all_reduce(flat)
            flat /= world
            offset = 0
            for g in grads:
                g.copy_(flat[offset : offset + g.numel()].view_as(g))
                offset += g.numel()
        htcore.mark_step()
        opt.step()
        opt.zero_grad(set_to_none=True)
        htcore.mark_step()
        print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
