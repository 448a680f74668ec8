"""Read a Perfetto protobuf trace (`.perfetto-trace`, `.pftrace`) into a `Trace`.

Parsed with the `perfetto` package's `perfetto_trace_pb2`: track descriptors (process, thread
and plain tracks, parent links), TrackEvent slices (BEGIN/END, and legacy complete `X`
events), instants, counters, flows (`flow_ids` / `terminating_flow_ids`) and interned data
(event names, categories, debug-annotation names and string values), with interning state
scoped to each packet sequence and reset where the sequence says so.

Files written by hpuprof (`perfetto_write.py`) come back exactly: every column, dtype, flow,
counter and metadata entry. Other TrackEvent traces are turned into Chrome-trace events and
normalized by the same code as Kineto JSON, so they get the same derived columns.

Timestamps are taken as one clock (the packet's own); clock snapshots are not applied.
"""

from __future__ import annotations

import binascii
import os
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, cast

import numpy as np
import orjson
import pandas as pd
import pyarrow as pa
from numpy.typing import NDArray

from hpuprof.errors import TraceFormatError
from hpuprof.path_text import path_text
from hpuprof.trace.broadcast_columns import absent_arg_column
from hpuprof.trace.derive import OLDEST_READABLE_VERSION
from hpuprof.trace.perfetto_layout import (
    ANN_ARGS,
    ANN_ARGS_B64,
    ANN_COLUMNS,
    META_TRACE,
    default_for,
    dumps,
    loads,
    table_from_text,
)
from hpuprof.trace.schema import ARG_COLUMNS, NO_ID, ROW_COLUMNS, SCHEMA_VERSION
from hpuprof.trace.validate import check_trace

if TYPE_CHECKING:
    from hpuprof.trace.formats import ReadOptions
    from hpuprof.trace.model import Trace

_BEGIN, _END, _INSTANT, _COUNTER = 1, 2, 3, 4
_CLEARED: Final = 1
_EXPECTED: Final = "a Perfetto protobuf trace (a stream of TracePacket messages)"


# --- framing: locate the packets, so a broken file names the byte where it breaks ----------


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise IndexError(at)
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7


def _frame_end(data: bytes, at: int = 0) -> tuple[int, int, str | None]:
    """Walk the top-level fields from `at`: (where the complete fields end, packets, problem
    or None)."""
    packets = 0
    while at < len(data):
        start = at
        try:
            tag, at = _varint(data, at)
            if tag >> 3 == 0:
                return start, packets, "a protobuf field tag"
            wire = tag & 7
            if wire == 0:
                _, at = _varint(data, at)
            elif wire == 1:
                at += 8
            elif wire == 2:
                size, at = _varint(data, at)
                at += size
            elif wire == 5:
                at += 4
            else:
                return start, packets, f"a protobuf field (wire type {wire} is not valid)"
        except IndexError:
            return start, packets, "more bytes (the file ends inside a packet)"
        if at > len(data):
            return start, packets, "more bytes (the file ends inside a packet)"
        packets += tag >> 3 == 1
    return at, packets, None


def _parse(path: Path, data: bytes) -> Any:
    """The file's packets; a damaged file keeps every packet that parses alone (one warning
    naming the bytes dropped), and is refused only when none does."""
    from google.protobuf.message import DecodeError
    from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import Trace as TraceProto

    if not data:
        raise TraceFormatError(str(path), 0, f"{_EXPECTED}; the file is empty")
    proto = TraceProto()
    try:
        proto.ParseFromString(data)
        return proto
    except DecodeError:
        pass
    runs, first_problem = _framed_runs(data)
    if not any(packets for _, _, packets in runs):
        good, problem = first_problem or (0, "")
        raise TraceFormatError(str(path), f"byte {good} (packet 0)", f"{_EXPECTED}: {problem}")
    proto.Clear()  # (the failed parse may have left packets in it)
    kept, dropped = 0, []
    for start, end, _ in runs:
        kept_here, dropped_here = _packets_one_by_one(data[start:end], proto)
        kept += kept_here
        dropped += [start + at for at in dropped_here]
    if not kept:
        raise TraceFormatError(str(path), f"before byte {runs[-1][1]}", _EXPECTED)
    told = []
    if dropped:
        told.append(f"dropped {len(dropped)} damaged packets (at bytes {_listed(dropped)})")
    gaps = [(a[1], b[0]) for a, b in pairwise(runs)] + [(runs[-1][1], len(data))]
    gaps = [(a, b) for a, b in gaps if b > a]
    if gaps and first_problem is not None:
        spans = ", ".join(f"{a} to {b}" for a, b in gaps[:5]) + ("..." if len(gaps) > 5 else "")
        told.append(f"dropped bytes {spans}: expected {first_problem[1]}")
    warnings.warn(
        f"{path_text(path)}: damaged Perfetto trace; kept the {kept} complete packets; "
        + "; ".join(told),
        stacklevel=3,
    )
    return proto


