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
arrives meanwhile is handled once the write is whole). The Perfetto trace is not written here:
that is done outside the recording process's stop (`perfetto_export.py`).
"""

from __future__ import annotations

import collections
import contextlib
import re
import shutil
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
from hpuprof.errors import HpuprofError
from hpuprof.path_text import path_text
from hpuprof.trace.atomic_write import write_bytes_atomic
from hpuprof.trace.leftovers import scratch_prefix
from hpuprof.trace.schema import METADATA_KEY

Shield = Callable[[], contextlib.AbstractContextManager[None]]
"""A context a write runs in, so a signal cannot cut it (`SignalGuard.busy`)."""
MetricsSource = Callable[[], "list[dict[str, Any]] | None"]
"""The backend's metrics records, read at the end of the run (None: it has none)."""

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
        if not events or self._stream is None:
            return
        with self.lock, self._shield():
            self._stream.write(events)
            counts = self.event_counts
            for ev in events:
                counts[ev.get("cat") or ev.get("ph", "")] += 1

    def emit_raw(self, body: bytes) -> None:
        """Stream already-encoded events (a Kineto export's traceEvents bytes)."""
        if self._stream is None:
            return
        with self.lock, self._shield():
            self._stream.write_raw(body)
            for cat, n in collections.Counter(_CAT_VALUE.findall(body)).items():
                self.event_counts[cat.decode("utf-8", "replace")] += n

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
        trace = stream.close(self._trace_keys)
        self.files["traces"].append(self.paths.rel(trace))
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
        # one atomic update swaps the streaming file for the final one (both exist meanwhile)
        update_manifest(
            self.paths.root, ending, remove={"incomplete": [streaming], "traces": [streaming]}
        )
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
        write_bytes_atomic(self.paths.metrics, b"[" + body + b"]\n")
        self.files["metrics"].append(self.paths.rel(self.paths.metrics))

    def release(self) -> None:
        """Remove the scratch folder (the recording is over)."""
        if self._scratch is not None:
            self._scratch.cleanup()
            self._scratch = None
