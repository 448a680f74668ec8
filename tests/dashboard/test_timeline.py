"""The timeline's index, lanes, level of detail and figure as pure functions (no browser)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("dash")

from hpudash import fmt
from hpudash import timeline as tl
from hpudash.details import event_rows
from hpudash.pages.timeline import window_from_query, window_from_relayout
from hpudash.timeline_index import TimelineIndex

from hpuprof.trace.model import Trace
from tests.conftest import SAMPLE_TRACES, SHARED_TRACES
from tests.dashboard.conftest import HOSTILE
from tests.dashboard.synth import synthetic_trace


def _fig(*args: Any, **kw: Any) -> Any:
    """The figure as plotly objects: validates every property the dashboard sends."""
    import plotly.graph_objects as go

    return go.Figure(tl.figure(*args, **kw))


@pytest.fixture(scope="module")
def trace() -> Trace:
    return synthetic_trace(3_000, ranks=2)


@pytest.fixture(scope="module")
def index(trace: Trace) -> TimelineIndex:
    return tl.build_index(trace)


def _real(rel: str) -> Trace:
    import hpuprof

    path = SHARED_TRACES / rel
    if not path.exists():
        pytest.skip("../shared/traces is not present")
    return hpuprof.load(path)


def _nccl_pair() -> Trace:
    return _real("tests/data/trace_filter")


# --- index ------------------------------------------------------------------------------------


def test_groups_tracks_and_rows(index: TimelineIndex, trace: Trace) -> None:
    labels = [g.label for g in index.groups]
    # per rank: the host process, then the device; names from the trace's metadata
    assert labels == ["rank 0 · python 100", "rank 0 · /device:HPU:0",
                      "rank 1 · python 100", "rank 1 · /device:HPU:0"]  # fmt: skip
    device = [t.label for t in index.tracks if index.groups[t.group].is_device]
    assert device == ["DMA 0", "MME 0", "TPC 0"] * 2  # natural order of the engine names
    # one row per nesting depth: ProfilerStep (0) > op (1) > launch (2)
    host = [t for t in index.tracks if not t.is_device]
    assert [t.depths for t in host] == [3, 3]
    assert int(index.row_depth.max()) == 2
    slices = trace.events[(trace.events["ph"] == "X") & (trace.events["kind"] != "span")]
    assert index.slices == len(slices) and index.ts.min() == 0
    # every slice sits on the row of its own depth
    depth_of_slice = index.row_depth[
        np.searchsorted(index.offsets, np.arange(index.slices), side="right") - 1
    ]
    assert (depth_of_slice == trace.events["depth"].to_numpy()[index.event]).all()


def test_track_names_come_from_the_trace_and_axis_from_the_first_event() -> None:
    """Kineto's process_labels ("GPU 0"), not "pyper:trainer:0:0 / stream 7"; the profiler's
    own span (seconds before anything happens) does not start the axis."""
    trace = _nccl_pair()
    idx = tl.build_index(trace)
    labels = [g.label for g in idx.groups]
    assert labels == ["rank 0 · pyper:trainer:0:0 4037", "rank 0 · GPU 0",
                      "rank 1 · pyper:trainer:0:1 4045", "rank 1 · GPU 1"]  # fmt: skip
    assert [t.label for t in idx.tracks if t.group == 1][:2] == ["stream 7", "stream 23"]
    ev = trace.events
    real = ev[(ev["kind"] != "span")]
    assert idx.t0_ns == int(real["ts_ns"].min())
    span = ev[ev["kind"] == "span"]
    assert int(span["ts_ns"].min()) < idx.t0_ns - 500_000_000  # the span starts 0.85 s early
    assert idx.span_ns == int((real["ts_ns"] + real["dur_ns"]).max()) - idx.t0_ns


def test_index_round_trips_through_arrays(index: TimelineIndex, tmp_path: Path) -> None:
    path = tmp_path / "index.npz"
    np.savez(path, **index.to_arrays())  # type: ignore[arg-type]
    with np.load(path, allow_pickle=False) as npz:
        back = TimelineIndex.from_arrays({k: npz[k] for k in npz.files})
    assert back is not None
    assert back.groups == index.groups and back.tracks == index.tracks
    assert back.names == index.names and back.t0_ns == index.t0_ns
    assert np.array_equal(back.ts, index.ts) and np.array_equal(back.flow_dst, index.flow_dst)
    stale = index.to_arrays() | {"version": np.asarray(-1)}
    assert TimelineIndex.from_arrays(stale) is None


def test_flows_join_launches_to_device_ops(index: TimelineIndex, trace: Trace) -> None:
    ev = trace.events
    n_device = int(ev["is_device"].sum())
    assert len(index.flow_src) == n_device  # every synthetic device op has its launch
    src_rows, dst_rows = index.event[index.flow_src], index.event[index.flow_dst]
    assert (ev["correlation"].to_numpy()[src_rows] == ev["correlation"].to_numpy()[dst_rows]).all()
    assert not ev["is_device"].to_numpy()[src_rows].any()
    assert ev["is_device"].to_numpy()[dst_rows].all()


# --- lanes and level of detail -----------------------------------------------------------------


def test_lanes_collapse_and_filter_ranks(index: TimelineIndex) -> None:
    full = tl.lanes(index)
    assert [lane.kind for lane in full[:5]] == ["summary", "row", "row", "row", "summary"]
    assert full[0].label.startswith("▾ ")
    collapsed = tl.lanes(index, expanded=[1, 3])
    assert next(lane.label for lane in collapsed if lane.kind == "summary").startswith("▸ ")
    assert len(collapsed) == len(full) - 6  # both host groups folded to one row each
    rank1 = tl.lanes(index, ranks=[1])
    assert {index.groups[lane.group].rank for lane in rank1} == {1}


def test_a_pinned_track_stays_on_top_whatever_is_collapsed_or_filtered(
    index: TimelineIndex,
) -> None:
    """A pinned track's rows come first (marked "pinned:", with its group's name), leave its group,
    and stay when its group is collapsed or its rank filtered out; unpinned, all is as before."""
    device = next(t for t, tr in enumerate(index.tracks) if tr.is_device and tr.group == 3)
    host = next(t for t, tr in enumerate(index.tracks) if not tr.is_device and tr.group == 0)
    keys = [tl.track_key(index, device), tl.track_key(index, host), "9/nope/1"]
    pinned = tl.tracks_of_keys(index, keys)
    assert pinned == [device, host]  # in the order pinned; an unknown key is left out
    shown = tl.lanes(index, ranks=[0], expanded=[], pinned=pinned)
    top = [lane for lane in shown if lane.pinned]
    assert shown[: len(top)] == tuple(top)
    assert top[0].label == "pinned: rank 1 · /device:HPU:0 · " + index.tracks[device].label
    assert top[0].is_device and not top[1].is_device
    assert top[1].label.startswith("pinned: rank 0 · python 100 · ")
    assert len(top) == 1 + index.tracks[host].depths  # a device stream is one row here
    rest = shown[len(top) :]
    assert all(lane.kind == "summary" for lane in rest)  # all collapsed, rank 0 only
    # expanded: the pinned track's rows are not drawn twice
    every = tl.lanes(index, pinned=pinned)
    rows = [lane.ref for lane in every if lane.kind == "row"]
    assert sorted(rows) == list(range(len(index.row_track)))
    assert len(every) == len(tl.lanes(index))
    # the figure draws its slices on the top lanes, with a line under the pinned block
    w = tl.query(index, every, 0, index.span_ns / 50)
    assert w.mode == "exact"
    on_pinned = w.bar_lane < len(top)
    assert on_pinned.any()
    pinned_rows = {lane.ref for lane in top}
    rows_of_bars = np.searchsorted(index.offsets, np.flatnonzero(np.isin(index.event, w.bar_event[on_pinned])), side="right") - 1  # fmt: skip
    assert set(rows_of_bars.tolist()) <= pinned_rows
    layout = _fig(w).layout
    assert layout.shapes[0].y0 == len(top) - 0.5
    assert layout.yaxis.ticktext[0].startswith("pinned: ")
    assert "shapes" not in tl.figure(tl.query(index, tl.lanes(index), 0, 1e6))["layout"]


def test_a_slice_names_its_track_to_pin(index: TimelineIndex) -> None:
    from hpudash import timeline_find as find
    from hpudash.pages.timeline import pin_toggled

    for pos in (0, index.slices // 2, index.slices - 1):
        row = int(np.searchsorted(index.offsets, pos, side="right") - 1)
        track = find.track_of(index, pos)
        assert row in index.rows_of_track(track).tolist()
    from hpudash.pages.timeline import clicked_slice

    assert clicked_slice({"points": [{"customdata": ["e", 5]}]}) == ["e", 5]
    assert clicked_slice({"points": [{"x": 1.0, "z": 0.4}]}) is None  # a density cell
    assert clicked_slice(None) is None and clicked_slice({"points": []}) is None
    key = tl.track_key(index, find.track_of(index, 0))
    assert pin_toggled([], key) == [key]
    assert pin_toggled(["x", key], key) == ["x"]
    assert pin_toggled(None, key) == [key]


def test_zoomed_out_is_density_zoomed_in_is_exact(index: TimelineIndex) -> None:
    shown = tl.lanes(index)
    whole = tl.query(index, shown, exact_limit=1_000)
    assert whole.mode == "aggregated"
    assert whole.busy.shape == (len(shown), tl.DEFAULT_BUCKETS)
    assert np.all((whole.busy >= 0) & (whole.busy <= 1))
    zoom = tl.query(index, shown, 1_000_000, 1_400_000)
    assert zoom.mode == "exact" and len(zoom.bar_lane) == zoom.total > 0
    assert np.all((zoom.bar_end >= 1_000_000) & (zoom.bar_ts <= 1_400_000))
    assert (
        tl.query(index, shown, 1_000_000, 1_400_000, exact_limit=zoom.total - 1).mode
        == "aggregated"
    )


def test_exact_window_holds_exactly_the_overlapping_slices(index: TimelineIndex) -> None:
    lo, hi = 2_000_000, 2_600_000
    w = tl.query(index, tl.lanes(index), lo, hi)
    got = sorted(int(e) for e in w.bar_event if e >= 0)
    brute = np.flatnonzero((index.ts <= hi) & (index.end >= lo))
    assert got == sorted(index.event[brute].tolist())


def test_busy_fraction_matches_brute_force(index: TimelineIndex) -> None:
    shown = tl.lanes(index)
    w = tl.query(index, shown, buckets=50, exact_limit=0)
    y = next(i for i, lane in enumerate(shown) if lane.kind == "row" and lane.is_device)
    r = shown[y].ref
    a, b = int(index.offsets[r]), int(index.offsets[r + 1])
    ts, end = index.ts[a:b], index.end[a:b]
    for k in (0, 17, 49):
        lo, hi = w.edges[k], w.edges[k + 1]
        busy = np.clip(np.minimum(end, hi) - np.maximum(ts, lo), 0, None).sum() / (hi - lo)
        want = max(busy, 0.01) if ((ts >= lo) & (ts < hi)).any() else busy
        assert w.busy[y, k] == pytest.approx(want, abs=1e-9)


def test_device_rows_are_never_blank_when_zoomed_out() -> None:
    """A device busy 0.1 % of the time (slices far narrower than a pixel) still shows."""
    trace = synthetic_trace(6_000)
    ev = trace.events
    dev = ev["is_device"].to_numpy()
    ev.loc[dev, "dur_ns"] = 50  # 50 ns kernels over a trace of tens of ms
    idx = tl.build_index(trace)
    shown = tl.lanes(idx)
    w = tl.query(idx, shown, exact_limit=0)
    for y, lane in enumerate(shown):
        if lane.kind == "row" and lane.is_device:
            assert (w.busy[y] >= 0.01).sum() > 10, lane.label
    exact = tl.query(idx, shown, 0, idx.span_ns, exact_limit=10**9)
    fig = _fig(exact)
    px_ms = (exact.t1 - exact.t0) / tl.PLOT_PX / 1e6
    device = next(t for t in fig.data if t.name == "device slice")
    assert min(device.x) >= px_ms * 0.999  # at least a pixel wide


def test_markers_and_marked_slices(index: TimelineIndex, trace: Trace) -> None:
    kinds = {tl.MARKS[k] for k in np.unique(index.mark_kind)}
    assert kinds == {"compile", "sync", "fallback", "graph_replay"}
    ev = trace.events
    for kind, hpu in (("compile", "compile"), ("graph_replay", "graph_replay"), ("sync", "sync")):
        assert (index.mark_kind == tl.MARKS.index(kind)).sum() == (ev["hpu_event"] == hpu).sum()
    shown = tl.lanes(index)
    dense = _fig(tl.query(index, shown, exact_limit=0))
    assert {"compile", "sync", "CPU fallback", "HPU graph replay"} <= {t.name for t in dense.data}
    exact = tl.query(index, shown, 0, 3_000_000)
    assert exact.mode == "exact" and exact.marked > 0
    # a marked slice is a coloured bar; its marker is not drawn on top of it
    drawn = set(exact.bar_event[exact.bar_mark > 0].tolist())
    assert drawn and not drawn & set(exact.mark_event.tolist())


def test_flow_arrows_when_zoomed_in(index: TimelineIndex) -> None:
    shown = tl.lanes(index)
    w = tl.query(index, shown, 1_000_000, 1_400_000)
    assert len(w.flow_x0) > 0 and (w.flow_x1 >= w.flow_x0).all()
    host_lanes = {i for i, lane in enumerate(shown) if lane.kind == "row" and not lane.is_device}
    assert set(w.flow_y0.tolist()) <= host_lanes and not set(w.flow_y1.tolist()) & host_lanes
    fig = _fig(w)
    arrows = next(t for t in fig.data if t.name == "launch → device op")
    assert arrows.marker.symbol == "arrow"
    assert not len(tl.query(index, shown, 1_000_000, 1_400_000, flows=False).flow_x0)


def test_counter_tracks(tmp_path: Path) -> None:
    import pandas as pd

    trace = synthetic_trace(1_200)
    n = 5_000
    counters = pd.DataFrame(
        {
            "name": pd.Categorical(["hpu.memory_in_use_bytes"] * n),
            "series": pd.Categorical(["bytes"] * n),
            "cat": pd.Categorical(["hpuprof"] * n),
            "pid": pd.Categorical(["100"] * n),
            "tid": pd.Categorical(["0"] * n),
            "rank": np.zeros(n, dtype=np.int32),
            "ts_ns": np.linspace(1_000_000, 9_000_000, n).astype(np.int64),
            "value": np.r_[np.arange(n - 1) * 1024.0, 5e9],
        }
    )
    from dataclasses import replace

    idx = tl.build_index(replace(trace, counters=counters))
    shown = tl.lanes(idx)
    lanes_c = [i for i, lane in enumerate(shown) if lane.kind == "counter"]
    # the emulator's memory counter is drawn as the device's (modeled) memory track
    assert [shown[i].label for i in lanes_c] == ["memory · HPU 0 (allocated, modeled)"]
    w = tl.query(idx, shown, buckets=100)
    assert 0 < len(w.ctr_ts) <= 200  # thinned to the buckets
    assert w.ctr_value.max() == 5e9  # the peak survives the thinning
    fig = _fig(w)
    line = next(t for t in fig.data if t.name == "counters")
    assert any("GiB" in h for h in line.hovertext)
    assert tl.counter_text(3 * 2**20, "memory (bytes)") == "3.00 MiB"


def test_memory_of_a_real_trace_is_drawn_as_step_lines() -> None:
    """Allocator events (`[memory]` instants) give an allocated and a reserved track per
    device: step lines through the allocator's totals, hovered in GiB."""
    from tests.analysis.test_memory import GIB, allocator_trace

    idx = tl.build_index(allocator_trace())
    shown = tl.lanes(idx)
    labels = [lane.label for lane in shown if lane.kind == "counter"]
    assert labels == ["memory · CUDA 0 (allocated)", "memory · CUDA 0 (reserved)"]
    fig = tl.figure(tl.query(idx, shown))
    lines = [t for t in fig["data"] if t.get("name") == "counters"]
    assert [t["line"]["shape"] for t in lines] == ["hv", "hv"]
    allocated = lines[0]
    assert [h.split(": ")[1] for h in allocated["hovertext"]] == [
        "1.00 GiB", "3.00 GiB", "4.00 GiB", "3.00 GiB", "2.00 GiB"
    ]  # fmt: skip
    # the peak is the top of the lane, times from the trace's first event
    y = np.asarray(allocated["y"])
    lane = labels.index("memory · CUDA 0 (allocated)")
    y_lane = [i for i, ln in enumerate(shown) if ln.kind == "counter"][lane]
    assert y.min() == pytest.approx(y_lane - 0.4) and int(y.argmin()) == 2
    assert list(np.round(allocated["x"] * 1e6).astype(int)) == [10, 210, 410, 600, 610]
    assert idx.ctr_value.max() == 4 * GIB


