"""How a run ended: the `end_state` vocabulary, per-rank merging, "killed" found on reading,
leftovers of killed writers, and `hpuprof info` showing it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from hpuprof.capture.run_dir import base_manifest, read_manifest, update_manifest
from hpuprof.capture.run_end import END_STATES, RunEnd, from_exception, rank_ends, run_end
from hpuprof.trace.leftovers import remove_leftovers, scratch_prefix

from .helpers import child_env


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_exceptions_map_to_states() -> None:
    assert from_exception(ValueError("bad  input\nhere")) == RunEnd(
        "exception", exception="ValueError", message="bad input here"
    )
    assert from_exception(SystemExit(0)).state == "completed"
    assert from_exception(SystemExit()).state == "completed"
    assert from_exception(SystemExit(3)) == RunEnd("failed", exit_code=3)
    assert from_exception(SystemExit("usage: ...")) == RunEnd("failed", exit_code=1)
    assert from_exception(KeyboardInterrupt()) == RunEnd(
        "signal", exception="KeyboardInterrupt", signal="SIGINT"
    )
    after_term = from_exception(SystemExit(143), signal_seen="SIGTERM")
    assert (after_term.state, after_term.signal, after_term.exit_code) == ("signal", "SIGTERM", 143)
    assert RunEnd("failed", exit_code=2).detail == "exit code 2"
    assert RunEnd("signal", signal="SIGTERM").legacy_status == "interrupted: SIGTERM"


def _manifest(tmp_path: Path, rank: int = 0) -> dict[str, object]:
    fields = base_manifest(
        rank=rank, world_size=2, mode="", device_profile="", backend="cpu", device_time="none"
    )
    return update_manifest(tmp_path, fields)


def test_a_running_rank_whose_process_is_gone_was_killed(tmp_path: Path) -> None:
    manifest = _manifest(tmp_path)
    assert manifest["end_state"] == "running"
    assert run_end(manifest).state == "running"  # this process: alive
    gone = update_manifest(tmp_path, {"pids": {"0": _dead_pid()}})
    end = run_end(gone)
    assert end.state == "killed" and "never finished" in end.detail
    elsewhere = {**gone, "host": "another-host"}
    assert run_end(elsewhere).state == "running"  # cannot check another machine
    assert "another-host" in run_end(elsewhere).detail
    assert socket.gethostname() != "another-host"


def test_pid_reused_by_a_younger_process_is_not_the_run(tmp_path: Path) -> None:
    manifest = _manifest(tmp_path)
    long_ago = {**manifest, "start_ns": time.time_ns() - 10**18}  # before this process began
    assert rank_ends(long_ago)["0"].state == "killed"


def test_ranks_merge_and_the_worst_ending_summarizes(tmp_path: Path) -> None:
    _manifest(tmp_path, rank=0)
    _manifest(tmp_path, rank=1)
    update_manifest(tmp_path, {"ends": {"0": RunEnd("completed").to_json()}})
    merged = update_manifest(
        tmp_path,
        {"ends": {"1": RunEnd("exception", exception="RuntimeError", message="x").to_json()}},
    )
    assert merged["end_state"] == "exception"
    assert merged["end_detail"] == "rank 1: RuntimeError: x"
    end = run_end(merged)
    assert end.state == "exception" and end.detail == "rank 1: RuntimeError: x"
    assert set(rank_ends(merged)) == {"0", "1"}


def test_manifests_before_end_state_are_read(tmp_path: Path) -> None:
    old = {"hpuprof_run": 1, "ranks": [0], "status": "interrupted: SIGTERM", "pids": {"0": 1}}
    assert run_end(old) == RunEnd("signal", signal="SIGTERM")
    assert run_end({**old, "status": "error: ValueError"}).exception == "ValueError"
    assert run_end({**old, "status": "complete"}).state == "completed"
    failed = run_end({**old, "status": "failed: exit code 3"})  # issue 9's record, before ends
    assert (failed.state, failed.exit_code) == ("failed", 3)
    assert run_end({**old, "status": "interrupted"}).signal == "SIGINT"
    assert run_end({"ends": {"0": {"state": "exploded"}}, "pids": {"0": "x"}}).state == "killed"
    assert set(END_STATES) >= {"completed", "failed", "exception", "signal", "killed"}


def test_leftovers_of_dead_writers_go_live_ones_stay(tmp_path: Path) -> None:
    (tmp_path / "perfetto").mkdir()
    dead = tmp_path / f".scratch-{_dead_pid()}-abc"
    live = tmp_path / f"{scratch_prefix()}def"
    dead.mkdir()
    live.mkdir()
    stale = tmp_path / "perfetto" / ".x.perfetto-trace.k3j.tmp"
    fresh = tmp_path / ".run.json.q1.tmp"
    stale.write_bytes(b"half")
    fresh.write_bytes(b"being written")
    old = time.time() - 3600
    os.utime(stale, (old, old))
    removed = remove_leftovers(tmp_path)
    assert sorted(removed) == sorted([dead, stale])
    assert live.is_dir() and fresh.is_file()


torch = pytest.importorskip("torch")


def test_info_shows_how_the_run_ended(tmp_path: Path) -> None:
    from hpuprof.capture.profiler import HPUProfiler

    with (
        pytest.raises(RuntimeError),
        HPUProfiler(tmp_path, backend="cpu", perfetto=False),
    ):
        torch.mm(torch.ones(4, 4), torch.ones(4, 4))
        raise RuntimeError("boom")
    manifest = read_manifest(tmp_path)
    assert manifest["end_state"] == "exception"
    assert manifest["ends"]["0"]["exception"] == "RuntimeError"
    done = _hpuprof("info", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "run ended:   exception (RuntimeError: boom)" in done.stdout
    assert orjson.loads(_hpuprof("info", "--json", str(tmp_path)).stdout)["run_end"]["state"] == (
        "exception"
    )


def _hpuprof(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from hpuprof.cli.main import run; run()", *args],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_dashboards_runs_page_shows_how_the_run_ended(tmp_path: Path) -> None:
    pytest.importorskip("dash")
    from hpudash.data import DataStore
    from hpudash.pages import runs

    from hpuprof.capture.profiler import HPUProfiler

    with (
        pytest.raises(RuntimeError),
        HPUProfiler(tmp_path / "crashed", backend="cpu", perfetto=False),
    ):
        torch.mm(torch.ones(4, 4), torch.ones(4, 4))
        raise RuntimeError("boom")
    (tmp_path / "plain.json").write_bytes(b'{"traceEvents": []}')  # a trace file: no ending
    rows = {r["run"]: r for r in runs.run_rows(DataStore(tmp_path, disk=False), budget_s=0)}
    assert rows["crashed"]["ended"] == "exception (RuntimeError: boom)"  # as `hpuprof info` says
    assert rows["plain.json"]["ended"] is None
    assert ("ended", "Run ended") in runs.COLUMNS
