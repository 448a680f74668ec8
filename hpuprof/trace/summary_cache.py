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

The worker processes of `info DIR` (`part_workers`) store the parts of a task's files (32 in
file order) in one entry named by all their states (`cached_parts`): creating a file cost
0.5-1 CPU-ms on a busy machine, as much as summarizing a small trace. A file added at the
end of a folder makes only the last task's entry again; one added in the middle, those after it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import warnings
from collections.abc import Callable, Sequence
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


def cached_part(source: Path, make: Callable[[], TracePart | None]) -> TracePart | None:
    """The cached summary part of `source`, else `make()`, cached when it is not None."""
    return _cached(source, "", _part_from_json, lambda: _kept_if_made(make()), _part_to_json)


def cached_parts(
    sources: Sequence[Path], make: Callable[[Path], TracePart | None]
) -> list[TracePart | None]:
    """The summary parts of `sources` from their one shared entry, else `make(source)` for each
    (None where it gave None: the caller loads those fully), stored together."""
    try:
        states = "|".join(summary_path(source).name for source in sources)
    except (HpuprofError, OSError):
        return [make(source) for source in sources]
    key = hashlib.sha256(states.encode(errors="surrogateescape")).hexdigest()[:24]
    entry = summary_path(sources[0]).parent / f"parts-{len(sources)}-{key}.v{VERSION}.json"
    try:
        stored = json.loads(entry.read_bytes())
        if len(stored) == len(sources):
            return [None if data is None else _part_from_json(data) for data in stored]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    parts = [make(source) for source in sources]
    _write(entry, lambda: [None if part is None else _part_to_json(part) for part in parts])
    return parts


def loaded_part(source: Path, load: Callable[[], TracePart]) -> TracePart:
    """The cached summary part of `source`, else `load()` (its warnings shown), cached when it
    warned of nothing (a cached part would silence the warning on the next run)."""
    return _cached(source, "", _part_from_json, lambda: _kept_unless_warned(load), _part_to_json)


def _kept_if_made(part: TracePart | None) -> tuple[TracePart | None, bool]:
    return part, part is not None


def _cached(
    source: Path,
    kind: str,
    from_json: Callable[[Any], Made],
    make: Callable[[], tuple[Made, bool]],
    to_json: Callable[[Any], Any],
) -> Made:
    """The entry of `source` of `kind` read by `from_json`, else the first of `make()`, stored
    (`to_json`) when its second says to. The entry's name (the file's state) is taken once,
    before `make` reads the file: a file changed meanwhile is stored under its old state."""
    try:
        entry: Path | None = summary_path(source, kind)
    except (HpuprofError, OSError):
        entry = None
    if entry is not None:
        try:
            return from_json(json.loads(entry.read_bytes()))
        except (OSError, ValueError, KeyError, TypeError):
            pass
    made, keep = make()
    if entry is not None and keep:
        _write(entry, lambda: to_json(made))
    return made


def _write(entry: Path, data: Callable[[], Any]) -> None:
    from hpuprof.trace.atomic_write import atomic_output

    with contextlib.suppress(HpuprofError, OSError, ValueError, TypeError):
        text = json.dumps(data())
        with atomic_output(entry, durable=False) as handle:
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
    if not cache:
        return noting_warnings(summarize)[0]  # (its warnings shown as when cached)
    return _cached(
        source,
        "summary",
        _summary_from_json,
        lambda: _kept_unless_warned(summarize),
        TraceSummary.to_dict,
    )


def _kept_unless_warned(make: Callable[[], Made]) -> tuple[Made, bool]:
    made, warned = noting_warnings(make)
    return made, not warned


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