def test_memory_tracks_of_a_shared_real_trace() -> None:
    """The V100 profile_memory trace: CUDA memory tracks whose peak is the allocator's."""
    trace = _real("tests/data/df_index_resolver/df_index_resolver.json.gz")
    idx = tl.build_index(trace)
    labels = [t.label for t in idx.tracks if t.counter]
    assert "memory · CUDA 1 (allocated)" in labels and "memory · CUDA 1 (reserved)" in labels
    from hpuprof.analysis.memory import analyze_memory

    peak = next(d for d in analyze_memory(trace).devices if d.device == "CUDA 1").peak_bytes
    k = next(t for t, tr in enumerate(idx.tracks) if tr.label == "memory · CUDA 1 (allocated)")
    pos = list(idx.ctr_track).index(k)
    a, b = int(idx.ctr_offsets[pos]), int(idx.ctr_offsets[pos + 1])
    assert idx.ctr_value[a:b].max() == peak
    w = tl.query(idx, tl.lanes(idx), buckets=200)
    drawn = w.ctr_value[
        w.ctr_lane
        == next(i for i, ln in enumerate(w.lanes) if ln.label == "memory · CUDA 1 (allocated)")
    ]
    assert 0 < len(drawn) <= 400 and drawn.max() == peak  # thinned, the peak kept


