"""The run writer: one rank's files in a run directory, and its entries in `run.json`.

`RunWriter` owns what a recording puts on disk (layout in `run_dir.py`):

- the trace, streamed to `traces/<stem>-rank<R>.pt.trace.incomplete.json` while the run goes on
  (`stream_writer.py`: valid JSON after every chunk), renamed to `.pt.trace.json` at the end;
- the Habana metrics dump `metrics/<stem>-rank<R>.json`;
- the rank's entries in `run.json`: announced at start, already naming the streaming file (so a
  run killed at any moment loads), and swapped for the final file in one atomic update at the
  end, with how the rank ended, its event counts and warnings;
- the scratch folder the torch backends export their windows into.

Every write happens under `lock` and inside `shield` (the signal guard's `busy`: a signal that
arrives meanwhile is handled once the write is whole).

A failed write (a full disk) never reaches the profiled program: the trace file is left as it
was before that write (valid, every earlier event in it), the failure is said once on stderr
and kept in `write_failure` (the capture session then stops recording), later events are
dropped, and `finish` writes what it still can: `run.json` says so under `write_error` and
`warnings`, naming the trace as it is on disk. So that this last update fits on a disk the
trace filled, a small reserve file is written in the scratch folder at the start and removed
at the first failed write. The Perfetto trace is not written here:
that is done outside the recording process's stop (`perfetto_export.py`).
"""

from __future__ import annotations

import collections
import contextlib
import re
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import orjson

from hpuprof.capture.run_dir import (
    FILE_KEYS,
    RunPaths,
    now_iso,
    update_manifest,
)
from hpuprof.capture.run_end import RunEnd
from hpuprof.capture.stream_writer import ChunkedTraceWriter
from hpuprof.errors import HpuprofError, OutputError
from hpuprof.path_text import path_text
from hpuprof.trace.atomic_write import write_bytes_atomic
from hpuprof.trace.leftovers import scratch_prefix
from hpuprof.trace.schema import METADATA_KEY

Shield = Callable[[], contextlib.AbstractContextManager[None]]
"""A context a write runs in, so a signal cannot cut it (`SignalGuard.busy`)."""
MetricsSource = Callable[[], "list[dict[str, Any]] | None"]
"""The backend's metrics records, read at the end of the run (None: it has none)."""

RESERVE_BYTES = 512 * 1024
"""Space held back at the start for the end of a run whose disk fills (see the module doc)."""

_CAT_VALUE = re.compile(rb'"cat"\s*:\s*"([^"]*)"')


def trace_header(
    metadata: Mapping[str, Any], *, rank: int, world_size: int, comm_backend: str, base_ns: int
) -> dict[str, Any]:
    """The trace's top-level keys written before `traceEvents` (so a killed run keeps them)."""
    return {
        "schemaVersion": 1,
        "deviceProperties": [],
        "distributedInfo": {"rank": rank, "world_size": world_size, "backend": comm_backend},
        METADATA_KEY: dict(metadata),
        "displayTimeUnit": "ms",
        "baseTimeNanoseconds": base_ns,
    }


