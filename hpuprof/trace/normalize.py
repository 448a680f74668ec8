"""Raw columns of one file -> the normalized tables of `schema.py` (done once, at load time).

Everything downstream reads the normalized columns; nothing looks at raw categories again:
- times: integer ns, `round(ts * 1000) + baseTimeNanoseconds` (integer and fraction handled
  apart so epoch µs stay exact and 4458676522690.655 µs gives ...690655 ns);
- B/E pairs become X slices (an unmatched B is kept with duration 0); `I` becomes `i`;
- kind / is_device / device / stream / engine from the category and, for real Gaudi traces,
  from the `/device:HPU` process and its engine thread names;
- depth / parent per (pid, tid) lane (`nesting.py`); instants take the depth and parent of
  the slice around them;
- correlation from args, else from launch flows (`ac2g`, `enqueue`, ...): the `s` end binds to
  the host slice enclosing it, the `f` end to the device slice, both get the flow id;
- step from `ProfilerStep#N` annotations or our `Step#N` step events; a device event takes the
  step of its correlated launch, else the step whose window holds its start.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pandas as pd
import pyarrow as pa
from numpy.typing import NDArray

from hpuprof.errors import TraceFormatError
from hpuprof.trace.arg_columns import marked_rows, value_column
from hpuprof.trace.categories import categorical, text_categorical
from hpuprof.trace.columns import (
    VALUE_ARGS,
    BadValue,
    Coded,
    RawColumns,
    code_width,
    take_binary,
    to_int64_ids,
)
from hpuprof.trace.derive import DataTypes, with_derived
from hpuprof.trace.heap import release_free_memory
from hpuprof.trace.memory_limit import threads_within_limit
from hpuprof.trace.model import Trace
from hpuprof.trace.nesting import enclosing, lane_bounds, lane_order, nest, time_order
from hpuprof.trace.schema import (
    ARG_VALUE_KEYS,
    COUNTER_COLUMNS,
    DEVICE_KINDS,
    ENGINE_KINDS,
    EVENT_COLUMNS,
    EVENT_KINDS,
    GAUDI_DEVICE_PROCESS_PREFIX,
    GAUDI_ENGINE_PREFIXES,
    KINETO_CATEGORY_KIND,
    LAUNCH_FLOW_CATEGORIES,
    METADATA_KEY,
    NO_ID,
    STEP_ANNOTATION_PREFIX,
    STEP_MARKER_PREFIX,
)
from hpuprof.trace.soon import after, soon

PROCESS_COLUMNS = ("rank", "pid", "name", "labels", "sort_index")
THREAD_COLUMNS = ("rank", "pid", "tid", "name", "sort_index")
LEGACY_CATEGORIES = frozenset({"Kernel", "Runtime", "Memcpy", "Memset"})
HOST_RUNTIME_PROCESSES = ("Bridge Logs", "Synapse Logger")
GAUDI_DEVICE_KIND = {
    "Kernel": "kernel",
    "kernel": "kernel",
    "Memcpy": "memcpy",
    "gpu_memcpy": "memcpy",
    "Memset": "memset",
    "gpu_memset": "memset",
    "gpu_user_annotation": "device_annotation",
}
_RANK_IN_NAME = re.compile(r"rank[-_]?(\d+)", re.IGNORECASE)
_STEP_NAME = re.compile(rf"(?:{STEP_ANNOTATION_PREFIX}|{STEP_MARKER_PREFIX})(\d+)")
_HPU_INDEX = re.compile(r"/device:HPU:(\d+)")
_DIE_PREFIX = re.compile(r"^\[[^\]]*\]\s*")
_FLOAT_MAX = float(np.finfo(np.float64).max)
_EPOCH_US = 1e14  # integer µs beyond this are epoch times (1973 onwards)
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_INT32_MIN, _INT32_MAX = -(1 << 31), (1 << 31) - 1
_NS_LIMIT = 9.2e18  # |ns| below this fits int64 (2^63 ~ 9.223e18), float rounding included
_KIND_CODE = {kind: code for code, kind in enumerate(EVENT_KINDS)}
_DEVICE_KIND = np.array([kind in DEVICE_KINDS for kind in EVENT_KINDS])
"""Whether each kind code is a device kind (indexed by the code)."""
_ENGINE_CODE = {engine: code for code, engine in enumerate(ENGINE_KINDS)}


def _kind_codes(kinds: Sequence[str]) -> NDArray[np.int8]:
    """int8 codes of kind names (one per category; a one-row table when there are none)."""
    return np.array([_KIND_CODE[k] for k in kinds] or [_KIND_CODE["other"]], dtype=np.int8)


def build_trace(
    raw: RawColumns, metadata: dict[str, Any], *, source: str, rank: int | None, threads: int = 1
) -> Trace:
    """Normalize the raw columns of one file into a `Trace` (rank detected unless given).

    With `threads` > 1, the parts that do not depend on one another (the durations, the
    flows table, the nesting, the device columns, the categorical columns, the steps) are
    built in other threads while this one follows the chain nesting -> flow correlation: the
    same tables, sooner (most of that work runs in numpy, Arrow or C without the GIL). The
    events' args are copied once the other raw columns are gone, and the derived columns are
    made after them, in this thread (`derive.with_derived`).
    """
    normalizer = _Normalizer(raw, metadata, source)
    if threads_within_limit(threads) <= 1:
        return normalizer.build(rank)
    with ThreadPoolExecutor(
        threads_within_limit(_POOL_THREADS), thread_name_prefix="hpuprof-normalize"
    ) as pool:
        normalizer.pool = pool
        return normalizer.build(rank)


_POOL_THREADS = 4
"""Threads of the normalizer's pool: enough that a part never queues behind another (the
cores are shared with the thread that submits them; the OS interleaves them)."""


@dataclass(frozen=True)
class _Lanes:
    """The events in lane order (by lane, then the events' order): their positions and their
    lane keys, starts and ends in that order."""

    by_lane: NDArray[np.int64]
    lane: NDArray[np.int64]
    start: NDArray[np.int64]
    end: NDArray[np.int64]


def detect_rank(metadata: Mapping[str, Any], source: str) -> int:
    """distributedInfo.rank, else our `hpuprof.rank`, else `rank-N` in the file name, else 0."""
    info = metadata.get("distributedInfo")
    if isinstance(info, dict) and isinstance(info.get("rank"), int):
        return int(info["rank"])
    ours = metadata.get(METADATA_KEY)
    if isinstance(ours, dict) and isinstance(ours.get("rank"), int):
        return int(ours["rank"])
    match = _RANK_IN_NAME.search(Path(source).name)
    return int(match.group(1)) if match else 0


def ns_from_us(values: NDArray[np.float64], base: int) -> NDArray[np.int64]:
    """µs (int or float) to integer ns plus `base`, exact for integers and ±1 ns for floats."""
    whole = np.floor(values)
    fraction = np.rint((values - whole) * 1000.0).astype(np.int64)
    return whole.astype(np.int64) * 1000 + fraction + base


def _code_mask(
    coded: Coded, wanted: set[str] | frozenset[str], rows: NDArray[np.int64] | None = None
) -> NDArray[np.bool_]:
    """Whether each row's value (of `rows` only, when given) is in `wanted`: up to 3 wanted
    codes compared, else one lookup per row in a per-category table."""
    codes = coded.codes if rows is None else coded.codes[rows]
    hits = [code for code, value in enumerate(coded.categories) if value in wanted]
    if not hits:
        return np.zeros(len(codes), dtype=bool)
    if len(hits) > 3:
        table = np.zeros(len(coded.categories), dtype=bool)
        table[hits] = True
        return table[codes]
    mask = codes == hits[0]  # a few compares: quicker than a lookup per row
    for code in hits[1:]:
        mask |= codes == code
    return mask


def _first_past_int64(ns: NDArray[np.float64]) -> int | None:
    """The first row of `ns` past int64 (or NaN), None when none is."""
    bad = np.flatnonzero(~(np.abs(ns) < _NS_LIMIT))
    return int(bad[0]) if len(bad) else None


def _as_int(text: str) -> int:
    """The integer a pid/tid text spells (NO_ID when none, or when past int64: the text stays)."""
    try:
        value = int(text)
    except ValueError:
        return NO_ID
    return value if _INT64_MIN <= value <= _INT64_MAX else NO_ID


def _base_ns(value: Any, source: str) -> int:
    """`baseTimeNanoseconds` as an int64 (0 when absent); `TraceFormatError` otherwise."""
    if value is None:
        return 0
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or not _INT64_MIN <= value <= _INT64_MAX
    ):
        raise TraceFormatError(
            source,
            "metadata key 'baseTimeNanoseconds'",
            f"an integer number of nanoseconds within int64 (found {str(value)[:40]})",
        )
    return value


class _Normalizer:
    def __init__(self, raw: RawColumns, metadata: dict[str, Any], source: str) -> None:
        self.raw = raw
        self.metadata = metadata
        self.source = source
        self.base = _base_ns(metadata.get("baseTimeNanoseconds"), source)
        self.pool: ThreadPoolExecutor | None = None  # builds independent parts meanwhile

    def _soon(self, function: Any, *args: Any) -> Future[Any]:
        """`function(*args)` in the pool, or done at once without one (see `soon`)."""
        return soon(self.pool, function, *args)

    # --- top level ---------------------------------------------------------------------------

    def build(self, rank: int | None) -> Trace:
        raw = self.raw
        rank = detect_rank(self.metadata, self.source) if rank is None else rank
        if not _INT32_MIN <= rank <= _INT32_MAX:
            raise TraceFormatError(self.source, "metadata", f"a rank within int32 (found {rank})")
        ph = raw.ph
        meta_rows = np.flatnonzero(_code_mask(ph, {"M"}))
        processes, threads = self._names(meta_rows, rank)
        timed = ~_code_mask(ph, {"M"})
        missing = np.flatnonzero(timed & np.isnan(raw.ts_us))
        if len(missing):
            raise TraceFormatError(self.source, f"event {missing[0]}", "a numeric 'ts' field")
        durations = self._soon(self._durations)  # (its error raises after the times')
        ts_ns = np.zeros(len(raw), dtype=np.int64)
        ts_scaled = raw.ts_us * 1000.0
        reach = np.maximum(np.abs(ts_scaled), np.abs(ts_scaled + self.base))
        self._check_range(np.where(timed, reach, 0.0), "ts")
        del ts_scaled, reach
        # the flows table needs only the flow rows' times: it starts before every row's exist
        flow_rows = np.flatnonzero(_code_mask(ph, {"s", "t", "f"}))
        flow_columns = {f: getattr(raw, f) for f in _FLOW_SOURCES}  # (raw columns get released)
        flow_us = raw.ts_us[flow_rows]
        flows = self._soon(_flows, flow_columns, flow_rows, flow_us, self.base, rank)
        del flow_columns, flow_us
        ts_ns[timed] = ns_from_us(raw.ts_us[timed], self.base)
        dur_ns, past_int64 = durations.result()
        del durations
        if past_int64 is not None:
            raise self._out_of_range(past_int64, "dur")
        self._negative_durations(dur_ns)

        rows, dur_ns = self._slice_rows(ts_ns, dur_ns)
        trace_format = self._format(processes["name"].tolist())
        raw.release("ts_us", "dur_us")
        del timed
        counters = self._counters(np.flatnonzero(_code_mask(ph, {"C"})), ts_ns, rank)
        # final order: (ts, -dur, file order); the lane order adds (pid, tid) in front
        order = time_order(ts_ns[rows], dur_ns[rows])  # rows ascend: ties keep the file order
        rows = rows[order]
        del order
        given = [rows, ts_ns[rows], dur_ns[rows], flow_rows, ts_ns[flow_rows]]
        del rows, flow_rows, ts_ns, dur_ns  # (file-length: gone before the events' temporaries)
        raw.release("bp", "side_args")
        events = self._events(given, rank, processes, threads)
        return Trace(
            events=events,
            counters=counters,
            flows=flows.result(),
            metadata={rank: dict(self.metadata)},
            processes=processes,
            threads=threads,
            sources=(self.source,),
            format=trace_format,
        )

    def _durations(self) -> tuple[NDArray[np.int64], int | None]:
        """Every row's duration in ns (0 but for X and instants: a B's comes from its E), and
        the first row whose duration is past int64 (None when none is)."""
        dur_us = np.nan_to_num(self.raw.dur_us, nan=0.0)
        dur_us[~_code_mask(self.raw.ph, {"X", "i", "I"})] = 0.0
        dur_us *= 1000.0
        past_int64 = _first_past_int64(dur_us)
        if past_int64 is not None:
            return np.zeros(0, dtype=np.int64), past_int64
        return np.rint(dur_us).astype(np.int64), None

    def _check_range(self, ns: NDArray[np.float64], field: str) -> None:
        """Raise at the first event whose `field` (as ns since the base) is past int64."""
        row = _first_past_int64(ns)
        if row is not None:
            raise self._out_of_range(row, field)

    def _out_of_range(self, row: int, field: str) -> TraceFormatError:
        value = (self.raw.ts_us if field == "ts" else self.raw.dur_us)[row]
        return TraceFormatError(
            self.source,
            f"event {row}",
            f"a '{field}' within int64 nanoseconds (±9.2e15 µs from the base time; "
            f"found {value!r} µs)",
        )

    def _negative_durations(self, dur_ns: NDArray[np.int64]) -> None:
        """Negative durations (a clock that went back) count as 0 ns, with a warning."""
        negative = np.flatnonzero(dur_ns < 0)
        if len(negative):
            import warnings

            warnings.warn(
                f"{self.source}: {len(negative)} events have a negative duration (the first: "
                f"event {int(negative[0])}); they count as 0 ns",
                stacklevel=5,
            )
            dur_ns[negative] = 0

    def _format(self, process_names: Sequence[str]) -> str:
        """The format and era, e.g. "kineto-json/relative-ns+gaudi" (`process_names`: the
        names of the file's processes)."""
        if "baseTimeNanoseconds" in self.metadata:
            era = "relative-ns"
        else:
            ts = self.raw.ts_us[~np.isnan(self.raw.ts_us)]
            integral = len(ts) > 0 and bool(np.all(ts == np.floor(ts)))
            era = "epoch-us" if integral and float(ts.max()) > _EPOCH_US else "relative-us"
        parts = [f"kineto-json/{era}"]
        if any(str(name).startswith(GAUDI_DEVICE_PROCESS_PREFIX) for name in process_names):
            parts.append("gaudi")  # the bridge writes Kernel/Runtime/Memcpy on purpose
        elif set(self.raw.cat.categories) & LEGACY_CATEGORIES:
            parts.append("legacy-categories")
        if METADATA_KEY in self.metadata:
            parts.append("hpuprof")
        return "+".join(parts)

    # --- metadata events -----------------------------------------------------------------------

    def _side_args(self, row: int) -> dict[str, Any]:
        """The args object of an `M` or `C` event ({} when it has none)."""
        raw = self.raw.side_args.get(row, b"")
        try:
            return _decode_args(raw)
        except RecursionError:
            raise TraceFormatError(
                self.source, f"event {row}", "args nested less deep (about 1,000 levels)"
            ) from None

    def _side_args_of(self, rows: list[int]) -> list[dict[str, Any]]:
        """`_side_args` of each of `rows`, decoded in one msgspec pass when each row's args
        are one line (a trace's counters: thousands of small objects); one by one otherwise,
        or when any fails to decode (a row that is no JSON object gets {} there)."""
        raws = [self.raw.side_args.get(row, b"") for row in rows]
        present = [raw for raw in raws if raw]
        joined = b"\n".join(present)
        values: list[Any] | None = None
        if present and joined.count(b"\n") == len(present) - 1:
            try:
                values = _ANY_DECODER.decode_lines(joined)
            except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
                values = None
        if values is None or len(values) != len(present):
            return [self._side_args(row) for row in rows]
        decoded = iter(values)
        return [_object(next(decoded)) if raw else {} for raw in raws]

    def _sort_index(self, row: int, value: Any) -> int:
        """A `sort_index` as int64; NO_ID when absent or not an integer, and with a warning
        when it is an integer past int64 (only an order of display: dropped, not refused)."""
        if not isinstance(value, int):
            return NO_ID
        if not _INT64_MIN <= value <= _INT64_MAX:
            import warnings

            warnings.warn(
                f"{self.source}: event {row} has a sort_index past int64 ({value}); ignored",
                stacklevel=6,
            )
            return NO_ID
        return value

    def _names(self, rows: NDArray[np.int64], rank: int) -> tuple[pd.DataFrame, pd.DataFrame]:
        raw = self.raw
        procs: dict[str, dict[str, Any]] = {}
        threads: dict[tuple[str, str], dict[str, Any]] = {}
        names: list[Any] = raw.name.values(rows).tolist()
        pids: list[Any] = raw.pid.values(rows).tolist()
        tids: list[Any] = raw.tid.values(rows).tolist()
        for row, name, pid, tid in zip(rows.tolist(), names, pids, tids, strict=True):
            args = self._side_args(row)
            if name.startswith("process_"):
                entry = procs.setdefault(pid, {"name": "", "labels": "", "sort_index": NO_ID})
            elif name.startswith("thread_"):
                entry = threads.setdefault(
                    (pid, tid), {"name": "", "labels": "", "sort_index": NO_ID}
                )
            else:
                continue
            if name.endswith("_name"):
                entry["name"] = str(args.get("name", ""))
            elif name.endswith("_labels"):
                entry["labels"] = str(args.get("labels", ""))
            elif name.endswith("_sort_index"):
                entry["sort_index"] = self._sort_index(row, args.get("sort_index"))
        processes = pd.DataFrame(
            {
                "rank": pd.Series([rank] * len(procs), dtype="int32"),
                "pid": pd.Series(list(procs), dtype=str),
                "name": pd.Series([p["name"] for p in procs.values()], dtype=str),
                "labels": pd.Series([p["labels"] for p in procs.values()], dtype=str),
                "sort_index": pd.Series([p["sort_index"] for p in procs.values()], dtype="int64"),
            }
        )
        thread_frame = pd.DataFrame(
            {
                "rank": pd.Series([rank] * len(threads), dtype="int32"),
                "pid": pd.Series([k[0] for k in threads], dtype=str),
                "tid": pd.Series([k[1] for k in threads], dtype=str),
                "name": pd.Series([t["name"] for t in threads.values()], dtype=str),
                "sort_index": pd.Series([t["sort_index"] for t in threads.values()], dtype="int64"),
            }
        )
        return processes, thread_frame

    # --- slices ------------------------------------------------------------------------------

    def _slice_rows(
        self, ts_ns: NDArray[np.int64], dur_ns: NDArray[np.int64]
    ) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Rows of the events table (X, paired B, i, I) and durations with B/E pairs applied."""
        ph = self.raw.ph
        keep = _code_mask(ph, {"X", "i", "I"})
        begin = _code_mask(ph, {"B"})
        if begin.any() or _code_mask(ph, {"E"}).any():
            dur_ns = dur_ns.copy()
            dur_ns[begin] = 0
            pair_rows = np.flatnonzero(begin | _code_mask(ph, {"E"}))
            open_slices: dict[tuple[int, int], list[int]] = {}
            is_begin = begin[pair_rows].tolist()
            pids = self.raw.pid.codes[pair_rows].tolist()
            tids = self.raw.tid.codes[pair_rows].tolist()
            order = np.argsort(ts_ns[pair_rows], kind="stable")
            for i in order.tolist():
                row, lane = int(pair_rows[i]), (pids[i], tids[i])
                if is_begin[i]:
                    open_slices.setdefault(lane, []).append(row)
                elif open_slices.get(lane):
                    start_row = open_slices[lane].pop()
                    dur_ns[start_row] = max(int(ts_ns[row] - ts_ns[start_row]), 0)
            keep |= begin
        return np.flatnonzero(keep), dur_ns

    def _events(
        self,
        given: list[NDArray[np.int64]],
        rank: int,
        processes: pd.DataFrame,
        threads: pd.DataFrame,
    ) -> pd.DataFrame:
        """The events table from `given`: [rows (in the table's order), their ts and dur, the
        flow rows, their ts]. The list is emptied here, so that each array is freed as soon as
        this is done with it (the caller's names would keep column-long arrays alive through
        the load's peak: 24 MB on the 260 MB synthetic trace)."""
        raw = self.raw
        rows, ts, dur, flow_rows, flow_ts = given
        given.clear()
        n = len(rows)
        # rows whose args hold more of our keys, and the columns of those read with the event
        values = {name: value_column(name, getattr(raw, name), rows) for name in ARG_VALUE_KEYS}
        our_rows = marked_rows(raw.our_keys[rows], values)
        types = data_types(raw.data_type, rows)
        del values
        raw.release("our_keys", *VALUE_ARGS)
        # the nesting first (the longest chain: nesting -> flow correlation -> derived columns)
        pid_codes = raw.pid.codes[rows]  # int32: the int64 lane key is the only wide copy
        tid_codes = raw.tid.codes[rows]
        lane = pid_codes.astype(np.int64)
        lane *= max(len(raw.tid.categories), 1)
        lane += tid_codes
        by_lane = lane_order(lane)
        lanes = _Lanes(by_lane, lane[by_lane], ts[by_lane], (ts + dur)[by_lane])
        del lane
        nested = self._soon(nest, lanes.lane, lanes.start, lanes.end)
        instant = _code_mask(raw.ph, {"i", "I"}, rows)
        device_columns = self._soon(
            self._device_columns,
            rows,
            pid_codes,
            tid_codes,
            instant,
            dict(zip(processes["pid"], processes["name"], strict=True)),
            threads,
        )
        # columns nothing below reads go first, each raw column freed as soon as it is taken
        columns: dict[str, Any] = {}
        columns["external_id"] = raw.external_id[rows].astype(np.int64)
        columns["fallback"] = raw.fallback[rows] == 1
        raw.release("external_id", "fallback")
        # the categorical columns, each given its raw column (which this thread releases once
        # nothing here reads it: a task's raw column stays alive until the task is done)
        taken: dict[str, Future[pd.Categorical]] = {}
        for field in _CATEGORICAL_SOURCES:
            taken[field] = self._soon(_categorical_at, getattr(raw, field), rows)
        raw.release("input_dims", "input_types", "mode", "module", "phase", "flush_reason")
        devices = after(self.pool, [device_columns], _device_frame_columns)

        depth_l, parent_l = nested.result()
        del nested
        depth = np.empty(n, dtype=np.int64)
        depth[by_lane] = depth_l
        parent = np.full(n, NO_ID, dtype=np.int64)
        has_parent = parent_l >= 0
        parent[by_lane[has_parent]] = by_lane[parent_l[has_parent]]

        correlation = raw.correlation[rows].astype(np.int64)
        try:
            self._flow_correlation(correlation, flow_rows, flow_ts, lanes, instant, parent_l)
        except TraceFormatError:
            device_columns.result()  # its error first, as when it runs before (no pool)
            raise
        del lanes, by_lane, depth_l, parent_l, has_parent, pid_codes, tid_codes, flow_ts
        del flow_rows
        kind = device_columns.result()[0]
        del device_columns
        raw.release("correlation", "flow_id", "stream", "device")
        device_frame = devices.result()
        is_device = device_frame["is_device"]
        step = self._soon(
            self._steps, raw.name, raw.hpu_event, kind, rows, ts, dur, is_device, correlation
        )
        columns["graph_id"] = self._graph_ids(rows)
        raw.release("graph_id", "recipe_id")
        raw.release("name", "cat", "pid", "tid", "hpu_event")
        columns["ph"] = categorical(instant.astype(np.int8), ["X", "i"])
        raw.release("ph")
        columns["ts_ns"] = ts
        columns["dur_ns"] = dur
        columns["rank"] = np.full(n, rank, dtype=np.int32)
        columns.update(device_frame)
        del kind, device_frame
        columns["correlation"] = correlation
        columns["depth"] = np.minimum(depth, np.iinfo(np.int16).max).astype(np.int16)
        del depth
        columns["parent"] = parent
        columns.update((field, part.result()) for field, part in taken.items())
        del taken
        # last, when every other raw column is gone: the args, into a buffer of their exact size
        # (the heap's free pages go back first: the load peaks here, with both args buffers).
        # Also with a pool: taken there beside the nesting, both args buffers coexisted with
        # the raw columns: 260 MB synthetic trace, 2 threads, same-run A/B: peak RSS 2.47x ->
        # 2.09x the JSON size, 54.7 -> 58.8 MB/s (loaded machine). The steps are done first:
        # their column-long temporaries (20 MB on that trace) would add to the gather's peak.
        columns["step"] = step.result()
        del step
        release_free_memory()
        columns["args"] = _args_column(take_binary(raw.args, rows))
        raw.release("args")
        del rows
        release_free_memory()  # (the derived columns' temporaries come next)
        frame = pd.DataFrame(
            {name: columns.pop(name) for name in EVENT_COLUMNS if name in columns}, copy=False
        )
        return with_derived(frame, our_rows, types)

    def _graph_ids(self, rows: NDArray[np.int64]) -> pd.Categorical:
        raw = self.raw
        ours = categorical(raw.graph_id.codes[rows], raw.graph_id.categories)
        if raw.recipe_id.categories in ([], [""]):
            return ours
        recipe = np.asarray(raw.recipe_id.categories, dtype=object)[raw.recipe_id.codes[rows]]
        own = np.asarray(ours.astype(object))
        return text_categorical(np.where(own != "", own, recipe))

    def _device_columns(
        self,
        rows: NDArray[np.int64],
        pid_codes: NDArray[np.int32],
        tid_codes: NDArray[np.int32],
        instant: NDArray[np.bool_],
        process_name: Mapping[str, str],
        threads: pd.DataFrame,
    ) -> tuple[NDArray[np.int8], NDArray[np.int8], NDArray[np.int32], NDArray[np.int64]]:
        """kind and engine (int8 codes into EVENT_KINDS, ENGINE_KINDS), device, stream
        (`process_name`: pid -> name; `threads`: the thread table, read for the engines of
        Gaudi device lanes only)."""
        raw = self.raw
        n = len(rows)
        cat_codes = raw.cat.codes[rows]
        cats = raw.cat.categories
        pid_names = [process_name.get(pid, "") for pid in raw.pid.categories]
        hpu_pid = np.array([p.startswith(GAUDI_DEVICE_PROCESS_PREFIX) for p in pid_names])
        host_runtime_pid = np.array([p.startswith(HOST_RUNTIME_PROCESSES) for p in pid_names])

        on_hpu = hpu_pid[pid_codes] if len(hpu_pid) else np.zeros(n, dtype=bool)
        kind_by_cat = _kind_codes([KINETO_CATEGORY_KIND.get(c, "other") for c in cats])
        kind = kind_by_cat[cat_codes]  # int8 codes into EVENT_KINDS
        gaudi_kind = _kind_codes([GAUDI_DEVICE_KIND.get(c, "device_op") for c in cats])
        kind[on_hpu] = gaudi_kind[cat_codes[on_hpu]]
        hpu_op = np.array([c == "hpu_op" for c in cats] or [False])[cat_codes]
        kind[hpu_op & ~on_hpu] = _KIND_CODE["runtime"]
        if host_runtime_pid.any():
            bridge = host_runtime_pid[pid_codes] & (kind == _KIND_CODE["other"])
            kind[bridge] = _KIND_CODE["runtime"]
        kind[instant] = _KIND_CODE["instant"]
        del cat_codes, hpu_op

        is_device = _DEVICE_KIND[kind]
        device_lane = is_device | (kind == _KIND_CODE["sync"])
        pid_ints = np.array([_as_int(p) for p in raw.pid.categories] or [NO_ID])
        tid_ints = np.array([_as_int(t) for t in raw.tid.categories] or [NO_ID])
        hpu_index = np.array(
            [_as_int(m.group(1)) if (m := _HPU_INDEX.match(p)) else NO_ID for p in pid_names]
            or [NO_ID]
        )
        given = raw.stream[rows]
        stream = np.where(given != NO_ID, given, tid_ints[tid_codes])
        stream[~device_lane] = NO_ID
        given = raw.device[rows]
        outside = np.flatnonzero((given < _INT32_MIN) | (given > _INT32_MAX))
        if len(outside):
            raise TraceFormatError(
                self.source,
                f"event {int(rows[outside[0]])}",
                f"a device index within int32 as args 'device' (found {int(given[outside[0]])})",
            )
        lane_device = np.where(hpu_index != NO_ID, hpu_index, pid_ints)[pid_codes]
        lane_device[(lane_device < _INT32_MIN) | (lane_device > _INT32_MAX)] = NO_ID
        device = np.where(given != NO_ID, given, lane_device)
        del given
        device = np.where(on_hpu & is_device, lane_device, device)
        device[~device_lane] = NO_ID
        del lane_device

        engine = np.zeros(n, dtype=np.int8)  # codes into ENGINE_KINDS ("" on the host)
        engine[is_device & ~on_hpu] = _ENGINE_CODE["GPU"]
        if on_hpu.any():
            thread_name = {
                (p, t): name
                for p, t, name in zip(threads["pid"], threads["tid"], threads["name"], strict=True)
            }
            lanes = pid_codes[on_hpu].astype(np.int64) * max(len(raw.tid.categories), 1)
            lanes += tid_codes[on_hpu]
            unique, inverse = np.unique(lanes, return_inverse=True)
            width = max(len(raw.tid.categories), 1)
            names = [
                thread_name.get((raw.pid.categories[u // width], raw.tid.categories[u % width]), "")
                for u in unique.tolist()
            ]
            engines = np.array([_ENGINE_CODE[gaudi_engine(name)] for name in names], np.int8)
            engine[on_hpu] = np.where(is_device[on_hpu], engines[inverse], 0)
        return kind, engine, device.astype(np.int32), stream.astype(np.int64, copy=False)

    # --- flows -> correlation --------------------------------------------------------------------

    def _flow_correlation(
        self,
        correlation: NDArray[np.int64],
        flow_rows: NDArray[np.int64],
        flow_ts_all: NDArray[np.int64],
        lanes: _Lanes,
        instant: NDArray[np.bool_],
        parent_l: NDArray[np.int64],
    ) -> None:
        """Bind launch flow ends to slices and give both ends the flow id as correlation
        (`parent_l`: the parents of the slices in lane order, positions in that order)."""
        raw = self.raw
        launch = _code_mask(raw.cat, LAUNCH_FLOW_CATEGORIES, flow_rows)
        launch &= _code_mask(raw.ph, {"s", "f"}, flow_rows)
        rows = flow_rows[launch]
        if len(rows) == 0 or len(lanes.by_lane) == 0:
            return
        width = max(len(raw.tid.categories), 1)
        flow_lane = raw.pid.codes[rows].astype(np.int64) * width + raw.tid.codes[rows]
        flow_ts = flow_ts_all[launch]
        try:
            flow_id = raw.flow_id.numbers
            if flow_id is None:
                flow_id = _flow_ints(raw.flow_id.categories)
        except BadValue as bad:
            row = int(flow_rows[np.flatnonzero(raw.flow_id.codes[flow_rows] == bad.row)[0]])
            raise TraceFormatError(
                self.source, f"event {row}", f"{bad.expected} as the flow 'id' (found {bad.found})"
            ) from None
        ids = flow_id[raw.flow_id.codes[rows]]
        target = np.full(len(rows), NO_ID, dtype=np.int64)
        usable = ~instant[lanes.by_lane]
        bounds = {int(lanes.lane[a]): (a, b) for a, b in lane_bounds(lanes.lane)}
        for value in np.unique(flow_lane).tolist():
            if value not in bounds:
                continue
            a, b = bounds[value]
            mine = np.flatnonzero(flow_lane == value)
            local_parent = np.where(parent_l[a:b] >= 0, parent_l[a:b] - a, NO_ID)
            hit = enclosing(
                lanes.start[a:b], lanes.end[a:b], local_parent, usable[a:b], flow_ts[mine]
            )
            found = hit >= 0
            target[mine[found]] = lanes.by_lane[a + hit[found]]
        ok = (target >= 0) & (ids != NO_ID)
        target, ids = target[ok], ids[ok]
        unset = correlation[target] == NO_ID
        correlation[target[unset]] = ids[unset]

    # --- steps -----------------------------------------------------------------------------------

    def _steps(
        self,
        name: Coded,
        hpu_event: Coded,
        kind: NDArray[np.int8],
        rows: NDArray[np.int64],
        ts: NDArray[np.int64],
        dur: NDArray[np.int64],
        is_device: NDArray[np.bool_],
        correlation: NDArray[np.int64],
    ) -> NDArray[np.int32]:
        """Each row's step number (int32: numbers past it are refused), NO_ID outside steps."""
        n = len(rows)
        step = np.full(n, NO_ID, dtype=np.int32)
        if n == 0:
            return step
        ours = _code_mask(hpu_event, {"step"}, rows)
        marker_names = {
            c for c in name.categories if c.startswith((STEP_ANNOTATION_PREFIX, STEP_MARKER_PREFIX))
        }
        candidate = _code_mask(name, marker_names, rows)
        annotation = kind == _KIND_CODE["user_annotation"]
        marker = candidate & ((annotation & ~ours) | ours) & ~is_device
        if not marker.any():
            return step
        positions = np.flatnonzero(marker)
        marker_codes = name.codes[rows[positions]].tolist()
        found = [_step_number(name.categories[c]) for c in marker_codes]
        too_big = [i for i, number in enumerate(found) if number > _INT32_MAX]
        if too_big:
            row = int(rows[positions[too_big[0]]])
            raise TraceFormatError(
                self.source,
                f"event {row}",
                f"a step number within int32 (found {name.categories[marker_codes[too_big[0]]]!r})",
            )
        numbers = np.array(found, dtype=np.int32)
        positions, numbers = positions[numbers >= 0], numbers[numbers >= 0]
        if len(positions) == 0:
            return step
        starts = ts[positions]
        ends = starts + dur[positions]
        k = np.searchsorted(starts, ts, side="right") - 1
        safe = np.maximum(k, 0)
        inside = (k >= 0) & ((ts < ends[safe]) | (ts == starts[safe]))
        step = np.where(inside, numbers[safe], NO_ID)
        host_launch = ~is_device & (correlation != NO_ID) & (step != NO_ID)
        device_corr = is_device & (correlation != NO_ID)
        if host_launch.any() and device_corr.any():
            by_corr = pd.Series(step[host_launch], index=correlation[host_launch])
            by_corr = by_corr[~by_corr.index.duplicated(keep="first")]
            mapped = by_corr.reindex(correlation[device_corr]).to_numpy()
            known = ~np.isnan(mapped)
            target = np.flatnonzero(device_corr)[known]
            step[target] = mapped[known].astype(np.int32)
        return step

    # --- counters and flows ------------------------------------------------------------------

    def _counters(
        self, rows: NDArray[np.int64], ts_ns: NDArray[np.int64], rank: int
    ) -> pd.DataFrame:
        raw = self.raw
        record: dict[str, Any] = {c: [] for c in COUNTER_COLUMNS}
        names: list[Any] = raw.name.values(rows).tolist()
        at: list[int] = []  # the event of each counter value
        row_list = rows.tolist()
        for row, name, args in zip(row_list, names, self._side_args_of(row_list), strict=True):
            for series, value in args.items():
                if isinstance(value, bool) or not isinstance(value, int | float):
                    continue
                if abs(value) > _FLOAT_MAX:
                    raise TraceFormatError(
                        self.source,
                        f"event {row}",
                        f"a counter value within float64 as args {series!r} (found {str(value)[:40]})",
                    )
                at.append(row)
                record["name"].append(name)
                record["series"].append(series)
                record["value"].append(float(value))
        events = np.asarray(at, dtype=np.int64)
        for field in ("cat", "pid", "tid"):
            record[field] = _texts_at(getattr(raw, field), events)
        record["rank"] = np.full(len(events), rank)
        record["ts_ns"] = ts_ns[events]
        return _frame(record, COUNTER_COLUMNS)


def _texts_at(coded: Coded, rows: NDArray[np.int64]) -> NDArray[Any]:
    """The category text of each of `rows` of a raw coded column (each distinct one made once;
    code -1, as a list index, the last category)."""
    codes, at = np.unique(coded.codes[rows], return_inverse=True)
    texts = np.empty(len(codes), dtype=object)
    texts[:] = [coded.categories[code] for code in codes.tolist()]
    return np.asarray(texts[at.reshape(-1)], dtype=object)


_CATEGORICAL_SOURCES = (
    *("input_dims", "input_types", "mode", "module", "phase", "flush_reason"),
    *("name", "cat", "pid", "tid", "hpu_event"),
)
"""The raw coded columns that become categorical columns of the events as they are."""


def _device_frame_columns(
    parts: tuple[NDArray[np.int8], NDArray[np.int8], NDArray[Any], NDArray[Any]],
) -> dict[str, Any]:
    """The events' columns `kind`, `is_device`, `device`, `stream`, `engine` from the codes and
    values `_Normalizer._device_columns` makes."""
    kind, engine, device, stream = parts
    return {
        "kind": categorical(kind, EVENT_KINDS),
        "is_device": _DEVICE_KIND[kind],
        "device": device,
        "stream": stream,
        "engine": categorical(engine, ENGINE_KINDS),
    }


def _args_column(taken: pa.LargeBinaryArray) -> pd.api.extensions.ExtensionArray:
    """The events' raw args as the `args` column (Arrow binary, not copied)."""
    return pd.arrays.ArrowExtensionArray(pa.chunked_array([taken]))


def data_types(coded: Coded, rows: NDArray[np.int64]) -> DataTypes:
    """The `dataType` args of `rows` from their raw coded column (compact JSON): the texts
    ("" for a value of another type, as the args' search for a quoted value finds none)."""
    texts = [_json_text(category) for category in coded.categories]
    vocabulary = sorted(set(texts))  # (in order: the dtype column's categories follow it)
    place = {text: i for i, text in enumerate(vocabulary)}
    remap = np.array([place[text] for text in texts], dtype=code_width(len(vocabulary)))
    return DataTypes(remap[coded.codes[rows]], vocabulary)


def _json_text(value: str) -> str:
    decoded = _ANY_DECODER.decode(value) if value else None
    return decoded if isinstance(decoded, str) else ""


def _categorical_at(coded: Coded, rows: NDArray[np.int64]) -> pd.Categorical:
    """The raw coded column `coded` at `rows` as a categorical."""
    return categorical(coded.codes[rows], coded.categories)


_FLOW_SOURCES = ("flow_id", "cat", "name", "ph", "pid", "tid", "bp")


def _flows(
    raw: Mapping[str, Coded],
    rows: NDArray[np.int64],
    ts_us: NDArray[np.float64],
    base: int,
    rank: int,
) -> pd.DataFrame:
    """The flows table: the flow events `rows` of the raw columns `raw` (`_FLOW_SOURCES`),
    `ts_us` their raw times (checked within range), `base` the trace's base time in ns."""
    ts = ns_from_us(ts_us, base)

    def column(field: str) -> pd.Categorical:
        return categorical(raw[field].codes[rows], raw[field].categories)

    columns: dict[str, Any] = {
        "id": column("flow_id"),
        "cat": column("cat"),
        "name": column("name"),
        "ph": column("ph"),
        "pid": column("pid"),
        "tid": column("tid"),
        "rank": np.full(len(rows), rank, dtype=np.int32),
        "ts_ns": ts,
        "binding": column("bp"),
    }
    return pd.DataFrame(columns, copy=False)  # (a copy of each would coexist with it)


def gaudi_engine(thread_name: str) -> str:
    """EngineKind of a Gaudi device thread name (`*TPC 3`, `**MME 0`, `*EDMA`...; the hardware
    profiler's `[HD0] TPC 5`, `[D0] Cache Slice`: the die in brackets goes first)."""
    name = _DIE_PREFIX.sub("", thread_name.lstrip("* ")).upper()
    for prefix, engine in GAUDI_ENGINE_PREFIXES:
        if name.startswith(prefix):
            return engine
    return "OTHER"


def _step_number(name: str) -> int:
    match = _STEP_NAME.search(name)
    return int(match.group(1)) if match else NO_ID


def _flow_ints(values: Sequence[str]) -> NDArray[np.int64]:
    """Flow ids (text) as int64 correlation keys; NO_ID for "" and non-numeric ids."""
    texts = np.array([v if v != "" else str(NO_ID) for v in values] or [str(NO_ID)], dtype=object)
    try:
        return texts.astype(np.int64)  # decimal ids in int64 range: parsed in C
    except (OverflowError, ValueError):
        return to_int64_ids([v if v != "" else None for v in values])


_ANY_DECODER = msgspec.json.Decoder()


def _decode_args(raw: bytes) -> dict[str, Any]:
    if not raw:
        return {}
    try:
        value = msgspec.json.decode(raw)
    except (msgspec.DecodeError, UnicodeDecodeError):
        return {}
    return _object(value)


def _object(value: Any) -> dict[str, Any]:
    """An args value as the object it must be ({} when it is another JSON value)."""
    return value if isinstance(value, dict) else {}


def _frame(record: Mapping[str, list[Any]], schema: Mapping[str, str]) -> pd.DataFrame:
    """A small table from Python lists with the schema's dtypes (categoricals sorted)."""
    columns: dict[str, Any] = {}
    for name, dtype in schema.items():
        values = record[name]
        if dtype == "category":
            columns[name] = text_categorical([str(v) for v in values])
        else:
            columns[name] = np.asarray(values, dtype=dtype)
    return pd.DataFrame(columns)
