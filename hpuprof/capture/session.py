"""The capture session: one recording's backend, its steps and its recording windows.

`CaptureSession` drives a backend (`backends/`) through a run: it creates and starts it, advances
the schedule at each step (writing the `ProfilerStep#N` spans for the backends that do not run
the schedule themselves), polls it, ends a recording window whenever `WindowPolicy` says one is
due (at a step, a poll, or the main-thread timer's tick), records the spans of named actions
(Lightning's `start(action)` / `stop(action)`), and turns dynamo's compile records into events.

It is the `BackendContext` the backend emits into; the events go to the `RunWriter`. It knows
nothing of signals, atexit or manifests: `HPUProfiler` (`profiler.py`) ties it to the process
hooks and the run writer. Its `phase` is the run's: idle -> live -> stopping -> done.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from hpuprof._version import __version__
from hpuprof.capture import backends
from hpuprof.capture.backends.base import Backend, CaptureOptions
from hpuprof.capture.dynamo_records import DynamoRecorder, dynamo_counters
from hpuprof.capture.run_writer import RunWriter, Shield
from hpuprof.capture.schedule import RECORDING, Action, action_of
from hpuprof.capture.windows import WindowPolicy
from hpuprof.errors import HpuprofError, OutputError, UsageError
from hpuprof.trace.schema import SCHEMA_VERSION

KINETO_BASE_PERIOD_NS = 7_889_238 * 1_000_000_000
"""Kineto floors its trace base time to 3-month periods; we use the same base so our traces'
`ts` values line up with torch.profiler's own exports."""
POLL_INTERVAL_NS = 200_000_000
"""Optimizer-step hooks drain the emulated sink at most this often."""

Phase = Literal["idle", "live", "stopping", "done"]


