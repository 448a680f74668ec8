"""Shared pieces of the dashboard tests: hostile names and a run directory as `record` writes it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import orjson

from tests.dashboard.synth import synthetic_trace, write_chrome_json

HOSTILE = "<img src=x onerror=alert(1)>aten::evil"
"""An op name that would run script if any page rendered trace strings as HTML."""
HOSTILE_FILE = "<img src=x onerror=alert(2)>.pt.trace.json"
"""A trace file name (run key) that would run script if rendered as HTML."""


def write_run(run: Path, n_events: int, ranks: int = 1) -> Path:
    """A run directory as `hpuprof record` leaves it: rank traces and a run.json manifest."""
    (run / "traces").mkdir(parents=True)
    trace = synthetic_trace(n_events, ranks=ranks)
    rels = []
    for r in range(ranks):
        rel = f"traces/train-rank{r}.pt.trace.json"
        write_chrome_json(trace, run / rel, rank=r)
        rels.append(rel)
    (run / "run.json").write_bytes(
        orjson.dumps({"hpuprof_run": 1, "traces": rels, "ranks": list(range(ranks))})
    )
    return run


CLI = [sys.executable, "-c", "from hpuprof.cli.main import run; run()"]
"""`hpuprof` of this interpreter (the console script may not be on PATH)."""


@contextmanager
def dashboard_process(root: Path, work: Path, threads: int = 4) -> Iterator[tuple[int, Path]]:
    """`hpuprof dashboard ROOT` as a user starts it (waitress, its own process) on a free
    127.0.0.1 port, caches under `work`; yields (port, file of its output)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    work.mkdir(parents=True, exist_ok=True)
    log = work / "server.log"
    env = os.environ | {"HPUDASH_CACHE_DIR": str(work / "cache")}
    cmd = [*CLI, "dashboard", str(root), "--port", str(port), "--threads", str(threads)]
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        yield port, log
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
