"""`hpuprof diff` against HTA 0.5.0's own `TraceDiff.compare_traces` on the shared pair.

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
from hpuprof.analysis.diff import diff_traces


@pytest.mark.slow
def test_diff_matches_hta_compare_traces(shared_kineto_dir: Path) -> None:
    trace_diff = pytest.importorskip("hta.trace_diff")
    logging.disable(logging.WARNING)
    try:
        base = shared_kineto_dir / "tests" / "data" / "trace_diff"
        hta = trace_diff.TraceDiff.compare_traces(str(base / "control"), str(base / "test"))
    finally:
        logging.disable(logging.NOTSET)
    ours = diff_traces(
        hpuprof.load(base / "control" / "control.json.gz"),
        hpuprof.load(base / "test" / "test.json.gz"),
    )
    assert (ours.a_step, ours.b_step) == (1009, 1009)
    by_name = {o.name: o for o in ours.ops}
    assert set(by_name) == set(hta.index)
    for name, row in hta.iterrows():
        o = by_name[name]
        got = (o.a_count, o.b_count, o.a_total_ns / 1000, o.b_total_ns / 1000)
        want = (
            row["Control_counts"],
            row["Test_counts"],
            row["Control_total_duration"],
            row["Test_total_duration"],
        )
        assert got == pytest.approx(want, abs=1e-6), name
        assert o.change == row["counts_change_categories"], name
