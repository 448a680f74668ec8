"""Fast reader for Kineto / Chrome-trace JSON: bytes -> `RawColumns` -> normalized `Trace`.

How it stays fast and small (see bench/bench_load.py for the figures):
- the file is read (or gunzipped) in blocks and the `traceEvents` array is decoded in chunks
  of about `CHUNK_BYTES`, cut at event boundaries, so the decoded events of the whole file
  never coexist and consumed input bytes are dropped early;
- each chunk is decoded by msgspec into typed Structs with `args` kept as `msgspec.Raw`; a
  second typed pass over the concatenated args reads only the keys the model needs;
- columns are built per chunk: strings are interned into integer codes (categoricals), the
  raw args go straight into an Arrow binary array.

A chunk cut is valid exactly when `[` + chunk + `]` decodes: a cut inside a string or a nested
object leaves unbalanced JSON. The same test finds the last complete event of a truncated file.
"""

from __future__ import annotations

import gc
import re
import warnings
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from hpuprof.errors import TraceFormatError
from hpuprof.trace.model import Trace
from hpuprof.trace.rawio import BlockStream
from hpuprof.trace.schema import ARG_KEYS, NO_ID

CHUNK_BYTES = 1 << 23
_BOUNDARY = re.compile(rb"\}\s*,\s*\{")
_TRACE_EVENTS_KEY = b'"traceEvents"'
_WS = b" \t\r\n"
_MAX_CUT_TRIES = 64
_INT64_MAX = (1 << 63) - 1
_UINT64_LIMIT = 1 << 64
_VALIDATION_PATH = re.compile(r"`\$\[(\d+)\]((?:\.[^`]*)?)`")
_BYTE_POSITION = re.compile(r"\(byte (\d+)\)")


class _Event(msgspec.Struct, gc=False):
    ph: str = ""
    name: str = ""
    cat: str = ""
    pid: int | str = ""
    tid: int | str = ""
    ts: float | None = None
    dur: float | None = None
    id: Any = None
    bp: str = ""
    args: msgspec.Raw = msgspec.Raw(b"")


class _Args(
    msgspec.Struct,
    gc=False,
    rename={
        "external_id": "External id",
        "input_dims": "Input Dims",
        "input_types": "Input type",
        "recipe_id": "recipeId",
        **ARG_KEYS,
    },
):
    """The args keys the model reads; everything else stays in the raw `args` bytes."""

    external_id: Any = None
    correlation: Any = None
    stream: Any = None
    device: Any = None
    input_dims: msgspec.Raw = msgspec.Raw(b"")
    input_types: msgspec.Raw = msgspec.Raw(b"")
    recipe_id: Any = None
    mode: Any = None
    module: Any = None
    phase: Any = None
    graph_id: Any = None
    hpu_event: Any = None
    flush_reason: Any = None
    fallback: Any = None


_ARG_FIELDS = tuple(_Args.__struct_fields__)
_EMPTY_ARGS = _Args()
_EVENTS_DECODER = msgspec.json.Decoder(list[_Event])
_ARGS_DECODER = msgspec.json.Decoder(_Args)
_ANY_DECODER = msgspec.json.Decoder()


# --- interning ---------------------------------------------------------------------------------


class Interner:
    """Map values to dense integer codes across chunks (the categories of a column)."""

    def __init__(self) -> None:
        self.index: dict[Any, int] = {}
        self.values: list[Any] = []

    def codes(self, values: Iterable[Any]) -> NDArray[np.int32]:
        index = self.index
        before = len(index)
        codes = [index.setdefault(v, len(index)) for v in values]
        if len(index) > before:
            self.values.extend(list(index)[before:])
        return np.array(codes, dtype=np.int32)


