"""Run a callback on the main thread now and then, between two bytecodes of whatever it runs.

torch.profiler's state belongs to the thread that started it, and the emulator's event sink is
written without locks by the thread that runs the model: a profile window can only be ended on
that thread. A script with no `prof.step()` and no optimizer never hands us that thread, so
`MainThreadTicker` borrows it: a small daemon thread asks CPython to run our callback on the
main thread at its next bytecode boundary (`Py_AddPendingCall`, the same mechanism Python's own
signal handlers use). Nothing process-wide is changed: no signal handler, no trace function.

The callback skips the moment (and is asked again later) when the main thread is inside code
that must not be interrupted by a window change: hpuprof itself, the emulator, or
torch.profiler (see `UNSAFE_PACKAGES`). Signals that arrive from the start of a tick are kept
by the `SignalGuard` and sent to the main thread again by the daemon thread once the callback
has returned, so the script's handler (a KeyboardInterrupt, say) runs in the script's frame,
never inside ours, where an exception could only be swallowed.
"""

from __future__ import annotations

import _thread
import contextlib
import ctypes
import itertools
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType

from hpuprof.capture.signals import SignalGuard

UNSAFE_PACKAGES: tuple[str, ...] = (
    "hpuprof",
    "hpusim",
    "habana_frameworks",
    "torch.profiler",
    "torch.autograd.profiler",
    "torch.autograd.profiler_util",
)
"""Where a pending callback must not end a window: hpuprof itself (it may be mid-write), the
emulated runtime (its sink may be mid-append), the bridge, and torch.profiler (mid-transition).
"""
HOST_MODULES: tuple[str, ...] = (
    "hpuprof.capture.runner",
    "hpuprof.capture.record_session",
    "hpuprof.cli",
    "runpy",
)
"""Modules whose frames only host the user's script (`hpuprof record`): the stack outward
from the first of them is not looked at."""

Tick = Callable[[], None]
"""The callback: runs on the main thread, must not raise."""

_PENDING = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)
_TICKERS: dict[int, MainThreadTicker] = {}
_KEYS = itertools.count(1)


def _trampoline(key: int | None) -> int:
    ticker = _TICKERS.get(key or 0)
    if ticker is not None:
        ticker._run()
        ticker._in_tick = False  # no eval-breaker check (nor GIL hand-off) after this
    return 0


_TRAMPOLINE = _PENDING(_trampoline)  # module-level: a queued call may run after a stop


def _add_pending_call() -> Callable[[int], int] | None:
    """`Py_AddPendingCall(trampoline, key)`, or None off CPython."""
    api = getattr(ctypes, "pythonapi", None)
    add = getattr(api, "Py_AddPendingCall", None)
    if add is None or sys.implementation.name != "cpython":
        return None
    add.argtypes = [_PENDING, ctypes.c_void_p]
    add.restype = ctypes.c_int
    return lambda key: int(add(_TRAMPOLINE, key))


def _source_roots(names: tuple[str, ...]) -> tuple[str, ...]:
    """Real paths of the imported modules `names`: a package's folder (with a trailing
    separator) or a module's file."""
    roots: list[str] = []
    for name in names:
        module = sys.modules.get(name)
        origin = getattr(module, "__file__", None)
        if not origin:
            continue
        path = os.path.realpath(origin)
        if os.path.basename(path) == "__init__.py":
            path = os.path.dirname(path) + os.sep
        roots.append(path)
    return tuple(roots)


class FrameCheck:
    """Tells whether the main thread's stack is at a moment a window may end (see
    `UNSAFE_PACKAGES`, `HOST_MODULES`); looks each source file up once."""

    def __init__(self) -> None:
        self._unsafe = _source_roots(UNSAFE_PACKAGES)
        self._hosts = _source_roots(HOST_MODULES)
        self._verdicts: dict[str, str] = {}

    def _verdict(self, filename: str) -> str:
        verdict = self._verdicts.get(filename)
        if verdict is None:
            path = os.path.realpath(filename) if filename[:1] != "<" else filename
            if path.startswith(self._hosts):
                verdict = "host"
            elif path.startswith(self._unsafe):
                verdict = "unsafe"
            else:
                verdict = "user"
            self._verdicts[filename] = verdict
        return verdict

    def unsafe_frame(self, frame: FrameType | None) -> str | None:
        """The first source file on `frame`'s stack (inward of any host frame) where a
        window must not end, or None when the moment is safe."""
        while frame is not None:
            verdict = self._verdict(frame.f_code.co_filename)
            if verdict == "host":
                return None
            if verdict == "unsafe":
                return frame.f_code.co_filename
            frame = frame.f_back
        return None


