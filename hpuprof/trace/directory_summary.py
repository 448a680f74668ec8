"""`hpuprof info DIR` over many rank files: each file summarized on its own and the parts merged,
never one combined `Trace` (whose concatenation of 10,000 small tables cost more than the loads).

The merged summary equals `summarize(combine(traces))`: ranks numbered as `combine` numbers them
(0..n-1 in file order, with its warning, when files share a rank), metadata merged in rank order
(device names and the stated device time come from it), counts summed, spans widened.
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hpuprof.trace.model import Trace, stated_device_time
from hpuprof.trace.schema import NO_ID
from hpuprof.trace.summary import TraceSummary, device_names, summarize


@dataclass(frozen=True)
class TracePart:
    """What one rank file adds to a directory's summary."""

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
    """The summary part of one rank file's `trace`."""
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
    """`counts` in the order `summarize` gives a combined trace's (a categorical column with
    sorted categories, through `value_counts`), so that ties come out alike."""
    names = sorted(counts)
    codes = np.repeat(np.arange(len(names)), [counts[n] for n in names])
    column = pd.Series(pd.Categorical.from_codes(codes, categories=pd.Index(names, dtype="str")))
    return {str(k): int(v) for k, v in column.value_counts().items() if v}


def _renumbered(parts: Sequence[TracePart]) -> list[TracePart]:
    """`parts` ordered by rank, numbered 0..n-1 in file order (as `combine.combine` does) when
    files share a rank."""
    ranks = [p.rank for p in parts]
    if len(set(ranks)) != len(ranks):
        warnings.warn(
            f"rank traces share ranks {ranks}; numbering them 0..{len(ranks) - 1} in file order",
            stacklevel=3,
        )
        parts = [
            _relabelled(p, i, next(iter(p.metadata.values()), {})) for i, p in enumerate(parts)
        ]
    return sorted(parts, key=lambda p: p.rank)


def _relabelled(part: TracePart, rank: int, meta: Any) -> TracePart:
    from dataclasses import replace

    return replace(part, rank=rank, ranks=frozenset({rank}), metadata={rank: meta})


def merge_parts(parts: Sequence[TracePart]) -> TraceSummary:
    """The summary of the rank files of `parts` combined into one trace."""
    ordered = _renumbered(parts)
    metadata: dict[int, Any] = {}
    for part in ordered:
        metadata.update(part.metadata)
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
        device_time=stated_device_time(metadata) or "",
    )


def summarize_files(
    files: Sequence[Path],
    load_one: Callable[[Path], Trace],
    advance: Callable[[int], None] | None = None,
) -> TraceSummary:
    """The summary of the rank files `files` (each loaded by `load_one`, then dropped);
    `advance` is called with each file's size once it is done."""
    if len(files) == 1:
        return summarize(load_one(files[0]))
    return merge_parts(list(_parts(files, load_one, advance)))


def _parts(
    files: Iterable[Path], load_one: Callable[[Path], Trace], advance: Callable[[int], None] | None
) -> Iterable[TracePart]:
    for path in files:
        yield trace_part(load_one(path))
        if advance is not None:
            advance(path.stat().st_size)
