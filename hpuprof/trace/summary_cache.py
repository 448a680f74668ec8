"""The summary parts of trace files, cached beside the load cache: a second `hpuprof info DIR`
over 10,000 small rank files reads one small JSON file per trace instead of its events table.

Where: `<cache dir>/summaries/`, one JSON file per trace state, named like its load cache entry
(`cache.entry_path`: the trace's path, size, mtime and the loader's versions), so any change to
the trace or the loader misses. Entries are a few hundred bytes and are not counted by the load
cache's size trim. Nothing here ever fails a command: an unreadable or unwritable entry is skipped.
Entries are written without fsync: an entry a crash left empty or torn does not parse, and is
made again.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from hpuprof.errors import HpuprofError
from hpuprof.trace.atomic_write import atomic_output
from hpuprof.trace.cache import entry_path
from hpuprof.trace.summary import TracePart

VERSION = 1
"""Bump when `TracePart` changes."""


def summary_path(source: Path) -> Path:
    """Where the cached summary part of `source` in its current state lives."""
    entry = entry_path(source)
    return entry.parent / "summaries" / f"{entry.stem}.v{VERSION}.json"


def read_part(source: Path) -> TracePart | None:
    """The cached summary part of `source`, or None."""
    try:
        data = json.loads(summary_path(source).read_bytes())
        return _part_from_json(data)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def write_part(source: Path, part: TracePart) -> None:
    """Cache `part` as the summary part of `source` (silently skipped when it cannot be)."""
    with contextlib.suppress(HpuprofError, OSError, ValueError, TypeError):
        text = json.dumps(_part_to_json(part))
        with atomic_output(summary_path(source), durable=False) as handle:
            handle.write(text.encode())


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
