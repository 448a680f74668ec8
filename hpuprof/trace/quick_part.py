"""The summary part of a small Kineto JSON file from its raw columns, without the events table.

`hpuprof info DIR` over 10,000 small rank files spent ~70 ms a file building each file's full
`Trace` (thirty-odd normalized and derived columns, pandas frames, a thread pool) to count its
events, kinds and categories. A `summary.TracePart` needs far less: the rows kept, their times,
kinds, devices and steps. This module takes those from the loader's scan
(`kineto_json.read_raw`) by the normalizer's own rules (its `_Normalizer` steps, called in the
order `build` calls them, on the same raw columns), so the part equals
`trace_part(load_file(path))`; `tests/trace/test_quick_part.py` checks that on every sample,
the shared real traces and generated ones.

`quick_part` answers None (load the file fully instead) when
- the file is not Kineto JSON, or is larger than `QUICK_MAX_BYTES`;
- reading it warns (truncated, negative durations, ...) or raises: the full load says it, once.
Process names are read as `_Normalizer._names` reads them, without its tables; thread names are
not (they name only the engines of Gaudi device lanes, which a summary does not count).
"""

from __future__ import annotations

import warnings
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import numpy as np
from numpy.typing import NDArray

from hpuprof.errors import HpuprofError
from hpuprof.path_text import path_text
from hpuprof.trace.formats import KINETO_JSON, format_of
from hpuprof.trace.heap import trimming_paused
from hpuprof.trace.schema import EVENT_KINDS, NO_ID
from hpuprof.trace.summary import TracePart

if TYPE_CHECKING:
    import pandas as pd

    from hpuprof.trace.normalize import _Normalizer

Int64s = NDArray[np.int64]

QUICK_MAX_BYTES: Final = 4 << 20
"""Files up to this size are summarized from their raw columns (one scan chunk, one thread);
larger ones are loaded fully, where the normalizer's threads pay off and the load cache helps."""


def quick_part(path: Path) -> TracePart | None:
    """The summary part of the trace file `path`, or None where it must be loaded fully (see
    the module docstring)."""
    try:
        if path.stat().st_size > QUICK_MAX_BYTES or format_of(path) is not KINETO_JSON:
            return None
    except (OSError, HpuprofError):
        return None
    with warnings.catch_warnings(record=True) as caught, trimming_paused():
        warnings.simplefilter("always")
        try:
            part = _raw_part(path)
        except HpuprofError:  # the full load raises it, with its own context
            return None
    return None if caught else part


def _raw_part(path: Path) -> TracePart | None:
    """`build`'s steps that the part reads, on the raw columns of `path`."""
    from hpuprof.trace.kineto_json import read_raw
    from hpuprof.trace.normalize import (
        _DEVICE_KIND,
        _INT32_MAX,
        _INT32_MIN,
        _code_mask,
        _Normalizer,
        detect_rank,
        ns_from_us,
    )

    decoded = read_raw(path, None, 1)
    if decoded.truncated is not None:
        return None
    raw, metadata, source = decoded.columns, decoded.metadata, path_text(path)
    normalizer = _Normalizer(raw, metadata, source)
    rank = detect_rank(metadata, source)
    ph = raw.ph
    if not _INT32_MIN <= rank <= _INT32_MAX:
        return None
    processes = _process_names(normalizer)
    timed = ~_code_mask(ph, {"M"})
    if np.isnan(raw.ts_us[timed]).any():
        return None
    dur_ns, past_int64 = normalizer._durations()
    ts_scaled = raw.ts_us * 1000.0
    reach = np.maximum(np.abs(ts_scaled), np.abs(ts_scaled + normalizer.base))
    normalizer._check_range(np.where(timed, reach, 0.0), "ts")
    if past_int64 is not None:
        return None
    ts_ns = np.zeros(len(raw), dtype=np.int64)
    ts_ns[timed] = ns_from_us(raw.ts_us[timed], normalizer.base)
    normalizer._negative_durations(dur_ns)
    rows, dur_ns = normalizer._slice_rows(ts_ns, dur_ns)
    trace_format = normalizer._format(list(processes.values()))
    counter_rows = np.flatnonzero(_code_mask(ph, {"C"}))
    counters = len(normalizer._counters(counter_rows, ts_ns, rank)) if len(counter_rows) else 0
    flow_rows = np.flatnonzero(_code_mask(ph, {"s", "t", "f"}))
    ts, dur = ts_ns[rows], dur_ns[rows]
    rows, ts, dur, correlation, instant = _in_order(normalizer, rows, ts, dur, flow_rows, ts_ns)
    kind, _, device, _ = normalizer._device_columns(
        rows, raw.pid.codes[rows], raw.tid.codes[rows], instant, processes, _no_threads()
    )
    is_device = _DEVICE_KIND[kind]
    step = normalizer._steps(raw.name, raw.hpu_event, kind, rows, ts, dur, is_device, correlation)
    start = end = None
    if len(rows):
        start, end = int(ts.min()), int((ts + dur).max())
    return TracePart(
        rank=rank,
        ranks=frozenset({rank}),
        metadata={rank: dict(metadata)},
        sources=(source,),
        format=trace_format,
        events=len(rows),
        counters=counters,
        flows=len(flow_rows),
        start_ns=start,
        end_ns=end,
        device_ids=frozenset(int(d) for d in np.unique(device[is_device]) if d != NO_ID),
        steps=frozenset(int(s) for s in np.unique(step) if s != NO_ID),
        categories=_counts(raw.cat.codes[rows], raw.cat.categories),
        kinds=_counts(kind, EVENT_KINDS),
    )


