"""HTA's TraceDiff definition (`diff.op_summary`) against HTA 0.5.0's own
`TraceDiff.compare_traces` on the shared pair.

Runs HTA live when it is importable (the `compare` extra), skips otherwise. Where the two
definitions coincide (first rank, first ProfilerStep of each trace, every slice of that step,
device events placed by their launch's step) counts and total durations must be identical;
HTA reports microseconds and the shared traces are integer-microsecond, so durations are exact.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

import hpuprof
from hpuprof.analysis.diff import first_step, op_summary


@pytest.mark.slow
def test_diff_matches_hta_compare_traces(shared_kineto_dir: Path) -> None:
    trace_diff = pytest.importorskip("hta.trace_diff")
    logging.disable(logging.WARNING)
    try:
        base = shared_kineto_dir / "tests" / "data" / "trace_diff"
        hta = trace_diff.TraceDiff.compare_traces(str(base / "control"), str(base / "test"))
    finally:
        logging.disable(logging.NOTSET)
    control = hpuprof.load(base / "control" / "control.json.gz")
    test = hpuprof.load(base / "test" / "test.json.gz")
    steps = (first_step(control), first_step(test))
    assert steps == (1009, 1009)
    a, b = op_summary(control, steps[0]), op_summary(test, steps[1])
    both = a.add_suffix("_a").join(b.add_suffix("_b"), how="outer").fillna(0)
    assert set(both.index) == set(hta.index)
    for name, row in hta.iterrows():
        o = both.loc[name]
        got = (o["counts_a"], o["counts_b"], o["total_ns_a"] / 1000, o["total_ns_b"] / 1000)
        want = (
            row["Control_counts"],
            row["Test_counts"],
            row["Control_total_duration"],
            row["Test_total_duration"],
        )
        assert got == pytest.approx(want, abs=1e-6), name
        change = (
            "+" if o["counts_b"] > o["counts_a"] else "-" if o["counts_b"] < o["counts_a"] else "="
        )
        assert change == row["counts_change_categories"], name
