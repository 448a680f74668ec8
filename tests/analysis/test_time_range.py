"""`time_range`: totals per name over a time range, as a timeline's area selection shows."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hpuprof.analysis.time_range import summarize_time_range
from hpuprof.trace.model import Trace
from hpuprof.trace.schema import NO_ID
from tests.tracebuild import make_trace


def _trace(rows: list[tuple[str, int, int, int, str, bool]]) -> Trace:
    """Slices as (name, ts, dur, parent row, tid, on device), as given (nothing derived)."""
    events = [
        {"name": name, "ts_ns": ts, "dur_ns": dur, "parent": parent, "tid": tid,
         "is_device": dev, "cat": "cpu_op", "pid": "1", "kind": "cpu_op"}
        for name, ts, dur, parent, tid, dev in rows
    ]  # fmt: skip
    return make_trace(events, derive=False, metadata={0: {}}, sources=("<t>",), format="test")


def test_clipped_wall_self_and_average() -> None:
    trace = _trace([
        ("step", 0, 100, NO_ID, "1", False),
        ("op", 10, 20, 0, "1", False),
        ("op", 50, 40, 0, "1", False),
        ("kernel", 60, 30, NO_ID, "7", True),
        ("late", 500, 10, NO_ID, "1", False),
    ])  # fmt: skip
    got = summarize_time_range(trace, 20, 70)
    rows = {(r.name, r.side): r for r in got.rows}
    assert got.slices == 4 and ("late", "host") not in rows
    step, op, kernel = rows[("step", "host")], rows[("op", "host")], rows[("kernel", "device")]
    assert (op.occurrences, op.wall_ns, op.self_ns, op.avg_ns) == (2, 10 + 20, 30, 30.0)
    assert (step.wall_ns, step.self_ns) == (50, 20)  # 50 in range, minus its children's 30
    assert (kernel.wall_ns, kernel.avg_ns) == (10, 30.0)
    assert got.rows[0].name == "step"  # largest wall time first
    # reversed bounds are the same range; lanes pick (rank, pid, tid)
    assert summarize_time_range(trace, 70, 20) == got
    only_device = summarize_time_range(trace, 20, 70, lanes=[(0, "1", "7")])
    assert [(r.name, r.side) for r in only_device.rows] == [("kernel", "device")]
    assert np.isclose(sum(r.wall_ns for r in only_device.rows), 10)


def test_crossing_slices_are_not_counted_twice() -> None:
    # a modeled compile [0, 60) outlasts its step [0, 40); the next step [40, 100) starts
    # inside it (the loader made the compile its parent): each instant has one owner
    trace = _trace([
        ("step", 0, 40, NO_ID, "1", False),
        ("compile", 10, 50, 0, "1", False),
        ("step", 40, 60, 1, "1", False),
        ("op", 70, 10, 2, "1", False),
    ])  # fmt: skip
    got = {r.name: r for r in summarize_time_range(trace, 0, 100).rows}
    assert got["step"].self_ns == 10 + 60 - 10 and got["compile"].self_ns == 30
    assert got["op"].self_ns == 10
    assert sum(r.self_ns for r in got.values()) == 100


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 200), st.integers(0, 120), st.sampled_from(["1", "2"])),
        min_size=1,
        max_size=30,
    ),
    st.integers(0, 250),
    st.integers(1, 150),
)
def test_self_time_never_exceeds_each_lanes_busy_time(
    slices: list[tuple[int, int, str]], lo: int, width: int
) -> None:
    trace = _trace(
        [(f"s{i}", ts, dur, NO_ID, tid, False) for i, (ts, dur, tid) in enumerate(slices)]
    )
    hi = lo + width
    for tid in ("1", "2"):
        got = summarize_time_range(trace, lo, hi, lanes=[(0, "1", tid)])
        busy = _busy([(max(ts, lo), min(ts + dur, hi)) for ts, dur, t in slices if t == tid])
        total = sum(r.self_ns for r in got.rows)
        assert total == busy <= width
        assert all(0 <= r.self_ns <= r.wall_ns for r in got.rows)


def _busy(spans: list[tuple[int, int]]) -> int:
    """Length of the union of [a, b) spans."""
    total, reach = 0, None
    for a, b in sorted(s for s in spans if s[1] > s[0]):
        if reach is None or a >= reach:
            total += b - a
            reach = b
        elif b > reach:
            total += b - reach
            reach = b
    return total


def test_several_ranks_are_kept_apart() -> None:
    # the same op on two ranks: one row per rank, never one row adding both ranks' time
    events = [
        {"name": "aten::mm", "ts_ns": 0, "dur_ns": 30, "parent": NO_ID, "tid": "1",
         "is_device": False, "cat": "cpu_op", "pid": "1", "kind": "cpu_op", "rank": rank}
        for rank in (0, 1)
    ]  # fmt: skip
    trace = make_trace(events, derive=False, metadata={0: {}, 1: {}}, sources=("<t>",), format="test")  # fmt: skip
    got = summarize_time_range(trace, 0, 100).rows
    assert sorted((r.rank, r.name, r.wall_ns) for r in got) == [(0, "aten::mm", 30), (1, "aten::mm", 30)]  # fmt: skip
    one = _trace([("aten::mm", 0, 30, NO_ID, "1", False)])
    assert [r.rank for r in summarize_time_range(one, 0, 100).rows] == [None]
