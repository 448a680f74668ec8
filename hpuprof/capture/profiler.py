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
the run goes on and are renamed to `.pt.trace.json` at stop, beside the Habana metrics dump and
`run.json` (see `run_dir.py`).

`HPUProfiler` ties three pieces together, each with one job:

- the capture session (`session.py`): the backend, its steps, its recording windows;
- the run writer (`run_writer.py`): the streamed trace, the metrics, the `run.json` entries;
- the process hooks (`process_hooks.py`): signal handlers, atexit, the optimizer-step hook and
  the main-thread window timer, all given back at stop.

Nothing recorded is lost: `run.json` names the streaming file from the start, and the backend's
recording is cut into windows that are streamed as they end -- at a step boundary once
`window_s` seconds (or `window_steps` steps) have passed, or, in code that has no steps, on a
timer that borrows the main thread between two bytecodes (`main_thread.py`). A process killed
with SIGKILL or `os._exit` loses at most its last window; exceptions, SIGINT, SIGTERM and
SIGHUP write everything (`signals.py`), and `run.json` says how the run ended (`run_end.py`).
The Perfetto trace is made after the run, outside its stop (`perfetto_export.py`).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, overload

from hpuprof.capture import backends
from hpuprof.capture.backends.base import CaptureOptions
from hpuprof.capture.perfetto_export import export_trace
from hpuprof.capture.process_hooks import TICK_PERIOD_S, ProcessHooks
from hpuprof.capture.run_dir import RunPaths, base_manifest, now_iso, safe_stem
from hpuprof.capture.run_end import RunEnd, final_end, from_exception
from hpuprof.capture.run_lock import RankLock, RunDirectoryBusyError
from hpuprof.capture.run_summary import load_trace, summary_text
from hpuprof.capture.run_writer import RunWriter, trace_header
from hpuprof.capture.schedule import as_schedule
from hpuprof.capture.session import CaptureSession
from hpuprof.capture.windows import DEFAULT_WINDOW_S, WindowPolicy
from hpuprof.errors import UsageError
from hpuprof.trace.atomic_write import discard_unfinished_writes
from hpuprof.trace.leftovers import remove_leftovers

if TYPE_CHECKING:
    from hpuprof.trace.model import Trace

__all__ = ["DEFAULT_WINDOW_S", "HPUProfiler", "default_run_dir"]
T = TypeVar("T")


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