class RunWriter:
    """Writes one rank's trace, metrics and manifest entries (see the module doc).

    Args:
        paths: where this rank writes.
        shield: the context every write runs in (default: none).
    """

    def __init__(self, paths: RunPaths, shield: Shield = contextlib.nullcontext) -> None:
        self.paths = paths
        self.lock = threading.RLock()
        self.event_counts: collections.Counter[str] = collections.Counter()
        self.files: dict[str, list[str]] = {key: [] for key in FILE_KEYS}
        self.warnings: list[str] = []
        self.scratch_dir = paths.root
        self._shield = shield
        self._stream: ChunkedTraceWriter | None = None
        self._trace_keys: dict[str, Any] = {}
        self._scratch: tempfile.TemporaryDirectory[str] | None = None
        self.write_failure: str | None = None
        """Why the trace stopped growing (a write failed), or None."""

    @property
    def trace_path(self) -> Path:
        """The trace: the streaming file while it is open, the final one otherwise."""
        if self._stream is not None and not self._stream.closed:
            return self._stream.path
        return self.paths.trace

    def open(self, header: Mapping[str, Any]) -> None:
        """Start the streaming trace file with `header`, and the scratch folder."""
        root = self.paths.root
        # torch's export takes only a UTF-8 path: under a run directory whose name is not,
        # the scratch folder goes to the system's temporary directory
        within = root if path_text(root) == str(root) else None
        self._scratch = tempfile.TemporaryDirectory(prefix=scratch_prefix(), dir=within)
        self.scratch_dir = Path(self._scratch.name)
        self._stream = ChunkedTraceWriter(self.paths.trace, header)
        with contextlib.suppress(OSError):  # (the start checked there is room for more)
            self._reserve().write_bytes(bytes(RESERVE_BYTES))

    def _reserve(self) -> Path:
        return self.scratch_dir / "reserve"

    def announce(self, manifest: Mapping[str, Any]) -> None:
        """Enter this rank in `run.json` (`run_dir.base_manifest` fields), naming the
        streaming trace, so a run killed from now on loads."""
        streaming = self._streaming_name()
        update_manifest(
            self.paths.root,
            {**manifest, "traces": [streaming], "incomplete": [streaming]},
            fresh_for_rank=self.paths.rank,
        )

    def _streaming_name(self) -> str:
        assert self._stream is not None, "RunWriter.open() first"
        return self.paths.rel(self._stream.path)

    # --- while the run goes on ---------------------------------------------------------------
    def emit(self, events: list[dict[str, Any]]) -> None:
        """Stream a chunk of Chrome-trace events (thread-safe)."""
        if not events or self._stream is None or self.write_failure is not None:
            return
        with self.lock, self._shield():
            try:
                self._stream.write(events)
            except OutputError as error:
                self.output_failed(error)
                return
            counts = self.event_counts
            for ev in events:
                counts[ev.get("cat") or ev.get("ph", "")] += 1

    def emit_raw(self, body: bytes) -> None:
        """Stream already-encoded events (a Kineto export's traceEvents bytes)."""
        if self._stream is None or self.write_failure is not None:
            return
        with self.lock, self._shield():
            try:
                self._stream.write_raw(body)
            except OutputError as error:
                self.output_failed(error)
                return
            for cat, n in collections.Counter(_CAT_VALUE.findall(body)).items():
                self.event_counts[cat.decode("utf-8", "replace")] += n

    @property
    def failed(self) -> bool:
        """A write failed: nothing more goes to the trace (see the module doc)."""
        return self.write_failure is not None

    def output_failed(self, error: OutputError) -> None:
        """A failed write (here or into the scratch folder): remember the first, say it once
        on stderr; nothing more is written to the trace (see the module doc)."""
        if self.write_failure is not None:
            return
        stream = self._stream
        kept = stream.events_written if stream is not None else 0
        self.write_failure = (
            f"{error}: recording stopped; the trace keeps the {kept} events written before"
        )
        self.warn(self.write_failure)
        with contextlib.suppress(OSError):  # room for the trace's end and run.json
            self._reserve().unlink(missing_ok=True)
        print(f"hpuprof: warning: {self.write_failure}", file=sys.stderr, flush=True)

    def set_trace_keys(self, keys: Mapping[str, Any]) -> None:
        """Top-level keys learnt on the way (deviceProperties, ...), written at the end."""
        self._trace_keys.update(keys)

    def warn(self, text: str) -> None:
        """A problem the run survived; listed under `warnings` in `run.json` at the end."""
        self.warnings.append(text)

    def copy_trace(self, path: str | Path) -> None:
        """Copy the trace as it is now to `path` (valid JSON, also while the run goes on)."""
        with self.lock:
            shutil.copyfile(self.trace_path, path)

    # --- the end -----------------------------------------------------------------------------
    def finish(
        self,
        end: RunEnd,
        *,
        errors: list[str],
        metrics: MetricsSource,
        extra: Mapping[str, Any],
    ) -> None:
        """Close the trace under its final name, write the metrics, and swap the streaming
        file for the final one in `run.json` with how the rank ended -- in one atomic update.

        Args:
            end: how this rank ended.
            errors: what went wrong while stopping the recording (the run is written all the
                same; they are listed under `warnings` and raised as one `HpuprofError`).
            metrics: reads the backend's metrics records.
            extra: further manifest keys (e.g. `dynamo_counters`).
        """
        stream = self._stream
        assert stream is not None, "RunWriter.open() first"
        streaming = self._streaming_name()
        try:
            trace: Path | None = stream.close(self._trace_keys)
        except OutputError as error:  # the incomplete file stays, valid, named in run.json
            self.output_failed(error)
            trace = None
        if stream.header_dropped:
            self.warn("the trace's late top-level keys (deviceProperties...) did not fit")
        self.files["traces"].append(streaming if trace is None else self.paths.rel(trace))
        self._write_metrics(metrics)
        rank = str(self.paths.rank)
        ending: dict[str, Any] = {
            "end_time": now_iso(),
            "end_ns": time.time_ns(),
            "status": end.legacy_status,
            "ends": {rank: end.to_json()},
            "traces": self.files["traces"],
            "metrics": self.files["metrics"],
            "event_counts": {rank: dict(self.event_counts)},
            **extra,
        }
        if errors or self.warnings:
            ending["warnings"] = [*errors, *self.warnings]
        if self.write_failure is not None:
            ending["write_error"] = self.write_failure
        # one atomic update swaps the streaming file for the final one (both exist meanwhile)
        gone = [] if trace is None else [streaming]
        try:
            update_manifest(self.paths.root, ending, remove={"incomplete": gone, "traces": gone})
        except OutputError as error:  # it still names the streaming file, kept: the run loads
            print(f"hpuprof: warning: run.json not updated: {error}", file=sys.stderr)
        else:
            stream.discard_incomplete()
        if errors:
            raise HpuprofError("; ".join(errors))

    def _write_metrics(self, metrics: MetricsSource) -> None:
        try:
            records = metrics()
        except Exception as error:  # a metrics API problem must not lose the trace
            self.warn(f"metrics not written: {error}")
            return
        if records is None:
            return
        body = b",\n".join(orjson.dumps(r) for r in records)
        try:
            write_bytes_atomic(self.paths.metrics, b"[" + body + b"]\n")
        except OutputError as error:  # the trace matters more; the run goes on
            self.warn(f"metrics not written: {error}")
            return
        self.files["metrics"].append(self.paths.rel(self.paths.metrics))

    def release(self) -> None:
        """Remove the scratch folder (the recording is over)."""
        if self._scratch is not None:
            self._scratch.cleanup()
            self._scratch = None
