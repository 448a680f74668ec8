"""The process heap during a load: freed pages back to the OS, and where big blocks come from.

glibc only; elsewhere every call is a no-op. A load allocates and frees many column-sized
blocks; what the heap keeps after a free still counts in the peak RSS.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def release_free_memory() -> None:
    """Give the heap's free pages back to the OS (glibc `malloc_trim`; a no-op elsewhere).

    Decoding frees millions of small objects chunk after chunk; glibc keeps those pages
    (300 MB on a 450 MB trace) unless asked, and they would count in the load's peak RSS.
    The first call also fixes glibc's mmap threshold at 1 MiB: left dynamic, it grows to
    32 MiB after the first big free, and the normalizer's many column-sized temporaries then
    come from the heap, whose holes are not returned (500 MB kept after a 450 MB load).
    """
    libc = _libc()
    if libc:
        libc.malloc_trim(0)


def set_mmap_threshold(nbytes: int) -> None:
    """Allocations from `nbytes` up get their own pages from the OS (given back when freed);
    smaller ones come from the heap, whose freed memory is reused without new page faults."""
    libc = _libc()
    if libc:
        libc.mallopt(_M_MMAP_THRESHOLD, nbytes)


@contextmanager
def small_pages() -> Iterator[None]:
    """numpy's arrays from 4 MB up not madvised as transparent huge pages while this runs.

    A load makes and frees hundreds of column-sized temporaries. Where THP is `madvise`, each
    fresh huge page costs a compaction and a 2 MiB clear on first touch: on our one-core bench
    machine a fresh 160 MB array took 0.29 s to fill with huge pages and 0.07 s without, and
    the 2 M-event load runs ~7% faster without them. numpy's own switch (the one behind
    NUMPY_MADVISE_HUGEPAGE); nothing changes where numpy lacks it.
    """
    import numpy as np

    switch = getattr(getattr(np, "_core", None), "multiarray", None)
    switch = getattr(switch, "_set_madvise_hugepage", None)
    if switch is None:
        yield
        return
    before = switch(False)
    try:
        yield
    finally:
        switch(before)


def _libc() -> Any:
    global _LIBC
    if _LIBC is None:
        try:
            import ctypes

            _LIBC = ctypes.CDLL("libc.so.6")
            _LIBC.malloc_trim.argtypes = [ctypes.c_size_t]
            _LIBC.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
        except (OSError, AttributeError):
            _LIBC = False
    return _LIBC


_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 1 << 20
DECODE_MMAP_THRESHOLD = 1 << 22
"""While chunks are decoded: their temporaries (joined raw values, a few MiB) then reuse the
same heap memory chunk after chunk instead of faulting in fresh pages each time (~5% of the
load on a 2 M-event trace); the file-length columns are built after it is set back."""
_LIBC: Any = None
