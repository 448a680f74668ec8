"""`time_range`: totals per name over a time range, as a timeline's area selection shows."""

from __future__ import annotations

import numpy as np

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
