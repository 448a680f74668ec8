"""Errors that hpuprof turns into a one-line message and an exit code, never a traceback."""

from __future__ import annotations

from hpuprof.path_text import path_text


class HpuprofError(Exception):
    """Base of every error the CLI reports as one line. `exit_code` is what `main` returns."""

    exit_code: int = 1


class TraceFormatError(HpuprofError):
    """A file that is not a trace we can read.

    Args:
        path: the file.
        position: where the problem is (byte offset, event index or key path), or None.
        expected: what the reader expected to find there.
    """

    exit_code = 2

    def __init__(self, path: str, position: str | int | None, expected: str) -> None:
        self.path = path_text(str(path))
        self.position = position
        self.expected = expected
        where = f" at {position}" if position is not None else ""
        super().__init__(f"{self.path}{where}: {expected}")


class UsageError(HpuprofError):
    """The user asked for something that cannot be done (bad option, missing file)."""

    exit_code = 2


class OutputError(HpuprofError):
    """An output cannot be written (unwritable directory, disk full)."""

    exit_code = 3


class MemoryLimitError(HpuprofError):
    """A load ran out of the memory this process may use (`ulimit -v`, a container's limit).

    Args:
        path: the file being loaded.
        message: what was being done, the file's size and the limit, in words.
    """

    exit_code = 4

    def __init__(self, path: str, message: str) -> None:
        self.path = path_text(str(path))
        super().__init__(f"{self.path}: {message}")
