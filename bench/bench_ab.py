"""Same-run A/B of two checkouts of this repository: load speed, load peak RSS, emulator cost per op.

    python bench/bench_ab.py A_DIR B_DIR [--trace T.json] [--rounds 7] [--ops 2000]

Each measurement is a fresh child process of this interpreter (this venv's packages) that imports
hpuprof and hpusim from A_DIR or B_DIR (run there, with PYTHONPATH first), pinned to one core where it can. The
two checkouts alternate round by round (A B, B A, ...) so a drift of the machine hits both alike;
each figure is the median over rounds of the child's CPU time (wall time beside it), and the
ratio B / A is printed. Used for the "unchanged within noise" check of a refactor (issue 26).

- load: `hpuprof.load(T, cache=False)` of a JSON trace (default: a generated 300k-event trace);
  peak RSS is the child's `ru_maxrss`.
- emulate: an eager emulated 16-element `a.add(b)` loop (`--ops` ops, recording off) and the
  same with recording on, per op.
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

_PIN = """
import os
if hasattr(os, "sched_setaffinity"):
    try:
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    except OSError:
        pass
"""

_LOAD = (
    _PIN
    + """
import json, resource, sys, time
import hpuprof
t0, c0 = time.perf_counter(), time.process_time()
rows = len(hpuprof.load(sys.argv[1], cache=False).events)
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"where": hpuprof.__file__, "rows": rows, "wall": wall, "cpu": cpu, "peak": peak}))
"""
)

_EMULATE = (
    _PIN
    + """
import json, sys, time
import torch
torch.set_num_threads(1)
import hpusim
ops = int(sys.argv[1])
hpusim.enable(mode="eager", record=sys.argv[2] == "on")
a = torch.ones(16, device="hpu")
b = torch.ones(16, device="hpu")
for _ in range(200):
    a.add(b)
t0, c0 = time.perf_counter(), time.process_time()
for _ in range(ops):
    a.add(b)
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
print(json.dumps({"where": hpusim.__file__, "wall": wall / ops, "cpu": cpu / ops}))
"""
)


def _child(checkout: Path, code: str, *args: str) -> dict[str, float]:
    path = os.pathsep.join([str(checkout), str(checkout / "runtime")])
    env = {**os.environ, "PYTHONPATH": path, "PYTHONDONTWRITEBYTECODE": "1"}
    out = subprocess.run(
        [sys.executable, "-c", code, *args],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        cwd=checkout,
    ).stdout
    result = json.loads(out.strip().splitlines()[-1])
    where = Path(str(result.pop("where"))).resolve()
    if not where.is_relative_to(checkout.resolve()):
        raise SystemExit(f"the child imported {where}, not {checkout}'s code")
    return {k: float(v) for k, v in result.items()}


def _alternate(
    a: Path, b: Path, rounds: int, code: str, *args: str
) -> tuple[list[dict[str, float]], list[dict[str, float]]]:
    runs: dict[Path, list[dict[str, float]]] = {a: [], b: []}
    for r in range(rounds):
        for checkout in (a, b) if r % 2 == 0 else (b, a):
            runs[checkout].append(_child(checkout, code, *args))
    return runs[a], runs[b]


def _median(runs: list[dict[str, float]], key: str) -> float:
    return statistics.median(run[key] for run in runs)


def _line(label: str, a: float, b: float, unit: str, scale: float) -> str:
    return f"  {label:<28} A {a * scale:10.2f} {unit:<3}  B {b * scale:10.2f} {unit:<3}  B/A {b / a:5.3f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", type=Path, help="checkout A (the baseline)")
    parser.add_argument("b", type=Path, help="checkout B")
    parser.add_argument("--trace", type=Path, help="a JSON trace to load (default: generated)")
    parser.add_argument("--events", type=int, default=300_000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--ops", type=int, default=2000)
    parser.add_argument("--skip-emulator", action="store_true")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        sys.path.insert(0, str(Path(__file__).parent))
        from gen_synthetic_trace import trace_or_generated

        trace = trace_or_generated(options.trace, scratch, options.events)
        size = os.path.getsize(trace)
        print(f"A = {options.a}\nB = {options.b}\nload of {trace} ({size / 1e6:,.1f} MB), "
              f"{options.rounds} rounds alternated, medians:")  # fmt: skip
        ra, rb = _alternate(options.a, options.b, options.rounds, _LOAD, str(trace))
        for key, label in (("cpu", "load CPU time"), ("wall", "load wall time")):
            print(_line(label, _median(ra, key), _median(rb, key), "s", 1.0))
        pa, pb = _median(ra, "peak"), _median(rb, "peak")
        print(_line("load peak RSS", pa, pb, "MB", 1e-6) + f"  ({pb / size:.2f}x the file)")
    if options.skip_emulator:
        return 0
    print(f"emulated eager a.add(b), {options.ops} ops, per op:")
    for record in ("off", "on"):
        ea, eb = _alternate(
            options.a, options.b, options.rounds, _EMULATE, str(options.ops), record
        )
        label = f"recording {record}, CPU"
        print(_line(label, _median(ea, "cpu"), _median(eb, "cpu"), "us", 1e6))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