def test_figure_reads_in_units_with_legend_outside(index: TimelineIndex) -> None:
    w = tl.query(index, tl.lanes(index), 1_000_000, 1_400_000)
    fig = _fig(w, revision="run")
    ticks = list(fig.layout.xaxis.ticktext)
    assert ticks and all(t.endswith((" us", " ms", " s")) for t in ticks)
    assert fig.layout.legend.y == 1 and fig.layout.legend.yanchor == "bottom"
    assert fig.layout.uirevision == "run" and fig.layout.clickmode == "event"
    names = [t for t in fig.data if t.name == "slice names"]
    assert len(names) == 1 and names[0].mode == "text" and names[0].hoverinfo == "skip"


def test_names_are_drawn_inside_slices_wide_enough(index: TimelineIndex) -> None:
    """Issue 25: every bar label was hidden (rows too thin for plotly's bar text); names are
    now a text trace, each centred in its slice's visible part, cut with "…" to fit it."""
    w = tl.query(index, tl.lanes(index), 1_000_000, 1_400_000)
    names = next(t for t in tl.figure(w)["data"] if t.get("name") == "slice names")
    px_ns = (w.t1 - w.t0) / tl.PLOT_PX
    start = np.maximum(w.bar_ts, w.t0)
    end = np.minimum(w.bar_end, w.t1)
    whole = 0
    for x, y, text in zip(names["x"], names["y"], names["text"], strict=True):
        at = x * 1e6
        hit = np.flatnonzero((w.bar_lane == y) & (start <= at) & (end >= at) & (w.bar_event >= 0))
        assert len(hit), text  # the name sits on a slice of its row
        j = int(hit[0])
        width_px = (end[j] - start[j]) / px_ns
        assert len(text) * tl.CHAR_PX + 2 * tl.LABEL_PAD_PX <= width_px + 1e-9
        assert abs(at - (start[j] + end[j]) / 2) < 1  # centred in the visible part
        assert text == w.bar_name[j] or (text.endswith("…") and w.bar_name[j].startswith(text[:-1]))
        whole += text == w.bar_name[j]
    assert whole > 0
    wide = (end - start) / px_ns >= 40 * tl.CHAR_PX
    assert len(names["text"]) >= int(np.count_nonzero(wide & (w.bar_event >= 0)))
    assert tl.fit_name("aten::native_layer_norm", 80) == "aten::nat…"
    assert tl.fit_name("aten::mm", 80) == "aten::mm"
    assert tl.fit_name("aten::native_layer_norm", 30) == ""


