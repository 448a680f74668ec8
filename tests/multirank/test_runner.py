"""Rank by rank: in this process (--workers 1) and on a real Dask LocalCluster (--workers 2).

The cluster test runs the CLI once in a subprocess over a run with a planted straggler, a
corrupt rank file and a rank whose worker dies (a gzip "bomb" far above --worker-memory): the
straggler is named, the two bad ranks are named (file, position, reason) and the others are
reported, exit status 1.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import hpuprof
from hpuprof.analysis import parse_reports
from hpuprof.analysis.distributed import analyze_distributed
from hpuprof.analysis.report import as_plain
from hpuprof.cli.commands.analyze_ranks import rank_files
from hpuprof.cli.main import main
from hpuprof.distributed.runner import analyze_files
from tests.cli.usage_text import usage_error
from tests.conftest import SAMPLE_TRACES
from tests.multirank.ranks import write_memory_bomb, write_run

REPO = Path(__file__).resolve().parents[2]


def _plain(section: object) -> dict:
    body = as_plain(section)
    body.pop("findings", None)
    body.pop("critical_path_overlay", None)  # event ids are labels of the table analysed
    return body


def test_rank_by_rank_equals_the_in_memory_report(tmp_path: Path) -> None:
    files = write_run(tmp_path / "run", ranks=3, straggler=1)
    combined = analyze_distributed(hpuprof.load(tmp_path / "run"))
    report, stats = analyze_files(files, ["distributed"], workers=1)
    assert stats.workers == 0  # no cluster for --workers 1
    assert _plain(report.sections["distributed"]) == _plain(combined)
    assert report.meta["ranks"] == [0, 1, 2] and report.meta["failed"] == []
    top = report.sections["distributed"].skew_by_rank[0]
    assert (top.rank, top.times_last, top.collectives) == (1, 12, 12)


def test_default_merge_stacks_each_ranks_rows(tmp_path: Path) -> None:
    files = write_run(tmp_path / "run", ranks=2, straggler=1)
    report, _ = analyze_files(files, ["bottleneck"], workers=1)
    bott = report.sections["bottleneck"]
    assert [t.rank for t in bott.temporal] == [0, 1]
    assert {row.rank for row in bott.top_device_ops} == {0, 1}  # rows without a rank got one
    assert all("rank" in f.evidence for f in bott.findings)


def test_ranks_and_key_figures_rank_by_rank_equal_the_in_memory_report(tmp_path: Path) -> None:
    """The ranks report compares each rank with the median rank: merged from per-rank partials
    it must equal the analysis of all ranks in one trace (not each rank against itself), and
    so must the key figures (counts summed over ranks)."""
    sample = SAMPLE_TRACES / "emulated_two_ranks"
    if not sample.is_dir():
        pytest.skip("sample_traces/emulated_two_ranks is not present")
    write_run(tmp_path / "run", ranks=3, straggler=1)
    for run in (tmp_path / "run", sample):
        combined = hpuprof.analyze(hpuprof.load(run))
        files = rank_files(run)
        report, _ = analyze_files(files, list(combined.meta["reports"]), workers=1)
        assert as_plain(report.sections["ranks"]) == as_plain(combined.sections["ranks"])
        assert report.meta["key_figures"] == combined.meta["key_figures"]
    # the sample's two ranks differ (host times are measured, so by how much changes with each
    # regeneration of the sample): each is compared with the median of both, so their
    # deviations are opposite, not each rank's 0 against itself
    low, high = sorted(r.vs_median_pct for r in report.sections["ranks"].ranks)
    assert high > 0 and low == pytest.approx(-high)


@pytest.mark.parametrize("fmt", ["text", "html", "json", "csv"])
def test_every_default_report_renders_rank_by_rank(tmp_path: Path, fmt: str) -> None:
    """Stacked per-rank rows stay the report's own rows (with their rank), so every renderer
    reads them as it reads the in-memory report's (`--workers` once crashed on dynamicity)."""
    write_run(tmp_path / "run", ranks=2, straggler=1)
    out = tmp_path / f"out.{fmt}"
    assert (
        main(["analyze", str(tmp_path / "run"), "--workers", "1", "--format", fmt, "-o", str(out)])
        == 0
    )
    assert out.exists() and (out.stat().st_size > 0 or out.is_dir())


def test_lazy_rank_set_opens_ranks_on_demand(tmp_path: Path) -> None:
    write_run(tmp_path / "run", ranks=3, straggler=0)
    ranks = hpuprof.load(tmp_path / "run", lazy=True)
    assert len(ranks) == 3 and ranks.ranks == (0, 1, 2)  # read from the files' first bytes
    one = ranks.rank(2)
    assert one.ranks == [2] and len(one) > 0
    rep, _ = analyze_files(ranks.files, parse_reports("distributed"), cache=ranks.cache)
    assert rep.sections["distributed"].skew_by_rank[0].rank == 0