class MainThreadTicker:
    """Calls `tick()` on the main thread whenever `due()` says so, checked every `period_s`.

    Args:
        period_s: how often the daemon thread checks `due()` (it only reads attributes).
        due: called on the daemon thread; True when a tick should run.
        tick: called on the main thread at a safe bytecode boundary (see `UNSAFE_PACKAGES`);
            must not raise (anything it raises is swallowed and counted in `errors`).
        guard: the profiler's `SignalGuard`, which keeps the signals that arrive during a
            tick for this ticker to send again afterwards.
        frames: the check of the main thread's stack (default: a new `FrameCheck`).
    """

    def __init__(
        self,
        period_s: float,
        due: Callable[[], bool],
        tick: Tick,
        guard: SignalGuard,
        frames: FrameCheck | None = None,
    ) -> None:
        self.period_s = period_s
        self._due = due
        self._tick = tick
        self._guard = guard
        self._in_tick = False
        self._holding = False
        self._key = next(_KEYS)
        self.frames = frames or FrameCheck()
        self._queued = False
        self._stop = threading.Event()
        self._wake = _thread.allocate_lock()  # released to wake the thread before its period
        self._wake.acquire()
        self._thread: threading.Thread | None = None
        self.ticks = 0
        self.skipped = 0
        self.errors: list[str] = []

    def start(self) -> bool:
        """Start the daemon thread; False (and nothing started) off CPython's main thread."""
        add = _add_pending_call()
        if add is None or threading.current_thread() is not threading.main_thread():
            return False
        _TICKERS[self._key] = self
        self._add = add
        thread = threading.Thread(target=self._loop, name="hpuprof-window-ticker", daemon=True)
        self._thread = thread  # before it starts: a Ctrl-C just after would leave it unjoined
        thread.start()
        return True

    def stop(self) -> None:
        """Stop asking (a call already queued finds the ticker gone and does nothing), and
        send the signals the last tick kept, if the thread has not yet."""
        _TICKERS.pop(self._key, None)
        self._stop.set()
        with contextlib.suppress(RuntimeError):  # already awake
            self._wake.release()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            # a Ctrl-C inside `start` may have left it not started (join refuses it); if it
            # comes up later, it finds the stop set and ends at once
            with contextlib.suppress(RuntimeError):
                thread.join(timeout=5)
        self._thread = None
        self._send_kept()

    def _loop(self) -> None:
        while not self._stop.is_set():
            woke = self._wake.acquire(timeout=self.period_s)
            while self._holding and self._in_tick and not self._stop.is_set():
                time.sleep(0.0005)  # the tick is returning (this lets it have the GIL)
            self._send_kept()
            if woke or self._stop.is_set() or self._queued:
                continue
            try:
                if not self._due():
                    continue
            except Exception:  # a reader racing a stop: check again later
                continue
            self._queued = True
            if self._add(self._key) != 0:  # the interpreter's queue is full: later
                self._queued = False

    def _send_kept(self) -> None:
        """Send the signals kept during the last tick to the main thread. From this thread
        (the tick has returned: the handlers run in the user's frame, as if the signals had
        arrived there); from the main thread at stop, Python handles them right away."""
        if not self._holding:
            return
        self._holding = False
        main = threading.main_thread().ident
        for signum in self._guard.release_hold():
            if main is not None:
                signal.pthread_kill(main, signum)

    def _run(self) -> None:
        self._queued = False
        if self._stop.is_set():
            return
        if self.frames.unsafe_frame(sys._getframe(2)) is not None:
            self.skipped += 1
            return
        self._in_tick = self._holding = True
        self._guard.hold()
        self.ticks += 1
        try:
            self._tick()
        except BaseException as error:  # never into the user's code
            self.errors.append(f"{type(error).__name__}: {error}")
        with contextlib.suppress(RuntimeError):  # (signals are kept till we have returned)
            self._wake.release()  # the thread sends what was kept once we have returned