def test_hostile_names_are_inert_in_the_figure() -> None:
    trace = synthetic_trace(600)
    ev = trace.events
    ev["name"] = ev["name"].cat.rename_categories({"aten::relu": HOSTILE})
    idx = tl.build_index(trace)
    fig = _fig(tl.query(idx, tl.lanes(idx), exact_limit=10**9))
    text = fig.to_json()
    assert "<img" not in text and "&lt;img" in text


@pytest.mark.parametrize(
    "relayout, want",
    [(None, None), ({"autosize": True}, None), ({"xaxis.autorange": True}, (None, None)),
     ({"xaxis.range[0]": 2, "xaxis.range[1]": 1}, (1e6, 2e6)),
     ({"xaxis.range": [0.5, 1.5]}, (5e5, 1.5e6)), ({"xaxis.range[0]": "x", "xaxis.range[1]": 1}, None),
     ({"xaxis.range[0]": float("nan"), "xaxis.range[1]": 1}, None), ("junk", None)],
)  # fmt: skip
def test_window_from_relayout(relayout: Any, want: Any) -> None:
    assert window_from_relayout(relayout) == want


def test_window_from_query() -> None:
    assert window_from_query({"t0": "1.5", "t1": "2"}) == (1.5e6, 2e6)
    for bad in ({}, {"t0": "x", "t1": "1"}, {"t0": "2", "t1": "1"}, {"t0": "inf", "t1": "1"}):
        assert window_from_query(bad) == (None, None)


