"""Start-up cost of the `hpuprof` command, beside the bare interpreter's in the same run (issue 27).

    python bench/bench_startup.py [--runs 9] [--trace T.json] [--also OTHER_CHECKOUT]

Each figure is the median over `--runs` fresh child processes of this interpreter (this venv) of
the wall time from spawn to exit, with the child's own peak RSS (`ru_maxrss` from `wait4`). The
commands run round-robin (one of each per round), so a drift of the machine hits them alike; each
is also printed as a ratio to `python -c pass` measured in the same rounds. Targets (issue 27):
`hpuprof --help` at most 150 ms, `hpuprof info` on a small trace at most 300 ms.

`cpu ms` (the child's user + system time) is less disturbed by a busy machine than the wall time.
`import pandas` is the floor of any command that loads a trace (the events table is pandas).
Three `hpuprof info` rows, each with a private cache directory:
- `info (cached)`: a repeated `info` of an unchanged file, answered from the file's cached
  summary (`hpuprof.trace.summary_cache`, written by one unmeasured run first): no load, no
  pandas;
- `info (load cache only)`: the summary entries are deleted before each run, so `info` loads the
  events table through the load cache (what `info (cached)` measured before the summary cache)
  and writes the summary entry again;
- `info (no cache)`: a fresh, empty cache directory each run, so it scans the JSON and writes
  both entries as a first run does.

`hpuprof analyze --report bottleneck` on HTA's `df_index_resolver` trace (one rank, 3 MB gz,
216k events; `--hta-trace`, from shared/traces/kineto) runs end to end beside HTA 0.5.0 asked
the same questions in a fresh interpreter (`TraceAnalysis` load, then `get_temporal_breakdown`,
`get_gpu_kernel_breakdown`, `get_idle_time_breakdown`), when `hta` imports; the ratio of HTA's
time to hpuprof's is printed (target: at least 10x, issue 27). The first hpuprof row runs
through its load cache (filled by the unmeasured first run; HTA has none); the `(no cache)` row
scans the JSON each run, with a fresh, empty cache directory. No analysis result is cached.

Every child runs with bytecode caches (`PYTHONDONTWRITEBYTECODE` is dropped from its
environment and every command runs once unmeasured first), as after `pip install`, which
compiles them: without, each run compiles every hpuprof module it imports again.

After the table, `hpuprof analyze --report bottleneck` on that trace in phases (imports, load,
analysis, render), each phase's CPU time in one fresh process, median of `--runs`: where the
end-to-end time goes (`import pandas`, which brings numpy and pyarrow, is the floor of any
command that analyses a trace).

`--also DIR` measures the hpuprof commands of a second checkout of this repository (e.g. the
commit before a change, with its built `_kineto_scan` extension) in the same rounds, with DIR
first on PYTHONPATH; its rows are marked `[DIR's name]`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_TRACE = ROOT / "sample_traces" / "cpu_torch_profiler" / "trace.pt.trace.json"

HTA_TRACE = (
    ROOT.parent / "shared/traces/kineto/tests/data/df_index_resolver/df_index_resolver.json.gz"
)
TARGET_S = {"hpuprof --help": 0.150, "hpuprof info (cached)": 0.300}
"""Issue 27's start-up targets, wall seconds."""
HTA_TARGET_RATIO = 10.0
"""Issue 27: hpuprof at least this many times faster than HTA end to end on `HTA_TRACE`."""

_HTA = """
import logging, sys
logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
analysis = TraceAnalysis(trace_files={1: sys.argv[1]})
analysis.get_temporal_breakdown(visualize=False)
analysis.get_gpu_kernel_breakdown(visualize=False)
analysis.get_idle_time_breakdown(ranks=[1], visualize=False)
"""
"""HTA 0.5.0 asked what `hpuprof analyze --report bottleneck` answers, from a fresh process."""


