"""Signals while recording: the inherited disposition is respected, the script's own handlers
keep working, nothing is raised into the training loop on our account, and everything the
profiler changed in the process is put back."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hpuprof.capture.main_thread import MainThreadTicker
from hpuprof.capture.profiler import HPUProfiler
from hpuprof.capture.run_dir import read_manifest
from hpuprof.capture.signals import HANDLED, SignalGuard

from .helpers import child_env, try_load

torch = pytest.importorskip("torch")


@pytest.fixture
def default_dispositions() -> Iterator[None]:
    """The dispositions a fresh Python process starts with (SIGINT: KeyboardInterrupt, the
    others: default), whatever a test run before in this worker process left, and back after:
    these tests are about what the profiler does with them."""
    wanted = {int(s): signal.SIG_DFL for s in HANDLED}
    wanted[int(signal.SIGINT)] = signal.default_int_handler
    before = {sig: signal.signal(sig, handler) for sig, handler in wanted.items()}
    try:
        yield
    finally:
        for sig, handler in before.items():
            if handler is not None:  # a handler installed from C cannot be put back from Python
                signal.signal(sig, handler)


IGNORING_SCRIPT = """
import signal, sys, time, torch
from hpuprof.capture.profiler import HPUProfiler
prof = HPUProfiler(sys.argv[1], backend="cpu", window_s=None, window_steps=1)
prof.start()
x = torch.ones(8, 8)
for i in range(40):
    with prof.profile("training_step"):
        x = torch.mm(x, x) * 0.1
    prof.step()
    if i == 3:
        print("ready", flush=True)
    time.sleep(0.02)
prof.stop()
print("done", signal.getsignal(signal.SIGINT) == signal.SIG_IGN, flush=True)
"""


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def test_inherited_ignored_sigint_stays_ignored(tmp_path: Path) -> None:
    """A background job: SIGINT ignored before Python starts. The run goes on and is whole."""
    child = subprocess.Popen(
        [sys.executable, "-c", IGNORING_SCRIPT, str(tmp_path)],
        env=child_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_ignore_sigint,  # the point: SIGINT inherited as ignored
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "ready"
    for _ in range(3):
        child.send_signal(signal.SIGINT)
        time.sleep(0.05)
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err
    assert "UsageError" not in err
    assert out.strip() == "done True"
    manifest = read_manifest(tmp_path)
    assert manifest["end_state"] == "completed"
    trace = try_load(tmp_path)
    steps = trace.events["name"].str.startswith("ProfilerStep#").sum()
    assert steps == 40


OWN_HANDLER_SCRIPT = """
import signal, sys, torch
from hpuprof.capture.profiler import HPUProfiler
stop = []
signal.signal(signal.SIGTERM, lambda s, f: stop.append(s))
prof = HPUProfiler(sys.argv[1], backend="cpu", window_s=None, window_steps=1).start()
x = torch.ones(8, 8)
i = 0
while not stop:
    x = torch.mm(x, x) * 0.1
    prof.step()
    i += 1
    if i == 3:
        print("ready", flush=True)
prof.stop()
print("stopped gracefully after", i, flush=True)
"""


def test_the_scripts_own_handler_is_chained_and_decides(tmp_path: Path) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", OWN_HANDLER_SCRIPT, str(tmp_path)],
        env=child_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "ready"
    child.send_signal(signal.SIGTERM)
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err
    assert out.startswith("stopped gracefully after")
    steps = int(out.split()[-1])
    manifest = read_manifest(tmp_path)
    assert manifest["end_state"] == "signal"
    assert manifest["ends"]["0"]["signal"] == "SIGTERM"
    trace = try_load(tmp_path)
    assert trace.events["name"].str.startswith("ProfilerStep#").sum() == steps


def _process_state() -> tuple[object, ...]:
    return (
        tuple(signal.getsignal(s) for s in HANDLED),
        sorted(t.name for t in threading.enumerate()),
    )


@pytest.mark.usefixtures("default_dispositions")
def test_nothing_process_wide_left_changed(tmp_path: Path) -> None:
    x = torch.ones(4, 4)
    with HPUProfiler(tmp_path / "warm", backend="cpu"):  # torch's own first-use imports
        torch.mm(x, x)
    before = _process_state()
    with HPUProfiler(tmp_path / "a", backend="cpu", window_s=0.5) as prof:
        assert set(prof.hooks.signals_taken) == {int(s) for s in HANDLED}  # while recording
        torch.mm(x, x)
    assert _process_state() == before
    with pytest.raises(ZeroDivisionError), HPUProfiler(tmp_path / "b", backend="cpu"):
        _ = 1 / 0
    assert _process_state() == before


def test_a_handler_the_script_installs_meanwhile_stays(tmp_path: Path) -> None:
    def mine(signum: int, frame: object) -> None:
        return None

    old = signal.getsignal(signal.SIGTERM)
    try:
        with HPUProfiler(tmp_path, backend="cpu"):
            signal.signal(signal.SIGTERM, mine)
        assert signal.getsignal(signal.SIGTERM) is mine
    finally:
        signal.signal(signal.SIGTERM, old)


@pytest.mark.usefixtures("default_dispositions")
def test_ignored_signals_are_not_taken(tmp_path: Path) -> None:
    old = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        with HPUProfiler(tmp_path, backend="cpu") as prof:
            assert signal.SIGTERM not in prof.hooks.signals_taken
            assert signal.SIGINT in prof.hooks.signals_taken  # the others are taken
            assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGTERM, old)


def _never(signum: int, frame: object) -> bool:
    raise AssertionError(f"SIGUSR1 has a Python handler: {signum} is not fatal here")


def _nothing(signum: int, frame: object) -> None:
    return None


class Interrupted(Exception):
    """What the test's own SIGUSR1 handler raises."""


