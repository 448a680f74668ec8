"""Intel Gaudi hardware-profiler traces exported as CSV (`hl-prof-config ... --invoc csv`).

One row per hardware event: `Name` (graph node, or counter name), `Engine` ("[HD0] TPC 5",
"[HD3] MME", "[D0] Cache Slice"), `Event type` (BEGIN / END / INSTANT / COUNTER),
`Timestamp[usec]` (device µs with picosecond digits), the recipe and stream, `Operation`, `Data
Type`, `HW Event description` and the counter values (SPMU, BMON, NIC). Into the trace model:
- each (device, engine) is a device lane named as Intel names it, on process `/device:HPU:N`
  (N from `Device`, "accel0" -> 0), so the engine class comes from the name as for the bridge's
  lanes;
- a BEGIN and the next END on its engine become one slice (`cat` Kernel, named after the node;
  `recipeId` -> `graph_id`, so each recipe is a graph); an unmatched BEGIN or END is dropped
  with one warning;
- INSTANT -> an instant named by its `HW Event description` (`args.node`: the node);
- COUNTER -> a sample of counter track `Name`, series = the engine (SPMU value) or "engine
  column" (BMON min / avg / max / matches / configured cycles, NIC packets);
- times: ns in the model (±1 ns); the exact `Timestamp[usec]` texts stay in the args
  ("Timestamp[usec]", "end Timestamp[usec]");
- Intel's analyzed-nodes table beside the file (`<stem>_analyzed_nodes.csv`, written by the same
  export) adds its node spans (`gaudi_node_spans`).

Arrow parses the file; the checked columns become the raw columns of the shared normalizer
(`hw_profiler_columns`, no object per row), as a Kineto file's do. Bad input: one `TraceFormatError` with
the line (1 = the header) and what was expected there; a last line cut short (a profiler
stopped mid-write) is dropped with a warning, every complete row kept.
"""

from __future__ import annotations

import re
import warnings
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from hpuprof.errors import TraceFormatError
from hpuprof.path_text import path_text
from hpuprof.trace import gaudi_node_spans
from hpuprof.trace.formats import ReadOptions
from hpuprof.trace.model import Trace
from hpuprof.trace.small_keys import unique_inverse
from hpuprof.trace.soon import soon

FORMAT_NAME: Final = "gaudi-hw-profiler-csv"
REQUIRED: Final = ("Name", "Engine", "Event type", "Timestamp[usec]")
CODED: Final = (
    "Name",
    "Engine",
    "Event type",
    "Device",
    "Recipe ID",
    "Recipe name",
    "Operation",
    "Data Type",
    "HW Event description",
    "HW Event port",
    "streamHandle",
)
"""Columns read dictionary-encoded (few distinct values). `recipeHandle` is not read: nothing
takes it."""
VALUE_COLUMNS: Final = (
    "SPMU value",
    "BMON min",
    "BMON avg",
    "BMON max",
    "BMON matches",
    "BMON configured cycles",
    "NIC Packets amount",
)
"""The counter value columns; SPMU's series is the engine, the others' "engine column"."""
EVENT_TYPES: Final = ("BEGIN", "END", "INSTANT", "COUNTER")
_JSON_NUMBER: Final = r"^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?$"
_DEVICE_INDEX = re.compile(r"(\d+)$")


def read_trace(path: Path, options: ReadOptions) -> Trace:
    """The reader of `formats.GAUDI_HW_CSV` (`read_hw_profiler_csv`; one pass, no progress)."""
    return read_hw_profiler_csv(path)


def read_hw_profiler_csv(path: str | Path) -> Trace:
    """Load a Gaudi hardware-profiler CSV into a `Trace` (see the module docstring).

    Raises:
        TraceFormatError: not such a CSV, or a row that is not one of its events.
    """
    path = Path(path)
    source = path_text(path)
    table = _read_table(path, source)
    rows = HardwareRows(table, source)
    extra: list[dict[str, Any]] = []
    sibling = gaudi_node_spans.sibling_table(path)
    if sibling is not None:
        extra = gaudi_node_spans.span_events(
            gaudi_node_spans.read_table(sibling), rows.first_pid, path_text(sibling)
        )
    metadata = {"gaudi_hw_profiler": {"recipes": rows.recipes()}}
    values = rows.counter_values()
    from hpuprof.trace.hw_profiler_columns import counters, raw_columns
    from hpuprof.trace.kineto_json import load_threads
    from hpuprof.trace.memory_limit import threads_within_limit
    from hpuprof.trace.normalize import build_trace, detect_rank

    rank = detect_rank(metadata, source)
    threads = load_threads()
    # with threads: the counters table and the slices' and instants' args are made in a pool
    # (Arrow and numpy work, mostly without the GIL) beside the other raw columns and the build
    pooled = threads_within_limit(min(threads, 2)) > 1
    with ThreadPoolExecutor(2, "hpuprof-hw-csv") if pooled else nullcontext() as pool:
        table_part = soon(pool, counters, rows, values)
        raw = raw_columns(rows, extra, pool)
        trace = build_trace(raw, metadata, source=source, rank=rank, threads=threads)
        table = table_part.result()
    table["rank"] = np.full(len(table), rank, dtype=np.int32)
    return replace(trace, counters=table, format=FORMAT_NAME, device_time="measured")


