"""Per-op overhead of the hpusim emulator, against plain CPU measured in the same run.

    python bench/bench_emulator.py [--ops 20000] [--steps 200]

Workloads: a 16-element `a.add(b)` loop, and a small MLP (16->32->16->10, batch 8) AdamW training
step. Each is timed on plain CPU, emulated with recording off, and emulated with recording on
(eager mode, torch threads = 1). Prints per-op times, ratios to CPU, and the recording overhead
(recording on minus recording off) per op against the 8 us target. Medians of several repeats.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable

import torch


def _median_ns(fn: Callable[[], None], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        gc.collect()
        t0 = time.perf_counter_ns()
        fn()
        times.append(time.perf_counter_ns() - t0)
    return statistics.median(times)


def add_loop(device: str, n: int) -> Callable[[], None]:
    a = torch.randn(16, device=device)
    b = torch.randn(16, device=device)

    def run() -> None:
        for _ in range(n):
            a.add(b)

    return run


def mlp_steps(device: str, steps: int) -> tuple[Callable[[], None], int]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(16, 32),
        torch.nn.ReLU(),
        torch.nn.Linear(32, 16),
        torch.nn.ReLU(),
        torch.nn.Linear(16, 10),
    ).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(8, 16).to(device)
    y = torch.randint(0, 10, (8,)).to(device)

    def step() -> None:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    for _ in range(3):
        step()

    def run() -> None:
        for _ in range(steps):
            step()

    return run, steps


def count_ops_per_step() -> int:
    """Device ops of one MLP step, counted from the emulator's own events."""
    from hpusim.sink import KIND_OP, get_sink

    run, _ = mlp_steps("hpu", 1)
    sink = get_sink()
    sink.drain()
    run()
    batch = sink.drain()
    return sum(1 for k in batch.kind if k == KIND_OP)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ops", type=int, default=20000)
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--repeats", type=int, default=5)
    a = p.parse_args()
    torch.set_num_threads(1)
    import hpusim
    from hpusim.sink import get_sink

    cpu_add = _median_ns(add_loop("cpu", a.ops), a.repeats) / a.ops
    run_cpu, steps = mlp_steps("cpu", a.steps)
    cpu_mlp = _median_ns(run_cpu, a.repeats) / steps

    hpusim.enable(mode="eager")
    sink = get_sink()
    results: dict[str, tuple[float, float]] = {}
    for recording in (False, True):
        sink.recording = recording
        sink.drain()
        add = _median_ns(add_loop("hpu", a.ops), a.repeats) / a.ops
        sink.drain()
        run_h, _ = mlp_steps("hpu", a.steps)
        mlp = _median_ns(run_h, a.repeats) / steps
        sink.drain()
        results["on" if recording else "off"] = (add, mlp)
    sink.recording = True
    ops = count_ops_per_step()
    hpusim.disable()

    off_add, off_mlp = results["off"]
    on_add, on_mlp = results["on"]
    us = 1e-3
    print(f"16-element add loop ({a.ops} ops), per op:")
    print(f"  plain CPU (baseline)     {cpu_add * us:8.2f} us")
    print(f"  emulated, recording off  {off_add * us:8.2f} us  (x{off_add / cpu_add:.1f} vs CPU)")
    print(f"  emulated, recording on   {on_add * us:8.2f} us  (x{on_add / cpu_add:.1f} vs CPU)")
    print(f"  recording overhead       {(on_add - off_add) * us:8.2f} us/op (target <= 8 us)")
    print(f"MLP 16->32->16->10 batch 8 AdamW step ({ops} device ops/step), per step:")
    print(f"  plain CPU (baseline)     {cpu_mlp * us:8.1f} us")
    print(f"  emulated, recording off  {off_mlp * us:8.1f} us  (x{off_mlp / cpu_mlp:.1f} vs CPU)")
    print(f"  emulated, recording on   {on_mlp * us:8.1f} us  (x{on_mlp / cpu_mlp:.1f} vs CPU)")
    print(f"  recording overhead       {(on_mlp - off_mlp) / ops * us:8.2f} us/op (target <= 8 us)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
