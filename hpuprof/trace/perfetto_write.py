"""Write a `Trace` as a Perfetto protobuf trace that ui.perfetto.dev opens natively.

Layout (see `perfetto_layout.py` for what hpuprof adds):
- one process track per (rank, pid) and one thread track per (rank, pid, tid) lane, named from
  the trace's `process_name` / `thread_name` metadata (device engines keep their names);
- slices as TYPE_SLICE_BEGIN/END, properly nested per track: a slice that only partly overlaps
  the open one on its lane (device lanes do this) goes to an extra track `<thread> #k` under
  the same process;
- instants as TYPE_INSTANT, counters on counter tracks, flows as `flow_ids` /
  `terminating_flow_ids` on the slices enclosing each flow point;
- event names, categories and annotation names interned on one packet sequence.

Timestamps are packet timestamps in ns; a trace with negative times is shifted by the most
negative one, and the shift is recorded so the reader restores the exact values.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Final

import numpy as np
import pandas as pd

from hpuprof.trace.atomic_write import atomic_output
from hpuprof.trace.broadcast_columns import holds_values
from hpuprof.trace.perfetto_layout import (
    ANN_ARGS,
    ANN_ARGS_B64,
    ANN_COLUMNS,
    META_SCHEMA,
    META_TRACE,
    PACKET_COLUMNS,
    SEQUENCE_ID,
    TRACK_COLUMNS,
    default_for,
    dumps,
    table_to_text,
)
from hpuprof.trace.schema import ARG_COLUMNS, SCHEMA_VERSION

if TYPE_CHECKING:
    from hpuprof.trace.model import Trace

Progress = Callable[[int, int], None]
"""Called as progress(done, total) with counts of events written."""

_INT32_MAX: Final = 2**31 - 1
_SYNTHETIC_BASE: Final = 0x40000000
_CHUNK_PACKETS: Final = 20000
_NEEDS_STATE: Final = 2  # TracePacket.SEQ_NEEDS_INCREMENTAL_STATE
_CLEARED: Final = 1  # TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
_BEGIN, _END, _INSTANT, _COUNTER = 1, 2, 3, 4
_ANNOTATION_NAMES: Final = "debug_annotation_names"


class _Interner:
    """Sequence-scoped interning tables: value -> iid, issued on first use.

    `kind` is the `InternedData` field: event_names, event_categories, debug_annotation_names.
    """

    def __init__(self) -> None:
        self._tables: dict[str, dict[str, int]] = {}

    def iid(self, packet: Any, kind: str, value: str) -> int:
        table = self._tables.setdefault(kind, {})
        iid = table.get(value)
        if iid is None:
            iid = table[value] = len(table) + 1
            entry = getattr(packet.interned_data, kind).add()
            entry.iid, entry.name = iid, value
        return iid


class _ChunkedBuilder:
    """`TraceProtoBuilder` flushed to the file every few thousand packets (bounded memory)."""

    def __init__(self, out: BinaryIO) -> None:
        from perfetto.trace_builder.proto_builder import TraceProtoBuilder

        self._factory = TraceProtoBuilder
        self._out = out
        self._builder = TraceProtoBuilder()
        self._count = 0
        self._first = True

    def packet(self, timestamp: int | None = None, *, interned: bool = False) -> Any:
        if self._count >= _CHUNK_PACKETS:
            self.flush()
        self._count += 1
        packet = self._builder.add_packet()
        packet.trusted_packet_sequence_id = SEQUENCE_ID
        if timestamp is not None:
            packet.timestamp = timestamp
        if self._first:
            packet.first_packet_on_sequence = True
            packet.sequence_flags = _CLEARED
            self._first = False
        elif interned:
            packet.sequence_flags = _NEEDS_STATE
        return packet

    def flush(self) -> None:
        if self._count:
            self._out.write(self._builder.serialize())
            self._builder = self._factory()
            self._count = 0


def _ids(values: list[str], ranks: list[int], multi_rank: bool) -> dict[tuple[int, str], int]:
    """Integer ids for (rank, text) keys: the number itself when unique and int32, else synthetic."""
    result: dict[tuple[int, str], int] = {}
    taken: set[int] = set()
    pending: list[tuple[int, str]] = []
    for key in sorted(set(zip(ranks, values, strict=True))):
        text = key[1]
        number = int(text) if text.lstrip("-").isdigit() and str(int(text)) == text else None
        usable = number is not None and 0 < number <= _INT32_MAX and number not in taken
        # small numbers (device pids 0, 1, ..., streams) repeat on every rank
        if number is not None and usable and not (multi_rank and number < 16):
            result[key] = number
            taken.add(number)
            continue
        pending.append(key)
    synthetic = _SYNTHETIC_BASE
    for key in pending:
        while synthetic in taken:
            synthetic += 1
        result[key] = synthetic
        taken.add(synthetic)
    return result


def _name_map(table: pd.DataFrame, keys: tuple[str, ...]) -> dict[tuple[Any, ...], str]:
    if table is None or table.empty or "name" not in table or not set(keys) <= set(table):
        return {}
    columns = [table[k].astype(object).tolist() for k in keys]
    names = table["name"].astype(object).tolist()
    out: dict[tuple[Any, ...], str] = {}
    for *key, name in zip(*columns, names, strict=True):
        norm = tuple(int(k) if i == 0 else str(k) for i, k in enumerate(key))
        if isinstance(name, str) and name:
            out[norm] = name
    return out


@dataclass
class _Tracks:
    """Track descriptors for processes, lanes, overlap lanes and counters."""

    multi_rank: bool
    process_names: dict[tuple[Any, ...], str]
    thread_names: dict[tuple[Any, ...], str]
    pids: dict[tuple[int, str], int]
    tids: dict[tuple[int, str], int]
    next_uuid: int = 1
    process_uuid: dict[tuple[int, str], int] = field(default_factory=dict)
    lane_uuid: dict[tuple[int, str, str, int], int] = field(default_factory=dict)
    counter_uuid: dict[tuple[Any, ...], int] = field(default_factory=dict)
    descriptors: list[tuple[str, tuple[Any, ...], int]] = field(default_factory=list)
    track_keys: dict[int, list[Any]] = field(default_factory=dict)

    def _new(self, kind: str, key: tuple[Any, ...]) -> int:
        uuid = self.next_uuid
        self.next_uuid += 1
        self.descriptors.append((kind, key, uuid))
        return uuid

    def process(self, rank: int, pid: str) -> int:
        key = (rank, pid)
        uuid = self.process_uuid.get(key)
        if uuid is None:
            uuid = self.process_uuid[key] = self._new("process", key)
        return uuid

    def lane(self, rank: int, pid: str, tid: str, layer: int) -> int:
        key = (rank, pid, tid, layer)
        uuid = self.lane_uuid.get(key)
        if uuid is None:
            self.process(rank, pid)
            uuid = self.lane_uuid[key] = self._new("lane", key)
            self.track_keys[uuid] = [rank, pid, tid]
        return uuid

    def counter(self, key: tuple[Any, ...]) -> int:
        uuid = self.counter_uuid.get(key)
        if uuid is None:
            self.process(key[0], key[3])
            uuid = self.counter_uuid[key] = self._new("counter", key)
        return uuid

    def emit(self, builder: _ChunkedBuilder) -> None:
        for kind, key, uuid in self.descriptors:
            track = builder.packet().track_descriptor
            track.uuid = uuid
            if kind == "process":
                rank, pid = key
                name = self.process_names.get(key, pid if pid else "(no pid)")
                track.process.pid = self.pids[(rank, pid)]
                track.process.process_name = f"[rank {rank}] {name}" if self.multi_rank else name
            elif kind == "lane":
                rank, pid, tid, layer = key
                name = self.thread_names.get((rank, pid, tid), tid if tid else "(no tid)")
                if layer == 0:
                    track.thread.pid = self.pids[(rank, pid)]
                    track.thread.tid = self.tids[(rank, tid)]
                    track.thread.thread_name = name
                else:
                    track.parent_uuid = self.process_uuid[(rank, pid)]
                    track.name = f"{name} #{layer}"
            else:
                rank, name, series, pid, _tid, _cat = key
                track.parent_uuid = self.process_uuid[(rank, pid)]
                track.name = name if series in ("", name) else f"{name}.{series}"
                track.counter.SetInParent()


def _lane_layers(
    lane_codes: np.ndarray, ts: np.ndarray, end: np.ndarray, slices: np.ndarray
) -> tuple[np.ndarray, list[list[tuple[int, int]]]]:
    """Assign each slice a layer so that slices on one (lane, layer) nest properly.

    Returns the layer per slice row (aligned with `slices`, sorted order) and, per slice in
    that order, the END events (row, end) to emit before its BEGIN (stack pops).
    """
    layers = np.zeros(len(slices), dtype=np.int64)
    pops: list[list[tuple[int, int]]] = []
    stacks: list[list[tuple[int, int]]] = []  # per layer: (end, row)
    current_lane = -1
    for position, row in enumerate(slices.tolist()):
        lane = int(lane_codes[row])
        start, stop = int(ts[row]), int(end[row])
        closed: list[tuple[int, int]] = []
        if lane != current_lane:
            for stack in stacks:
                closed.extend((r, e) for e, r in reversed(stack))
            stacks = []
            current_lane = lane
        chosen = -1
        for index, stack in enumerate(stacks):
            while stack and stack[-1][0] <= start and not (stack[-1][0] == start == stop):
                e, r = stack.pop()
                closed.append((r, e))
            if not stack or stop <= stack[-1][0]:
                chosen = index
                break
        if chosen < 0:
            stacks.append([])
            chosen = len(stacks) - 1
        stacks[chosen].append((stop, row))
        layers[position] = chosen
        pops.append(closed)
    tail: list[tuple[int, int]] = []
    for stack in stacks:
        tail.extend((r, e) for e, r in reversed(stack))
    pops.append(tail)
    return layers, pops


def _column_notes(events: pd.DataFrame, is_slice: np.ndarray) -> list[dict[str, Any]]:
    """Per row, the model columns that differ from their default (the `hpuprof` annotation)."""
    n = len(events)
    notes: list[dict[str, Any]] = [{"row": i} for i in range(n)]
    skip = set(TRACK_COLUMNS) | set(PACKET_COLUMNS)
    for column in events.columns:
        if column in skip or (column in ARG_COLUMNS and not holds_values(events[column])):
            continue
        series = events[column]
        default = default_for(column, series.dtype)
        if isinstance(default, float):
            mask = series.notna().to_numpy()
        else:
            mask = (series != default).to_numpy(dtype=bool, na_value=True)
        rows = np.flatnonzero(mask)
        if not len(rows):
            continue
        values = series.iloc[rows].astype(object).tolist()
        for row, value in zip(rows.tolist(), values, strict=True):
            notes[row][column] = value.item() if isinstance(value, np.generic) else value
    ph = events["ph"].astype(object).to_numpy()
    for row in np.flatnonzero(~is_slice & (ph != "i")).tolist():
        notes[row]["ph"] = ph[row]
    dur = events["dur_ns"].to_numpy()
    for row in np.flatnonzero(np.where(is_slice, dur < 0, dur != 0)).tolist():
        notes[row]["dur_ns"] = int(dur[row])  # not what the END packet gives
    return notes


def _flow_points(
    flows: pd.DataFrame,
    lane_of: dict[tuple[int, str, str], int],
    lane_codes: np.ndarray,
    ts: np.ndarray,
    end: np.ndarray,
    parent: np.ndarray,
    slices: np.ndarray,
) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
    """Attach each flow point to the deepest slice on its lane enclosing it (or next after).

    `slices` are the slice rows sorted by (lane, ts); times are unshifted nanoseconds.
    """
    outgoing: dict[int, list[int]] = {}
    terminating: dict[int, list[int]] = {}
    if flows is None or flows.empty:
        return outgoing, terminating
    sorted_rows, sorted_lanes, sorted_ts = slices, lane_codes[slices], ts[slices]
    flow_ids: dict[tuple[int, str, str], int] = {}
    for rank, cat, fid, ph, pid, tid, fts, binding in zip(
        flows["rank"].to_numpy().tolist(),
        flows["cat"].astype(object).tolist(),
        flows["id"].astype(object).tolist(),
        flows["ph"].astype(object).tolist(),
        flows["pid"].astype(object).tolist(),
        flows["tid"].astype(object).tolist(),
        flows["ts_ns"].to_numpy().tolist(),
        flows["binding"].astype(object).tolist(),
        strict=True,
    ):
        lane = lane_of.get((rank, pid, tid))
        if lane is None:
            continue
        low = np.searchsorted(sorted_lanes, lane, side="left")
        high = np.searchsorted(sorted_lanes, lane, side="right")
        at = low + np.searchsorted(sorted_ts[low:high], fts, side="right") - 1
        row = -1
        candidate = int(sorted_rows[at]) if at >= low else -1
        while candidate >= 0:
            if ts[candidate] <= fts <= end[candidate]:
                row = candidate
                break
            candidate = int(parent[candidate])
        if row < 0 and ph != "s" and binding != "e" and at + 1 < high:
            row = int(sorted_rows[at + 1])  # "next slice" binding
        if row < 0:
            continue
        number = flow_ids.setdefault((rank, cat, fid), len(flow_ids) + 1)
        (terminating if ph == "f" else outgoing).setdefault(row, []).append(number)
    return outgoing, terminating


def _metadata_blob(trace: Trace, tracks: _Tracks, ts_offset: int) -> bytes:
    blob: dict[str, Any] = {
        "schema": SCHEMA_VERSION,
        "format": trace.format,
        "sources": list(trace.sources),
        "schema_version": trace.schema_version,
        "metadata": {str(rank): dict(meta) for rank, meta in trace.metadata.items()},
        "ts_offset": ts_offset,
        "tracks": {str(uuid): key for uuid, key in tracks.track_keys.items()},
        "counter_tracks": {str(u): list(k) for k, u in tracks.counter_uuid.items()},
        "events_dtypes": table_to_text(trace.events.iloc[0:0]),
        "counters_dtypes": table_to_text(trace.counters.iloc[0:0]),
        "flows": table_to_text(trace.flows),
        "processes": table_to_text(trace.processes),
        "threads": table_to_text(trace.threads),
    }
    return dumps(blob)


@dataclass(frozen=True)
class _Events:
    """The events of a trace as the writer walks them: times shifted to be >= 0, each row's
    track, the slices in nesting order per lane and what closes before each opens."""

    ts: np.ndarray
    ts_offset: int
    is_slice: np.ndarray
    track_of: np.ndarray
    slice_rows: np.ndarray
    pops: list[list[tuple[int, int]]]
    outgoing: dict[int, list[int]]
    terminating: dict[int, list[int]]
    notes: list[dict[str, Any]]
    names: list[str]
    cats: list[str]
    args: list[bytes]


def _tracks_of(trace: Trace, events: pd.DataFrame, counters: pd.DataFrame) -> _Tracks:
    """The process and thread tracks of the trace, named from its metadata."""
    ranks = events["rank"].to_numpy().astype(np.int64).tolist()
    all_ranks = (
        set(ranks)
        | set(counters["rank"].tolist() if len(counters) else [])
        | set(trace.flows["rank"].tolist() if len(trace.flows) else [])
    )
    multi_rank = len(all_ranks) > 1
    pid_keys = events["pid"].astype(object).tolist() + (
        counters["pid"].astype(object).tolist() if len(counters) else []
    )
    pid_ranks = ranks + (counters["rank"].tolist() if len(counters) else [])
    tids = events["tid"].astype(object).tolist()
    tracks = _Tracks(
        multi_rank=multi_rank,
        process_names=_name_map(trace.processes, ("rank", "pid")),
        thread_names=_name_map(trace.threads, ("rank", "pid", "tid")),
        pids=_ids([str(p) for p in pid_keys], [int(r) for r in pid_ranks], multi_rank),
        tids=_ids([str(t) for t in tids], ranks, multi_rank),
    )
    return tracks


def _counter_keys(counters: pd.DataFrame) -> list[tuple[Any, ...]]:
    """(rank, name, series, pid, tid, cat) of each counter sample: its track's key."""
    if not len(counters):
        return []
    columns = ("name", "series", "pid", "tid", "cat")
    return list(
        zip(
            counters["rank"].tolist(),
            *(counters[c].astype(object).tolist() for c in columns),
            strict=True,
        )
    )


