"""The torch.profiler-based backends' shared part: run it, export each window, stream it.

With the user's schedule, torch runs it and each of its windows is streamed when torch hands it
over. Without one, torch would hold the whole run in memory until stop (a `kill -9` would keep
nothing), so the profiler ends windows itself (`end_window`): the running torch.profiler is
stopped, its events exported and streamed, and a fresh one started, at step boundaries or on a
timer (see `HPUProfiler(window_s=..., window_steps=...)`). A span the user opened with
`record_function` across a window's end is cut there (torch ends open spans at stop); ops,
which never straddle a Python bytecode boundary, are never cut, and step spans are ours.
"""

from __future__ import annotations

import os
import shutil
import warnings
from pathlib import Path
from typing import Any

import orjson

from hpuprof.capture.backends.base import Backend, BackendContext
from hpuprof.capture.schedule import Schedule
from hpuprof.errors import HpuprofError, OutputError

_FULL_BELOW_BYTES = 1 << 20
"""A failed export with less free space than this left beside it failed for a full disk."""

# Top-level keys we write ourselves (header) and must not repeat from torch's export.
_OWN_KEYS = frozenset(
    {"schemaVersion", "traceEvents", "displayTimeUnit", "baseTimeNanoseconds", "traceName"}
)


class TorchProfilerBackend(Backend):
    """torch.profiler with `activities()`, each window exported and streamed to our writer."""

    def __init__(self) -> None:
        self._prof: Any = None
        self._ctx: BackendContext | None = None
        self._kwargs: dict[str, Any] = {}
        self._windows = 0
        self._stopped = False
        self._abandoned = False

    def activities(self) -> list[Any]:
        raise NotImplementedError

    def profiler_kwargs(self) -> dict[str, Any]:
        """Extra torch.profiler.profile keyword arguments (subclasses add theirs)."""
        return {}

    def start(self, ctx: BackendContext) -> None:
        self._ctx = ctx
        opts = ctx.options
        kwargs: dict[str, Any] = {
            "activities": self.activities(),
            "record_shapes": opts.record_shapes,
            "profile_memory": opts.profile_memory,
            "with_stack": opts.with_stack,
            "with_modules": opts.with_modules,
            "with_flops": opts.with_flops,
            **self.profiler_kwargs(),
        }
        self.handles_schedule = opts.schedule is not None
        if opts.schedule is not None:
            sched = opts.schedule
            kwargs["schedule"] = sched.to_torch() if isinstance(sched, Schedule) else sched
            kwargs["on_trace_ready"] = self._on_trace_ready
        self._kwargs = kwargs
        self._prof = self._started_profile()

    def _started_profile(self) -> Any:
        import torch.profiler

        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*is not available.*")
            warnings.filterwarnings("ignore", message=".*clears events at the end of each cycle")
            prof = torch.profiler.profile(**self._kwargs)
            prof.start()
        return prof

    def step(self) -> None:
        if self._prof is not None and not self._stopped:
            self._prof.step()

    def end_window(self) -> None:
        """Without a user schedule: stop torch.profiler, stream its window, start a new one."""
        if self.handles_schedule or self._prof is None or self._stopped:
            return
        finished, self._prof = self._prof, None
        try:
            finished.stop()
            self._export(finished)
        finally:
            release_results(finished)
            self._prof = self._started_profile()

    def stop(self) -> None:
        if self._prof is None or self._stopped:
            return
        self._stopped = True
        self._prof.stop()
        try:
            if not self.handles_schedule:
                self._export(self._prof)
            # with a schedule, a window that never closed recorded nothing torch would save
        finally:
            release_results(self._prof)

    def abandon(self) -> None:
        """Stop torch.profiler without exporting (its window would go to the full disk), and
        free its results now (see `release_results`)."""
        if self._prof is None or self._stopped:
            return
        self._stopped = self._abandoned = True
        try:
            self._prof.stop()  # with a schedule, a window it saves reaches _on_trace_ready
        finally:
            release_results(self._prof)

    def _on_trace_ready(self, prof: Any) -> None:
        if self._abandoned:
            release_results(prof)
            return
        try:
            self._export(prof)
        except HpuprofError as error:  # never into torch's step: its state would be left
            ctx = self._ctx  # half-switched, and its next stop crashes (SIGSEGV, torch 2.13)
            assert ctx is not None
            if isinstance(error, OutputError):
                ctx.output_failed(error)
            else:
                ctx.warn(f"window {self._windows} not streamed: {error}")
        finally:
            release_results(prof)  # torch starts the next window's session right after this
        assert self._ctx is not None
        self._ctx.window_ready()

    def _export(self, prof: Any) -> None:
        ctx = self._ctx
        assert ctx is not None
        tmp = ctx.scratch_dir / f".export-{os.getpid()}-{self._windows}.json"
        try:
            prof.export_chrome_trace(str(tmp))
            raw = tmp.read_bytes()
        except (OSError, RuntimeError) as error:
            raise _export_error(f"torch.profiler export failed: {error}", tmp) from None
        if not raw.rstrip().endswith(b"}"):  # Kineto logs "Failed to write" and returns
            raise _export_error("torch.profiler export is cut off", tmp)
        tmp.unlink(missing_ok=True)
        first = self._windows == 0
        self._windows += 1
        spliced = split_kineto_export(raw) if first else None
        if spliced is not None:
            keys, body = spliced
            if int(keys.get("baseTimeNanoseconds", ctx.base_ns)) == ctx.base_ns:
                ctx.set_trace_keys({k: v for k, v in keys.items() if k not in _OWN_KEYS})
                ctx.emit_raw(body)
                return
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError as error:
            raise HpuprofError(f"torch.profiler export is not valid JSON: {error}") from None
        events: list[dict[str, Any]] = data.get("traceEvents", [])
        shift_us = (int(data.get("baseTimeNanoseconds", ctx.base_ns)) - ctx.base_ns) / 1000.0
        if shift_us:
            for ev in events:
                if isinstance(ev.get("ts"), int | float):
                    ev["ts"] = round(ev["ts"] + shift_us, 3)
        if not first:  # process / thread names were written with the first window
            events = [ev for ev in events if ev.get("ph") != "M"]
        ctx.set_trace_keys({k: v for k, v in data.items() if k not in _OWN_KEYS})
        ctx.emit(events)


