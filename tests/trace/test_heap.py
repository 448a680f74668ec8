"""A load leaves the process as it found it: glibc's mmap threshold stays dynamic (it cannot be
read back, so only hpuprof's own command-line process tunes it), the cyclic GC and numpy's
huge-page switch are back as they were, also after loads from several threads at once."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SAMPLE = Path(__file__).parent / "data" / "gaudi_merged.json"

# glibc raises its dynamic mmap threshold to the size of a freed mmapped block: after a 4 MiB
# block is freed, a 2 MiB one comes from the heap. A fixed threshold (mallopt) stops that for
# good, and the 2 MiB block is mmapped: its chunk header says so (IS_MMAPPED).
_PROBE = textwrap.dedent(
    """
    import ctypes, gc, sys, threading
    libc = ctypes.CDLL("libc.so.6")
    if not hasattr(libc, "gnu_get_libc_version"):
        print("skip"); sys.exit()
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    libc.free(libc.malloc(4 << 20))  # raises the dynamic threshold to 4 MiB
    import numpy as np
    switch = np._core.multiarray._set_madvise_hugepage
    switch(True); gc.enable()
    import hpuprof
    if sys.argv[2] == "tuned":
        from hpuprof.trace.heap import tune_process
        tune_process()
    threads = [threading.Thread(target=hpuprof.load, args=(sys.argv[1],), kwargs={"cache": False})
               for _ in range(3)]
    [t.start() for t in threads]; [t.join() for t in threads]
    hpuprof.load(sys.argv[1], cache=False)
    block = libc.malloc(2 << 20)
    # the chunk's own IS_MMAPPED bit (in the size word before it), not a process-wide count
    # that another thread's block could change meanwhile (a flake under a loaded `make test`)
    mmapped = ctypes.c_size_t.from_address(block - ctypes.sizeof(ctypes.c_size_t)).value >> 1 & 1
    libc.free(block)
    print(mmapped, gc.isenabled(), switch(True))
    """
)


def _probe(mode: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, str(SAMPLE), mode],
        capture_output=True,
        text=True,
        check=True,
    )
    if done.stdout.strip() == "skip":
        pytest.skip("not glibc")
    return done.stdout.strip()


def test_a_library_load_leaves_the_process_as_it_found_it() -> None:
    assert _probe("library") == "0 True True"  # heap threshold dynamic, GC on, huge pages on


def test_the_command_line_process_tunes_its_heap() -> None:
    assert _probe("tuned") == "1 True True"  # fixed at 1 MiB: the 2 MiB block is mmapped


# a chunk's NON_MAIN_ARENA bit (in the size word before it): set when a thread's block came
# from a heap of its own, not the main one
_ARENA_PROBE = textwrap.dedent(
    """
    import ctypes, sys, threading
    libc = ctypes.CDLL("libc.so.6")
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    if sys.argv[1] == "tuned":
        from hpuprof.trace.heap import tune_process
        tune_process()
    seen = []
    def allocate():
        block = libc.malloc(256)
        word = ctypes.c_size_t.from_address(block - ctypes.sizeof(ctypes.c_size_t)).value
        seen.append(word >> 2 & 1)
        libc.free(block)
    threads = [threading.Thread(target=allocate) for _ in range(4)]
    [t.start() for t in threads]; [t.join() for t in threads]
    print(max(seen))
    """
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's heap")
def test_the_command_line_process_threads_share_one_heap() -> None:
    def probe(mode: str) -> str:
        return subprocess.run(
            [sys.executable, "-c", _ARENA_PROBE, mode], capture_output=True, text=True, check=True
        ).stdout.strip()

    assert probe("tuned") == "0"  # every thread's block from the main heap
    assert probe("library") == "1"  # (the probe sees a thread's own heap when there is one)


def test_trimming_paused_skips_the_trim_in_its_thread_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import threading

    from hpuprof.trace import heap

    trims: list[int] = []

    class CountingLibc:
        def malloc_trim(self, pad: int) -> None:
            trims.append(pad)

    monkeypatch.setattr(heap, "_libc", CountingLibc)
    with heap.trimming_paused():
        heap.release_free_memory()
        assert trims == []
        other = threading.Thread(target=heap.release_free_memory)
        other.start()
        other.join()
        assert trims == [0]  # (another thread's load trims as before)
    heap.release_free_memory()
    assert trims == [0, 0]
