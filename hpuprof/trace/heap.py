"""The process heap during a load: freed pages back to the OS, and where big blocks come from.

glibc only; elsewhere every call is a no-op. A load allocates and frees many column-sized
blocks; what the heap keeps after a free still counts in the peak RSS.

What a load changes in the process, and what it leaves as it found it:
- `release_free_memory` (glibc `malloc_trim`) gives free pages back: it changes no setting;
- glibc's mmap and trim thresholds are process settings that cannot be read back (once set,
  glibc also stops adjusting them for good), so the loader sets them only in a process that
  opted in with `tune_process()`: hpuprof's own command-line process (`hpuprof ...`), never
  a user's training process or notebook that merely calls `hpuprof.load` or runs
  `HPUProfiler`;
- numpy's transparent-huge-page switch and the cyclic GC are switched for the duration of a
  load and put back by the last load to finish (`small_pages`, `gc_paused`), also when
  several threads load at once.
"""

from __future__ import annotations

import gc
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any


def release_free_memory() -> None:
    """Give the heap's free pages back to the OS (glibc `malloc_trim`; a no-op elsewhere, and
    while `trimming_paused`).

    Decoding frees millions of small objects chunk after chunk; glibc keeps those pages
    (300 MB on a 450 MB trace) unless asked, and they would count in the load's peak RSS.
    """
    if _TRIM_PAUSED.get():
        return
    libc = _libc()
    if libc:
        libc.malloc_trim(0)
    arrow = sys.modules.get("pyarrow")  # (never imported here: a load has imported it)
    if arrow is not None:
        arrow.default_memory_pool().release_unused()


@contextmanager
def trimming_paused() -> Iterator[None]:
    """`release_free_memory` does nothing while this runs (in this thread): for a file of a few
    kilobytes, whose reading frees a few pages, the six trims of a read cost more than its scan
    (0.1-0.5 CPU-ms of the ~3 that `info DIR` spends on a 20-event file, same-run A/B)."""
    token = _TRIM_PAUSED.set(True)
    try:
        yield
    finally:
        _TRIM_PAUSED.reset(token)


def tune_process() -> None:
    """Let loads tune glibc's mmap threshold in this process (call it only in a process that
    hpuprof owns, like its command line: the setting stays for the process's life).

    Left dynamic, glibc's threshold grows to 32 MiB after the first big free, and the
    normalizer's many column-sized temporaries then come from the heap, whose holes are not
    returned (500 MB kept after a 450 MB load); fixed at 1 MiB they get their own pages.

    The threads share one heap (glibc's `M_ARENA_MAX` at `ARENA_MAX`): each thread's own heap
    kept up to `BUILD_TRIM_THRESHOLD` free at its top during the build, which counted in the
    peak RSS of a parallel load once per scan and normalizer thread.
    """
    global _TUNED
    _TUNED = True
    set_mmap_threshold(MMAP_THRESHOLD)
    libc = _libc()
    if libc:
        libc.mallopt(_M_ARENA_MAX, ARENA_MAX)


def arrow_on_heap() -> None:
    """In a process that called `tune_process`, Arrow allocates from glibc's heap (pyarrow's
    system pool) rather than its bundled mimalloc, so that the heap's tuning and
    `release_free_memory` govern its buffers too: mimalloc kept the pages of the args that the
    derived columns copy and match a slice at a time. 260 MB synthetic trace, 2-thread load,
    median of 7: peak RSS 389 -> 382 MB, as fast (0.69 s both). Elsewhere, a no-op."""
    if _TUNED:
        import pyarrow as pa

        if pa.default_memory_pool().backend_name != "system":
            pa.set_memory_pool(pa.system_memory_pool())


def tuned() -> bool:
    """Whether this process opted in to the heap tuning (`tune_process`)."""
    return _TUNED


def set_mmap_threshold(nbytes: int, keep_free: int | None = None) -> None:
    """Allocations from `nbytes` up get their own pages from the OS (given back when freed);
    smaller ones come from the heap, whose freed memory is reused without new page faults.
    The heap keeps up to `keep_free` bytes free at its top (glibc's trim threshold; more is
    given back at once; glibc's default when None). Only in a process that called
    `tune_process` (a no-op elsewhere)."""
    libc = _libc()
    if libc and _TUNED:
        libc.mallopt(_M_MMAP_THRESHOLD, nbytes)
        libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD if keep_free is None else keep_free)


class _ProcessSwitch:
    """A process-wide setting changed while any load runs, put back by the last to finish."""

    def __init__(self, enter: Callable[[], Any], leave: Callable[[Any], None]) -> None:
        self._enter, self._leave = enter, leave
        self._lock = threading.Lock()
        self._count = 0
        self._saved: Any = None

    @contextmanager
    def held(self) -> Iterator[None]:
        with self._lock:
            if self._count == 0:
                self._saved = self._enter()
            self._count += 1
        try:
            yield
        finally:
            with self._lock:
                self._count -= 1
                if self._count == 0:
                    self._leave(self._saved)