def test_ticks_and_durations_read_with_units() -> None:
    assert fmt.axis_ticks(0, 54e6)[1][:3] == ["0 ms", "10 ms", "20 ms"]
    assert fmt.axis_ticks(20.64e6, 21.84e6)[1][0] == "20.8 ms"
    assert fmt.axis_ticks(0, 40e9)[1][-1] == "40 s"
    assert [fmt.duration(v) for v in (0, 1234, 999_999, 1.5e9)] == ["0 ns", "1.234 us", "1.000 ms", "1.500 s"]  # fmt: skip
    assert fmt.duration(float("nan")) == "n/a"


def test_slice_details_have_no_placeholders(trace: Trace, index: TimelineIndex) -> None:
    ev = trace.events
    row = int(np.flatnonzero((ev["kind"] == "cpu_op").to_numpy())[0])
    rows = dict(event_rows(trace, row, index.t0_ns))
    assert rows["Name"] == str(ev["name"].iat[row])
    assert rows["Start"].endswith("after the first event")
    assert "Correlation id" not in rows and "Engine" not in rows  # -1 and "" are left out
    text = " ".join(f"{k} {v}" for k, v in rows.items())
    assert " -1" not in text and '""' not in text and str(int(ev["ts_ns"].iat[row])) not in text
    kernel = int(np.flatnonzero(ev["is_device"].to_numpy())[0])
    krows = dict(event_rows(trace, kernel, index.t0_ns))
    assert krows["Engine"] in ("MME", "TPC", "DMA") and int(krows["Correlation id"]) > 0
    assert event_rows(trace, -1, 0) == [] and event_rows(trace, 10**9, 0) == []


