"""run.json: per-rank merge, a fresh run replaces an old one, env flags recorded."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from hpuprof.capture.run_dir import RunPaths, read_manifest, relevant_env, update_manifest


def test_rank_paths(tmp_path: Path) -> None:
    paths = RunPaths(tmp_path, "train", 3)
    assert paths.rel(paths.trace) == "traces/train-rank3.pt.trace.json"
    assert paths.rel(paths.perfetto) == "perfetto/train-rank3.perfetto-trace"
    assert paths.rel(paths.metrics) == "metrics/train-rank3.json"


def test_two_ranks_merge_and_rerun_replaces(tmp_path: Path) -> None:
    update_manifest(
        tmp_path, {"ranks": [0], "traces": ["traces/a-rank0.pt.trace.json"]}, fresh_for_rank=0
    )
    update_manifest(
        tmp_path, {"ranks": [1], "traces": ["traces/a-rank1.pt.trace.json"]}, fresh_for_rank=1
    )
    manifest = read_manifest(tmp_path)
    assert manifest["ranks"] == [0, 1]
    assert manifest["world_size"] == 2
    assert len(manifest["traces"]) == 2
    update_manifest(
        tmp_path, {"ranks": [0], "traces": ["traces/b-rank0.pt.trace.json"]}, fresh_for_rank=0
    )
    assert read_manifest(tmp_path)["traces"] == ["traces/b-rank0.pt.trace.json"]


def test_remove_incomplete(tmp_path: Path) -> None:
    update_manifest(tmp_path, {"incomplete": ["traces/x.incomplete.json"]})
    update_manifest(
        tmp_path, {"status": "complete"}, remove={"incomplete": ["traces/x.incomplete.json"]}
    )
    assert read_manifest(tmp_path)["incomplete"] == []


def test_relevant_env(monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"PT_HPU_LAZY_MODE": "1", "HABANA_PROFILE": "1", "HOME": "/root", "RANK": "2"}
    assert relevant_env(env) == {"HABANA_PROFILE": "1", "PT_HPU_LAZY_MODE": "1", "RANK": "2"}


def test_a_manifest_update_inside_an_update_does_not_wait_on_itself(tmp_path: Path) -> None:
    """A SIGTERM handler writes the run while the code it interrupted holds the manifest lock
    (found by the crash trials: a second flock of the same file waited forever)."""
    from hpuprof.capture.run_dir import _locked

    update_manifest(tmp_path, {"status": "running"})
    done = threading.Event()

    def nested() -> None:
        with _locked(tmp_path):
            update_manifest(tmp_path, {"status": "interrupted: SIGTERM"})
        done.set()

    worker = threading.Thread(target=nested, daemon=True)
    worker.start()
    assert done.wait(30), "the nested update waited on its own lock"
    assert read_manifest(tmp_path)["status"] == "interrupted: SIGTERM"
