"""Every real trace in ../shared/traces/kineto loads, with counts and spans checked independently."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

import hpuprof
from hpuprof.errors import TraceFormatError
from tests.conftest import shared_trace_files

NOT_KINETO = {"benchmark_simple_add_et.json.gz"}  # a PyTorch Execution Trace ("nodes")


def _plain_json(path: Path) -> Any:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return json.loads(data)


def _expected(doc: Any) -> dict[str, Any]:
    """Counts and span straight from the stdlib-decoded JSON (an independent count)."""
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    base = doc.get("baseTimeNanoseconds", 0) if isinstance(doc, dict) else 0
    slices = [e for e in events if e.get("ph") in ("X", "B", "i", "I")]
    starts = [round(e["ts"] * 1000) + base for e in slices]
    ends = [round(e["ts"] * 1000) + base + round(e.get("dur", 0) * 1000) for e in slices]
    counters = sum(
        1
        for e in events
        if e.get("ph") == "C"
        for v in e.get("args", {}).values()
        if isinstance(v, int | float) and not isinstance(v, bool)
    )
    return {
        "events": len(slices),
        "flows": sum(1 for e in events if e.get("ph") in ("s", "t", "f")),
        "counters": counters,
        "start": min(starts, default=0),
        "end": max(ends, default=0),
        "names": sorted({e.get("name", "") for e in slices}),
    }


@pytest.mark.parametrize("path", shared_trace_files(), ids=lambda p: p.name)
def test_shared_trace_loads_with_matching_counts(path: Path) -> None:
    if path.name in NOT_KINETO:
        with pytest.raises(TraceFormatError, match="traceEvents"):
            hpuprof.load(path, cache=False)
        return
    trace = hpuprof.load(path, cache=False)
    expected = _expected(_plain_json(path))
    events = trace.events
    assert len(events) == expected["events"]
    assert len(trace.flows) == expected["flows"]
    assert len(trace.counters) == expected["counters"]
    if len(events):
        assert abs(int(events["ts_ns"].min()) - expected["start"]) <= 2
        assert abs(int((events["ts_ns"] + events["dur_ns"]).max()) - expected["end"]) <= 4
    assert sorted(set(events["name"].astype(str))) == expected["names"]
    assert events["ts_ns"].is_monotonic_increasing


def test_memory_timeline_is_a_clear_error(shared_kineto_dir: Path) -> None:
    path = shared_kineto_dir / "tests/data/memory_analysis/memory_timeline.raw.gz"
    with pytest.raises(TraceFormatError, match="event 0"):
        hpuprof.load(path, cache=False)


def test_float_relative_timestamps_are_exact(shared_kineto_dir: Path) -> None:
    trace = hpuprof.load(
        shared_kineto_dir / "tests/data/nccl_parser_config/nccl_data.json.gz", cache=False
    )
    base = trace.metadata[0]["baseTimeNanoseconds"]
    assert (trace.events["ts_ns"] - base == 4458676522690655).sum() >= 1


def test_cuda_device_and_correlation(shared_kineto_dir: Path) -> None:
    trace = hpuprof.load(
        shared_kineto_dir / "tests/data/trace_filter/sampled_rank-1.json.gz", cache=False
    )
    events = trace.events
    assert trace.ranks == [1]
    kernels = events[events["kind"] == "kernel"]
    assert len(kernels) == 1104 and kernels["is_device"].all()
    assert (kernels["stream"] >= 0).all() and (kernels["engine"] == "GPU").all()
    launches = events[(events["kind"] == "runtime") & (events["correlation"] >= 0)]
    assert set(kernels["correlation"]) <= set(launches["correlation"])
    assert (events.loc[events["kind"] == "cpu_op", "external_id"] >= 0).any()


def test_uint64_ids_do_not_crash(shared_kineto_dir: Path) -> None:
    paths = list(shared_kineto_dir.rglob("large_integer_trace/*.json.gz"))
    trace = hpuprof.load(paths[0], cache=False)
    assert trace.ranks == [70]  # from the file name
    comms = [trace.args(i).get("Comms Id") for i in range(len(trace.events))]
    assert 10159970886766084423 in comms


def test_legacy_categories_and_async_gpu_flows(shared_kineto_dir: Path) -> None:
    trace = hpuprof.load(
        shared_kineto_dir / "tests/data/trace_file_list/inference_rank_1.json.gz", cache=False
    )
    events = trace.events
    assert "legacy-categories" in trace.format
    kernels = events[events["cat"] == "Kernel"]
    assert (kernels["kind"] == "kernel").all() and kernels["is_device"].all()
    assert (kernels["correlation"] != -1).all()


def test_directory_of_ranks(shared_kineto_dir: Path) -> None:
    trace = hpuprof.load(shared_kineto_dir / "tests/data/trace_filter", cache=False)
    assert trace.ranks == [0, 1]
    events = trace.events
    assert list(events["rank"].unique()) == [0, 1]
    first = events[events["rank"] == 1].index[0]
    parents = events.loc[events["rank"] == 1, "parent"]
    assert (parents[parents >= 0] >= first).all()
