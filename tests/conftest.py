"""Shared fixtures. Real traces come from ../shared/traces when present; tests skip cleanly when not."""

from __future__ import annotations

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
