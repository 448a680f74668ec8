"""`time_range`: totals per name over a time range, as a timeline's area selection shows."""

from __future__ import annotations

import numpy as np
import pandas as pd

from hpuprof.analysis.time_range import summarize_time_range
from hpuprof.trace.model import Trace
from hpuprof.trace.schema import COUNTER_COLUMNS, EVENT_COLUMNS, FLOW_COLUMNS, NO_ID


def _trace(rows: list[tuple[str, int, int, int, str, bool]]) -> Trace:
    """Slices as (name, ts, dur, parent row, tid, on device)."""
    n = len(rows)
    base: dict[str, object] = {
        "cat": "cpu_op", "ph": "X", "pid": "1", "rank": 0, "kind": "cpu_op", "device": NO_ID,
        "stream": NO_ID, "engine": "", "correlation": NO_ID, "external_id": NO_ID, "depth": 0,
        "step": NO_ID, "input_dims": "", "input_types": "", "mode": "", "module": "", "phase": "",
        "graph_id": "", "hpu_event": "", "flush_reason": "", "fallback": False, "args": b"",
    }  # fmt: skip
    default = {"category": "", "bool": False, "binary": b""}
    cols = {c: [base.get(c, default.get(t, NO_ID))] * n for c, t in EVENT_COLUMNS.items()}
    for i, (name, ts, dur, parent, tid, dev) in enumerate(rows):
        cols["name"][i], cols["ts_ns"][i], cols["dur_ns"][i] = name, ts, dur
        cols["parent"][i], cols["tid"][i], cols["is_device"][i] = parent, tid, dev
    ev = pd.DataFrame({c: pd.Series(v, dtype=t) if t != "binary" else pd.Series(v, dtype=object) for (c, t), v in zip(EVENT_COLUMNS.items(), cols.values(), strict=True)})  # fmt: skip
    empty = lambda spec: pd.DataFrame({c: pd.Series(dtype=t) for c, t in spec.items()})  # noqa: E731
    return Trace(ev, empty(COUNTER_COLUMNS), empty(FLOW_COLUMNS), {0: {}}, pd.DataFrame(), pd.DataFrame(), ("<t>",), "test")  # fmt: skip


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
