"""What `hpuprof info` reports: a pure summary of a `Trace`."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from hpuprof.trace.schema import NO_ID

if TYPE_CHECKING:
    import pandas as pd

    from hpuprof.trace.model import Trace

# numpy and pandas are imported by the functions that count: `hpuprof info` reads a cached
# `TraceSummary` without them (start-up time, issue 27)


@dataclass(frozen=True)
class TraceSummary:
    """Counts and spans of one loaded trace.

    Args:
        span_ns: last event end minus first event start (0 when empty).
        devices: accelerator indexes seen on device events, with names from deviceProperties.
        device_time: `Trace.device_time` ("modeled" / "measured" / "none"), "" when unknown.
    """

    sources: tuple[str, ...]
    format: str
    events: int
    counters: int
    flows: int
    start_ns: int
    end_ns: int
    span_ns: int
    ranks: tuple[int, ...]
    devices: dict[str, str]
    categories: dict[str, int]
    kinds: dict[str, int]
    steps: tuple[int, ...]
    device_time: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def device_names(metadata: Mapping[int, Mapping[str, Any]]) -> dict[int, str]:
    """Accelerator index -> name, from the deviceProperties of `metadata`."""
    names: dict[int, str] = {}
    for meta in metadata.values():
        props = meta.get("deviceProperties")
        if not isinstance(props, list):
            continue
        for i, prop in enumerate(props):
            if isinstance(prop, dict):
                index = prop.get("id", i)
                names[int(index) if isinstance(index, int) else i] = str(prop.get("name", ""))
    return names


@dataclass(frozen=True)
class TracePart:
    """What one trace (one rank file of a directory) adds to a summary."""

    rank: int
    ranks: frozenset[int]
    metadata: Mapping[int, Any]
    sources: tuple[str, ...]
    format: str
    events: int
    counters: int
    flows: int
    start_ns: int | None
    end_ns: int | None
    device_ids: frozenset[int]
    steps: frozenset[int]
    categories: Mapping[str, int]
    kinds: Mapping[str, int]


def trace_part(trace: Trace) -> TracePart:
    """The summary part of `trace`."""
    events = trace.events
    start = end = None
    if len(events):
        start = int(events["ts_ns"].min())
        end = int((events["ts_ns"] + events["dur_ns"]).max())
    devices = events.loc[events["is_device"], "device"].unique()
    return TracePart(
        rank=next(iter(trace.metadata), 0),
        ranks=frozenset(int(r) for r in trace.ranks),
        metadata=trace.metadata,
        sources=trace.sources,
        format=trace.format,
        events=len(events),
        counters=len(trace.counters),
        flows=len(trace.flows),
        start_ns=start,
        end_ns=end,
        device_ids=frozenset(int(d) for d in devices if d != NO_ID),
        steps=frozenset(int(s) for s in events["step"].unique() if s != NO_ID),
        categories=_counts(events["cat"]),
        kinds=_counts(events["kind"]),
    )


def _counts(column: pd.Series) -> dict[str, int]:
    return {str(k): int(v) for k, v in column.value_counts(sort=False).items() if v}


def _ordered_counts(counts: Counter[str]) -> dict[str, int]:
    """`counts`, most first, in the order `value_counts` gives a categorical column with sorted
    categories (the events table's), so that ties come out as they always did."""
    import numpy as np
    import pandas as pd

    names = sorted(counts)
    codes = np.repeat(np.arange(len(names)), [counts[n] for n in names])
    column = pd.Series(pd.Categorical.from_codes(codes, categories=pd.Index(names, dtype="str")))
    return {str(k): int(v) for k, v in column.value_counts().items() if v}


def summary_of_parts(
    ordered: Sequence[TracePart], metadata: Mapping[int, Any], device_time: str
) -> TraceSummary:
    """The summary of the traces of `ordered` (in rank order) taken as one, whose merged
    metadata is `metadata`."""
    starts = [p.start_ns for p in ordered if p.start_ns is not None]
    ends = [p.end_ns for p in ordered if p.end_ns is not None]
    start, end = (min(starts), max(ends)) if starts else (0, 0)
    names = device_names(metadata)
    device_ids = sorted(set().union(*(p.device_ids for p in ordered)))
    return TraceSummary(
        sources=tuple(s for p in ordered for s in p.sources),
        format=",".join(sorted({p.format for p in ordered})),
        events=sum(p.events for p in ordered),
        counters=sum(p.counters for p in ordered),
        flows=sum(p.flows for p in ordered),
        start_ns=start,
        end_ns=end,
        span_ns=end - start,
        ranks=tuple(sorted(set().union(*(p.ranks for p in ordered)))),
        devices={str(d): names.get(d, "") for d in device_ids},
        categories=_ordered_counts(sum((Counter(p.categories) for p in ordered), Counter())),
        kinds=_ordered_counts(sum((Counter(p.kinds) for p in ordered), Counter())),
        steps=tuple(sorted(set().union(*(p.steps for p in ordered)))),
        device_time=device_time,
    )


def summarize(trace: Trace) -> TraceSummary:
    """Summarize `trace` (no side effects)."""
    return summary_of_parts([trace_part(trace)], trace.metadata, trace.device_time or "")
