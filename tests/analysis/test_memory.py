"""memory: over time, peak, what was live at the peak and who allocated it, from allocator
events (profile_memory) and from the emulator's memory counter."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import hpuprof
from hpuprof.analysis.memory import MAX_POINTS, analyze_memory
from hpuprof.trace.model import Trace
from hpuprof.trace.schema import COUNTER_COLUMNS
from tests.tracebuild import make_trace

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"
GIB = 2**30


def _mem(ts: int, addr: int, nbytes: int, total: int) -> dict[str, Any]:
    args = {"Device Type": 1, "Device Id": 0, "Addr": addr, "Bytes": nbytes,
            "Total Allocated": total, "Total Reserved": 4 * GIB}  # fmt: skip
    return {"name": "[memory]", "kind": "instant", "cat": "cpu_instant_event", "ph": "i",
            "ts_ns": ts, "args": args}  # fmt: skip


def allocator_trace() -> Trace:
    """mm allocates 1 GiB (freed later), add 2 GiB (live at the peak), mm again 1 GiB."""
    return make_trace(
        [
            {"name": "aten::mm", "ts_ns": 0, "dur_ns": 100},
            _mem(10, 0xA, GIB, GIB),
            {"name": "aten::add", "ts_ns": 200, "dur_ns": 100},
            _mem(210, 0xB, 2 * GIB, 3 * GIB),
            {"name": "aten::mm", "ts_ns": 400, "dur_ns": 100},
            _mem(410, 0xC, GIB, 4 * GIB),  # the peak: A, B, C live
            _mem(600, 0xA, -GIB, 3 * GIB),  # outside any op
            _mem(610, 0xC, -GIB, 2 * GIB),
        ],
        metadata={0: {"deviceProperties": [{"name": "NVIDIA A100-SXM4-80GB"}]}},
    )


def test_allocator_events_give_peak_live_memory_and_allocating_ops() -> None:
    rep = analyze_memory(allocator_trace())
    assert rep.source.startswith("allocator events")
    [dev] = rep.devices
    assert (dev.device, dev.peak_bytes, dev.peak_at_ns, dev.final_bytes) == (
        "CUDA 0",
        4 * GIB,
        410,
        2 * GIB,
    )
    assert (dev.allocations, dev.allocated_bytes, dev.frees) == (3, 4 * GIB, 2)
    assert dev.peak_reserved_bytes == 4 * GIB
    ops = {o.op: o for o in rep.top_ops}
    assert (ops["aten::mm"].allocations, ops["aten::mm"].allocated_bytes) == (2, 2 * GIB)
    assert ops["aten::mm"].live_at_peak_bytes == 2 * GIB  # both mm blocks live at 410 ns
    assert ops["aten::add"].live_at_peak_bytes == 2 * GIB
    assert [p.allocated_bytes for p in rep.timeline] == [GIB, 3 * GIB, 4 * GIB, 3 * GIB, 2 * GIB]


def test_long_timelines_are_decimated_keeping_the_peak() -> None:
    rows = [_mem(i * 10, i, 1, (i * 7919) % 100_003) for i in range(3 * MAX_POINTS)]
    rep = analyze_memory(make_trace(rows))
    assert len(rep.timeline) <= MAX_POINTS
    assert max(p.allocated_bytes for p in rep.timeline) == rep.devices[0].peak_bytes


def test_emulator_counter_is_a_memory_source() -> None:
    trace = make_trace([{"name": "launch graph_recipe_1", "kind": "hpu_runtime", "cat": "hpuprof",
                         "ts_ns": 100, "dur_ns": 50, "pid": "7"}])  # fmt: skip
    counters = pd.DataFrame(
        {
            "name": ["hpu.memory_in_use_bytes"] * 3,
            "series": ["bytes"] * 3,
            "cat": ["hpuprof"] * 3,
            "pid": ["7"] * 3,
            "tid": ["0"] * 3,
            "rank": [0, 0, 0],
            "ts_ns": [90, 120, 300],
            "value": [1000.0, 5000.0, 2000.0],
        }
    ).astype(COUNTER_COLUMNS)
    rep = analyze_memory(Trace(trace.events, counters, trace.flows, trace.metadata))
    assert rep.source.startswith("emulator counter")
    [dev] = rep.devices
    assert (dev.peak_bytes, dev.final_bytes, dev.allocations) == (5000, 2000, 2)
    assert {o.op: o.allocated_bytes for o in rep.top_ops} == {
        "(outside any op)": 1000,
        "launch graph_recipe_1": 4000,
    }


def test_no_memory_data_says_so() -> None:
    rep = analyze_memory(make_trace([{"name": "aten::mm", "ts_ns": 0, "dur_ns": 10}]))
    assert rep.source == "none" and rep.notes and not rep.devices


def test_real_profile_memory_trace(shared_kineto_dir: Path) -> None:
    path = shared_kineto_dir / "tests/data/df_index_resolver/df_index_resolver.json.gz"
    with gzip.open(path) as f:
        raw = [e for e in json.load(f)["traceEvents"] if e.get("name") == "[memory]"]
    cuda = [e["args"] for e in raw if e["args"].get("Device Type") == 1]
    rep = analyze_memory(hpuprof.load(path))
    dev = next(d for d in rep.devices if d.device.startswith("CUDA"))
    assert dev.peak_bytes == max(a["Total Allocated"] for a in cuda)
    assert dev.allocations == sum(a["Bytes"] > 0 for a in cuda)


@pytest.mark.skipif(not SAMPLES.is_dir(), reason="sample_traces/ not present")
def test_emulated_sample_has_a_memory_view() -> None:
    rep = analyze_memory(hpuprof.load(SAMPLES / "emulated_lazy", cache=False))
    assert rep.devices[0].device == "HPU 0" and rep.devices[0].peak_bytes > 0
    assert all(p.t_ns >= 0 for p in rep.timeline)
