"""TPC and DMA work per op family (`hpusim.tpc_cost`): what each access pattern moves and
where copies run."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

import torch
from hpusim.device_model import ENGINE_DMA, ENGINE_TPC, DeviceTimeline, load_profile
from hpusim.tpc_cost import family_of, line_bytes, tpc_work

BF16 = torch.bfloat16


def test_op_families() -> None:
    assert family_of("native_layer_norm") == "normalization"
    assert family_of("_softmax_backward_data") == "softmax"
    assert family_of("gelu") == "transcendental"
    assert family_of("embedding") == "gather"
    assert family_of("roll") == "layout"
    assert family_of("add") == "elementwise"


def test_rows_move_in_whole_cache_lines() -> None:
    # 1,000 rows of 3 bf16 channels: 6 useful bytes a row, a 128-byte line each on Gaudi 2
    assert line_bytes((1000, 3), 2, 128) == 1000 * 128
    assert line_bytes((1000, 128), 2, 128) == 1000 * 256  # 256 B rows: exactly two lines
    g2, g3 = load_profile("gaudi2").tpc, load_profile("gaudi3").tpc
    assert (g2.cache_line_bytes, g3.cache_line_bytes) == (128, 256)


def test_a_gather_reads_the_rows_it_picks_not_the_table() -> None:
    tpc = load_profile("gaudi2").tpc
    table, ids = (32000, 4096), (8, 512)
    out_bytes = 8 * 512 * 4096 * 2
    dense = 32000 * 4096 * 2 + 8 * 512 * 8 + out_bytes  # what the dispatcher counts
    _, moved = tpc_work(tpc, "embedding", [table, ids], [BF16, torch.int64], 8 * 512 * 4096, dense)
    assert moved == out_bytes + 8 * 512 * 8 + out_bytes  # rows read, indices, rows written
    assert moved < dense / 4


def test_transcendental_ops_count_more_vector_work() -> None:
    tpc = load_profile("gaudi2").tpc
    shape = [(4096, 4096)]
    add, _ = tpc_work(tpc, "add", shape, [BF16], 4096 * 4096, 0)
    gelu, _ = tpc_work(tpc, "gelu", shape, [BF16], 4096 * 4096, 0)
    assert gelu == tpc.ops_per_element["transcendental"] * add


def test_copies_run_on_dma_on_gaudi2_and_on_tpc_on_gaudi3() -> None:
    size = 256 << 20
    g2 = DeviceTimeline(load_profile("gaudi2")).model_op(
        "clone", [(size // 2,)], [BF16], size // 2, size
    )
    g3 = DeviceTimeline(load_profile("gaudi3")).model_op(
        "clone", [(size // 2,)], [BF16], size // 2, size
    )
    assert g2.engine == ENGINE_DMA and g3.engine == ENGINE_TPC
    # Gaudi 2: the larger of the HBM traffic and one side at the 5 engines' 1041.5 GB/s
    p = load_profile("gaudi2")
    expected = max(size / p.hbm_bytes_per_ns, size / 2 / p.tpc.dma_gbytes_per_s)
    assert g2.dur == int(expected) + p.tpc.dma_overhead_ns