def _export_error(message: str, export: Path) -> HpuprofError:
    """The error for a failed window export (the partial `export` is removed): an
    `OutputError` when the export's file system is full (nothing more can be written there:
    recording stops), else a lost window."""
    try:
        full = shutil.disk_usage(export.parent).free < _FULL_BELOW_BYTES
    except OSError:
        full = False
    export.unlink(missing_ok=True)
    if full:
        return OutputError(f"disk full while torch.profiler exported a window to {export.parent}")
    return HpuprofError(message)


def release_results(prof: Any) -> None:
    """Free a stopped torch.profiler's Kineto results now, while no profiling session runs.

    The profile object sits in reference cycles, so without this its results are freed by a
    later garbage collection -- and freeing them while another session runs (the next window,
    or the user's own torch.profiler) crashes in Kineto's MemoryTraceLogger destructor
    (torch 2.13: SIGSEGV in `libkineto::MemoryTraceLogger::~MemoryTraceLogger`).
    """
    inner = getattr(prof, "profiler", None)
    if inner is not None:
        inner.kineto_results = None
        inner._function_events = None


def split_kineto_export(raw: bytes) -> tuple[dict[str, Any], bytes] | None:
    """(top-level keys, the bytes inside `traceEvents: [...]`) of a Kineto export, without
    decoding the events; None when the layout is not Kineto's (then the caller decodes it).

    Kineto writes the metadata keys, then `"traceEvents": [`, the events, `]` and the last
    keys (`traceName`, sometimes `distributedInfo`). Splicing the events' bytes avoids
    decoding and re-encoding every event of a large window.
    """
    key = raw.find(b'"traceEvents"')
    open_at = raw.find(b"[", key)
    close_at = raw.rfind(b"]", 0, raw.rfind(b'"traceName"'))
    if key < 0 or open_at < 0 or close_at <= open_at:
        return None
    try:
        keys = orjson.loads(raw[:key].rstrip().rstrip(b",") + b"}")
        tail = raw[close_at + 1 :].strip()
        keys.update(orjson.loads(b"{" + tail[1:]) if tail.startswith(b",") else {})
    except orjson.JSONDecodeError:
        return None
    body = raw[open_at + 1 : close_at].strip()
    if not (body.startswith(b"{") and body.endswith(b"}")) and body:
        return None
    return keys, body
