"""Load benchmark: JSON -> Trace MB/s for hpuprof vs the naive baseline, peak RSS, cached reopen.

Each measurement runs in a fresh subprocess (peak RSS from `ru_maxrss` of that process), pinned
to one core when possible (`--threads N`: to N cores, hpuprof scanning with N threads). Prints the figures and their ratio in one run: wall-clock figures,
and beside them CPU-time figures (on a shared, busy machine the wall clock includes waiting for
the core). The cached reopen is a second `hpuprof.load` of the same file (the memory-mapped
load cache, written to a scratch `XDG_CACHE_HOME`); the Parquet reopen (`save_parquet` file) is
shown beside it.

    python bench/bench_load.py [TRACE.json] [--events 2000000] [--against DIR --rounds 3]

Without TRACE, a synthetic trace is generated (bench/gen_synthetic_trace.py) in a temp dir.
`--against DIR`: the hpuprof load of another checkout of this repository (DIR first on
PYTHONPATH, its compiled scanner built there) alternated with this one's for `--rounds` rounds
(before, after, after, before, ...), their medians (MB/s, peak RSS / JSON size) side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

_CHILD = r"""
import json, os, resource, sys, time
if hasattr(os, "sched_setaffinity"):
    try:
        cores = int(os.environ.get("HPUPROF_LOAD_THREADS", "1"))
        os.sched_setaffinity(0, set(sorted(os.sched_getaffinity(0))[:cores]))
    except OSError:
        pass
mode, path = sys.argv[1], sys.argv[2]
import pandas as pd
import hpuprof.trace.kineto_json, hpuprof.trace.parquet
import hpuprof
from hpuprof.trace.heap import tune_process
tune_process()  # as the `hpuprof` command does in its own process
idle = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
t0, c0 = time.perf_counter(), time.process_time()
if mode == "hpuprof":
    rows = len(hpuprof.load(path, cache=False).events)
elif mode in ("cache", "cached"):
    rows = len(hpuprof.load(path).events)
elif mode == "naive":
    with open(path) as handle:
        doc = json.load(handle)
    rows = len(pd.DataFrame(doc["traceEvents"]))
elif mode == "save":
    trace = hpuprof.trace.kineto_json.read_kineto_json(path)
    hpuprof.trace.parquet.save_parquet(trace, sys.argv[3])
    rows = len(trace.events)
elif mode == "reopen":
    rows = len(hpuprof.trace.parquet.load_parquet(sys.argv[3]).events)
seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"seconds": seconds, "cpu": cpu, "rows": rows, "peak": peak, "idle": idle,
                  "package": os.path.dirname(hpuprof.__file__)}))
