"""`.scratch-*` folders left by a kill -9 go at the next load or record of the run directory;
a live run's scratch is never touched (issue 27)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import hpuprof
from hpuprof.trace.leftovers import SCRATCH_PREFIX, remove_leftovers

from .helpers import run_until_ready

pytest.importorskip("torch")


def _scratch(run: Path, pid: int) -> list[Path]:
    return sorted(run.glob(f"{SCRATCH_PREFIX}{pid}-*"))


def _kill_9(child: subprocess.Popen[bytes]) -> None:
    child.kill()
    assert child.wait(60) == -signal.SIGKILL
    for stream in (child.stdout, child.stderr):
        if stream is not None:
            stream.close()


def test_load_removes_a_killed_runs_scratch_and_keeps_a_live_ones(tmp_path: Path) -> None:
    child = run_until_ready(tmp_path)
    try:
        live = _scratch(tmp_path, child.pid)
        assert len(live) == 1
        assert len(hpuprof.load(tmp_path)) > 0  # loads the live run's stream...
        assert live[0].is_dir()  # ...and leaves its scratch alone
    finally:
        _kill_9(child)
    assert _scratch(tmp_path, child.pid) == live  # what a kill -9 leaves behind
    trace = hpuprof.load(tmp_path)
    assert (trace.events["name"] == "aten::mm").sum() >= 6
    assert _scratch(tmp_path, child.pid) == []
    assert not list(tmp_path.glob(f"{SCRATCH_PREFIX}*"))


def test_the_next_record_removes_a_killed_runs_scratch(tmp_path: Path) -> None:
    first = run_until_ready(tmp_path)
    _kill_9(first)
    assert len(_scratch(tmp_path, first.pid)) == 1
    second = run_until_ready(tmp_path)  # a new recording into the same directory
    try:
        assert _scratch(tmp_path, first.pid) == []
        assert len(_scratch(tmp_path, second.pid)) == 1
    finally:
        _kill_9(second)


def test_a_reused_pid_does_not_keep_an_older_scratch(tmp_path: Path) -> None:
    """A folder named after a live pid whose process started after the folder was last
    written belongs to an earlier owner of that pid: stale."""
    newer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        time.sleep(0.2)
        reused = tmp_path / f"{SCRATCH_PREFIX}{newer.pid}-old"
        reused.mkdir()
        hour_ago = time.time() - 3600
        os.utime(reused, (hour_ago, hour_ago))
        mine = tmp_path / f"{SCRATCH_PREFIX}{os.getpid()}-live"  # this process: alive
        mine.mkdir()
        assert remove_leftovers(tmp_path) == [reused]
        assert mine.is_dir() and not reused.exists()
    finally:
        newer.kill()
        newer.wait(60)


def test_a_run_recorded_on_another_host_keeps_its_scratch(tmp_path: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait(60)
    scratch = tmp_path / f"{SCRATCH_PREFIX}{dead.pid}-x"
    scratch.mkdir()
    (tmp_path / "run.json").write_text('{"host": "some-other-host.invalid"}')
    assert remove_leftovers(tmp_path) == []  # its processes cannot be checked from here
    (tmp_path / "run.json").write_text("{}")
    assert remove_leftovers(tmp_path) == [scratch]
