"""A fresh torch.profiler trace loads; self times from depth/parent match key_averages()."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import hpuprof

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch


def test_self_cpu_time_matches_key_averages(tmp_path: Path) -> None:
    # ops of tens of us and more, so that at least 5 pass the 20 us bar on a fast machine too
    # (at 32 x 64 -> 128 -> 8 a clean-clone CI run found 4)
    model = torch.nn.Sequential(
        torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 64)
    )
    data = torch.randn(256, 256)
    path = tmp_path / "fresh.pt.trace.json"
    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU],
        record_shapes=True,
        schedule=torch.profiler.schedule(wait=0, warmup=1, active=2, repeat=1),
        on_trace_ready=lambda p: p.export_chrome_trace(str(path)),
    ) as prof:
        for _ in range(4):
            model(data).sum().backward()
            prof.step()
    trace = hpuprof.load(path, cache=False)
    events = trace.events
    assert {"cpu_op", "user_annotation"} <= set(events["kind"].astype(str))
    assert set(events.loc[events["name"].astype(str).str.startswith("ProfilerStep#"), "step"]) >= {
        1,
        2,
    }

    # self time = duration minus the durations of direct children (any slice kind)
    dur = events["dur_ns"].to_numpy()
    parent = events["parent"].to_numpy()
    child_sum = np.zeros(len(events), dtype=np.int64)
    has_parent = parent >= 0
    np.add.at(child_sum, parent[has_parent], dur[has_parent])
    ops = events["kind"] == "cpu_op"
    ours = (
        events.loc[ops]
        .assign(self_ns=(dur - child_sum)[ops.to_numpy()])
        .groupby("name", observed=True)["self_ns"]
        .sum()
    )
    theirs = {a.key: a.self_cpu_time_total * 1000.0 for a in prof.key_averages()}
    checked = 0
    for name, self_ns in ours.items():
        if name not in theirs or theirs[name] < 20_000:
            continue
        assert abs(self_ns - theirs[name]) <= 0.02 * theirs[name] + 2_000 * 10, name
        checked += 1
    assert checked >= 5
    assert (events.loc[ops, "input_dims"] != "").any()
