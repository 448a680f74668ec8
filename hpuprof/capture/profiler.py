"""`HPUProfiler`: record a run into a run directory, on any backend, without losing events.

    from hpuprof import HPUProfiler

    with HPUProfiler(dirpath="runs/exp1", schedule=schedule(wait=1, warmup=1, active=3)) as prof:
        for batch in loader:
            train_step(batch)
            prof.step()

It speaks both surfaces Gaudi users know: lightning-habana's (`dirpath`, `filename`,
`profile(action)`, `start(action)` / `stop(action)`, `summary()`) and torch.profiler's
(`schedule`, `step()`, `on_trace_ready`, `record_shapes`, `with_stack`, `with_modules`,
`profile_memory`). Events stream to `traces/<filename>-rank<R>.pt.trace.incomplete.json` while
the run goes on and are renamed to `.pt.trace.json` at stop; then the Perfetto trace, the
Habana metrics dump and `run.json` are written (see `run_dir.py`).

Nothing recorded is lost: `run.json` names the streaming file from the start, and the backend's
recording is cut into windows that are streamed as they end -- at a step boundary once
`window_s` seconds (or `window_steps` steps) have passed, or, in code that has no steps, on a
timer that borrows the main thread between two bytecodes (`main_thread.py`). A process killed
with SIGKILL or `os._exit` loses at most its last window; exceptions, SIGINT, SIGTERM and
SIGHUP write everything (`signals.py`), and `run.json` says how the run ended (`run_end.py`).
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import os
import re
import shutil
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import FrameType
from typing import Any

from hpuprof.capture import backends
from hpuprof.capture.backends.base import Backend, CaptureOptions
from hpuprof.capture.dynamo_records import DynamoRecorder, dynamo_counters
from hpuprof.capture.main_thread import FrameCheck, MainThreadTicker
from hpuprof.capture.run_dir import (
    FILE_KEYS,
    RunPaths,
    base_manifest,
    now_iso,
    remove_leftovers,
    safe_stem,
    scratch_prefix,
    update_manifest,
)
from hpuprof.capture.run_end import RunEnd, from_exception
from hpuprof.capture.schedule import RECORDING, Action, action_of, as_schedule
from hpuprof.capture.signals import SignalGuard
from hpuprof.capture.stream_writer import ChunkedTraceWriter
from hpuprof.errors import HpuprofError, UsageError
from hpuprof.trace.atomic_write import write_bytes_atomic
from hpuprof.trace.schema import METADATA_KEY, SCHEMA_VERSION

KINETO_BASE_PERIOD_NS = 7_889_238 * 1_000_000_000
"""Kineto floors its trace base time to 3-month periods; we use the same base so our traces'
`ts` values line up with torch.profiler's own exports."""

_CAT_VALUE = re.compile(rb'"cat"\s*:\s*"([^"]*)"')
POLL_INTERVAL_NS = 200_000_000
"""Optimizer-step hooks drain the emulated sink at most this often."""
DEFAULT_WINDOW_S = 10.0
"""A recording window is streamed to disk at least this often (seconds) by default."""
FIRST_WINDOW_S = 1.0
"""The first window's length; each next one is twice as long, up to `window_s`."""
TICK_PERIOD_S = 0.5
"""How often the window timer checks whether a window is due (it reads two numbers)."""
SIGNAL_RETRIES = 40
"""A signal that lands inside the emulator or hpuprof is put off (`signals.RETRY_S` each) at
most this many times in a row, for a moment where the run can be written whole (SIGTERM) or
the script's handler raise without leaving the emulator half-way (SIGINT)."""


def _env_int(*names: str) -> int | None:
    for name in names:
        value = os.environ.get(name, "")
        if value.strip().isdigit():
            return int(value)
    return None


def default_run_dir() -> Path:
    """`$HPUPROF_RUN_DIR`, else `runs/<date>-<time>` under the working directory."""
    env = os.environ.get("HPUPROF_RUN_DIR")
    if env:
        return Path(env)
    return Path("runs") / time.strftime("%Y%m%d-%H%M%S")


