"""Write a `Trace` as Kineto-compatible Chrome-trace JSON (`.json`, or gzip by `.gz` suffix).

The output looks like what modern torch.profiler writes, so HTA, chrome://tracing,
ui.perfetto.dev and our own loader read it: the object form with `schemaVersion`,
`deviceProperties`, the run's other metadata (`distributedInfo`, ...), `displayTimeUnit`,
`baseTimeNanoseconds`, our `hpuprof` block (with the schema version, docs/trace-keys.md),
then `traceEvents`: `M` events for process and thread names, then `X`/`i` events, `C`
counters and `s`/`t`/`f` flows.

Times are written exactly, as microseconds with three decimals ("12.345" = 12345 ns):
relative to the trace's `baseTimeNanoseconds` when it has one (modern Kineto); as integer
epoch microseconds when every time is a whole microsecond and there is no base (old Kineto);
otherwise a base is added (the whole second at or below the earliest time) so that the
numbers stay exact when a reader parses them as doubles.

Event `args` are the raw bytes kept by the loader, spliced in verbatim (never re-encoded).

A Chrome-trace file holds one rank. A multi-rank trace is written to a directory, one
`rank-<R>.json.gz` (or `.json`) per rank; asking for a single file raises `UsageError`.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import orjson
import pandas as pd

from hpuprof.errors import UsageError
from hpuprof.trace.atomic_write import atomic_output
from hpuprof.trace.formats import KINETO_JSON
from hpuprof.trace.schema import METADATA_KEY, NO_ID, SCHEMA_VERSION

if TYPE_CHECKING:
    from hpuprof.trace.model import Trace

Progress = Callable[[int, int], None]

_EXACT_DOUBLE: Final = 2**53
_CHUNK: Final = 20000
_LAST_KEYS: Final = ("displayTimeUnit", "baseTimeNanoseconds", METADATA_KEY)
_SKIPPED_KEYS: Final = frozenset({"traceEvents", "traceName", "schemaVersion", "deviceProperties"})


def _json(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except TypeError:  # integers beyond 64 bits, or values orjson does not know
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str).encode()


def _id_or_text(text: str) -> bytes:
    """A pid/tid/flow id as JSON: a bare number when the text is a canonical integer."""
    body = text[1:] if text.startswith("-") else text
    if body.isdigit() and body.isascii() and (body == "0" or not body.startswith("0")):
        return text.encode()
    return _json(text)


def _encoded(series: pd.Series, encode: Callable[[Any], bytes]) -> list[bytes]:
    """Each value's JSON bytes, encoding each distinct value once."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        table = [encode(value) for value in series.cat.categories.tolist()]
        return [table[code] if code >= 0 else b'""' for code in series.cat.codes.tolist()]
    cache: dict[Any, bytes] = {}
    return [
        cache[v] if v in cache else cache.setdefault(v, encode(v))
        for v in series.astype(object).tolist()
    ]


