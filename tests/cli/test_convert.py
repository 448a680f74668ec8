"""`hpuprof convert`: every format pair, exit codes and one-line errors."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pandas as pd
import pytest
from conftest import shared_trace_files

import hpuprof
from hpuprof.cli.main import main
from tests.cli.usage_text import usage_error

EVENTS = [
    {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "/device:HPU:0"}},
    {"ph": "M", "name": "thread_name", "pid": 0, "tid": 1000, "args": {"name": "MME 0"}},
    {"ph": "X", "name": "ProfilerStep#1", "cat": "user_annotation", "pid": 7, "tid": 7,
     "ts": 1.0, "dur": 90.5, "args": {"External id": 1}},
    {"ph": "X", "name": "aten::mm", "cat": "cpu_op", "pid": 7, "tid": 7, "ts": 2.25,
     "dur": 10.0, "args": {"Input Dims": [[2, 3], [3, 4]], "Input type": ["float", "float"]}},
    {"ph": "X", "name": "mm", "cat": "kernel", "pid": 0, "tid": 1000, "ts": 20.0, "dur": 5.0,
     "args": {"recipeId": 3}},
    {"ph": "s", "id": 5, "cat": "ac2g", "name": "ac2g", "pid": 7, "tid": 7, "ts": 2.25},
    {"ph": "f", "id": 5, "cat": "ac2g", "name": "ac2g", "pid": 0, "tid": 1000, "ts": 20.0,
     "bp": "e"},
    {"ph": "C", "name": "hpu.recipe_cache_size", "pid": 7, "tid": 7, "ts": 3.0,
     "args": {"hpu.recipe_cache_size": 2}},
]  # fmt: skip
TABLES = ("events", "counters", "flows")


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "in.json"
    body = {"schemaVersion": 1, "deviceProperties": [], "baseTimeNanoseconds": 10**18}
    path.write_bytes(orjson.dumps({**body, "traceEvents": EVENTS}))
    return path


def _values(series: pd.Series) -> list[object]:
    """Column values as Python objects, NaN as None (NaN never equals itself)."""
    return [None if isinstance(v, float) and v != v else v for v in series.astype(object)]


def same_tables(a: hpuprof.Trace, b: hpuprof.Trace) -> None:
    for table in TABLES:
        left, right = getattr(a, table), getattr(b, table)
        assert list(left.columns) == list(right.columns)
        for column in left.columns:
            assert _values(left[column]) == _values(right[column]), f"{table}.{column}"


@pytest.mark.parametrize("middle", [".perfetto-trace", ".pftrace", ".json.gz", ".parquet"])
def test_convert_chain_keeps_the_trace(source: Path, tmp_path: Path, middle: str) -> None:
    original = hpuprof.load(source, cache=False)
    step = tmp_path / f"mid{middle}"
    back = tmp_path / "back.json"
    assert main(["convert", str(source), str(step)]) == 0
    assert main(["convert", str(step), str(back)]) == 0
    same_tables(original, hpuprof.load(step, cache=False))
    same_tables(original, hpuprof.load(back, cache=False))


def test_directory_output_writes_one_file_per_rank(source: Path, tmp_path: Path) -> None:
    out = tmp_path / "ranks"
    assert main(["convert", str(source), f"{out}/"]) == 0
    assert [p.name for p in out.iterdir()] == ["rank-0.json.gz"]


@pytest.mark.parametrize(
    ("target", "needle"),
    [("out.txt", "unknown output extension"), ("out", "unknown output extension")],
)
def test_unknown_output_extension_is_a_usage_error(
    source: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], target: str, needle: str
) -> None:
    assert main(["convert", str(source), str(tmp_path / target)]) == 2
    assert needle in usage_error(capsys.readouterr().err, "convert")


def test_unknown_input_extension_and_missing_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    odd = tmp_path / "trace.xyz"
    odd.write_text("a,b\n")
    assert main(["convert", str(odd), str(tmp_path / "o.json")]) == 2
    assert "unknown input extension" in capsys.readouterr().err
    # .csv is a Gaudi hardware-profiler export: a CSV that is not one is told so, with its line
    not_gaudi = tmp_path / "trace.csv"
    not_gaudi.write_text("a,b\n")
    assert main(["convert", str(not_gaudi), str(tmp_path / "o.json")]) == 2
    err = capsys.readouterr().err
    assert str(not_gaudi) in err and "line 1" in err and "hardware-profiler CSV header" in err
    assert main(["convert", str(tmp_path / "none.json"), str(tmp_path / "o.json")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_bad_trace_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.pftrace"
    bad.write_bytes(b"this is not protobuf at all \xff\xff\xff")
    assert main(["convert", str(bad), str(tmp_path / "o.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hpuprof: error: ") and str(bad) in err and err.count("\n") == 1
    assert not (tmp_path / "o.json").exists()


def test_subprocess_exit_codes(source: Path, tmp_path: Path) -> None:
    command = [sys.executable, "-c", "from hpuprof.cli.main import run; run()", "convert"]
    ok = subprocess.run([*command, str(source), str(tmp_path / "o.pftrace")], capture_output=True)
    assert ok.returncode == 0, ok.stderr
    assert b"wrote" in ok.stdout and (tmp_path / "o.pftrace").stat().st_size > 0
    bad = subprocess.run([*command, str(source), str(tmp_path / "o.xyz")], capture_output=True)
    assert bad.returncode == 2
    assert "unknown output extension" in usage_error(bad.stderr.decode(), "convert")


REAL = [p for p in shared_trace_files() if "trace_compare" in str(p) or "amd_trace" in str(p)]


@pytest.mark.parametrize("real", REAL, ids=lambda p: p.name)
def test_real_trace_converts_and_round_trips(real: Path, tmp_path: Path) -> None:
    original = hpuprof.load(real, cache=False)
    real = Path(shutil.copy(real, tmp_path / real.name))  # convert may cache beside its input
    perfetto = tmp_path / "real.perfetto-trace"
    back = tmp_path / "real.json.gz"
    assert main(["convert", str(real), str(perfetto)]) == 0
    assert main(["convert", str(perfetto), str(back)]) == 0
    same_tables(original, hpuprof.load(perfetto, cache=False))
    same_tables(original, hpuprof.load(back, cache=False))