_PHASES = """
import json, sys, time
from pathlib import Path
marks = [("start", time.process_time())]
def mark(name):
    marks.append((name, time.process_time()))
import hpuprof.cli.main
mark("import click + hpuprof.cli")
import pandas
mark("import pandas (numpy, pyarrow)")
import hpuprof
from hpuprof.analysis import AnalysisOptions, analyze, parse_reports
from hpuprof.render import get_renderer
import hpuprof.analysis.api, hpuprof.analysis.bottleneck, hpuprof.trace.load, hpuprof.trace.cache
import hpuprof.render.terminal, rich.console, rich.table
mark("import hpuprof's analysis, loader, render + rich")
trace = hpuprof.load(Path(sys.argv[1]))
mark("load (through the load cache)")
report = analyze(trace, reports=parse_reports("bottleneck"), options=AnalysisOptions())
mark("analysis (bottleneck)")
text = get_renderer("text", width=None, color=False).render(report)
mark("render (text)")
print(json.dumps({b[0]: b[1] - a[1] for a, b in zip(marks, marks[1:])}))
"""
"""`hpuprof analyze --report bottleneck` in phases, each's CPU seconds (a fresh process, the load
cache filled): where its time goes."""


@dataclass(frozen=True)
class Sample:
    wall_s: float
    cpu_s: float
    peak_rss_mb: float


def _hpuprof_argv() -> list[str]:
    """The console script beside this interpreter (what a user runs), else the same entry point."""
    script = Path(sys.executable).with_name("hpuprof")
    if script.exists():
        return [sys.executable, str(script)]
    return [sys.executable, "-c", "from hpuprof.cli.main import run; run()"]


