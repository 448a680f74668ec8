"""Per-op overhead of the hpusim emulator, against plain CPU measured in the same run.

    python bench/bench_emulator.py [--ops 1000] [--steps 3] [--repeats 61] [--clock cpu|wall]

Workloads: a 16-element `a.add(b)` loop, and a small MLP (16->32->16->10, batch 8) AdamW training
step. Each is timed on plain CPU, emulated with recording off, and emulated with recording on
(eager mode, torch threads = 1), in the same process, on the thread's CPU clock by default
(`--clock wall` for perf_counter). Prints per-op times, ratios to CPU, and the
recording overhead (recording on minus recording off) per op against the 3 us target.

Measurement: the variants run round-robin (`--repeats` rounds; recording off and on swap order
every round so a drift hits both alike) and each per-op figure is the MEDIAN over rounds. The
recording overhead is measured apart, finely interleaved: each round alternates chunks of 50
adds (or one MLP step) with recording off and on, so both sample the same moments of a shared
machine; the figure is the median over rounds of (on - off) per op, with its interquartile
range so a noisy run shows as one. The sink is drained between rounds, as a
profiler does; the drain's own cost (mapping events onto the projected clock, building columns)
is timed apart and printed per op.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import time
from collections.abc import Callable

import torch

_CLOCK = [time.thread_time_ns]


def _time_ns(fn: Callable[[], None]) -> int:
    gc.collect()
    now = _CLOCK[0]
    t0 = now()
    fn()
    return now() - t0


def _interleaved(
    fns: dict[str, Callable[[], None]], repeats: int, before: Callable[[str], None]
) -> dict[str, list[int]]:
    """Each variant's time per round, run round-robin so machine noise hits all of them alike;
    "off" and "on" swap order every round."""
    times: dict[str, list[int]] = {k: [] for k in fns}
    names = list(fns)
    for r in range(repeats):
        order = (
            names if r % 2 == 0 else [n for n in names if n not in ("off", "on")] + ["on", "off"]
        )
        for name in order:
            before(name)
            times[name].append(_time_ns(fns[name]))
    return times


def _overhead_rounds(
    chunk: Callable[[], None], chunks: int, repeats: int, before: Callable[[str], None]
) -> list[int]:
    """Recording on minus off, per round: each round alternates small chunks (50 adds, or one
    MLP step) with recording off and on, so both sample the same moments of a noisy machine."""
    from hpusim.sink import get_sink

    sink = get_sink()
    now = _CLOCK[0]
    rounds: list[int] = []
    for _ in range(repeats):
        before("")
        gc.collect()
        acc = [0, 0]
        for i in range(chunks):
            for rec in (i % 2, 1 - i % 2):
                sink.recording = bool(rec)
                t0 = now()
                chunk()
                acc[rec] += now() - t0
        rounds.append(acc[1] - acc[0])
    before("")
    return rounds


def _quartiles(xs: list[float]) -> tuple[float, float, float]:
    q = statistics.quantiles(xs, n=4, method="inclusive")
    return q[0], q[1], q[2]


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


def record_path_ns(n: int) -> float:
    """The recording work of one eager op alone (attribution + the recorder's one sink write of
    the host op and its device op), timed directly: a noise-robust cross-check of the
    differenced figure."""
    from types import SimpleNamespace

    from hpusim import state
    from hpusim.attribution import module_and_phase
    from hpusim.sink import get_sink

    sink, rt = get_sink(), state.RT
    assert rt is not None
    sink.recording = True
    sink.drain()
    tmpl = sink.template(
        1, 2, 2, 3, 1 << 20, dev_name=4, engine=2, dev_dur=900, flops=16, nbytes=192
    )
    cost = SimpleNamespace(record=tmpl)  # the op's cached template, as dispatch's OpCost
    where, eager_op = rt.attribution, rt.events.eager_op
    now = _CLOCK[0]
    c0 = now()
    t0 = time.perf_counter_ns()
    for i in range(n):
        module, phase = module_and_phase(where)
        eager_op(1, 2, cost, t0 + i, t0 + i + 900, module, phase, i, t0 + i)
    dt = now() - c0
    sink.drain()
    return dt / n


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
    p.add_argument("--ops", type=int, default=1000)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--repeats", type=int, default=61)
    p.add_argument(
        "--clock",
        choices=("cpu", "wall"),
        default="cpu",
        help="cpu: the thread's CPU time (the default: a shared machine's waits are not the "
        "emulator's cost); wall: perf_counter",
    )
    a = p.parse_args()
    if a.clock == "wall":
        _CLOCK[0] = time.perf_counter_ns
    torch.set_num_threads(1)
    import hpusim
    from hpusim.sink import get_sink

    hpusim.enable(mode="eager")
    sink = get_sink()
    drains: list[tuple[int, int]] = []  # (ns, rows) of each drain after a recording round

    def before(name: str) -> None:
        now = _CLOCK[0]
        t0 = now()
        n = len(sink)
        sink.drain()  # a profiler drains the sink as it goes
        if n:
            drains.append((now() - t0, n))
        sink.recording = name == "on"

    add = _interleaved(
        {
            "cpu": add_loop("cpu", a.ops),
            "off": add_loop("hpu", a.ops),
            "on": add_loop("hpu", a.ops),
        },
        a.repeats,
        before,
    )
    before("")
    add_drain = statistics.median(ns / n for ns, n in drains)  # one row per eager op
    drains.clear()
    mlp = _interleaved(
        {
            "cpu": mlp_steps("cpu", a.steps)[0],
            "off": mlp_steps("hpu", a.steps)[0],
            "on": mlp_steps("hpu", a.steps)[0],
        },
        a.repeats,
        before,
    )
    before("")
    chunk = 50
    add_rec = _overhead_rounds(add_loop("hpu", chunk), max(a.ops // chunk, 1), a.repeats, before)
    n_add_rec = max(a.ops // chunk, 1) * chunk
    mlp_rec = _overhead_rounds(mlp_steps("hpu", 1)[0], a.steps, a.repeats, before)
    sink.recording = True
    ops = count_ops_per_step()
    direct = statistics.median(record_path_ns(a.ops) for _ in range(5))
    hpusim.disable()

    us = 1e-3
    n_add, n_mlp = a.ops, a.steps * ops
    print(f"clock: {a.clock} time; load average {os.getloadavg()[0]:.2f} at the end")
    print(f"16-element add loop ({a.ops} ops), per op, median of {a.repeats} rounds:")
    _report(add, n_add, us, "us", add_rec, n_add_rec)
    print(f"  recording path alone     {direct * us:8.2f} us/op (timed directly, same run)")
    print(f"  sink drain (profiler)    {add_drain * us:8.2f} us/op (projection + columns, apart)")
    print(
        f"MLP 16->32->16->10 batch 8 AdamW step ({ops} device ops/step), per device op, "
        f"median of {a.repeats} rounds:"
    )
    _report(mlp, n_mlp, us, "us", mlp_rec, n_mlp)
    cpu_step = statistics.median(mlp["cpu"]) / a.steps
    off_step = statistics.median(mlp["off"]) / a.steps
    print(
        f"  per step: plain CPU {cpu_step * us:.1f} us, emulated (recording off) "
        f"{off_step * us:.1f} us (x{off_step / cpu_step:.1f})"
    )
    return 0


def _report(
    times: dict[str, list[int]], n: int, scale: float, unit: str, rec: list[int], n_rec: int
) -> None:
    cpu = statistics.median(times["cpu"]) / n
    off = statistics.median(times["off"]) / n
    on = statistics.median(times["on"]) / n
    q1, med, q3 = _quartiles([r / n_rec for r in rec])
    print(f"  plain CPU (baseline)     {cpu * scale:8.2f} {unit}")
    print(f"  emulated, recording off  {off * scale:8.2f} {unit}  (x{off / cpu:.1f} vs CPU)")
    print(f"  emulated, recording on   {on * scale:8.2f} {unit}  (x{on / cpu:.1f} vs CPU)")
    print(
        f"  recording overhead       {med * scale:8.2f} {unit}/op (target <= 3 us; median of "
        f"interleaved on/off rounds, IQR {q1 * scale:.2f}..{q3 * scale:.2f})"
    )


if __name__ == "__main__":
    raise SystemExit(main())
