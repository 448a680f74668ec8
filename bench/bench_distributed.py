"""Many ranks on Dask: 64 ranks x 100 MB of Kineto JSON analysed with `--workers 2`.

Generates a synthetic run (bench/gen_multi_rank.py: NCCL all-reduces, a planted straggler) in a
scratch directory, then measures, each in a fresh process with a cold load cache:

1. baseline: one rank's load + analysis (`tasks.analyze_rank_file`, the distributed report, in
   a process with the heap tuned as `hpuprof` and the local workers tune theirs),
   the mean of four ranks (two before the run, two after), each pinned to one core (the
   ideal split gives each of the workers one core's share); the same on all of this process's
   cores (threaded load) is printed beside it, with the budget it would give (two ranks);
2. `hpuprof analyze DIR --workers 2 --report distributed`: wall time, peak RSS of the client
   and of each worker (sampled every 0.2 s over the process tree), the straggler found. Each
   worker's load gets its share of the cores (`cluster.local_load_threads`: one thread each
   for 2 workers on 2 cores);
3. the same on 8 of the ranks, beside HTA 0.5.0 on those 8 ranks (TraceAnalysis + the same
   analyses: overlap, idle breakdown, queue length, memory bandwidth, launch statistics, and
   the critical path of rank 0's first step: HTA's cost per call), its time and peak RSS.

Targets: the planted straggler is named; peak RSS of any one process <= 3 GB; wall <= 1.2 x
(ranks x one rank's load+analysis) / workers. Prints the figures, the ratios and a JSON line.
Cleans up unless --keep.

    python bench/bench_distributed.py [--ranks 64] [--mb 100] [--workers 2] [--hta-ranks 8]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
GB = 1 << 30

_ONE_RANK = r"""
import json, os, sys, time, resource
os.sched_setaffinity(0, {int(c) for c in sys.argv[2].split(",")})
from hpuprof.analysis.options import AnalysisOptions
from hpuprof.distributed.tasks import analyze_rank_file
from hpuprof.trace.heap import tune_process
tune_process()  # as `hpuprof analyze` and the local cluster's workers do
t0, c0 = time.perf_counter(), time.process_time()
out = analyze_rank_file(sys.argv[1], 0, ["distributed"], AnalysisOptions())
print(json.dumps({"seconds": time.perf_counter() - t0, "cpu": time.process_time() - c0,
                  "load": out.load_s, "analyze": out.analyze_s, "peak": out.peak_rss}))
"""

_HTA = r"""
import json, logging, sys, time
logging.disable(logging.WARNING)
import pandas as pd
_drop = pd.DataFrame.drop
def _compat(self, labels=None, *, axis=0, **kw):  # HTA 0.5.0's drop(axis=, columns=) on pandas 3
    if kw.get("columns") is not None or kw.get("index") is not None:
        return _drop(self, labels, **kw)
    return _drop(self, labels, axis=axis, **kw)