_RESYNC_PACKETS = 3
"""Whole packets that must follow a byte for the reader to take up the stream there again after
damage (a field-1 tag inside a packet's body rarely starts that many)."""


def _framed_runs(data: bytes) -> tuple[list[tuple[int, int, int]], tuple[int, str] | None]:
    """The runs of well-framed top-level fields: (start, end, packets) each, the stream taken up
    again after each damaged stretch at the first byte that starts `_RESYNC_PACKETS` whole
    packets (or whole packets to the end); and the first problem (where, what) or None."""
    runs: list[tuple[int, int, int]] = []
    first: tuple[int, str] | None = None
    start = 0
    while True:
        end, packets, problem = _frame_end(data, start)
        runs.append((start, end, packets))
        if problem is None:
            return runs, first
        first = first or (end, problem)
        resumed = _resync(data, end + 1)
        if resumed is None:
            return runs, first
        start = resumed


def _resync(data: bytes, at: int) -> int | None:
    """The first offset from `at` where a packet tag (field 1, length-delimited) starts a run of
    whole packets, or None."""
    while (at := data.find(b"\x0a", at)) >= 0:
        end, packets, problem = _frame_end(data, at)
        if packets >= _RESYNC_PACKETS or (problem is None and packets and end == len(data)):
            return at
        at += 1
    return None


def _packets_one_by_one(data: bytes, proto: Any) -> tuple[int, list[int]]:
    """Add to `proto` each top-level packet of `data` (whole fields) that parses on its own;
    (packets kept, byte offsets of those dropped)."""
    from google.protobuf.message import DecodeError

    kept = 0
    dropped: list[int] = []
    at = 0
    while at < len(data):
        start = at
        tag, at = _varint(data, at)
        wire = tag & 7
        if wire != 2:  # (a whole field: _frame_end walked it) not a packet
            at = _skip_field(data, at, wire)
            continue
        size, at = _varint(data, at)
        body, at = data[at : at + size], at + size
        if tag >> 3 != 1:
            continue
        packet = proto.packet.add()
        try:
            packet.ParseFromString(body)
            kept += 1
        except DecodeError:
            del proto.packet[-1]
            dropped.append(start)
    return kept, dropped


def _skip_field(data: bytes, at: int, wire: int) -> int:
    if wire == 0:
        return _varint(data, at)[1]
    return at + (8 if wire == 1 else 4)


def _listed(offsets: list[int], most: int = 5) -> str:
    shown = ", ".join(map(str, offsets[:most]))
    return shown + (f" and {len(offsets) - most} more" if len(offsets) > most else "")


# --- one pass over the packets --------------------------------------------------------------


@dataclass
class _Track:
    uuid: int
    parent: int = 0
    name: str = ""
    pid: int | None = None
    tid: int | None = None
    process_name: str = ""
    thread_name: str = ""
    is_counter: bool = False


@dataclass
class _Sequence:
    names: dict[int, str] = field(default_factory=dict)
    cats: dict[int, str] = field(default_factory=dict)
    annotation_names: dict[int, str] = field(default_factory=dict)
    strings: dict[int, str] = field(default_factory=dict)
    default_track: int = 0
    last_us: int = 0


