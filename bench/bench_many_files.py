"""`hpuprof info DIR` on a folder of many small traces, beside a same-run baseline (issue 27).

    python bench/bench_many_files.py [--files 10000] [--events 20] [--runs 1]

Generates `--files` small Kineto JSON traces (one rank each, `--events` CPU ops) in a temporary
directory, then times, alternating in each round:

- `read bytes`: a child of this interpreter that merely reads every file's bytes (the floor of
  any command that must look at every file), plus `import pandas` (the floor of any command that
  builds the events table);
- `info (no cache)`: `hpuprof info DIR` with a fresh, empty cache directory (a first run: every
  file scanned and its cache entry written);
- `info (cached)`: `hpuprof info DIR` again with the cache that run filled.

Prints each median's wall seconds, CPU seconds (user + system of the command and its worker
processes), milliseconds per file and wall ratio to the baseline, with the load average before
and after (the machine is shared: compare ratios). Target (issue 27): 10,000 small traces in at
most 60 s, with a progress bar (on stderr).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_S_PER_10K = 60.0

_READ_ALL = (
    "import pandas, sys, pathlib\n"
    "n = sum(len(p.read_bytes()) for p in sorted(pathlib.Path(sys.argv[1]).iterdir()))\n"
)


def small_trace(rank: int, events: int) -> dict[str, object]:
    """A small Kineto trace of `events` back-to-back CPU ops on one thread of rank `rank`."""
    ops = [
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": f"aten::op{i % 5}",
            "pid": 1,
            "tid": 1,
            "ts": 1000.0 + 10.0 * i,
            "dur": 8.0,
            "args": {"External id": i + 1},
        }
        for i in range(events)
    ]
    return {"distributedInfo": {"rank": rank}, "traceEvents": ops}


def write_traces(directory: Path, files: int, events: int) -> None:
    for rank in range(files):
        text = json.dumps(small_trace(rank, events))
        (directory / f"worker-{rank:05d}.pt.trace.json").write_text(text)


def _hpuprof_argv() -> list[str]:
    script = Path(sys.executable).with_name("hpuprof")
    if script.exists():
        return [sys.executable, str(script)]
    return [sys.executable, "-c", "from hpuprof.cli.main import run; run()"]


def _timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, with the command's own children) of `argv`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--events", type=int, default=20)
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-many-") as tmp:
        root = Path(tmp)
        traces = root / "traces"
        traces.mkdir()
        write_traces(traces, args.files, args.events)
        env = {**os.environ, "HPUPROF_CACHE_DIR": str(root / "cache")}
        info = [*_hpuprof_argv(), "info", str(traces)]
        times: dict[str, list[tuple[float, float]]] = {
            "read bytes": [],
            "info (no cache)": [],
            "info (cached)": [],
        }
        load_before = os.getloadavg()[0]
        for _ in range(args.runs):
            shutil.rmtree(root / "cache", ignore_errors=True)
            times["read bytes"].append(_timed([sys.executable, "-c", _READ_ALL, str(traces)], env))
            times["info (no cache)"].append(_timed(info, env))
            times["info (cached)"].append(_timed(info, env))

    base = statistics.median(wall for wall, _ in times["read bytes"])
    print(f"{args.files:,} traces of {args.events} events, median of {args.runs} run(s)")
    print(f"load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after")
    print(f"{'':<18}{'wall s':>9}{'CPU s':>9}{'ms/file':>9}{'x base':>8}")
    for name, samples in times.items():
        wall = statistics.median(w for w, _ in samples)
        cpu = statistics.median(c for _, c in samples)
        per_file = 1000 * wall / args.files
        print(f"{name:<18}{wall:>9.2f}{cpu:>9.2f}{per_file:>9.3f}{wall / base:>8.1f}")
    target = TARGET_S_PER_10K * args.files / 10_000
    print(f"target: at most {target:.1f} s for {args.files:,} files (60 s per 10,000)")


if __name__ == "__main__":
    main()
