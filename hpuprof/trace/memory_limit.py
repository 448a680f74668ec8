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