@dataclass
class _Collected:
    """What one pass over the packets gathers, in file order."""

    tracks: dict[int, _Track] = field(default_factory=dict)
    names: list[str] = field(default_factory=list)
    cats: list[str] = field(default_factory=list)
    ph: list[str] = field(default_factory=list)
    track: list[int] = field(default_factory=list)
    ts: list[int] = field(default_factory=list)
    dur: list[int] = field(default_factory=list)
    args: list[bytes] = field(default_factory=list)
    notes: list[dict[str, Any] | None] = field(default_factory=list)
    flows_out: dict[int, list[int]] = field(default_factory=dict)
    flows_end: dict[int, list[int]] = field(default_factory=dict)
    counter_track: list[int] = field(default_factory=list)
    counter_ts: list[int] = field(default_factory=list)
    counter_value: list[float] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    unmatched_ends: int = 0
    last_ts: int = 0

    def mark(self) -> tuple[int, int]:
        """Where the event and counter lists end now (see `undo`)."""
        return len(self.ts), len(self.counter_ts)

    def undo(self, mark: tuple[int, int], stacks: dict[int, list[int]]) -> None:
        """Forget the events and counters added since `mark` (a packet that failed half-way;
        the track and interning state it set stays, as the packets after it expect)."""
        events, counters = mark
        for name in ("names", "cats", "ph", "track", "ts", "dur", "args", "notes"):
            del getattr(self, name)[events:]
        for name in ("counter_track", "counter_ts", "counter_value"):
            del getattr(self, name)[counters:]
        for flows in (self.flows_out, self.flows_end):
            for index in [i for i in flows if i >= events]:
                del flows[index]
        for stack in stacks.values():
            stack[:] = [i for i in stack if i < events]


def _annotation_value(annotation: Any, seq: _Sequence) -> Any:
    kind = annotation.WhichOneof("value")
    if kind == "legacy_json_value":
        try:
            return orjson.loads(annotation.legacy_json_value)
        except orjson.JSONDecodeError:
            return annotation.legacy_json_value
    if kind == "string_value_iid":
        return seq.strings.get(annotation.string_value_iid, "")
    if kind == "pointer_value":
        return hex(annotation.pointer_value)
    if kind == "nested_value":
        return None
    if kind is not None:
        return getattr(annotation, kind)
    if annotation.dict_entries:
        return {
            _annotation_name(entry, seq): _annotation_value(entry, seq)
            for entry in annotation.dict_entries
        }
    if annotation.array_values:
        return [_annotation_value(entry, seq) for entry in annotation.array_values]
    return None


def _annotation_name(annotation: Any, seq: _Sequence) -> str:
    if annotation.HasField("name_iid"):
        return seq.annotation_names.get(annotation.name_iid, f"#{annotation.name_iid}")
    return str(annotation.name)


def _event_args(event: Any, seq: _Sequence) -> tuple[bytes, dict[str, Any] | None]:
    """(raw args JSON bytes, hpuprof column notes or None) of one TrackEvent."""
    raw = b""
    notes: dict[str, Any] | None = None
    generic: dict[str, Any] = {}
    for annotation in event.debug_annotations:
        name = _annotation_name(annotation, seq)
        if name == ANN_ARGS and annotation.HasField("legacy_json_value"):
            raw = annotation.legacy_json_value.encode()
        elif name == ANN_ARGS_B64:
            import base64

            raw = base64.b64decode(annotation.string_value)
        elif name == ANN_COLUMNS and annotation.HasField("legacy_json_value"):
            notes = orjson.loads(annotation.legacy_json_value)
        else:
            generic[name] = _annotation_value(annotation, seq)
    if generic and not raw:
        raw = dumps(generic)
    return raw, notes