@dataclass(frozen=True)
class Coded:
    """A column as integer codes into `categories` (text)."""

    codes: NDArray[np.int32]
    categories: list[str]

    def values(self) -> NDArray[np.object_]:
        return np.asarray(self.categories, dtype=object)[self.codes]


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _finish(codes: NDArray[np.int32], interner: Interner, convert: Any = _text) -> Coded:
    """Turn interned raw values into text categories, merging values with the same text."""
    texts = [convert(v) for v in interner.values]
    unique: dict[str, int] = {}
    remap = np.array([unique.setdefault(t, len(unique)) for t in texts], dtype=np.int32)
    if len(unique) == len(texts):
        return Coded(codes, texts)
    return Coded(remap[codes] if len(codes) else codes, list(unique))


def _compact_json(raw: Any) -> str:
    if not raw:
        return ""
    try:
        return msgspec.json.encode(_ANY_DECODER.decode(raw)).decode()
    except msgspec.DecodeError:
        return bytes(raw).decode("utf-8", "replace")


def to_int64_ids(values: list[Any]) -> NDArray[np.int64]:
    """Integer ids as int64, NO_ID when missing.

    uint64 values above int64 max are stored as their two's-complement int64 (lossless, and
    the raw value stays in `args`); text ids are parsed (`"0x1f"` too); anything else is NO_ID.
    """
    try:
        return np.array([NO_ID if v is None else v for v in values], dtype=np.int64)
    except (OverflowError, TypeError, ValueError):
        return np.array([_one_id(v) for v in values], dtype=np.int64)


def _one_id(value: Any) -> int:
    if isinstance(value, bool) or value is None:
        return NO_ID
    if isinstance(value, str):
        try:
            value = int(value)
        except ValueError:
            try:
                value = int(value, 0)
            except ValueError:
                return NO_ID
    if isinstance(value, float):
        if value != value or abs(value) >= _UINT64_LIMIT:
            return NO_ID
        value = int(value)
    if not isinstance(value, int) or not -_INT64_MAX - 1 <= value < _UINT64_LIMIT:
        return NO_ID
    return value - _UINT64_LIMIT if value > _INT64_MAX else value


# --- the raw columns of one file ---------------------------------------------------------------


@dataclass(frozen=True)
class RawColumns:
    """Every event of one file in file order, before normalization (times still in µs)."""

    ph: Coded
    name: Coded
    cat: Coded
    pid: Coded
    tid: Coded
    ts_us: NDArray[np.float64]
    dur_us: NDArray[np.float64]
    flow_id: Coded
    bp: Coded
    args: pa.ChunkedArray
    external_id: NDArray[np.int64]
    correlation: NDArray[np.int64]
    stream: NDArray[np.int64]
    device: NDArray[np.int64]
    input_dims: Coded
    input_types: Coded
    recipe_id: Coded
    mode: Coded
    module: Coded
    phase: Coded
    graph_id: Coded
    hpu_event: Coded
    flush_reason: Coded
    fallback: NDArray[np.int8]
    side_args: Mapping[int, bytes]
    """Raw args of `M` and `C` events by row (decoded as dicts by the normalizer)."""

    def __len__(self) -> int:
        return len(self.ts_us)


_CODED_EVENT = ("ph", "name", "cat", "pid", "tid", "flow_id", "bp")
_CODED_ARGS = (
    "input_dims",
    "input_types",
    "recipe_id",
    "mode",
    "module",
    "phase",
    "graph_id",
    "hpu_event",
    "flush_reason",
)
_ID_ARGS = ("external_id", "correlation", "stream", "device")


