"""The checked rows of a hardware-profiler CSV (`hw_profiler_csv.HardwareRows`) as the raw
columns the shared normalizer takes (`columns.RawColumns`), and its counters table.

Built column by column in numpy and Arrow (no object per row): slices (a BEGIN and the END that
closes it), instants, the lanes' metadata events and any extra events (the node spans), each
row's args as compact JSON made by Arrow's string joins. Counter samples go straight to the
counters table (the normalizer decodes a counter event's args one by one).
"""

from __future__ import annotations

from concurrent.futures import Executor
from typing import Any, Final, Protocol

import msgspec
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from hpuprof.trace.categories import categorical
from hpuprof.trace.columns import CODED_ARGS, Coded, Interner, RawColumns, binary_array
from hpuprof.trace.nesting import time_order
from hpuprof.trace.normalize import ns_from_us
from hpuprof.trace.schema import NO_ID
from hpuprof.trace.small_keys import TABLE_LIMIT, unique_inverse
from hpuprof.trace.soon import soon


class HardwareRows(Protocol):
    """What this module reads of `hw_profiler_csv.HardwareRows` (the checked CSV rows)."""

    kind: NDArray[np.int64]
    ts: NDArray[np.float64]
    ts_text: pa.Array
    pid: NDArray[np.int64]
    tid: NDArray[np.int64]
    lanes: NDArray[np.int64]

    def pairs(self) -> tuple[NDArray[np.int64], NDArray[np.int64]]: ...
    def lane_names(self) -> list[dict[str, Any]]: ...
    def dictionary(self, column: str) -> tuple[NDArray[np.int32], list[str]]: ...
    def json_literals(self, column: str) -> tuple[NDArray[np.int32], list[str]]: ...


SLICE_CATEGORY: Final = "Kernel"
INSTANT_CATEGORY: Final = "hw_event"
COUNTER_CATEGORY: Final = "hw_counter"


class _Column:
    """One coded raw column being filled: codes per row, categories interned once each."""

    def __init__(self, n: int) -> None:
        self.interner = Interner("")
        self.codes = np.zeros(n, dtype=np.int32)

    def put_dictionary(
        self, rows: NDArray[np.int64], indices: NDArray[Any], values: list[str]
    ) -> None:
        remap = np.array([self.interner.code(v) for v in values] or [0], dtype=np.int32)
        self.codes[rows] = remap[indices]

    def put(self, rows: NDArray[np.int64] | slice, value: str) -> None:
        self.codes[rows] = self.interner.code(value)

    def coded(self) -> Coded:
        return Coded(self.codes, [str(v) for v in self.interner.values])


