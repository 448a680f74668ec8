"""The process hooks of a recording: what it borrows from the process, and gives back.

`ProcessHooks` takes, while a run records and only then:

- SIGINT / SIGTERM / SIGHUP, as the process has them (`signals.SignalGuard`: an ignored signal
  stays ignored, a fatal one writes the run first, a Python handler is told after we noted it);
  a signal landing where the run cannot be written whole -- inside the emulator or hpuprof --
  is put off a few milliseconds at a time, up to `SIGNAL_RETRIES` times;
- an `atexit` hook, so a script that ends without stopping the profiler is written;
- torch's optimizer-step post hook (`torch.optim.optimizer.register_optimizer_step_post_hook`),
  which advances steps or streams at every `optimizer.step()`;
- the main-thread timer that ends windows in code without steps (`main_thread.py`).

`release()` gives all of it back, exactly as it was. What each hook does to the run is the
owner's callback (`HPUProfiler`); this module only connects them to the process.
"""

from __future__ import annotations

import atexit
import contextlib
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

from hpuprof.capture.main_thread import FrameCheck, MainThreadTicker
from hpuprof.capture.signals import SignalGuard, signal_name

SIGNAL_RETRIES = 40
"""A signal that lands inside the emulator or hpuprof is put off (`signals.RETRY_S` each) at
most this many times in a row, for a moment where the run can be written whole (SIGTERM) or
the script's handler raise without leaving the emulator half-way (SIGINT)."""
TICK_PERIOD_S = 0.5
"""How often the window timer checks whether a window is due (it reads two numbers)."""

FatalCallback = Callable[[str, "str | None"], None]
"""Called with the signal's name and where it landed when no safe moment came (a source file,
or None): write the run now; the process then dies of the signal as before."""


class ProcessHooks:
    """Signal handlers, atexit, the optimizer hook and the window timer of one recording."""

    def __init__(self) -> None:
        self.guard = SignalGuard()
        self.signal_seen: str | None = None
        """The last SIGINT / SIGTERM / SIGHUP received while recording ("SIGTERM"...)."""
        self.frames: FrameCheck | None = None
        self.ticker: MainThreadTicker | None = None
        self._retries = 0
        self._live: Callable[[], bool] = lambda: False
        self._on_fatal: FatalCallback | None = None
        self._on_notice: Callable[[], None] | None = None
        self._at_exit: Callable[[], None] | None = None
        self._optimizer_hook: Any = None

    def busy(self) -> contextlib.AbstractContextManager[None]:
        """A write no signal may cut: signals that arrive meanwhile wait for its end."""
        return self.guard.busy()

    @property
    def signals_taken(self) -> tuple[int, ...]:
        """The signals whose handler is ours now."""
        return self.guard.installed

    # --- taking -------------------------------------------------------------------------------
    def take_signals(
        self, live: Callable[[], bool], on_fatal: FatalCallback, on_notice: Callable[[], None]
    ) -> None:
        """Take SIGINT / SIGTERM / SIGHUP where their disposition allows (main thread only).

        Args:
            live: whether the run is still recording (a signal is put off only then).
            on_fatal: a signal that kills the process: write the run (see `FatalCallback`).
            on_notice: a signal a Python handler sees next, at a safe moment: stream what is
                cheap to stream, in case the handler ends the process abruptly.
        """
        self._live, self._on_fatal, self._on_notice = live, on_fatal, on_notice
        self.guard.install(self._fatal, self._notice)

    def call_at_exit(self, callback: Callable[[], None]) -> None:
        """Run `callback` when the interpreter exits (unless released before)."""
        self._at_exit = callback
        atexit.register(callback)

    def watch_frames(self) -> None:
        """Start telling safe moments from unsafe ones (after the backend imported what it
        records with: those modules' frames are unsafe)."""
        self.frames = FrameCheck()

    def hook_optimizer(self, callback: Callable[[], None]) -> None:
        """Call `callback` after every `optimizer.step()` (when torch.optim is imported)."""
        optimizer = sys.modules.get("torch.optim.optimizer")
        register = getattr(optimizer, "register_optimizer_step_post_hook", None)
        if register is not None:
            self._optimizer_hook = register(lambda *_: callback())

    def start_ticker(
        self, period_s: float, due: Callable[[], bool], tick: Callable[[], None]
    ) -> None:
        """Borrow the main thread between two bytecodes to run `tick` when `due()` (see
        `main_thread.py`); nothing starts off CPython's main thread."""
        self.ticker = MainThreadTicker(period_s, due, tick, self.guard, self.frames)
        if not self.ticker.start():
            self.ticker = None

    # --- giving back --------------------------------------------------------------------------
    def release(self) -> None:
        """Give back everything taken (inside `busy`, so a signal that arrives now finds the
        old handlers restored)."""
        if self.ticker is not None:
            self.ticker.stop()
            self.ticker = None
        self.guard.uninstall()
        if self._at_exit is not None:
            atexit.unregister(self._at_exit)
            self._at_exit = None
        if self._optimizer_hook is not None:
            self._optimizer_hook.remove()
            self._optimizer_hook = None

    # --- the signal callbacks -----------------------------------------------------------------
    def _unsafe_where(self, frame: FrameType | None) -> str | None:
        frames = self.frames
        return frames.unsafe_frame(frame) if frame is not None and frames is not None else None

    def _put_off(self, frame: FrameType | None) -> bool:
        """Whether a signal must wait for a safe moment (it landed inside the emulator, its
        sink maybe mid-append, or inside hpuprof), until `SIGNAL_RETRIES` ran out."""
        unsafe = self._unsafe_where(frame) is not None
        if unsafe and self._live() and self._retries < SIGNAL_RETRIES:
            self._retries += 1
            return True
        self._retries = 0
        return False

    def _fatal(self, signum: int, frame: FrameType | None) -> bool:
        self.signal_seen = name = signal_name(signum)
        if self._put_off(frame):
            return False
        if self._on_fatal is not None:
            self._on_fatal(name, self._unsafe_where(frame))
        return True

    def _notice(self, signum: int, frame: FrameType | None) -> bool:
        self.signal_seen = signal_name(signum)
        if self._put_off(frame):
            return False
        safe = frame is not None and self.frames is not None and not self._unsafe_where(frame)
        if safe and self._live() and self._on_notice is not None:
            self._on_notice()
        return True
