"""The projected host clock: what an emulated run's host timeline would be on a Gaudi host.

An emulated host interval is split into what is portable and what is an artefact:

- the user's own Python, data loading and framework code between device ops: **kept**
  (measured);
- the CPU execution of device ops and the emulator's own work (dispatch, recording, the
  profiler's writes): **removed** (`enter` .. `exit` spans, `pause()`);
- the bridge's host-side cost, which the emulator does not pay and a Gaudi host does: **added**
  (modeled: per-op lazy accumulation or eager dispatch, graph hashing and recipe lookup at a
  flush, launches, HPU-graph replays, device-to-host reads);
- waits: a sync makes the host wait for the modeled device (`wait_until`), a compile blocks it
  for its modeled duration (`advance`).

`HostClock` records this as a monotone piecewise-linear map from the measured clock
(`perf_counter_ns`) to the projected one: a list of points `(measured, projected)`, linear in
between (slope 1 for kept time, 0 for removed time, the modeled cost spread over an op's own
interval), with jumps (two points at one measured time) for inserted costs and waits. Events
recorded on the measured clock are mapped when the sink is drained: a start maps before a jump
at its timestamp, an end after it. `MeasuredClock` is the identity (`--timeline measured`).
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from contextlib import contextmanager
from time import perf_counter_ns, thread_time_ns
from typing import Any, ClassVar, Final

from hpusim.run_delay import RunDelay
from hpusim.sink import EV, KIND_DEVICE, KIND_RUNTIME

TIMELINES: Final = ("projected", "measured")
CPU_READ_EVERY_NS: Final = 50_000
"""`HostClock` reads the thread's CPU time when a bracket closes at most this often (the
reading is a system call, several us where syscalls are trapped: more than the rest of the
clock's per-op work): between readings the thread counts as busy, so a kept gap may lose at
most this much of time it was descheduled just before the gap began."""
DELAY_READ_EVERY_NS: Final = 1_000_000
"""`HostClock` reads the thread's run-queue wait (run_delay.py) when a bracket closes at most
this often, so a gap's blocked time is measured from a reading at most this old (plus the
bracket that closed it): a reading costs ~7 us here."""
BLOCKED_MIN_NS: Final = 100_000
"""Blocked time under this in a gap is dropped, and a gap off the CPU for less is not read:
each context switch of a loaded machine leaves a few us of wall time that is neither the
thread's CPU time nor its run-queue wait, which would otherwise add up, and only ever upward
(a gap's blocked time is never negative), over a gap with many preemptions."""


class MeasuredClock:
    """The identity map: host times stay measured and the host never waits for the device."""

    projected: Final = False

    def at(self, t: int) -> int:
        return t

    def pin(self, t: int) -> int:
        return t

    def enter(self, t: int, gap: str = "cpu") -> None:
        return None

    def exit(self, t: int) -> None:
        return None

    def op(self, t1: int, cost_ns: int) -> None:
        return None

    def advance(self, t: int, dur_ns: int) -> None:
        return None

    def wait_until(self, t: int, target_ns: int) -> int:
        return 0

    def map_start(self, t: int) -> int:
        return t

    def map_end(self, t: int) -> int:
        return t

    def forget_before(self, t: int) -> None:
        return None

    @contextmanager
    def pause(self) -> Iterator[None]:
        yield

    @contextmanager
    def mute(self) -> Iterator[None]:
        yield


class HostClock:
    """The measured -> projected host-time map (see the module docstring).

    `enter(t)` / `exit(t)` bracket emulator work whose measured time is removed (they nest);
    inside, `op(t1, cost)` spreads a modeled host cost over the op's own interval up to `t1`,
    `advance(t, d)` inserts a modeled busy time, `wait_until(t, target)` a wait for the device.
    `mute()` also drops the per-op costs of the ops inside (an HPU-graph replay is one modeled
    cost, not its ops').

    A gap between two bracketed spans is the script's own time, counted by `gap` mode: "cpu"
    (the default) counts the thread's CPU time and the time it was blocked (a `time.sleep`,
    waiting for I/O or a queue), not the time it waited for a CPU on a loaded machine (its
    run-queue wait, run_delay.py), so the answer does not depend on this machine's load; a gap
    shorter than `glue_ns` is framework glue between two ops (counted in the modeled per-op
    cost, so dropped); "wall" counts the gap's wall time less the run-queue wait, glue or not
    (a wait on data-loader workers); "drop" counts nothing (the autograd engine, framework
    glue). The emulator's dispatch overhead outside its own interval (`gap_overhead_ns`) is
    taken off every kept gap. Blocking inside a bracket is the emulator's (a collective's
    exchange between cards): never counted.
    """

    projected: Final = True
    __slots__ = (
        "_cpu",
        "_cpu_at",
        "_delay",
        "_delay_at",
        "_delay_cpu",
        "_delay_fresh",
        "_delays",
        "_depth",
        "_floor",
        "_m",
        "_muted",
        "_p",
        "gap_overhead_ns",
        "glue_ns",
    )

    def __init__(
        self, origin_ns: int | None = None, gap_overhead_ns: int = 0, glue_ns: int = 0
    ) -> None:
        t = perf_counter_ns() if origin_ns is None else origin_ns
        self._m = array("q", [t])
        self._p = array("q", [t])
        self._depth = 0
        self._muted = 0
        self._cpu = thread_time_ns()  # thread CPU time at measured `_cpu_at`, outside a bracket
        self._cpu_at = t
        self._delays = RunDelay()
        # the base for blocked time: wall, CPU and run-queue wait read at one instant
        # (`_delay` None: not readable here)
        self._delay: int | None = None
        self._delay_at = self._delay_cpu = 0
        self._note_delay(self._delays.snapshot())
        self._delay_fresh: tuple[int, int, int, int] | None = None  # gap end, snapshot
        self._floor = t  # the latest projected time already handed out (at(), mapping)
        self.gap_overhead_ns = gap_overhead_ns
        """The emulator's own cost between two device ops, outside its dispatch (torch's
        subclass dispatch, wrapper construction and release): removed from every gap."""
        self.glue_ns = glue_ns
        """A "cpu" gap shorter than this is framework glue between two ops (argument handling,
        module plumbing), which the bridge's modeled per-op cost stands for: dropped."""

    def __len__(self) -> int:
        return len(self._m)

    def _point(self, t: int, p: int, cpu: bool = True) -> None:
        """Append the point (`t`, `p`), both clamped monotone; outside a bracket, also note the
        thread's CPU time (`cpu=False` where a bracket opens at once: the exit notes it)."""
        m = self._m
        if t < m[-1]:
            t = m[-1]
        pp = self._p
        if p < pp[-1]:
            p = pp[-1]
        m.append(t)
        pp.append(p)
        if self._depth == 0:
            self._close_gap(t)
            if cpu:
                self._note_cpu(t)

    def _note_cpu(self, t: int) -> None:
        self._cpu = thread_time_ns()
        self._cpu_at = t
        if self._delay is not None and t - self._delay_at >= DELAY_READ_EVERY_NS:
            self._note_delay(self._delays.snapshot())

    def _note_delay(self, snap: tuple[int, int, int] | None) -> None:
        if snap is not None:
            self._delay_at, self._delay_cpu, self._delay = snap

    def _blocked(self, t: int, off: int, read: bool) -> int:
        """Of the `off` ns the open gap's thread was off the CPU up to `t`, those it was
        blocked: since the base reading, wall less CPU less run-queue wait (read if `off` is
        long enough, or `read`). The reading is kept to become the base when the gap closes at
        `t` (`_close_gap`)."""
        if self._delay is None or (off < BLOCKED_MIN_NS and not read):
            return 0
        snap = self._delays.snapshot()
        if snap is None:
            return 0
        wall, cpu, delay = snap
        self._delay_fresh = (t, wall, cpu, delay)
        blocked = (wall - self._delay_at) - (cpu - self._delay_cpu) - (delay - self._delay)
        return min(blocked, off) if blocked >= BLOCKED_MIN_NS else 0

    def _close_gap(self, t: int) -> None:
        """The open gap closed at `t`: a run-queue reading `_gap` took then is the new base."""
        fresh, self._delay_fresh = self._delay_fresh, None
        if fresh is not None and fresh[0] == t:
            self._note_delay(fresh[1:])

    def _gap(self, t: int, mode: str) -> int:
        """The projected length of the open gap from the last point to measured `t` (now)."""
        if mode == "drop":
            return 0
        wall = t - self._m[-1]
        if mode != "wall" and wall < self.glue_ns:
            return 0  # CPU and blocked time are at most the wall time: glue, no need to read
        # the CPU time since the last point: since the last reading, less the time from it to
        # that point (busy: CPU_READ_EVERY_NS); then the time the thread was blocked
        cpu = thread_time_ns()
        used = cpu - self._cpu - (self._m[-1] - self._cpu_at)
        used = min(used + self._blocked(t, wall - used, mode == "wall"), wall)
        if mode == "wall":  # without run-queue readings here: the wall time, as measured
            return max((wall if self._delay is None else used) - self.gap_overhead_ns, 0)
        return used - self.gap_overhead_ns if used >= self.glue_ns else 0

    def at(self, t: int) -> int:
        """The projected time of measured `t` (now or later): after any jump at `t`."""
        last = self._p[-1]
        if self._depth:
            return last
        p = last + self._gap(t, "cpu")
        if p > self._floor:
            self._floor = p
        return p

    def pin(self, t: int) -> int:
        """`at(t)`, kept as a point of the map: every event after measured `t` then maps at or
        after it. A profiler's base time needs it: across the open gap `at` counts the CPU
        time used so far, while a later mapping spreads the whole gap's time evenly, so an
        event recorded just after an unpinned `at` could map before it (a thread busy up to
        `t` and descheduled after: a negative `ts` in the trace)."""
        if self._depth:
            return self._p[-1]
        p = self.at(t)
        self._point(t, p)
        return p

    def kept_ns(self, t: int) -> int:
        """What the open gap up to measured `t` counts in "cpu" mode (0 inside a bracket)."""
        return 0 if self._depth else self._gap(t, "cpu")

    def gap_since_last(self, t: int) -> int:
        """Measured ns since the last point, outside any `enter` (else 0)."""
        return 0 if self._depth else t - self._m[-1]

    def enter(self, t: int, gap: str = "cpu") -> None:
        """Start removing measured time at `t`; the open gap before it counts by `gap` mode
        (class doc), never less than what was already handed out (a step span's end...)."""
        if self._depth == 0:
            m, pp = self._m, self._p
            last = pp[-1]
            if t - m[-1] < self.glue_ns and gap != "wall":
                # the common case, a short gap: nothing kept whether "cpu" or "drop"
                if last > self._floor:
                    self._floor = last
                m.append(t if t > m[-1] else m[-1])
                pp.append(last)
                self._depth = 1
                return
            kept = self._gap(t, "cpu")  # one reading serves `gap` and `at(t)`
            at = last + kept
            floor = self._floor
            if at > floor:
                self._floor = at
            p = last + (kept if gap == "cpu" else self._gap(t, gap))
            self._point(t, max(p, min(floor, at)), cpu=False)
        self._depth += 1

    def exit(self, t: int) -> None:
        depth = self._depth - 1
        if depth == 0:
            self._depth = 0
            m = self._m
            if t < m[-1]:
                t = m[-1]
            m.append(t)
            self._p.append(self._p[-1])
            if t - self._cpu_at >= CPU_READ_EVERY_NS:
                self._note_cpu(t)
        else:
            self._depth = depth if depth > 0 else 0

    def op(self, t1: int, cost_ns: int) -> None:
        """Inside `enter`: the op that ran up to measured `t1` costs `cost_ns` of host time
        (nothing inside `mute`, whose whole span is modeled by its caller)."""
        if not self._muted:
            m, pp = self._m, self._p
            m.append(t1 if t1 > m[-1] else m[-1])
            last = pp[-1]
            pp.append(last + cost_ns if cost_ns > 0 else last)
            if not self._depth:  # outside a bracket (no caller does this today)
                self._note_cpu(m[-1])

    def advance(self, t: int, dur_ns: int) -> None:
        """The host is busy for a modeled `dur_ns` at measured `t`."""
        if dur_ns <= 0:
            return
        cur = self.at(t)
        self._point(t, cur)
        self._point(t, cur + dur_ns)

    def wait_until(self, t: int, target_ns: int) -> int:
        """The host waits at measured `t` until projected `target_ns`; returns the wait."""
        cur = self.at(t)
        if target_ns <= cur:
            return 0
        self._point(t, cur)
        self._point(t, target_ns)
        return target_ns - cur

    @contextmanager
    def pause(self) -> Iterator[None]:
        """Remove the measured time of the block (the profiler's own writes...)."""
        self.enter(perf_counter_ns())
        try:
            yield
        finally:
            self.exit(perf_counter_ns())

    @contextmanager
    def mute(self) -> Iterator[None]:
        """Remove the block's measured time and its ops' modeled costs."""
        self._muted += 1
        self.enter(perf_counter_ns())
        try:
            yield
        finally:
            self.exit(perf_counter_ns())
            self._muted -= 1

    def _interp(self, i: int, t: int) -> int:
        m, p = self._m, self._p
        if i + 1 >= len(m):  # the open gap: linear up to now
            if self._depth:
                return p[i]
            now = perf_counter_ns()
            end = self.at(now)
            if t >= now or now <= m[i]:
                return end
            return p[i] + (end - p[i]) * (t - m[i]) // (now - m[i])
        dm = m[i + 1] - m[i]
        if dm <= 0:
            return p[i]
        return p[i] + (p[i + 1] - p[i]) * (t - m[i]) // dm

    def map_start(self, t: int) -> int:
        """Projected start of an event that began at measured `t` (before a jump at `t`)."""
        m = self._m
        i = bisect_left(m, t)
        if i < len(m) and m[i] == t:
            return self._p[i]
        if i == 0:
            return self._p[0] - (m[0] - t)
        return self._interp(i - 1, t)

    def map_end(self, t: int) -> int:
        """Projected end of an event that ended at measured `t` (after a jump at `t`)."""
        m = self._m
        i = bisect_right(m, t) - 1
        if i < 0:
            return self._p[0] - (m[0] - t)
        if m[i] == t:
            return self._p[i]
        return self._interp(i, t)

    def map_many(self, ts: Any, end: bool = False) -> Any:
        """`map_start` (or with `end`, `map_end`) of every time of an int64 numpy array, the
        same integers as the one-at-a-time methods (the drain's vectorised path)."""
        import numpy as np

        m = np.frombuffer(self._m, dtype=np.int64).copy()  # a copy: the arrays may still grow
        p = np.frombuffer(self._p, dtype=np.int64).copy()
        n = len(m)
        if end:
            j = np.searchsorted(m, ts, side="right") - 1
            before = j < 0
            jc = np.maximum(j, 0)
            exact = ~before & (m[jc] == ts)
        else:
            i = np.searchsorted(m, ts, side="left")
            ic = np.minimum(i, n - 1)
            exact = (i < n) & (m[ic] == ts)
            before = ~exact & (i == 0)
            j = i - 1
            jc = np.maximum(j, 0)
        out = np.where(exact, p[jc] if end else p[ic], p[0] - (m[0] - ts))
        inner = ~exact & ~before  # interpolated between points jc and jc + 1, or the open gap
        gap = inner & (jc + 1 >= n)
        seg = inner & ~gap
        k = jc[seg]
        k1 = np.minimum(k + 1, n - 1)
        dm = m[k1] - m[k]
        dp = p[k1] - p[k]
        dt = ts[seg] - m[k]
        # dp * dt // dm in int64 where it cannot overflow (dp, dt >= 0), else in Python ints
        big = (dp > 0) & (dt > 0) & (dp > np.iinfo(np.int64).max // np.maximum(dt, 1))
        lin = p[k] + np.where(dm > 0, (np.where(big, 0, dp) * dt) // np.maximum(dm, 1), 0)
        for x in np.flatnonzero(big & (dm > 0)):
            lin[x] = int(p[k[x]]) + int(dp[x]) * int(dt[x]) // int(dm[x])
        out[seg] = lin
        for x in np.flatnonzero(gap):  # after the last point: the scalar path (reads the clock)
            out[x] = self._interp(int(jc[x]), int(ts[x]))
        return out

    def forget_before(self, t: int) -> None:
        """Drop points older than measured `t` (keeping one before it): bounded memory."""
        i = bisect_left(self._m, t) - 1
        if i > 0:
            del self._m[:i]
            del self._p[:i]


class GcPause:
    """A `gc.callbacks` entry that removes Python's garbage collections from the projected
    host clock: their length here is set by the emulator's own objects (wrappers, cached op
    costs), not by the script's."""

    def __init__(self, clock: HostClock) -> None:
        self.clock = clock

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self.clock.enter(perf_counter_ns())
        else:
            self.clock.exit(perf_counter_ns())


_OVERHEAD: list[int] = []


OVERHEAD_ROUNDS: Final = 40
OVERHEAD_OPS: Final = 25


def dispatch_overhead_ns() -> int:
    """The per-op cost of torch's tensor-subclass dispatch outside the emulator's own measured
    interval, timed once per process on a probe wrapper subclass: the best of
    `OVERHEAD_ROUNDS` rounds of `OVERHEAD_OPS` ops, short enough that on a loaded machine
    some rounds run without being descheduled (5 x 100 ops read 8.4-9.5 us idle and 10-36 us
    with a busy loop per core; 40 x 25 read 5.1-8.3 us idle and 5.3-9.5 us busy, varying more
    between processes than with the load)."""
    if _OVERHEAD:
        return _OVERHEAD[0]
    import torch

    class _Probe(torch.Tensor):
        _elem: torch.Tensor
        inside: ClassVar[list[int]] = [0]

        @staticmethod
        def __new__(cls, elem: torch.Tensor) -> _Probe:
            r = torch.Tensor._make_wrapper_subclass(
                cls, elem.size(), strides=elem.stride(), dtype=elem.dtype, device=elem.device
            )
            r._elem = elem
            return r

        __torch_function__ = torch._C._disabled_torch_function_impl  # type: ignore[assignment]

        @classmethod
        def __torch_dispatch__(  # type: ignore[override]
            cls, func: object, types: object, args: tuple[object, ...] = (), kwargs: object = None
        ) -> object:
            t0 = perf_counter_ns()
            out = _Probe(func(*[a._elem if type(a) is _Probe else a for a in args]))  # type: ignore[operator]
            cls.inside[0] += perf_counter_ns() - t0
            return out

    a, b = _Probe(torch.zeros(16)), _Probe(torch.zeros(16))
    best = None
    for _ in range(OVERHEAD_ROUNDS):
        _Probe.inside[0] = 0
        t0 = perf_counter_ns()
        for _ in range(OVERHEAD_OPS):
            a.add(b)
        outside = (perf_counter_ns() - t0 - _Probe.inside[0]) // OVERHEAD_OPS
        best = outside if best is None else min(best, outside)
    _OVERHEAD.append(max(int(best or 0), 0))
    return _OVERHEAD[0]


class BatchProjector:
    """Maps a drained batch's host events onto the projected clock (called by `Sink.drain`).

    Host ops, runtime events and counters are mapped (start before a jump at their timestamp,
    end after it); device events are already on the projected clock; a compile keeps its
    modeled duration and a zero-length instant (mark_step) stays one. Each host event's
    measured duration is kept (`measured_dur_ns`, exported as `hpuprof.measured_us`). Points
    older than the oldest event of the previous drain are then forgotten."""

    def __init__(self, clock: HostClock) -> None:
        self.clock = clock
        self._keep_from: int | None = None

    def __call__(self, data: dict[str, Any], payloads: list[object]) -> None:
        import numpy as np

        clock = self.clock
        kinds, hev, ts, dur = data["kind"], data["hpu_event"], data["ts_ns"], data["dur_ns"]
        data["measured_dur_ns"] = dur.copy()
        host = np.flatnonzero(kinds != KIND_DEVICE)
        t, d = ts[host], dur[host]
        oldest = int(t.min()) if len(t) else None
        start = clock.map_many(t)
        # a compile keeps its modeled duration, a zero-length mark_step stays an instant
        h = hev[host]
        keep = (kinds[host] == KIND_RUNTIME) & (
            np.isin(h, (EV["compile"], EV["dynamo_compile"])) | ((h == EV["mark_step"]) & (d == 0))
        )
        mapped = ~keep
        d = d.copy()
        d[mapped] = np.maximum(clock.map_many(t[mapped] + d[mapped], end=True) - start[mapped], 0)
        ts[host] = start
        dur[host] = d
        if self._keep_from is not None:
            clock.forget_before(self._keep_from)
        self._keep_from = oldest
