"""`hpuprof predict` on a LLaMA-2-7B-shaped training step, the model built on the device and on
the host, against real compute at 1 layer.

    python bench/bench_predict.py [--layers 32] [--seq 4096] [--steps 3] [--no-baseline]
                                  [--no-whatif]

The workload is `bench/calibration/train_decoder.py` (LLaMA-2-7B shapes: 32 layers, hidden
4096, sequence 4096, bf16 autocast, AdamW, 3 steps). The prediction runs it on fake tensors
(`hpuprof predict --steps 3`) twice: the model built on the device (`torch.device("hpu")`) and
built on the host and moved (`--build-on host`: `Model().to("hpu")`, 28 GB of fp32 weights
were it real); the baseline runs the same script with 1 layer under the emulator
with real compute (every op on this CPU). Each runs in its own process: wall time from start to
exit, peak RSS from the kernel's accounting of that process (`os.wait4`). Targets: the
prediction in at most 60 s and 3 GB, either way. The baseline can take far longer than the prediction (bf16
matmuls on a CPU): `--baseline-timeout S` stops it after S seconds and reports the ratio as a
bound.

Then the "what if" table: the device-built step once more as `hpuprof predict --device
gaudi2,gaudi3 --cards 1,8,64`, one run of the script (on gaudi2 x 64, its device work logged)
and a replay per other combination: each combination's prediction and what it cost (the replay's
seconds, as `predict` reports them, against the run's; target under 10 % each), and the whole
command's wall time beside the single-combination device-built run above. Then what the log
costs the one run: at `--ab-layers` layers, gaudi2 x 64 alone against the what-if (which runs
gaudi2 x 64 and replays the rest), alternated ABBA over `--ab-rounds` rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "calibration" / "train_decoder.py"
WALL_TARGET_S = 60.0
RSS_TARGET_GB = 3.0


def run(cmd: list[str], timeout_s: float | None = None) -> tuple[float, float, str, bool]:
    """(wall seconds, peak RSS in GB, stdout, finished) of one child process, stopped (not
    finished) after `timeout_s` seconds."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    stopped = threading.Event()

    def stop() -> None:
        stopped.set()
        proc.kill()

    timer = threading.Timer(timeout_s, stop) if timeout_s else None
    if timer is not None:
        timer.start()
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if timer is not None:
        timer.cancel()
    finished = not stopped.is_set()
    if finished and os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed ({status}): {' '.join(cmd)}")
    return wall, usage.ru_maxrss / 1e6, out, finished  # ru_maxrss is in KiB on Linux


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--seq", type=int, default=4096)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--no-baseline", action="store_true")
    ap.add_argument("--baseline-timeout", type=float, default=None, metavar="S")
    ap.add_argument("--no-whatif", action="store_true")
    ap.add_argument("--ab-layers", type=int, default=4, help="layers of the log-cost A/B")
    ap.add_argument("--ab-rounds", type=int, default=4, help="rounds of it (0: none)")
    args = ap.parse_args()
    model = ["--model", "llama2-7b", "--seq", str(args.seq), "--steps", str(args.steps)]
    hpuprof = str(Path(sys.executable).with_name("hpuprof"))
    cmd = [hpuprof, "predict", "--steps", str(args.steps), "--format", "json", "--"]
    cmd += [sys.executable, str(SCRIPT), *model, "--layers", str(args.layers)]
    within = True
    wall = 0.0
    walls: dict[str, float] = {}
    for build in ("device", "host"):
        wall, rss, out, _ = run([*cmd, "--build-on", build])
        walls[build] = wall
        pred = json.loads(out)
        within = within and wall <= WALL_TARGET_S and rss <= RSS_TARGET_GB
        print(
            f"predict, model built on the {build}, {args.layers} layers, seq {args.seq}, "
            f"{args.steps} steps (fake compute): {wall:.1f} s wall, {rss:.2f} GB peak RSS "
            f"(targets {WALL_TARGET_S:.0f} s, {RSS_TARGET_GB:.0f} GB)"
        )
        print(
            f"  predicted step {pred['step_time_s']:.3f} s, {pred['tokens_per_s']:,.0f} "
            f"tokens/s, MFU {pred['mfu_pct']:.1f}%, peak HBM {pred['peak_hbm_gib']:.1f} GiB "
            f"(fits: {pred['fits']})"
        )
    if not args.no_whatif:
        within = whatif(cmd, walls["device"]) and within
        if args.ab_rounds:
            log_cost(cmd, args.ab_layers, args.ab_rounds)
    if args.no_baseline:
        return 0 if within else 1
    base = (
        "import runpy, sys, hpusim; hpusim.enable(mode='lazy'); "
        f"sys.argv = {[str(SCRIPT), *model, '--layers', '1']!r}; "
        f"runpy.run_path({str(SCRIPT)!r}, run_name='__main__')"
    )
    bwall, brss, _, done = run([sys.executable, "-c", base], args.baseline_timeout)
    more = "" if done else "more than "
    print(
        f"baseline, the same script at 1 layer with real compute (emulated, every op on this "
        f"CPU): {more}{bwall:.1f} s wall{'' if done else ' (stopped unfinished)'}, "
        f"{brss:.2f} GB peak RSS{' when stopped' if not done else ''}"
    )
    at_most = "" if done else "less than "
    print(
        f"ratio: predicting {args.layers} layers (host-built) takes {at_most}{wall / bwall:.3f}x the time of "
        f"running 1 layer for real ({more}{bwall / wall * args.layers:.0f}x faster per layer)"
    )
    return 0 if within else 1


