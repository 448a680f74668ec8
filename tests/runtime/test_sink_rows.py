"""The sink's compact rows and its vectorised drain give exactly the events of the one-event-
at-a-time definition: every column, in recording order, on the projected clock."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")


def _reference_events(sink: Any) -> list[tuple[int, ...]]:
    """The events recorded so far, one NCOL-tuple each, expanded row by row in Python."""
    from hpusim.sink import EV_OP, KIND_DEVICE, KIND_OP, NCOL, ROW

    flat, full, templates = list(sink._flat), list(sink._full), list(sink._templates)
    out: list[tuple[int, ...]] = []
    whole = 0
    for r in range(0, len(flat), ROW):
        tmpl, ts, dur, tid, module, phase, corr, dev_ts = flat[r : r + ROW]
        if tmpl < 0:
            out.append(tuple(full[whole * NCOL : (whole + 1) * NCOL]))
            whole += 1
            continue
        events, name, mode, dims, types, graph, dev_name, engine, dev_dur, flops, nbytes = (
            templates[tmpl]
        )
        out.append(
            (KIND_OP, EV_OP, name, ts, dur, tid, module, phase, mode, dims, types, 0, graph, corr,
             0, 0, -1)
        )  # fmt: skip
        if events == 2:
            out.append(
                (KIND_DEVICE, 0, dev_name, dev_ts, dev_dur, 0, 0, 0, 0, 0, 0, engine, graph, corr,
                 flops, nbytes, -1)
            )  # fmt: skip
    assert whole * NCOL == len(full)
    return out


def _reference_projection(clock: Any, data: dict[str, list[int]]) -> None:
    """The projection one event at a time with the clock's scalar `map_start` / `map_end`."""
    from hpusim.sink import EV, KIND_DEVICE, KIND_RUNTIME

    kinds, hev, ts, dur = data["kind"], data["hpu_event"], data["ts_ns"], data["dur_ns"]
    data["measured_dur_ns"] = list(dur)
    for i, kind in enumerate(kinds):
        if kind == KIND_DEVICE:
            continue
        t, d = ts[i], dur[i]
        start = clock.map_start(t)
        ts[i] = start
        if kind == KIND_RUNTIME and (
            hev[i] in (EV["compile"], EV["dynamo_compile"])
            or (hev[i] == EV["mark_step"] and d == 0)
        ):
            continue
        dur[i] = max(clock.map_end(t + d) - start, 0)


def _workload(sim: Any, lazy: bool) -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    model = model.to("hpu")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(8, 16).to("hpu")
    for _ in range(3):
        loss = model(x).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if lazy:
            sim.mark_step()
        loss.item()  # a D2H read: transfer events, a sync
        sim.step_marker()
    torch.digamma(torch.rand(2, device="hpu")).cpu()  # a CPU fallback


@pytest.mark.parametrize("mode", ["eager", "lazy"])
def test_drain_equals_the_event_by_event_definition(hpu: Any, mode: str) -> None:
    sim = hpu(mode)
    from hpusim import state
    from hpusim.sink import COLUMNS, KIND_DEVICE, KIND_OP, KIND_RUNTIME, get_sink

    sink = get_sink()
    rt = state.RT
    assert rt is not None and rt.clock.projected
    for drain in range(2):  # the second drain also forgets clock points the first one used
        _workload(sim, mode == "lazy")
        with rt.clock.pause():  # as the profiler drains: the clock holds still meanwhile
            events = _reference_events(sink)
            ref = {c: [e[i] for e in events] for i, c in enumerate(COLUMNS)}
            _reference_projection(rt.clock, ref)
            payloads = list(sink._payloads)
            batch = sink.drain()
        assert len(batch) == len(events) > 100
        assert {KIND_OP, KIND_DEVICE, KIND_RUNTIME} <= set(ref["kind"])
        for c in COLUMNS:
            want = [t + sink._clock_offset_ns for t in ref[c]] if c == "ts_ns" else ref[c]
            assert getattr(batch, c) == want, (drain, c)
            assert all(type(v) is int for v in getattr(batch, c))
        assert batch.measured_dur_ns == ref["measured_dur_ns"]
        assert batch.payloads == tuple(payloads)


def test_writers_give_their_events_in_recording_order() -> None:
    from hpusim.sink import (
        COLUMNS,
        EV,
        EV_OP,
        KIND_COUNTER,
        KIND_DEVICE,
        KIND_OP,
        KIND_RUNTIME,
        Sink,
    )

    sink = Sink()
    eager = sink.template(3, 2, 4, 5, 77, dev_name=6, engine=2, dev_dur=900, flops=10, nbytes=64)
    lazy = sink.template(8, 1, 4, 5, -1)
    assert sink.template(8, 1, 4, 5, -1) == lazy != eager  # interned
    sink.op_and_device(eager, 1000, 50, 11, 1, 1, 7, 2000)
    sink.runtime("sync", "sync", 1100, 5, tid=11, payload={"a": 1})
    sink.op(8, 1200, 60, 11, 0, 2, 1, 4, 5, -1, -1)
    sink.device(6, 1, 2100, 300, 9, 8, 20, 128, payload={"b": 2})
    sink.counter("hpu.x", 1300, {"v": 1.5})
    sink.put((eager, 1400, 70, 12, 0, 3, 10, 2500))
    assert len(sink) == 6
    b = sink.drain()
    rows = list(zip(*(getattr(b, c) for c in COLUMNS), strict=True))
    off = sink._clock_offset_ns
    sync = sink.intern("sync")
    assert rows == [
        (KIND_OP, EV_OP, 3, 1000 + off, 50, 11, 1, 1, 2, 4, 5, 0, 77, 7, 0, 0, -1),
        (KIND_DEVICE, 0, 6, 2000 + off, 900, 0, 0, 0, 0, 0, 0, 2, 77, 7, 10, 64, -1),
        (KIND_RUNTIME, EV["sync"], sync, 1100 + off, 5, 11, 0, 0, 0, 0, 0, 0, -1, -1, 0, 0, 0),
        (KIND_OP, EV_OP, 8, 1200 + off, 60, 11, 0, 2, 1, 4, 5, 0, -1, -1, 0, 0, -1),
        (KIND_DEVICE, 0, 6, 2100 + off, 300, 0, 0, 0, 0, 0, 0, 1, 9, 8, 20, 128, 1),
        (KIND_COUNTER, 0, sink.intern("hpu.x"), 1300 + off, 0, 0, 0, 0, 0, 0, 0, 0, -1, -1, 0, 0,
         2),
        (KIND_OP, EV_OP, 3, 1400 + off, 70, 12, 0, 3, 2, 4, 5, 0, 77, 10, 0, 0, -1),
        (KIND_DEVICE, 0, 6, 2500 + off, 900, 0, 0, 0, 0, 0, 0, 2, 77, 10, 10, 64, -1),
    ]  # fmt: skip
    assert b.payloads == ({"a": 1}, {"b": 2}, {"v": 1.5})
    assert b.measured_dur_ns is None
    assert len(sink) == 0 and len(sink.drain()) == 0