class _Forward(Generic[T]):
    """A read-only attribute of the same name on one of the profiler's pieces."""

    def __init__(self, piece: str) -> None:
        self.piece = piece
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> _Forward[T]: ...

    @overload
    def __get__(self, obj: object, owner: type | None = None) -> T: ...

    def __get__(self, obj: object, owner: type | None = None) -> T | _Forward[T]:
        if obj is None:
            return self
        value: T = getattr(getattr(obj, self.piece), self.name)
        return value


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
        perfetto: the run gets a Perfetto protobuf trace once it is over: `hpuprof record`
            and `hpuprof demo` write it after the script ended. Never written by `stop()` (nor
            its signal and atexit paths, inside the training process): in a script call
            `export_perfetto()` after stop, or run `hpuprof convert RUN_DIR`.
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
        if_busy: when another live process records this rank into `dirpath` (`run_lock.py`):
            "skip" (default) says so once on stderr and records nothing, so the program goes
            on unprofiled; "raise" raises `RunDirectoryBusyError` from `start()` (what
            `hpuprof record` does, before the script starts).
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
        if_busy: Literal["skip", "raise"] = "skip",
        activities: Any = None,
        **_ignored: Any,
    ) -> None:
        if backend not in (None, "auto", *backends.BACKEND_NAMES):
            raise UsageError(
                f"unknown backend {backend!r}; choose one of {', '.join(backends.BACKEND_NAMES)}"
            )
        policy = WindowPolicy(window_s, window_steps)
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
        self.if_busy = if_busy
        self.refused: str | None = None
        """Why nothing is recorded (the run directory was busy), or None."""
        self._lock = RankLock(self.dirpath, self.rank)
        self.end: RunEnd | None = None
        self.hooks = ProcessHooks()
        self.writer = RunWriter(self.paths, shield=self.hooks.busy)
        self.session = CaptureSession(
            self.options, backend, policy, self.writer, self.hooks.busy, self._window_ready
        )

    # --- state, from the pieces ----------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self.session.live

    @property
    def status(self) -> str:
        """ "not started", "running", "stopping", then how it ended (`RunEnd.legacy_status`)."""
        if self.end is not None:
            return self.end.legacy_status
        return {"idle": "not started", "live": "running"}.get(self.session.phase, "stopping")

    @property
    def backend(self) -> str:
        """The backend in use (or the one that would be chosen)."""
        return self.session.backend_in_use()

    step_num: _Forward[int] = _Forward("session")
    windows: _Forward[int] = _Forward("session")  # streamed before the last (stop's) one
    signal_seen: _Forward[str | None] = _Forward("hooks")
    event_counts: _Forward[dict[str, int]] = _Forward("writer")
    files: _Forward[dict[str, list[str]]] = _Forward("writer")  # run-relative, by kind
    warnings: _Forward[list[str]] = _Forward("writer")
    trace_path: _Forward[Path] = _Forward("writer")  # the incomplete file while running

    # --- lifecycle ---------------------------------------------------------------------------
    def start(self, action_name: str | None = None) -> HPUProfiler:
        """Start profiling; with `action_name`, also start that action (Lightning surface).

        Starting an action after the run was written is a no-op (the action is not recorded),
        so a training loop that goes on after a stop keeps running."""
        if action_name is not None:
            if self.session.phase == "idle" and self.refused is None:
                self._start()
            if self.running:
                self.session.start_action(action_name)
            return self
        if self.end is not None and self.end.state == "signal":
            return self  # the run was written on a signal the process survived: keep going
        if not self.running and self.refused is None:
            self._start()
        return self

    def stop(self, action_name: str | None = None, *, end: RunEnd | None = None) -> None:
        """Stop profiling and write everything; with `action_name`, only end that action.

        Args:
            action_name: end this action only (Lightning surface).
            end: how the profiled code ended (default: completed), for `run.json`.
        """
        if action_name is not None:
            self.session.end_action(action_name)
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
                self.session.end_action(action_name)

    def step(self) -> None:
        """Mark the end of a step: advances the schedule (torch.profiler's `prof.step()`)."""
        self.session.step()

    def poll(self, force: bool = False) -> None:
        """Stream what the backend recorded so far (call on the thread running the model);
        ends the recording window when one is due (see `window_s`)."""
        self.session.poll(force)

    def _start(self) -> None:
        if self.session.phase != "idle":
            raise UsageError("an HPUProfiler records once; create a new one for another run")
        self.paths.prepare()
        try:  # (the lock too: a Ctrl-C just after it is taken must give it back)
            if not self._take_lock():
                return
            self._open_and_begin()
        except BaseException:
            if not self.running:  # failed before the run went live: _finish did not run
                self._lock.release()
            raise

    def _take_lock(self) -> bool:
        """The rank lock of the run directory; False (said once on stderr) when another live
        process holds it and `if_busy` is "skip"."""
        try:
            self._lock.acquire()
        except RunDirectoryBusyError as busy:
            if self.if_busy == "raise":
                raise
            self.refused = str(busy)
            print(f"hpuprof: warning: {busy}; this run is not recorded", file=sys.stderr)
            return False
        return True

    def _open_and_begin(self) -> None:
        session, writer = self.session, self.writer
        remove_leftovers(self.dirpath)  # after the lock: never a live run's scratch
        backend = session.prepare()
        meta = session.run_metadata(self.rank, self.world_size)
        comm = "hccl" if backend.name in ("gaudi", "emulated") else ""
        writer.open(
            trace_header(
                meta,
                rank=self.rank,
                world_size=self.world_size,
                comm_backend=comm,
                base_ns=session.base_ns,
            )
        )
        try:  # (a Ctrl-C between going live and the try would leave a live run nobody ends)
            session.go_live()
            self._begin(str(meta.get("mode", "")), str(meta.get("device_profile", "")))
        except BaseException as error:  # the run directory is left whole, saying why
            self._finish(from_exception(error, signal_seen=self.signal_seen))
            raise

    def _begin(self, mode: str, device_profile: str) -> None:
        """Announce the run in `run.json`, take the process hooks, start the backend."""
        hooks, session = self.hooks, self.session
        backend = session.backend
        assert backend is not None
        if self.handle_signals:  # first: a signal from here on finds the run written
            hooks.take_signals(lambda: self.running, self._on_fatal_signal, session.end_window)
        self.writer.announce(  # names the streaming file now: a killed run loads
            base_manifest(
                rank=self.rank,
                world_size=self.world_size,
                mode=mode,
                device_profile=device_profile,
                backend=backend.name,
                device_time=backend.device_time,
            )
        )
        hooks.call_at_exit(self._at_exit)
        session.start()
        hooks.hook_optimizer(self.step if self.step_on_optimizer else self.poll)
        hooks.watch_frames()  # after the backend imported what it records with
        window_s = self.window_s
        if window_s is not None and session.owner_thread == threading.main_thread().ident:
            hooks.start_ticker(min(TICK_PERIOD_S, window_s / 2), session.tick_due, session.tick)

    def _window_ready(self) -> None:
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    # --- finishing ---------------------------------------------------------------------------
    def _on_fatal_signal(self, name: str, unsafe_where: str | None) -> None:
        """A signal that kills the process: write everything first (the hooks then let it)."""
        if unsafe_where is not None:  # no safe moment came: what is half-appended goes
            self.session.drop_unstreamed()
            self.writer.warn(f"{name} arrived inside {unsafe_where}: its last events were dropped")
        self._finish(RunEnd("signal", signal=name))
        discard_unfinished_writes()  # a write the signal interrupted never ends: no .tmp left

    def _at_exit(self) -> None:
        if self.running:
            error = getattr(sys, "last_value", None)  # an exception that ended the script
            if isinstance(error, BaseException):
                self._finish(from_exception(error, signal_seen=self.signal_seen))
            else:
                self._finish(RunEnd("completed"))

    def _finish(self, end: RunEnd) -> None:
        session, writer = self.session, self.writer
        with self.hooks.busy(), writer.lock:  # a signal now is handled once all is written
            if not self.running or os.getpid() != session.pid:
                return
            end = final_end(end, self.signal_seen, now_iso())
            try:
                errors = session.stop()
                extra = session.manifest_extra()
                writer.finish(end, errors=errors, metrics=session.metrics, extra=extra)
            finally:  # give back what recording took (a signal now finds the old handlers)
                self.hooks.release()
                writer.release()
                self._lock.release()
                self.end = end
                session.close()
        if self.options.schedule is None:
            self._window_ready()

    # --- results -----------------------------------------------------------------------------
    def export_chrome_trace(self, path: str | os.PathLike[str]) -> None:
        """Copy the trace recorded so far to `path` (valid JSON, also while running)."""
        self.writer.copy_trace(Path(path))

    def export_perfetto(self, trace: Trace | None = None) -> Path | None:
        """Write the run's Perfetto trace (`perfetto/<filename>-rank<R>.perfetto-trace`) once
        the run is written, and list it in `run.json`; None (and a warning) if that failed.

        Args:
            trace: the written trace already loaded (else it is loaded here).
        """
        if self.refused is not None:
            return None  # nothing was recorded (said at start)
        if self.end is None or not self.paths.trace.is_file():
            raise UsageError("export_perfetto() converts the written trace: call it after stop()")
        done = export_trace(self.dirpath, self.paths.rel(self.paths.trace), trace)
        if done.perfetto is None:
            self.writer.warn(done.warning)
            return None
        self.files["perfetto"].append(done.perfetto)
        return self.dirpath / done.perfetto

    def summary(self) -> str:
        """The short analysis summary once the run is written, or the event counts before."""
        if self.refused is not None:
            return f"not recorded: {self.refused}"
        written = not self.running and self.paths.trace.is_file()
        trace = load_trace(self.paths.trace) if written else None
        return summary_text(trace, self.event_counts, self.backend)
