"""The address-space limit of this process (`ulimit -v`, `RLIMIT_AS`) and the error a load
that runs out of memory raises instead of a bare `MemoryError`.

A plain JSON trace is memory-mapped whole (`rawio.map_plain`): under an address-space limit
that mapping alone may take most of what the process may use, so a file larger than
`MAP_SHARE` of the limit is streamed in blocks instead (its bytes are then never all mapped).
"""

from __future__ import annotations

from pathlib import Path

from hpuprof.errors import MemoryLimitError

MAP_SHARE = 0.25
"""The share of the address-space limit a memory-mapped trace file may take."""


def address_space_limit() -> int | None:
    """This process's soft address-space limit in bytes, or None when there is none (or the
    platform has no `RLIMIT_AS`)."""
    try:
        import resource
    except ImportError:  # (Windows)
        return None
    limit = getattr(resource, "RLIMIT_AS", None)
    if limit is None:
        return None
    soft, _ = resource.getrlimit(limit)
    return None if soft == resource.RLIM_INFINITY else int(soft)


THREAD_SHARE = 72 << 20
"""Address space a load's thread may take: its stack (8 MiB) and, in a process that did not
limit glibc's arenas, the 64 MiB a new arena reserves."""


def address_space_used() -> int | None:
    """This process's address space in bytes (`VmSize`), or None where /proc cannot tell."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        return None
    return None


def threads_within_limit(threads: int) -> int:
    """`threads`, or 1 when starting that many more threads could pass the address-space limit.

    A thread that cannot get memory as it starts never tells `Thread.start` that it did (Python
    prints "Exception ignored in thread started by ... MemoryError") and the load would wait
    for it for ever: near the limit a load uses no thread of its own (it then loads, or fails
    with `MemoryLimitError`)."""
    limit = address_space_limit()
    if threads <= 1 or limit is None:
        return threads
    used = address_space_used()
    if used is None or limit - used < threads * THREAD_SHARE:
        return 1
    return threads


def may_map(size: int) -> bool:
    """Whether a file of `size` bytes may be mapped whole under the address-space limit."""
    limit = address_space_limit()
    return limit is None or size <= limit * MAP_SHARE


def out_of_memory(path: Path) -> MemoryLimitError:
    """The error for a load of `path` that ran out of memory, naming the limit if any."""
    try:
        size = f"{path.stat().st_size / 2**20:,.0f} MiB"
    except OSError:
        size = "of unknown size"
    limit = address_space_limit()
    if limit is None:
        why = "the machine's memory ran out"
    else:
        why = (
            f"the process's address-space limit (ulimit -v / RLIMIT_AS) of "
            f"{limit / 2**20:,.0f} MiB was reached"
        )
    return MemoryLimitError(
        str(path),
        f"not enough memory to load this trace ({size}): {why}; raise the limit or load it "
        "on a machine with more memory",
    )