def _process_names(normalizer: _Normalizer) -> dict[str, str]:
    """pid -> process name, from the metadata events as `_Normalizer._names` reads them (with
    its warnings and errors)."""
    from hpuprof.trace.normalize import _code_mask

    rows = np.flatnonzero(_code_mask(normalizer.raw.ph, {"M"}))
    names: list[str] = normalizer.raw.name.values(rows).tolist()
    pids: list[Any] = normalizer.raw.pid.values(rows).tolist()
    processes: dict[str, str] = {}
    for row, name, pid in zip(rows.tolist(), names, pids, strict=True):
        args = normalizer._side_args(row)
        if not name.startswith(("process_", "thread_")):
            continue
        if name.startswith("process_"):
            processes.setdefault(str(pid), "")
        if name.endswith("_name") and name.startswith("process_"):
            processes[str(pid)] = str(args.get("name", ""))
        elif name.endswith("_sort_index"):
            normalizer._sort_index(row, args.get("sort_index"))  # (its warning)
    return processes


@cache
def _no_threads() -> pd.DataFrame:
    """An empty thread table: thread names give only the engines of Gaudi device lanes, which a
    summary does not count."""
    import pandas as pd

    return pd.DataFrame({"pid": [], "tid": [], "name": []}, dtype=object)


def _in_order(
    normalizer: _Normalizer,
    rows: Int64s,
    ts: Int64s,
    dur: Int64s,
    flow_rows: Int64s,
    ts_ns: Int64s,
) -> tuple[Int64s, Int64s, Int64s, Int64s, NDArray[np.bool_]]:
    """The events' rows, starts and durations in the table's order, their correlation (with
    launch flows bound to slices, as `_Normalizer._events` binds them) and which are instants."""
    from hpuprof.trace.nesting import lane_order, nest, time_order
    from hpuprof.trace.normalize import _code_mask, _Lanes

    raw = normalizer.raw
    order = time_order(ts, dur)
    rows, ts, dur = rows[order], ts[order], dur[order]
    instant = _code_mask(raw.ph, {"i", "I"}, rows)
    correlation = raw.correlation[rows].astype(np.int64)
    if len(flow_rows):
        lane = raw.pid.codes[rows].astype(np.int64) * max(len(raw.tid.categories), 1)
        lane += raw.tid.codes[rows]
        by_lane = lane_order(lane)
        lanes = _Lanes(by_lane, lane[by_lane], ts[by_lane], (ts + dur)[by_lane])
        _, parent_l = nest(lanes.lane, lanes.start, lanes.end)
        flow_ts = ts_ns[flow_rows]
        normalizer._flow_correlation(correlation, flow_rows, flow_ts, lanes, instant, parent_l)
    return rows, ts, dur, correlation, instant


def _counts(codes: NDArray[np.integer[Any]], names: Any) -> dict[str, int]:
    """How many of `codes` hold each code, by the name of the code (codes held by none left
    out)."""
    counts = np.bincount(codes.astype(np.int64), minlength=1)
    return {str(names[i]): int(counts[i]) for i in np.flatnonzero(counts).tolist()}
