"""Search and kernel <-> launch on the timeline: `hpudash.timeline_find` and the page's steps."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("dash")

from hpudash import timeline as tl
from hpudash import timeline_find as find
from hpudash.pages.timeline import Focus, search_step
from hpudash.timeline_index import TimelineIndex

from tests.dashboard.synth import synthetic_trace


@pytest.fixture(scope="module")
def index() -> TimelineIndex:
    return tl.build_index(synthetic_trace(3_000, ranks=2))


def _names(idx: TimelineIndex, pos: np.ndarray) -> list[str]:
    return [idx.names[int(idx.name_code[p])] for p in pos]


def test_matches_by_name_in_any_case_by_start(index: TimelineIndex) -> None:
    hits = find.matches(index, "  ATEN::MM ")
    assert len(hits) and all("aten::mm" in n for n in _names(index, hits))
    want = {i for i in range(len(index.ts)) if "aten::mm" in index.names[int(index.name_code[i])]}
    assert set(hits.tolist()) == want  # every one, nothing else
    assert (np.diff(index.ts[hits]) >= 0).all()
    assert len(find.matches(index, "")) == 0 and len(find.matches(index, "no such op")) == 0
    rank1 = find.matches(index, "aten::mm", ranks=[1])
    assert 0 < len(rank1) < len(hits)
    groups = {index.groups[find.group_of(index, int(p))].rank for p in rank1}
    assert groups == {1}


def test_kernel_to_launch_and_back(index: TimelineIndex) -> None:
    dst = int(index.flow_dst[0])
    how, src = find.partners(index, dst)
    assert how == "launched by" and src.tolist() == [int(index.flow_src[0])]
    back, ops = find.partners(index, int(src[0]))
    assert back == "launches" and dst in ops.tolist()
    device = index.tracks[int(index.row_track[np.searchsorted(index.offsets, dst, "right") - 1])]
    host = index.tracks[
        int(index.row_track[np.searchsorted(index.offsets, int(src[0]), "right") - 1])
    ]
    assert device.is_device and not host.is_device
    assert find.position_of(index, int(index.event[dst])) == dst
    assert find.position_of(index, -5) is None
    lonely = next(
        p for p in range(len(index.ts)) if p not in set(index.flow_src) | set(index.flow_dst)
    )
    assert find.partners(index, lonely)[0] == ""


def test_focus_window_shows_the_slice(index: TimelineIndex) -> None:
    pos = int(find.matches(index, "aten::mm")[3])
    a, b = int(index.ts[pos]), int(index.end[pos])
    whole = (0, index.span_ns)
    lo, hi = find.focus_window(index, pos, whole)  # from zoomed out: zoomed onto it
    assert lo <= a and b <= hi and hi - lo <= max(find.FOCUS_SPAN * (b - a), find.MIN_SPAN_NS)
    kept = (max(a - 4 * (b - a), 0), max(a - 4 * (b - a), 0) + 8 * (b - a))
    lo2, hi2 = find.focus_window(index, pos, kept)  # it fits the current zoom: kept
    assert hi2 - lo2 == kept[1] - kept[0] and lo2 <= a and b <= hi2
    w = tl.query(index, tl.lanes(index, expanded=range(len(index.groups))), lo, hi)
    assert w.mode == "exact" and int(index.event[pos]) in w.bar_event.tolist()


def test_search_steps_through_matches_and_outlines_them(index: TimelineIndex) -> None:
    focus, said = search_step(index, "run", "aten::mm", 0, None, None, 0.0)
    hits = find.matches(index, "aten::mm")
    assert focus is not None and focus.match == 0 and focus.event == int(index.event[hits[0]])
    assert said.startswith(f"1 of {len(hits):,} slices") and "aten::mm" in said
    nxt, _ = search_step(index, "run", "aten::mm", 1, focus, None, 0.0)
    prev, _ = search_step(index, "run", "aten::mm", -1, focus, None, 0.0)
    assert nxt is not None and prev is not None
    assert (nxt.match, prev.match) == (1, len(hits) - 1)  # wraps around
    later, _ = search_step(index, "run", "aten::mm", 0, None, None, float(index.ts[hits[5]]))
    assert later is not None and later.match == 5  # the first from the view's start on
    none, said = search_step(index, "run", "nothing like this", 0, None, None, 0.0)
    assert none is not None and none.event == -1 and said.startswith("No slice name holds")
    assert search_step(index, "run", "  ", 0, None, None, 0.0) == (None, "")
    assert Focus.from_data(focus.data(), "run") == focus
    assert Focus.from_data(focus.data(), "other run") is None
    assert Focus.from_data({"run": "run", "event": "x"}, "run") is None
    # the figure outlines the matches in view and the focus boldly; outlines take no clicks
    pos = int(hits[0])
    lo, hi = find.focus_window(index, pos, (0, index.span_ns))
    w = tl.query(index, tl.lanes(index, expanded=range(len(index.groups))), lo, hi)
    fig = tl.figure(w, found=index.event[hits], focus=focus.event)
    outlines = {
        t["name"]: t for t in fig["data"] if t.get("name") in ("search matches", "in focus")
    }
    assert len(outlines["in focus"]["y"]) == 1
    assert all(t["hoverinfo"] == "skip" for t in outlines.values())
    in_view = int(np.isin(w.bar_event, index.event[hits]).sum())
    assert (
        len(outlines["in focus"]["y"]) + len(outlines.get("search matches", {"y": []})["y"])
        == in_view
    )


def test_focus_on_a_density_is_a_star_on_its_lane(index: TimelineIndex) -> None:
    pos = int(find.matches(index, "aten::mm")[0])
    shown = tl.lanes(index, expanded=range(len(index.groups)))
    y = find.lane_of(index, shown, pos)
    assert y is not None and shown[y].kind == "row"
    assert int(index.offsets[shown[y].ref]) <= pos < int(index.offsets[shown[y].ref + 1])
    collapsed = tl.lanes(index, expanded=[])
    y0 = find.lane_of(index, collapsed, pos)
    assert y0 is not None and collapsed[y0].kind == "summary"
    assert collapsed[y0].ref == find.group_of(index, pos)
    assert find.lane_of(index, tl.lanes(index, ranks=[9]), pos) is None
    w = tl.query(index, shown)  # the whole run: a density
    assert w.mode == "aggregated"
    at = (int(index.ts[pos] + index.end[pos]) // 2, y)
    fig = tl.figure(w, focus=int(index.event[pos]), focus_at=at)
    star = next(t for t in fig["data"] if t.get("name") == "in focus")
    assert star["y"] == [y] and star["marker"]["symbol"] == "star" and star["hoverinfo"] == "skip"