WHATIF_TARGET_PCT = 10.0


def whatif(cmd: list[str], single_wall: float) -> bool:
    """The what-if table (module doc); whether every extra combination met the target."""
    whole = [cmd[0], "predict", "--device", "gaudi2,gaudi3", "--cards", "1,8,64", *cmd[2:]]
    wall, rss, out, _ = run([*whole, "--build-on", "device"])
    doc = json.loads(out)
    run_s = doc["run"]["seconds"]
    print(
        f"what if: gaudi2,gaudi3 x 1,8,64 from {doc['script_runs']} run of the script "
        f"(on {doc['run']['device']} x {doc['run']['cards']}, {run_s:.1f} s in predict), "
        f"{wall:.1f} s wall, {rss:.2f} GB peak RSS; the single-combination run above "
        f"{single_wall:.1f} s wall (ratio {wall / single_wall:.2f})"
    )
    print(f"  {'device':<7} {'cards':>5} {'step s':>8} {'tokens/s':>10} {'MFU %':>6} "
          f"{'HBM GiB':>8} {'fits':>5} {'cost s':>8} {'% of run':>8}")  # fmt: skip
    ok = True
    for p, cost in zip(doc["predictions"], doc["replay_seconds"], strict=True):
        pct = "(the run)" if cost is None else f"{100 * cost / run_s:.2f}"
        ok = ok and (cost is None or 100 * cost / run_s < WHATIF_TARGET_PCT)
        print(
            f"  {p['device']:<7} {p['cards']:>5} {p['step_time_s']:>8.3f} "
            f"{p['tokens_per_s'] or 0:>10,.0f} {p['mfu_pct'] or 0:>6.1f} "
            f"{p['peak_hbm_gib']:>8.1f} {p['fits']!s:>5} "
            f"{'-' if cost is None else f'{cost:.3f}':>8} {pct:>8}"
        )
    print(f"  target: each extra combination under {WHATIF_TARGET_PCT:.0f} % of the run: {ok}")
    return ok


def log_cost(cmd: list[str], layers: int, rounds: int) -> None:
    """What recording the work log costs the one run: `--layers` layers, gaudi2 x 64 alone
    (A) against the what-if that runs gaudi2 x 64 and replays five more (B), alternated
    ABBA; each side's wall time from start to exit."""
    small = [*cmd[:-1], str(layers), "--build-on", "device"]
    single = [small[0], "predict", "--cards", "64", *small[2:]]
    both = [small[0], "predict", "--device", "gaudi2,gaudi3", "--cards", "1,8,64", *small[2:]]
    walls: dict[str, list[float]] = {"A": [], "B": []}
    for i in range(rounds):
        for side in "AB" if i % 2 == 0 else "BA":
            walls[side].append(run(single if side == "A" else both)[0])
    a, b = statistics.median(walls["A"]), statistics.median(walls["B"])
    print(
        f"log cost, {layers} layers, {rounds} alternated rounds: gaudi2 x 64 alone median "
        f"{a:.1f} s wall, with the log and 5 replays {b:.1f} s (ratio {b / a:.3f}; "
        f"A {', '.join(f'{w:.1f}' for w in walls['A'])}; B {', '.join(f'{w:.1f}' for w in walls['B'])})"
    )


if __name__ == "__main__":
    sys.exit(main())
