"""Crash-safe Chrome-trace JSON, written in chunks while the run goes on.

The in-progress file `<stem>.incomplete.json` is a complete, valid JSON document after every
chunk: the writer keeps the closing `]}` at the end of the file and writes each new chunk over
it, then writes the closing bytes again and flushes to the OS. A `kill -9` therefore leaves a
valid file (or, if it lands in the middle of a chunk, a file that `hpuprof.load` recovers up to
the last complete event). `close()` ends the array, fsyncs and gives the file its final name
in one atomic step, so a final-named file is always whole; the `.incomplete.json` name stays
(a hard link to the same bytes) until `discard_incomplete()`, so a manifest that still names it
is never left pointing at nothing. Top-level keys learnt during
the run go into the header of the final file (one sequential copy to a temporary name), so
`traceEvents` is followed only by `traceName`, as Kineto writes it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import IO, Any

import orjson

from hpuprof.errors import OutputError
from hpuprof.path_text import path_text

INCOMPLETE_SUFFIX = ".incomplete.json"
MIN_FREE_BYTES = 4 * 1024 * 1024
"""Refuse to start a run on a file system with less free space than this."""

_CLOSE = b"]}\n"
_PH_KEY = re.compile(rb'[{,]\s*"ph"\s*:')


def incomplete_path(final_path: Path) -> Path:
    """`dir/x.pt.trace.json` -> `dir/x.pt.trace.incomplete.json` (still ends in `.json`)."""
    name = final_path.name
    stem = name[: -len(".json")] if name.endswith(".json") else name
    return final_path.with_name(stem + INCOMPLETE_SUFFIX)


def check_writable_dir(directory: Path, min_free_bytes: int = MIN_FREE_BYTES) -> None:
    """Create `directory` and make sure we can write there, raising `OutputError` if not."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise OutputError(f"cannot create output directory {directory}: {error.strerror}") from None
    if not os.access(directory, os.W_OK | os.X_OK):
        raise OutputError(f"output directory {directory} is not writable")
    free = shutil.disk_usage(directory).free
    if free < min_free_bytes:
        raise OutputError(
            f"output directory {directory} has only {free} bytes free "
            f"(need at least {min_free_bytes}); free some space or pass another -o DIR"
        )


def _dump_items(items: Mapping[str, Any]) -> bytes:
    """`"k": v,` for each item: top-level keys written before or after traceEvents."""
    return b"".join(orjson.dumps(k) + b":" + orjson.dumps(v) + b",\n" for k, v in items.items())


def dump_events(events: Iterable[Mapping[str, Any]]) -> bytes:
    """Events as `{...},\\n{...}` (no brackets); empty bytes for no events."""
    seq = events if isinstance(events, list) else list(events)
    if not seq:
        return b""
    return orjson.dumps(seq, option=orjson.OPT_SERIALIZE_NUMPY)[1:-1]