def raw_columns(
    hw: HardwareRows, extra: list[dict[str, Any]], pool: Executor | None = None
) -> RawColumns:
    """Slices, instants, lane names and `extra` Chrome-trace events (X or M) as raw columns
    (the slices' and instants' args made in `pool` when given, beside the other columns)."""
    begin, end = hw.pairs()
    # the slices in the events table's order (start, longest first, then as paired: what the
    # normalizer sorts them by, so its result is the same), not lane by lane: its gathers of
    # every column then read the raw rows nearly in order
    order = time_order(ns_from_us(hw.ts[begin], 0), _duration_ns(hw, begin, end))
    begin, end = begin[order], end[order]
    instant = np.flatnonzero(hw.kind == 2)
    slice_args = soon(pool, _binary, _slice_args, hw, begin, end)
    instant_args = soon(pool, _binary, _instant_args, hw, instant)
    meta = hw.lane_names() + extra
    ns, ni, nm = len(begin), len(instant), len(meta)
    n = ns + ni + nm
    slices, instants = np.arange(ns), np.arange(ns, ns + ni)
    tail = np.arange(ns + ni, n)
    source_row = np.concatenate([begin, instant]).astype(np.int64)
    hw_part = np.arange(ns + ni)

    ph, name, cat, pid, tid, recipe = (_Column(n) for _ in range(6))
    ph.put(slices, "X")
    ph.put(instants, "i")
    name_ix, name_values = hw.dictionary("Name")
    desc_ix, desc_values = hw.dictionary("HW Event description")
    name.put_dictionary(slices, name_ix[begin], name_values)
    name.put_dictionary(instants, desc_ix[instant], desc_values)
    cat.put(slices, SLICE_CATEGORY)
    cat.put(instants, INSTANT_CATEGORY)
    pid.put_dictionary(
        hw_part, hw.pid[source_row], [str(p) for p in range(int(hw.pid.max(initial=0)) + 1)]
    )
    tid.put_dictionary(hw_part, hw.tid[source_row], [str(t) for t in range(len(hw.lanes))])
    recipe_ix, recipe_values = hw.dictionary("Recipe ID")
    recipe.put_dictionary(hw_part, recipe_ix[source_row], recipe_values)

    ts_us = np.full(n, np.nan)
    dur_us = np.full(n, np.nan)
    ts_us[: ns + ni] = hw.ts[source_row]
    dur_us[:ns] = _duration_ns(hw, begin, end) / 1000.0
    side: dict[int, bytes] = {}
    tail_args: list[bytes] = []
    for row, event in zip(tail.tolist(), meta, strict=True):
        ph.put(slice(row, row + 1), str(event["ph"]))
        name.put(slice(row, row + 1), str(event["name"]))
        cat.put(slice(row, row + 1), str(event.get("cat", "")))
        pid.put(slice(row, row + 1), str(event["pid"]))
        tid.put(slice(row, row + 1), str(event["tid"]))
        args = msgspec.json.encode(event.get("args", {}))
        if event["ph"] == "M":
            side[row] = args
            tail_args.append(b"")
        else:
            ts_us[row], dur_us[row] = float(event["ts"]), float(event["dur"])
            tail_args.append(args)
    args = pa.chunked_array(
        [
            slice_args.result(),
            instant_args.result(),
            binary_array(tail_args),
        ],
        type=pa.large_binary(),
    )
    absent = {field: Coded(np.zeros(n, np.int32), [""]) for field in CODED_ARGS}
    no_id = np.full(n, NO_ID, dtype=np.int32)
    absent["recipe_id"] = recipe.coded()
    return RawColumns(
        ph=ph.coded(), name=name.coded(), cat=cat.coded(), pid=pid.coded(), tid=tid.coded(),
        ts_us=ts_us, dur_us=dur_us, flow_id=Coded(np.zeros(n, np.int32), [""]),
        bp=Coded(np.zeros(n, np.int32), [""]), args=args, external_id=no_id,
        correlation=no_id.copy(), stream=no_id.copy(), device=no_id.copy(), **absent,
        fallback=np.zeros(n, np.int8), our_keys=np.zeros(n, np.int8), side_args=side,
    )  # fmt: skip


def _duration_ns(
    hw: HardwareRows, begin: NDArray[np.int64], end: NDArray[np.int64]
) -> NDArray[np.int64]:
    return ns_from_us(hw.ts[end], 0) - ns_from_us(hw.ts[begin], 0)


def _binary(make: Any, *args: Any) -> pa.Array:
    return pc.cast(make(*args), pa.large_binary())


def _slice_args(hw: HardwareRows, begin: NDArray[np.int64], end: NDArray[np.int64]) -> pa.Array:
    desc = "HW Event description"
    prefix = _coded_prefix(
        hw,
        (
            ('{"recipeId":', "Recipe ID", begin),
            (',"Operation":', "Operation", begin),
            (',"Data Type":', "Data Type", begin),
            (',"streamHandle":', "streamHandle", begin),
            (',"HW Event description":', desc, begin),
            (',"end HW Event description":', desc, end),
        ),
        ',"Timestamp[usec]":"',
    )
    ts, b, e = hw.ts_text, pa.array(begin), pa.array(end)
    return _join(prefix, ts.take(b), '","end Timestamp[usec]":"', ts.take(e), '"}')


def _instant_args(hw: HardwareRows, rows: NDArray[np.int64]) -> pa.Array:
    prefix = _coded_prefix(
        hw,
        (
            ('{"node":', "Name", rows),
            (',"recipeId":', "Recipe ID", rows),
            (',"HW Event port":', "HW Event port", rows),
        ),
        ',"Timestamp[usec]":"',
    )
    return _join(prefix, hw.ts_text.take(pa.array(rows)), '"}')