class _Clock:
    """Turns int64 ns into the exact JSON number text for one rank's file."""

    def __init__(self, base: int | None, integer_us: bool) -> None:
        self.base = base
        self.integer_us = integer_us

    @classmethod
    def choose(cls, metadata: dict[str, Any], stamps: np.ndarray, spans: np.ndarray) -> _Clock:
        """Pick the encoding: `stamps` are absolute times, `spans` durations (both ns)."""
        base = metadata.get("baseTimeNanoseconds")
        usable = isinstance(base, int) and not isinstance(base, bool) and base != 0
        if usable and (not len(stamps) or int(np.abs(stamps - base).max()) < _EXACT_DOUBLE):
            return cls(base, False)
        if not np.any(stamps % 1000) and not np.any(spans % 1000):
            return cls(None, True)
        if int(np.abs(stamps).max()) < _EXACT_DOUBLE:
            return cls(None, False)
        return cls(int(stamps.min()) // 1_000_000_000 * 1_000_000_000, False)

    def ts(self, values: np.ndarray) -> list[bytes]:
        return self.span(values - self.base if self.base is not None else values)

    def span(self, values: np.ndarray) -> list[bytes]:
        if self.integer_us:
            return [str(v).encode() for v in (values // 1000).tolist()]
        out = []
        for v in values.tolist():
            q, r = divmod(abs(v), 1000)
            out.append(f"{'-' if v < 0 else ''}{q}.{r:03d}".encode())
        return out


def _metadata_events(trace: Trace, rank: int) -> Iterator[bytes]:
    specs = (
        (trace.processes, ("pid",), "process"),
        (trace.threads, ("pid", "tid"), "thread"),
    )
    for table, keys, prefix in specs:
        if table is None or table.empty or not set(keys) <= set(table.columns):
            continue
        rows = table[table["rank"] == rank] if "rank" in table.columns else table
        for record in rows.to_dict("records"):
            where = b"".join(
                b',"%s":%s' % (key.encode(), _id_or_text(str(record[key]))) for key in keys
            )
            if "tid" not in keys:
                where += b',"tid":0'
            for column, arg in (
                ("name", "name"),
                ("labels", "labels"),
                ("sort_index", "sort_index"),
            ):
                value = record.get(column)
                absent = value is None or value == "" or (column == "sort_index" and value == NO_ID)
                if absent or (isinstance(value, float) and np.isnan(value)):
                    continue
                name = f"{prefix}_{column}".encode()
                payload = _json(value.item() if isinstance(value, np.generic) else value)
                yield b'{"ph":"M","name":"%s"%s,"args":{"%s":%s}}' % (
                    name,
                    where,
                    arg.encode(),
                    payload,
                )


def _slice_events(events: pd.DataFrame, clock: _Clock) -> Iterator[bytes]:
    if events.empty:
        return
    names = _encoded(events["name"], _json)
    cats = _encoded(events["cat"], lambda c: b',"cat":' + _json(c) if c else b"")
    phs = events["ph"].astype(object).tolist()
    pids = _encoded(events["pid"], lambda v: _id_or_text(str(v)))
    tids = _encoded(events["tid"], lambda v: _id_or_text(str(v)))
    ts = clock.ts(events["ts_ns"].to_numpy())
    durs = clock.span(events["dur_ns"].to_numpy())
    dur_raw = events["dur_ns"].to_numpy().tolist()
    args = events["args"].tolist() if "args" in events.columns else [b""] * len(events)
    for i in range(len(events)):
        ph = phs[i]
        parts = [b'{"ph":"', ph.encode(), b'"', cats[i], b',"name":', names[i]]
        parts += [b',"pid":', pids[i], b',"tid":', tids[i], b',"ts":', ts[i]]
        if ph == "X" or dur_raw[i]:
            parts += [b',"dur":', durs[i]]
        if args[i]:
            parts += [b',"args":', bytes(args[i])]
        parts.append(b"}")
        yield b"".join(parts)


def _counter_events(counters: pd.DataFrame, clock: _Clock) -> Iterator[bytes]:
    if counters.empty:
        return
    keys = ["name", "cat", "pid", "tid", "ts_ns"]
    frame = (
        counters[keys]
        .astype(object)
        .assign(series=counters["series"].astype(object), value=counters["value"].to_numpy())
    )
    # one C event per (name, cat, pid, tid, ts) holds its series; a series seen twice at one
    # time (two C events in the source) opens another event, so no row is lost
    groups: dict[tuple[Any, ...], dict[str, Any]] = {}
    for name, cat, pid, tid, ts, series, value in frame.itertuples(index=False, name=None):
        key: tuple[Any, ...] = (name, cat, pid, tid, int(ts), 0)
        while series in groups.get(key, ()):
            key = (*key[:5], key[5] + 1)
        groups.setdefault(key, {})[series] = float(value)
    stamps = clock.ts(np.array([key[4] for key in groups], dtype=np.int64))
    for (name, cat, pid, tid, _, _), stamp, values in zip(
        groups, stamps, groups.values(), strict=True
    ):
        parts = [b'{"ph":"C","name":', _json(name), b',"cat":' + _json(cat) if cat else b""]
        parts += [b',"pid":', _id_or_text(str(pid)), b',"tid":', _id_or_text(str(tid))]
        parts += [b',"ts":', stamp, b',"args":', _json(values), b"}"]
        yield b"".join(parts)


def _flow_events(flows: pd.DataFrame, clock: _Clock) -> Iterator[bytes]:
    if flows.empty:
        return
    stamps = clock.ts(flows["ts_ns"].to_numpy())
    columns = ["ph", "id", "cat", "name", "pid", "tid", "binding"]
    rows = flows[columns].astype(object).itertuples(index=False, name=None)
    for (ph, fid, cat, name, pid, tid, binding), stamp in zip(rows, stamps, strict=True):
        parts = [b'{"ph":', _json(ph), b',"id":', _id_or_text(str(fid))]
        parts += [b',"cat":', _json(cat), b',"name":', _json(name)]
        parts += [b',"pid":', _id_or_text(str(pid)), b',"tid":', _id_or_text(str(tid))]
        parts += [b',"ts":', stamp]
        if binding:
            parts += [b',"bp":', _json(binding)]
        parts.append(b"}")
        yield b"".join(parts)


def _rank_rows(frame: pd.DataFrame, rank: int, single: bool) -> pd.DataFrame:
    if single or frame.empty or "rank" not in frame.columns:
        return frame
    return frame[frame["rank"].to_numpy() == rank]


def _header(metadata: dict[str, Any], clock: _Clock, rank: int) -> bytes:
    from hpuprof import __version__

    head: dict[str, Any] = {
        "schemaVersion": metadata.get("schemaVersion", 1),
        "deviceProperties": metadata.get("deviceProperties", []),
    }
    for key, value in metadata.items():
        if key not in _SKIPPED_KEYS and key not in _LAST_KEYS:
            head[key] = value
    head["displayTimeUnit"] = metadata.get("displayTimeUnit", "ms")
    if clock.base is not None:
        head["baseTimeNanoseconds"] = clock.base
    ours = dict(metadata.get(METADATA_KEY) or {})
    ours["schema"] = SCHEMA_VERSION
    ours["rank"] = rank  # the loader's rank source when there is no distributedInfo
    ours.setdefault("version", __version__)
    head[METADATA_KEY] = ours
    return _json(head)[:-1]  # leave the object open for traceEvents


def _write_rank(
    trace: Trace, rank: int, single: bool, path: Path, progress: Progress | None
) -> None:
    metadata = dict(trace.metadata.get(rank, {}))
    events = _rank_rows(trace.events, rank, single)
    counters = _rank_rows(trace.counters, rank, single)
    flows = _rank_rows(trace.flows, rank, single)
    stamps = np.concatenate(
        [frame["ts_ns"].to_numpy(dtype=np.int64) for frame in (events, counters, flows)]
    )
    clock = _Clock.choose(metadata, stamps, events["dur_ns"].to_numpy(dtype=np.int64))
    body = [
        _metadata_events(trace, rank),
        _slice_events(events, clock),
        _counter_events(counters, clock),
        _flow_events(flows, clock),
    ]
    total = len(events) + len(counters) + len(flows)
    with atomic_output(path) as raw:
        out: Any = (
            gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=5, mtime=0)
            if path.name.lower().endswith(".gz")
            else raw
        )
        out.write(_header(metadata, clock, rank) + b',\n"traceEvents":[\n')
        chunk: list[bytes] = []
        written = 0
        first = True
        for source in body:
            for line in source:
                chunk.append(line)
                if len(chunk) >= _CHUNK:
                    out.write((b"" if first else b",\n") + b",\n".join(chunk))
                    first, written, chunk = False, written + len(chunk), []
                    if progress is not None:
                        progress(written, total)
        if chunk:
            out.write((b"" if first else b",\n") + b",\n".join(chunk))
        name = metadata.get("traceName")
        out.write(b"\n]" + (b',"traceName":' + _json(name) if name is not None else b"") + b"}\n")
        if out is not raw:
            out.close()
    if progress is not None:
        progress(total, total)


def trace_ranks(trace: Trace) -> list[int]:
    """The ranks present in any table (or in the metadata), sorted."""
    ranks: set[int] = set(trace.metadata)
    for frame in (trace.events, trace.counters, trace.flows):
        if not frame.empty and "rank" in frame.columns:
            ranks.update(int(r) for r in pd.unique(frame["rank"]))
    return sorted(ranks) or [0]


def write_chrome_json(
    trace: Trace,
    path: str | os.PathLike[str],
    *,
    suffix: str = ".json.gz",
    progress: Progress | None = None,
) -> list[Path]:
    """Write `trace` as Kineto-compatible Chrome-trace JSON, atomically.

    Args:
        trace: the trace.
        path: a `.json` / `.json.gz` / `.gz` file for a one-rank trace, or a directory (existing, or
            given with a trailing separator) for one `rank-<R><suffix>` file per rank.
        suffix: the file suffix used inside a directory (`.json.gz` or `.json`).
        progress: optional callback `(done, total)` over written events, per file.

    Returns:
        The files written.
    """
    target = Path(path)
    ranks = trace_ranks(trace)
    as_directory = target.is_dir() or str(path).endswith((os.sep, "/"))
    if not as_directory:
        if len(ranks) > 1:
            raise UsageError(
                f"{target}: this trace has {len(ranks)} ranks and a Chrome-trace file holds"
                " one; give a directory to write one file per rank"
            )
        if not target.name.lower().endswith(KINETO_JSON.suffixes):
            raise UsageError(
                f"{target}: a Chrome-trace file ends in {', '.join(KINETO_JSON.suffixes)}"
            )
        _write_rank(trace, ranks[0], True, target, progress)
        return [target]
    written = []
    for rank in ranks:
        file = target / f"rank-{rank}{suffix}"
        _write_rank(trace, rank, len(ranks) == 1, file, progress)
        written.append(file)
    return written


def write_trace(trace: Trace, path: Path, progress: Progress | None = None) -> list[Path]:
    """The writer of `formats.KINETO_JSON` (`write_chrome_json`)."""
    return write_chrome_json(trace, path, progress=progress)
