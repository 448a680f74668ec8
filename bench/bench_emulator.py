"""Per-op overhead of the hpusim emulator, against plain CPU measured in the same run.

    python bench/bench_emulator.py [--ops 1000] [--steps 3] [--repeats 61] [--clock cpu|wall]

Workloads: a 16-element `a.add(b)` loop, and a small MLP (16->32->16->10, batch 8) AdamW training
step. Each is timed on plain CPU, emulated with recording off, and emulated with recording on
(eager mode, torch threads = 1), in the same process, on the thread's CPU clock by default
(`--clock wall` for perf_counter); each also on a bare wrapper subclass that only unwraps,
runs and wraps (the floor any Python `__torch_dispatch__` device pays; the MLP's runs the same
ops as the emulated step, in-place ops returning the caller's wrapper). Prints per-op times,
ratios to CPU, and the recording overhead (recording on minus recording off) per op against the
3 us target.

Measurement: recording off and on run the same work (one workload: the same tensors, the same
model), only `sink.recording` differs. The variants run round-robin (`--repeats` rounds, the
order rotating every round), each timed run after a drain and one untimed unit of its own, and
each per-op figure is the MEDIAN over rounds. The recording overhead is measured apart, finely
interleaved: each round, after a drain, a collection and one untimed chunk, runs groups of four
chunks (50 adds, or one MLP step) with recording off/on/on/off then on/off/off/on, so a drift and
a chunk's place fall on both alike; the figure is the median over rounds of (on - off) per op,
with its interquartile range. Every third round is an A/A control (recording off in both
halves): its median shows the differenced figure's own bias, about 0 when it measures only
recording. The sink is drained between rounds, as a profiler does; the drain's own cost (mapping
events onto the projected clock, building columns) is timed apart and printed per op.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import time
from collections.abc import Callable
from typing import Any, Final

import torch

_CLOCK = [time.thread_time_ns]


def _time_ns(fn: Callable[[], None]) -> int:
    gc.collect()
    now = _CLOCK[0]
    t0 = now()
    fn()
    return now() - t0


def _interleaved(
    fns: dict[str, Callable[[int], None]], n: int, repeats: int, before: Callable[[str], None]
) -> dict[str, list[int]]:
    """Each variant's time for `n` units, per round, run round-robin so machine noise hits all
    of them alike: the order rotates every round (each variant takes each place equally), and
    each timed run follows a drain and one untimed unit of its own, so none is timed just after
    another's drain or on caches another left."""
    times: dict[str, list[int]] = {k: [] for k in fns}
    names = list(fns)
    for r in range(repeats):
        k = r % len(names)
        for name in names[k:] + names[:k]:
            before(name)
            fns[name](1)
            times[name].append(_time_ns(lambda f=fns[name]: f(n)))
    return times


_OFF_ON: Final = ((0, 1, 1, 0), (1, 0, 0, 1))
"""Recording off (0) and on (1) per chunk of a group, ABBA then BAAB: a linear drift within
a group, and a chunk's place in it, fall on both alike."""


def _overhead_rounds(
    chunk: Callable[[], None], groups: int, repeats: int, before: Callable[[str], None]
) -> tuple[list[int], list[int]]:
    """(recording on minus off, recording off minus off) per round, each summed over `groups`
    groups of 4 chunks (50 adds, or one MLP step). Every chunk runs the same work on the same
    tensors; only `sink.recording` differs, in ABBA / BAAB order, after an untimed chunk (a
    drain and a collection start each round; no automatic collection inside one, whose fixed
    schedule would fall on the same chunks every round). Every third round is an A/A control: recording
    stays off in both halves, so the differenced figure's own bias shows (about 0 when the
    measurement measures recording only)."""
    from hpusim.sink import get_sink

    sink = get_sink()
    now = _CLOCK[0]
    rounds: list[int] = []
    control: list[int] = []
    gc.disable()  # a collection every N allocations falls on the same chunks every round
    try:
        for r in range(repeats):
            is_control = r % 3 == 2
            before("")
            gc.collect()
            chunk()  # untimed: the first chunk after a drain and a collection is not the work's
            acc = [0, 0]
            for g in range(groups):
                for half in _OFF_ON[g % 2]:
                    sink.recording = bool(half) and not is_control
                    t0 = now()
                    chunk()
                    acc[half] += now() - t0
            (control if is_control else rounds).append(acc[1] - acc[0])
    finally:
        gc.enable()
    before("")
    return rounds, control


