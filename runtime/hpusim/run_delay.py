"""How long the calling thread has waited for a CPU: its run-queue wait, from Linux's
`/proc/thread-self/schedstat` (second field: ns spent runnable but not running).

The projected host clock counts a gap of the script's own time as the time its thread was on
the CPU or voluntarily blocked (sleeping, waiting for I/O or a queue), i.e. the gap's wall time
less this wait: a loaded machine makes a runnable thread wait for a CPU, which a Gaudi host's
own cores would not, while a sleep lasts as long on any host. Thread CPU time alone would also
be load-proof, but a `time.sleep` would vanish from it.

`RunDelay.read()` is None where the file cannot be read (not Linux, a kernel without
`CONFIG_SCHED_INFO`): the clock then counts CPU time only. A read costs a few us (a system
call on a kept file descriptor, one per thread), so the clock reads it rarely (projection.py).
"""

from __future__ import annotations

import contextlib
import os
import threading
import weakref
from time import perf_counter_ns, thread_time_ns
from typing import Final

SCHEDSTAT: Final = "/proc/thread-self/schedstat"
SNAPSHOT_TRIES: Final = 3


class RunDelay:
    """Run-queue wait readings of the calling thread (one open file per thread that reads)."""

    __slots__ = ("__weakref__", "_fds", "_off")

    def __init__(self) -> None:
        self._fds: dict[int, int] = {}
        self._off = False
        weakref.finalize(self, _close_all, self._fds)

    def read(self) -> int | None:
        """The calling thread's total run-queue wait in ns, or None when unavailable."""
        if self._off:
            return None
        tid = threading.get_native_id()
        fd = self._fds.get(tid)
        if fd is not None:
            try:
                return int(os.pread(fd, 96, 0).split()[1])
            except OSError:  # a thread that ended, its id now another's: open anew
                _close_all({tid: self._fds.pop(tid)})
            except (IndexError, ValueError):
                self._off = True
                return None
        try:
            fd = self._fds[tid] = os.open(SCHEDSTAT, os.O_RDONLY)
            return int(os.pread(fd, 96, 0).split()[1])
        except (OSError, IndexError, ValueError):
            self._off = True
            return None

    def snapshot(self) -> tuple[int, int, int] | None:
        """(wall ns, thread CPU ns, run-queue wait ns) of the calling thread at one instant, or
        None when the wait is unavailable. A wait is credited when the thread runs again, and a
        system call's return is where a busy machine preempts it: a wait that fell between
        the three readings would be in one and not the others, so they are taken between two
        readings of the wait, and again (up to `SNAPSHOT_TRIES` times) if it moved."""
        before = self.read()
        snap = None
        for _ in range(SNAPSHOT_TRIES):
            if before is None:
                return None
            wall, cpu = perf_counter_ns(), thread_time_ns()
            after = self.read()
            if after is None:
                return None
            snap = (wall, cpu, after)
            if after == before:
                break
            before = after
        return snap

    def close(self) -> None:
        _close_all(self._fds)


def _close_all(fds: dict[int, int]) -> None:
    while fds:
        _, fd = fds.popitem()
        with contextlib.suppress(OSError):
            os.close(fd)
