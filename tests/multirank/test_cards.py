"""`hpuprof record --emulate --cards N`: N emulated cards, one process each, one run directory,
collectives modeled on each card's NIC lane and matched across ranks by the analysis."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hpuprof.distributed.cli import rank_files
from hpuprof.distributed.runner import analyze_files

REPO = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).with_name("scripts") / "data_parallel_train.py"

pytestmark = [pytest.mark.slow, pytest.mark.torch]


def test_three_cards_with_a_slow_host_name_the_straggler(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    out = tmp_path / "run"
    cmd = [sys.executable, "-c", "from hpuprof.cli.main import run; run()", "record"]
    cmd += ["--emulate", "--cards", "3", "-o", str(out), "--", "python", str(SCRIPT)]
    cmd += ["--steps", "3", "--slow-rank", "2", "--slow-s", "0.2"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "runtime")])}
    env.pop("RANK", None)
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    manifest = json.loads((out / "run.json").read_text())
    assert manifest["ranks"] == [0, 1, 2] and manifest["world_size"] == 3
    assert len(manifest["traces"]) == 3
    for r in range(3):  # every card ran every step
        assert f"rank {r} step 2 loss" in done.stdout
    report, _ = analyze_files(rank_files(out), ["distributed"], workers=1)
    dist = report.sections["distributed"]
    assert dist.ranks == (0, 1, 2) and not dist.failed
    # one bucket all-reduce per step, on each card's NIC lane, matched by process group + Seq
    assert len(dist.stragglers) == 3, dist.stragglers
    assert all(c.ranks == 3 and c.collective == "allreduce" for c in dist.stragglers), (
        dist.stragglers
    )
    assert [c.last_rank for c in dist.stragglers] == [2, 2, 2]
    assert all(c.skew_ns >= 150_000_000 for c in dist.stragglers[1:])  # 0.2 s late each step
    assert all(r.comm_ns > 0 for r in dist.comm_comp_overlap)  # collectives on the device
    found = [f for f in report.findings if f.metric == "straggler_last_pct"]
    assert found and found[0].evidence["rank"] == 2
    assert f"hpuprof: 3 emulated cards written to {out}" in done.stdout
