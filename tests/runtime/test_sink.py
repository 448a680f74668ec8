"""The event sink and its Chrome export: well-formed events, recording switch, zero CPU cost."""

from __future__ import annotations

import json
from typing import Any

import pytest

torch = pytest.importorskip("torch")


def _workload(sim: Any) -> None:
    # 128-wide: the device model runs matmuls that fill the MME this poorly (4x3) on the TPCs
    model = torch.nn.Linear(128, 128).to("hpu")
    loss = model(torch.randn(128, 128).to("hpu")).sum()
    loss.backward()
    sim.mark_step()
    loss.item()
    torch.digamma(torch.rand(2, device="hpu"))
    sim.step_marker()
    sim.step_marker()


def test_drained_batch_is_columnar_and_drains(hpu: Any) -> None:
    sim = hpu("lazy")
    from hpusim.sink import COLUMNS, get_sink

    _workload(sim)
    batch = get_sink().drain()
    n = len(batch)
    assert n > 10
    assert all(len(getattr(batch, c)) == n for c in COLUMNS)
    assert all(isinstance(getattr(batch, c), list) for c in COLUMNS)
    assert len(get_sink().drain()) == 0  # drained events are removed


def test_chrome_events_are_kineto_shaped(hpu: Any) -> None:
    sim = hpu("lazy")
    from hpusim.chrome_events import metadata_events, to_chrome_events
    from hpusim.sink import get_sink

    base = get_sink().now_epoch_ns()
    _workload(sim)
    batch = get_sink().drain()
    events = to_chrome_events(batch, pid=4242, base_ns=base)
    json.dumps(events)
    bad = [e for e in events if not (isinstance(e["ts"], float) and e["ts"] >= 0)]
    assert not bad, bad[:5]
    ops = [e for e in events if e["cat"] == "cpu_op"]
    assert ops and all(
        e["pid"] == 4242 and "Input Dims" in e["args"] and "Input type" in e["args"] for e in ops
    )
    assert any(e["name"] == "aten::addmm" for e in ops)
    kernels = [e for e in events if e["cat"] in ("kernel", "gpu_memcpy")]
    assert kernels and all(e["pid"] == 0 and e["args"]["hpuprof.modeled"] is True for e in kernels)
    assert all("recipeId" in e["args"] and "recipeName" in e["args"] for e in kernels)
    assert {e["tid"] for e in kernels} <= {4000, 6000, 7000}  # EDMA, MME, TPC
    assert any(e["tid"] == 6000 for e in kernels)  # addmm on the MME
    runtime = [e for e in events if e["cat"] == "hpuprof" and e["ph"] != "C"]
    kinds = {e["args"]["hpuprof.event"] for e in runtime}
    assert {"graph_build", "compile", "launch", "sync", "fallback", "mark_step", "step"} <= kinds
    from hpuprof.trace.schema import HPU_EVENTS

    assert kinds <= set(HPU_EVENTS)
    reasons = {
        e["args"]["hpuprof.flush_reason"]
        for e in runtime
        if e["args"]["hpuprof.event"] == "graph_build"
    }
    assert reasons <= {  # the bridge's `step marker due to <reason>` spellings
        "host step marker",
        "local scalar",
        "d2h_maybe_eval",
        "cpu fallback",
        "non zero",
        "unique",
        "reaching max accumulated compound op size",
        "bindings-synchronize_device",
    }
    starts = {e["id"] for e in events if e["ph"] == "s"}
    finishes = {e["id"] for e in events if e["ph"] == "f"}
    assert finishes and finishes <= starts
    assert all(e["cat"] == "ac2g" for e in events if e["ph"] in ("s", "f"))
    counters = {e["name"] for e in events if e["ph"] == "C"}
    assert {"hpu.recipe_cache_size", "hpu.memory_in_use_bytes"} <= counters
    steps = [e for e in runtime if e["args"]["hpuprof.event"] == "step"]
    assert [e["name"] for e in steps] == ["Step#0"]
    meta = metadata_events(4242)
    names = {
        (e["pid"], e["args"].get("name"))
        for e in meta
        if e["name"] in ("process_name", "thread_name")
    }
    assert {(0, "/device:HPU:0"), (0, "MME 0"), (0, "TPC 0"), (0, "EDMA 0")} <= names


