"""One recording per rank of a run directory at a time: `.rank<R>.lock`, held while recording.

Two `hpuprof record -o SAME` (or two `HPUProfiler(SAME)`) would write the same
`traces/<stem>-rank<R>...` files and `run.json` entries: the first to finish renames the stream
the second still appends to, and the second loses its profile. The rank lock is an advisory
`flock` held from start to stop; the kernel drops it when its holder dies (even by SIGKILL), so
a killed run never leaves a stale lock. The holder writes its pid into the file, for the
message the next one gets. Ranks of one run (each its own process) take different locks.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

from hpuprof.errors import OutputError


class RunDirectoryBusyError(OutputError):
    """Another live process records the same rank into the same run directory."""

    def __init__(self, root: Path, rank: int, holder: int | None) -> None:
        self.root, self.rank, self.holder = root, rank, holder
        who = f"process {holder}" if holder else "another process"
        super().__init__(
            f"{root} is being recorded by {who} (rank {rank}); wait for it to end or choose "
            "another run directory"
        )


class RankLock:
    """The lock of `rank` in run directory `root` (`.rank<R>.lock`), not yet taken."""

    def __init__(self, root: Path, rank: int) -> None:
        self.path = Path(root) / f".rank{rank}.lock"
        self.root, self.rank = Path(root), rank
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock now, or raise `RunDirectoryBusyError` naming the holder's pid (never
        waits). The directory must exist; an OSError of the file system propagates."""
        # kept before the flock: a Ctrl-C from here on finds a lock that `release` gives back
        # (an unlock of a lock not taken does nothing)
        self._fd = fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _pid_in(fd)
            self.release()
            raise RunDirectoryBusyError(self.root, self.rank, holder) from None
        except BaseException:
            self.release()
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)

    def release(self) -> None:
        """Give the lock back (the file stays: removing it would race with the next taker)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)


def _pid_in(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None
