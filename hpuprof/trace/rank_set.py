"""`RankSet`: a many-rank run as a lazy sequence of per-rank traces, opened on demand.

`hpuprof.load(directory, lazy=True)` returns one instead of concatenating every rank into one
`Trace`: nothing is read until a rank is asked for, and one rank's events are in memory at a
time when iterating. `hpuprof.distributed.runner.analyze_files(rank_set.files, ...)` analyses
the ranks apart (in this process or on Dask workers) into one `Report` without holding their
events.
"""

from __future__ import annotations

import gzip
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, overload

from hpuprof.trace.model import Trace
from hpuprof.trace.trace_file import load_file

_RANK_IN_HEAD = re.compile(rb'"distributedInfo"\s*:\s*\{[^{}]*?"rank"\s*:\s*(\d+)')
_RANK_IN_NAME = re.compile(r"rank[-_]?(\d+)", re.I)
HEAD_BYTES = 1 << 16


def _head(path: Path) -> bytes:
    try:
        with open(path, "rb") as raw:
            magic = raw.read(2)
        opener: Any = gzip.open if magic == b"\x1f\x8b" else open
        with opener(path, "rb") as handle:
            data: bytes = handle.read(HEAD_BYTES)
            return data
    except OSError:
        return b""


def rank_of_file(path: Path, default: int) -> int:
    """A rank file's rank without loading it: Kineto's `distributedInfo.rank` near the top of
    the file, else `rank<N>` in its name, else `default`."""
    found = _RANK_IN_HEAD.search(_head(path))
    if found:
        return int(found.group(1))
    named = _RANK_IN_NAME.search(path.name)
    return int(named.group(1)) if named else default


@dataclass(frozen=True)
class RankSet(Sequence[Trace]):
    """The rank files of a run, each loaded only when asked for (`hpuprof.load(dir, lazy=True)`).

    Args:
        files: one trace file per rank, in run order.
        cache: use the load cache when a rank is opened.
    """

    files: tuple[Path, ...]
    cache: bool = True

    def __len__(self) -> int:
        return len(self.files)

    @overload
    def __getitem__(self, index: int) -> Trace: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Trace]: ...

    def __getitem__(self, index: int | slice) -> Trace | Sequence[Trace]:
        """The trace of the `index`-th rank file (loaded now; not kept)."""
        if isinstance(index, slice):
            return RankSet(self.files[index], self.cache)
        return load_file(self.files[index], cache=self.cache)

    def __iter__(self) -> Iterator[Trace]:
        for i in range(len(self.files)):
            yield self[i]

    @property
    def sources(self) -> tuple[str, ...]:
        return tuple(str(f) for f in self.files)

    @property
    def ranks(self) -> tuple[int, ...]:
        """The rank of each file, read from its first bytes (no events loaded)."""
        return tuple(rank_of_file(f, i) for i, f in enumerate(self.files))

    def rank(self, rank: int) -> Trace:
        """The trace of rank `rank` (KeyError when no file holds it)."""
        for i, r in enumerate(self.ranks):
            if r == rank:
                return self[i]
        raise KeyError(f"no rank {rank} among {len(self.files)} rank files")
