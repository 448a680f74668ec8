"""Device memory a launched graph needs besides its persistent tensors, and the bridge
allocator's block size (MODELED).

In lazy (and compiled) mode an op's output that no Python object holds when the graph is
launched is an *intermediate* of the graph: the graph compiler places it in the recipe's
workspace, not in a tensor of its own. The bridge keeps one workspace buffer and grows it to
the largest workspace a recipe asks for (gaudi-pytorch-bridge, backend/synapse_helpers/
device_memory.cpp `device_memory::workspace_alloc`: reused while `ws_size >= req_size`, else
extended), so the device holds the persistent tensors plus the largest workspace so far. The
emulator frees an intermediate as soon as its Python wrapper dies, before the graph runs, and
so too a tensor the graph reads that nothing else holds (the activations autograd released
while it recorded the backward graph), which a Gaudi frees only once the graph has read it
last. `graph_memory` gives both: the workspace (the intermediates' peak, in program order with
perfect reuse), which the allocator holds from then on, and the resident inputs, which count
while the graph runs.

Every allocation is rounded up to the device memory alignment (`device_memory::block_align`,
the same file), which the graph compiler's HAL gives as 128 bytes on Gaudi 2 and 256 on Gaudi 3
(`addressAlignmentSizeInBytes` / `clSize`, hal_reader/gaudi{2,3}/hal.h).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


def block_bytes(nbytes: int, alignment: int) -> int:
    """`nbytes` rounded up to the allocator's alignment (0 stays 0)."""
    if nbytes <= 0:
        return 0
    return -(-nbytes // alignment) * alignment


def graph_memory(
    deps: Sequence[Any], alive: Callable[[int], bool] | None, alignment: int = 1
) -> tuple[int, int]:
    """(workspace, resident inputs) of one launched graph.

    The workspace is the peak bytes of the graph's intermediates live at once, in program
    order with perfect reuse; the resident inputs are the bytes of the tensors the graph reads
    that nothing holds any more, which stay on the device while the graph runs.

    Args:
        deps: per op `(inputs, outputs)`, each a tuple of `(storage id, bytes)`.
        alive: whether a storage id is still referenced after the graph (a persistent tensor,
            held by the allocator already); None (no dataflow known): (0, 0).
        alignment: each tensor's bytes are rounded up to it.
    """
    if alive is None:
        return 0, 0
    last_read: dict[int, int] = {}
    for i, (ins, _outs) in enumerate(deps):
        for g, _ in ins:
            last_read[g] = i
    produced: set[int] = set()
    resident: dict[int, int] = {}
    frees: dict[int, int] = {}  # op index -> intermediate bytes freed after it
    live = peak = 0
    for i, (ins, outs) in enumerate(deps):
        for g, b in ins:
            if g not in produced and g not in resident and not alive(g):
                resident[g] = block_bytes(b, alignment)
        for g, b in outs:
            if g in produced or g in resident or alive(g):
                continue  # written again, an input, or a persistent tensor
            produced.add(g)
            size = block_bytes(b, alignment)
            live += size
            end = max(last_read.get(g, i), i)
            frees[end] = frees.get(end, 0) + size
        peak = max(peak, live)
        live -= frees.pop(i, 0)
    return peak, sum(resident.values())
