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
        self.header_dropped = False  # close() could not rewrite the header (disk full)
        try:
            # unbuffered: every write goes to the OS at once, so a failed one leaves nothing
            # pending that a later flush would put over the restored end (see `_restore`)
            self._file: IO[bytes] = open(self.path, "w+b", buffering=0)  # noqa: SIM115
            self._pos = self._events_start = self._write_at(
                0, b"{" + _dump_items(header) + b'"traceEvents":[\n'
            )
            self._write_at(self._pos, _CLOSE)
        except OSError as error:
            raise self._error(error) from None

    def _error(self, error: OSError) -> OutputError:
        if error.errno == errno.ENOSPC:
            return OutputError(f"disk full while writing {self.path}; the trace is incomplete")
        return OutputError(f"cannot write {self.path}: {error.strerror or error}")

    def _write_at(self, pos: int, data: bytes) -> int:
        """Write all of `data` at file offset `pos` (short writes continued); the end offset."""
        fd = self._file.fileno()
        view = memoryview(data)
        while view:
            written = os.pwrite(fd, view, pos)
            if written <= 0:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            pos += written
            view = view[written:]
        return pos

    def _restore(self) -> None:
        """After a failed write: the file as it was before it (the events up to `_pos`, then
        the closing bytes). Truncating first frees what the failed write took, so the closing
        bytes fit again; if even they do not, the file ends after its last whole event, which
        the loader reads as a truncated trace."""
        with contextlib.suppress(OSError):
            os.ftruncate(self._file.fileno(), self._pos)
            self._write_at(self._pos, _CLOSE)

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
        """Write encoded events over the closing bytes, then the closing bytes again: the file
        is valid JSON before and after. A failed write (disk full) is undone (`_restore`) and
        raised as `OutputError`: the file keeps every event written before it."""
        if self.closed:
            raise OutputError(f"{self.final_path} is already closed")
        body = b",\n" + data if self.events_written else data
        try:
            self._write_at(self._pos, b"".join((body, _CLOSE)))
        except OSError as error:
            self._restore()
            raise self._error(error) from None
        self._pos += len(body)

    def close(self, header_updates: Mapping[str, Any] | None = None) -> Path:
        """Finish the trace, fsync it and rename it to the final name; returns that name.

        Args:
            header_updates: top-level keys learnt during the run (e.g. torch's
                deviceProperties). They go into the header, so the file keeps one copy of each
                key and `traceEvents` followed only by `traceName`: the final file is then
                rewritten once (a sequential copy) to a temporary name before the rename.
                When that copy does not fit on the disk, the file is finished without them
                (`header_dropped`).

        Raises:
            OutputError: the end could not be written; the `.incomplete.json` file is left
                as it was (valid, every event in it).
        """
        if self.closed:
            return self.final_path
        tail = b"\n]," + _dump_items({"traceName": path_text(self.final_path)})[:-2] + b"}\n"
        updates = {k: v for k, v in (header_updates or {}).items() if k != "traceName"}
        fd = self._file.fileno()
        try:
            end = self._write_at(self._pos, tail)
            os.ftruncate(fd, end)
        except OSError as error:
            self._restore()
            raise self._error(error) from None
        try:
            if updates:
                try:
                    self._rewrite_with_header({**self.header, **updates})
                    self.closed = True
                    return self.final_path
                except OSError as error:
                    if error.errno != errno.ENOSPC:
                        raise
                    self.header_dropped = True  # the events matter more than these keys
            os.fsync(fd)
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