def _events_of(trace: Trace, events: pd.DataFrame, tracks: _Tracks, ts_offset: int) -> _Events:
    """The events laid out on `tracks` (see `_Events`)."""
    n = len(events)
    ranks = events["rank"].to_numpy().astype(np.int64)
    ts_raw = events["ts_ns"].to_numpy().astype(np.int64)
    ts = ts_raw - ts_offset
    is_slice = (events["ph"].astype(object) == "X").to_numpy(dtype=bool)
    end = ts + np.maximum(events["dur_ns"].to_numpy().astype(np.int64), 0) * is_slice
    lane_keys = zip(
        ranks.tolist(),
        events["pid"].astype(object).tolist(),
        events["tid"].astype(object).tolist(),
        strict=True,
    )
    lane_of: dict[tuple[int, str, str], int] = {}
    lane_codes = np.fromiter(
        (lane_of.setdefault(key, len(lane_of)) for key in lane_keys), dtype=np.int64, count=n
    )
    lane_list = list(lane_of)
    slice_rows = np.flatnonzero(is_slice)
    order = np.lexsort(
        (slice_rows, -(end - ts)[slice_rows], ts[slice_rows], lane_codes[slice_rows])
    )
    slice_rows = slice_rows[order]
    layers, pops = _lane_layers(lane_codes, ts, end, slice_rows)
    main_uuids = np.array([tracks.lane(r, p, t, 0) for r, p, t in lane_list], dtype=np.int64)
    track_of = main_uuids[lane_codes] if n else np.zeros(0, dtype=np.int64)
    for row, layer in zip(slice_rows.tolist(), layers.tolist(), strict=True):
        if layer:
            rank, pid, tid = lane_list[lane_codes[row]]
            track_of[row] = tracks.lane(rank, pid, tid, layer)
    parent = events["parent"].to_numpy() if "parent" in events else np.full(n, -1)
    outgoing, terminating = _flow_points(
        trace.flows, lane_of, lane_codes, ts_raw, end + ts_offset, parent, slice_rows
    )
    return _Events(
        ts=ts,
        ts_offset=ts_offset,
        is_slice=is_slice,
        track_of=track_of,
        slice_rows=slice_rows,
        pops=pops,
        outgoing=outgoing,
        terminating=terminating,
        notes=_column_notes(events, is_slice),
        names=events["name"].astype(object).tolist(),
        cats=events["cat"].astype(object).tolist(),
        args=events["args"].tolist() if "args" in events else [b""] * n,
    )