class ChunkedTraceWriter:
    """Streams events into `<stem>.incomplete.json`, renamed to `final_path` by `close()`.

    Args:
        final_path: where the finished trace goes, e.g. `run/traces/trace-rank0.pt.trace.json`.
        header: top-level keys written before `traceEvents` (schemaVersion, distributedInfo,
            our `hpuprof` metadata, baseTimeNanoseconds, ...), so a killed run keeps them.
    """

    def __init__(self, final_path: Path, header: Mapping[str, Any]) -> None:
        self.final_path = Path(final_path)
        self.path = incomplete_path(self.final_path)
        self.header = dict(header)
        self.events_written = 0
        self.closed = False
        try:
            self._file: IO[bytes] = open(self.path, "w+b")  # noqa: SIM115 (kept open for the run)
            self._file.write(b"{" + _dump_items(header) + b'"traceEvents":[\n')
            self._pos = self._events_start = self._file.tell()
            self._file.write(_CLOSE)
            self._file.flush()
        except OSError as error:
            raise self._error(error) from None

    def _error(self, error: OSError) -> OutputError:
        if error.errno == errno.ENOSPC:
            return OutputError(f"disk full while writing {self.path}; the trace is incomplete")
        return OutputError(f"cannot write {self.path}: {error.strerror or error}")

    def write(self, events: Iterable[Mapping[str, Any]]) -> int:
        """Append one chunk of Chrome-trace event dicts and flush it; returns how many."""
        seq = events if isinstance(events, list) else list(events)
        data = dump_events(seq)
        if not data:
            return 0
        self._append(data)
        self.events_written += len(seq)
        return len(seq)

    def write_raw(self, body: bytes) -> int:
        """Append already-encoded events (`{...},{...}`, no brackets); returns how many.

        The count is the number of `"ph"` keys, one per Chrome-trace event."""
        body = body.strip()
        if not body:
            return 0
        self._append(body)
        n = len(_PH_KEY.findall(body))
        self.events_written += max(n, 1)
        return n

    def _append(self, data: bytes) -> None:
        """Write encoded events over the closing bytes, then the closing bytes again, flushed:
        the file is valid JSON before and after."""
        if self.closed:
            raise OutputError(f"{self.final_path} is already closed")
        sep = b",\n" if self.events_written else b""
        try:
            self._file.seek(self._pos)
            self._file.write(sep + data)
            self._pos = self._file.tell()
            self._file.write(_CLOSE)
            self._file.flush()
        except OSError as error:
            raise self._error(error) from None

    def close(self, header_updates: Mapping[str, Any] | None = None) -> Path:
        """Finish the trace, fsync it and rename it to the final name; returns that name.

        Args:
            header_updates: top-level keys learnt during the run (e.g. torch's
                deviceProperties). They go into the header, so the file keeps one copy of each
                key and `traceEvents` followed only by `traceName`: the final file is then
                rewritten once (a sequential copy) to a temporary name before the rename.
        """
        if self.closed:
            return self.final_path
        tail = b"\n]," + _dump_items({"traceName": path_text(self.final_path)})[:-2] + b"}\n"
        updates = {k: v for k, v in (header_updates or {}).items() if k != "traceName"}
        try:
            self._file.seek(self._pos)
            self._file.write(tail)
            self._file.truncate()
            self._file.flush()
            if updates:
                self._rewrite_with_header({**self.header, **updates})
            else:
                os.fsync(self._file.fileno())
                self._file.close()
                self._link_final()
        except OSError as error:
            raise self._error(error) from None
        self.closed = True
        return self.final_path

    def _tmp_path(self) -> Path:
        return self.final_path.with_name(f".{self.final_path.name}.{os.getpid()}.tmp")

    def _link_final(self) -> None:
        """The final name for the finished bytes, the incomplete name kept (see module doc);
        where hard links are not possible, a plain rename."""
        tmp = self._tmp_path()
        try:
            tmp.unlink(missing_ok=True)
            os.link(self.path, tmp)
        except OSError:
            os.replace(self.path, self.final_path)
            return
        os.replace(tmp, self.final_path)

    def discard_incomplete(self) -> None:
        """Remove the `.incomplete.json` name once nothing names it any more (after `close`)."""
        if self.closed:
            with contextlib.suppress(OSError):
                self.path.unlink(missing_ok=True)

    def _rewrite_with_header(self, header: Mapping[str, Any]) -> None:
        tmp = self._tmp_path()
        try:
            with open(tmp, "wb") as out:
                out.write(b"{" + _dump_items(header) + b'"traceEvents":[\n')
                self._file.seek(self._events_start)
                shutil.copyfileobj(self._file, out, 1 << 22)
                out.flush()
                os.fsync(out.fileno())
            self._file.close()
            os.replace(tmp, self.final_path)
        except OSError:
            tmp.unlink(missing_ok=True)
            raise

    def abandon(self) -> None:
        """Close without renaming (the `.incomplete.json` file stays, valid)."""
        if not self.closed:
            self.closed = True
            self._file.close()