class CaptureSession:
    """One recording of a backend (see the module doc).

    Args:
        options: torch.profiler's recording switches and the schedule.
        backend_name: "emulated", "gaudi", "cuda", "cpu", or None / "auto" to choose.
        windows: when a recording window ends.
        writer: where the events go.
        shield: the context a backend transition runs in, so a signal cannot cut it.
        on_window_ready: called after each window of the schedule is on disk.
    """

    def __init__(
        self,
        options: CaptureOptions,
        backend_name: str | None,
        windows: WindowPolicy,
        writer: RunWriter,
        shield: Shield,
        on_window_ready: Callable[[], None],
    ) -> None:
        self.options = options
        self.backend_name = backend_name
        self.policy = windows
        self.writer = writer
        self.phase: Phase = "idle"
        self.backend: Backend | None = None
        self.base_ns = 0
        self.pid = os.getpid()
        self.step_num = 0
        self.windows = 0
        self.owner_thread = threading.get_ident()
        self._shield = shield
        self._on_window_ready = on_window_ready
        self._host_tid = threading.get_native_id()
        self._actions: dict[str, list[int]] = {}
        self._dynamo: DynamoRecorder | None = None
        self._step_start_ns = 0  # epoch
        self._last_poll_ns = 0  # monotonic, as the three below
        self._window_start_ns = 0
        self._window_first_step = 0
        self._last_step_ns = 0  # 0 before the first step
        self._abandoned = False  # the writer failed: the backend records no more

    # --- the BackendContext side -------------------------------------------------------------
    @property
    def scratch_dir(self) -> Path:
        return self.writer.scratch_dir

    def emit(self, events: list[dict[str, Any]]) -> None:
        self.writer.emit(events)

    def emit_raw(self, body: bytes) -> None:
        self.writer.emit_raw(body)

    def set_trace_keys(self, keys: Any) -> None:
        self.writer.set_trace_keys(keys)

    def window_ready(self) -> None:
        self._on_window_ready()

    def warn(self, text: str) -> None:
        self.writer.warn(text)

    def output_failed(self, error: OutputError) -> None:
        self.writer.output_failed(error)

    # --- start and stop ----------------------------------------------------------------------
    @property
    def live(self) -> bool:
        return self.phase == "live"

    def backend_in_use(self) -> str:
        """The backend's name (or the one the automatic choice would pick)."""
        return self.backend.name if self.backend else (self.backend_name or backends.choose())

    def prepare(self) -> Backend:
        """Create the backend and fix the trace's base time (nothing recorded yet)."""
        self.backend = backends.create(self.backend_name)
        now = time.time_ns()
        self.base_ns = now - now % KINETO_BASE_PERIOD_NS
        return self.backend

    def run_metadata(self, rank: int, world_size: int) -> dict[str, Any]:
        """The trace's `hpuprof` metadata (schema, backend, device time, rank...)."""
        backend = self.backend
        assert backend is not None, "prepare() first"
        meta: dict[str, Any] = {
            "schema": SCHEMA_VERSION,
            "version": __version__,
            "device_time": backend.device_time,
            "host_time": "measured",
            "device_profile": "",
            "mode": "",
        }
        meta.update(backend.run_metadata())
        meta.update({"backend": backend.name, "rank": rank})
        meta["world_size"] = world_size
        return meta

    def go_live(self) -> None:
        """The run exists from now on (its trace file is open): it must be finished."""
        self.phase = "live"

    def start(self) -> None:
        """Start recording (the writer is open and the run announced)."""
        backend = self.backend
        assert backend is not None, "prepare() first"
        self._dynamo = DynamoRecorder(self.pid, self.base_ns)
        self._dynamo.start(time.time_ns())
        with self._shield():
            backend.start(self)
        self._step_start_ns = time.time_ns()
        self._window_start_ns = time.monotonic_ns()
        if not backend.handles_schedule and self.options.schedule is not None:
            backend.set_recording(self._action() in RECORDING)

    def stop(self) -> list[str]:
        """Stop recording: close the open action spans and the last step's, stop the backend
        and stream what it still holds. Returns what went wrong (the trace is closed all the
        same by the writer)."""
        backend = self.backend
        assert backend is not None
        self.phase = "stopping"
        try:
            now = time.time_ns()
            for name, starts in self._actions.items():  # actions still open at stop
                self.emit([self._span(name, s, now) for s in starts])
            sched = self.options.schedule
            if not backend.handles_schedule and sched is not None and self._action() in RECORDING:
                self.emit([self._step_span(now)])
            if self.recording_possible():
                backend.stop()  # (its last window could still fail to write: see below)
                self._emit_dynamo()
        except OutputError as error:  # what is on disk stays, loadable; the program goes on
            self.writer.output_failed(error)
        except Exception as error:
            return [str(error) if isinstance(error, HpuprofError) else repr(error)]
        finally:
            self.recording_possible()
        return []

    def recording_possible(self) -> bool:
        """False once a write failed (a full disk): the backend is then stopped for good,
        exporting nothing, and steps, polls and windows do nothing (the run goes on)."""
        if self._abandoned:
            return False
        if not self.writer.failed:
            return True
        self._abandoned = True
        if self.backend is not None:
            try:
                with self._shield():
                    self.backend.abandon()
            except Exception as error:  # the program goes on all the same
                self.writer.warn(f"stopping the recording after the failed write: {error!r}")
        return False

    def close(self) -> None:
        """The run is written (or given up): nothing more is recorded."""
        self.phase = "done"

    def metrics(self) -> list[dict[str, Any]] | None:
        """The backend's metrics records (None: it has none)."""
        return self.backend.metrics() if self.backend is not None else None

    def manifest_extra(self) -> dict[str, Any]:
        """Manifest keys of the session: dynamo's counters, when it compiled anything."""
        counters = dynamo_counters()
        return {"dynamo_counters": counters} if counters else {}

    def drop_unstreamed(self) -> None:
        """Forget what the backend holds unstreamed (a signal cut it mid-append)."""
        if self.backend is not None:
            self.backend.drop_unstreamed()

    # --- steps, actions, polling -------------------------------------------------------------
    def _action(self) -> Action:
        sched = self.options.schedule
        return Action.RECORD if sched is None else action_of(sched, self.step_num)

    def step(self) -> None:
        """The end of a step: advance the schedule, stream, end a window when one is due."""
        backend = self.backend
        if not self.live or backend is None:
            return
        if not self.recording_possible():
            self.step_num += 1
            return
        if backend.handles_schedule:
            with self._shield():  # a signal inside torch's step transition is deferred
                backend.step()
            self.step_num += 1
            self._last_step_ns = time.monotonic_ns()
            self._emit_dynamo()
            self.recording_possible()
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
            with self._shield():
                backend.set_recording(after in RECORDING)
        self.poll(force=True)
        if before is Action.RECORD_AND_SAVE and self.recording_possible():
            self.window_ready()

    def poll(self, force: bool = False) -> None:
        """Stream what the backend recorded so far (on the thread running the model); end the
        window when one is due. Without `force`, at most every `POLL_INTERVAL_NS`."""
        backend = self.backend
        if not self.live or backend is None or not self.recording_possible():
            return
        now = time.monotonic_ns()
        if self.policy.due(
            self.windows, self.step_num - self._window_first_step, now - self._window_start_ns
        ):
            self.end_window()
            return
        if not force and now - self._last_poll_ns < POLL_INTERVAL_NS:
            return
        self._last_poll_ns = now
        with self._shield():
            backend.poll()
        self._emit_dynamo()
        self.recording_possible()

    def start_action(self, name: str) -> None:
        """Open the span of action `name` (its end comes with `end_action`, or at stop)."""
        self._actions.setdefault(name, []).append(time.time_ns())

    def end_action(self, name: str) -> None:
        """Close the latest open span of action `name` and stream it."""
        starts = self._actions.get(name)
        if not starts:
            raise UsageError(f"stop({name!r}) without a matching start({name!r})")
        start_ns = starts.pop()
        if self.live:
            self.emit([self._span(name, start_ns, time.time_ns())])
            self.poll()

    # --- windows -----------------------------------------------------------------------------
    def end_window(self) -> None:
        """Stream the whole current window now (only on the thread that created the session:
        torch.profiler's state and the emulator's sink belong to it)."""
        backend = self.backend
        if backend is None or threading.get_ident() != self.owner_thread:
            return
        with self.writer.lock, self._shield():
            if not self.live or not self.recording_possible():
                return
            try:
                backend.end_window()
            except OutputError as error:  # nothing more can be written: recording stops
                self.writer.output_failed(error)
            except HpuprofError as error:  # the run goes on; stop() reports it
                self.writer.warn(f"window {self.windows} not streamed: {error}")
            self.windows += 1
            self._window_start_ns = time.monotonic_ns()
            self._window_first_step = self.step_num
            self._last_poll_ns = self._window_start_ns
        self._emit_dynamo()
        self.recording_possible()

    def tick_due(self) -> bool:
        """On the timer's thread: a window is due and no step boundary came for as long."""
        if not self.live:
            return False
        quiet_since = max(self._window_start_ns, self._last_step_ns)
        return self.policy.quiet_too_long(self.windows, time.monotonic_ns() - quiet_since)

    def tick(self) -> None:
        """On the main thread between two bytecodes (`main_thread.py`): end the window."""
        if self.live and os.getpid() == self.pid and self.tick_due():
            self.end_window()

    # --- events of our own -------------------------------------------------------------------
    def _emit_dynamo(self) -> None:
        if self._dynamo is not None:
            skip = self.backend.dynamo_compile_ids() if self.backend else frozenset()
            self.emit(self._dynamo.collect(skip))

    def _span(self, name: str, start_ns: int, end_ns: int) -> dict[str, Any]:
        if self.backend is not None:  # the emulated runtime's projected host clock
            start_ns = self.backend.project_epoch_ns(start_ns)
            end_ns = max(self.backend.project_epoch_ns(end_ns, end=True), start_ns)
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
