"""The cached or quick summary parts of many small trace files, over worker processes.

`hpuprof info DIR` on 10,000 small rank files spends 2-3 CPU-ms a file in Python (the scan,
the normalizer's steps, the cache entry): one process keeps one core busy, however many there
are. From `POOL_MIN_FILES` files on, the files go to one worker process per usable CPU, in tasks
of `FILES_PER_TASK` files; the parts come back in file order, so what is printed does not
change.

A worker only reads its task's cached parts or makes their quick parts (`quick_part`, which
answers None rather than warn) and caches them, one entry a task: it prints nothing. A file it
answers None for is loaded fully by the caller, in file order, so the warnings of those loads
come out as and where they did. Workers are forked (Linux; elsewhere the files are read in this process) with SIGINT
blocked, and ignore it: a Ctrl-C interrupts the caller alone, which cancels the tasks not
started and waits for the few that are (a fraction of a second), so no worker prints a
traceback, is killed mid-write or outlives the command.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path

from hpuprof.trace.summary import TracePart

POOL_MIN_FILES = 256
"""Fewer files (under a CPU-second of work) are read in this process, without forking."""
FILES_PER_TASK = 32
"""Files a worker reads per task (~0.15 s): few round trips, and a Ctrl-C waits at most for
the tasks under way."""
MAX_WORKERS = 8
"""At most this many workers, however many CPUs the process may use."""


def quick_parts(files: Sequence[Path], cache: bool) -> Iterator[TracePart | None]:
    """For each of `files`, in order: its cached summary part (with `cache`), else its quick
    part (cached with `cache`), else None (load it fully)."""
    workers = _worker_count(len(files))
    if workers < 2:
        return (cached_or_quick_part(path, cache) for path in files)
    return _pooled(files, cache, workers)


def cached_or_quick_part(path: Path, cache: bool) -> TracePart | None:
    """The summary part of `path` from the summary cache or from its raw columns, or None."""
    from hpuprof.trace.quick_part import quick_part
    from hpuprof.trace.summary_cache import cached_part

    if not cache:
        return quick_part(path)
    return cached_part(path, lambda: quick_part(path))


def _worker_count(files: int) -> int:
    if files < POOL_MIN_FILES or sys.platform != "linux":
        return 1
    usable = len(os.sched_getaffinity(0))
    return min(usable, MAX_WORKERS, -(-files // FILES_PER_TASK))


def _pooled(files: Sequence[Path], cache: bool, workers: int) -> Iterator[TracePart | None]:
    pool = worker_pool(workers)
    try:
        try:
            tasks = _submitted(pool, files, cache)
        except OSError:  # no worker could be started (a process limit...): read them here
            yield from (cached_or_quick_part(path, cache) for path in files)
            return
        for task in tasks:
            yield from task.result()
    finally:  # (also on Ctrl-C, an error or a consumer that stops early)
        pool.shutdown(wait=True, cancel_futures=True)


def worker_pool(workers: int) -> ProcessPoolExecutor:
    """`workers` forked processes that ignore SIGINT (started at the first task)."""
    context = multiprocessing.get_context("fork")
    return ProcessPoolExecutor(workers, mp_context=context, initializer=_ignore_interrupts)


def _submitted(
    pool: ProcessPoolExecutor, files: Sequence[Path], cache: bool
) -> list[Future[list[TracePart | None]]]:
    """Every task submitted; the workers are forked at the first, with SIGINT blocked (they
    inherit the mask; a Ctrl-C meanwhile reaches this process once it is unblocked)."""
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        return [
            pool.submit(_task, files[start : start + FILES_PER_TASK], cache)
            for start in range(0, len(files), FILES_PER_TASK)
        ]
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def _ignore_interrupts() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _task(files: Sequence[Path], cache: bool) -> list[TracePart | None]:
    """The quick parts of `files`; with `cache`, stored and read as one entry
    (`summary_cache.cached_parts`)."""
    from hpuprof.trace.quick_part import quick_part
    from hpuprof.trace.summary_cache import cached_parts

    if cache:
        return cached_parts(files, quick_part)
    return [quick_part(path) for path in files]