def _madvise_switch() -> Any:
    import numpy as np

    switch = getattr(getattr(np, "_core", None), "multiarray", None)
    return getattr(switch, "_set_madvise_hugepage", None)


def _no_huge_pages() -> Any:
    switch = _madvise_switch()
    return None if switch is None else switch(False)


def _huge_pages_back(before: Any) -> None:
    switch = _madvise_switch()
    if switch is not None and before is not None:
        switch(before)


def _gc_off() -> bool:
    enabled = gc.isenabled()
    gc.disable()
    return enabled


def _gc_back(enabled: bool) -> None:
    if enabled:
        gc.enable()


_SMALL_PAGES = _ProcessSwitch(_no_huge_pages, _huge_pages_back)
_GC_PAUSED = _ProcessSwitch(_gc_off, _gc_back)


@contextmanager
def small_pages() -> Iterator[None]:
    """numpy's arrays from 4 MB up not madvised as transparent huge pages while this runs.

    A load makes and frees hundreds of column-sized temporaries. Where THP is `madvise`, each
    fresh huge page costs a compaction and a 2 MiB clear on first touch: on our one-core bench
    machine a fresh 160 MB array took 0.29 s to fill with huge pages and 0.07 s without, and
    the 2 M-event load runs ~7% faster without them. numpy's own switch (the one behind
    NUMPY_MADVISE_HUGEPAGE); nothing changes where numpy lacks it.
    """
    with _SMALL_PAGES.held():
        yield


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic GC off while this runs: millions of short-lived objects would make it rescan
    the heap again and again."""
    with _GC_PAUSED.held():
        yield


def _libc() -> Any:
    global _LIBC
    if _LIBC is None:
        try:
            import ctypes

            _LIBC = ctypes.CDLL("libc.so.6")
            _LIBC.malloc_trim.argtypes = [ctypes.c_size_t]
        except (OSError, AttributeError):
            _LIBC = False
    return _LIBC


_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_M_ARENA_MAX = -8
ARENA_MAX = 1
"""Heaps (glibc arenas) the threads of a tuned process share. 260 MB synthetic trace, 2-thread
load, same-run alternated A/B (4 rounds, median): peak RSS 2.53x -> 2.40x the JSON size, the
RSS after the load 1.48-1.57x -> 1.38x, speed not lower (43.9 vs 56.6 MB/s on a loaded machine)."""
TRIM_THRESHOLD = 128 << 10
"""glibc's default trim threshold (set back after the build, which keeps more)."""
MMAP_THRESHOLD = 1 << 20
DECODE_MMAP_THRESHOLD = 1 << 24
"""While chunks are decoded: their temporaries (joined raw values and each chunk's scanned
columns, up to the 8 MiB of a chunk) then reuse the same heap memory chunk after chunk
instead of faulting in fresh pages each time and unmapping them again, which in a process
with threads on other cores costs each of them a TLB flush; the file-length columns are built
after it is set back. With 4 MiB here (the args of a chunk often need more) and glibc's
trim threshold, same-run bench_parallel_load on the 2 M-event trace: 1.61-1.62x at 299-309
MB/s; with 16 MiB and `DECODE_TRIM_THRESHOLD`: 1.65x at 309-314 MB/s, peak RSS unchanged."""
DECODE_TRIM_THRESHOLD = 1 << 26
"""While chunks are decoded, the heaps keep up to this much free at their top (as during the
build, `BUILD_TRIM_THRESHOLD`): the next chunk's columns reuse it."""
BUILD_MMAP_THRESHOLD = 1 << 26
"""While the normalizer builds the tables: its column-sized temporaries (16 MB for 2 M events)
come from the heap and reuse its pages instead of faulting in fresh ones each (2 M-event
trace: 0.14-0.23 CPU-s fewer, 470k -> 390k page faults, same peak RSS and the same RSS after
the load, whose end gives the heap's free pages back)."""
BUILD_TRIM_THRESHOLD = 1 << 26
"""While the normalizer builds the tables, the heaps (the main one and each pool thread's)
keep up to this much free at their top instead of giving it back at each free and faulting
it in again at the next temporary. 2 M-event trace, same-run A/B: page faults 430-450k ->
340-350k on 1 thread (CPU -0.08 s), 570-580k -> 430-470k on 2 (CPU -0.1 to -0.2 s, main
thread -0.05 to -0.1 s); peak RSS unchanged on 1 thread, +75 MB on 2 (the pool threads'
heaps); the RSS after the load is unchanged (its end gives free pages back)."""
_LIBC: Any = None
_TRIM_PAUSED: ContextVar[bool] = ContextVar("hpuprof_trim_paused", default=False)
_TUNED = False