class HPUProfiler:
    """Profile a block or a span of a run into a run directory.

    Args:
        dirpath: the run directory (created). Default `$HPUPROF_RUN_DIR` or `runs/<time>`.
        filename: trace file stem; files are `<filename>-rank<R>...` (one output per rank).
        schedule: `hpuprof.capture.schedule.schedule(...)`, a torch.profiler schedule, a
            `(wait, warmup, active[, repeat[, skip_first]])` tuple, or None to record from
            start to stop. Steps advance with `step()`.
        on_trace_ready: called with this profiler after each recorded window (or once at stop
            without a schedule), after the window is on disk.
        record_shapes, profile_memory, with_stack, with_modules, with_flops: as torch.profiler.
        backend: "emulated", "gaudi", "cuda", "cpu", or None to choose automatically.
        rank, world_size: default from `RANK` / `OMPI_COMM_WORLD_RANK` and `WORLD_SIZE`.
        perfetto: also write the Perfetto protobuf trace at stop.
        handle_signals: on SIGINT/SIGTERM/SIGHUP write everything, then do what the process
            did before (an ignored signal stays ignored; see `signals.py`).
        step_on_optimizer: call `step()` after every `optimizer.step()` (for unchanged
            scripts under `hpuprof record`).
        window_s: stream the recording to disk at least every this many seconds: at the first
            step boundary (or optimizer step) after that, or, where no steps come, on a timer
            (when the profiler was started on the main thread). The first windows are shorter
            (1, 2, 4, 8 s, then `window_s`). A process killed with SIGKILL loses at most its
            last window. None: only at stop (and at the schedule's
            windows). Each window costs a few ms on the torch backends (torch.profiler is
            stopped and restarted; `bench/bench_capture_windows.py`) besides exporting its
            events, which one window at stop would export too.
        window_steps: also end a window every this many steps (None: by time only).
        activities, **_ignored: accepted for torch.profiler compatibility; the backend
            decides the activities.
    """

    def __init__(
        self,
        dirpath: str | os.PathLike[str] | None = None,
        filename: str | None = None,
        *,
        schedule: Any = None,
        on_trace_ready: Callable[[HPUProfiler], Any] | None = None,
        record_shapes: bool = False,
        profile_memory: bool = False,
        with_stack: bool = False,
        with_modules: bool = False,
        with_flops: bool = False,
        backend: str | None = None,
        rank: int | None = None,
        world_size: int | None = None,
        perfetto: bool = True,
        handle_signals: bool = True,
        step_on_optimizer: bool = False,
        window_s: float | None = DEFAULT_WINDOW_S,
        window_steps: int | None = None,
        activities: Any = None,
        **_ignored: Any,
    ) -> None:
        if backend not in (None, "auto", *backends.BACKEND_NAMES):
            raise UsageError(
                f"unknown backend {backend!r}; choose one of {', '.join(backends.BACKEND_NAMES)}"
            )
        if window_s is not None and not window_s > 0:
            raise UsageError(f"window_s must be > 0 seconds or None, got {window_s!r}")
        if window_steps is not None and window_steps < 1:
            raise UsageError(f"window_steps must be >= 1 or None, got {window_steps!r}")
        self.dirpath = Path(dirpath) if dirpath is not None else default_run_dir()
        self.filename = safe_stem(filename or "trace")
        self.rank = rank if rank is not None else (_env_int("RANK", "OMPI_COMM_WORLD_RANK") or 0)
        self.world_size = world_size or _env_int("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE") or 1
        self.on_trace_ready = on_trace_ready
        self.options = CaptureOptions(
            record_shapes=record_shapes,
            profile_memory=profile_memory,
            with_stack=with_stack,
            with_modules=with_modules,
            with_flops=with_flops,
            schedule=as_schedule(schedule),
        )
        self.backend_name = backend
        self.perfetto = perfetto
        self.handle_signals = handle_signals
        self.step_on_optimizer = step_on_optimizer
        self.window_s = window_s
        self.window_steps = window_steps
        self.paths = RunPaths(self.dirpath, self.filename, self.rank)
        self.step_num = 0
        self.status = "not started"
        self.end: RunEnd | None = None
        self.signal_seen: str | None = None
        self.windows = 0
        self.event_counts: collections.Counter[str] = collections.Counter()
        self.files: dict[str, list[str]] = {key: [] for key in FILE_KEYS}
        self.warnings: list[str] = []
        # capture state
        self.base_ns = 0
        self.pid = os.getpid()
        self.scratch_dir = self.dirpath
        self._backend: Backend | None = None
        self._writer: ChunkedTraceWriter | None = None
        self._dynamo: DynamoRecorder | None = None
        self._signals = SignalGuard()
        self._lock = threading.RLock()
        self._trace_keys: dict[str, Any] = {}
        self._actions: dict[str, list[int]] = {}
        self._step_start_ns = 0
        self._last_poll_ns = 0
        self._hook: Any = None
        self._host_tid = threading.get_native_id()
        self._owner_thread = threading.get_ident()
        self._scratch: tempfile.TemporaryDirectory[str] | None = None
        self._ticker: MainThreadTicker | None = None
        self._frames: FrameCheck | None = None
        self._signal_retries = 0
        self._window_start_ns = 0  # monotonic
        self._window_first_step = 0
        self._last_step_ns = 0  # monotonic; 0 before the first step

    # --- the BackendContext side -------------------------------------------------------------
    def emit(self, events: list[dict[str, Any]]) -> None:
        """Stream a chunk of Chrome-trace events to the trace file (thread-safe)."""
        if not events or self._writer is None:
            return
        with self._lock, self._signals.busy():
            self._writer.write(events)
            counts = self.event_counts
            for ev in events:
                counts[ev.get("cat") or ev.get("ph", "")] += 1

    def emit_raw(self, body: bytes) -> None:
        """Stream already-encoded events (a Kineto export's traceEvents bytes)."""
        if self._writer is None:
            return
        with self._lock, self._signals.busy():
            self._writer.write_raw(body)
            for cat, n in collections.Counter(_CAT_VALUE.findall(body)).items():
                self.event_counts[cat.decode("utf-8", "replace")] += n

    def set_trace_keys(self, keys: Mapping[str, Any]) -> None:
        self._trace_keys.update(keys)

    def window_ready(self) -> None:
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    # --- lifecycle ---------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self.status == "running"

    @property
    def backend(self) -> str:
        """The backend in use (or the one that would be chosen)."""
        return self._backend.name if self._backend else (self.backend_name or backends.choose())

    def start(self, action_name: str | None = None) -> HPUProfiler:
        """Start profiling; with `action_name`, also start that action (Lightning surface).

        Starting an action after the run was written is a no-op (the action is not recorded),
        so a training loop that goes on after a stop keeps running."""
        if action_name is not None:
            if self.status == "not started":
                self._start()
            if self.running:
                self._actions.setdefault(action_name, []).append(time.time_ns())
            return self
        if self.end is not None and self.end.state == "signal":
            return self  # the run was written on a signal the process survived: keep going
        if not self.running:
            self._start()
        return self

    def stop(self, action_name: str | None = None, *, end: RunEnd | None = None) -> None:
        """Stop profiling and write everything; with `action_name`, only end that action.

        Args:
            action_name: end this action only (Lightning surface).
            end: how the profiled code ended (default: completed), for `run.json`.
        """
        if action_name is not None:
            self._end_action(action_name)
            return
        self._finish(end or RunEnd("completed"))

    def __enter__(self) -> HPUProfiler:
        return self.start()

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc is None:
            self._finish(RunEnd("completed"))
        else:
            self._finish(from_exception(exc, signal_seen=self.signal_seen))

    @contextlib.contextmanager
    def profile(self, action_name: str) -> Iterator[HPUProfiler]:
        """Record `action_name` as an annotated span (lightning's `profiler.profile(...)`)."""
        self.start(action_name)
        try:
            yield self
        finally:
            if self.running:
                self._end_action(action_name)

    def _start(self) -> None:
        if self.status not in ("not started",):
            raise UsageError("an HPUProfiler records once; create a new one for another run")
        self.paths.prepare()
        remove_leftovers(self.dirpath)
        self._backend = backends.create(self.backend_name)
        now = time.time_ns()
        self.base_ns = now - now % KINETO_BASE_PERIOD_NS
        self._scratch = tempfile.TemporaryDirectory(prefix=scratch_prefix(), dir=self.dirpath)
        self.scratch_dir = Path(self._scratch.name)
        meta = self._run_metadata()
        header = {
            "schemaVersion": 1,
            "deviceProperties": [],
            "distributedInfo": {
                "rank": self.rank,
                "world_size": self.world_size,
                "backend": "hccl" if self._backend.name in ("gaudi", "emulated") else "",
            },
            METADATA_KEY: meta,
            "displayTimeUnit": "ms",
            "baseTimeNanoseconds": self.base_ns,
        }
        self._writer = ChunkedTraceWriter(self.paths.trace, header)
        self.status = "running"
        try:
            self._begin(meta, now)
        except BaseException as error:  # the run directory is left whole, saying why
            self._finish(from_exception(error, signal_seen=self.signal_seen))
            raise

    def _begin(self, meta: Mapping[str, Any], now: int) -> None:
        """Announce the run in `run.json`, take the signals, start the backend and timers."""
        backend, writer = self._backend, self._writer
        assert backend is not None and writer is not None
        streaming = self.paths.rel(writer.path)
        if self.handle_signals:  # first: a signal from here on finds the run written
            self._signals.install(self._on_fatal_signal, self._on_signal_notice)
        update_manifest(  # names the streaming file now: a killed run loads
            self.dirpath,
            {
                **base_manifest(
                    rank=self.rank,
                    world_size=self.world_size,
                    mode=str(meta.get("mode", "")),
                    device_profile=str(meta.get("device_profile", "")),
                    backend=backend.name,
                    device_time=backend.device_time,
                ),
                "traces": [streaming],
                "incomplete": [streaming],
            },
            fresh_for_rank=self.rank,
        )
        atexit.register(self._at_exit)
        self._dynamo = DynamoRecorder(self.pid, self.base_ns)
        self._dynamo.start(now)
        with self._signals.busy():
            backend.start(self)
        self._install_optimizer_hook()
        self._step_start_ns = time.time_ns()
        self._window_start_ns = time.monotonic_ns()
        if not backend.handles_schedule and self.options.schedule is not None:
            backend.set_recording(self._action() in RECORDING)
        self._frames = FrameCheck()  # after the backend imported what it records with
        if self.window_s is not None and self._owner_thread == threading.main_thread().ident:
            self._ticker = MainThreadTicker(
                min(TICK_PERIOD_S, self.window_s / 2),
                self._tick_due,
                self._tick,
                self._signals,
                self._frames,
            )
            self._ticker.start()

    def _run_metadata(self) -> dict[str, Any]:
        import hpuprof

        assert self._backend is not None
        meta: dict[str, Any] = {
            "schema": SCHEMA_VERSION,
            "version": hpuprof.__version__,
            "device_time": self._backend.device_time,
            "host_time": "measured",
            "device_profile": "",
            "mode": "",
        }
        meta.update(self._backend.run_metadata())
        meta.update({"backend": self._backend.name, "rank": self.rank})
        meta["world_size"] = self.world_size
        return meta

    def _action(self) -> Action:
        sched = self.options.schedule
        return Action.RECORD if sched is None else action_of(sched, self.step_num)

    # --- steps, actions, polling ---------------------------------------------------------------
    def step(self) -> None:
        """Mark the end of a step: advances the schedule (torch.profiler's `prof.step()`)."""
        if not self.running or self._backend is None:
            return
        backend = self._backend
        if backend.handles_schedule:
            with self._signals.busy():  # a signal inside torch's step transition is deferred
                backend.step()
            self.step_num += 1
            self._last_step_ns = time.monotonic_ns()
            self._emit_dynamo()
            return
        before = self._action()
        now = time.time_ns()
        if before in RECORDING:
            self.emit([self._step_span(now)])
        self.step_num += 1
        self._step_start_ns = now
        self._last_step_ns = time.monotonic_ns()
        after = self._action()
        if before is Action.RECORD_AND_SAVE or (before in RECORDING) != (after in RECORDING):
            with self._signals.busy():
                backend.set_recording(after in RECORDING)
        self.poll(force=True)
        if before is Action.RECORD_AND_SAVE:
            self.window_ready()

    def poll(self, force: bool = False) -> None:
        """Stream what the backend recorded so far (call on the thread running the model);
        ends the recording window when one is due (see `window_s`)."""
        if not self.running or self._backend is None:
            return
        now = time.monotonic_ns()
        if self._window_due(now):
            self._end_window()
            return
        if not force and now - self._last_poll_ns < POLL_INTERVAL_NS:
            return
        self._last_poll_ns = now
        with self._signals.busy():
            self._backend.poll()
        self._emit_dynamo()

    # --- windows -------------------------------------------------------------------------------
    def _window_due(self, now_ns: int) -> bool:
        steps = self.window_steps
        if steps is not None and self.step_num - self._window_first_step >= steps:
            return True
        window_ns = self._window_ns()
        return window_ns is not None and now_ns - self._window_start_ns >= window_ns

    def _window_ns(self) -> int | None:
        """The current window's length: from `FIRST_WINDOW_S`, doubling up to `window_s`, so
        a run killed soon after it started loses little too (1, 2, 4, 8, 10, 10... s)."""
        if self.window_s is None:
            return None
        first = min(FIRST_WINDOW_S, self.window_s)
        return int(min(self.window_s, first * 2 ** min(self.windows, 30)) * 1e9)

    def _end_window(self) -> None:
        """Stream the whole current window now (on the thread that started the profiler)."""
        if self._backend is None or threading.get_ident() != self._owner_thread:
            return
        with self._lock, self._signals.busy():
            if not self.running:
                return
            try:
                self._backend.end_window()
            except HpuprofError as error:  # the run goes on; stop() reports it
                self.warnings.append(f"window {self.windows} not streamed: {error}")
            self.windows += 1
            self._window_start_ns = time.monotonic_ns()
            self._window_first_step = self.step_num
            self._last_poll_ns = self._window_start_ns
        self._emit_dynamo()

    def _tick_due(self) -> bool:
        """On the ticker thread: a window is due and no step boundary has come for as long."""
        if not self.running or self.window_s is None:
            return False
        now = time.monotonic_ns()
        window_ns = self._window_ns()
        quiet_since = max(self._window_start_ns, self._last_step_ns)
        return window_ns is not None and now - quiet_since >= window_ns

    def _tick(self) -> None:
        """On the main thread between two bytecodes (see `main_thread.py`): end the window."""
        if self.running and os.getpid() == self.pid and self._tick_due():
            self._end_window()

    def _emit_dynamo(self) -> None:
        if self._dynamo is not None:
            skip = self._backend.dynamo_compile_ids() if self._backend else frozenset()
            self.emit(self._dynamo.collect(skip))

    def _span(self, name: str, start_ns: int, end_ns: int) -> dict[str, Any]:
        if self._backend is not None:  # the emulated runtime's projected host clock
            start_ns = self._backend.project_epoch_ns(start_ns)
            end_ns = max(self._backend.project_epoch_ns(end_ns, end=True), start_ns)
        return {
            "ph": "X",
            "cat": "user_annotation",
            "name": name,
            "pid": self.pid,
            "tid": self._host_tid,
            "ts": round((start_ns - self.base_ns) / 1000.0, 3),
            "dur": round((end_ns - start_ns) / 1000.0, 3),
            "args": {},
        }

    def _step_span(self, end_ns: int) -> dict[str, Any]:
        """The `ProfilerStep#N` span of the current step, ending at `end_ns`."""
        return self._span(f"ProfilerStep#{self.step_num}", self._step_start_ns, end_ns)

    def _end_action(self, action_name: str) -> None:
        starts = self._actions.get(action_name)
        if not starts:
            raise UsageError(f"stop({action_name!r}) without a matching start({action_name!r})")
        start_ns = starts.pop()
        if self.running:
            self.emit([self._span(action_name, start_ns, time.time_ns())])
            self.poll()

    def _install_optimizer_hook(self) -> None:
        import sys

        optimizer = sys.modules.get("torch.optim.optimizer")
        register = getattr(optimizer, "register_optimizer_step_post_hook", None)
        if register is None:
            return

        def hook(*_: Any) -> None:
            if self.step_on_optimizer:
                self.step()
            else:
                self.poll()

        self._hook = register(hook)

    # --- finishing ---------------------------------------------------------------------------
    def _put_off(self, frame: FrameType | None) -> str | None:
        """Where `frame` is when a signal must wait for a safe moment (inside the emulator,
        its sink maybe mid-append, or inside hpuprof), until `SIGNAL_RETRIES` ran out."""
        frames = self._frames
        where = frames.unsafe_frame(frame) if frame is not None and frames is not None else None
        if where is not None and self.running and self._signal_retries < SIGNAL_RETRIES:
            self._signal_retries += 1
            return where
        self._signal_retries = 0
        return None

    def _on_fatal_signal(self, signum: int, frame: FrameType | None) -> bool:
        """A signal whose default action kills the process: write everything first (put off
        a few ms at a time while it lands somewhere unsafe: returns False)."""
        name = _signal_name(signum)
        self.signal_seen = name
        if self._put_off(frame) is not None:
            return False
        where = self._frames.unsafe_frame(frame) if frame and self._frames else None
        if where is not None and self._backend is not None:  # no safe moment came
            self._backend.drop_unstreamed()
            self.warnings.append(f"{name} arrived inside {where}: its last events were dropped")
        self._finish(RunEnd("signal", signal=name))
        return True

    def _on_signal_notice(self, signum: int, frame: FrameType | None) -> bool:
        """A signal a Python handler will see next (KeyboardInterrupt, the script's own):
        note it and stream the window, in case the handler ends the process abruptly. Put
        off while it lands somewhere unsafe (returns False): a KeyboardInterrupt raised
        inside the emulator would leave its event sink half-appended."""
        self.signal_seen = _signal_name(signum)
        if self._put_off(frame) is not None:
            return False
        frames = self._frames
        if (
            self.running
            and threading.get_ident() == self._owner_thread
            and frame is not None
            and frames is not None
            and frames.unsafe_frame(frame) is None
        ):
            self._end_window()
        return True

    def _at_exit(self) -> None:
        if self.running:
            error = getattr(sys, "last_value", None)  # an exception that ended the script
            if isinstance(error, BaseException):
                self._finish(from_exception(error, signal_seen=self.signal_seen))
            else:
                self._finish(RunEnd("completed"))

    def _final_end(self, end: RunEnd) -> RunEnd:
        """Time-stamped; a run that ended after a signal says so (a script that caught
        KeyboardInterrupt and shut down cleanly was still stopped by SIGINT)."""
        if self.signal_seen is not None and end.state in ("completed", "failed"):
            end = RunEnd("signal", signal=self.signal_seen, exit_code=end.exit_code)
        return RunEnd(end.state, end.exception, end.message, end.signal, end.exit_code, now_iso())

    def _finish(self, end: RunEnd) -> None:
        with self._signals.busy(), self._lock:  # a signal now is handled once all is written
            if not self.running or os.getpid() != self.pid:
                return
            self.status = "stopping"
            end = self._final_end(end)
            try:
                self._write_all(end)
            finally:
                self._release()
                self.end = end
                self.status = end.legacy_status
        if self.options.schedule is None:
            self.window_ready()

    def _release(self) -> None:
        """Give back everything recording took from the process (inside `busy`, so a signal
        that arrives now finds the old handlers restored and our scratch space gone)."""
        if self._ticker is not None:
            self._ticker.stop()
            self._ticker = None
        self._signals.uninstall()
        atexit.unregister(self._at_exit)
        if self._hook is not None:
            self._hook.remove()
            self._hook = None
        if self._scratch is not None:
            self._scratch.cleanup()
            self._scratch = None

    def _write_all(self, end: RunEnd) -> None:
        backend, writer = self._backend, self._writer
        assert backend is not None and writer is not None
        errors: list[str] = []
        try:
            now = time.time_ns()
            for name, starts in self._actions.items():  # actions still open at stop
                self.emit([self._span(name, s, now) for s in starts])
            sched = self.options.schedule
            if not backend.handles_schedule and sched is not None and self._action() in RECORDING:
                self.emit([self._step_span(now)])
            backend.stop()
            self._emit_dynamo()
        except Exception as error:  # the trace is closed and listed all the same
            errors.append(str(error) if isinstance(error, HpuprofError) else repr(error))
        streaming = self.paths.rel(writer.path)
        trace = writer.close(self._trace_keys)
        self.files["traces"].append(self.paths.rel(trace))
        self._write_metrics(backend)
        ending = {
            "end_time": now_iso(),
            "end_ns": time.time_ns(),
            "status": end.legacy_status,
            "ends": {str(self.rank): end.to_json()},
            "traces": self.files["traces"],
            "metrics": self.files["metrics"],
            "event_counts": {str(self.rank): dict(self.event_counts)},
        }
        counters = dynamo_counters()
        if counters:
            ending["dynamo_counters"] = counters
        if errors or self.warnings:
            ending["warnings"] = [*errors, *self.warnings]
        # one atomic update swaps the streaming file for the final one (both exist meanwhile)
        update_manifest(
            self.dirpath, ending, remove={"incomplete": [streaming], "traces": [streaming]}
        )
        writer.discard_incomplete()
        if self.perfetto:
            self._write_perfetto(trace)
            if self.files["perfetto"] or self.warnings:
                update_manifest(
                    self.dirpath,
                    {"perfetto": self.files["perfetto"], "warnings": [*errors, *self.warnings]},
                )
        if errors:
            raise HpuprofError("; ".join(errors))

    def _write_metrics(self, backend: Backend) -> None:
        try:
            records = backend.metrics()
        except Exception as error:  # a metrics API problem must not lose the trace
            self.warnings.append(f"metrics not written: {error}")
            return
        if records is None:
            return
        import orjson

        body = b",\n".join(orjson.dumps(r) for r in records)
        write_bytes_atomic(self.paths.metrics, b"[" + body + b"]\n")
        self.files["metrics"].append(self.paths.rel(self.paths.metrics))

    def _write_perfetto(self, trace_path: Path) -> None:
        try:
            from hpuprof import load
            from hpuprof.trace.perfetto_write import write_perfetto
        except ImportError as error:
            self.warnings.append(f"Perfetto trace not written: {error}")
            return
        try:
            write_perfetto(load(trace_path, cache=False), self.paths.perfetto)
        except (HpuprofError, ImportError, ValueError, OSError) as error:
            self.warnings.append(f"Perfetto trace not written: {error}")
            warnings.warn(f"hpuprof: Perfetto trace not written: {error}", stacklevel=3)
            return
        self.files["perfetto"].append(self.paths.rel(self.paths.perfetto))

    # --- results -----------------------------------------------------------------------------
    @property
    def trace_path(self) -> Path:
        """The Chrome JSON trace: the final file after stop, the incomplete one while running."""
        if self._writer is not None and not self._writer.closed:
            return self._writer.path
        return self.paths.trace

    def export_chrome_trace(self, path: str | os.PathLike[str]) -> None:
        """Copy the trace recorded so far to `path` (valid JSON, also while running)."""
        with self._lock:
            shutil.copyfile(self.trace_path, path)

    def summary(self) -> str:
        """The short analysis summary once the run is written, or the event counts before."""
        if not self.running and self.paths.trace.is_file():
            text = analysis_summary(self.paths.trace)
            if text is not None:
                return text
        return format_counts(self.event_counts, self.backend)


def _signal_name(signum: int) -> str:
    import signal

    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def analysis_summary(trace_path: Path) -> str | None:
    """`hpuprof.analysis.summarize(load(trace))` when the analysis package provides it."""
    import importlib

    try:
        summarize = getattr(importlib.import_module("hpuprof.analysis"), "summarize", None)
    except ImportError:
        return None
    if summarize is None:
        return None
    from hpuprof import load

    try:
        return str(summarize(load(trace_path, cache=False)))
    except Exception as error:  # the run is on disk: a failing analysis must not lose it
        if not isinstance(error, ImportError):
            warnings.warn(
                f"hpuprof: analysis summary failed: {type(error).__name__}: {error}", stacklevel=2
            )
        return None


def format_counts(counts: Mapping[str, int], backend: str) -> str:
    """A few lines of event counts by category."""
    total = sum(counts.values())
    lines = [f"{total} events recorded ({backend} backend)"]
    for cat, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        lines.append(f"  {n:>9}  {cat or '(none)'}")
    return "\n".join(lines)