class _ColumnBuilder:
    """Accumulates decoded chunks as column pieces."""

    def __init__(self) -> None:
        self.interners = {name: Interner() for name in _CODED_EVENT + _CODED_ARGS}
        self.pieces: dict[str, list[NDArray[Any]]] = {
            name: [] for name in (*_CODED_EVENT, *_CODED_ARGS, *_ID_ARGS, "ts", "dur", "fallback")
        }
        self.args: list[pa.Array] = []
        self.side_args: dict[int, bytes] = {}
        self.rows = 0

    def add(self, events: list[_Event]) -> None:
        if not events:
            return
        n = len(events)
        ph = [e.ph for e in events]
        name = [e.name for e in events]
        cat = [e.cat for e in events]
        pid = [e.pid for e in events]
        tid = [e.tid for e in events]
        ts = [e.ts for e in events]
        dur = [e.dur for e in events]
        fid = [e.id for e in events]
        bp = [e.bp for e in events]
        args = [e.args for e in events]
        code = self._code
        ph_codes = code("ph", ph)
        code("name", name)
        code("cat", cat)
        code("pid", pid)
        code("tid", tid)
        code("flow_id", fid)
        code("bp", bp)
        self.pieces["ts"].append(np.array(ts, dtype=np.float64))
        self.pieces["dur"].append(np.array(dur, dtype=np.float64))

        lengths = np.fromiter(map(len, args), dtype=np.int64, count=n)
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        data = b"".join(args)
        self.args.append(
            pa.LargeBinaryArray.from_buffers(
                pa.large_binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)]
            )
        )
        side = [self.interners["ph"].index.get(p) for p in ("M", "C")]
        side_codes = [c for c in side if c is not None]
        if side_codes:
            for i in np.flatnonzero(np.isin(ph_codes, side_codes)).tolist():
                self.side_args[self.rows + i] = bytes(args[i])

        present = np.flatnonzero(lengths)
        parsed = _ARGS_DECODER.decode_lines(b"\n".join(args))
        if len(present) != n:
            full: list[_Args] = [_EMPTY_ARGS] * n
            for i, value in zip(present.tolist(), parsed, strict=True):
                full[i] = value
            parsed = full
        columns = [[getattr(p, field) for p in parsed] for field in _ARG_FIELDS]
        for field, values in zip(_ARG_FIELDS, columns, strict=True):
            if field in _ID_ARGS:
                self.pieces[field].append(to_int64_ids(list(values)))
            elif field == "fallback":
                self.pieces[field].append(
                    np.array([-1 if v is None else int(bool(v)) for v in values], dtype=np.int8)
                )
            elif field in ("input_dims", "input_types"):
                code(field, map(bytes, values))
            else:
                code(field, values)
        self.rows += n

    def _code(self, field: str, values: Any) -> NDArray[np.int32]:
        codes = self.interners[field].codes(values)
        self.pieces[field].append(codes)
        return codes

    def finish(self) -> RawColumns:
        def cat(field: str) -> NDArray[Any]:
            parts = self.pieces[field]
            return np.concatenate(parts) if parts else np.empty(0, dtype=np.int32)

        coded: dict[str, Coded] = {}
        for field in _CODED_EVENT + _CODED_ARGS:
            convert = _compact_json if field in ("input_dims", "input_types") else _text
            coded[field] = _finish(cat(field).astype(np.int32), self.interners[field], convert)
        ids = {f: cat(f).astype(np.int64) for f in _ID_ARGS}
        chunks = self.args or [pa.array([], pa.large_binary())]
        fields: dict[str, Any] = {**coded, **ids}
        return RawColumns(
            ts_us=cat("ts").astype(np.float64),
            dur_us=cat("dur").astype(np.float64),
            args=pa.chunked_array(chunks, type=pa.large_binary()),
            fallback=cat("fallback").astype(np.int8),
            side_args=self.side_args,
            **fields,
        )


# --- cutting the events array into chunks ------------------------------------------------------


@dataclass
class _Decoded:
    columns: RawColumns
    metadata: dict[str, Any]
    size: int
    truncated: str | None


