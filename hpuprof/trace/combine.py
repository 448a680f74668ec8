"""Combine per-rank `Trace`s into one (a directory of rank traces)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd
from pandas.api.types import union_categoricals

from hpuprof.trace.broadcast_columns import absent_arg_column, holds_values
from hpuprof.trace.categories import text_categorical
from hpuprof.trace.model import Trace
from hpuprof.trace.schema import ARG_COLUMNS, ROW_COLUMNS


def with_rank(trace: Trace, rank: int) -> Trace:
    """The same trace re-labelled as `rank` (every table's rank column and the metadata key)."""
    tables = {}
    for name in ("events", "counters", "flows", "processes", "threads"):
        frame = getattr(trace, name)
        if "rank" in frame.columns and len(frame):
            frame = frame.assign(rank=np.full(len(frame), rank, dtype=frame["rank"].dtype))
        tables[name] = frame
    meta = next(iter(trace.metadata.values()), {})
    return replace(trace, metadata={rank: meta}, **tables)


def concat_tables(frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Tables of one schema one after the other (categories merged, canonical form)."""
    frames = [f for f in frames if len(f.columns)]
    if not frames:
        return pd.DataFrame()
    columns: dict[str, Any] = {}
    for name in frames[0].columns:
        parts = [f[name] for f in frames]
        if name in ARG_COLUMNS and not any(map(holds_values, parts)):  # (no copy per rank)
            columns[name] = absent_arg_column(name, sum(map(len, parts)))
        elif isinstance(parts[0].dtype, pd.CategoricalDtype):
            merged = union_categoricals([p.array for p in parts], ignore_order=True)
            columns[name] = text_categorical(np.asarray(merged, dtype=object))
        else:
            columns[name] = pd.concat(parts, ignore_index=True)
    return pd.DataFrame(columns, copy=False)


def combine(traces: Sequence[Trace]) -> Trace:
    """One Trace over several ranks: tables concatenated in rank order, row references
    (`schema.ROW_COLUMNS`: parent, op_row) re-based."""
    if len(traces) == 1:
        return traces[0]
    ranks = [next(iter(t.metadata), 0) for t in traces]
    if len(set(ranks)) != len(ranks):
        warnings.warn(
            f"rank traces share ranks {ranks}; numbering them 0..{len(ranks) - 1} in file order",
            stacklevel=3,
        )
        traces = [with_rank(t, i) for i, t in enumerate(traces)]
        ranks = list(range(len(traces)))
    ordered = [t for _, t in sorted(zip(ranks, traces, strict=True), key=lambda p: p[0])]
    offset = 0
    event_frames = []
    for trace in ordered:
        events = trace.events
        rows = {c: events[c].to_numpy() for c in ROW_COLUMNS if c in events.columns}
        events = events.assign(**{c: np.where(r >= 0, r + offset, r) for c, r in rows.items()})
        event_frames.append(events)
        offset += len(events)
    metadata: dict[int, Any] = {}
    for trace in ordered:
        metadata.update(trace.metadata)
    formats = sorted({t.format for t in ordered})
    return Trace(
        events=concat_tables(event_frames),
        counters=concat_tables([t.counters for t in ordered]),
        flows=concat_tables([t.flows for t in ordered]),
        metadata=metadata,
        processes=pd.concat([t.processes for t in ordered], ignore_index=True),
        threads=pd.concat([t.threads for t in ordered], ignore_index=True),
        sources=tuple(s for t in ordered for s in t.sources),
        format=",".join(formats),
    )
