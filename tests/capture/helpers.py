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


# a CPU training loop under HPUProfiler(out) that prints "ready" after step 5, then runs on
RECORDING_LOOP = """
import signal, sys, torch
# a foreground python's SIGINT, however the test runs (a background job inherits it ignored)
signal.signal(signal.SIGINT, signal.default_int_handler)
from hpuprof.capture.profiler import HPUProfiler
from hpuprof.capture.schedule import schedule
prof = HPUProfiler(sys.argv[1] if len(sys.argv) > 1 else {out!r}, backend="cpu",
                   schedule=schedule(wait=0, warmup=0, active=1))
prof.start()
x = torch.ones(8, 8)
for i in range(100000):
    x = torch.mm(x, x) * 0.1
    prof.step()
    if i == 5:
        print("ready", flush=True)
    {fail}
"""


def run_until_ready(out: Path, fail: str = "") -> subprocess.Popen[bytes]:
    """A child recording `RECORDING_LOOP` into `out`, once it printed "ready" (step 5 done);
    `fail`: a line run after each step."""
    child = spawn(RECORDING_LOOP.format(out=str(out), fail=fail))
    assert child.stdout is not None
    line = child.stdout.readline()
    assert line.strip() == b"ready", child.stderr.read() if child.stderr else line
    return child