pd.DataFrame.drop = _compat
from hta.trace_analysis import TraceAnalysis
files = {int(k): v for k, v in json.loads(sys.argv[1]).items()}
ranks = sorted(files)
t0 = time.perf_counter()
ta = TraceAnalysis(trace_files=files, include_last_profiler_step=True)
t1 = time.perf_counter()
ta.get_comm_comp_overlap(visualize=False)
ta.get_idle_time_breakdown(ranks=ranks, visualize=False)
ta.get_queue_length_summary(ranks=ranks)
ta.get_memory_bw_summary(ranks=ranks)
ta.get_cuda_kernel_launch_stats(ranks=ranks, visualize=False)
ta.critical_path_analysis(rank=ranks[0], annotation="ProfilerStep", instance_id=0)
t2 = time.perf_counter()
print(json.dumps({"load": t1 - t0, "analyses": t2 - t1, "seconds": t2 - t0}))
"""


class TreeSampler:
    """Peak RSS of a process and every descendant, sampled in a thread."""

    def __init__(self, pid: int, every: float = 0.2) -> None:
        import psutil

        self.root = psutil.Process(pid)
        self.every = every
        self.peak: dict[int, int] = {}
        self.cpu: dict[int, float] = {}  # user + system seconds, last seen
        self.role: dict[int, str] = {}
        self.peak_sum = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        import psutil

        while not self._stop.is_set():
            try:
                procs = [self.root, *self.root.children(recursive=True)]
            except psutil.Error:
                break
            total = 0
            for p in procs:
                try:
                    rss = p.memory_info().rss
                    times = p.cpu_times()
                    self.cpu[p.pid] = times.user + times.system
                    if p.pid not in self.role:
                        cmd = " ".join(p.cmdline())
                        self.role[p.pid] = (
                            "client"
                            if p.pid == self.root.pid
                            else "worker"
                            if "spawn_main" in cmd or "forkserver" in cmd
                            else "helper"
                        )
                except psutil.Error:
                    continue
                total += rss
                self.peak[p.pid] = max(self.peak.get(p.pid, 0), rss)
            self.peak_sum = max(self.peak_sum, total)
            self._stop.wait(self.every)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def _sampled(
    cmd: list[str], env: dict[str, str]
) -> tuple[float, subprocess.CompletedProcess[str], TreeSampler]:
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO
    )
    sampler = TreeSampler(proc.pid)
    out, err = proc.communicate()
    wall = time.perf_counter() - t0
    sampler.stop()
    return wall, subprocess.CompletedProcess(cmd, proc.returncode, out, err), sampler


def _env(cache: Path) -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "HPUPROF_CACHE_DIR": str(cache), "PYTHONPATH": path}


def one_rank(path: Path, scratch: Path, cores: list[int]) -> dict[str, float]:
    """One rank's load + analysis in a fresh process on `cores` (its load threads: as many)."""
    cache = Path(tempfile.mkdtemp(prefix="cache-one-", dir=scratch))
    done = subprocess.run(
        [sys.executable, "-c", _ONE_RANK, str(path), ",".join(map(str, cores))],
        env=_env(cache),
        capture_output=True,
        text=True,
        check=True,
    )
    shutil.rmtree(cache, ignore_errors=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def ours(run_dir: Path, workers: int, scratch: Path) -> dict[str, Any]:
    cache = Path(tempfile.mkdtemp(prefix="cache-run-", dir=scratch))
    out = scratch / f"report-{run_dir.name}.json"
    cmd = [sys.executable, "-c", "from hpuprof.cli.main import run; run()", "analyze", str(run_dir)]
    cmd += ["--workers", str(workers), "--report", "distributed", "-f", "json", "-o", str(out)]
    wall, done, sampler = _sampled(cmd, _env(cache))
    if done.returncode != 0:
        raise SystemExit(f"hpuprof analyze failed ({done.returncode}): {done.stderr[-2000:]}")
    doc = json.loads(out.read_text())
    cache_bytes = sum(p.stat().st_size for p in cache.glob("*"))
    shutil.rmtree(cache, ignore_errors=True)
    roles = sampler.role
    return {
        "wall": wall,
        "client_peak": max(
            (v for p, v in sampler.peak.items() if roles.get(p) == "client"), default=0
        ),
        "worker_peaks": sorted(
            (v for p, v in sampler.peak.items() if roles.get(p) == "worker"), reverse=True
        ),
        "other_peaks": sorted(
            (v for p, v in sampler.peak.items() if roles.get(p) == "helper"), reverse=True
        ),
        "tree_peak": sampler.peak_sum,
        "tree_cpu": sum(sampler.cpu.values()),
        "doc": doc,
        "cache_bytes": cache_bytes,
    }


def hta(files: list[Path], scratch: Path) -> dict[str, Any]:
    arg = json.dumps({str(i): str(f) for i, f in enumerate(files)})
    wall, done, sampler = _sampled([sys.executable, "-c", _HTA, arg], {**os.environ})
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1:] or ["failed"], "wall": wall}
    times = json.loads(done.stdout.strip().splitlines()[-1])
    root = sampler.root.pid
    return {
        **times,
        "wall": wall,
        "tree_cpu": sum(sampler.cpu.values()),
        "client_peak": sampler.peak.get(root, 0),
        "child_peak": max((v for p, v in sampler.peak.items() if p != root), default=0),
        "tree_peak": sampler.peak_sum,
    }