def test_a_signal_during_a_tick_reaches_the_users_code() -> None:
    """A signal that arrives while the ticker borrows the main thread is kept and sent again
    once the tick has returned, so the script's handler raises in the script's frame -- not
    inside our callback, where the exception could only be swallowed."""
    calls: list[int] = []

    def handler(signum: int, frame: object) -> None:
        calls.append(signum)
        raise Interrupted

    old = signal.signal(signal.SIGUSR1, handler)
    guard = SignalGuard()
    try:
        assert guard.install(_never, _nothing, signals=(signal.SIGUSR1,)) == (signal.SIGUSR1,)

        def tick() -> None:
            signal.raise_signal(signal.SIGUSR1)
            time.sleep(0.001)  # Python would run the handler here, inside the tick

        ticker = MainThreadTicker(0.05, lambda: not calls, tick, guard)
        assert ticker.start()
        with pytest.raises(Interrupted):
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                sum(range(100))
        ticker.stop()
        assert calls == [signal.SIGUSR1]
        assert ticker.ticks == 1 and not ticker.errors
    finally:
        guard.uninstall()
        signal.signal(signal.SIGUSR1, old)


@contextlib.contextmanager
def _guarding_usr1(
    on_notice: Callable[[int, object], bool],
) -> Iterator[tuple[SignalGuard, list[int]]]:
    """A guard in front of a SIGUSR1 handler (as the script's own); yields it and the
    signals the script's handler saw."""
    handled: list[int] = []
    old = signal.signal(signal.SIGUSR1, lambda s, f: handled.append(s))
    guard = SignalGuard()
    try:
        assert guard.install(_never, on_notice, signals=(signal.SIGUSR1,)) == (signal.SIGUSR1,)
        yield guard, handled
    finally:
        guard.uninstall()
        signal.signal(signal.SIGUSR1, old)


def test_a_signal_put_off_is_sent_again_then_handled_once() -> None:
    """`on_notice` returning False (the signal landed inside the emulator) puts the signal off:
    it comes back a few ms later, and the script's handler runs once, at the safe moment."""
    asked: list[int] = []

    def third_time_safe(signum: int, frame: object) -> bool:
        asked.append(signum)
        return len(asked) > 2

    with _guarding_usr1(third_time_safe) as (_, handled):
        signal.raise_signal(signal.SIGUSR1)
        assert handled == []  # put off
        deadline = time.monotonic() + 10
        while not handled and time.monotonic() < deadline:
            time.sleep(0.001)
        assert handled == [signal.SIGUSR1] and len(asked) == 3


def test_a_signal_put_off_when_the_profiler_lets_go_is_handled_then(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Put off, then the run ends before the resend (a script's last line): the signal is
    handled at `uninstall`, once -- not lost with a process that exits within the delay."""
    monkeypatch.setattr("hpuprof.capture.signals.RETRY_S", 0.3)
    with _guarding_usr1(lambda s, f: f is None) as (guard, handled):  # unsafe in any frame
        signal.raise_signal(signal.SIGUSR1)
        assert handled == [] and guard.in_flight == {signal.SIGUSR1}
        with guard.busy():  # the profiler's final write lets go of the signals
            guard.uninstall()
            assert handled == []  # not inside the write
        assert handled == [signal.SIGUSR1]
        time.sleep(0.6)  # the timer, had it not been claimed, would have sent it by now
        assert handled == [signal.SIGUSR1]
