"""What the GPU Migration Toolkit's emulation costs a training step, against the same step
written for the HPU, measured in the same run.

    python bench/bench_gpu_migration.py [--steps 20] [--repeats 31]

Workload: a small MLP (16->32->16->10, batch 8) SGD step whose batch is built on the host and
moved with `.to(device)`, plus a `torch.zeros(..., device=device)` accumulator: the calls the
migration wraps. Variant "hpu": migration off, `device="hpu"`; variant "cuda": migration on
(`hpusim.gpu_migration.install()`, log off as by default), `device="cuda"`. Eager mode,
recording off, torch threads = 1, thread CPU clock. The variants alternate within each round
(order swapped every round); each figure is the median over rounds of the time per step.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

import torch


def _step_fn(device: str) -> Callable[[], None]:
    model = torch.nn.Sequential(
        torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 16), torch.nn.ReLU(),
        torch.nn.Linear(16, 10),
    ).to("hpu")  # fmt: skip
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(8, 16), torch.randint(0, 10, (8,))

    def step() -> None:
        total = torch.zeros(1, device=device)
        loss = torch.nn.functional.cross_entropy(model(x.to(device)), y.to(device))
        loss.backward()
        opt.step()
        opt.zero_grad()
        total += loss.detach()

    return step


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=31)
    args = parser.parse_args()
    os.environ.pop("GPU_MIGRATION_LOG_LEVEL", None)
    torch.set_num_threads(1)
    import hpusim
    import hpusim.gpu_migration as migration

    hpusim.enable(mode="eager")
    steps = {"hpu": _step_fn("hpu"), "cuda": _step_fn("cuda")}
    times: dict[str, list[float]] = {"hpu": [], "cuda": []}
    for r in range(args.repeats):
        for name in ("hpu", "cuda") if r % 2 == 0 else ("cuda", "hpu"):
            if name == "cuda":
                migration.install()
            t0 = time.thread_time_ns()
            for _ in range(args.steps):
                steps[name]()
            times[name].append((time.thread_time_ns() - t0) / args.steps / 1e3)
            migration.uninstall()
    hpusim.disable()
    hpu, cuda = statistics.median(times["hpu"]), statistics.median(times["cuda"])
    print(f"step, device='hpu' (no migration):      {hpu:8.1f} us")
    print(f"step, device='cuda' (migration on):     {cuda:8.1f} us")
    print(f"migration cost: {cuda - hpu:+.1f} us per step, ratio {cuda / hpu:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