def _read_sequence_state(packet: Any, sequences: dict[int, _Sequence]) -> _Sequence:
    key = packet.trusted_packet_sequence_id
    seq = sequences.get(key)
    if seq is None or packet.incremental_state_cleared or packet.sequence_flags & _CLEARED:
        default_track = seq.default_track if seq is not None else 0
        seq = sequences[key] = _Sequence(default_track=default_track)
    if packet.HasField("trace_packet_defaults"):
        defaults = packet.trace_packet_defaults
        if defaults.HasField("track_event_defaults"):
            seq.default_track = defaults.track_event_defaults.track_uuid
    if packet.HasField("interned_data"):
        interned = packet.interned_data
        for entry in interned.event_names:
            seq.names[entry.iid] = entry.name
        for entry in interned.event_categories:
            seq.cats[entry.iid] = entry.name
        for entry in interned.debug_annotation_names:
            seq.annotation_names[entry.iid] = entry.name
        for string in interned.debug_annotation_string_values:
            seq.strings[string.iid] = string.str.decode("utf-8", "replace")
    return seq


def _read_track(descriptor: Any, tracks: dict[int, _Track]) -> None:
    track = tracks.setdefault(descriptor.uuid, _Track(descriptor.uuid))
    track.parent = descriptor.parent_uuid or track.parent
    track.name = descriptor.name or descriptor.static_name or track.name
    if descriptor.HasField("process"):
        track.pid = descriptor.process.pid
        track.process_name = descriptor.process.process_name or track.process_name
    if descriptor.HasField("thread"):
        track.pid = descriptor.thread.pid
        track.tid = descriptor.thread.tid
        track.thread_name = descriptor.thread.thread_name or track.thread_name
    track.is_counter = track.is_counter or descriptor.HasField("counter")


def _timestamp(packet: Any, event: Any, seq: _Sequence) -> int:
    if packet.HasField("timestamp"):
        return _int64(packet.timestamp, "timestamp")
    if event.HasField("timestamp_absolute_us"):
        seq.last_us = event.timestamp_absolute_us
        return _int64(int(seq.last_us) * 1000, "timestamp_absolute_us")
    if event.HasField("timestamp_delta_us"):
        seq.last_us += event.timestamp_delta_us
        return _int64(int(seq.last_us) * 1000, "timestamp_delta_us")
    return 0


def _int64(value: int, what: str) -> int:
    if not -(1 << 63) <= value < 1 << 63:
        raise ValueError(f"a {what} within int64 nanoseconds (found {value})")
    return value


_DAMAGED = (
    KeyError,
    ValueError,
    TypeError,
    OverflowError,
    IndexError,
    AttributeError,
    RecursionError,
    OSError,  # pyarrow's for an IPC table that is no flatbuffer
    binascii.Error,
    pa.ArrowException,
)
"""What reading damaged packets or tables raises (UnicodeDecodeError, orjson's and json's
decode errors are ValueErrors): each becomes one TraceFormatError naming where."""


def _collect(path: Path, proto: Any) -> _Collected:
    out = _Collected()
    sequences: dict[int, _Sequence] = {}
    stacks: dict[int, list[int]] = {}
    damaged: list[int] = []
    first_why = ""
    for index, packet in enumerate(proto.packet):
        mark = out.mark()
        try:
            _collect_packet(packet, out, sequences, stacks)
        except _DAMAGED as error:  # this packet goes; what it added half is undone
            out.undo(mark, stacks)
            damaged.append(index)
            first_why = first_why or _why(error)
    if damaged:
        if len(damaged) == len(proto.packet):
            raise TraceFormatError(
                str(path), f"packet {damaged[0]}", f"a valid TracePacket ({first_why})"
            )
        warnings.warn(
            f"{path_text(path)}: dropped {len(damaged)} damaged Perfetto packets "
            f"(packets {_listed(damaged)}; the first: {first_why})",
            stacklevel=4,
        )
    for track_uuid, stack in stacks.items():  # slices never closed end at the trace's end
        for index in stack:
            out.dur[index] = max(0, out.last_ts - out.ts[index])
        if stack:
            warnings.warn(
                f"{len(stack)} slices on track {track_uuid} have no end; they end with the trace",
                stacklevel=4,
            )
    return out


