"""Fixtures: a directory of runs for the dashboard (a two-rank run, lone traces)."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

from tests.conftest import SHARED_TRACES
from tests.dashboard.synth import synthetic_trace, write_chrome_json

HOSTILE = "<img src=x onerror=alert(1)>aten::evil"
"""An op name that would run script if any page rendered trace strings as HTML."""


def make_runs_dir(root: Path) -> Path:
    """`root` with a two-rank run directory (run.json), two lone traces and a hostile name."""
    run = root / "runs" / "train_2rank"
    (run / "traces").mkdir(parents=True)
    two = synthetic_trace(4_000, ranks=2)
    rels = []
    for r in (0, 1):
        rel = f"traces/train-rank{r}.pt.trace.json"
        write_chrome_json(two, run / rel, rank=r)
        rels.append(rel)
    (run / "traces" / "train-rank2.pt.trace.incomplete.json").write_text("{}")
    (run / "run.json").write_bytes(
        orjson.dumps({"hpuprof_run": 1, "traces": rels, "ranks": [0, 1]})
    )
    lone = root / "lone"
    lone.mkdir()
    one = synthetic_trace(2_500, ops_per_step=40)
    ev = one.events
    ev["name"] = ev["name"].cat.rename_categories(
        {"aten::relu": HOSTILE} if "aten::relu" in ev["name"].cat.categories else {}
    )
    write_chrome_json(one, lone / "eager.pt.trace.json.gz")
    base = SHARED_TRACES / "tests" / "data" / "trace_compare" / "base" / "base.json.gz"
    if base.is_file():
        shutil.copy(base, lone / "cuda_base.json.gz")
    return root


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_runs_dir(tmp_path_factory.mktemp("dash"))