class _EventWriter:
    """Writes the TrackEvent packets of `_Events` (begin/instant with their annotations and
    flows, end) through one builder and interner."""

    def __init__(self, builder: _ChunkedBuilder, laid: _Events) -> None:
        self.builder = builder
        self.interner = _Interner()
        self.laid = laid

    def open(self, row: int, kind: int) -> None:
        laid, interner = self.laid, self.interner
        packet = self.builder.packet(int(laid.ts[row]), interned=True)
        event = packet.track_event
        event.type = kind
        event.track_uuid = int(laid.track_of[row])
        event.name_iid = interner.iid(packet, "event_names", laid.names[row])
        if laid.cats[row]:
            event.category_iids.append(interner.iid(packet, "event_categories", laid.cats[row]))
        raw = laid.args[row]
        if raw:
            annotation = event.debug_annotations.add()
            try:
                annotation.legacy_json_value = raw.decode()
                annotation.name_iid = interner.iid(packet, _ANNOTATION_NAMES, ANN_ARGS)
            except UnicodeDecodeError:
                import base64

                annotation.string_value = base64.b64encode(raw).decode("ascii")
                annotation.name_iid = interner.iid(packet, _ANNOTATION_NAMES, ANN_ARGS_B64)
        annotation = event.debug_annotations.add()
        annotation.name_iid = interner.iid(packet, _ANNOTATION_NAMES, ANN_COLUMNS)
        annotation.legacy_json_value = dumps(laid.notes[row]).decode()
        if row in laid.outgoing:
            event.flow_ids.extend(laid.outgoing[row])
        if row in laid.terminating:
            event.terminating_flow_ids.extend(laid.terminating[row])

    def close(self, closed: list[tuple[int, int]]) -> None:
        for row, stop in closed:
            packet = self.builder.packet(stop)
            packet.track_event.type = _END
            packet.track_event.track_uuid = int(self.laid.track_of[row])

    def all_events(self, progress: Progress | None) -> None:
        """Every slice (nested per lane), then every instant."""
        laid, n = self.laid, len(self.laid.ts)
        for position, row in enumerate(laid.slice_rows.tolist()):
            self.close(laid.pops[position])
            self.open(row, _BEGIN)
            if progress is not None and position % 50000 == 49999:
                progress(position + 1, n)
        self.close(laid.pops[-1])
        for row in np.flatnonzero(~laid.is_slice).tolist():
            self.open(row, _INSTANT)


