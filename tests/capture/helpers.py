"""Shared helpers for the capture tests: run a snippet in a child Python, read a trace."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson

REPO = Path(__file__).resolve().parents[2]


def child_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(REPO / "runtime")])
    env.update(extra)
    return env


def spawn(code: str, **extra: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", code],
        env=child_env(**extra),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def read_trace(path: Path) -> dict[str, Any]:
    data = orjson.loads(path.read_bytes())
    assert isinstance(data, dict)
    return data


def names(trace: dict[str, Any], cat: str | None = None) -> list[str]:
    return [e["name"] for e in trace["traceEvents"] if cat is None or e.get("cat") == cat]


def try_load(path: Path) -> Any:
    """`hpuprof.load(path)`; skips the calling test while the loader has not landed."""
    import pytest

    try:
        import hpuprof.trace.load
    except ImportError:
        pytest.skip("hpuprof.load is not available yet")
    import hpuprof

    return hpuprof.load(path)