def _quartiles(xs: list[float]) -> tuple[float, float, float]:
    if len(xs) < 2:
        return xs[0], xs[0], xs[0]
    q = statistics.quantiles(xs, n=4, method="inclusive")
    return q[0], q[1], q[2]


class _Bare(torch.Tensor):
    """The least a Python `__torch_dispatch__` device costs: a wrapper subclass whose dispatch
    only unwraps, runs the op on the inner CPU tensors and wraps the result (no emulation)."""

    _elem: torch.Tensor

    @staticmethod
    def __new__(cls, elem: torch.Tensor) -> _Bare:
        r = torch.Tensor._make_wrapper_subclass(
            cls, elem.size(), elem.stride(), elem.storage_offset(), None, elem.dtype,
            elem.layout, elem.device, False, False,
        )  # fmt: skip
        r._elem = elem
        return r

    __torch_function__ = torch._C._disabled_torch_function_impl  # type: ignore[assignment]

    @classmethod
    def __torch_dispatch__(  # type: ignore[override]
        cls, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None
    ) -> Any:
        return _Bare(func._op(*[a._elem if type(a) is _Bare else a for a in args]))


class _BareAny(_Bare):
    """`_Bare` for any op (the MLP step's floor): keyword and list arguments, several or no
    tensor outputs, and an in-place op's `self` returned as the caller's wrapper (as the
    emulator does); still no emulation."""

    @classmethod
    def __torch_dispatch__(  # type: ignore[override]
        cls, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None
    ) -> Any:
        inner = [_inner(a) for a in args]
        out = (
            func._op(*inner, **{k: _inner(v) for k, v in kwargs.items()})
            if kwargs
            else func._op(*inner)
        )
        if type(out) is torch.Tensor:
            if args and out is inner[0]:
                return args[0]  # an in-place op's self
            return _BareAny(out)
        if type(out) in (list, tuple):
            return type(out)(_BareAny(o) if type(o) is torch.Tensor else o for o in out)
        return out


def _inner(x: Any) -> Any:
    """`x`, or a `_BareAny`'s inner tensor (also in a list or tuple)."""
    t = type(x)
    if t is _BareAny:
        return x._elem
    if t is list or t is tuple:
        return t(v._elem if type(v) is _BareAny else v for v in x)
    return x


def add_loop(device: str) -> Callable[[int], None]:
    """`run(n)`: n 16-element adds, on the same two tensors every call ("bare": on `_Bare`
    wrappers of cpu tensors)."""
    a = torch.randn(16, device="cpu" if device == "bare" else device)
    b = torch.randn(16, device="cpu" if device == "bare" else device)
    if device == "bare":
        a, b = _Bare(a), _Bare(b)

    def run(n: int) -> None:
        for _ in range(n):
            a.add(b)

    return run