class _Reader:
    """Streams one file's bytes through the chunk decoder."""

    def __init__(self, path: Path, blocks: Iterator[bytes]) -> None:
        self.path = path
        self.blocks = blocks
        self.buf = b""
        self.base = 0  # absolute offset of buf[0]
        self.eof = False
        self.builder = _ColumnBuilder()
        self.events_seen = 0

    # buffer management

    def _more(self, pos: int, *, drop: bool = True) -> int:
        """Append the next block, dropping buf[:pos] when `drop`; return the new index of pos."""
        try:
            block = next(self.blocks)
        except StopIteration:
            self.eof = True
            return pos
        if not drop:
            self.buf += block
            return pos
        self.base += pos
        self.buf = self.buf[pos:] + block
        return 0

    def _skip_ws(self, pos: int, *, drop: bool = True) -> int:
        while True:
            while pos < len(self.buf) and self.buf[pos] in _WS:
                pos += 1
            if pos < len(self.buf) or self.eof:
                return pos
            pos = self._more(pos, drop=drop)

    def error(self, pos: int | str, expected: str) -> TraceFormatError:
        where = f"byte {self.base + pos}" if isinstance(pos, int) else pos
        return TraceFormatError(str(self.path), where, expected)

    # the whole file

    def read(self) -> tuple[dict[str, Any], str | None]:
        pos = self._skip_ws(0)
        if pos >= len(self.buf):
            raise self.error(0, "a JSON trace (the file is empty)")
        first = self.buf[pos : pos + 1]
        if first == b"[":
            return {}, self._read_array(pos + 1, bare=True)
        if first != b"{":
            raise self.error(pos, "a JSON object or array (this is not JSON)")
        metadata, pos = self._read_header(pos)
        return metadata, self._read_array(pos, bare=False, metadata=metadata)

    def _read_header(self, start: int) -> tuple[dict[str, Any], int]:
        """Find `"traceEvents": [` and decode the metadata keys written before it."""
        search = start
        while (key := self.buf.find(_TRACE_EVENTS_KEY, search)) < 0:
            if self.eof:
                raise self._no_trace(start)
            search = max(start, len(self.buf) - len(_TRACE_EVENTS_KEY))
            shift = self._more(start)
            search -= start - shift
            start = shift
        head = self.buf[start:key].rstrip(_WS)
        try:
            if head == b"{":
                metadata: dict[str, Any] = {}
            elif head.endswith(b","):
                metadata = _ANY_DECODER.decode(head[:-1] + b"}")
            else:
                raise msgspec.DecodeError("traceEvents inside another value")
        except msgspec.DecodeError:
            return self._read_header_slowly(start)
        pos = self._skip_ws(key + len(_TRACE_EVENTS_KEY), drop=False)
        if self.buf[pos : pos + 1] != b":":
            return self._read_header_slowly(start)
        pos = self._skip_ws(pos + 1, drop=False)
        if self.buf[pos : pos + 1] != b"[":
            if pos >= len(self.buf) and self.eof:
                raise self.error(pos, "the traceEvents array (the file is truncated)")
            raise self.error(pos, "an array of events as the value of traceEvents")
        return metadata, pos + 1

    def _read_header_slowly(self, start: int) -> tuple[dict[str, Any], int]:
        """Rare layouts: decode the whole object, then read its traceEvents like a bare array."""
        while not self.eof:
            start = self._more(start)
        try:
            top = msgspec.json.decode(self.buf[start:], type=dict[str, msgspec.Raw])
        except msgspec.DecodeError as error:
            raise self._decode_error(error, start - 1) from None
        events = top.pop("traceEvents", None)
        if events is None:
            raise self._no_trace(start)
        metadata = {k: _ANY_DECODER.decode(v) for k, v in top.items()}
        body = bytes(events)
        if body[:1] != b"[":
            raise self.error("traceEvents", "an array of events as the value of traceEvents")
        self.buf, self.base = body, 0
        return metadata, 1

    def _no_trace(self, start: int) -> TraceFormatError:
        while not self.eof:
            start = self._more(start)
        try:
            _ANY_DECODER.decode(self.buf[start:])
        except msgspec.DecodeError as error:
            if "truncated" in str(error):
                return self.error(
                    len(self.buf), "a traceEvents array (the file is truncated before it)"
                )
            return self._decode_error(error, start - 1)
        return self.error(
            "top level",
            "a Chrome/Kineto trace: an object with a 'traceEvents' array or an array of events",
        )

    def _decode_error(self, error: msgspec.DecodeError, pos: int) -> TraceFormatError:
        """A JSON syntax error; `pos` is the buffer index of the decoded text's first byte."""
        match = _BYTE_POSITION.search(str(error))
        where = pos + int(match.group(1)) if match else pos
        return self.error(where, f"valid JSON ({error})")

    def _read_array(
        self, pos: int, *, bare: bool, metadata: dict[str, Any] | None = None
    ) -> str | None:
        """Decode the events from buf[pos] (just after `[`) to the array's end.

        Returns None, or a phrase saying where a truncated file's data ends.
        """
        while True:
            pos = self._skip_ws(pos)
            target = pos + CHUNK_BYTES
            while len(self.buf) < target + 4096 and not self.eof:
                shift = self._more(pos)
                target -= pos - shift
                pos = shift
            cut = self._decode_chunk_at_boundary(pos, target)
            if cut is None:
                return self._read_tail(pos, bare=bare, metadata=metadata)
            pos = cut

    def _decode_chunk_at_boundary(self, pos: int, target: int) -> int | None:
        """Decode buf[pos:cut] for the first valid event boundary cut at or after `target`."""
        search = target
        for _ in range(_MAX_CUT_TRIES):
            match = _BOUNDARY.search(self.buf, search)
            if match is None:
                return None
            end = match.start() + 1
            if self._try_decode(pos, end):
                return match.end() - 1
            search = match.end() - 1
        return None

    def _try_decode(self, pos: int, end: int, *, final: bool = False) -> bool:
        """Decode buf[pos:end] as a list of events; False when the cut was not an event boundary.

        A wrong cut leaves JSON that is truncated or malformed at its very end; malformed JSON
        earlier in the chunk, or an event of the wrong shape, is an error in the file.
        """
        text = b"[" + self.buf[pos:end] + b"]"
        try:
            events = _EVENTS_DECODER.decode(text)
        except msgspec.ValidationError as error:
            raise self._validation_error(error, pos) from None
        except msgspec.DecodeError as error:
            match = _BYTE_POSITION.search(str(error))
            if match is None or int(match.group(1)) >= len(text) - 2 or final:
                return False
            raise self._decode_error(error, pos - 1) from None
        try:
            self.builder.add(events)
        except msgspec.MsgspecError as error:
            raise self.error(
                f"events {self.events_seen}..{self.events_seen + len(events) - 1}",
                f"an object (or nothing) as each event's 'args' ({error})",
            ) from None
        self.events_seen += len(events)
        return True

    def _validation_error(self, error: msgspec.ValidationError, pos: int) -> TraceFormatError:
        message = str(error)
        match = _VALIDATION_PATH.search(message)
        if match is None:
            return self.error(pos, f"a trace event ({message})")
        index = self.events_seen + int(match.group(1))
        field = match.group(2).lstrip(".")
        what = message.split(" - at ")[0]
        subject = f"field {field!r}" if field else "an event object"
        return self.error(f"event {index} (near byte {self.base + pos})", f"{subject}: {what}")

    def _read_tail(self, pos: int, *, bare: bool, metadata: dict[str, Any] | None) -> str | None:
        """The last events, the array's `]` and (object form) the metadata keys after it."""
        while not self.eof:
            pos = self._more(pos)
        buf = self.buf
        close = len(buf)
        for _ in range(_MAX_CUT_TRIES):
            close = buf.rfind(b"]", pos, close)
            if close < 0:
                break
            tail = buf[close + 1 :].strip(_WS)
            extra = self._tail_metadata(tail, bare=bare)
            if extra is None:
                continue
            body = buf[pos:close].rstrip(_WS)
            if body and not self._try_decode(pos, pos + len(body), final=True):
                continue  # that `]` closed an array inside the tail metadata, or data ends early
            if metadata is not None:
                metadata.update(extra)
            return None
        return self._recover(pos)

    @staticmethod
    def _tail_metadata(tail: bytes, *, bare: bool) -> dict[str, Any] | None:
        if bare:
            return {} if not tail else None
        if tail == b"}":
            return {}
        if not tail.startswith(b","):
            return None
        try:
            value = _ANY_DECODER.decode(b"{" + tail[1:])
        except msgspec.DecodeError:
            return None
        return value if isinstance(value, dict) else None

    def _recover(self, pos: int) -> str:
        """Keep every complete event of a truncated file; return where its data ends.

        What follows the last complete event must be a cut-off event (or cut-off metadata
        after the array); anything else is corrupt JSON and raises.
        """
        buf = self.buf
        end = len(buf)
        for _ in range(_MAX_CUT_TRIES * 4):
            end = buf.rfind(b"}", pos, end)
            if end < 0:
                break
            if self._try_decode(pos, end + 1, final=True):
                self._check_cut_off(end + 1)
                return f"the last complete event ends at byte {self.base + end + 1}"
        self._check_cut_off(pos)
        return f"no complete event after byte {self.base + pos}"

    def _check_cut_off(self, pos: int) -> None:
        rest = self.buf[pos:].lstrip(_WS + b",")
        if rest.startswith(b"]"):
            tail = rest[1:].lstrip(_WS + b",")
            text, offset = b"{" + tail, pos + len(self.buf[pos:]) - len(tail) - 1
        else:
            text, offset = b"[" + rest, pos + len(self.buf[pos:]) - len(rest) - 1
        try:
            _ANY_DECODER.decode(text)
        except msgspec.DecodeError as error:
            if "truncated" in str(error):
                return
            raise self._decode_error(error, offset) from None