def _collect_packet(
    packet: Any, out: _Collected, sequences: dict[int, _Sequence], stacks: dict[int, list[int]]
) -> None:
    kind = packet.WhichOneof("data")
    seq = _read_sequence_state(packet, sequences)
    if kind == "track_descriptor":
        _read_track(packet.track_descriptor, out.tracks)
    elif kind == "chrome_events":
        for entry in packet.chrome_events.metadata:
            value_kind = entry.WhichOneof("value")
            out.metadata[entry.name] = getattr(entry, value_kind) if value_kind else None
    elif kind == "track_event":
        _collect_event(packet, seq, out, stacks)


def _why(error: BaseException) -> str:
    text = str(error).splitlines()[0][:160] if str(error) else ""
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _collect_event(
    packet: Any, seq: _Sequence, out: _Collected, stacks: dict[int, list[int]]
) -> None:
    event = packet.track_event
    ts = _timestamp(packet, event, seq)
    out.last_ts = max(out.last_ts, ts)
    track = event.track_uuid if event.HasField("track_uuid") else seq.default_track
    kind = event.type
    duration = -1  # open until its END
    if kind == 0 and event.HasField("legacy_event"):
        phase = chr(event.legacy_event.phase)
        kind = {"B": _BEGIN, "E": _END, "X": _BEGIN, "i": _INSTANT, "I": _INSTANT}.get(phase, 0)
        duration = _int64(event.legacy_event.duration_us * 1000, "duration") if phase == "X" else -1
    if kind == _END:
        stack = stacks.get(track)
        if stack:
            index = stack.pop()
            out.dur[index] = ts - out.ts[index]
        else:
            out.unmatched_ends += 1
        return
    if kind == _COUNTER:
        is_double = event.HasField("double_counter_value")
        out.counter_track.append(track)
        out.counter_ts.append(ts)
        out.counter_value.append(
            float(event.double_counter_value if is_double else event.counter_value)
        )
        return
    if kind not in (_BEGIN, _INSTANT):
        return
    if event.HasField("name_iid"):
        name = seq.names.get(event.name_iid, "")
    elif event.HasField("legacy_event") and event.legacy_event.HasField("name_iid"):
        name = seq.names.get(event.legacy_event.name_iid, "")
    else:
        name = event.name
    cats = list(event.categories) or [seq.cats.get(iid, "") for iid in event.category_iids]
    raw, notes = _event_args(event, seq)
    index = len(out.ts)
    out.names.append(name)
    out.cats.append(",".join(cats))
    out.ph.append("X" if kind == _BEGIN else "i")
    out.track.append(track)
    out.ts.append(ts)
    out.dur.append(max(duration, 0))
    out.args.append(raw)
    out.notes.append(notes)
    flow_ids = [*event.flow_ids, *event.flow_ids_old]
    if flow_ids:
        out.flows_out[index] = flow_ids
    ends = [*event.terminating_flow_ids, *event.terminating_flow_ids_old]
    if ends:
        out.flows_end[index] = ends
    if kind == _BEGIN and duration < 0:
        stacks.setdefault(track, []).append(index)


# --- hpuprof's own files: exact columns -----------------------------------------------------


def _column(values: list[Any], template: pd.Series) -> Any:
    dtype = template.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        return pd.Categorical(values)
    return pd.Series(values, dtype=cast(Any, dtype)).array


