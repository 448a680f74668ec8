"""Capture cost on plain CPU torch: HPUProfiler vs torch.profiler alone vs no profiler.

Prints, from one run on this machine:
- per-op time of a loop of tiny ops with no profiler, under torch.profiler (CPU activities)
  and under HPUProfiler(backend="cpu"), and HPUProfiler's overhead over torch.profiler's
  (target: within 1.5x);
- post-processing of a 100k-op run: HPUProfiler.stop() until its files are on disk (Chrome
  JSON, metrics, run.json: what the training process pays), then the Perfetto trace that
  `hpuprof record` writes once the script has ended (`export_perfetto()`; target for both
  together < 5 s), against torch.profiler's own stop() plus export_chrome_trace of the same ops
  (its "stop to file on disk") as the baseline.

Usage: python bench/bench_capture.py [--ops 100000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any


def _loop(n: int) -> None:
    import torch

    x = torch.ones(4)
    y = torch.ones(4)
    add = torch.add
    for _ in range(n):
        add(x, y)


def _timed(n: int, ctx: Callable[[], contextlib.AbstractContextManager[Any]]) -> float:
    with ctx():
        t0 = time.perf_counter_ns()
        _loop(n)
        elapsed = time.perf_counter_ns() - t0
    return elapsed / n


@contextlib.contextmanager
def _torch_profiler() -> Iterator[Any]:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        yield prof


@contextlib.contextmanager
def _hpuprof(out: Path) -> Iterator[Any]:
    from hpuprof.capture.profiler import HPUProfiler

    with HPUProfiler(out, backend="cpu", handle_signals=False) as prof:
        yield prof


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    n = args.ops
    os.environ.setdefault("KINETO_LOG_LEVEL", "5")
    warnings.simplefilter("ignore")
    _loop(1000)  # warm up torch
    scratch = Path(tempfile.mkdtemp(prefix="bench-capture-"))

    # interleaved rounds, best of each: the machine's load drifts during the run
    samples: dict[str, list[float]] = {"none": [], "torch": [], "ours": []}
    for i in range(args.repeat):
        samples["none"].append(_timed(n, contextlib.nullcontext))
        samples["torch"].append(_timed(n, _torch_profiler))
        samples["ours"].append(_timed(n, functools.partial(_hpuprof, scratch / f"run{i}")))
    none, torch_prof, ours = (min(samples[k]) for k in ("none", "torch", "ours"))
    torch_over = torch_prof - none
    ours_over = ours - none
    print(f"per-op cost of a tiny CPU op ({n:,} ops, best of {args.repeat}):")
    print(f"  no profiler        {none:8.0f} ns/op")
    print(f"  torch.profiler     {torch_prof:8.0f} ns/op   overhead {torch_over:7.0f} ns/op")
    print(f"  HPUProfiler (cpu)  {ours:8.0f} ns/op   overhead {ours_over:7.0f} ns/op")
    ratio = ours_over / torch_over if torch_over > 0 else float("nan")
    print(f"  HPUProfiler overhead / torch.profiler overhead = {ratio:.2f}x (target <= 1.5x)")

    # post-processing: stop -> every file on disk, vs torch.profiler's own export
    from torch.profiler import ProfilerActivity, profile

    from hpuprof.capture.profiler import HPUProfiler

    prof = profile(activities=[ProfilerActivity.CPU])
    prof.start()
    _loop(n)
    t0 = time.perf_counter()
    prof.stop()
    prof.export_chrome_trace(str(scratch / "baseline.json"))
    baseline_s = time.perf_counter() - t0

    import hpuprof.trace.load
    import hpuprof.trace.perfetto_write  # noqa: F401  (imports are paid once a process: not timed)

    hp = HPUProfiler(scratch / "post", backend="cpu", handle_signals=False).start()
    _loop(n)
    t0 = time.perf_counter()
    hp.stop()
    stop_s = time.perf_counter() - t0
    hp.export_perfetto()
    post_s = time.perf_counter() - t0
    sizes = {k: sum((hp.dirpath / p).stat().st_size for p in v) for k, v in hp.files.items()}
    print(f"post-processing of a {n:,}-op run (stop -> files on disk):")
    print(f"  torch.profiler stop + export_chrome_trace      {baseline_s:6.2f} s")
    print(
        f"  HPUProfiler.stop (JSON + run.json)             {stop_s:6.2f} s  "
        f"= {stop_s / baseline_s:.2f}x torch's (in the training process)"
    )
    print(
        f"  ... + Perfetto after the run (record's)        {post_s:6.2f} s  "
        f"= {post_s / baseline_s:.2f}x torch's (target < 5 s)"
    )
    print(f"  files: {', '.join(f'{k} {v / 1e6:.1f} MB' for k, v in sizes.items() if v)}")
    if hp.warnings:
        print(f"  warnings: {hp.warnings}")


if __name__ == "__main__":
    main()
