"""A Ctrl-C at any moment of the profiler's start leaves a profiler that stops cleanly: the
KeyboardInterrupt is the only exception the script sees (never one of ours, which
`hpuprof record` reports as an internal error, exit 70), and what was started is given back
(the signal handlers, the window ticker, the run directory's lock: in a notebook, an
interrupted start must not leave the directory "being recorded by" the kernel itself).

Found by the kill trials: a SIGINT while `MainThreadTicker.start` waited for its new thread to
come up left a thread object that `stop` then tried to join ("cannot join thread before it is
started").
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

import hpuprof
from hpuprof.capture.main_thread import MainThreadTicker
from hpuprof.capture.profiler import HPUProfiler
from hpuprof.capture.run_end import from_exception
from hpuprof.capture.run_lock import RankLock, RunDirectoryBusyError
from hpuprof.capture.signals import SignalGuard

pytest.importorskip("torch")

PACKAGE = str(Path(hpuprof.__file__).resolve().parent)


@pytest.mark.parametrize("thread_up", [False, True], ids=["before-thread-up", "after"])
def test_ticker_interrupted_while_its_thread_starts_stops_cleanly(
    monkeypatch: pytest.MonkeyPatch, thread_up: bool
) -> None:
    real_start = threading.Thread.start

    def interrupted_start(self: threading.Thread) -> None:
        if thread_up:
            real_start(self)
        raise KeyboardInterrupt  # as Python's SIGINT handler in `Thread.start`'s wait

    ticker = MainThreadTicker(0.01, lambda: False, lambda: None, SignalGuard())
    real_loop = ticker._loop

    def slow_loop() -> None:  # a thread that takes a while to see the stop (a loaded machine)
        time.sleep(0.2)
        real_loop()

    monkeypatch.setattr(ticker, "_loop", slow_loop)
    monkeypatch.setattr(threading.Thread, "start", interrupted_start)
    with pytest.raises(KeyboardInterrupt):
        ticker.start()
    monkeypatch.undo()
    ticker.stop()  # raised RuntimeError ("cannot join thread before it is started") before
    # stop() returns with the thread gone: it did not join one that had come up (CI: "window
    # ticker still running" after a Ctrl-C just after `Thread.start` returned)
    alive = [t for t in threading.enumerate() if t.name == "hpuprof-window-ticker"]
    assert not alive, "the ticker's thread outlived its stop"


class _InterruptAtLine:
    """A trace function that raises KeyboardInterrupt at the `n`th line hpuprof runs (as
    Python's SIGINT handler would there); `where` says which line that was."""

    def __init__(self, n: int) -> None:
        self.n, self.seen, self.where = n, 0, ""

    def __call__(self, frame: FrameType, event: str, arg: Any) -> Any:
        if not frame.f_code.co_filename.startswith(PACKAGE):
            return None
        if event == "line":
            self.seen += 1
            if self.seen == self.n:
                sys.settrace(None)
                self.where = f"{frame.f_code.co_filename}:{frame.f_lineno}"
                raise KeyboardInterrupt
        return self


def _left_behind(run: Path, handlers: dict[int, Any]) -> list[str]:
    """What a profiler that is no longer running still holds: signal handlers of ours, its
    window ticker's thread, the run directory's lock."""
    found = []
    if {sig: signal.getsignal(sig) for sig in handlers} != handlers:
        found.append("signal handlers not restored")
    if any(t.name == "hpuprof-window-ticker" for t in threading.enumerate()):
        found.append("window ticker still running")
    if not run.is_dir():  # interrupted before the directory was made: no lock either
        return found
    lock = RankLock(run, 0)
    try:
        lock.acquire()
    except RunDirectoryBusyError:
        found.append("run directory still locked")
    else:
        lock.release()
    return found


def _start_interrupted(run: Path, n: int) -> tuple[str, str | None]:
    """Start a CPU-backend profiler with a Ctrl-C at hpuprof's `n`th line, stop it as
    `hpuprof record` does when it went live, and see what is left; (where it landed, or ""
    when the start has fewer lines, and the problem)."""
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    prof = HPUProfiler(run, filename="t", backend="cpu", window_steps=1, if_busy="raise")
    inject = _InterruptAtLine(n)
    sys.settrace(inject)
    try:
        prof.start()
    except KeyboardInterrupt as error:
        try:
            prof.stop(end=from_exception(error, signal_seen=prof.signal_seen))
        except BaseException as stop_error:
            return inject.where, f"stop raised {type(stop_error).__name__}: {stop_error}"
        left = _left_behind(run, handlers)
        return inject.where, ", ".join(left) if left else None
    except BaseException as other:
        return inject.where, f"start raised {type(other).__name__}: {other}"
    finally:
        sys.settrace(None)
    prof.stop()
    return "", None


def test_ctrl_c_at_every_line_of_start(tmp_path: Path) -> None:
    problems: list[str] = []
    n = 1
    while n < 20_000:  # a guard: the start runs ~900 lines of ours
        where, problem = _start_interrupted(tmp_path / f"run{n}", n)
        if not where:
            break
        if problem is not None:
            problems.append(f"line {n} ({where}): {problem}")
        n += 1
    assert n > 100, "the start ran too few lines of hpuprof for this test to mean anything"
    assert not problems, "\n".join(problems[:20])
    # what each interrupted start took is given back: the next profiler in the directory starts
    prof = HPUProfiler(tmp_path / "run1", filename="t", backend="cpu", if_busy="raise")
    prof.start()
    prof.stop()
    assert (tmp_path / "run1" / "run.json").is_file()