def _own_trace(path: Path, got: _Collected, blob: dict[str, Any]) -> Trace:
    from hpuprof.trace.model import Trace

    version = blob["schema_version"]
    if isinstance(version, bool) or not isinstance(version, int):
        raise ValueError(f"schema version {version!r:.40}")
    offset = int(blob["ts_offset"])
    lanes = {int(uuid): key for uuid, key in blob["tracks"].items()}
    template = table_from_text(blob["events_dtypes"])
    order = _sound_slices(path, got, _rows_in_order(path, got.notes), lanes)
    n = len(order)
    keys = [lanes[got.track[i]] for i in order.tolist()]
    data: dict[str, list[Any]] = {
        "name": [got.names[i] for i in order],
        "cat": [got.cats[i] for i in order],
        "ph": [got.ph[i] for i in order],
        "pid": [key[1] for key in keys],
        "tid": [key[2] for key in keys],
        "rank": [key[0] for key in keys],
        "ts_ns": (np.asarray(got.ts, dtype=np.int64)[order] + offset).tolist() if n else [],
        "dur_ns": np.asarray(got.dur, dtype=np.int64)[order].tolist() if n else [],
        "args": [got.args[i] for i in order],
    }
    ordered_notes = [got.notes[i] or {} for i in order]
    noted = set().union(*ordered_notes)
    for column in template.columns:
        if column in data:
            continue
        if column in ARG_COLUMNS and column not in noted:  # (a key no row holds)
            continue
        default = default_for(column, template[column].dtype)
        data[column] = [notes.get(column, default) for notes in ordered_notes]
    for column in ("ph", "dur_ns"):
        data[column] = [
            notes.get(column, value)
            for notes, value in zip(ordered_notes, data[column], strict=True)
        ]
    rows_kept = [notes["row"] for notes in ordered_notes]
    if rows_kept != list(range(n)):  # slices were dropped: the row links follow the rows kept
        position = {row: index for index, row in enumerate(rows_kept)}
        for column in ROW_COLUMNS:
            if column in data:
                data[column] = [position.get(row, NO_ID) for row in data[column]]
    events = pd.DataFrame(
        {
            column: _column(data[column], template[column])
            if column in data
            else absent_arg_column(column, n)
            for column in template.columns
        },
        copy=False,
    )
    ctemplate = table_from_text(blob["counters_dtypes"])
    ckeys = {int(uuid): key for uuid, key in blob["counter_tracks"].items()}
    cdata: dict[str, list[Any]] = {column: [] for column in ctemplate.columns}
    stray: list[int] = []
    for track, ts, value in zip(got.counter_track, got.counter_ts, got.counter_value, strict=True):
        if track not in ckeys:  # a sample on a track hpuprof's tables do not describe
            stray.append(track)
            continue
        rank, name, series, pid, tid, cat = ckeys[track]
        row = {"rank": rank, "name": name, "series": series, "pid": pid, "tid": tid}
        row.update(cat=cat, ts_ns=ts + offset, value=value)
        for column in ctemplate.columns:
            cdata[column].append(row.get(column))
    if stray:
        warnings.warn(
            f"{path_text(path)}: dropped {len(stray)} counter samples on tracks hpuprof's "
            f"tables do not describe (tracks {_listed(sorted(set(stray)))})",
            stacklevel=4,
        )
    counters = pd.DataFrame(
        {column: _column(cdata[column], ctemplate[column]) for column in ctemplate.columns}
    )
    return Trace(
        events=events,
        counters=counters,
        flows=table_from_text(blob["flows"]),
        metadata={int(rank): meta for rank, meta in blob["metadata"].items()},
        processes=table_from_text(blob["processes"]),
        threads=table_from_text(blob["threads"]),
        sources=tuple(blob["sources"]),
        format=blob["format"],
        schema_version=version,  # (check_trace adds the derived columns of an older one)
    )


def _sound_slices(
    path: Path, got: _Collected, order: NDArray[np.int64], lanes: dict[int, Any]
) -> NDArray[np.int64]:
    """`order` without the slices on a track hpuprof's tables do not describe or that end
    before they begin (said once); a file with no slice left is refused."""
    tracks = np.asarray(got.track, dtype=np.uint64)[order] if len(order) else np.zeros(0)
    known = np.isin(tracks, np.fromiter(lanes, dtype=np.uint64, count=len(lanes)))
    ends_after = np.asarray(got.dur, dtype=np.int64)[order] >= 0 if len(order) else known
    keep = known & ends_after
    if keep.all():
        return order
    if not keep.any():
        where = f"track {int(tracks[0])}" if not known.any() else "slices"
        raise TraceFormatError(str(path), where, "a slice on a track hpuprof wrote")
    why = []
    if not known.all():
        stray = sorted({int(t) for t in tracks[~known]})
        why.append(
            f"{int((~known).sum())} on tracks hpuprof's tables do not describe "
            f"(tracks {_listed(stray)})"
        )
    if not ends_after.all():
        why.append(f"{int((~ends_after).sum())} that end before they begin")
    warnings.warn(f"{path_text(path)}: dropped slices: {'; '.join(why)}", stacklevel=4)
    return order[keep]


