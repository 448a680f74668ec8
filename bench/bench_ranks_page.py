"""The dashboard's Ranks page on a many-rank run: rank by rank against the whole run at once.

Generates a synthetic run (bench/gen_multi_rank.py) in a scratch directory, then measures, each
in a fresh process with a cold load cache and no dashboard disk cache:

1. the Ranks page's view, `DataStore.ranks_view` (each rank file loaded and analysed alone,
   one after another: the per-rank summaries of issue 12);
2. baseline: the whole run's view, `DataStore.view` (every rank loaded into one trace and
   analysed: what the page read before).

Prints wall time and peak RSS of each and their ratios, and checks that both give the same
ranks report. Cleans up unless --keep.

    python bench/bench_ranks_page.py [--ranks 16] [--mb 20]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
MB = 1 << 20

_VIEW = r"""
import json, resource, sys, time
from pathlib import Path
from hpudash.data import DataStore
store = DataStore(Path(sys.argv[1]), disk=False)
t0 = time.perf_counter()
doc = getattr(store, sys.argv[2])("run")
wall = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"wall_s": wall, "peak_rss": peak, "ranks": doc["data"]["ranks"]}))
"""


def measure(root: Path, method: str, scratch: Path) -> dict:
    cache = Path(tempfile.mkdtemp(prefix=f"cache-{method}-", dir=scratch))
    env = {
        **os.environ,
        "HPUPROF_CACHE_DIR": str(cache),
        "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "dashboards")]),
    }
    done = subprocess.run(
        [sys.executable, "-c", _VIEW, str(root), method],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        sys.exit(f"{method} failed:\n{done.stderr[-2000:]}")
    result: dict = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=16)
    parser.add_argument("--mb", type=float, default=20.0)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="bench-ranks-page-"))
    try:
        run = scratch / "root" / "run"
        subprocess.run(
            [
                sys.executable,
                str(BENCH / "gen_multi_rank.py"),
                str(run),
                "--ranks",
                str(args.ranks),
                "--mb",
                str(args.mb),
                "--straggler",
                str(args.ranks // 2),
            ],
            check=True,
            cwd=BENCH,
        )
        size = sum(p.stat().st_size for p in run.rglob("*") if p.is_file())
        load = os.getloadavg()[0]
        print(
            f"run: {args.ranks} ranks, {size / MB:.0f} MB of Kineto JSON; load average {load:.1f}"
        )
        by_rank = measure(scratch / "root", "ranks_view", scratch)
        whole = measure(scratch / "root", "view", scratch)
        same = by_rank["ranks"] == whole["ranks"]
        for name, r in (("Ranks page, rank by rank", by_rank), ("baseline: whole run", whole)):
            print(f"{name:28s} {r['wall_s']:7.1f} s   peak RSS {r['peak_rss'] / MB:7.0f} MB")
        print(
            f"rank by rank vs whole run: wall x{by_rank['wall_s'] / whole['wall_s']:.2f}, "
            f"peak RSS x{by_rank['peak_rss'] / whole['peak_rss']:.2f}; same ranks report: {same}"
        )
        print(
            json.dumps(
                {
                    "ranks": args.ranks,
                    "mb": size / MB,
                    "load_avg": load,
                    "by_rank": {k: v for k, v in by_rank.items() if k != "ranks"},
                    "whole": {k: v for k, v in whole.items() if k != "ranks"},
                    "same_report": same,
                    "self_peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                }
            )
        )
        if not same:
            sys.exit("the two views disagree")
    finally:
        if args.keep:
            print(f"kept {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
