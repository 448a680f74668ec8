"""Gaudi hardware-profiler CSV load speed (MB/s), beside pandas.read_csv of the same file.

The file is the shared Gaudi 3 trace (../shared/traces/gaudi, 276 events) replicated to
`--events` rows: each copy shifted past the one before in time (by the trace's span plus a
gap), the rows unchanged otherwise, so the mix of BEGIN / END / INSTANT / COUNTER rows, engines,
names and the long recipe-name column is the real one's. Our load is the whole way to the
normalized `Trace` (pairing, lanes, counters, nesting, derived columns; no load cache); the
baseline only parses the CSV into a DataFrame. Rounds alternate A / B in the same run; the
ratio is what to compare across machines. Target (issue 23): >= 100 MB/s (wall, with the
default load threads: `HPUPROF_LOAD_THREADS` and Arrow's threads as a user's load gets them).
Both wall and CPU time (every thread of the process) are printed, with the load average
before and after: on a shared machine the wall figure moves with the other processes' load,
the CPU figure much less.

    python bench/bench_hw_csv.py [--events 1000000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import warnings
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path

GAUDI = Path(__file__).resolve().parents[2] / "shared" / "traces" / "gaudi"
REAL = GAUDI / "gaudi3-debug_hw_prof_accel0_001.csv"


def replicate(source: Path, events: int, target: Path) -> int:
    """Write `events` rows made of shifted copies of `source`'s rows; returns the bytes."""
    header, *rows = source.read_text().splitlines()
    fields = [row.split(",") for row in rows]
    stamps = [Decimal(f[4]) for f in fields]
    shift = max(stamps) - min(stamps) + Decimal("1.000000")
    with open(target, "w") as out:
        out.write(header + "\n")
        written = copy = 0
        while written < events:
            offset = shift * copy
            for f, stamp in zip(fields, stamps, strict=True):
                if written == events:
                    break
                f[4] = f"{stamp + offset:.6f}"
                out.write(",".join(f) + "\n")
                written += 1
            copy += 1
    return target.stat().st_size


def _timed(work: Callable[[], object]) -> tuple[float, float]:
    """(wall, CPU of this process: every thread) seconds of `work()`."""
    wall, cpu = time.perf_counter(), time.process_time()
    work()
    return time.perf_counter() - wall, time.process_time() - cpu


def _load() -> str:
    """The 1, 5 and 15 minute load averages ("?" where the OS does not say)."""
    try:
        return " ".join(f"{v:.1f}" for v in os.getloadavg())
    except OSError:
        return "?"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    if not REAL.exists():
        print(f"skipped: {REAL} is not present")
        return 0
    import pandas as pd

    from hpuprof.trace.hw_profiler_csv import read_hw_profiler_csv

    warnings.simplefilter("ignore")  # the cut last copy's unmatched BEGIN, said once per load
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "hw_1m.csv"
        size = replicate(REAL, options.events, path)
        mb = size / 1e6
        print(f"{options.events} events, {mb:.1f} MB; load average {_load()}")
        read_hw_profiler_csv(REAL)  # warm-up: the modules a load imports on first use
        pd.read_csv(REAL, low_memory=False)
        ours: list[tuple[float, float]] = []
        pandas: list[tuple[float, float]] = []
        for _ in range(options.rounds):
            ours.append(_timed(lambda: read_hw_profiler_csv(path)))
            pandas.append(_timed(lambda: pd.read_csv(path, low_memory=False)))
        trace = read_hw_profiler_csv(path)
        kernels = int((trace.events["kind"] == "kernel").sum())
        for label, runs in (
            (f"hpuprof load (to Trace, {kernels} slices)", ours),
            ("pandas.read_csv (parse only)", pandas),
        ):
            wall, cpu = min(r[0] for r in runs), min(r[1] for r in runs)
            print(f"{label:42s} wall {wall:6.2f} s = {mb / wall:5.0f} MB/s; "
                  f"CPU {cpu:6.2f} s = {mb / cpu:5.0f} MB/s")  # fmt: skip
        ratio = min(r[0] for r in pandas) / min(r[0] for r in ours)
        cpu_ratio = min(r[1] for r in pandas) / min(r[1] for r in ours)
        print(
            f"ratio: hpuprof {ratio:.2f}x pandas' speed (wall), {cpu_ratio:.2f}x (CPU); "
            f"target: >= 100 MB/s; load average {_load()}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
