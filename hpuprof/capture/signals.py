"""SIGINT / SIGTERM / SIGHUP while recording: keep the run, and do what the process did before.

`SignalGuard.install(on_fatal, on_notice)` looks at each signal's disposition as the process
has it when recording starts, and respects it:

- ignored (`SIG_IGN`, e.g. SIGINT of a background job, SIGHUP under nohup): left alone; the
  signal stays ignored and the run goes on;
- the default action (`SIG_DFL`, e.g. SIGTERM): `on_fatal(signum, frame)` writes the whole
  run, then the default disposition is restored and the signal raised again, so the process
  dies of it exactly as before (the exit status still says "killed by SIGTERM");
- a Python handler (Python's own SIGINT handler raising KeyboardInterrupt, or the script's):
  `on_notice(signum, frame)` notes the signal and flushes what is cheap to flush, then the
  handler is called; what it does (raise, exit, carry on) is the script's business, and the
  run ends when the profiler stops;
- a handler installed from C (`getsignal` returns None): left alone (it cannot be chained).

Either callback may put the signal off a few milliseconds (it is sent again) when it landed
where the process must not be stopped or raised into: inside the emulator, whose event sink
would be left half-appended, or inside hpuprof. Our handlers never raise on their own
account: errors while writing are reported on stderr. A signal that arrives while the
profiler is inside a write (`busy()`) is deferred until the write ends; between `hold()` and
`release_hold()` (a timer tick borrowing the main thread, see `main_thread.py`) it is kept,
and sent again by the timer's thread once the tick has returned. A signal put off and not yet
sent again when the profiler lets go (`uninstall()`) is handled then, at the end of the write
that uninstalls (the process may be about to exit: a timer's resend could come too late). A
forked child (a DataLoader worker) inherits the handlers but only chains. `uninstall()` puts
back exactly what was there.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from types import FrameType
from typing import Any

HANDLED: tuple[signal.Signals, ...] = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)

Callback = Callable[[int, FrameType | None], "bool | None"]
"""Called with the signal number and the frame it interrupted (None when it was deferred).
Returns False for "not at this moment": the signal is sent again a little later (and neither
the run is written nor the previous handler called now)."""
RETRY_S = 0.005
"""How soon a signal a callback put off is sent again."""


class SignalGuard:
    """Installs and removes the run-saving signal handlers (one guard per profiler)."""

    def __init__(self) -> None:
        self._installed: dict[int, Any] = {}  # signum -> previous handler, while installed
        self._chain: dict[int, Any] = {}  # signum -> previous handler, kept after uninstall
        self._on_fatal: Callback | None = None
        self._on_notice: Callback | None = None
        self._busy = 0
        self._holding = False
        self._pending: list[int] = []
        self._in_flight: set[int] = set()  # put off: a timer will send them again
        self._pid = os.getpid()

    @property
    def installed(self) -> tuple[int, ...]:
        """The signals our handler is installed for."""
        return tuple(self._installed)

    @property
    def is_busy(self) -> bool:
        return self._busy > 0

    @property
    def in_flight(self) -> frozenset[int]:
        """The signals put off and not sent again yet (a timer will, or `uninstall`)."""
        return frozenset(self._in_flight)

    def install(
        self, on_fatal: Callback, on_notice: Callback, signals: Iterable[int] = HANDLED
    ) -> tuple[int, ...]:
        """Install for `signals` where the disposition allows (see the module doc); returns
        the signals taken.

        Nothing is installed off the main thread (Python allows handlers only there)."""
        if threading.current_thread() is not threading.main_thread() or self._installed:
            return ()
        self._on_fatal, self._on_notice = on_fatal, on_notice
        self._pid = os.getpid()
        self._chain = {}
        for sig in signals:
            try:
                previous = signal.getsignal(sig)
                if previous is None or previous == signal.SIG_IGN:
                    continue
                # noted first: a Ctrl-C just after `signal.signal` finds ours to uninstall
                self._installed[int(sig)] = self._chain[int(sig)] = previous
                signal.signal(sig, self._handle)
            except (ValueError, OSError):  # pragma: no cover - embedded interpreters
                self._installed.pop(int(sig), None)
                self._chain.pop(int(sig), None)
                continue
        return self.installed

    def uninstall(self) -> None:
        """Restore the handlers that were there before `install` (where ours is still there:
        a handler the script installed meanwhile stays)."""
        if threading.current_thread() is not threading.main_thread():
            return
        for sig, previous in self._installed.items():
            try:
                if signal.getsignal(sig) == self._handle:
                    signal.signal(sig, previous)
            except (ValueError, OSError):  # pragma: no cover
                pass
        self._installed = {}
        owed = [signum for signum in sorted(self._in_flight) if self._take_in_flight(signum)]
        self._pending.extend(signum for signum in owed if signum not in self._pending)
        if not self._busy and not self._holding and self._pending:
            self._fire_pending()

    @contextlib.contextmanager
    def busy(self) -> Iterator[None]:
        """A write that a signal must not interrupt: signals are deferred to its end."""
        self._busy += 1
        try:
            yield
        finally:
            self._busy -= 1
            if not self._busy and not self._holding and self._pending:
                self._fire_pending()

    def hold(self) -> None:
        """From now on keep the signals that arrive (main thread, before a timer tick)."""
        self._holding = True

    def release_hold(self) -> list[int]:
        """Stop keeping signals; returns those kept, to be sent again (any thread: the
        timer's thread calls it once the tick has returned)."""
        self._holding = False
        kept, self._pending = self._pending, []
        return kept

    def _fire_pending(self) -> None:
        pending, self._pending = self._pending, []
        for signum in pending:
            self._fire(signum, None)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if os.getpid() != self._pid:  # a forked child: not our run
            _chain(signum, self._chain.get(signum, signal.SIG_DFL), frame)
            return
        if self._busy or self._holding:
            if signum not in self._pending:
                self._pending.append(signum)
            return
        self._fire(signum, frame)

    def _fire(self, signum: int, frame: FrameType | None) -> None:
        previous = self._chain.get(signum, signal.SIG_DFL)
        callback = self._on_notice if callable(previous) else self._on_fatal
        if _safely(callback, signum, frame) is False:  # not at this moment
            self._send_later(signum)
            return
        _chain(signum, previous, frame)  # on_fatal uninstalled us once the run was written

    def _send_later(self, signum: int) -> None:
        main = threading.main_thread().ident
        if main is None:  # pragma: no cover - no main thread to send it to
            return
        self._in_flight.add(signum)
        later = threading.Timer(RETRY_S, self._send_again, (main, signum))
        later.daemon = True
        later.start()

    def _send_again(self, thread: int, signum: int) -> None:
        """The timer's resend, unless `uninstall` took the signal over meanwhile."""
        if self._take_in_flight(signum):
            signal.pthread_kill(thread, signum)

    def _take_in_flight(self, signum: int) -> bool:
        """Claim a put-off signal (timer or uninstall: whoever comes first sends it, once)."""
        try:
            self._in_flight.remove(signum)  # atomic under the GIL
        except KeyError:
            return False
        return True


def signal_name(signum: int) -> str:
    """ "SIGTERM" for 15; "signal N" for a number the platform does not name."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def _safely(callback: Callback | None, signum: int, frame: FrameType | None) -> bool | None:
    """Run our callback; report, never raise, what goes wrong (we are in the user's code)."""
    if callback is None:
        return None
    try:
        return callback(signum, frame)
    except BaseException as error:  # nothing of ours may escape a handler
        try:
            name = signal_name(signum)
            print(
                f"hpuprof: while saving the run on {name}: {type(error).__name__}: {error}",
                file=sys.stderr,
            )
        except Exception:  # stderr closed: nothing left to tell
            pass
        return None


def _chain(signum: int, previous: Any, frame: FrameType | None) -> None:
    if callable(previous):
        previous(signum, frame)
    elif previous == signal.SIG_IGN:
        return
    else:  # SIG_DFL: die the way the signal would have killed us
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


class FatalSignal(BaseException):
    """Raised by `fatal_signals_raise` in place of dying at once: `signum` is the signal."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal_name(signum))
        self.signum = signum


@contextlib.contextmanager
def fatal_signals_raise() -> Iterator[None]:
    """Inside the block, SIGINT / SIGTERM / SIGHUP that would kill the process outright (their
    default disposition) raise `FatalSignal` instead, so files the block writes atomically are
    cleaned up; then the process dies of the signal as it would have. Ignored signals and
    Python handlers (Python's SIGINT handler raises KeyboardInterrupt itself) are left alone;
    off the main thread nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def raise_it(signum: int, frame: FrameType | None) -> None:
        raise FatalSignal(signum)

    taken: dict[int, Any] = {}
    for sig in HANDLED:
        with contextlib.suppress(ValueError, OSError):
            if signal.getsignal(sig) == signal.SIG_DFL:
                taken[int(sig)] = signal.signal(sig, raise_it)
    try:
        yield
    except FatalSignal as stop:
        _restore(taken, raise_it)
        _chain(stop.signum, signal.SIG_DFL, None)
        raise  # only if the signal did not end the process (it is blocked in this thread)
    finally:
        _restore(taken, raise_it)


def _restore(taken: dict[int, Any], ours: Any) -> None:
    for sig, previous in taken.items():
        with contextlib.suppress(ValueError, OSError):
            if signal.getsignal(sig) == ours:
                signal.signal(sig, previous)
