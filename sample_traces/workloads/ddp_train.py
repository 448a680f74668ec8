"""Data-parallel training, one process per (emulated) Gaudi card, as a Gaudi script writes it.

Run once per rank with RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT set (`make_samples.py`
does). Gradients are averaged with `dist.all_reduce` over the `hccl` backend; each rank sees
its own data (seeded by rank), so the all-reduce really changes the gradients.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

STEPS = 4


def main() -> None:
    import habana_frameworks.torch.core as htcore
    import habana_frameworks.torch.distributed.hccl  # noqa: F401  (registers the backend)

    dist.init_process_group(backend="hccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("hpu")
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(256, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 8)
    )
    model = model.to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    gen = torch.Generator().manual_seed(100 + rank)
    for step in range(STEPS):
        x = torch.randn(64, 256, generator=gen).to(device)
        loss = model(x).pow(2).mean()
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= world
        htcore.mark_step()
        opt.step()
        opt.zero_grad(set_to_none=True)
        htcore.mark_step()
        print(f"rank {rank} step {step} loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
