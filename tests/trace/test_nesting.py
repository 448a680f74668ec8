"""Depth and parent of sorted slices: the compiled pass and the numpy one give the same
arrays, and both follow the rule written out row by row (depth: the earlier rows of the lane
that end after the row starts; parent: the last earlier row of the lane one level up)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpuprof.trace import fastscan
from hpuprof.trace.kineto_json import read_kineto_json
from hpuprof.trace.nesting import nest, nest_numpy
from hpuprof.trace.schema import NO_ID
from tests.trace.test_fast_scan import assert_same

Sorted = tuple[np.ndarray, np.ndarray, np.ndarray]

slices = st.lists(st.tuples(st.integers(0, 2), st.integers(0, 12), st.integers(0, 6)), max_size=80)


def _sorted(rows: list[tuple[int, int, int]]) -> Sorted:
    """lane, start, end sorted by (lane, start, -duration, file order), as the loader sorts."""
    lane, start, dur = (np.array([r[i] for r in rows], dtype=np.int64) for i in range(3))
    order = np.lexsort((np.arange(len(rows)), -dur, start, lane))
    return lane[order], start[order], (start + dur)[order]


def _by_rule(lane: np.ndarray, start: np.ndarray, end: np.ndarray) -> tuple[list[int], list[int]]:
    depth: list[int] = []
    parent: list[int] = []
    for i in range(len(lane)):
        mine = [j for j in range(i) if lane[j] == lane[i]]
        d = sum(1 for j in mine if end[j] > start[i])
        up = [j for j in mine if depth[j] == d - 1]
        depth.append(d)
        parent.append(up[-1] if d and up else NO_ID)
    return depth, parent


@settings(max_examples=300)
@given(slices)
def test_numpy_nesting_follows_the_rule(rows: list[tuple[int, int, int]]) -> None:
    lane, start, end = _sorted(rows)
    depth, parent = nest_numpy(lane, start, end)
    assert (depth.tolist(), parent.tolist()) == _by_rule(lane, start, end)


@pytest.mark.skipif(fastscan.nest_function() is None, reason="_kineto_scan is not built")
@settings(max_examples=300)
@given(slices)
def test_compiled_nesting_equals_numpy(rows: list[tuple[int, int, int]]) -> None:
    lane, start, end = _sorted(rows)
    depth, parent = nest(lane, start, end)
    expected = nest_numpy(lane, start, end)
    assert depth.tolist() == expected[0].tolist()
    assert parent.tolist() == expected[1].tolist()


@pytest.mark.skipif(fastscan.nest_function() is None, reason="_kineto_scan is not built")
def test_compiled_nesting_equals_numpy_deep_and_wide() -> None:
    """Past the numpy path's per-level loop (depth > 64), lanes of many sizes, partial overlaps."""
    rng = np.random.default_rng(7)
    n = 20_000
    rows = list(
        zip(
            rng.integers(0, 40, n).tolist(),
            rng.integers(0, 3_000, n).tolist(),
            rng.integers(0, 400, n).tolist(),
            strict=True,
        )
    )
    rows += [(99, 5, 10)] * 300  # identical slices: each nests in the one before
    lane, start, end = _sorted(rows)
    depth, parent = nest(lane, start, end)
    expected = nest_numpy(lane, start, end)
    assert int(depth.max()) == 299
    assert np.array_equal(depth, expected[0])
    assert np.array_equal(parent, expected[1])


ROOT = Path(__file__).parents[2]


@pytest.mark.skipif(fastscan.nest_function() is None, reason="_kineto_scan is not built")
@pytest.mark.parametrize(
    "path",
    [
        ROOT / "sample_traces" / "cpu_torch_profiler" / "trace.pt.trace.json",
        ROOT / "tests" / "trace" / "data" / "gaudi_merged.json",
    ],
    ids=lambda p: p.name,
)
def test_traces_load_the_same_without_the_compiled_nesting(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    compiled = read_kineto_json(path, threads=1)
    with monkeypatch.context() as patch:
        patch.setattr(fastscan, "nest_function", lambda: None)
        plain = read_kineto_json(path, threads=1)
    assert int(compiled.events["depth"].max()) > 0  # (the trace nests: the test can fail)
    assert_same((plain, []), (compiled, []))  # column by column, every value
