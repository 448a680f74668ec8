"""A real-Gaudi-shaped merged trace (gaudi.md 6.3, kineto-format.md 6): device events found."""

from __future__ import annotations

from pathlib import Path

import pytest

import hpuprof
from hpuprof.trace.model import Trace
from hpuprof.trace.schema import NO_ID

FIXTURE = Path(__file__).parent / "data" / "gaudi_merged.json"


@pytest.fixture(scope="module")
def trace() -> Trace:
    return hpuprof.load(FIXTURE, cache=False)


def _row(trace: Trace, name: str) -> dict[str, object]:
    rows = trace.events[trace.events["name"] == name]
    assert len(rows) >= 1, name
    return rows.iloc[0].to_dict()


def test_device_process_and_engines(trace: Trace) -> None:
    device = trace.events[trace.events["is_device"]]
    assert sorted(device["name"].astype(str)) == [
        "DmaTransferOther",
        "gemm_bf16",
        "layer_norm_fwd_bf16",
        "memcpy_host_to_device",
        "nic_send",
    ]
    assert (device["device"] == 0).all()
    engines = dict(zip(device["name"].astype(str), device["engine"].astype(str), strict=True))
    assert engines == {
        "layer_norm_fwd_bf16": "TPC",
        "gemm_bf16": "MME",
        "memcpy_host_to_device": "DMA",
        "DmaTransferOther": "DMA",
        "nic_send": "NIC",
    }
    assert _row(trace, "layer_norm_fwd_bf16")["stream"] == 4000
    assert "gaudi" in trace.format


def test_kinds_by_lane(trace: Trace) -> None:
    assert _row(trace, "layer_norm_fwd_bf16")["kind"] == "kernel"
    assert _row(trace, "memcpy_host_to_device")["kind"] == "memcpy"
    assert _row(trace, "DmaTransferOther")["kind"] == "device_op"  # Runtime on the device
    assert _row(trace, "nic_send")["kind"] == "device_op"  # hpu_op on the device
    assert _row(trace, "enqueueWithExternalEvents")["kind"] == "runtime"  # hpu_op on host
    host = trace.events[~trace.events["is_device"]]
    assert (host["device"] == NO_ID).all() and (host["engine"] == "").all()


def test_bridge_logs_pairs_become_runtime_slices(trace: Trace) -> None:
    outer = _row(trace, "SyncTensorsGraphInternal")
    inner = _row(trace, "LaunchSyncTensorsGraph")
    assert (outer["ph"], outer["kind"], outer["dur_ns"]) == ("X", "runtime", 100_500)
    assert (inner["dur_ns"], inner["depth"]) == (80_000, 1)
    assert trace.events["name"].iloc[int(inner["parent"])] == "SyncTensorsGraphInternal"


def test_enqueue_flows_become_correlation(trace: Trace) -> None:
    events = trace.events
    first = events[events["correlation"] == 1]["name"].astype(str).tolist()
    second = events[events["correlation"] == 2]["name"].astype(str).tolist()
    assert sorted(first) == ["enqueueWithExternalEvents", "layer_norm_fwd_bf16"]
    assert sorted(second) == ["DmaTransferOther", "enqueueWithExternalEvents"]


def test_recipe_ids_steps_and_times(trace: Trace) -> None:
    assert _row(trace, "gemm_bf16")["graph_id"] == "3"
    assert _row(trace, "nic_send")["graph_id"] == "4"
    assert set(trace.events["step"]) == {1}
    assert _row(trace, "layer_norm_fwd_bf16")["ts_ns"] == 123_456_789  # float µs, no base
    assert _row(trace, "aten::linear")["input_dims"] == "[[8,128],[128,128],[128]]"
    assert trace.metadata[0]["deviceProperties"][0]["name"] == "GAUDI2"
    names = dict(zip(trace.threads["tid"], trace.threads["name"], strict=True))
    assert names["4000"] == "*TPC 0"