def _run_once(argv: list[str], env: dict[str, str], cwd: Path) -> Sample:
    """One child; `cwd` is a neutral directory, so `-c` finds no checkout on `sys.path[0]`."""
    start = time.perf_counter()
    child = subprocess.Popen(
        argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    assert child.stderr is not None
    errors = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    child.stderr.close()
    if child.returncode != 0:
        sys.exit(f"{' '.join(argv)} exited {child.returncode}: {errors.decode(errors='replace')}")
    return Sample(
        wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024
    )  # ru_maxrss is in KiB on Linux


def _why_no_hta(trace: Path) -> str:
    """Why the HTA comparison cannot run ("" when it can: its trace is there, `hta` imports)."""
    if not trace.is_file():
        return f"no trace at {trace}"
    done = subprocess.run([sys.executable, "-c", "import hta"], capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        return f"hta does not import ({last}); pip install HolisticTraceAnalysis"
    return ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=9, help="child processes per command")
    parser.add_argument("--trace", type=Path, default=DEFAULT_TRACE, help="a small trace")
    parser.add_argument("--also", type=Path, help="another checkout, measured alike")
    parser.add_argument(
        "--hta-trace", type=Path, default=HTA_TRACE, help="the trace of the HTA comparison"
    )
    args = parser.parse_args()
    args.trace = args.trace.resolve()
    hpuprof = _hpuprof_argv()
    workdir = Path(tempfile.mkdtemp(prefix="bench-startup-"))
    base_env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    try:
        commands: dict[str, tuple[list[str], dict[str, str]]] = {
            "python -c pass": ([sys.executable, "-c", "pass"], {}),
            "import pandas (info's floor)": ([sys.executable, "-c", "import pandas"], {}),
        }
        no_hta = _why_no_hta(args.hta_trace)
        if not no_hta:
            commands["HTA 0.5.0 (df_index_resolver)"] = (
                [sys.executable, "-c", _HTA, str(args.hta_trace)],
                {},
            )
        else:
            print(f"HTA comparison left out: {no_hta}")
        checkouts = {"": {}} if args.also is None else {"": {}, f" [{args.also.name}]": {
            "PYTHONPATH": str(args.also.resolve())}}  # fmt: skip
        for tag, extra in checkouts.items():
            warm = {**extra, "HPUPROF_CACHE_DIR": str(workdir / f"warm{tag}")}
            import_main = [sys.executable, "-c", "import hpuprof.cli.main"]
            commands[f"import hpuprof.cli.main{tag}"] = (import_main, extra)
            commands[f"hpuprof --help{tag}"] = ([*hpuprof, "--help"], extra)
            commands[f"hpuprof info (cached){tag}"] = ([*hpuprof, "info", str(args.trace)], warm)
            commands[f"hpuprof info (load cache only){tag}"] = (
                [*hpuprof, "info", str(args.trace)],
                {**extra, "HPUPROF_CACHE_DIR": str(workdir / f"warm-load{tag}")},
            )
            commands[f"hpuprof info (no cache){tag}"] = ([*hpuprof, "info", str(args.trace)], extra)
            if not no_hta:
                bottleneck = [*hpuprof, "analyze", "--report", "bottleneck", str(args.hta_trace)]
                commands[f"hpuprof analyze (df_index_resolver){tag}"] = (bottleneck, warm)
                commands[f"hpuprof analyze (df_index_resolver) (no cache){tag}"] = (
                    bottleneck,
                    extra,
                )
        for argv, extra in commands.values():  # bytecode caches and the warm load cache filled
            _run_once(argv, {**base_env, **extra}, workdir)
        samples: dict[str, list[Sample]] = {name: [] for name in commands}
        for round_index in range(args.runs):
            for name, (argv, extra) in commands.items():
                env = {**base_env, **extra}
                if "(no cache)" in name:  # a fresh, empty cache directory each run
                    env["HPUPROF_CACHE_DIR"] = str(workdir / f"cold{round_index}{name}")
                if "(load cache only)" in name:  # the load cache's entry, no cached summary
                    shutil.rmtree(Path(env["HPUPROF_CACHE_DIR"]) / "summaries", ignore_errors=True)
                samples[name].append(_run_once(argv, env, workdir))
        _report(samples, args)
        if not no_hta:
            _report_phases(args, {**base_env, "HPUPROF_CACHE_DIR": str(workdir / "warm")}, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _report(samples: dict[str, list[Sample]], args: argparse.Namespace) -> None:
    baseline = statistics.median(s.wall_s for s in samples["python -c pass"])
    size_kb = args.trace.stat().st_size / 1024
    print(f"start-up, median of {args.runs} runs each, round-robin; trace {args.trace.name} "
          f"({size_kb:.0f} KB); {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")  # fmt: skip
    print(f"{'command':<40}{'wall ms':>9}{'x python':>10}{'cpu ms':>8}{'peak RSS MB':>13}   target")
    for name, runs in samples.items():
        wall = statistics.median(s.wall_s for s in runs)
        rss = statistics.median(s.peak_rss_mb for s in runs)
        cpu = statistics.median(s.cpu_s for s in runs)
        target = TARGET_S.get(name.split(" [")[0])
        verdict = ""
        if target is not None:
            verdict = f"<= {target * 1000:.0f} ms: {'met' if wall <= target else 'NOT met'}"
        print(
            f"{name:<40}{wall * 1000:>9.1f}{wall / baseline:>10.2f}{cpu * 1000:>8.0f}{rss:>13.1f}   {verdict}"
        )
    hta = samples.get("HTA 0.5.0 (df_index_resolver)")
    for name, runs in samples.items():
        if hta is None or not name.startswith("hpuprof analyze (df_index_resolver)"):
            continue
        wall_x, cpu_x = (
            statistics.median(getattr(s, field) for s in hta)
            / statistics.median(getattr(s, field) for s in runs)
            for field in ("wall_s", "cpu_s")
        )
        verdict = "met" if wall_x >= HTA_TARGET_RATIO else "NOT met"
        print(f"HTA / {name}: {wall_x:.2f}x wall, {cpu_x:.2f}x cpu   "
              f">= {HTA_TARGET_RATIO:.0f}x: {verdict}")  # fmt: skip


def _report_phases(args: argparse.Namespace, env: dict[str, str], cwd: Path) -> None:
    """CPU ms of each phase of the bottleneck analysis of `--hta-trace`, median of `--runs`."""
    runs = []
    for _ in range(args.runs):
        done = subprocess.run(
            [sys.executable, "-c", _PHASES, str(args.hta_trace)],
            env=env, cwd=cwd, capture_output=True, text=True, check=True,
        )  # fmt: skip
        runs.append(json.loads(done.stdout.splitlines()[-1]))
    print(f"hpuprof analyze --report bottleneck {args.hta_trace.name} in phases "
          f"(cpu ms, median of {args.runs}; one process, load cache filled):")  # fmt: skip
    for phase in runs[0]:
        print(f"  {phase:<48}{statistics.median(r[phase] for r in runs) * 1000:>8.0f}")


if __name__ == "__main__":
    main()