def _coded_prefix(
    hw: HardwareRows, fields: tuple[tuple[str, str, NDArray[np.int64]], ...], last_key: str
) -> pa.Array:
    """Per row, the JSON text `key1 value1 key2 value2 ... last_key` of coded columns' values
    (each field: its key text, the column, and the rows to take its value at): each distinct
    combination of values is written once, then taken per row."""
    coded = [(*hw.json_literals(column), rows) for _, column, rows in fields]
    combination, one = _combinations([(codes[rows], len(texts)) for codes, texts, rows in coded])
    at_one = [codes[rows[one]] for codes, _, rows in coded]
    pieces = [
        [key + literals[code] for code in at.tolist()]
        for (key, _, _), (_, literals, _), at in zip(fields, coded, at_one, strict=True)
    ]
    texts = ["".join(parts) + last_key for parts in zip(*pieces, strict=True)]
    return pa.array(texts, pa.string()).take(pa.array(combination))


def _combinations(
    columns: list[tuple[NDArray[Any], int]],
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Number the distinct combinations of codes (each column: its codes per row, below its
    size) 0, 1, ...: each row's number and a row of each number."""
    n = len(columns[0][0]) if columns else 0
    key, space = np.zeros(n, dtype=np.int64), 1
    for codes, size in columns:
        if space * max(size, 1) > TABLE_LIMIT:
            distinct, key = unique_inverse(key)
            space = len(distinct)
        key *= max(size, 1)
        key += codes
        space *= max(size, 1)
    distinct, key = unique_inverse(key, space)
    one = np.zeros(len(distinct), dtype=np.int64)
    one[key] = np.arange(n, dtype=np.int64)  # (any of a number's rows: they hold the same codes)
    return key, one


def counters(
    hw: HardwareRows, values: list[tuple[str, pa.Array, NDArray[np.int64]]]
) -> pd.DataFrame:
    """The counters table: one sample per (COUNTER row, value column given), in file order.

    Args:
        values: (column, its texts at `rows`, the COUNTER rows that give it) per value column.
    """
    name_ix, name_values = hw.dictionary("Name")
    engine_ix, engine_values = hw.dictionary("Engine")
    series_texts: list[str] = []  # each value column's series: its engines, suffixed
    parts: dict[str, list[Any]] = {k: [] for k in ("row", "name", "series", "pid", "tid", "value")}
    for column, texts, rows in values:
        suffix = "" if column == "SPMU value" else f" {column}"
        parts["row"].append(rows)
        parts["name"].append(name_ix[rows].astype(np.int64))
        parts["series"].append(engine_ix[rows].astype(np.int64) + len(series_texts))
        series_texts.extend(v + suffix for v in engine_values)
        parts["pid"].append(hw.pid[rows])
        parts["tid"].append(hw.tid[rows])
        parts["value"].append(pc.cast(texts, pa.float64()).to_numpy(zero_copy_only=False))
    if not values:
        joined = {k: np.zeros(0, dtype=np.int64) for k in parts}
    else:
        joined = {k: np.concatenate(v) for k, v in parts.items()}
    order = np.argsort(joined["row"].astype(np.int64), kind="stable")
    rows = joined["row"].astype(np.int64)[order]
    pid, tid = joined["pid"][order].astype(np.int64), joined["tid"][order].astype(np.int64)
    return pd.DataFrame(
        {
            "name": _coded_text(joined["name"][order], name_values),
            "series": _coded_text(joined["series"][order], series_texts),
            "cat": categorical(np.zeros(len(rows), dtype=np.int64), [COUNTER_CATEGORY]),
            "pid": _coded_text(pid, [str(p) for p in range(int(pid.max(initial=-1)) + 1)]),
            "tid": _coded_text(tid, [str(t) for t in range(int(tid.max(initial=-1)) + 1)]),
            "rank": np.zeros(len(rows), dtype=np.int32),
            "ts_ns": ns_from_us(hw.ts[rows], 0).astype(np.int64),
            "value": joined["value"][order].astype(np.float64),
        }
    )


def _coded_text(codes: NDArray[np.int64], texts: list[str]) -> pd.Categorical:
    """A text column from codes into `texts` (which may repeat a text), as `text_categorical`
    makes it from the texts themselves, without a Python str per row."""
    first: dict[str, int] = {}
    remap = np.array([first.setdefault(t, len(first)) for t in texts] or [0], dtype=np.int64)
    return categorical(remap[codes], list(first))


def _join(*parts: Any) -> pa.Array:
    return pc.binary_join_element_wise(*parts, "")