def _read_table(path: Path, source: str) -> pa.Table:
    import pyarrow.csv as pacsv

    try:
        with open(path, "rb") as handle:
            header_line = handle.readline()
    except OSError as error:
        raise TraceFormatError(source, None, f"a readable file ({error.strerror})") from None
    header = header_line.decode("utf-8-sig", "replace").rstrip("\r\n").split(",")
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise TraceFormatError(
            source, "line 1", f"a Gaudi hardware-profiler CSV header (no {', '.join(missing)})"
        )
    wanted = [c for c in (*CODED, *VALUE_COLUMNS, "Timestamp[usec]") if c in header]
    convert = pacsv.ConvertOptions(
        column_types={c: _PARSED_AS.get(c, pa.string()) for c in wanted},
        include_columns=wanted,
        strings_can_be_null=False,
    )
    try:
        table = pacsv.read_csv(path, convert_options=convert)
    except (pa.ArrowInvalid, UnicodeDecodeError):
        # read again, rows of the wrong width collected (a handler slows every read ~15 %)
        table = _read_skipping(path, source, convert)
    table = table.unify_dictionaries().combine_chunks()
    try:
        return table.cast(pa.schema([pa.field(c, _TEXT.get(c, pa.string())) for c in wanted]))
    except pa.ArrowInvalid as error:  # bytes that are not UTF-8
        raise _unreadable(path, source, error) from None


_TEXT: Final = {c: pa.dictionary(pa.int32(), pa.string()) for c in CODED}
_PARSED_AS: Final = {
    **{c: pa.dictionary(pa.int32(), pa.binary()) for c in CODED},
    **{c: pa.binary() for c in VALUE_COLUMNS},
}
"""How Arrow parses the columns: as bytes, checked as UTF-8 after (`_TEXT`: the coded columns'
distinct values only, the mostly empty value columns in one pass), not value by value as they
are parsed: the parse of 1 M events, 0.98 -> 0.86 CPU-s (best of 8, alternated)."""


def _read_skipping(path: Path, source: str, convert: Any) -> pa.Table:
    """The table of the rows of the right width; a cut last line is dropped with a warning,
    any other bad row raises."""
    import pyarrow.csv as pacsv

    bad: list[Any] = []

    def skip(row: Any) -> str:
        bad.append(row)
        return "skip"

    try:
        table = pacsv.read_csv(
            path,
            parse_options=pacsv.ParseOptions(invalid_row_handler=skip),
            convert_options=convert,
        )
    except (pa.ArrowInvalid, UnicodeDecodeError) as error:
        raise _unreadable(path, source, error) from None
    if bad:
        _truncated_or_raise(path, source, bad)
    return table


def _unreadable(path: Path, source: str, error: Exception) -> TraceFormatError:
    """Where a CSV Arrow could not read goes wrong: the first byte that is not UTF-8, else
    Arrow's words for the rows."""
    data = path.read_bytes()
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as bad:
        line = data.count(b"\n", 0, bad.start) + 1
        return TraceFormatError(source, f"line {line}", f"UTF-8 text (byte {bad.start} is not)")
    return TraceFormatError(source, "the rows", f"CSV text ({str(error)[:120]})")


def _truncated_or_raise(path: Path, source: str, bad: list[Any]) -> None:
    data = path.read_bytes()
    lines = data.rstrip(b"\r\n").split(b"\n")
    last = lines[-1].rstrip(b"\r").decode("utf-8", "replace")
    for row in bad:
        if row.text == last and len(bad) == 1 and not data.endswith(b"\n"):
            warnings.warn(
                f"{source}: truncated trace (line {len(lines)} is cut short: {row.actual_columns}"
                f" of {row.expected_columns} fields); kept the {len(lines) - 2} complete rows",
                stacklevel=4,
            )
            return
    row = bad[0]
    found = row.text.encode("utf-8", "replace")
    at = next((i for i, line in enumerate(lines) if line.rstrip(b"\r") == found), None)
    where = f"line {at + 1}" if at is not None else "a row"
    raise TraceFormatError(
        source, where, f"{row.expected_columns} comma-separated fields (found {row.actual_columns})"
    )


