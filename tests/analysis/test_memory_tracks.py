"""memory_tracks: memory over time as counter tracks (allocated, reserved per device) for the
timeline, from allocator events (real traces) and from the emulator's modeled counter."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import hpuprof
from hpuprof.analysis.memory_tracks import memory_counters, timeline_counters
from hpuprof.trace.model import Trace
from hpuprof.trace.schema import COUNTER_COLUMNS
from tests.analysis.test_memory import GIB, SAMPLES, _mem, allocator_trace
from tests.tracebuild import make_trace


def _series(frame: pd.DataFrame) -> dict[tuple[str, str], list[tuple[int, float]]]:
    out: dict[tuple[str, str], list[tuple[int, float]]] = {}
    for name, series, ts, value in frame[["name", "series", "ts_ns", "value"]].itertuples(
        index=False
    ):
        out.setdefault((str(name), str(series)), []).append((int(ts), float(value)))
    return out


def test_allocator_events_become_allocated_and_reserved_tracks() -> None:
    got = memory_counters(allocator_trace())
    assert dict(got.dtypes.astype(str)) == COUNTER_COLUMNS
    series = _series(got)
    assert set(series) == {("memory · CUDA 0", "allocated"), ("memory · CUDA 0", "reserved")}
    # the allocator's running total after each event, at the event's time
    assert series[("memory · CUDA 0", "allocated")] == [
        (10, GIB), (210, 3 * GIB), (410, 4 * GIB), (600, 3 * GIB), (610, 2 * GIB),
    ]  # fmt: skip
    assert {v for _, v in series[("memory · CUDA 0", "reserved")]} == {4 * GIB}


def test_cpu_memory_without_reservations_has_no_reserved_track() -> None:
    cpu = _mem(20, 0x1, 64, 64) | {}
    cpu["args"] = cpu["args"] | {"Device Type": 0, "Device Id": -1, "Total Reserved": 0}
    series = _series(memory_counters(make_trace([_mem(10, 0xA, GIB, GIB), cpu])))
    assert ("memory · CPU", "allocated") in series
    assert ("memory · CPU", "reserved") not in series
    assert series[("memory · CPU", "allocated")] == [(20, 64.0)]


def _emulated_counter() -> Trace:
    trace = make_trace([{"name": "aten::mm", "ts_ns": 0, "dur_ns": 400}])
    counters = pd.DataFrame(
        {
            "name": ["hpu.memory_in_use_bytes"] * 3 + ["hpu.recipe_cache_size"],
            "series": ["bytes"] * 3 + ["recipes"],
            "cat": ["hpuprof"] * 4,
            "pid": ["7"] * 4,
            "tid": ["0"] * 4,
            "rank": [0, 0, 0, 0],
            "ts_ns": [90, 120, 300, 120],
            "value": [1000.0, 5000.0, 2000.0, 1.0],
        }
    ).astype(COUNTER_COLUMNS)
    return Trace(trace.events, counters, trace.flows, trace.metadata)


def test_the_emulator_counter_is_a_modeled_memory_track() -> None:
    trace = _emulated_counter()
    assert _series(memory_counters(trace)) == {
        ("memory · HPU 0", "allocated, modeled"): [(90, 1000.0), (120, 5000.0), (300, 2000.0)]
    }
    # the timeline gets it once, under the memory name, beside the trace's other counters
    drawn = _series(timeline_counters(trace))
    assert set(drawn) == {
        ("memory · HPU 0", "allocated, modeled"),
        ("hpu.recipe_cache_size", "recipes"),
    }


def test_no_memory_source_gives_no_tracks() -> None:
    trace = make_trace([{"name": "aten::mm", "ts_ns": 0, "dur_ns": 10}])
    assert memory_counters(trace).empty
    assert list(memory_counters(trace).columns) == list(COUNTER_COLUMNS)
    assert timeline_counters(trace).empty


def test_real_trace_memory_tracks_follow_every_allocator_event(shared_kineto_dir: Path) -> None:
    """A V100 trace recorded with profile_memory: one sample per `[memory]` event of each
    device, valued at the allocator's "Total Allocated" / "Total Reserved"."""
    path = shared_kineto_dir / "tests/data/df_index_resolver/df_index_resolver.json.gz"
    with gzip.open(path) as f:
        raw = [e for e in json.load(f)["traceEvents"] if e.get("name") == "[memory]"]
    cuda = sorted(
        (e for e in raw if e["args"].get("Device Type") == 1), key=lambda e: float(e["ts"])
    )
    series = _series(memory_counters(hpuprof.load(path)))
    device = f"memory · CUDA {cuda[0]['args']['Device Id']}"
    allocated = series[(device, "allocated")]
    assert len(allocated) == len(cuda)
    assert [v for _, v in allocated] == [float(e["args"]["Total Allocated"]) for e in cuda]
    reserved = [v for _, v in series[(device, "reserved")]]
    assert max(reserved) == max(e["args"]["Total Reserved"] for e in cuda)
    ts = np.array([t for t, _ in allocated])
    assert (np.diff(ts) >= 0).all()
    assert len(series.get(("memory · CPU", "allocated"), [])) == sum(
        e["args"].get("Device Type") == 0 for e in raw
    )


@pytest.mark.skipif(not SAMPLES.is_dir(), reason="sample_traces/ not present")
def test_emulated_sample_has_a_memory_track() -> None:
    trace = hpuprof.load(SAMPLES / "emulated_lazy", cache=False)
    series = _series(memory_counters(trace))
    [(key, samples)] = series.items()
    assert key == ("memory · HPU 0", "allocated, modeled")
    raw = trace.counters[
        (trace.counters["name"].astype(str) == "hpu.memory_in_use_bytes").to_numpy()
    ]
    assert sorted(v for _, v in samples) == sorted(raw["value"].tolist())
