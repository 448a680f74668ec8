"""Fast reader for Kineto / Chrome-trace JSON: bytes -> `RawColumns` -> normalized `Trace`.

How it stays fast and small (see bench/bench_load.py for the figures):
- the file is read (or gunzipped) in blocks and the `traceEvents` array is decoded in chunks
  of about `CHUNK_BYTES`, cut at event boundaries, so the decoded events of the whole file
  never coexist and consumed input bytes are dropped early;
- each chunk is decoded by msgspec into typed Structs with `args` kept as `msgspec.Raw`; a
  second typed pass over the concatenated args reads only the keys the model needs;
- columns are built per chunk: strings are interned into integer codes (categoricals); the
  raw args of a memory-mapped file are not copied (the scanner reports where each lies in the
  file: `arg_spans.py`), the events table's are gathered from the file at the end.

A chunk cut is valid exactly when `[` + chunk + `]` decodes: a cut inside a string or a nested
object leaves unbalanced JSON. The same test finds the last complete event of a truncated file.
"""

from __future__ import annotations

import codecs
import mmap
import os
import re
import warnings
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from hpuprof.errors import TraceFormatError
from hpuprof.path_text import path_text
from hpuprof.trace import fastscan
from hpuprof.trace.columns import BadValue, ColumnBuilder, Event, RawColumns
from hpuprof.trace.formats import ReadOptions
from hpuprof.trace.heap import (
    BUILD_MMAP_THRESHOLD,
    BUILD_TRIM_THRESHOLD,
    DECODE_MMAP_THRESHOLD,
    DECODE_TRIM_THRESHOLD,
    MMAP_THRESHOLD,
    arrow_on_heap,
    gc_paused,
    release_free_memory,
    set_mmap_threshold,
    small_pages,
)
from hpuprof.trace.memory_limit import threads_within_limit
from hpuprof.trace.model import Trace
from hpuprof.trace.rawio import BlockStream, map_plain

