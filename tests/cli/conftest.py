"""Fixtures of the CLI tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private, empty hpuprof cache directory for the test (HPUPROF_CACHE_DIR)."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("HPUPROF_CACHE_DIR", str(cache))
    return cache