class HardwareRows:
    """The table's columns, checked: times, event types, engines, lanes, BEGIN / END pairs."""

    def __init__(self, table: pa.Table, source: str) -> None:
        self.table = table
        self.source = source
        self.n = table.num_rows
        self.ts_text = (
            table.column("Timestamp[usec]").chunk(0) if self.n else pa.array([], pa.string())
        )
        self.ts = self._numbers(self.ts_text, "a Timestamp[usec] in µs")
        kind = self._codes("Event type")
        kinds = self._dictionary("Event type")
        known = np.array([k in EVENT_TYPES for k in kinds] or [True])
        self._require(pa.array(known[kind]), f"an Event type: {' / '.join(EVENT_TYPES)}")
        type_of = np.array([EVENT_TYPES.index(k) if k in EVENT_TYPES else -1 for k in kinds] or [0])
        self.kind = type_of[kind] if self.n else np.zeros(0, np.int64)
        engines = self._dictionary("Engine")
        self._require(
            pa.array(np.array([e != "" for e in engines] or [True])[self._codes("Engine")]),
            "an Engine name",
        )
        devices = self._dictionary("Device") if "Device" in table.column_names else [""]
        device_codes = (
            self._codes("Device") if "Device" in table.column_names else np.zeros(self.n, np.int32)
        )
        device_index = np.array([_device_index(d) for d in devices], dtype=np.int64)
        self.pid = (device_index if len(devices) else np.zeros(1, np.int64))[device_codes]
        self.device_names = dict(zip(device_index.tolist(), devices, strict=True))
        self.width = max(len(engines), 1)
        lane_key = self.pid * self.width + self._codes("Engine")
        space = (int(device_index.max(initial=0)) + 1) * self.width
        self.lanes, self.tid = unique_inverse(lane_key, space)
        self.engine_names = engines

    @property
    def first_pid(self) -> int:
        return int(self.pid[0]) if self.n else 0

    def _numbers(self, texts: pa.Array, expected: str) -> NDArray[np.float64]:
        """`texts` as float64, each a finite decimal number (the first that is not raises)."""
        try:
            values = pc.cast(texts, pa.float64()).to_numpy(zero_copy_only=False)
        except pa.ArrowInvalid:
            self._require(pc.match_substring_regex(texts, _JSON_NUMBER), expected)
            raise  # (not reached: Arrow refused a decimal number)
        finite = np.isfinite(values)
        if not finite.all():
            self._require(pa.array(finite), expected)
        return np.asarray(values, dtype=np.float64)

    def _codes(self, column: str) -> NDArray[np.int32]:
        if self.n == 0:
            return np.zeros(0, np.int32)
        return self.table.column(column).chunk(0).indices.to_numpy(zero_copy_only=False)

    def _dictionary(self, column: str) -> list[str]:
        if self.n == 0:
            return []
        return [str(v) for v in self.table.column(column).chunk(0).dictionary.to_pylist()]

    def _require(self, ok: pa.Array, expected: str) -> None:
        if self.n == 0:
            return
        bad = np.flatnonzero(~ok.to_numpy(zero_copy_only=False))
        if len(bad):
            row = int(bad[0])
            found = self.table.slice(row, 1).to_pylist()[0]
            raise TraceFormatError(
                self.source, f"line {row + 2}", f"{expected} (row {str(found)[:100]})"
            )

    def json_literals(self, column: str) -> tuple[NDArray[np.int32], list[str]]:
        """A coded column's indices per row and its distinct values as JSON string literals
        (each escaped once; `[""]` when the column is absent)."""
        if column not in self.table.column_names or self.n == 0:
            return np.zeros(self.n, np.int32), ['""']
        codes, values = self.dictionary(column)
        return codes, [msgspec.json.encode(v).decode() for v in values]

    def recipes(self) -> dict[str, str]:
        """Recipe ID -> recipe name, as the rows pair them."""
        if self.n == 0 or "Recipe ID" not in self.table.column_names:
            return {}
        if "Recipe name" not in self.table.column_names:
            return {}
        ids, id_texts = self.dictionary("Recipe ID")
        names, name_texts = self.dictionary("Recipe name")
        pair = ids.astype(np.int64) * max(len(name_texts), 1) + names
        # a pair's first row starts a run of equal pairs: only the runs' first rows are sorted
        heads = pair[np.flatnonzero(np.concatenate(([True], pair[1:] != pair[:-1])))]
        distinct, first = np.unique(heads, return_index=True)
        recipes: dict[str, str] = {}
        for code in distinct[np.argsort(first, kind="stable")].tolist():  # in file order
            recipe, name = divmod(code, max(len(name_texts), 1))
            if id_texts[recipe]:
                recipes[id_texts[recipe]] = name_texts[name]
        return recipes

    def pairs(self) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Rows of each BEGIN and the END that closes it on its lane, and a warning for the
        unmatched ones."""
        edge = np.flatnonzero(self.kind <= 1)
        ts = self.ts[edge]
        if len(ts) < 2 or bool(np.all(ts[1:] >= ts[:-1])):  # rows in time order (as written)
            lane = self.tid[edge]
            if len(self.lanes) <= 1 << 16:
                lane = lane.astype(np.uint16)  # (numpy's stable sort of 16-bit keys: a radix sort)
            order = edge[np.argsort(lane, kind="stable")]
        else:
            order = edge[np.lexsort((edge, ts, self.tid[edge]))]
        is_begin = self.kind[order] == 0
        same_lane = self.tid[order][:-1] == self.tid[order][1:]
        paired = is_begin[:-1] & ~is_begin[1:] & same_lane
        begin, end = order[:-1][paired], order[1:][paired]
        unmatched = len(edge) - 2 * len(begin)
        if unmatched:
            kept = np.zeros(len(order), dtype=bool)
            kept[:-1] |= paired
            kept[1:] |= paired
            alone = np.sort(order[~kept])
            warnings.warn(
                f"{self.source}: {unmatched} BEGIN / END events without their other half on "
                f"their engine (the first at line {int(alone[0]) + 2}) are left out",
                stacklevel=5,
            )
        return begin, end

    def counter_values(self) -> list[tuple[str, pa.Array, NDArray[np.int64]]]:
        """(column, its texts at the rows, the COUNTER rows giving it) per value column, each
        text checked to be a number."""
        out: list[tuple[str, pa.Array, NDArray[np.int64]]] = []
        counter = pa.array(np.flatnonzero(self.kind == 3))
        for column in VALUE_COLUMNS:
            if column not in self.table.column_names or not len(counter):
                continue
            at_counters = self.table.column(column).chunk(0).take(counter)
            given = pc.not_equal(at_counters, "")
            rows = np.asarray(counter.filter(given).to_numpy(), dtype=np.int64)
            if not len(rows):
                continue
            texts = at_counters.filter(given)
            number = pc.match_substring_regex(texts, _JSON_NUMBER)
            if not pc.all(number).as_py():
                numeric = np.ones(self.n, dtype=bool)
                numeric[rows] = number.to_numpy(zero_copy_only=False)
                self._require(pa.array(numeric), f"a number as {column}")
            out.append((column, texts, rows))
        return out

    def dictionary(self, column: str) -> tuple[NDArray[np.int32], list[str]]:
        """A coded column's indices per row and its distinct values (all "" when absent)."""
        if column not in self.table.column_names or self.n == 0:
            return np.zeros(self.n, np.int32), [""]
        return self._codes(column), self._dictionary(column)

    def lane_names(self) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        for pid, name in self.device_names.items():
            events.append(
                {
                    "ph": "M",
                    "name": "process_name",
                    "pid": pid,
                    "tid": "",
                    "args": {"name": f"/device:HPU:{pid} ({name or 'device'})"},
                }
            )
        lanes = [divmod(int(lane), self.width) for lane in self.lanes.tolist()]
        order = engine_order([self.engine_names[engine] for _, engine in lanes])
        for tid, (pid, engine) in enumerate(lanes):
            events.append(gaudi_node_spans.lane_name(pid, tid, self.engine_names[engine]))
            events.append(
                {
                    "ph": "M",
                    "name": "thread_sort_index",
                    "pid": pid,
                    "tid": tid,
                    "args": {"sort_index": order[tid]},
                }
            )
        return events


def engine_order(names: list[str]) -> list[int]:
    """Each engine lane's place under its device: by engine class (MME, TPC, DMA, NIC, ...,
    then the others, such as the cache slices), then the engine's number, then the die
    (`[HD0] TPC 0`, `[HD1] TPC 0`, ..., `[HD0] TPC 1`), so one class's lanes sit together."""
    from hpuprof.trace.normalize import gaudi_engine
    from hpuprof.trace.schema import GAUDI_ENGINE_PREFIXES

    classes = list(dict.fromkeys(kind for _, kind in GAUDI_ENGINE_PREFIXES))

    def key(name: str) -> tuple[Any, ...]:
        die, _, engine = name.rpartition("]")
        kind = gaudi_engine(name)
        rank = classes.index(kind) if kind in classes else len(classes)
        return (rank, _natural(engine.strip()), _natural(die))

    ranked = sorted(range(len(names)), key=lambda i: key(names[i]))
    return [ranked.index(i) for i in range(len(names))]


def _natural(text: str) -> tuple[Any, ...]:
    """Sort key that puts "TPC 2" before "TPC 10"."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", text))


def _device_index(device: str) -> int:
    match = _DEVICE_INDEX.search(device)
    return int(match.group(1)) if match else 0
