"""Device memory of a launched graph (`hpusim.graph_memory`) and the allocator's workspace and
block rounding."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

pytest.importorskip("torch")

from hpusim.allocator import DeviceAllocator
from hpusim.graph_memory import block_bytes, graph_memory

MB = 1 << 20


def test_blocks_round_up_to_the_alignment() -> None:
    assert block_bytes(1, 128) == 128
    assert block_bytes(128, 128) == 128
    assert block_bytes(129, 128) == 256
    assert block_bytes(0, 128) == 0


def test_intermediates_peak_in_program_order_and_dead_inputs_stay_resident() -> None:
    # x (persistent, held) -> a -> b -> c (kept); a and b die inside the graph; s is a tensor
    # autograd released while recording (read by the first op only)
    deps = [
        (((1, MB), (9, 4 * MB)), ((2, MB),)),  # a = f(x, s)
        (((2, MB),), ((3, 2 * MB),)),  # b = g(a)
        (((3, 2 * MB),), ((4, MB),)),  # c = h(b)
    ]
    kept = {1, 4}
    workspace, resident = graph_memory(deps, kept.__contains__)
    assert workspace == 3 * MB  # a and b live together while g runs
    assert resident == 4 * MB  # s
    assert graph_memory(deps, None) == (0, 0)  # no dataflow: nothing known


def test_the_workspace_is_held_and_only_grows_and_resident_inputs_count_at_the_peak() -> None:
    alloc = DeviceAllocator(capacity_bytes=100 * MB)
    alloc.alignment = 128
    t = SimpleNamespace()
    alloc.alloc(t, 10 * MB + 1, "aten::empty")
    assert alloc.in_use == 10 * MB + 128  # rounded to the block alignment
    alloc.note_graph(5 * MB, 20 * MB)
    assert alloc.workspace == 5 * MB and alloc.in_use == 15 * MB + 128
    assert alloc.peak == 35 * MB + 128  # the resident inputs while the graph ran
    alloc.note_graph(2 * MB, 0)  # a smaller workspace: the buffer stays as it is
    assert alloc.workspace == 5 * MB and alloc.in_use == 15 * MB + 128
    alloc.note_graph(0, 90 * MB)
    assert alloc.oom_at is not None and "recipe launch" in alloc.oom_at.text()