def test_overlapping_siblings_get_a_row_of_their_own() -> None:
    """A slice that overlaps another of its depth without nesting in it (a lazy graph's
    window crossing ops) is drawn on the first free row below: nothing is hidden."""
    from hpudash.timeline_index import free_rows

    track = np.zeros(5, dtype=np.int64)
    depth = np.array([0, 1, 1, 1, 2])
    ts = np.array([0, 10, 30, 40, 12])
    end = np.array([100, 50, 60, 45, 20])  # 30-60 overlaps 10-50 at depth 1; 40-45 nests in 30-60
    rows = free_rows(track, depth, ts, end)
    assert rows.tolist() == [0, 1, 2, 3, 2]
    assert free_rows(track[:2], depth[:2], ts[:2], end[:2]).tolist() == [0, 1]  # nested: kept


def test_box_select_self_time_fits_the_box(tmp_path: Path) -> None:
    """Issue 25: a 90 ms box on one thread of an emulated lazy run summed 182 ms of self time
    (a modeled compile outlasts its step; the next steps started inside it)."""
    import shutil

    from hpudash.data import DataStore
    from hpudash.pages.timeline import range_rows

    sample = SAMPLE_TRACES / "emulated_lazy"
    if not sample.is_dir():
        pytest.skip("sample_traces/emulated_lazy is not present")
    shutil.copytree(sample, tmp_path / "lazy")
    store = DataStore(tmp_path, disk=False)
    entry = store.entry("lazy")
    idx = store.timeline(entry)
    shown = tl.lanes(idx, expanded=range(len(idx.groups)))
    host = [y for y, lane in enumerate(shown) if lane.kind == "row" and not lane.is_device]
    span_ms = idx.span_ns / 1e6
    for lo, hi in ((0.0, span_ms), (span_ms * 0.2, span_ms * 0.7)):
        for ys in ([host[0]], [0, len(shown) - 1]):
            box = {"x": [lo, hi], "y": [min(ys), max(ys)]}
            head, rows = range_rows(store, entry, idx, shown, box)
            lanes = int(head.split(" on ")[1].split()[0])
            assert rows and lanes >= 1
            total = sum(float(r["self_ms"]) for r in rows)
            assert total <= (hi - lo) * lanes + 1e-6, (head, total)
    # on one host thread, the whole run: self time is the thread's busy time, once
    box = {"x": [0.0, span_ms], "y": [host[0], host[0]]}
    _, rows = range_rows(store, entry, idx, shown, box)
    assert sum(float(r["self_ms"]) for r in rows) <= span_ms + 1e-6