CHUNK_BYTES = 1 << 23
_BOUNDARY = re.compile(rb"\}\s*,\s*\{")
_TRACE_EVENTS_KEY = b'"traceEvents"'
_WS = b" \t\r\n"
_WS_RUN = re.compile(rb"[ \t\r\n]*")
_UTF8_BOM = b"\xef\xbb\xbf"
_OTHER_BOMS = (
    (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe\x00\x00", "UTF-32"),
    (b"\xfe\xff", "UTF-16"),
    (b"\xff\xfe", "UTF-16"),
)
_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')
_DEEP = 900
"""Nesting reported as too deep: msgspec's decoder recurses, and about 1,000 levels of arrays
or objects end in RecursionError (no trace nests anywhere near this deep)."""
_MAX_CUT_TRIES = 64
_LAST_CHUNK_BYTES = 1 << 18
_TRIM_EVERY = 8  # chunks between returns of freed heap pages to the OS
_VALIDATION_PATH = re.compile(r"`\$\[(\d+)\]((?:\.[^`]*)?)`")
_BYTE_POSITION = re.compile(r"\(byte (\d+)\)")


_EVENTS_DECODER = msgspec.json.Decoder(list[Event])
_ANY_DECODER = msgspec.json.Decoder()
_RAW_LIST_DECODER = msgspec.json.Decoder(list[msgspec.Raw])
_TRAILING = re.compile(r"trailing characters \(byte (\d+)\)")


# --- cutting the events array into chunks ------------------------------------------------------


class _ArrayEnded(Exception):
    """A chunk cut lay after the events array's `]` (in the top-level keys that follow it)."""


@dataclass
class _Decoded:
    columns: RawColumns
    metadata: dict[str, Any]
    size: int
    truncated: str | None


class _Reader:
    """Streams one file's bytes through the chunk decoder."""

    def __init__(
        self, path: Path, blocks: Iterator[bytes], mapped: mmap.mmap | None = None
    ) -> None:
        self.path = path
        self.blocks = blocks
        self.buf: bytes | mmap.mmap = b"" if mapped is None else mapped
        self.base = 0  # absolute offset of buf[0]
        self.eof = mapped is not None
        self.mapped = mapped
        self.dropped = 0  # mapped bytes before this offset are out of the resident set
        self.progress: Any = None
        self.builder = ColumnBuilder(trim=release_free_memory, mapped=mapped)
        self.events_seen = 0
        self.last_end: int | None = None  # where the last decoded event ends (absolute)
        self.chunks = 0
        self.threads = 1
        self.failed_at: int | None = None  # where the last decode that failed found bad JSON
        self.pool: ThreadPoolExecutor | None = None  # scans chunks ahead (see _scan_ahead)

    # buffer management

    def _more(self, pos: int, *, drop: bool = True) -> int:
        """Append the next blocks, dropping buf[:pos] when `drop`; return the new index of pos.

        At least as many bytes are appended as are kept, so a buffer that must grow (a long
        header, the tail, one huge event) is copied a logarithmic number of times, not once
        per block."""
        kept = len(self.buf) - pos if drop else len(self.buf)
        blocks: list[bytes] = []
        size = 0
        for block in self.blocks:
            blocks.append(block)
            size += len(block)
            if size >= kept:
                break
        else:
            self.eof = True
        if not blocks:
            return pos
        if not drop:
            self.buf = b"".join((bytes(self.buf), *blocks))  # (a mapped file has no blocks)
            return pos
        self.base += pos
        self.buf = b"".join((memoryview(self.buf)[pos:], *blocks))  # one copy
        return 0

    def _skip_ws(self, pos: int, *, drop: bool = True) -> int:
        while True:
            pos = _WS_RUN.match(self.buf, pos).end()  # type: ignore[union-attr]
            if pos < len(self.buf) or self.eof:
                return pos
            pos = self._more(pos, drop=drop)

    def error(self, pos: int | str, expected: str) -> TraceFormatError:
        where = f"byte {self.base + pos}" if isinstance(pos, int) else pos
        return TraceFormatError(str(self.path), where, expected)

    def invalid_utf8(self, error: UnicodeDecodeError) -> TraceFormatError:
        """The error for invalid UTF-8 met outside the events (where in the buffer: found)."""
        try:
            codecs.utf_8_decode(self.buf, "strict", True)
        except UnicodeDecodeError as found:
            return self.error(found.start, f"UTF-8 text ({found.reason})")
        return self.error("the top-level keys", f"UTF-8 text ({error.reason})")

    def too_deep(self) -> TraceFormatError:
        """The error for JSON nested too deep to decode: where it passes `_DEEP` levels."""
        expected = f"JSON nested at most {_DEEP} levels deep"
        depth = 0
        buf = self.buf
        for match in _TOKENS.finditer(buf):
            byte = buf[match.start()]
            if byte in b"[{":
                depth += 1
                if depth >= _DEEP:
                    return self.error(match.start(), expected)
            elif byte in b"]}":
                depth -= 1
        return self.error(0, expected)

    # the whole file

    def read(self) -> tuple[dict[str, Any], str | None]:
        if len(self.buf) < 4 and not self.eof:
            self._more(0, drop=False)
        head = bytes(self.buf[:4])
        for mark, encoding in _OTHER_BOMS:
            if head.startswith(mark):
                raise self.error(
                    0, f"UTF-8 JSON (the file starts with a {encoding} byte order mark)"
                )
        pos = self._skip_ws(len(_UTF8_BOM) if head.startswith(_UTF8_BOM) else 0)
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
        metadata = {}
        for key, value in top.items():
            try:
                metadata[key] = _ANY_DECODER.decode(value)
            except msgspec.DecodeError as error:  # a number past float64, say
                raise self.error(f"top-level key {key!r}", f"a JSON value ({error})") from None
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
        said = _BYTE_POSITION.sub("", str(error)).strip()  # its byte counts from `pos`: confusing
        return self.error(where, f"valid JSON ({said})")

    def _read_array(
        self, pos: int, *, bare: bool, metadata: dict[str, Any] | None = None
    ) -> str | None:
        """Decode the events from buf[pos] (just after `[`) to the array's end.

        Returns None, or a phrase saying where a truncated file's data ends.
        """
        while True:
            pos = self._skip_ws(pos)
            if self.pool is not None:
                pos = self._skip_ws(self._scan_ahead(pos))
            target = pos + CHUNK_BYTES
            while len(self.buf) < target + 4096 and not self.eof:
                shift = self._more(pos)
                target -= pos - shift
                pos = shift
            cut = self._decode_chunk_at_boundary(pos, target)
            if cut is None:
                return self._read_tail(pos, bare=bare, metadata=metadata)
            self._consumed(cut)
            pos = cut

    def _scan_ahead(self, pos: int) -> int:
        """Scan the chunks from buf[pos] in the thread pool, several at once, and add them in
        file order; return where the first chunk it did not take begins.

        The cuts are guessed at the first `}, {` past each chunk's target size. The compiled
        scanner takes a chunk only when the guess is an event boundary and the chunk holds
        plain events; at any other chunk (a `}, {` inside a string, the array's end, an
        error) this stops and the sequential path goes on from there, finding the right cut
        or the exact error. The scanner releases the GIL: chunks are scanned in parallel while
        this thread adds the ones already scanned.
        """
        assert self.pool is not None
        pending: list[tuple[int, int, int, Any]] = []  # (chunk start and end, next start, scan)
        ahead = 2 * self.threads
        start = pos  # where the next chunk to schedule begins
        try:
            while True:
                while len(pending) < ahead:
                    if len(self.buf) < start + CHUNK_BYTES + 4096 and not self.eof:
                        shift = pos - self._more(pos)  # drops buf[:pos]: indices move back
                        pos, start = pos - shift, start - shift
                        pending = [(b - shift, e - shift, n - shift, f) for b, e, n, f in pending]
                        continue
                    match = _BOUNDARY.search(self.buf, start + self._chunk_target(start))
                    if match is None:
                        break
                    view = memoryview(self.buf)[start : match.start() + 1]
                    scan = self.pool.submit(fastscan.scan, view, spans=self.spans)
                    del view
                    pending.append((start, match.start() + 1, match.end() - 1, scan))
                    start = match.end() - 1
                if not pending:
                    return pos
                begin, end, following, scan = pending.pop(0)
                scanned = scan.result()
                if scanned is None:
                    return pos
                self.builder.add_scanned(scanned, self._origin(begin))
                self._added(scanned[0], end)
                del scanned
                self._consumed(end)
                pos = following
        finally:
            for _, _, _, scan in pending:  # none may go on reading a buffer that moves on
                scan.cancel()
            wait([scan for _, _, _, scan in pending])

    def _chunk_target(self, start: int) -> int:
        """Bytes from `start` to look for the next cut after: `CHUNK_BYTES`, or near the end of
        the input half of what is left (down to `_LAST_CHUNK_BYTES`), so that the last bytes
        are scanned in the pool too and what this thread decodes alone after them is small."""
        left = len(self.buf) - start
        if not self.eof or left >= 2 * CHUNK_BYTES:
            return CHUNK_BYTES
        return min(CHUNK_BYTES, max(left // 2, _LAST_CHUNK_BYTES))

    def _consumed(self, pos: int, *, final: bool = False) -> None:
        """A mapped file's bytes before `pos` (all when `final`) are decoded: drop their pages
        from the resident set (they stay in the page cache; reading them again maps them back)."""
        if self.mapped is None:
            return
        end = len(self.mapped) if final else pos // mmap.PAGESIZE * mmap.PAGESIZE
        if end > self.dropped:
            if hasattr(mmap, "MADV_DONTNEED"):
                self.mapped.madvise(mmap.MADV_DONTNEED, self.dropped, end - self.dropped)
            if self.progress is not None:
                self.progress(end - self.dropped)
            self.dropped = end

    def _decode_chunk_at_boundary(self, pos: int, target: int) -> int | None:
        """Decode buf[pos:cut] for the first valid event boundary cut at or after `target`."""
        search = target
        for _ in range(_MAX_CUT_TRIES):
            match = _BOUNDARY.search(self.buf, search)
            if match is None:
                return None
            end = match.start() + 1
            try:
                if self._try_decode(pos, end):
                    return match.end() - 1
            except _ArrayEnded:  # that `}, {` is in the keys after the array: read the tail
                return None
            search = match.end() - 1
        return None

    def _try_decode(self, pos: int, end: int, *, final: bool = False) -> bool:
        """Decode buf[pos:end] as a list of events; False when the cut was not an event boundary.

        A wrong cut leaves JSON that is truncated or malformed at its very end; malformed JSON
        earlier in the chunk, or an event of the wrong shape, is an error in the file.
        """
        scanned = fastscan.scan(memoryview(self.buf)[pos:end], spans=self.spans)
        if scanned is not None:  # the compiled scanner read it (None: the msgspec path does)
            self.builder.add_scanned(scanned, self._origin(pos))
            self._added(scanned[0], end)
            return True
        self._check_utf8(pos, end)  # msgspec leaves the raw args unchecked
        mapped = self.mapped if self.buf is self.mapped else None
        if mapped is not None and not 0 < pos <= end < len(mapped):
            mapped = None
        saved = (0, 0)
        if mapped is not None:  # the bytes around the chunk become its brackets: no copy
            saved = (mapped[pos - 1], mapped[end])
            mapped[pos - 1], mapped[end] = 0x5B, 0x5D  # [ ]
            text: Any = memoryview(mapped)[pos - 1 : end + 1]
        else:
            text = b"".join((b"[", memoryview(self.buf)[pos:end], b"]"))  # one copy
        try:
            events = _EVENTS_DECODER.decode(text)
        except msgspec.ValidationError as error:
            raise self._validation_error(error, pos, end) from None
        except UnicodeDecodeError as error:  # msgspec raises it for invalid UTF-8 in a str
            raise self.error(pos - 1 + error.start, f"UTF-8 text ({error.reason})") from None
        except msgspec.DecodeError as error:
            match = _BYTE_POSITION.search(str(error))
            self.failed_at = pos - 1 + int(match.group(1)) if match else None
            if match is None or int(match.group(1)) >= len(text) - 2 or final:
                return False
            if _TRAILING.search(str(error)):
                raise _ArrayEnded from None
            raise self._decode_error(error, pos - 1) from None
        finally:
            if mapped is not None:  # the events' raw args point inside the chunk, not here
                mapped[pos - 1], mapped[end] = saved
        try:
            self.builder.add(events)
        except msgspec.MsgspecError as error:
            raise self.error(
                f"events {self.events_seen}..{self.events_seen + len(events) - 1}",
                f"an object (or nothing) as each event's 'args' ({error})",
            ) from None
        except BadValue as bad:
            raise self.error(
                self._event_place(pos, end, bad.row),
                f"{bad.expected} as {bad.field} (found {bad.found})",
            ) from None
        self._added(len(events), end)
        return True

    @property
    def spans(self) -> bool:
        """Whether chunks are scanned as spans of the mapped file (their args not copied)."""
        return self.mapped is not None and self.buf is self.mapped

    def _origin(self, pos: int) -> int | None:
        """The mapped file's offset of buf[pos] when chunks are scanned as spans, else None."""
        return self.base + pos if self.spans else None

    def _check_utf8(self, pos: int, end: int) -> None:
        """Raise for invalid UTF-8 in buf[pos:end] (the compiled scanner checks every string
        it reads; the msgspec path decodes the keys it reads but keeps `args` as raw bytes)."""
        try:
            codecs.utf_8_decode(memoryview(self.buf)[pos:end], "strict", True)
        except UnicodeDecodeError as error:
            raise self.error(pos + error.start, f"UTF-8 text ({error.reason})") from None

    def _added(self, events: int, end: int) -> None:
        """`events` more decoded, the last ending at buf[end]."""
        if events:
            self.last_end = self.base + end
        self.events_seen += events
        self.chunks += 1
        if self.chunks % _TRIM_EVERY == 0:
            release_free_memory()

    def _validation_error(
        self, error: msgspec.ValidationError, pos: int, end: int
    ) -> TraceFormatError:
        message = str(error)
        match = _VALIDATION_PATH.search(message)
        if match is None:
            return self.error(pos, f"a trace event ({message})")
        field = match.group(2).lstrip(".")
        what = message.split(" - at ")[0]
        subject = f"field {field!r}" if field else "an event object"
        return self.error(self._event_place(pos, end, int(match.group(1))), f"{subject}: {what}")

    def _event_place(self, pos: int, end: int, row: int) -> str:
        """'event N (at byte B)' for the `row`-th event of the chunk buf[pos:end]: where that
        event's `{` is, found by its JSON tokens, so that the place does not depend on where
        the chunks were cut (the compiled and the pure-Python paths cut them differently)."""
        depth = 0
        seen = -1
        for match in _TOKENS.finditer(self.buf, pos, end):
            byte = self.buf[match.start()]
            if byte in b"[{":
                if depth == 0 and byte == 0x7B:  # {
                    seen += 1
                    if seen == row:
                        return (
                            f"event {self.events_seen + row} (at byte {self.base + match.start()})"
                        )
                depth += 1
            elif byte in b"]}":
                depth -= 1
        return f"event {self.events_seen + row}"

    def _read_tail(self, pos: int, *, bare: bool, metadata: dict[str, Any] | None) -> str | None:
        """The last events, the array's `]` and (object form) the metadata keys after it."""
        while not self.eof:
            pos = self._more(pos)
        close = self._array_end(pos)
        if close is None:  # the array never closes: a truncated file (or corrupt JSON)
            return self._recover(pos)
        body = self.buf[pos:close].rstrip(_WS)
        if body and not self._try_decode(pos, pos + len(body), final=True):
            return self._recover(pos)
        extra = self._tail_metadata(self.buf[close + 1 :].strip(_WS), bare=bare)
        if extra is None:
            self._check_cut_off(close)  # corrupt JSON after the array raises here
            return f"the metadata after the events is cut off at byte {self.base + len(self.buf)}"
        if metadata is not None:
            metadata.update(extra)
        return None

    def _array_end(self, pos: int) -> int | None:
        """Index of the `]` closing the events array that starts at buf[pos], found by the JSON
        decoder itself (so `]` or `}, {` inside later keys never look like the end), or None
        when the array does not close."""
        text = b"".join((b"[", memoryview(self.buf)[pos:]))
        try:
            _RAW_LIST_DECODER.decode(text)
        except msgspec.DecodeError as error:
            match = _TRAILING.search(str(error))
            if match is None:
                return None
            close = text.rfind(b"]", 0, int(match.group(1)))
            return pos - 1 + close if close > 0 else None
        close = text.rstrip(_WS).rfind(b"]")
        return pos - 1 + close if close > 0 else None

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
            self.failed_at = None
            if self._try_decode(pos, end + 1, final=True):
                self._check_cut_off(end + 1)
                return f"the last complete event ends at byte {self.base + end + 1}"
            if self.failed_at is not None and self.failed_at < end:
                end = self.failed_at  # every longer cut fails there again: corrupt, not cut
        self._check_cut_off(pos)
        if self.last_end is not None:  # (the chunks before took every complete event)
            return f"the last complete event ends at byte {self.last_end}"
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


def load_threads(threads: int | None = None, *, cores: int | None = None) -> int:
    """Threads that scan one file's chunks: `threads`, else `$HPUPROF_LOAD_THREADS`, else
    `cores` (default: the cores this process may run on), at most 8."""
    if threads is None:
        try:
            threads = int(os.environ.get("HPUPROF_LOAD_THREADS", "0"))
        except ValueError:
            threads = 0
    if threads <= 0:
        threads = min(usable_cores() if cores is None else cores, 8)
    return max(threads, 1)


def usable_cores() -> int:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def read_raw(path: Path, progress: Any = None, threads: int | None = None) -> _Decoded:
    """Decode one Kineto/Chrome JSON file (plain or gzip) into raw columns and metadata.

    Args:
        path: the file.
        progress: called with the bytes read since its last call.
        threads: threads scanning chunks at once (see `load_threads`); a file of one chunk,
            and the pure-Python path, use one.
    """
    mapped = map_plain(path)
    stream = BlockStream(path, progress=progress)
    reader = _Reader(path, iter(()) if mapped is not None else iter(stream), mapped)
    reader.progress = progress
    reader.threads = threads_within_limit(load_threads(threads))
    if reader.threads > 1 and fastscan.available():  # (threads start with a second chunk)
        reader.pool = ThreadPoolExecutor(reader.threads, thread_name_prefix="hpuprof-scan")
    with gc_paused():
        set_mmap_threshold(DECODE_MMAP_THRESHOLD, DECODE_TRIM_THRESHOLD)
        try:
            try:
                metadata, truncated = reader.read()
            except UnicodeDecodeError as error:  # invalid UTF-8 in the keys around the events
                raise reader.invalid_utf8(error) from None
            except RecursionError:  # msgspec's decoder recurses into nested arrays and objects
                raise reader.too_deep() from None
            finally:
                fastscan.release()
                set_mmap_threshold(MMAP_THRESHOLD)
            columns = reader.builder.finish(reader.pool)  # (its joins in the scan threads)
        finally:
            if reader.pool is not None:
                reader.pool.shutdown()
    reader._consumed(0, final=True)
    del reader
    size = len(mapped) if mapped is not None else stream.size
    if mapped is not None:
        with suppress(BufferError):  # the args spans (or a traceback) still read it: it is
            mapped.close()  # unmapped when they are freed (`RawColumns.release("args")`)
    release_free_memory()
    if stream.truncation is not None:
        truncated = f"{stream.truncation}; {truncated}" if truncated else stream.truncation
    return _Decoded(columns, metadata, size, truncated)


def read_kineto_json(
    path: str | Path, *, progress: Any = None, threads: int | None = None
) -> Trace:
    """Load one Kineto/Chrome-trace JSON file (`.json`, `.json.gz`, bare gzip) into a `Trace`.

    A truncated file loads every complete event and warns once with the byte offset where its
    data ends. Anything that is not a trace raises `TraceFormatError`.
    """
    from hpuprof.trace.normalize import build_trace

    path = Path(path)
    arrow_on_heap()
    release_free_memory()
    with small_pages():
        decoded = read_raw(path, progress, threads)
        if decoded.truncated is not None:
            warnings.warn(
                f"{path_text(path)}: truncated trace ({decoded.truncated} of {decoded.size} bytes); "
                f"kept {len(decoded.columns)} complete events",
                stacklevel=2,
            )
        with gc_paused():
            set_mmap_threshold(BUILD_MMAP_THRESHOLD, BUILD_TRIM_THRESHOLD)
            try:
                trace = build_trace(
                    decoded.columns,
                    decoded.metadata,
                    source=path_text(path),
                    rank=None,
                    threads=load_threads(threads),
                )
            finally:
                set_mmap_threshold(MMAP_THRESHOLD)
        del decoded
    release_free_memory()
    return trace


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
    with gc_paused():
        reader.read()
        columns = reader.builder.finish()
    return build_trace(columns, dict(metadata), source=source, rank=rank)


def read_trace(path: Path, options: ReadOptions) -> Trace:
    """The reader of `formats.KINETO_JSON` (`read_kineto_json`)."""
    return read_kineto_json(path, progress=options.progress, threads=options.threads)
