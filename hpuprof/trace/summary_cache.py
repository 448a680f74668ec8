"""The summaries of trace files, cached beside the load cache: a second `hpuprof info DIR`
over 10,000 small rank files reads one small JSON file per trace instead of its events table,
and a second `hpuprof info FILE` prints the file's summary without loading it (nor importing
pandas: 1 s of its 1.3 s on a small trace; start-up time, issue 27).

Where: `<cache dir>/summaries/`, one JSON file per trace state and kind (a directory's part of
a rank file, `TracePart`; a file's own summary, `TraceSummary`), named like its load cache
entry (`cache.entry_path`: the trace's path, size, mtime and the loader's versions), so any
change to the trace or the loader misses. Entries are a few hundred bytes and are not counted by
the load cache's size trim. Only what was made without a warning is cached (a cached answer
would silence the warning on the next run). Nothing here ever fails a command: an unreadable or
unwritable entry is skipped. Entries are written without fsync: an entry a crash left empty or
torn does not parse, and is made again.
"""

from __future__ import annotations

import contextlib
import json
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from hpuprof.errors import HpuprofError
from hpuprof.trace.cache import entry_path
from hpuprof.trace.summary import TracePart, TraceSummary

VERSION = 1
"""Bump when `TracePart` changes."""
SUMMARY_VERSION = 1
"""Bump when `TraceSummary` changes."""

Made = TypeVar("Made")


def summary_path(source: Path, kind: str = "") -> Path:
    """Where the cached summary part (or, with `kind="summary"`, the file's own summary) of
    `source` in its current state lives."""
    entry = entry_path(source)
    version = f".{kind}.v{SUMMARY_VERSION}" if kind else f".v{VERSION}"
    return entry.parent / "summaries" / f"{entry.stem}{version}.json"


def read_part(source: Path) -> TracePart | None:
    """The cached summary part of `source`, or None."""
    try:
        data = json.loads(summary_path(source).read_bytes())
        return _part_from_json(data)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def write_part(source: Path, part: TracePart) -> None:
    """Cache `part` as the summary part of `source` (silently skipped when it cannot be)."""
    _write(source, lambda: _part_to_json(part))


def _write(source: Path, data: Callable[[], Any], kind: str = "") -> None:
    from hpuprof.trace.atomic_write import atomic_output

    with contextlib.suppress(HpuprofError, OSError, ValueError, TypeError):
        text = json.dumps(data())
        with atomic_output(summary_path(source, kind), durable=False) as handle:
            handle.write(text.encode())


def noting_warnings(make: Callable[[], Made]) -> tuple[Made, bool]:
    """`make()`, and whether it warned; its warnings are shown as they would have been."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        made = make()
    for warning in caught:
        warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    return made, bool(caught)


def file_summary(source: Path, summarize: Callable[[], TraceSummary], cache: bool) -> TraceSummary:
    """The summary of the trace file `source`: its cached one when `cache` and there is one
    (nothing loaded), else `summarize()`, then cached when it warned of nothing."""
    if cache:
        try:
            return _summary_from_json(json.loads(summary_path(source, "summary").read_bytes()))
        except (OSError, ValueError, KeyError, TypeError):
            pass
    made, warned = noting_warnings(summarize)
    if cache and not warned:
        _write(source, made.to_dict, "summary")
    return made


def _summary_from_json(data: dict[str, Any]) -> TraceSummary:
    return TraceSummary(
        sources=tuple(str(s) for s in data["sources"]),
        format=str(data["format"]),
        events=int(data["events"]),
        counters=int(data["counters"]),
        flows=int(data["flows"]),
        start_ns=int(data["start_ns"]),
        end_ns=int(data["end_ns"]),
        span_ns=int(data["span_ns"]),
        ranks=tuple(int(r) for r in data["ranks"]),
        devices={str(k): str(v) for k, v in data["devices"].items()},
        categories={str(k): int(v) for k, v in data["categories"].items()},
        kinds={str(k): int(v) for k, v in data["kinds"].items()},
        steps=tuple(int(s) for s in data["steps"]),
        device_time=str(data["device_time"]),
    )


def _part_to_json(part: TracePart) -> dict[str, Any]:
    return {
        "rank": part.rank,
        "ranks": sorted(part.ranks),
        "metadata": [[rank, meta] for rank, meta in part.metadata.items()],
        "sources": list(part.sources),
        "format": part.format,
        "events": part.events,
        "counters": part.counters,
        "flows": part.flows,
        "start_ns": part.start_ns,
        "end_ns": part.end_ns,
        "device_ids": sorted(part.device_ids),
        "steps": sorted(part.steps),
        "categories": dict(part.categories),
        "kinds": dict(part.kinds),
    }


def _part_from_json(data: dict[str, Any]) -> TracePart:
    return TracePart(
        rank=int(data["rank"]),
        ranks=frozenset(int(r) for r in data["ranks"]),
        metadata={int(rank): meta for rank, meta in data["metadata"]},
        sources=tuple(str(s) for s in data["sources"]),
        format=str(data["format"]),
        events=int(data["events"]),
        counters=int(data["counters"]),
        flows=int(data["flows"]),
        start_ns=None if data["start_ns"] is None else int(data["start_ns"]),
        end_ns=None if data["end_ns"] is None else int(data["end_ns"]),
        device_ids=frozenset(int(d) for d in data["device_ids"]),
        steps=frozenset(int(s) for s in data["steps"]),
        categories={str(k): int(v) for k, v in data["categories"].items()},
        kinds={str(k): int(v) for k, v in data["kinds"].items()},
    )