def test_missing_dask_is_one_clear_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_run(tmp_path / "run", ranks=2, straggler=1)
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    code = main(["analyze", str(tmp_path / "run"), "--workers", "2", "-r", "distributed"])
    assert code == 2
    assert usage_error(capsys.readouterr().err, "analyze") == (
        "Error: --workers/--scheduler need Dask: pip install 'hpuprof[distributed]'"
    )


def test_unreachable_scheduler_is_one_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("distributed")
    write_run(tmp_path / "run", ranks=2, straggler=1)
    code = main(
        ["analyze", str(tmp_path / "run"), "--scheduler", "tcp://127.0.0.1:9", "-r", "distributed"]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in err
    assert "Traceback" not in err


def test_local_workers_load_with_their_share_of_the_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    """Local workers already keep every core busy: each load gets cores // workers threads
    (at most 8, at least 1), unless HPUPROF_LOAD_THREADS says how many every load gets."""
    from hpuprof.distributed.cluster import local_load_threads

    monkeypatch.delenv("HPUPROF_LOAD_THREADS", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(16)))
    assert [local_load_threads(w) for w in (1, 2, 3, 16, 32)] == [8, 8, 5, 1, 1]
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    assert local_load_threads(2) == 1
    monkeypatch.setenv("HPUPROF_LOAD_THREADS", "3")
    assert local_load_threads(2) == 3


@pytest.mark.slow
def test_local_workers_are_hpuprofs_own_processes() -> None:
    """The workers of a local cluster tune their heap as the command line does (Dask's
    MALLOC_TRIM_THRESHOLD_ had fixed glibc's mmap threshold: 3x the page faults per load),
    and the process that started them keeps its environment (Dask's nanny wrote its workers'
    MALLOC_TRIM_THRESHOLD_, OMP_NUM_THREADS=1 and PYTHONHASHSEED into it)."""
    pytest.importorskip("distributed")
    from hpuprof.distributed.cluster import dask_client
    from hpuprof.trace.heap import tuned

    environ = dict(os.environ)
    with dask_client(2) as client:
        assert list(client.run(tuned).values()) == [True, True]
        assert "MALLOC_TRIM_THRESHOLD_" not in os.environ  # Dask's nanny had left it here
    assert not tuned()  # this process (pytest's) is not hpuprof's own
    assert dict(os.environ) == environ  # nor is its environment changed


@pytest.mark.slow
def test_local_cluster_names_straggler_and_failed_ranks(tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    run = tmp_path / "run"
    write_run(run, ranks=4, straggler=3)
    bad = b'{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": ]}, {"ph": "i"}]}'
    (run / "rank4.json").write_bytes(bad)
    write_memory_bomb(run / "rank5.json.gz", megabytes=500)
    cache = tmp_path / "cache"
    out = tmp_path / "report.json"
    # the loader refuses a gzip bomb by its expansion ratio (issue 13); raise the limit so this one
    # reaches a worker and kills it by memory, the failure this test is about
    env = {**os.environ, "HPUPROF_CACHE_DIR": str(cache), "HPUPROF_MAX_GZIP_RATIO": "1000000"}
    cmd = [sys.executable, "-c", "from hpuprof.cli.main import run; run()", "analyze", str(run)]
    cmd += ["--workers", "2", "--worker-memory", "350MB", "-r", "distributed", "-o", str(out)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=500, cwd=REPO)
    assert done.returncode == 1, done.stderr
    doc = json.loads(out.read_text())
    dist = doc["distributed"]
    assert dist["ranks"] == [0, 1, 2, 3]
    failed = {Path(f["source"]).name: f for f in dist["failed"]}
    assert set(failed) == {"rank4.json", "rank5.json.gz"}
    assert failed["rank4.json"]["position"] is not None  # where the JSON stops
    assert "died" in failed["rank5.json.gz"]["reason"]
    for name in ("rank4.json", "rank5.json.gz"):
        assert f"rank not analysed: {run / name}" in done.stderr
    # the JSON contract of the issue
    assert {"rank", "overlap_pct"} <= set(dist["comm_comp_overlap"][0])
    idle = dist["idle_breakdown"]
    assert {r["category"] for r in idle} == {"host_wait", "kernel_wait", "other"}
    assert {"rank", "stream", "category", "idle_ns", "ratio"} <= set(idle[0])
    assert {"rank", "stream", "mean", "max"} <= set(dist["queue_length"][0])
    assert {"collective", "step", "last_rank", "skew_ns"} <= set(dist["collective_skew"][0])
    assert {"step", "length_ns", "cpu_bound_pct"} <= set(dist["critical_path"][0])
    assert {s["last_rank"] for s in dist["collective_skew"]} == {3}
    straggler = [f for f in doc["findings"] if f["metric"] == "last_arrival_pct"]
    assert straggler and straggler[0]["evidence"]["rank"] == 3
    # each rank's load cache was written by the workers and serves the next run
    entries = sorted(cache.glob("*.arrow"))
    assert len(entries) == 4
    again, _ = analyze_files(sorted(run.glob("rank[0-3].json")), ["distributed"], workers=1)
    assert sorted(cache.glob("*.arrow")) == entries
    assert _plain(again.sections["distributed"])["collective_skew"] == dist["collective_skew"]