"""


_THREADS = 1


def _run(
    mode: str, trace: Path, extra: str = "", cache: str = "", checkout: Path | None = None
) -> dict[str, Any]:
    args = [sys.executable, "-c", _CHILD, mode, str(trace)] + ([extra] if extra else [])
    env = {**os.environ, "HPUPROF_LOAD_THREADS": str(_THREADS)}
    if cache:
        env["XDG_CACHE_HOME"] = cache
    if checkout is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(checkout), env.get("PYTHONPATH", "")])
    # run in the checkout loaded: `python -c` puts the working directory first on sys.path
    where = str(checkout or Path(__file__).resolve().parents[1])
    done = subprocess.run(args, check=True, capture_output=True, text=True, env=env, cwd=where)
    out = done.stdout
    return dict(json.loads(out.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description="hpuprof load benchmark")
    parser.add_argument("trace", nargs="?", type=Path)
    parser.add_argument("--events", type=int, default=2_000_000)
    parser.add_argument("--skip-naive", action="store_true", help="skip the slow baseline")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="each load pinned to this many cores, hpuprof scanning with as many threads",
    )
    parser.add_argument("--against", type=Path, help="another checkout, loaded alternately")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of --against")
    options = parser.parse_args()
    global _THREADS
    _THREADS = max(options.threads, 1)
    with tempfile.TemporaryDirectory() as scratch:
        sys.path.insert(0, str(Path(__file__).parent))
        from gen_synthetic_trace import trace_or_generated

        trace = trace_or_generated(options.trace, scratch, options.events)
        size = os.path.getsize(trace)
        mb = size / 1e6
        print(f"trace: {trace} ({mb:,.1f} MB); each load on {_THREADS} core(s)")
        if options.against is not None:
            _compare(trace, options.against, options.rounds)
        ours = _run("hpuprof", trace)
        print(
            f"hpuprof   JSON -> Trace: {mb / ours['seconds']:8.1f} MB/s  ({ours['seconds']:.2f} s, "
            f"{ours['rows']:,} event rows; CPU time {mb / ours['cpu']:.1f} MB/s), peak RSS "
            f"{ours['peak'] / size:.2f}x JSON size ({ours['peak'] / 1e6:,.0f} MB; "
            f"{ours['idle'] / 1e6:,.0f} MB after imports)"
        )
        if not options.skip_naive:
            naive = _run("naive", trace)
            print(
                f"baseline  json.load + pd.DataFrame: {mb / naive['seconds']:8.1f} MB/s "
                f"({naive['seconds']:.2f} s; CPU time {mb / naive['cpu']:.1f} MB/s), peak RSS "
                f"{naive['peak'] / size:.2f}x JSON size ({naive['peak'] / 1e6:,.0f} MB)"
            )
            print(
                f"ratio     hpuprof / baseline: {naive['seconds'] / ours['seconds']:.1f}x faster "
                f"(CPU time {naive['cpu'] / ours['cpu']:.1f}x)"
            )
        cache_home = str(Path(scratch) / "xdg")
        _run("cache", trace, cache=cache_home)
        reopen = _run("cached", trace, cache=cache_home)
        print(
            f"cached reopen (load cache): {reopen['rows'] / reopen['seconds'] / 1e6:8.2f} M events/s "
            f"({reopen['seconds']:.3f} s; CPU time {reopen['rows'] / reopen['cpu'] / 1e6:.2f} "
            f"M events/s), {ours['seconds'] / reopen['seconds']:.0f}x faster than the JSON load, "
            f"peak RSS {reopen['peak'] / 1e6:,.0f} MB"
        )
        parquet = str(Path(scratch) / "trace.parquet")
        _run("save", trace, parquet)
        again = _run("reopen", trace, parquet)
        print(
            f"Parquet reopen (save_parquet): {again['rows'] / again['seconds'] / 1e6:8.2f} M events/s "
            f"({again['seconds']:.2f} s)"
        )


def _compare(trace: Path, against: Path, rounds: int) -> None:
    """The hpuprof load of `against` (before) and of this checkout (after), alternated."""
    size = os.path.getsize(trace)
    runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
    for i in range(rounds):
        order = ("before", "after") if i % 2 == 0 else ("after", "before")
        for side in order:
            result = _run("hpuprof", trace, checkout=against if side == "before" else None)
            runs[side].append(result)
            print(
                f"  round {i + 1} {side:>6}: {size / 1e6 / result['seconds']:7.1f} MB/s "
                f"(CPU {size / 1e6 / result['cpu']:.1f}), peak RSS {result['peak'] / size:.2f}x, "
                f"{int(result['rows']):,} rows ({result['package']})"
            )
    medians = {
        side: {k: statistics.median(r[k] for r in done) for k in ("seconds", "cpu", "peak")}
        for side, done in runs.items()
    }
    for side, m in medians.items():
        print(
            f"{side:>6} ({against if side == 'before' else 'this checkout'}), median of {rounds}: "
            f"{size / 1e6 / m['seconds']:7.1f} MB/s (CPU time {size / 1e6 / m['cpu']:.1f} MB/s), "
            f"peak RSS {m['peak'] / size:.2f}x JSON size ({m['peak'] / 1e6:,.0f} MB)"
        )
    before, after = medians["before"], medians["after"]
    print(
        f"after / before: speed {before['seconds'] / after['seconds']:.2f}x (CPU "
        f"{before['cpu'] / after['cpu']:.2f}x), peak RSS {after['peak'] / before['peak']:.2f}x"
    )


if __name__ == "__main__":
    main()