def _rows_in_order(path: Path, notes: list[dict[str, Any] | None]) -> NDArray[np.int64]:
    """The slices in the order of their events rows (hpuprof's column annotations). A slice
    whose row is missing, not a number or another's is dropped (said once): a damaged or
    truncated file keeps its other rows; a file with no row left is refused."""
    rows = np.full(len(notes), -1, dtype=np.int64)
    for index, note in enumerate(notes):
        row = note.get("row") if isinstance(note, dict) else None
        if not isinstance(row, bool) and isinstance(row, int) and 0 <= row < 1 << 62:
            rows[index] = row
    order = np.argsort(rows, kind="stable")
    ordered = rows[order]
    keep = ordered >= 0
    keep[1:] &= ordered[1:] != ordered[:-1]  # a row given twice: the first slice keeps it
    if keep.all():
        return order
    if len(notes) and not keep.any():
        raise TraceFormatError(str(path), "slices", "hpuprof column annotations with their row")
    dropped = np.sort(order[~keep])
    warnings.warn(
        f"{path_text(path)}: dropped {len(dropped)} slices without a valid events row of their "
        f"own (slices {_listed(dropped.tolist())})",
        stacklevel=4,
    )
    return order[keep]


# --- other TrackEvent traces: via Chrome-trace events and the shared normalizer -------------


def _lane(track: _Track | None, tracks: dict[int, _Track]) -> tuple[str, str]:
    """(pid, tid) text of a track: its thread, else its process ancestor and its own name."""
    if track is None:
        return "", ""
    if track.tid is not None:
        return str(track.pid), str(track.tid)
    node: _Track | None = track
    seen: set[int] = set()
    while node is not None and node.pid is None and node.uuid not in seen:
        seen.add(node.uuid)
        node = tracks.get(node.parent)
    pid = str(node.pid) if node is not None and node.pid is not None else ""
    if track.pid is not None and track.name == "":
        return pid, ""
    return pid, track.name or str(track.uuid)


def _us(ns: int) -> float:
    return ns / 1000.0


def _chrome_events(got: _Collected, dropped: list[str]) -> Iterator[dict[str, Any]]:
    tracks = got.tracks
    for track in tracks.values():
        if track.process_name and track.pid is not None and track.tid is None:
            yield {"ph": "M", "name": "process_name", "pid": str(track.pid), "tid": "",
                   "args": {"name": track.process_name}}  # fmt: skip
        if track.thread_name and track.tid is not None:
            yield {"ph": "M", "name": "thread_name", "pid": str(track.pid),
                   "tid": str(track.tid), "args": {"name": track.thread_name}}  # fmt: skip
    flow_seen: set[int] = set()
    for index, ts in enumerate(got.ts):
        pid, tid = _lane(tracks.get(got.track[index]), tracks)
        event: dict[str, Any] = {"ph": got.ph[index], "name": got.names[index],
                                 "cat": got.cats[index], "pid": pid, "tid": tid, "ts": _us(ts)}  # fmt: skip
        if got.ph[index] == "X":
            event["dur"] = _us(got.dur[index])
        if got.args[index]:
            try:
                event["args"] = orjson.loads(got.args[index])
            except orjson.JSONDecodeError as error:
                dropped.append(f"slice {index}: JSON args ({error.msg})")
                continue
        yield event
        for flow in got.flows_out.get(index, ()):
            phase = "t" if flow in flow_seen else "s"
            flow_seen.add(flow)
            yield {"ph": phase, "id": flow, "cat": "flow", "name": "flow", "pid": pid,
                   "tid": tid, "ts": _us(ts)}  # fmt: skip
        for flow in got.flows_end.get(index, ()):
            yield {"ph": "f", "bp": "e", "id": flow, "cat": "flow", "name": "flow",
                   "pid": pid, "tid": tid, "ts": _us(ts)}  # fmt: skip
    for track_uuid, ts, value in zip(
        got.counter_track, got.counter_ts, got.counter_value, strict=True
    ):
        counter = tracks.get(track_uuid)
        pid, _ = _lane(counter, tracks)
        name = counter.name if counter is not None and counter.name else str(track_uuid)
        yield {"ph": "C", "name": name, "cat": "", "pid": pid, "tid": "", "ts": _us(ts),
               "args": {name: value}}  # fmt: skip


