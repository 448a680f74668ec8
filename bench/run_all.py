"""Run every benchmark in turn (`make bench`), each printing its figure beside its baseline.

The full-size runs need a few GB of RAM and several minutes; `--quick` uses small inputs to
check that every benchmark still runs. Figures from a shared machine are noisy: read the
ratios, which each script measures side by side in one run.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent

FULL: tuple[tuple[str, ...], ...] = (
    ("bench_load.py", "--events", "2000000"),
    ("bench_parallel_load.py", "--events", "2000000"),
    ("bench_analysis.py", "--events", "2000000"),
    ("bench_dashboard.py", "--events", "1000000"),
    ("bench_dashboard_load.py",),
    ("bench_perfetto.py",),
    ("bench_emulator.py",),
    ("bench_extensions.py",),
    ("bench_gpu_migration.py",),
    ("bench_capture.py",),
    ("bench_distributed.py", "--ranks", "64", "--mb", "100", "--workers", "2"),
    ("bench_ranks_page.py", "--ranks", "16", "--mb", "20"),
    ("bench_predict.py",),
    ("bench_capture_windows.py",),
    ("bench_startup.py",),
)
QUICK: tuple[tuple[str, ...], ...] = (
    ("bench_load.py", "--events", "40000"),
    ("bench_parallel_load.py", "--events", "40000", "--rounds", "1"),
    ("bench_analysis.py", "--events", "40000"),
    ("bench_dashboard.py", "--events", "40000"),
    (
        "bench_dashboard_load.py",
        "--clients",
        "10",
        "--seconds",
        "10",
        "--runs",
        "3",
        "--events",
        "5000",
    ),
    ("bench_perfetto.py", "--events", "20000"),
    ("bench_emulator.py", "--ops", "2000", "--steps", "5", "--repeats", "3"),
    ("bench_extensions.py", "--calls", "20", "--repeats", "2"),
    ("bench_gpu_migration.py", "--steps", "5", "--repeats", "3"),
    ("bench_capture.py", "--ops", "20000", "--repeat", "2"),
    ("bench_distributed.py", "--ranks", "4", "--mb", "5", "--hta-ranks", "2"),
    ("bench_ranks_page.py", "--ranks", "4", "--mb", "2"),
    ("bench_predict.py", "--layers", "2", "--seq", "256"),
    ("bench_capture_windows.py", "--steps", "20", "--stepless-ops", "5000", "--repeat", "1"),
    ("bench_startup.py", "--runs", "3"),
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small inputs: a smoke run")
    args = parser.parse_args(argv)
    failed = []
    for script, *rest in QUICK if args.quick else FULL:
        print(f"\n=== {script} {' '.join(rest)}", flush=True)
        done = subprocess.run([sys.executable, str(BENCH / script), *rest], check=False)
        if done.returncode:
            failed.append(script)
    if failed:
        print(f"\nfailed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
