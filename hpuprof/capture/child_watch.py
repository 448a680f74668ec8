"""Every child of a recorded run ends with it (`hpuprof record`, issue 24).

A script under `hpuprof record` may start processes of its own: Lightning's DDP launcher runs
the script again per card, `torch.multiprocessing` spawns workers, `--cards N` starts a recorder
per card. When the recorder is killed (SIGTERM from `timeout`, SIGKILL, a crash), those children
would live on, orphaned, often waiting forever in a collective. `ChildWatch` starts a small
watcher process beside the recorder: it notes the recorder's descendants about once a second
(`/proc/<pid>/task/*/children`, only that subtree is read) and, when the recorder dies without
saying it ended normally, ends the ones it last saw still running (SIGTERM, then SIGKILL after
`GRACE_S`). A process is ended only if its start time is the one noted (a reused pid is
spared). A normal end (`done()`) leaves the script's children alone, as `python script.py`
would. Linux only (it needs `/proc`); elsewhere the watch is off.

The watcher runs in its own session, so a Ctrl-C in the terminal reaches the script and its
children (which end on it by themselves) and not the watcher.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

POLL_S = 1.0
"""How often the watcher notes the recorder's descendants."""
GRACE_S = 5.0
"""How long orphaned children get after SIGTERM before SIGKILL."""
DONE = b"done\n"
"""What the recorder writes to the watcher when the run ended normally."""
PROC = Path("/proc")


@dataclass(frozen=True)
class Process:
    """A process seen in the recorder's subtree: its pid and start time (clock ticks since
    boot, field 22 of /proc/<pid>/stat), which tell it apart from a later process that
    reuses the pid."""

    pid: int
    start: int


def _stat(pid: int, proc: Path = PROC) -> tuple[bytes, int] | None:
    """(state, start time in clock ticks after boot) of `pid`, or None when it is gone."""
    try:
        stat = (proc / str(pid) / "stat").read_bytes()
    except OSError:
        return None
    fields = stat.rpartition(b")")[2].split()  # the name (field 2) may hold spaces or ')'
    return (fields[0], int(fields[19])) if len(fields) > 19 else None


def start_time(pid: int, proc: Path = PROC) -> int | None:
    """The start time of `pid` (clock ticks after boot), or None when it is gone."""
    stat = _stat(pid, proc)
    return None if stat is None else stat[1]


def _running(p: Process) -> bool:
    """Whether `p` still runs: the same start time (not a reused pid), not exited (a zombie
    waiting to be reaped)."""
    stat = _stat(p.pid)
    return stat is not None and stat[1] == p.start and stat[0] != b"Z"


def children(pid: int, proc: Path = PROC) -> list[int]:
    """The direct children of `pid` (every thread's), from /proc."""
    found: list[int] = []
    try:
        tasks = list((proc / str(pid) / "task").iterdir())
    except OSError:
        return found
    for task in tasks:
        with contextlib.suppress(OSError, ValueError):
            found += [int(c) for c in (task / "children").read_text().split()]
    return found


def descendants(pid: int, exclude: Iterable[int] = (), proc: Path = PROC) -> list[Process]:
    """Every live process below `pid` (children first), without `exclude`'s pids (and
    their subtrees)."""
    skip = set(exclude)
    seen: list[Process] = []
    todo = [c for c in children(pid, proc) if c not in skip]
    while todo:
        child = todo.pop(0)
        start = start_time(child, proc)
        if start is None or child in skip:
            continue
        skip.add(child)
        seen.append(Process(child, start))
        todo += children(child, proc)
    return seen


def end_processes(processes: Iterable[Process], grace_s: float = GRACE_S) -> list[int]:
    """SIGTERM each process still running with the same start time, SIGKILL those alive after
    `grace_s`; returns the pids that were signalled."""
    alive = [p for p in processes if start_time(p.pid) == p.start]
    for p in alive:
        with contextlib.suppress(OSError):
            os.kill(p.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    left = alive
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = [p for p in left if _running(p)]
    for p in left:
        with contextlib.suppress(OSError):
            os.kill(p.pid, signal.SIGKILL)
    return [p.pid for p in alive]


def watch(parent: int, parent_start: int, done: IO[bytes], poll_s: float = POLL_S) -> list[int]:
    """The watcher's loop: note `parent`'s descendants every `poll_s` until `done` says the run
    ended normally (returns []) or `parent` is gone (ends what it last saw; returns their pids)."""
    me = os.getpid()
    seen: list[Process] = []
    listening = True
    while True:
        if listening:
            readable, _, _ = select.select([done], [], [], poll_s)
            message = os.read(done.fileno(), 64) if readable else None
            if message is not None and message.startswith(DONE):
                return []
            if message == b"":  # the pipe closed without "done": the recorder is gone or going
                listening = False
                time.sleep(0.05)
        else:
            time.sleep(poll_s)
        if not _running(Process(parent, parent_start)):
            # what it last saw, and what those started since (they may have been reparented)
            last = {p.pid: p for p in seen}
            for p in seen:
                if start_time(p.pid) == p.start:
                    last.update((q.pid, q) for q in descendants(p.pid, exclude=(me, *last)))
            return end_processes(last.values())
        seen = descendants(parent, exclude=(me,)) or seen


class ChildWatch:
    """The recorder's side: `start()` the watcher, `done()` at a normal end."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> ChildWatch:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        """Any end the recorder's Python sees is a normal end (a signal that kills the process
        never gets here: then the watcher ends the children)."""
        self.done()

    def start(self) -> None:
        """Start the watcher (Linux with /proc only; a failure to start is not an error)."""
        me = os.getpid()
        start = start_time(me)
        if start is None or not (PROC / str(me) / "task").is_dir():
            return
        code = "import sys; from hpuprof.capture.child_watch import main; main(sys.argv[1:])"
        with contextlib.suppress(OSError):
            self._proc = subprocess.Popen(
                [sys.executable, "-c", code, str(me), str(start)],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )

    def done(self) -> None:
        """The run ended normally: the watcher leaves the script's children alone and exits."""
        proc, self._proc = self._proc, None
        if proc is None or proc.stdin is None:
            return
        with contextlib.suppress(OSError, ValueError):
            proc.stdin.write(DONE)
            proc.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=2 * POLL_S + 1)


def main(argv: list[str]) -> None:
    """`python -c ... PARENT_PID PARENT_START`: the watcher process."""
    watch(int(argv[0]), int(argv[1]), sys.stdin.buffer)
