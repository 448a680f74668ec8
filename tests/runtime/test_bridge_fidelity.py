"""Behaviours where the emulator followed its own idea of the bridge and now follows the 1.19
source (issue 24, "Where the emulator still differs"); each test names the bridge lines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.runtime.conftest import runtime_events

torch = pytest.importorskip("torch")


def test_engine_lanes_are_the_bridge_parsers_tids(hpu: Any, tmp_path: Path) -> None:
    """trace_parser.cpp:54-75 lists the Gaudi 1 engine types (`**DMA `, `**MME `, `**TPC `)
    before the Gaudi 2 ones, and :126 writes `typeIdx * 1000 + engineIndex`: on Gaudi 2 EDMA,
    MME and TPC are lanes 4000, 6000 and 7000. The loader still classifies them by name."""
    from hpusim.chrome_events import ENGINE_TIDS, metadata_events, to_chrome_events
    from hpusim.sink import get_sink

    import hpuprof

    assert ENGINE_TIDS == {"DMA": 4000, "MME": 6000, "TPC": 7000, "NIC": 14000}
    hpu("lazy")
    base = get_sink().now_epoch_ns()
    model = torch.nn.Linear(128, 128).to("hpu")
    model(torch.randn(128, 128).to("hpu")).relu().sum().backward()
    torch.hpu.synchronize()
    events = metadata_events(7) + to_chrome_events(get_sink().drain(), pid=7, base_ns=base)
    lanes = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert {lanes[4000], lanes[6000], lanes[7000]} == {"EDMA 0", "MME 0", "TPC 0"}
    assert lanes[6000] == "MME 0" and lanes[7000] == "TPC 0"
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    trace = hpuprof.load(path)
    ev = trace.events
    device = ev[ev["pid"] == "0"]
    engines = device.groupby("tid", observed=True)["engine"].agg(lambda s: set(s.astype(str)))
    assert engines.get("6000") == {"MME"} and engines.get("7000") == {"TPC"}
    assert engines.get("4000", {"DMA"}) == {"DMA"}


def test_current_stream_synchronize_only_waits(hpu: Any) -> None:
    """HPUStream.cpp:148-158 (lazy): the current stream's `synchronize()` is
    `StepMarkerFinish` (waits for launched work, builds no graph); another stream's is a
    `StepMarker` ("step marker due to HPUStream::synchronize")."""
    from hpusim.sink import get_sink

    hpu("lazy")
    x = torch.ones(4, device="hpu")
    get_sink().drain()
    y = x * 2  # pending in the lazy graph
    torch.hpu.current_stream().synchronize()
    batch = get_sink().drain()
    assert runtime_events(batch, "graph_build") == []
    syncs = [e["name"] for e in runtime_events(batch, "sync")]
    assert syncs == ["sync (HPUStream::synchronize userthread)"]
    other = torch.hpu.Stream()
    other.synchronize()
    builds = runtime_events(get_sink().drain(), "graph_build")
    assert [b["hpuprof.flush_reason"] for b in builds] == ["HPUStream::synchronize"]
    assert y.cpu().tolist() == [2.0] * 4
