"""Build small `Trace` objects from a few rows, per hpuprof/trace/schema.py (test helper).

Missing columns get schema defaults; `depth`/`parent` are computed by containment within a
(rank, pid, tid) lane, `step` from ProfilerStep#N / our step slices, and the derived columns
(`op_row`, `dtype`, `flops`, ...) by the loader's own `derive.with_derived`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson
import pandas as pd

from hpuprof.trace.derive import with_derived
from hpuprof.trace.model import Trace
from hpuprof.trace.schema import (
    COUNTER_COLUMNS,
    EVENT_COLUMNS,
    FLOW_COLUMNS,
    NO_ID,
    stored_event_columns,
)

DEFAULTS: dict[str, Any] = {
    "cat": "cpu_op",
    "ph": "X",
    "pid": "1",
    "tid": "1",
    "dur_ns": 0,
    "rank": 0,
    "kind": "cpu_op",
    "is_device": False,
    "device": NO_ID,
    "stream": NO_ID,
    "engine": "",
    "correlation": NO_ID,
    "external_id": NO_ID,
    "input_dims": "",
    "input_types": "",
    "mode": "",
    "module": "",
    "phase": "",
    "graph_id": "",
    "hpu_event": "",
    "flush_reason": "",
    "fallback": False,
    "args": b"",
}

DEVICE_KINDS = {"kernel", "memcpy", "memset", "device_op", "device_annotation"}


def _typed(df: pd.DataFrame, columns: dict[str, str]) -> pd.DataFrame:
    out = pd.DataFrame(index=df.index)
    for col, dtype in columns.items():
        if dtype == "binary":
            out[col] = df[col].astype(object)
        else:
            out[col] = df[col].astype(dtype)
    return out


def make_trace(
    rows: list[dict[str, Any]], metadata: dict[int, dict[str, Any]] | None = None
) -> Trace:
    """A Trace from event dicts (keys: schema columns; `args` may be a dict)."""
    filled = []
    for r in rows:
        row = {**DEFAULTS, **r}
        if row["kind"] in DEVICE_KINDS and "is_device" not in r:
            row["is_device"] = True
        if row["is_device"] and "pid" not in r:
            row["pid"] = "0"
        if isinstance(row["args"], dict):
            row["args"] = orjson.dumps(row["args"])
        for key in ("input_dims", "input_types"):
            if not isinstance(row[key], str):
                row[key] = orjson.dumps(row[key]).decode()
        filled.append(row)
    df = pd.DataFrame(filled)
    df = df.sort_values(["rank", "ts_ns"], kind="stable", ignore_index=True)
    n = len(df)
    depth = np.zeros(n, dtype=np.int16)
    parent = np.full(n, NO_ID, dtype=np.int64)
    ts = df["ts_ns"].to_numpy()
    end = ts + df["dur_ns"].to_numpy()
    lanes = df.groupby(["rank", "pid", "tid"]).indices
    for idx in lanes.values():
        stack: list[int] = []
        for i in sorted(idx, key=lambda k: (ts[k], -end[k])):
            while stack and not (ts[i] >= ts[stack[-1]] and end[i] <= end[stack[-1]]):
                stack.pop()
            if stack:
                parent[i] = stack[-1]
                depth[i] = len(stack)
            if df.at[i, "ph"] == "X":
                stack.append(i)
    df["depth"] = depth
    df["parent"] = parent
    step = np.full(n, NO_ID, dtype=np.int32)
    names = df["name"].astype(str)
    is_step = (names.str.startswith("ProfilerStep#") & (df["kind"] == "user_annotation")) | (
        df["hpu_event"] == "step"
    )
    for i in np.flatnonzero(is_step.to_numpy()):
        num = int(names[i].split("#")[1])
        inside = (df["rank"] == df.at[i, "rank"]).to_numpy() & (ts >= ts[i]) & (ts < end[i])
        step[inside] = num
    df["step"] = step
    base = {c: t for c, t in EVENT_COLUMNS.items() if c in stored_event_columns(1)}
    events = with_derived(_typed(df, base))
    counters = pd.DataFrame({c: pd.Series(dtype=t) for c, t in COUNTER_COLUMNS.items()})
    flows = pd.DataFrame({c: pd.Series(dtype=t) for c, t in FLOW_COLUMNS.items()})
    return Trace(
        events=events,
        counters=counters,
        flows=flows,
        metadata=metadata or {0: {}},
        sources=("<built>",),
        format="test-built",
    )
