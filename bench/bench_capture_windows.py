"""What streaming torch.profiler in windows costs (CPU backend): per window, and in total.

Without windows, torch.profiler holds the whole run in memory until stop and a `kill -9` keeps
nothing; HPUProfiler stops it, streams the window and starts a fresh one every `window_s`
seconds or `window_steps` steps. Prints, from one run on this machine (interleaved rounds,
best of --repeat):

- a stepped loop (--steps steps of --ops tiny ops), start to every event on disk:
  one window for the whole run (the baseline) against a window every W steps; the extra time
  divided by the extra windows is the cost of one window, shown beside the time of one step;
- the same with no ops in the steps: the fixed cost of a window (stop, export, restart);
- the longest step (the pause a window adds inside the loop) in both;
- a loop with no steps at all (--stepless-ops ops), the timer ending windows every --window-s
  seconds, against one window, start to every event on disk.

    python bench/bench_capture_windows.py [--steps 200] [--ops 50] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any


def _stepped(out: Path, steps: int, ops: int, window_steps: int | None) -> tuple[float, float, int]:
    """(start -> all on disk seconds, longest step seconds, windows) of one profiled loop."""
    import torch

    from hpuprof.capture.profiler import HPUProfiler

    x, y = torch.ones(4), torch.ones(4)
    prof = HPUProfiler(out, backend="cpu", window_s=None, window_steps=window_steps, perfetto=False)
    t0 = time.perf_counter()
    prof.start()
    longest = 0.0
    for _ in range(steps):
        s0 = time.perf_counter()
        for _ in range(ops):
            torch.add(x, y)
        prof.step()
        longest = max(longest, time.perf_counter() - s0)
    prof.stop()
    return time.perf_counter() - t0, longest, prof.windows + 1


def _stepless(out: Path, ops: int, window_s: float | None) -> tuple[float, int]:
    """(start -> all on disk seconds, windows) of `ops` tiny ops with no steps at all."""
    import torch

    from hpuprof.capture.profiler import HPUProfiler

    x, y = torch.ones(4), torch.ones(4)
    t0 = time.perf_counter()
    with HPUProfiler(out, backend="cpu", window_s=window_s, perfetto=False) as prof:
        for _ in range(ops):
            torch.add(x, y)
    return time.perf_counter() - t0, prof.windows + 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--ops", type=int, default=50)
    parser.add_argument("--every", type=int, default=10, help="window every this many steps")
    parser.add_argument("--stepless-ops", type=int, default=100_000)
    parser.add_argument("--window-s", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault("KINETO_LOG_LEVEL", "5")
    warnings.simplefilter("ignore")
    scratch = Path(tempfile.mkdtemp(prefix="bench-windows-"))
    runs = iter(range(10**6))

    def run() -> Path:
        return scratch / f"run{next(runs)}"

    _stepped(run(), 5, 5, None)  # warm up torch.profiler
    cases: dict[str, Any] = {
        "one window": lambda: _stepped(run(), args.steps, args.ops, None),
        f"every {args.every} steps": lambda: _stepped(run(), args.steps, args.ops, args.every),
        "every step": lambda: _stepped(run(), args.steps, args.ops, 1),
        "empty, one window": lambda: _stepped(run(), args.steps, 0, None),
        "empty, every step": lambda: _stepped(run(), args.steps, 0, 1),
    }
    best: dict[str, tuple[float, float, int]] = {}
    for _ in range(args.repeat):
        for name, case in cases.items():
            got = case()
            if name not in best or got[0] < best[name][0]:
                best[name] = got
    base_s, _, _ = best["one window"]
    step_ms = base_s / args.steps * 1e3
    print(
        f"stepped loop: {args.steps} steps x {args.ops} tiny ops, start -> every event on disk "
        f"(best of {args.repeat}):"
    )
    for name in ("one window", f"every {args.every} steps", "every step"):
        total, longest, windows = best[name]
        extra = (total - base_s) / (windows - 1) * 1e3 if windows > 1 else 0.0
        print(
            f"  {name:<18} {total:7.3f} s  {windows:4d} windows  "
            f"{extra:7.2f} ms per extra window ({extra / step_ms:5.2f} x a {step_ms:.2f} ms step)"
            f"  longest step {longest * 1e3:7.1f} ms"
        )
    empty_one, _, _ = best["empty, one window"]
    empty_each, _, windows = best["empty, every step"]
    fixed = (empty_each - empty_one) / (windows - 1) * 1e3
    print(
        f"  fixed cost of a window (steps with no ops): {fixed:.2f} ms "
        f"(one window {empty_one:.3f} s, every step {empty_each:.3f} s, {windows} windows)"
    )

    totals: dict[str, tuple[float, int]] = {}
    for _ in range(args.repeat):
        for name, window_s in (("none", None), ("timer", args.window_s)):
            got = _stepless(run(), args.stepless_ops, window_s)
            if name not in totals or got[0] < totals[name][0]:
                totals[name] = got
    (none_s, _), (timer_s, windows) = totals["none"], totals["timer"]
    print(
        f"stepless loop: {args.stepless_ops:,} tiny ops, no step, start -> every event on disk "
        f"(best of {args.repeat}):"
    )
    print(f"  one window (no timer)       {none_s:7.3f} s")
    extra = (timer_s - none_s) / (windows - 1) * 1e3 if windows > 1 else 0.0
    print(
        f"  timer every {args.window_s:g} s            {timer_s:7.3f} s  {windows} windows "
        f"= {timer_s / none_s:.3f}x, {extra:.1f} ms per extra window"
    )


if __name__ == "__main__":
    main()