def _against_hta(
    files: list[Path], a: argparse.Namespace, scratch: Path, our_peak: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    """hpuprof and HTA 0.5.0 on the same few ranks, printed side by side."""
    k = len(files)
    sub = scratch / f"first{k}"
    sub.mkdir()
    for f in files:
        (sub / f.name).symlink_to(f)
    small = ours(sub, a.workers, scratch)
    theirs = hta(files, scratch)
    print(
        f"{k} ranks: hpuprof --workers {a.workers} {small['wall']:.1f} s (cpu "
        f"{small['tree_cpu']:.0f} s), peak RSS client {_gb(small['client_peak'])} / worker "
        f"{_gb(max(small['worker_peaks'], default=0))} (tree {_gb(small['tree_peak'])})"
    )
    if "error" in theirs:
        print(f"  HTA 0.5.0 on {k} ranks failed: {theirs['error']}")
        return small, theirs
    per_rank = (theirs["client_peak"] - small["client_peak"]) / k  # beyond an idle process
    print(
        f"  HTA 0.5.0 on {k} ranks: {theirs['wall']:.1f} s (cpu {theirs['tree_cpu']:.0f} s; "
        f"load {theirs['load']:.1f} s, analyses {theirs['analyses']:.1f} s; "
        f"{theirs['wall'] / small['wall']:.1f}x hpuprof's wall), peak RSS parent "
        f"{_gb(theirs['client_peak'])}, parse worker {_gb(theirs['child_peak'])}, tree "
        f"{_gb(theirs['tree_peak'])}"
    )
    many = max(a.ranks, 64)
    need = theirs["client_peak"] + per_rank * (many - k)
    print(
        f"  HTA at {many} ranks (not run): its parent keeps every rank's frame, "
        f"~{_gb(per_rank)} more per rank here, so one process of ~{_gb(need)} "
        f"({need / (3 * GB):.1f}x the 3 GB target; hpuprof's largest process: {_gb(our_peak)}), "
        f"and its load alone ~{theirs['load'] * many / k / 60:.0f} min at this machine's load "
        "(for more than 8 ranks it also parses rank 0 once more under tracemalloc to size its "
        "pool)"
    )
    return small, theirs


def _gb(n: float) -> str:
    return f"{n / GB:.2f} GB"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=64)
    parser.add_argument("--mb", type=float, default=100.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--straggler", type=int, default=37)
    parser.add_argument("--hta-ranks", type=int, default=8)
    parser.add_argument("--dir", type=Path, default=None, help="scratch directory (default: temp)")
    parser.add_argument("--keep", action="store_true", help="keep the generated run")
    parser.add_argument("--run", type=Path, default=None, help="an existing run (no generation)")
    parser.add_argument("--gen-jobs", type=int, default=2, help="processes generating the run")
    a = parser.parse_args()
    sys.path.insert(0, str(BENCH))
    from gen_multi_rank import generate

    need = a.ranks * a.mb * 1e6 * 2.2
    base = a.dir or Path(tempfile.gettempdir())
    base.mkdir(parents=True, exist_ok=True)
    if shutil.disk_usage(base).free < need:
        base = REPO.parent
    if shutil.disk_usage(base).free < need:
        raise SystemExit(f"needs {need / 1e9:.1f} GB free disk for the run and its cache")
    base.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="hpuprof-bench-ranks-", dir=base))
    straggler = min(a.straggler, a.ranks - 1)
    try:
        run = a.run or scratch / "run"
        if a.run is None:
            t0 = time.perf_counter()
            total = generate(run, a.ranks, a.mb, straggler, 0, a.gen_jobs)
            print(
                f"generated {a.ranks} ranks, {total / 1e6:,.0f} MB in "
                f"{time.perf_counter() - t0:.0f} s (planted straggler: rank {straggler}) "
                f"under {scratch}",
                flush=True,
            )
        files = sorted(run.glob("rank*.pt.trace.json"), key=lambda p: int(p.name[4:].split(".")[0]))
        cores = sorted(os.sched_getaffinity(0))
        singles = [one_rank(files[i], scratch, cores[:1]) for i in (0, len(files) // 2)]
        main_run = ours(run, a.workers, scratch)
        singles += [one_rank(files[i], scratch, cores[:1]) for i in (1, len(files) - 1)]
        wide = [one_rank(files[i], scratch, cores) for i in (0, len(files) // 2)]
        t1 = sum(x["seconds"] for x in singles) / len(singles)
        cpu1 = sum(x["cpu"] for x in singles) / len(singles)
        each = ", ".join(f"{x['seconds']:.1f}" for x in singles)
        print(
            f"baseline: one rank's load+analysis on one core {t1:.2f} s (2 ranks before and 2 "
            f"after the run: {each} s; cpu {cpu1:.2f} s; peak "
            f"{_gb(max(x['peak'] for x in singles))})",
            flush=True,
        )
        t_wide = sum(x["seconds"] for x in wide) / len(wide)
        print(
            f"  the same rank alone on all {len(cores)} core(s) of this process: {t_wide:.2f} s "
            f"(cpu {sum(x['cpu'] for x in wide) / len(wide):.2f} s); with it the budget "
            f"would be {1.2 * a.ranks * t_wide / a.workers:.1f} s",
            flush=True,
        )
        dist = main_run["doc"]["distributed"]
        top = dist["skew_by_rank"][0] if dist["skew_by_rank"] else {}
        found = [f for f in main_run["doc"]["findings"] if f["metric"] == "last_arrival_pct"]
        budget = 1.2 * a.ranks * t1 / a.workers
        peaks = [main_run["client_peak"], *main_run["worker_peaks"]]
        print(
            f"--workers {a.workers}: {a.ranks} ranks in {main_run['wall']:.1f} s "
            f"(target <= {budget:.1f} s = 1.2 x {a.ranks} x {t1:.2f} s / {a.workers}; "
            f"ratio {main_run['wall'] / (a.ranks * t1 / a.workers):.2f} of the ideal split)"
        )
        print(
            f"  cpu time of the whole process tree {main_run['tree_cpu']:.0f} s = "
            f"{main_run['tree_cpu'] / (a.ranks * cpu1):.2f} x ({a.ranks} x one rank's "
            f"{cpu1:.2f} s)"
        )
        print(
            f"  peak RSS: client {_gb(main_run['client_peak'])}, workers "
            + ", ".join(_gb(w) for w in main_run["worker_peaks"])
            + f"; whole tree {_gb(main_run['tree_peak'])}; load cache written "
            f"{main_run['cache_bytes'] / 1e9:.2f} GB"
        )
        print(
            f"  straggler found: rank {top.get('rank')} (planted {straggler}), last at "
            f"{top.get('last_pct')}% of {top.get('collectives')} collectives; finding: "
            f"{found[0]['title'] if found else 'none'}"
        )
        print(f"  failed ranks: {len(dist['failed'])}")
        k = min(a.hta_ranks, a.ranks)
        small: dict[str, Any] = {}
        theirs: dict[str, Any] = {}
        if k > 0:
            small, theirs = _against_hta(files[:k], a, scratch, max(peaks))
        ok = {
            "straggler_named": top.get("rank") == straggler and bool(found),
            "peak_rss_le_3gb": max(peaks) <= 3 * GB,
            "wall_within_budget": main_run["wall"] <= budget,
        }
        print("targets: " + ", ".join(f"{k}={'yes' if v else 'NO'}" for k, v in ok.items()))
        summary = {
            "ranks": a.ranks, "mb_per_rank": a.mb, "workers": a.workers, "one_rank_s": t1,
            "cores": len(cores), "one_rank_all_cores_s": t_wide,
            "wall_s": main_run["wall"], "budget_s": budget, "tree_cpu_s": main_run["tree_cpu"],
            "one_rank_cpu_s": cpu1, "client_peak": main_run["client_peak"],
            "worker_peaks": main_run["worker_peaks"], "straggler": top.get("rank"),
            "planted": straggler, "hta": theirs, f"hpuprof_{k}_wall_s": small.get("wall"), **ok,
        }  # fmt: skip
        print(json.dumps(summary))
        return 0 if all(ok.values()) else 1
    finally:
        if a.keep:
            print(f"kept {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
