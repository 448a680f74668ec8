"""Inputs a careless or hostile user hands over (issue 27): a file name that is not UTF-8, a
`sort_index` past int64, a FIFO named like a trace. Each loads, or is one clear error."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import pytest

import hpuprof
from hpuprof.errors import TraceFormatError
from hpuprof.path_text import path_text
from tests.conftest import SAMPLE_TRACES

SMALL = SAMPLE_TRACES / "cpu_torch_profiler" / "trace.pt.trace.json"
ODD = b"x\xff.pt.trace.json"  # not UTF-8: Python names it with a lone surrogate


def _odd_file(directory: Path) -> Path:
    path = Path(os.fsdecode(os.fsencode(directory) + b"/" + ODD))
    try:
        path.write_bytes(SMALL.read_bytes())
    except (OSError, UnicodeEncodeError):
        pytest.skip("this file system refuses names that are not UTF-8")
    return path


def _info(target: Path) -> subprocess.CompletedProcess[bytes]:
    command = [sys.executable, "-c", "from hpuprof.cli.main import run; run()", "info"]
    env = os.environ | {"PYTHONIOENCODING": "utf-8:strict"}  # a terminal that refuses bad text
    return subprocess.run([*command, target], capture_output=True, env=env, timeout=120)


def test_path_text_escapes_only_what_is_not_utf8() -> None:
    assert path_text("plain/é.json") == "plain/é.json"
    assert path_text(os.fsdecode(b"d/x\xff.json")) == "d/x\\xff.json"
    assert path_text(Path(os.fsdecode(ODD))).encode() == b"x\\xff.pt.trace.json"


def test_load_a_file_whose_name_is_not_utf8_twice(tmp_path: Path) -> None:
    odd = _odd_file(tmp_path)
    expected = hpuprof.load(SMALL, cache=False)
    first = hpuprof.load(odd)  # writes the cache entry
    again = hpuprof.load(odd)  # reads it
    for trace in (first, again):
        assert len(trace) == len(expected) > 0
        assert trace.sources == (path_text(odd),)
        assert "\\xff" in trace.sources[0]
    directory = hpuprof.load(tmp_path)
    assert len(directory) == len(expected)


@pytest.mark.parametrize("target", ["file", "directory"])
def test_info_shows_a_name_that_is_not_utf8(tmp_path: Path, target: str) -> None:
    odd = _odd_file(tmp_path)
    got = _info(odd if target == "file" else tmp_path)
    assert got.returncode == 0, got.stderr
    assert b"Traceback" not in got.stderr
    assert re.search(rb"source: +\S*x\\xff\.pt\.trace\.json", got.stdout), got.stdout


def test_a_broken_file_whose_name_is_not_utf8_is_one_clear_error(tmp_path: Path) -> None:
    odd = _odd_file(tmp_path)
    odd.write_bytes(b'{"traceEvents": [{"ph": "X", "ts": "soon"}]}')
    with pytest.raises(TraceFormatError) as caught:
        hpuprof.load(odd)
    assert caught.value.path == path_text(odd)
    got = _info(odd)
    assert got.returncode == 2 and b"Traceback" not in got.stderr
    assert b"x\\xff.pt.trace.json" in got.stderr


def test_a_truncated_file_whose_name_is_not_utf8_warns_with_its_shown_name(
    tmp_path: Path,
) -> None:
    odd = _odd_file(tmp_path)
    odd.write_bytes(SMALL.read_bytes()[:-4000])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trace = hpuprof.load(odd)
    assert len(trace) > 0
    assert any(str(w.message).startswith(path_text(odd) + ": truncated") for w in caught)


def _with_sort_index(tmp_path: Path, value: int) -> tuple[Path, int]:
    """The small real trace with every process/thread `sort_index` set to `value`."""
    doc = json.loads(SMALL.read_bytes())
    changed = 0
    for event in doc["traceEvents"]:
        if event.get("ph") == "M" and str(event.get("name")).endswith("_sort_index"):
            event["args"]["sort_index"] = value
            changed += 1
    path = tmp_path / "big_sort_index.json"
    path.write_text(json.dumps(doc))  # orjson refuses integers past 64 bits
    return path, changed


def test_sort_index_past_int64_is_dropped_with_a_warning(tmp_path: Path) -> None:
    path, changed = _with_sort_index(tmp_path, 2**70)
    assert changed >= 2 and str(2**70).encode() in path.read_bytes()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trace = hpuprof.load(path, cache=False)
    messages = [str(w.message) for w in caught if "sort_index past int64" in str(w.message)]
    assert len(messages) == changed and all(str(path) in m for m in messages)
    assert len(trace) == len(hpuprof.load(SMALL, cache=False))
    assert set(trace.processes["sort_index"]) | set(trace.threads["sort_index"]) == {-1}
    within, _ = _with_sort_index(tmp_path, 2**62)  # the largest that fits are kept
    assert set(hpuprof.load(within, cache=False).processes["sort_index"]) == {2**62}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
@pytest.mark.parametrize("lazy", [False, True])
def test_a_fifo_named_like_a_trace_is_refused_not_read(tmp_path: Path, lazy: bool) -> None:
    fifo = tmp_path / "x.json"
    os.mkfifo(fifo)
    outcome: list[BaseException] = []

    def attempt() -> None:
        try:
            hpuprof.load(fifo, lazy=lazy)  # type: ignore[call-overload]
        except BaseException as error:
            outcome.append(error)

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(30)
    if worker.is_alive():  # unblock the reader so the test process can end
        with open(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK), "wb"):
            pass
        pytest.fail("load blocked on a FIFO")
    assert len(outcome) == 1 and isinstance(outcome[0], TraceFormatError)
    assert str(fifo) in str(outcome[0]) and "FIFO" in str(outcome[0])


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_info_on_a_fifo_exits_2_naming_it(tmp_path: Path) -> None:
    fifo = tmp_path / "x.json"
    os.mkfifo(fifo)
    got = _info(fifo)
    assert got.returncode == 2 and b"Traceback" not in got.stderr
    assert str(fifo).encode() in got.stderr and b"FIFO" in got.stderr


@pytest.mark.parametrize("suffix", [".parquet", ".pftrace", ".json.gz"])
def test_convert_to_and_from_names_that_are_not_utf8(tmp_path: Path, suffix: str) -> None:
    odd = _odd_file(tmp_path)
    target = Path(os.fsdecode(os.fsencode(tmp_path) + b"/out\xfe" + suffix.encode()))
    command = [sys.executable, "-c", "from hpuprof.cli.main import run; run()", "convert"]
    env = os.environ | {"PYTHONIOENCODING": "utf-8:strict"}
    got = subprocess.run([*command, odd, target], capture_output=True, env=env, timeout=120)
    assert got.returncode == 0, got.stderr
    assert got.stdout.startswith(b"wrote ") and b"out\\xfe" in got.stdout
    assert len(hpuprof.load(target, cache=False)) == len(hpuprof.load(SMALL, cache=False))
    assert _info(target).returncode == 0
