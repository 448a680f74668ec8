"""SIGINT / SIGTERM handling: finish writing the trace, then do what the process did before.

`SignalGuard.install(callback)` runs `callback(signum)` on SIGINT/SIGTERM (main thread only, as
Python requires), restores the previous handlers and chains to them: a Python handler is
called, the default action is re-raised with the default disposition (so the exit status says
"killed by SIGTERM"), and Python's default SIGINT handler raises KeyboardInterrupt as usual.
A signal that arrives while the profiler is inside a write is deferred until the write ends.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

HANDLED = (signal.SIGINT, signal.SIGTERM)


class SignalGuard:
    """Installs and removes the trace-saving signal handlers. Not reentrant across instances."""

    def __init__(self) -> None:
        self._previous: dict[int, Any] = {}
        self._callback: Callable[[int], None] | None = None
        self._busy = 0
        self._pending: int | None = None

    @property
    def installed(self) -> bool:
        return bool(self._previous)

    def install(self, callback: Callable[[int], None]) -> bool:
        """Install the handlers; returns False (and does nothing) off the main thread."""
        if threading.current_thread() is not threading.main_thread() or self._previous:
            return False
        self._callback = callback
        for sig in HANDLED:
            try:
                self._previous[sig] = signal.signal(sig, self._handle)
            except (ValueError, OSError):  # pragma: no cover - embedded interpreters
                continue
        return bool(self._previous)

    def uninstall(self) -> None:
        """Restore the handlers that were there before `install`."""
        for sig, previous in self._previous.items():
            try:
                if signal.getsignal(sig) == self._handle:
                    signal.signal(sig, previous)
            except (ValueError, OSError):  # pragma: no cover
                pass
        self._previous = {}

    def busy(self) -> _Busy:
        """Context manager marking a write that a signal must not interrupt."""
        return _Busy(self)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self._busy:
            self._pending = signum
            return
        self._fire(signum, frame)

    def _fire(self, signum: int, frame: FrameType | None) -> None:
        previous = self._previous.get(signum, signal.SIG_DFL)
        callback = self._callback
        self.uninstall()
        if callback is not None:
            callback(signum)
        _chain(signum, previous, frame)

    def _leave(self) -> None:
        self._busy -= 1
        if not self._busy and self._pending is not None:
            signum, self._pending = self._pending, None
            self._fire(signum, None)


class _Busy:
    def __init__(self, guard: SignalGuard) -> None:
        self._guard = guard

    def __enter__(self) -> None:
        self._guard._busy += 1

    def __exit__(self, *exc: object) -> None:
        self._guard._leave()


def _chain(signum: int, previous: Any, frame: FrameType | None) -> None:
    if callable(previous):
        previous(signum, frame)
    elif previous == signal.SIG_IGN:
        return
    else:  # SIG_DFL or None (set from C): die the way the signal would have killed us
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