def test_each_stream_is_one_track() -> None:
    """Issue 25: AlexNet (A100) showed streams 7 and 20 twice: their `cuda_sync` waits (host
    events on the stream's tid) made a track of their own beside the kernels'."""
    import hpuprof

    path = SHARED_TRACES / "tests" / "data" / "critical_path" / "alexnet"
    if not path.is_dir():
        pytest.skip("../shared/traces is not present")
    idx = tl.build_index(hpuprof.load(next(path.glob("*.json.gz"))))
    keys = [(t.group, t.tid) for t in idx.tracks]
    assert len(keys) == len(set(keys))
    gpu = [t for t in idx.tracks if idx.groups[t.group].label == "GPU 0"]
    streams = [t.label for t in gpu if t.label.startswith("stream")]
    assert streams == ["stream 7", "stream 20"] and all(t.is_device for t in gpu[:2])
    labels = [lane.label for lane in tl.lanes(idx, expanded=range(len(idx.groups))) if lane.label]
    assert labels.count("stream 7") == 1 and labels.count("stream 20") == 1
    assert len(idx.flow_src) > 0  # launches still reach their kernels


def test_a_counter_holds_its_last_value_to_the_window_end() -> None:
    """Zoomed in between two samples of a counter, its step line still crosses the window at
    the value it holds: two points, at the window's start and end (one point draws nothing)."""
    from tests.analysis.test_memory import GIB, allocator_trace

    idx = tl.build_index(
        allocator_trace()
    )  # allocated: 1, 3, 4, 3, 2 GiB at 10, 210, 410, 600, 610
    shown = tl.lanes(idx)
    lane = next(i for i, ln in enumerate(shown) if ln.label == "memory · CUDA 0 (allocated)")
    for lo, hi, held in ((250, 300, 3), (420, 590, 4), (601, 609, 3)):
        w = tl.query(idx, shown, lo, hi)
        sel = w.ctr_lane == lane
        assert list(w.ctr_ts[sel]) == [lo, hi], (lo, hi)
        assert list(w.ctr_value[sel]) == [held * GIB] * 2, (lo, hi)