def test_a_half_written_event_is_a_clear_error() -> None:
    from hpusim.sink import Sink

    sink = Sink()
    sink.runtime("sync", "sync", 1)
    sink._full.clear()  # the whole event lost, its marker row kept
    with pytest.raises(ValueError, match="sink rows disagree"):
        sink.drain()


_NS = st.integers(min_value=0, max_value=10**12)


@settings(max_examples=200, deadline=None)
@given(
    steps=st.lists(
        st.tuples(st.integers(0, 4), st.integers(0, 3 * 10**9), st.integers(0, 4 * 10**9)),
        min_size=0,
        max_size=30,
    ),
    ts=st.lists(_NS, max_size=40),
    probe_offsets=st.lists(st.integers(-5, 5), max_size=10),
)
def test_map_many_equals_map_start_and_map_end(
    steps: list[tuple[int, int, int]], ts: list[int], probe_offsets: list[int]
) -> None:
    """Random clocks (kept gaps, removed spans, modeled op costs, jumps, waits; gaps of
    seconds, where `dp * dt` overflows int64) mapped at random times, at every point and
    beside it, before the first point and after the last."""
    import numpy as np
    from hpusim.projection import HostClock

    clock = HostClock(origin_ns=10**9)
    t = 10**9
    for kind, dm, dp in steps:
        t += dm
        if kind == 0:
            clock.enter(t, gap="drop")
            clock.op(t + dm // 2, dp)
            clock.exit(t + dm // 2 + 1)
        elif kind == 1:
            clock.advance(t, dp)
        elif kind == 2:
            clock.wait_until(t, clock.at(t) + dp)
        elif kind == 3:  # a long span whose measured time the projection keeps (slope 1)
            clock._point(t, clock._p[-1] + dm)
        else:
            clock._point(t, clock._p[-1] + dp)  # any slope
    points = list(clock._m)
    times = ts + [p + o for p in points[:: max(len(points) // 5, 1)] for o in probe_offsets]
    times += [points[0] - 7, points[-1]]
    clock.enter(points[-1] + 10, gap="drop")  # the open gap held still (as during a drain)
    arr = np.array(times, dtype=np.int64)
    assert clock.map_many(arr).tolist() == [clock.map_start(x) for x in times]
    assert clock.map_many(arr, end=True).tolist() == [clock.map_end(x) for x in times]


def test_map_many_is_exact_where_int64_products_overflow() -> None:
    """A kept gap of 100 s (slope 1) and a modeled cost spread over 50 s: `dp * dt` is far
    beyond int64 inside them; the vectorised map computes those in Python integers."""
    import numpy as np
    from hpusim.projection import HostClock

    clock = HostClock(origin_ns=0)
    clock._point(100 * 10**9, 100 * 10**9)
    clock._point(150 * 10**9, 100 * 10**9 + 3 * 10**9 + 7)
    clock.enter(151 * 10**9, gap="drop")
    times = [1, 33 * 10**9 + 5, 99_999_999_999, 120 * 10**9 + 1, 149 * 10**9 + 3]
    arr = np.array(times, dtype=np.int64)
    assert clock.map_many(arr).tolist() == [clock.map_start(x) for x in times]
    assert clock.map_many(arr, end=True).tolist() == [clock.map_end(x) for x in times]


def test_each_thread_and_a_forked_child_record_their_own_os_thread_id(hpu: Any) -> None:
    import os
    import threading

    hpu("eager")
    from hpusim.sink import THREAD_IDS, get_sink

    sink = get_sink()
    a = torch.ones(4, device="hpu")
    a.add(a)
    ids: list[int] = []
    worker = threading.Thread(target=lambda: (a.add(a), ids.append(threading.get_native_id())))
    worker.start()
    worker.join()
    b = sink.drain()
    add = sink.intern("aten::add")
    host = [b.tid[i] for i in range(len(b)) if b.kind[i] == 0 and b.name[i] == add]
    assert host == [threading.get_native_id(), ids[0]] and ids[0] != host[0]
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child's thread id is its own, not the parent's (cached) one
        os.write(write, str(THREAD_IDS.tid == threading.get_native_id() == os.getpid()).encode())
        os._exit(0)
    os.waitpid(pid, 0)
    assert os.read(read, 10) == b"True"