def test_run_metadata_says_modeled(hpu: Any) -> None:
    sim = hpu("lazy", device="gaudi3")
    meta = sim.run_metadata()
    assert meta["device_time"] == "modeled" and meta["host_time"] == "projected"
    assert meta["timeline"] == "projected"  # the default: host times as on a Gaudi host
    assert meta["device_profile"] == "gaudi3" and meta["mode"] == "lazy"
    assert meta["backend"] == "emulated"
    sim.disable()
    sim.enable(mode="lazy", timeline="measured")
    meta = sim.run_metadata()
    assert meta["host_time"] == "measured" and meta["timeline"] == "measured"


def test_recording_off_records_nothing(hpu: Any) -> None:
    sim = hpu("lazy")
    from hpusim.sink import get_sink

    get_sink().recording = False
    _workload(sim)
    assert len(get_sink().drain()) == 0
    get_sink().recording = True


def test_plain_cpu_ops_record_nothing(hpu: Any) -> None:
    hpu("eager")
    from hpusim.sink import get_sink

    get_sink().drain()
    a = torch.randn(8, 8)
    (a @ a).relu().sum().item()
    assert len(get_sink().drain()) == 0


def test_device_timeline_is_ordered_and_modeled(hpu: Any) -> None:
    sim = hpu("lazy")
    from hpusim.sink import KIND_DEVICE, get_sink

    _workload(sim)
    b = get_sink().drain()
    dev = [
        (b.engine[i], b.ts_ns[i], b.dur_ns[i]) for i in range(len(b)) if b.kind[i] == KIND_DEVICE
    ]
    assert dev and all(d > 0 for _, _, d in dev)
    for engine in {e for e, _, _ in dev}:  # each engine runs one node at a time
        lane = sorted((t, t + d) for e, t, d in dev if e == engine)
        assert all(lane[i + 1][0] >= lane[i][1] for i in range(len(lane) - 1))


def test_unknown_profile_is_a_clear_error() -> None:
    import hpusim

    with pytest.raises(ValueError, match="unknown device profile 'gaudi9'"):
        hpusim.enable(device="gaudi9")
    assert not hpusim.is_enabled()


def test_exported_trace_loads_into_the_trace_model(hpu: Any, tmp_path: Any) -> None:
    """The export satisfies the loader: device lanes, engines, flows joined, runtime events."""
    import os

    import hpuprof

    sim = hpu("lazy")
    from hpusim.chrome_events import metadata_events, to_chrome_events
    from hpusim.sink import get_sink

    base = get_sink().now_epoch_ns()
    _workload(sim)
    batch = get_sink().drain()
    pid = os.getpid()
    doc = {
        "traceEvents": metadata_events(pid) + to_chrome_events(batch, pid=pid, base_ns=base),
        "baseTimeNanoseconds": base,
        "hpuprof": sim.run_metadata(),
    }
    path = tmp_path / "emulated.json"
    path.write_text(json.dumps(doc))
    ev = hpuprof.load(path).events
    engines = set(ev[ev["is_device"]]["engine"].astype(str))
    assert {"MME", "TPC", "DMA"} <= engines
    assert (ev[ev["is_device"]]["correlation"] >= 0).all()
    runtime = ev[ev["kind"] == "hpu_runtime"]
    assert {"compile", "launch", "sync", "fallback", "graph_build"} <= set(
        runtime["hpu_event"].astype(str)
    )
    assert "cpu fallback" in set(runtime["flush_reason"].astype(str))
    ops = ev[ev["kind"] == "cpu_op"]
    assert set(ops["mode"].astype(str)) == {"lazy"}
    assert "fwd" in set(ops["phase"].astype(str))
