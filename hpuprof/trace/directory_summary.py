"""`hpuprof info DIR` over many rank files: each file summarized on its own and the parts merged,
never one combined `Trace` (whose concatenation of 10,000 small tables cost more than the loads).

The merged summary equals `summarize(combine(traces))`: ranks numbered as `combine` numbers them
(0..n-1 in file order, with its warning, when files share a rank), metadata merged in rank order
(device names and the stated device time come from it), counts summed, spans widened.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from hpuprof.trace import summary
from hpuprof.trace.model import Trace, stated_device_time
from hpuprof.trace.summary import (
    TracePart,
    TraceSummary,
    summary_of_parts,
    trace_part,
)


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
    return summary_of_parts(ordered, metadata, stated_device_time(metadata) or "")


def summarize_files(
    files: Sequence[Path],
    load_one: Callable[[Path], Trace],
    advance: Callable[[int], None] | None = None,
    *,
    cache: bool = True,
) -> TraceSummary:
    """The summary of the rank files `files`, each loaded by `load_one` and dropped (or, with
    `cache`, its part read from `summary_cache` when there); `advance` is called with each
    file's size once it is done."""
    if len(files) == 1:  # (its loader's device time, as before)
        from hpuprof.trace.summary_cache import file_summary

        return file_summary(files[0], lambda: summary.summarize(load_one(files[0])), cache)
    return merge_parts(list(_parts(files, load_one, advance, cache)))


def _parts(
    files: Sequence[Path],
    load_one: Callable[[Path], Trace],
    advance: Callable[[int], None] | None,
    cache: bool,
) -> Iterable[TracePart]:
    """Each file's part, in file order: cached, else from its raw columns (`quick_part`: small
    Kineto JSON files; over worker processes when there are many, `part_workers`), else from its
    full load here, whose warnings are shown in file order."""
    from hpuprof.trace.part_workers import quick_parts

    for path, quick in zip(files, quick_parts(files, cache), strict=True):
        yield quick if quick is not None else _loaded_part(path, load_one, cache)
        if advance is not None:
            advance(path.stat().st_size)


def _loaded_part(path: Path, load_one: Callable[[Path], Trace], cache: bool) -> TracePart:
    """The summary part of `path` from its full load (or, with `cache`, its cached part; one
    is cached only when its load warned of nothing)."""
    from hpuprof.trace.summary_cache import loaded_part, noting_warnings

    if cache:
        return loaded_part(path, lambda: trace_part(load_one(path)))
    return noting_warnings(lambda: trace_part(load_one(path)))[0]
