"""Benchmark: all analysis reports on the 2 M-event synthetic trace, beside its load time.

Prints the load time (the baseline measured in the same run), the time of `analyze(trace)`
with every report, and the ratio analysis/load. Target: analysis <= 5 s after load, one core.

    python bench/bench_analysis.py [--events 2000000] [--trace PATH]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=2_000_000)
    parser.add_argument("--trace", type=Path, default=None, help="Reuse this trace file.")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import hpuprof
    from hpuprof.analysis import AnalysisOptions, analyze
    from hpuprof.analysis.registry import default_report_names, spec

    tmp = tempfile.TemporaryDirectory()
    path = args.trace or Path(tmp.name) / f"synthetic_{args.events}.json.gz"
    if not path.exists():
        gen = Path(__file__).with_name("gen_synthetic_trace.py")
        subprocess.run(
            [sys.executable, str(gen), str(path), "--events", str(args.events)], check=True
        )
    t0 = time.perf_counter()
    trace = hpuprof.load(path, cache=False)
    load_s = time.perf_counter() - t0
    t1, c1 = time.perf_counter(), time.process_time()
    report = analyze(trace)
    analyze_s = time.perf_counter() - t1
    analyze_cpu = time.process_time() - c1
    per: dict[str, tuple[float, float]] = {}

    for name in default_report_names():
        t, c = time.perf_counter(), time.process_time()
        spec(name).load()(trace, AnalysisOptions())
        per[name] = (time.perf_counter() - t, time.process_time() - c)
    print(f"trace: {path.name}, {len(trace.events):,} events")
    print(f"load (baseline):            {load_s:7.2f} s")
    print(f"analyze, all reports:       {analyze_s:7.2f} s   (target <= 5 s)")
    print(f"  (CPU time of analyze:     {analyze_cpu:7.2f} s; wall can grow on a busy machine)")
    for name, (wall, cpu) in per.items():
        print(f"  {name:12}              {wall:7.2f} s   (CPU {cpu:5.2f} s)")
    print(f"ratio analyze / load:       {analyze_s / load_s:7.2f}")
    print(f"findings: {len(report.findings)}")
    return 0 if analyze_s <= 5.0 else 1


if __name__ == "__main__":
    sys.exit(main())
