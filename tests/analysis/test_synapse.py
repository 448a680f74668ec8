"""The Synapse report: time per call, launches / copies / syncs per recipe and stream, and the
bridge scope each call sits in, on an inline log and on the real excerpt."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

import hpuprof
from hpuprof.analysis import analyze
from hpuprof.analysis.synapse import CallRow, RecipeStreamRow, ScopeRow, analyze_synapse
from tests.tracebuild import make_trace

EXAMPLE = Path(__file__).resolve().parents[3] / "shared" / "traces" / "gaudi"
EXAMPLE = EXAMPLE / "synapse-logger-example.json"
T0 = 1_661_619_207_000_000  # epoch µs, as the logger writes


def _ev(name: str, ph: str, ts: int, tid: int = 1, **args: Any) -> dict[str, Any]:
    event: dict[str, Any] = {"name": name, "ph": ph, "ts": T0 + ts, "pid": 9, "tid": tid}
    if args:
        event["args"] = args
    return event


def _log(tmp_path: Path) -> Path:
    compute = {"streamHandle": "0xc", "streamName": "STREAM_TYPE_COMPUTE"}
    h2d = {"streamHandle": "0xh", "streamName": "STREAM_TYPE_COPY_HOST_TO_DEVICE"}
    events = [
        _ev("copy_hpu_lazy_H2D", "B", 0),
        _ev("call:synMemCopyAsync", "B", 1, **h2d),
        _ev("call:synMemCopyAsync", "E", 5, status=0),
        _ev("copy_hpu_lazy_H2D", "E", 6),
        _ev("LaunchSyncTensorsGraph", "B", 10),
        _ev("call:synLaunchWithExternalEvents", "B", 11, pRecipeHandle="0xr1", **compute),
        _ev("call:synLaunchWithExternalEvents", "E", 31, status=0),
        _ev("call:synLaunchWithExternalEvents", "B", 32, pRecipeHandle="0xr2", **compute),
        _ev("call:synLaunchWithExternalEvents", "E", 42, status=0),
        _ev("call:synEventSynchronize", "B", 35, tid=2, **compute),  # a helper thread
        _ev("call:synEventSynchronize", "E", 50, tid=2, status=0),
        _ev("LaunchSyncTensorsGraph", "E", 60),
    ]
    path = tmp_path / "synapse_log.json"
    path.write_text("[\n" + "".join(json.dumps(e) + ",\n" for e in events))
    return path


def test_inline_log(tmp_path: Path) -> None:
    report = analyze_synapse(hpuprof.load(_log(tmp_path), cache=False))
    assert (report.calls, report.call_time_ns, report.in_scope_pct) == (4, 49_000, 75.0)
    assert report.by_call == (
        CallRow("synLaunchWithExternalEvents", "launch", 2, 30_000, 15_000.0, 20_000, 61.22),
        CallRow("synEventSynchronize", "sync", 1, 15_000, 15_000.0, 15_000, 30.61),
        CallRow("synMemCopyAsync", "copy", 1, 4_000, 4_000.0, 4_000, 8.16),
    )
    assert report.by_recipe_stream == (
        RecipeStreamRow(0, "", "0xc", "STREAM_TYPE_COMPUTE", 0, 0, 1, 15_000),
        RecipeStreamRow(0, "", "0xh", "STREAM_TYPE_COPY_HOST_TO_DEVICE", 0, 1, 0, 4_000),
        RecipeStreamRow(0, "0xr1", "0xc", "STREAM_TYPE_COMPUTE", 1, 0, 0, 20_000),
        RecipeStreamRow(0, "0xr2", "0xc", "STREAM_TYPE_COMPUTE", 1, 0, 0, 10_000),
    )
    assert report.by_scope == (
        ScopeRow("", "synEventSynchronize", 1, 15_000),
        ScopeRow("LaunchSyncTensorsGraph", "synLaunchWithExternalEvents", 2, 30_000),
        ScopeRow("copy_hpu_lazy_H2D", "synMemCopyAsync", 1, 4_000),
    )


def test_no_synapse_calls() -> None:
    trace = make_trace([{"name": "aten::mm", "kind": "cpu_op", "ts_ns": 0, "dur_ns": 5}])
    report = analyze_synapse(trace)
    assert report.calls == 0 and report.by_call == ()
    assert "no Synapse" in report.notes[0]


@pytest.mark.skipif(not EXAMPLE.exists(), reason="../shared is not here")
def test_real_excerpt() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the excerpt's cut-off ends (tests/trace)
        trace = hpuprof.load(EXAMPLE, cache=False)
    report = analyze(trace, "synapse").sections["synapse"]
    counts = {c.call: c.count for c in report.by_call}
    assert counts == {
        "synLaunchWithExternalEvents": 3,
        "synEventSynchronize": 9,
        "synMemCopyAsync": 5,
        "synEventRecord": 9,
        "synStreamWaitEvent": 1,
    }
    launches = [r for r in report.by_recipe_stream if r.launches]
    assert len({r.recipe for r in launches}) == 3  # three recipes, one launch each
    assert {r.stream_name for r in launches} == {"STREAM_TYPE_COMPUTE"}
    copies = {r.stream_name: r.copies for r in report.by_recipe_stream if r.copies}
    assert copies == {"STREAM_TYPE_COPY_DEVICE_TO_HOST": 4, "STREAM_TYPE_COPY_HOST_TO_DEVICE": 1}
    # every launch sits in the bridge's `launch` scope; the helper threads' syncs in none
    by_scope = {(s.scope, s.call): s.count for s in report.by_scope}
    assert by_scope[("launch", "synLaunchWithExternalEvents")] == 3
    assert by_scope[("", "synEventSynchronize")] == 9
    assert sum(s.count for s in report.by_scope) == report.calls