def _write_counters(
    builder: _ChunkedBuilder, counters: pd.DataFrame, tracks: _Tracks, ts_offset: int
) -> None:
    if not len(counters):
        return
    values = counters["value"].to_numpy(dtype=np.float64).tolist()
    stamps = (counters["ts_ns"].to_numpy().astype(np.int64) - ts_offset).tolist()
    for key, stamp, value in zip(_counter_keys(counters), stamps, values, strict=True):
        packet = builder.packet(stamp)
        packet.track_event.type = _COUNTER
        packet.track_event.track_uuid = tracks.counter_uuid[key]
        packet.track_event.double_counter_value = value


def write_perfetto(
    trace: Trace, path: str | os.PathLike[str], *, progress: Progress | None = None
) -> Path:
    """Write `trace` to `path` as a Perfetto protobuf trace, atomically.

    Args:
        trace: the trace to write (every rank goes into the one file).
        path: the output file (`.perfetto-trace` or `.pftrace` by convention).
        progress: optional callback `(done, total)` over events.

    Returns:
        The path written.
    """
    target = Path(path)
    events = trace.events.reset_index(drop=True)
    counters = trace.counters.reset_index(drop=True)
    lows = [int(t["ts_ns"].min()) for t in (events, counters) if len(t)]
    ts_offset = min([0, *lows])
    tracks = _tracks_of(trace, events, counters)
    laid = _events_of(trace, events, tracks, ts_offset)
    for key in _counter_keys(counters):  # (after the lanes: the track ids keep their order)
        tracks.counter(key)
    with atomic_output(target) as out:
        builder = _ChunkedBuilder(out)
        meta = builder.packet()
        schema_entry = meta.chrome_events.metadata.add()
        schema_entry.name, schema_entry.int_value = META_SCHEMA, SCHEMA_VERSION
        blob_entry = meta.chrome_events.metadata.add()
        blob_entry.name = META_TRACE
        blob_entry.json_value = _metadata_blob(trace, tracks, ts_offset).decode()
        tracks.emit(builder)
        _EventWriter(builder, laid).all_events(progress)
        _write_counters(builder, counters, tracks, ts_offset)
        builder.flush()
        if progress is not None:
            progress(len(events), len(events))
    return target


def write_trace(trace: Trace, path: Path, progress: Progress | None = None) -> list[Path]:
    """The writer of `formats.PERFETTO` (`write_perfetto`)."""
    return [write_perfetto(trace, path, progress=progress)]
