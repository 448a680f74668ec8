"""Atomic file output: write beside the target under a temporary name, then rename."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from hpuprof.errors import OutputError


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike[str]) -> Iterator[BinaryIO]:
    """Open a temporary file beside `path`; on success rename it over `path`, else delete it.

    Readers never see a half-written file. OS errors become `OutputError`.
    """
    target = Path(path)
    temp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        handle = open(temp, "wb")  # noqa: SIM115 - closed below, before the rename
    except OSError as error:
        raise OutputError(f"cannot write {target}: {error.strerror or error}") from error
    try:
        with handle:
            yield handle
        os.replace(temp, target)
    except OSError as error:
        temp.unlink(missing_ok=True)
        raise OutputError(f"cannot write {target}: {error.strerror or error}") from error
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