def mlp_steps(device: str) -> Callable[[int], None]:
    """`run(n)`: n AdamW training steps of one small MLP (the same model every call; "bare":
    its parameters and data `_BareAny` wrappers of cpu tensors)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(16, 32),
        torch.nn.ReLU(),
        torch.nn.Linear(32, 16),
        torch.nn.ReLU(),
        torch.nn.Linear(16, 10),
    )
    x = torch.randn(8, 16)
    y = torch.randint(0, 10, (8,))
    if device == "bare":
        for m in model.modules():
            for k, v in m._parameters.items():
                if v is not None:
                    m._parameters[k] = torch.nn.Parameter(_BareAny(v.detach()))
        x, y = _BareAny(x), _BareAny(y)
    else:
        model, x, y = model.to(device), x.to(device), y.to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def step() -> None:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    for _ in range(3):
        step()

    def run(n: int) -> None:
        for _ in range(n):
            step()

    return run


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

    run = mlp_steps("hpu")
    sink = get_sink()
    sink.drain()
    run(1)
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

    # recording off and on run the same work: one workload, only `sink.recording` differs
    add_hpu, mlp_hpu = add_loop("hpu"), mlp_steps("hpu")
    add = _interleaved(
        {"cpu": add_loop("cpu"), "bare": add_loop("bare"), "off": add_hpu, "on": add_hpu},
        a.ops,
        a.repeats,
        before,
    )
    before("")
    add_drain = statistics.median(ns / n for ns, n in drains)  # one row per eager op
    drains.clear()
    mlp = _interleaved(
        {"cpu": mlp_steps("cpu"), "bare": mlp_steps("bare"), "off": mlp_hpu, "on": mlp_hpu},
        a.steps,
        a.repeats,
        before,
    )
    before("")
    chunk = 50
    groups = max(a.ops // (4 * chunk), 1)
    add_rec = _overhead_rounds(lambda: add_hpu(chunk), groups, a.repeats, before)
    mlp_groups = 2 * max(a.steps, 1)  # one MLP step per chunk: more groups, less noise
    mlp_rec = _overhead_rounds(lambda: mlp_hpu(1), mlp_groups, a.repeats, before)
    sink.recording = True
    ops = count_ops_per_step()
    direct = statistics.median(record_path_ns(a.ops) for _ in range(5))
    hpusim.disable()

    us = 1e-3
    n_add, n_mlp = a.ops, a.steps * ops
    print(f"clock: {a.clock} time; load average {os.getloadavg()[0]:.2f} at the end")
    print(f"16-element add loop ({a.ops} ops), per op, median of {a.repeats} rounds:")
    _report(add, n_add, us, "us", add_rec, 2 * groups * chunk)
    print(f"  recording path alone     {direct * us:8.2f} us/op (timed directly, same run)")
    print(f"  sink drain (profiler)    {add_drain * us:8.2f} us/op (projection + columns, apart)")
    print(
        f"MLP 16->32->16->10 batch 8 AdamW step ({ops} device ops/step), per device op, "
        f"median of {a.repeats} rounds:"
    )
    _report(mlp, n_mlp, us, "us", mlp_rec, 2 * mlp_groups * ops)
    cpu_step = statistics.median(mlp["cpu"]) / a.steps
    off_step = statistics.median(mlp["off"]) / a.steps
    print(
        f"  per step: plain CPU {cpu_step * us:.1f} us, emulated (recording off) "
        f"{off_step * us:.1f} us (x{off_step / cpu_step:.1f})"
    )
    return 0


def _report(
    times: dict[str, list[int]],
    n: int,
    scale: float,
    unit: str,
    rec: tuple[list[int], list[int]],
    n_rec: int,
) -> None:
    cpu = statistics.median(times["cpu"]) / n
    off = statistics.median(times["off"]) / n
    on = statistics.median(times["on"]) / n
    print(f"  plain CPU (baseline)     {cpu * scale:8.2f} {unit}")
    if "bare" in times:
        bare = statistics.median(times["bare"]) / n
        print(
            f"  bare wrapper subclass    {bare * scale:8.2f} {unit}  (x{bare / cpu:.1f} vs CPU: "
            "unwrap, run, wrap; the floor of any Python dispatch)"
        )
    print(f"  emulated, recording off  {off * scale:8.2f} {unit}  (x{off / cpu:.1f} vs CPU)")
    print(f"  emulated, recording on   {on * scale:8.2f} {unit}  (x{on / cpu:.1f} vs CPU)")
    for label, diffs in (("recording overhead", rec[0]), ("A/A control (off-off)", rec[1])):
        if not diffs:
            continue
        q1, med, q3 = _quartiles([d / n_rec for d in diffs])
        print(
            f"  {label:<24} {med * scale:8.2f} {unit}/op (median of {len(diffs)} rounds of "
            f"ABBA chunks, IQR {q1 * scale:.2f}..{q3 * scale:.2f})"
            + ("; target <= 3 us" if diffs is rec[0] else "")
        )


if __name__ == "__main__":
    raise SystemExit(main())
