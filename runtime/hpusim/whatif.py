"""What if: one fake run of a script projected onto several device profiles and card counts,
without running the script again (all MODELED).

While the script runs once (on the first device, at the largest card count asked for, so DDP's
gradient all-reduce is there to scale), `WorkLog` records what the device was asked to do, in
terms no device decides:

- each launched graph: its ops (the `OpCost`s, which keep what the device model priced them
  from), their dataflow, and which of their outputs were still referenced;
- each op or copy put on the stream (eager ops, transfers, collectives), and what priced it;
- when each launch or wait happened on the host clock **less the host's waits for the device
  so far**: the script's own Python, the bridge's modeled host costs and the compiles (all the
  same on every device the profiles describe), without what the run's device decided;
- the host's waits for the device (syncs, reads), DDP's gradients and bucket all-reduces, step
  boundaries and the end of the run.

`replay` prices the ops again on another profile (`DeviceTimeline.model_op`), schedules the
graphs with the same scheduler the live run used (`DeviceTimeline.run_graph`), lets the host
wait as long as *that* device makes it, and cuts the steps as the live ledger does
(`predict.StepBook`, `predict.project`): on the run's own device and card count it gives the live
prediction's figures exactly (tests/predict/test_whatif.py). Per card count, DDP's all-reduce
is priced for that many cards, and left out on one card.

`CapacityWatch` notes, for each device's usable HBM, the first allocation that would not have
fitted (the memory per card is the run's: data parallelism does not shard it).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final

from hpusim.allocator import OomPoint
from hpusim.device_model import (
    ENGINE_DMA,
    ENGINE_NIC,
    DeviceProfile,
    DeviceTimeline,
    load_profile,
)
from hpusim.prediction import MemoryFacts, Prediction, RunFacts, StepBook, project
from hpusim.projection import MeasuredClock

GRAPH, SCHEDULE, WAIT_COLLECTIVES, HOST_WAIT, BOUNDARY, GRAD, DDP, END = range(8)
COLLECTIVE_STORAGES, WAIT_COLLECTIVES_ON = range(8, 10)
"""Kinds of `WorkLog` events (the first item of each)."""
LAUNCH, HOST, STREAM = range(3)
"""When an op was ready: a launch (host time + the device's launch latency), a host time, or
when the compute stream was free."""
UNTIL_IDLE, UNTIL_STREAM, UNTIL_FIXED = range(3)
"""What a host wait waited for: the device idle, the stream's last op, a fixed time."""
HOST_SIDE_FIELDS: Final = (
    "launch_latency_ns",
    "compile_base_ns",
    "compile_per_op_ns",
    "eager_compile_per_op_ns",
    "host_lazy_op_ns",
    "host_eager_op_ns",
    "host_view_op_ns",
    "host_flush_base_ns",
    "host_flush_per_op_ns",
    "host_launch_ns",
    "host_graph_replay_ns",
    "host_d2h_ns",
    "host_cpu_gbytes_per_s",
    "host_glue_max_ns",
)
"""Profile fields the projected host clock adds during the run (besides the launch latency,
which the replay applies per device): a replay keeps the run's host timeline, so they must
agree."""


class WorkLog:
    """The device work of one run, as `DeviceTimeline` and the step ledger report it (module
    doc). `paused` > 0: scheduling that a caller logs in its own terms (DDP's all-reduce)."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []
        self.origin_ns = 0
        self.paused = 0
        self.fixed = 0
        """Ops put on the stream whose pricing is unknown (kept at the run's duration)."""
        self._launch: tuple[int, int] | None = None
        self._priced: tuple[int, tuple[Any, ...]] | None = None

    # --- recording (DeviceTimeline.recorder, StepLedger) -----------------------------------
    def attach(self, tl: DeviceTimeline, origin_ns: int) -> None:
        self.origin_ns = origin_ns - tl.waited_ns
        tl.recorder = self

    def detach(self, tl: DeviceTimeline) -> None:
        if tl.recorder is self:
            tl.recorder = None

    def launch(self, ready: int, host: int) -> None:
        """A launch issued at `host` (wait-free host time) reaches the device at `ready`."""
        self._launch = (ready, host)

    def priced(self, dur: int, source: tuple[Any, ...]) -> None:
        """The device model priced a copy or collective: `source` prices it again."""
        self._priced = (dur, source)

    def _ready(self, tl: DeviceTimeline, ready: int) -> tuple[int, int]:
        launch, self._launch = self._launch, None
        if launch is not None and launch[0] == ready:
            return (LAUNCH, launch[1])
        if ready == tl.stream_free:
            return (STREAM, 0)
        return (HOST, ready - tl.waited_ns)

    def schedule(
        self, tl: DeviceTimeline, engine: int, ready: int, dur: int, flops: int, cost: Any
    ) -> None:
        if self.paused:
            return
        priced, self._priced = self._priced, None
        source: Any
        if cost is not None and getattr(cost, "model_args", None):
            source = cost
        elif priced is not None and priced[0] == dur:
            source = priced[1]
        else:
            source = ("fixed", engine, dur, flops)
            self.fixed += 1
        self.events.append((SCHEDULE, self._ready(tl, ready), source))

    def graph(self, tl: DeviceTimeline, ops: Any, deps: Any, ready: int, alive: Any) -> Any:
        """A launched graph; returns `alive` (its outputs still referenced are noted now:
        a replay without DDP's ops fuses differently and asks about other outputs)."""
        if self.paused:
            return alive
        kept: frozenset[int] | None = None
        if alive is not None and deps is not None:
            kept = frozenset(g for _, outs in deps for g, _ in outs if alive(g))
        self.events.append((GRAPH, ops, deps, self._ready(tl, ready), kept))
        return alive

    def wait_collectives(self) -> None:
        if not self.paused:
            self.events.append((WAIT_COLLECTIVES,))

    def collective_storages(self, storages: frozenset[int]) -> None:
        if not self.paused:
            self.events.append((COLLECTIVE_STORAGES, storages))

    def wait_collectives_on(self, storages: frozenset[int]) -> None:
        if not self.paused:
            self.events.append((WAIT_COLLECTIVES_ON, storages))

    def host_wait(
        self, tl: DeviceTimeline, measured: int, until: int | None, target: int, wait: int
    ) -> None:
        if self.paused:
            return
        # the host's time when it began to wait (read again, after it, when it did not wait)
        host = target - wait if wait > 0 else tl.at(measured)
        if until is None:
            spec = (UNTIL_IDLE, 0)
        elif until == tl.stream_free:
            spec = (UNTIL_STREAM, 0)
        else:
            spec = (UNTIL_FIXED, until)
        self.events.append((HOST_WAIT, host - tl.waited_ns, spec))

    def boundary(self, kind: str, host: int, counts: tuple[int, int, int, int], mark: bool) -> None:
        self.events.append((BOUNDARY, kind, host, counts, mark))

    def end(self, host: int, counts: tuple[int, int, int, int]) -> None:
        self.events.append((END, host, counts))

    def grad_ready(self, key: int, gid: int) -> None:
        """A gradient DDP reduces was written (its storage id, 0 in eager mode)."""
        self.events.append((GRAD, key, gid))

    def ddp_all_reduce(self, buckets: tuple[tuple[int, tuple[tuple[int, int], ...]], ...],
                       lazy: bool) -> None:  # fmt: skip
        """DDP's launched buckets: (bytes, ((gradient key, storage id), ...)) each."""
        self.events.append((DDP, buckets, lazy))


class CapacityWatch:
    """The first allocation that would not fit in each of several usable HBM sizes (the
    allocator keeps only its own card's): wraps the allocator's charging while installed."""

    def __init__(self, alloc: Any, capacities: list[int]) -> None:
        self.alloc = alloc
        self.pending = sorted(set(capacities))
        self.points: dict[int, OomPoint] = {}

    def install(self) -> None:
        alloc = self.alloc
        charge, note_graph = alloc._charge, alloc.note_graph

        def watched_charge(size: int, op: str) -> None:
            charge(size, op)
            if self.pending and alloc.in_use > self.pending[0]:
                self._ran_out(alloc.in_use, op, size, alloc.in_use - size)

        def watched_note_graph(workspace: int, resident: int, op: str = "recipe launch") -> None:
            note_graph(workspace, resident, op)
            top = alloc.in_use + max(resident, 0)
            if self.pending and top > self.pending[0]:
                self._ran_out(top, op, resident, alloc.in_use)

        alloc._charge = watched_charge
        alloc.note_graph = watched_note_graph

    def uninstall(self) -> None:
        for name in ("_charge", "note_graph"):
            self.alloc.__dict__.pop(name, None)

    def _ran_out(self, used: int, op: str, requested: int, in_use: int) -> None:
        where = self.alloc._where()
        while self.pending and used > self.pending[0]:
            cap = self.pending.pop(0)
            self.points[cap] = OomPoint(op, where, requested, in_use, cap)

    def memory(self, capacity: int) -> MemoryFacts:
        point = self.points.get(capacity)
        return MemoryFacts(self.alloc.peak, point.text() if point is not None else None)


@dataclass(frozen=True)
class Combination:
    """One device profile at one card count."""

    device: str
    cards: int


def check_host_side(run: DeviceProfile, other: DeviceProfile) -> None:
    """Raise ValueError when `other` models the host differently from the run's profile (a
    replay keeps the run's host timeline)."""
    differ = [f for f in HOST_SIDE_FIELDS[1:] if getattr(run, f) != getattr(other, f)]
    if differ:
        raise ValueError(
            f"{run.name} and {other.name} model the host differently ({', '.join(differ)}): "
            "a what-if replay keeps the run's host timeline; predict each device in its own run"
        )


class _Priced:
    """An op's cost on the replayed device (what `DeviceTimeline.run_graph` reads)."""

    __slots__ = ("dev_name", "dur", "engine", "flops", "fusible", "low", "nbytes")

    def __init__(self, m: Any, dev_name: Any, low: bool) -> None:
        self.engine, self.flops, self.nbytes, self.dur, self.fusible = m
        self.dev_name = dev_name
        self.low = low


class _Replay:
    """One replay of a `WorkLog` on one device profile and card count."""

    def __init__(self, log: WorkLog, profile: DeviceProfile, cards: int) -> None:
        self.log = log
        self.tl = DeviceTimeline(profile, MeasuredClock(), cards)
        self.book = StepBook(log.origin_ns)
        self.tl.listener = self.book.on_device
        self.latency = profile.launch_latency_ns
        self.waited = 0
        self.priced: dict[int, Any] = {}
        self.grad_ready: dict[int, int] = {}

    def run(self) -> StepBook:
        tl = self.tl
        for ev in self.log.events:
            kind = ev[0]
            if kind == GRAPH:
                self._graph(ev[1], ev[2], self._ready(ev[3]), ev[4])
            elif kind == SCHEDULE:
                self._schedule(self._ready(ev[1]), ev[2])
            elif kind == WAIT_COLLECTIVES:
                tl.wait_collectives()
            elif kind == COLLECTIVE_STORAGES:
                tl.note_collective_storages(ev[1])
            elif kind == WAIT_COLLECTIVES_ON:
                tl.wait_collectives_on(ev[1])
            elif kind == HOST_WAIT:
                self._host_wait(ev[1], ev[2])
            elif kind == BOUNDARY:
                end = max(ev[2] + self.waited, tl.idle_at())
                self.book.bound(ev[1], end, ev[3], ev[4])
            elif kind == END:
                self.book.finish(max(ev[1] + self.waited, tl.idle_at()), ev[2])
            elif kind == GRAD:
                self.grad_ready[ev[1]] = tl.stream_free
                if ev[2]:
                    tl.watch.setdefault(ev[2], 0)
            elif kind == DDP and tl.cards > 1:
                self._ddp(ev[1], ev[2])
        return self.book

    def _ready(self, spec: tuple[int, int]) -> int:
        how, host = spec
        if how == LAUNCH:
            return host + self.waited + self.latency
        if how == HOST:
            return host + self.waited
        return self.tl.stream_free

    def _price(self, c: Any) -> Any:
        key = id(c)
        got = self.priced.get(key)
        if got is not None:
            return got
        args = getattr(c, "model_args", ())
        tl = self.tl
        if args:
            m = tl.model_fused(*args) if len(args) == 2 else tl.model_op(*args)
            got = _Priced(m, c.dev_name, c.low)
        elif getattr(c, "kind", None) is not None and c.engine == ENGINE_NIC:
            dur = tl.collective_ns(c.kind, c.nbytes, c.group)
            got = _Priced((ENGINE_NIC, 0, c.nbytes, dur, False), c.dev_name, c.low)
        else:
            got = c
        self.priced[key] = got
        return got

    def _graph(self, ops: Any, deps: Any, ready: int, kept: frozenset[int] | None) -> None:
        drop_ddp = self.tl.cards <= 1
        price = self._price
        new_ops: list[tuple[Any, Any]] = []
        new_deps: list[Any] | None = [] if deps is not None else None
        for i, (key, c) in enumerate(ops):
            if drop_ddp and getattr(c, "ddp", False):
                continue
            new_ops.append((key, price(c)))
            if new_deps is not None:
                new_deps.append(deps[i])
        alive = kept.__contains__ if kept is not None else None
        self.tl.run_graph(new_ops, new_deps, ready, alive)

    def _schedule(self, ready: int, source: Any) -> None:
        tl = self.tl
        if isinstance(source, tuple):
            what = source[0]
            if what == "transfer":
                tl.schedule(ENGINE_DMA, ready, tl.transfer(source[1]), 0)
                return
            if what == "collective":
                tl.schedule_collective(ready, tl.collective_ns(*source[1:]))
                return
            _, engine, dur, flops = source
            tl.schedule(engine, ready, dur, flops)
            return
        p = self._price(source)
        tl.schedule(p.engine, ready, p.dur, p.flops)

    def _host_wait(self, host: int, spec: tuple[int, int]) -> None:
        until, value = spec
        tl = self.tl
        if until == UNTIL_IDLE:
            target = tl.idle_at()
        elif until == UNTIL_STREAM:
            target = tl.stream_free
        else:
            target = value
        now = host + self.waited
        if target > now:
            self.waited += target - now

    def _ddp(self, buckets: Any, lazy: bool) -> None:
        tl = self.tl
        for nbytes, grads in buckets:
            ready = max(
                tl.watch.get(gid, 0) if lazy else self.grad_ready.get(key, 0) for key, gid in grads
            )
            tl.schedule_collective(ready, tl.collective_ns("all_reduce", nbytes))
        tl.wait_collectives()


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while a replay runs (restored after): a replay
    makes no cycles, and a full collection would walk the whole log (a 7B run's replay took
    2.7 s instead of 0.8 s once one happened in it)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def replay(
    log: WorkLog,
    facts: RunFacts,
    memory: MemoryFacts,
    run: Combination,
    combo: Combination,
) -> Prediction:
    """The prediction of `combo` from the log of a run on `run` (module doc). Raises
    ValueError when the two profiles model the host differently."""
    profile = load_profile(combo.device)
    check_host_side(load_profile(run.device), profile)
    with _collector_paused():
        book = _Replay(log, profile, combo.cards).run()
    notes = [
        f"what-if: replayed from one run of the script on {run.device} x {run.cards} (its "
        "host timeline kept, less its waits for the device; every op priced again, DDP's "
        "all-reduce for the card count); peak HBM per card is the run's (data parallelism does "
        f"not shard memory), in {run.device}'s block alignment",
    ]
    if log.fixed:
        notes.append(f"{log.fixed} device op(s) of unknown pricing kept at the run's durations")
    if facts.issued and combo.cards != run.cards:
        notes.append(
            f"the collectives the script issued itself (explicit, FSDP's) are the run's: their "
            f"sizes and cards as at {run.cards} cards (a sharded model's shards and memory too); "
            f"predict --cards {combo.cards} alone to model them at {combo.cards}"
        )
    return project(book, facts, profile, combo.cards, memory, tuple(notes))


@dataclass(frozen=True)
class OneRun:
    """One run of a script, to predict any combination from: its live prediction on `run`,
    what no device decides (`facts`), its work log (None: not recorded), the HBM watch, and
    how long it took."""

    live: Prediction
    run: Combination
    facts: RunFacts
    log: WorkLog | None
    watch: CapacityWatch
    seconds: float

    @property
    def peak_bytes(self) -> int:
        """The run's modeled peak HBM per card (every device and card count)."""
        peak: int = self.watch.alloc.peak
        return peak

    def predict(self, combo: Combination, *, replayed: bool = False) -> Prediction:
        """`combo`'s prediction: the live one for the run's own combination (unless
        `replayed`), else a replay of the log."""
        if combo == self.run and not replayed:
            return self.live
        if self.log is None:
            raise ValueError("this run recorded no work log: it predicts only its own device")
        memory = self.watch.memory(load_profile(combo.device).usable_hbm_bytes)
        if combo.device == self.run.device:
            memory = MemoryFacts(memory.peak_bytes, self.live.oom_at)
        return replay(self.log, self.facts, memory, self.run, combo)


__all__ = [
    "CapacityWatch",
    "Combination",
    "OneRun",
    "WorkLog",
    "check_host_side",
    "replay",
]
