"""The device model's MME term against Intel's MME cost model, and what pricing a shape costs.

    python bench/bench_mme_cost.py [--quiet]

Prints, for Gaudi 2 and Gaudi 3, every shape of bench/calibration/mme_shapes.py (GEMMs of each
family, attention batch GEMMs with head dims 32 / 64 / 128, ResNet-50's and Swin's convolutions,
small-N and skinny shapes, bf16 / fp8 / fp32) with the emulator's MME time (`hpusim.mme_cost`)
beside the cost model's formula evaluated on its own (bench/calibration/mme_oracle.py), the
geometry chosen and its utilization; then the largest error per chip (target: every shape
within 15 %). Last, the time one pricing takes, beside the oracle's in the same run (the
emulator prices an op once per signature, so this is paid once per distinct shape).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "calibration"))

from mme_oracle import expected_cycles, shape_problem
from mme_shapes import SHAPES
from mme_table import render, rows, summary


def _pricing_us() -> tuple[float, float]:
    """(ours, oracle) microseconds per shape, best of 5 rounds over every shape (Gaudi 2)."""
    from hpusim.device_model import load_profile
    from hpusim.mme_cost import mme_cycles

    arch = load_profile("gaudi2").mme
    problems = [(s.kind, *shape_problem(s.kind, s.dims), s.precision) for s in SHAPES]
    best_ours = best_oracle = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for kind, b, m, n, k, dt in problems:
            mme_cycles(arch, b, m, n, k, dt, kind)  # type: ignore[arg-type]
        t1 = time.perf_counter()
        for kind, b, m, n, k, dt in problems:
            expected_cycles("gaudi2", kind, b, m, n, k, dt)
        t2 = time.perf_counter()
        best_ours = min(best_ours, (t1 - t0) / len(problems) * 1e6)
        best_oracle = min(best_oracle, (t2 - t1) / len(problems) * 1e6)
    return best_ours, best_oracle


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quiet", action="store_true", help="the summary lines only")
    args = ap.parse_args()
    table = rows()
    print("\n".join(summary(table)) if args.quiet else render(table))
    ours, oracle = _pricing_us()
    print(
        f"pricing one shape: {ours:.1f} us (the oracle's plain formula: {oracle:.1f} us, "
        f"ratio {ours / oracle:.2f}), once per op signature"
    )
    worst = max(abs(r.error_pct) for r in table)
    return 0 if worst <= 15.0 else 1


if __name__ == "__main__":
    sys.exit(main())
