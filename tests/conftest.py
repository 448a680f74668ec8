"""Shared fixtures. Real traces come from ../shared/traces when present; tests skip cleanly when not."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_TRACES = REPO_ROOT.parent / "shared" / "traces" / "kineto"
SAMPLE_TRACES = REPO_ROOT / "sample_traces"


@pytest.fixture(scope="session")
def shared_kineto_dir() -> Path:
    """The real torch.profiler traces of ../shared/traces/kineto (skips when absent)."""
    if not SHARED_TRACES.is_dir():
        pytest.skip("../shared/traces/kineto is not present")
    return SHARED_TRACES


def shared_trace_files() -> list[Path]:
    """Every Kineto trace file under ../shared (for parametrize); empty when absent."""
    if not SHARED_TRACES.is_dir():
        return []
    return sorted(p for p in SHARED_TRACES.rglob("*.json*") if p.is_file())


@pytest.fixture(autouse=True, scope="session")
def _isolated_load_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Point the load cache at a per-session temp dir: tests never write into ../shared or ~."""
    mp = pytest.MonkeyPatch()
    mp.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))
    mp.delenv("HPUPROF_CACHE_DIR", raising=False)
    yield
    mp.undo()


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private, empty hpuprof cache directory for the test (HPUPROF_CACHE_DIR)."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("HPUPROF_CACHE_DIR", str(cache))
    return cache
