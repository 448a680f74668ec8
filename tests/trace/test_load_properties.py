"""Hypothesis properties on generated events: nesting, ordering, ids, unicode names, huge ints."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from hpuprof.trace.kineto_json import trace_from_events
from hpuprof.trace.schema import NO_ID


@st.composite
def nested_lane(
    draw: st.DrawFn, depth: int = 0, start: int = 0, end: int = 10**6
) -> list[dict[str, Any]]:
    """Properly nested slices inside [start, end) (integer µs)."""
    events: list[dict[str, Any]] = []
    cursor = start
    for _ in range(draw(st.integers(0, 3 if depth < 3 else 0))):
        if end - cursor < 4:
            break
        a = draw(st.integers(cursor, end - 2))
        b = draw(st.integers(a + 1, end))
        name = draw(st.text(min_size=1, max_size=8))
        events.append({"ph": "X", "cat": "cpu_op", "name": name, "ts": a, "dur": b - a})
        events.extend(draw(nested_lane(depth + 1, a, b)))
        cursor = b
    return events


def _brute_force_parent(events: list[dict[str, Any]], i: int) -> int:
    """The innermost enclosing slice placed before event i on its lane.

    Placement is (start, -duration, file order): of two identical intervals the one written
    first encloses the other (the loader's documented rule).
    """
    me = events[i]
    mine = (me["ts"], -me["dur"], i)
    best, best_key = -1, None
    for j, other in enumerate(events):
        if (other["pid"], other["tid"]) != (me["pid"], me["tid"]):
            continue
        key = (other["ts"], -other["dur"], j)
        encloses = other["ts"] <= me["ts"] and me["ts"] + me["dur"] <= other["ts"] + other["dur"]
        if encloses and key < mine and (best_key is None or key > best_key):
            best, best_key = j, key
    return best


@settings(max_examples=40, deadline=None)
@given(st.lists(nested_lane(), min_size=1, max_size=3))
def test_depth_and_parent_match_brute_force(lanes: list[list[dict[str, Any]]]) -> None:
    events = []
    for tid, lane in enumerate(lanes):
        for e in lane:
            events.append({**e, "pid": 1, "tid": tid, "args": {"External id": len(events)}})
    trace = trace_from_events(events, {}, source="gen.json")
    table = trace.events
    assert len(table) == len(events)
    assert table["ts_ns"].is_monotonic_increasing
    by_id = {int(x): i for i, x in enumerate(table["external_id"])}
    for i, event in enumerate(events):
        row = by_id[i]
        expected = _brute_force_parent(events, i)
        parent = int(table["parent"].iloc[row])
        if expected < 0:
            assert parent == NO_ID and table["depth"].iloc[row] == 0
        else:
            assert parent == by_id[expected]
            assert table["depth"].iloc[row] == table["depth"].iloc[parent] + 1
        assert table["name"].iloc[row] == event["name"]
        assert table["ts_ns"].iloc[row] == event["ts"] * 1000


big = st.integers(min_value=-(2**63), max_value=2**64 - 1)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(big, big, st.text(max_size=6)), min_size=1, max_size=20))
def test_huge_ids_never_crash_and_stay_in_args(ids: list[tuple[int, int, str]]) -> None:
    events = [
        {
            "ph": "X",
            "cat": "kernel",
            "name": name or "k",
            "pid": 0,
            "tid": 7,
            "ts": i,
            "dur": 1,
            "args": {"correlation": corr, "External id": ext},
        }
        for i, (corr, ext, name) in enumerate(ids)
    ]
    events += [
        {"ph": "s", "cat": "ac2g", "id": corr, "pid": 1, "tid": 1, "ts": 0} for corr, _, _ in ids
    ]
    trace = trace_from_events(events, {}, source="big.json")
    table = trace.events
    for row in range(len(table)):
        args = trace.args(row)
        corr = args["correlation"]
        expected = corr - 2**64 if corr > 2**63 - 1 else corr
        assert table["correlation"].iloc[row] == expected
    assert sorted(trace.flows["id"].astype(str)) == sorted(str(c) for c, _, _ in ids)
