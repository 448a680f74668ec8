"""`hpuprof info FILE` prints a file's cached summary without loading it (nor importing pandas:
issue 27, start-up), byte for byte what a load prints; a changed file, a warning or
`--no-cache` is never answered from the cache."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from hpuprof.cli.main import main
from hpuprof.trace.load import load_file
from hpuprof.trace.summary import TraceSummary, summarize
from hpuprof.trace.summary_cache import _summary_from_json, summary_path
from tests.conftest import SAMPLE_TRACES, shared_trace_files

SMALL = SAMPLE_TRACES / "cpu_torch_profiler" / "trace.pt.trace.json"


def _info(
    path: Path, capsys: pytest.CaptureFixture[str], *extra: str
) -> tuple[int, str, str, list[str]]:
    """Exit code, stdout, stderr and warnings of `hpuprof info [extra] PATH`."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code = main(["info", *extra, str(path)])
    out = capsys.readouterr()
    return code, out.out, out.err, [str(w.message) for w in caught]


def _traces() -> list[Path]:
    shared = [p for p in shared_trace_files() if p.stat().st_size < 2 << 20][:8]
    return [SMALL, *sorted(SAMPLE_TRACES.glob("emulated_*/traces/*.json"))[:3], *shared]


@pytest.mark.parametrize("trace", _traces(), ids=lambda p: p.name)
def test_the_cached_summary_prints_what_a_load_prints(
    trace: Path, cache_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for extra in ((), ("--json",)):
        loaded = _info(trace, capsys, "--no-cache", *extra)
        first = _info(trace, capsys, *extra)  # loads, then caches the summary (unless it warned)
        assert summary_path(trace, "summary").is_file() == (not loaded[3])
        assert _info(trace, capsys, *extra) == first == loaded


def test_a_summary_round_trips_every_field() -> None:
    summary = summarize(load_file(SMALL, cache=False))
    data = json.loads(json.dumps(summary.to_dict()))
    assert set(data) == {f.name for f in dataclasses.fields(TraceSummary)}
    assert _summary_from_json(data) == summary


def test_a_cached_summary_is_printed_without_pandas(tmp_path: Path) -> None:
    env = {**os.environ, "HPUPROF_CACHE_DIR": str(tmp_path / "cache")}
    code = (
        "import sys\nfrom hpuprof.cli.main import main\ncode = main(sys.argv[1:])\n"
        "print('--loaded--' + ','.join(m for m in ('pandas', 'numpy', 'pyarrow') "
        "if m in sys.modules))\n"
    )
    runs = [
        subprocess.run(
            [sys.executable, "-c", code, "info", str(SMALL)],
            capture_output=True,
            text=True,
            check=True,
            env=env,
        )
        for _ in range(2)
    ]
    first, _, first_loaded = runs[0].stdout.rpartition("--loaded--")
    second, _, second_loaded = runs[1].stdout.rpartition("--loaded--")
    assert "pandas" in first_loaded  # (the first run loads the trace)
    assert second_loaded.strip() == "" and second == first


def test_a_changed_file_is_summarized_again(
    tmp_path: Path, cache_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "t.json"
    events = [{"ph": "X", "name": "a", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 0, "dur": 1}]
    trace.write_text(json.dumps({"traceEvents": events}))
    assert "events:      1 " in _info(trace, capsys)[1]
    trace.write_text(json.dumps({"traceEvents": events * 2}))
    assert "events:      2 " in _info(trace, capsys)[1]
    assert _info(trace, capsys) == _info(trace, capsys, "--no-cache")


def test_a_trace_that_warns_warns_on_every_run(
    tmp_path: Path, cache_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "cut.json"
    shutil.copy(SMALL, trace)
    with trace.open("r+b") as handle:  # cut off in the middle of an event
        handle.truncate(trace.stat().st_size // 2)
    runs = [_info(trace, capsys) for _ in range(3)]
    assert runs[0][0] == 0 and "truncated trace" in " ".join(runs[0][3])
    assert runs[1] == runs[2] == runs[0]
    assert not summary_path(trace, "summary").exists()


def test_no_cache_neither_reads_nor_writes_the_summary(
    cache_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    loaded = _info(SMALL, capsys, "--no-cache")
    assert not summary_path(SMALL, "summary").exists()
    assert _info(SMALL, capsys) == loaded
    entry = summary_path(SMALL, "summary")
    data = json.loads(entry.read_text())
    entry.write_text(json.dumps({**data, "events": 1}))  # (a planted entry: read only with cache)
    assert "events:      1 " in _info(SMALL, capsys)[1]
    assert _info(SMALL, capsys, "--no-cache") == loaded
    entry.write_text("{")  # a torn entry is made again
    assert _info(SMALL, capsys) == loaded
    assert json.loads(entry.read_text()) == data
