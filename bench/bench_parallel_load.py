"""One large JSON trace loaded on one core and on two, in the same run: MB/s and the speedup.

Each load runs in a fresh subprocess (as `hpuprof` runs: heap tuned, no load cache) pinned to
its cores: one thread on one core, then `--threads` threads on as many cores, alternated for
`--rounds` rounds so that a busy machine slows both alike (`--quiet-wait S`: each run waits up
to S seconds for an idle machine). Prints every run (wall and CPU seconds, MB/s, peak RSS, the
machine's load average before it, the CPU seconds other processes took during it), then the
median and best of each, the median of the runs that had the machine to themselves (others
under 5% of its cores), and the speedups. Targets (issue 12): at least 1.6x on 2
cores and at least 250 MB/s on the 2 M-event synthetic trace.

    python bench/bench_parallel_load.py [TRACE.json] [--events 2000000] [--rounds 3]

Without TRACE, the synthetic trace of bench/gen_synthetic_trace.py is generated in a temp dir.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_CHILD = r"""
import json, os, resource, sys, time
os.sched_setaffinity(0, {int(c) for c in sys.argv[3].split(",")})
path, threads = sys.argv[1], int(sys.argv[2])
import hpuprof
from hpuprof.trace.heap import tune_process
from hpuprof.trace.kineto_json import read_kineto_json
tune_process()  # as the `hpuprof` command does in its own process
t0, c0, m0 = time.perf_counter(), time.process_time(), time.thread_time()
rows = len(read_kineto_json(path, threads=threads).events)
seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
main = time.thread_time() - m0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"seconds": seconds, "cpu": cpu, "main": main, "rows": rows, "peak": peak}))
"""


def _load_average() -> float:
    return os.getloadavg()[0]


def _busy_seconds() -> float:
    """CPU seconds the whole machine has spent busy since boot (all processes, Linux)."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            fields = [int(v) for v in stat.readline().split()[1:]]
    except (OSError, ValueError):
        return float("nan")
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    guest = sum(fields[8:10])  # counted in user and nice already
    return (sum(fields) - idle - guest) / os.sysconf("SC_CLK_TCK")


def _wait_for_quiet(cores: int, limit: float) -> None:
    """Wait (at most `limit` s) for a second in which other processes use under 5% of the
    cores, so that a run starts on an idle machine where one is to be had."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        before = _busy_seconds()
        time.sleep(1.0)
        if _busy_seconds() - before < 0.05 * cores:
            return


def _run(trace: Path, threads: int, cores: list[int]) -> dict[str, float]:
    load = _load_average()
    args = [sys.executable, "-c", _CHILD, str(trace), str(threads), ",".join(map(str, cores))]
    busy, own = _busy_seconds(), _children_cpu()
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    busy, own = _busy_seconds() - busy, _children_cpu() - own
    result = dict(json.loads(out.strip().splitlines()[-1]))
    result["load"] = load
    # the CPU the other processes took meanwhile (the child's, start-up included, taken out):
    # on a shared machine, the runs to trust are those where this is near 0
    result["others"] = max(busy - own, 0.0)
    return result


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _quiet(run: dict[str, float], cores: int) -> bool:
    """Whether the other processes took under 5% of the machine's cores during `run`."""
    return run["others"] < 0.05 * run["seconds"] * cores


def main() -> None:
    parser = argparse.ArgumentParser(description="parallel chunk scan benchmark")
    parser.add_argument("trace", nargs="?", type=Path)
    parser.add_argument("--events", type=int, default=2_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--quiet-wait",
        type=float,
        default=0.0,
        help="before each run, wait up to this many seconds for an idle machine",
    )
    options = parser.parse_args()
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < options.threads:
        sys.exit(f"needs {options.threads} cores, this process may use {len(cores)}")
    with tempfile.TemporaryDirectory() as scratch:
        sys.path.insert(0, str(Path(__file__).parent))
        from gen_synthetic_trace import trace_or_generated

        trace = trace_or_generated(options.trace, scratch, options.events)
        mb = trace.stat().st_size / 1e6
        print(f"trace: {trace} ({mb:,.1f} MB); {os.cpu_count()} CPUs, load average now "
              f"{_load_average():.1f}")  # fmt: skip
        runs: dict[int, list[dict[str, float]]] = {1: [], options.threads: []}
        for _ in range(options.rounds):
            for threads in (1, options.threads):
                _wait_for_quiet(len(cores), options.quiet_wait)
                result = _run(trace, threads, cores[:threads])
                runs[threads].append(result)
                print(
                    f"  {threads} thread(s) on {threads} core(s): {result['seconds']:6.2f} s "
                    f"{mb / result['seconds']:6.1f} MB/s (CPU {result['cpu']:.2f} s, main "
                    f"thread {result['main']:.2f} s), peak RSS "
                    f"{result['peak'] / 1e6:,.0f} MB, load average before {result['load']:.1f}, "
                    f"other processes {result['others']:.2f} CPU-s meanwhile"
                )
        one, many = runs[1], runs[options.threads]
        quiet_one = [r for r in one if _quiet(r, len(cores))]
        quiet_many = [r for r in many if _quiet(r, len(cores))]
        for label, pick, a_runs, b_runs in (
            ("median", statistics.median, one, many),
            ("best", min, one, many),
            ("quiet median", statistics.median, quiet_one, quiet_many),
        ):
            if not a_runs or not b_runs:
                print(f"{label:>6}: no run of each kind had the machine to itself")
                continue
            a, b = pick(r["seconds"] for r in a_runs), pick(r["seconds"] for r in b_runs)
            print(
                f"{label:>6}: 1 core {mb / a:6.1f} MB/s ({a:.2f} s), {options.threads} cores "
                f"{mb / b:6.1f} MB/s ({b:.2f} s): speedup {a / b:.2f}x"
                + (f" ({len(a_runs)} and {len(b_runs)} runs)" if a_runs is quiet_one else "")
            )
        # On a busy machine the wall clock holds the waits for a core. The CPU seconds do
        # not: a load on n dedicated cores takes at least its main thread's CPU time and its
        # total CPU time / n, so max(main, total / n) is the wall time it would have there.
        a = statistics.median(r["cpu"] for r in one)
        b = statistics.median(max(r["main"], r["cpu"] / options.threads) for r in many)
        print(
            f"CPU-time model (median; for a machine this busy): 1 core {mb / a:6.1f} MB/s "
            f"({a:.2f} s), {options.threads} cores {mb / b:6.1f} MB/s ({b:.2f} s): {a / b:.2f}x"
        )
        print(f"rows: {int(one[0]['rows']):,} (both: {one[0]['rows'] == many[0]['rows']})")


if __name__ == "__main__":
    main()
