"""Atomic file output: write beside the target under a unique temporary name, fsync, rename.

Readers never see a half-written file, and a crash after the rename cannot lose what was
written. The one place every writer of hpuprof (traces, Parquet, reports, run manifests,
dashboard caches) goes through.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from hpuprof.errors import OutputError


def _output_error(target: Path, error: OSError) -> OutputError:
    if error.errno == errno.ENOSPC:
        return OutputError(f"disk full while writing {target}")
    return OutputError(f"cannot write {target}: {error.strerror or error}")


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike[str], *, durable: bool = True) -> Iterator[BinaryIO]:
    """Open a temporary file beside `path`; on success fsync and rename it over `path`.

    The temporary name is unique (safe for concurrent writers of the same target); on any
    failure it is deleted. OS errors become `OutputError` ("disk full" for ENOSPC). Without
    `durable`, no fsync: readers still never see a half-written file, but a crash of the
    machine may leave it empty or lose it (for caches that check what they read: one fsync
    cost ~10 ms a file, more than summarizing a small trace).
    """
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = _create_temp(target)
    except OSError as error:
        raise _output_error(target, error) from error
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.replace(temp, target)
    except OSError as error:
        temp.unlink(missing_ok=True)
        raise _output_error(target, error) from error
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    finally:
        _IN_FLIGHT.discard(temp)


_IN_FLIGHT: set[Path] = set()
"""Temporary files of the writes under way in this process."""


def _create_temp(target: Path) -> tuple[int, Path]:
    """Create a new temporary file beside `target` (mode 0600, as `mkstemp`), its name in
    `_IN_FLIGHT` *before* it exists: a signal whose handler calls `discard_unfinished_writes`
    can arrive between any two bytecodes, and a file created before its name was registered
    was left behind (a kill trial's SIGTERM found `.run.json.*.tmp`)."""
    for _ in range(100):
        temp = target.parent / f".{target.name}.{secrets.token_hex(4)}.tmp"
        _IN_FLIGHT.add(temp)
        try:
            return os.open(temp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600), temp
        except FileExistsError:
            _IN_FLIGHT.discard(temp)
        except BaseException:
            _IN_FLIGHT.discard(temp)
            raise
    raise FileExistsError(errno.EEXIST, f"no free temporary name beside {target}")


def discard_unfinished_writes() -> None:
    """Delete the temporary files of the writes under way: for a process about to die of a
    signal, whose interrupted writes will never finish or clean up after themselves (their
    targets keep their previous content)."""
    for temp in list(_IN_FLIGHT):
        with contextlib.suppress(OSError):
            temp.unlink(missing_ok=True)
        _IN_FLIGHT.discard(temp)


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write `data` to `path` atomically (see `atomic_output`); returns the path."""
    with atomic_output(path) as handle:
        handle.write(data)
    return Path(path)
