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

The rows become Chrome-trace JSON (built column-wise in Arrow, one C pass per piece) and go
through the same decoder and normalizer as a Kineto file. Bad input: one `TraceFormatError` with
the line (1 = the header) and what was expected there; a last line cut short (a profiler
stopped mid-write) is dropped with a warning, every complete row kept.
"""

from __future__ import annotations

import re
import warnings
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
    "recipeHandle",
    "streamHandle",
)
"""Columns read dictionary-encoded (few distinct values)."""
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
    rows = _Rows(table, source)
    extra: list[dict[str, Any]] = []
    sibling = gaudi_node_spans.sibling_table(path)
    if sibling is not None:
        extra = gaudi_node_spans.span_events(
            gaudi_node_spans.read_table(sibling), rows.first_pid, path_text(sibling)
        )
    body = rows.json(extra)
    metadata = {"gaudi_hw_profiler": {"recipes": rows.recipes()}}
    from hpuprof.trace.kineto_json import trace_from_json

    trace = trace_from_json(body, metadata, source=source)
    return replace(trace, format=FORMAT_NAME, device_time="measured")


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
    bad: list[Any] = []

    def skip(row: Any) -> str:
        bad.append(row)
        return "skip"

    text = pa.dictionary(pa.int32(), pa.string())
    wanted = [c for c in (*CODED, *VALUE_COLUMNS, "Timestamp[usec]") if c in header]
    types = {c: (text if c in CODED else pa.string()) for c in wanted}
    try:
        table = pacsv.read_csv(
            path,
            parse_options=pacsv.ParseOptions(invalid_row_handler=skip),
            convert_options=pacsv.ConvertOptions(
                column_types=types, include_columns=wanted, strings_can_be_null=False
            ),
        )
    except (pa.ArrowInvalid, UnicodeDecodeError) as error:
        raise _unreadable(path, source, error) from None
    if bad:
        _truncated_or_raise(path, source, bad)
    return table.unify_dictionaries().combine_chunks()


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


class _Rows:
    """The table's columns, checked, and their JSON pieces."""

    def __init__(self, table: pa.Table, source: str) -> None:
        self.table = table
        self.source = source
        self.n = table.num_rows
        self.ts_text = (
            table.column("Timestamp[usec]").chunk(0) if self.n else pa.array([], pa.string())
        )
        self._require(
            pc.match_substring_regex(self.ts_text, _JSON_NUMBER), "a Timestamp[usec] in µs"
        )
        self.ts = pc.cast(self.ts_text, pa.float64()).to_numpy(zero_copy_only=False)
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
        device_index = np.array([_device_index(d) for d in devices] or [0], dtype=np.int64)
        self.pid = device_index[device_codes]
        self.device_names = dict(zip(device_index.tolist(), devices, strict=True))
        lane_key = self.pid * max(len(engines), 1) + self._codes("Engine")
        self.lanes, self.tid = np.unique(lane_key, return_inverse=True)
        self.engine_names = engines
        self.width = max(len(engines), 1)

    @property
    def first_pid(self) -> int:
        return int(self.pid[0]) if self.n else 0

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

    def _json(self, column: str) -> pa.Array:
        """Every row's value of a coded column as a JSON string literal (escaped once per
        distinct value)."""
        if column not in self.table.column_names or self.n == 0:
            return pa.array(['""'] * self.n, pa.string())
        chunk = self.table.column(column).chunk(0)
        literals = pa.array(
            [msgspec.json.encode(v).decode() for v in chunk.dictionary.to_pylist()], pa.string()
        )
        return literals.take(chunk.indices)

    def recipes(self) -> dict[str, str]:
        """Recipe ID -> recipe name, as the rows pair them."""
        if self.n == 0 or "Recipe ID" not in self.table.column_names:
            return {}
        if "Recipe name" not in self.table.column_names:
            return {}
        pairs = (
            self.table.select(["Recipe ID", "Recipe name"])
            .group_by(["Recipe ID", "Recipe name"])
            .aggregate([])
            .to_pylist()
        )
        return {str(p["Recipe ID"]): str(p["Recipe name"]) for p in pairs if p["Recipe ID"]}

    # --- JSON ---------------------------------------------------------------------------------

    def json(self, extra: list[dict[str, Any]]) -> bytes:
        """The rows as a JSON array of Chrome-trace events, with `extra` events appended."""
        pid = pa.array(self.pid.astype(str), pa.string()) if self.n else pa.array([], pa.string())
        tid = pa.array(self.tid.astype(str), pa.string()) if self.n else pa.array([], pa.string())
        names = self._json("Name")
        pieces: list[pa.Array] = [self._slices(pid, tid, names), self._instants(pid, tid, names)]
        pieces += self._counters(pid, tid, names)
        meta = self._lane_names() + extra
        body = b"".join(_buffer(piece) for piece in pieces if len(piece))
        return b"[" + body + msgspec.json.encode(meta)[1:]

    def _slices(self, pid: pa.Array, tid: pa.Array, names: pa.Array) -> pa.Array:
        begin, end = self._pairs()
        from hpuprof.trace.normalize import ns_from_us

        dur_ns = ns_from_us(self.ts[end], 0) - ns_from_us(self.ts[begin], 0)
        dur = pc.cast(pa.array(dur_ns / 1000.0), pa.string())
        b, e = pa.array(begin), pa.array(end)
        ts, desc = self.ts_text, self._json("HW Event description")
        return _join(
            '{"ph":"X","cat":"Kernel","name":',
            names.take(b),
            ',"pid":',
            pid.take(b),
            ',"tid":',
            tid.take(b),
            ',"ts":',
            ts.take(b),
            ',"dur":',
            dur,
            ',"args":{"recipeId":',
            self._json("Recipe ID").take(b),
            ',"Operation":',
            self._json("Operation").take(b),
            ',"Data Type":',
            self._json("Data Type").take(b),
            ',"streamHandle":',
            self._json("streamHandle").take(b),
            ',"HW Event description":',
            desc.take(b),
            ',"end HW Event description":',
            desc.take(e),
            ',"Timestamp[usec]":"',
            ts.take(b),
            '","end Timestamp[usec]":"',
            ts.take(e),
            '"}},',
        )

    def _pairs(self) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Rows of each BEGIN and the END that closes it on its lane, and a warning for the
        unmatched ones."""
        edge = np.flatnonzero(self.kind <= 1)
        order = edge[np.lexsort((edge, self.ts[edge], self.tid[edge]))]
        is_begin = self.kind[order] == 0
        same_lane = self.tid[order][:-1] == self.tid[order][1:]
        paired = is_begin[:-1] & ~is_begin[1:] & same_lane
        begin, end = order[:-1][paired], order[1:][paired]
        unmatched = len(edge) - 2 * len(begin)
        if unmatched:
            alone = np.setdiff1d(edge, np.concatenate([begin, end]))
            warnings.warn(
                f"{self.source}: {unmatched} BEGIN / END events without their other half on "
                f"their engine (the first at line {int(alone[0]) + 2}) are left out",
                stacklevel=5,
            )
        return begin, end

    def _instants(self, pid: pa.Array, tid: pa.Array, names: pa.Array) -> pa.Array:
        rows = pa.array(np.flatnonzero(self.kind == 2))
        return _join(
            '{"ph":"i","s":"t","cat":"hw_event","name":',
            self._json("HW Event description").take(rows),
            ',"pid":',
            pid.take(rows),
            ',"tid":',
            tid.take(rows),
            ',"ts":',
            self.ts_text.take(rows),
            ',"args":{"node":',
            names.take(rows),
            ',"recipeId":',
            self._json("Recipe ID").take(rows),
            ',"HW Event port":',
            self._json("HW Event port").take(rows),
            ',"Timestamp[usec]":"',
            self.ts_text.take(rows),
            '"}},',
        )

    def _counters(self, pid: pa.Array, tid: pa.Array, names: pa.Array) -> list[pa.Array]:
        out: list[pa.Array] = []
        counter = self.kind == 3
        engine = self._json("Engine")
        for column in VALUE_COLUMNS:
            if column not in self.table.column_names or not counter.any():
                continue
            values = self.table.column(column).chunk(0)
            given = np.asarray(pc.not_equal(values, "").to_numpy(zero_copy_only=False))
            rows = np.flatnonzero(counter & given)
            if not len(rows):
                continue
            taken = pa.array(rows)
            numeric = np.ones(self.n, dtype=bool)
            numeric[rows] = pc.match_substring_regex(values.take(taken), _JSON_NUMBER).to_numpy(
                zero_copy_only=False
            )
            self._require(pa.array(numeric), f"a number as {column}")
            series = engine.take(taken)
            if column != "SPMU value":  # "[HD0] TPC 1 BMON avg"
                series = pc.binary_join_element_wise(
                    pc.utf8_slice_codeunits(series, 0, -1), f' {column}"', ""
                )
            out.append(
                _join(
                    '{"ph":"C","cat":"hw_counter","name":',
                    names.take(taken),
                    ',"pid":',
                    pid.take(taken),
                    ',"tid":',
                    tid.take(taken),
                    ',"ts":',
                    self.ts_text.take(taken),
                    ',"args":{',
                    series,
                    ":",
                    values.take(taken),
                    "}},",
                )
            )
        return out

    def _lane_names(self) -> list[dict[str, Any]]:
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
        for tid, lane in enumerate(self.lanes.tolist()):
            pid, engine = divmod(int(lane), self.width)
            events.append(gaudi_node_spans.lane_name(pid, tid, self.engine_names[engine]))
            events.append(
                {
                    "ph": "M",
                    "name": "thread_sort_index",
                    "pid": pid,
                    "tid": tid,
                    "args": {"sort_index": tid},
                }
            )
        return events


def _device_index(device: str) -> int:
    match = _DEVICE_INDEX.search(device)
    return int(match.group(1)) if match else 0


def _join(*parts: Any) -> pa.Array:
    return pc.binary_join_element_wise(*parts, "")


def _buffer(array: pa.Array) -> bytes:
    """The concatenated values of a string array (its data buffer, from the first offset)."""
    array = pc.cast(array, pa.large_string()) if array.type == pa.string() else array
    offsets = np.frombuffer(array.buffers()[1], dtype=np.int64)[
        array.offset : array.offset + len(array) + 1
    ]
    data = array.buffers()[2]
    return data.to_pybytes()[int(offsets[0]) : int(offsets[-1])]