# --- public entry points ----------------------------------------------------------------------


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Millions of short-lived objects make the cyclic GC rescan the heap again and again."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def read_raw(path: Path, progress: Any = None) -> _Decoded:
    """Decode one Kineto/Chrome JSON file (plain or gzip) into raw columns and metadata."""
    stream = BlockStream(path, progress=progress)
    reader = _Reader(path, iter(stream))
    with _gc_paused():
        metadata, truncated = reader.read()
        columns = reader.builder.finish()
    if stream.truncation is not None:
        truncated = f"{stream.truncation}; {truncated}" if truncated else stream.truncation
    return _Decoded(columns, metadata, stream.size, truncated)


def read_kineto_json(path: str | Path, *, progress: Any = None) -> Trace:
    """Load one Kineto/Chrome-trace JSON file (`.json`, `.json.gz`, bare gzip) into a `Trace`.

    A truncated file loads every complete event and warns once with the byte offset where its
    data ends. Anything that is not a trace raises `TraceFormatError`.
    """
    from hpuprof.trace.normalize import build_trace

    path = Path(path)
    decoded = read_raw(path, progress)
    if decoded.truncated is not None:
        warnings.warn(
            f"{path}: truncated trace ({decoded.truncated} of {decoded.size} bytes); "
            f"kept {len(decoded.columns)} complete events",
            stacklevel=2,
        )
    return build_trace(
        decoded.columns,
        decoded.metadata,
        source=str(path),
        rank=None,
    )


def trace_from_events(
    events: list[dict[str, Any]],
    metadata: Mapping[str, Any],
    *,
    source: str,
    rank: int | None = None,
) -> Trace:
    """Build a normalized Trace from already-decoded Chrome-trace event dicts.

    The events go through the same decoder as a file, so the tables equal those of a file with
    the same events; the one difference is that `args` holds the compact JSON encoding of each
    event's args dict (a file keeps its exact bytes, whitespace included).
    """
    from hpuprof.trace.normalize import build_trace

    try:
        body = msgspec.json.encode(events)
    except (TypeError, OverflowError) as error:
        raise TraceFormatError(str(source), None, f"JSON-encodable event dicts ({error})") from None
    reader = _Reader(Path(source), iter([body]))
    with _gc_paused():
        reader.read()
        columns = reader.builder.finish()
    return build_trace(columns, dict(metadata), source=source, rank=rank)