_MOST_DROPPED_EVENTS = 100
"""A foreign trace with more events the normalizer refuses than this is refused whole."""
_EVENT_AT = re.compile(r"event (\d+)\b")


def _foreign_trace(path: Path, got: _Collected) -> Trace:
    """The slices as Chrome-trace events, normalized; an event the normalizer refuses (an
    `Input Dims` that is no array, say) is dropped and said, the others kept."""
    from hpuprof.trace.kineto_json import trace_from_events

    metadata = {key: value for key, value in got.metadata.items() if value is not None}
    dropped: list[str] = []
    events = list(_chrome_events(got, dropped))
    while True:
        try:
            trace = trace_from_events(events, metadata, source=path_text(path))
            break
        except TraceFormatError as error:
            match = _EVENT_AT.match(str(error.position or ""))
            index = int(match.group(1)) if match else len(events)
            if index >= len(events) or len(dropped) >= _MOST_DROPPED_EVENTS:
                raise
            bad = events.pop(index)
            dropped.append(f"{bad.get('name', '')!r} at {bad.get('ts')} us: {error.expected}")
    if dropped:
        warnings.warn(
            f"{path_text(path)}: dropped {len(dropped)} Perfetto events that are not valid "
            f"trace events ({'; '.join(dropped[:3])}{'...' if len(dropped) > 3 else ''})",
            stacklevel=3,
        )
    if dropped and not len(trace.events) and not len(trace.counters):
        raise TraceFormatError(str(path), "events", f"valid trace events ({dropped[0]})")
    return trace


def load_perfetto(path: str | os.PathLike[str]) -> Trace:
    """Read a Perfetto protobuf trace into a `Trace`.

    Args:
        path: a `.perfetto-trace` / `.pftrace` file.

    Raises:
        TraceFormatError: the file is empty, not a Perfetto trace, or has no track events.
    """
    source = Path(path)
    try:
        data = source.read_bytes()
    except OSError as error:
        raise TraceFormatError(str(source), None, f"a readable file ({error.strerror})") from None
    got = _collect(source, _parse(source, data))
    if not got.tracks and not got.ts and not got.counter_ts:
        raise TraceFormatError(str(source), 0, f"{_EXPECTED} with TrackEvent packets")
    blob_text = got.metadata.pop(META_TRACE, None)
    if blob_text is None:
        return _foreign_trace(source, got)
    try:
        blob = loads(blob_text) if isinstance(blob_text, str) else None
    except (ValueError, RecursionError):
        blob = None
    version = blob.get("schema_version") if isinstance(blob, dict) else None
    if type(version) is int and not OLDEST_READABLE_VERSION <= version <= SCHEMA_VERSION:
        raise TraceFormatError(
            str(source),
            f"metadata entry {META_TRACE}",
            f"schema version {OLDEST_READABLE_VERSION} to {SCHEMA_VERSION} "
            f"(file has {version}; export it again from the source trace)",
        )
    try:
        if not isinstance(blob, dict):
            raise ValueError("not a JSON object")
        own = _own_trace(source, got, blob)
        return check_trace(own, str(source), version=own.schema_version)
    except (*_DAMAGED, TraceFormatError) as error:  # the packets are sound: read them plain
        warnings.warn(
            f"{path_text(source)}: hpuprof's tables in metadata entry {META_TRACE} are damaged "
            f"({_why(error)}); read as a plain Perfetto trace: its slices and counters are "
            "kept, hpuprof's own columns (op ids, shapes, graph links) are lost",
            stacklevel=2,
        )
        return _foreign_trace(source, got)


def read_trace(path: Path, options: ReadOptions) -> Trace:
    """The reader of `formats.PERFETTO` (`load_perfetto`; one pass, no progress)."""
    return load_perfetto(path)
