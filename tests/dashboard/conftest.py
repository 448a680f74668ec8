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
HOSTILE_FILE = "<img src=x onerror=alert(2)>.pt.trace.json"
"""A trace file name (run key) that would run script if rendered as HTML."""


def write_run(run: Path, n_events: int, ranks: int = 1) -> Path:
    """A run directory as `hpuprof record` leaves it: rank traces and a run.json manifest."""
    (run / "traces").mkdir(parents=True)
    trace = synthetic_trace(n_events, ranks=ranks)
    rels = []
    for r in range(ranks):
        rel = f"traces/train-rank{r}.pt.trace.json"
        write_chrome_json(trace, run / rel, rank=r)
        rels.append(rel)
    (run / "run.json").write_bytes(
        orjson.dumps({"hpuprof_run": 1, "traces": rels, "ranks": list(range(ranks))})
    )
    return run


def make_runs_dir(root: Path) -> Path:
    """`root` with a two-rank run directory (run.json), two lone traces and a hostile name."""
    run = write_run(root / "runs" / "train_2rank", 4_000, ranks=2)
    (run / "traces" / "train-rank2.pt.trace.incomplete.json").write_text("{}")
    lone = root / "lone"
    lone.mkdir()
    one = synthetic_trace(2_500, ops_per_step=40)
    ev = one.events
    ev["name"] = ev["name"].cat.rename_categories(
        {"aten::relu": HOSTILE} if "aten::relu" in ev["name"].cat.categories else {}
    )
    write_chrome_json(one, lone / "eager.pt.trace.json.gz")
    write_chrome_json(synthetic_trace(600), lone / HOSTILE_FILE)
    base = SHARED_TRACES / "tests" / "data" / "trace_compare" / "base" / "base.json.gz"
    if base.is_file():
        shutil.copy(base, lone / "cuda_base.json.gz")
    return root


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_runs_dir(tmp_path_factory.mktemp("dash"))
