"""The timeline's index of a trace: every slice sorted once into rows, saved as plain arrays.

A *track* is one lane of the trace (a host thread, a device stream or engine) of one rank; its
*rows* are its nesting depths (depth 0 on top, as in Perfetto), deeper than `MAX_DEPTH` folded
into the last row. Tracks belong to *groups* (a process of a rank: "GPU 0", "python 4037"),
named from the trace's own metadata (Kineto `process_labels`, `process_name`, `thread_name`).
Each group also has a *summary*: the union of its tracks' busy time, drawn when the group is
collapsed. Counter series are tracks of their own: the trace's counters (recipe cache, ...) and
its memory per device, allocated and reserved (`hpuprof.analysis.memory_tracks`: from the
allocator's `[memory]` events of a real trace, or the emulator's modeled counter).

Times are ns relative to `t0_ns`: the first event that is not the profiler's own span (the
`PyTorch Profiler (0)` span often starts seconds before anything happens). The index is a
frozen dataclass of numpy arrays plus small tuples, so `to_arrays` / `from_arrays` store it in
one `.npz` (the dashboard's disk cache) and a restarted dashboard never rebuilds it.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson

from hpuprof.trace.schema import NO_ID, STEP_ANNOTATION_PREFIX

if TYPE_CHECKING:
    import pandas as pd

    from hpuprof.trace.model import Trace

MARKS: tuple[str, ...] = ("", "compile", "sync", "fallback", "graph_replay")
"""Marker classes; index 0 is an unmarked slice."""
MAX_DEPTH = 12
"""Rows per track; deeper slices share the last row."""
INDEX_VERSION = 4
"""Bump when the index layout changes: invalidates indexes kept on disk."""


@dataclass(frozen=True)
class Group:
    """A process of one rank: its tracks are drawn together and collapse together."""

    rank: int
    pid: str
    label: str
    is_device: bool


@dataclass(frozen=True)
class Track:
    """One lane of a group: a host thread or a device stream / engine, or a counter series."""

    group: int
    tid: str
    label: str
    is_device: bool
    depths: int
    counter: bool = False


@dataclass(frozen=True)
class TimelineIndex:
    """Slices sorted by (row, ts) in flat arrays; `offsets[r]:offsets[r+1]` is row r.

    Row r is depth `row_depth[r]` of track `row_track[r]`. `cum` is each row's inclusive
    running sum of durations (busy time per pixel bucket by two lookups). `sum_*` hold each
    group's union of busy intervals (the collapsed summary) the same way, `mark_*` the
    marked events (compiles, syncs, fallbacks, HPU-graph replays) sorted by time, `flow_*`
    launch -> device-op pairs as positions in the slice arrays, `ctr_*` counter samples per
    counter track. `event` is the row of each slice in the trace's events table (details).
    """

    t0_ns: int
    span_ns: int
    groups: tuple[Group, ...]
    tracks: tuple[Track, ...]
    names: tuple[str, ...]
    row_track: np.ndarray
    row_depth: np.ndarray
    offsets: np.ndarray
    ts: np.ndarray
    end: np.ndarray
    cum: np.ndarray
    max_dur: np.ndarray
    event: np.ndarray
    name_code: np.ndarray
    mark: np.ndarray
    sum_offsets: np.ndarray
    sum_ts: np.ndarray
    sum_end: np.ndarray
    sum_cum: np.ndarray
    mark_ts: np.ndarray
    mark_row: np.ndarray
    mark_kind: np.ndarray
    mark_event: np.ndarray
    mark_name: np.ndarray
    flow_src: np.ndarray
    flow_dst: np.ndarray
    ctr_track: np.ndarray
    ctr_offsets: np.ndarray
    ctr_ts: np.ndarray
    ctr_value: np.ndarray

    @property
    def ranks(self) -> tuple[int, ...]:
        return tuple(sorted({g.rank for g in self.groups}))

    @property
    def slices(self) -> int:
        return len(self.ts)

    def rows_of_track(self, track: int) -> np.ndarray:
        return np.flatnonzero(self.row_track == track)

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Every field as a numpy array (small tuples as JSON bytes), for `np.savez`."""
        out: dict[str, np.ndarray] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, np.ndarray):
                out[f.name] = value
            elif f.name in ("groups", "tracks"):
                out[f.name] = np.frombuffer(
                    orjson.dumps([list(vars(v).values()) for v in value]), dtype=np.uint8
                )
            elif f.name == "names":
                out[f.name] = np.frombuffer(orjson.dumps(list(value)), dtype=np.uint8)
            else:
                out[f.name] = np.asarray(value)
        out["version"] = np.asarray(INDEX_VERSION)
        return out

    @classmethod
    def from_arrays(cls, arrays: Any) -> TimelineIndex | None:
        """The index `to_arrays` stored, or None when it is of another version or damaged."""
        try:
            if int(arrays["version"]) != INDEX_VERSION:
                return None
            kw: dict[str, Any] = {}
            for f in fields(cls):
                value = arrays[f.name]
                if f.name == "groups":
                    kw[f.name] = tuple(Group(*v) for v in orjson.loads(value.tobytes()))
                elif f.name == "tracks":
                    kw[f.name] = tuple(Track(*v) for v in orjson.loads(value.tobytes()))
                elif f.name == "names":
                    kw[f.name] = tuple(orjson.loads(value.tobytes()))
                elif f.name in ("t0_ns", "span_ns"):
                    kw[f.name] = int(value)
                else:
                    kw[f.name] = np.asarray(value)
            return cls(**kw)
        except (KeyError, TypeError, ValueError, orjson.JSONDecodeError):
            return None


def mark_codes(ev: pd.DataFrame) -> np.ndarray:
    """Each event's marker class (index into MARKS; 0 = none)."""
    from hpuprof.analysis._common import isin

    hpu, kind = ev["hpu_event"], ev["kind"]
    code = np.zeros(len(ev), dtype=np.int8)
    code[isin(hpu, ("graph_replay",))] = MARKS.index("graph_replay")
    code[isin(kind, ("sync",)) | isin(hpu, ("sync",))] = MARKS.index("sync")
    code[ev["fallback"].to_numpy(dtype=bool) | isin(hpu, ("fallback",))] = MARKS.index("fallback")
    code[isin(hpu, ("compile", "dynamo_compile"))] = MARKS.index("compile")
    return code


def _natural(text: str) -> tuple[Any, ...]:
    """Sort key that puts "stream 7" before "stream 23"."""
    import re

    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", text))


def _meta(frame: pd.DataFrame, keys: tuple[str, ...]) -> dict[tuple[Any, ...], dict[str, Any]]:
    if not len(frame) or not set(keys) <= set(frame.columns):
        return {}
    out: dict[tuple[Any, ...], dict[str, Any]] = {}
    for rec in frame.to_dict("records"):
        out[tuple(str(rec[k]) if k != "rank" else int(rec[k]) for k in keys)] = {
            str(k): v for k, v in rec.items()
        }
    return out


def _group_label(rank: int, pid: str, is_device: bool, proc: dict[str, Any], multi: bool) -> str:
    name, labels = str(proc.get("name") or ""), str(proc.get("labels") or "")
    if is_device:
        text = labels or name or f"device {pid}"
    elif pid == "Spans":
        text = "Spans"
    else:
        text = f"{name} {pid}" if name else f"process {pid}"
    return f"rank {rank} · {text}" if multi else text


def _thread_label(tid: str, is_device: bool, thread: dict[str, Any]) -> str:
    name = str(thread.get("name") or "").strip()
    return name or (f"stream {tid}" if is_device else f"thread {tid}")


REPACK_LIMIT = 300_000
"""Most slices of tracks with overlapping siblings that `free_rows` re-packs (a Python loop)."""


def free_rows(track: np.ndarray, depth: np.ndarray, ts: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Rows for drawing: each slice's nesting depth, except that a slice overlapping another
    of the same depth on its track (not nested in it: a lazy graph's window crossing ops) goes
    to the first row below that is free, so no slice is drawn over another and hidden."""
    order = np.lexsort((-(end - ts), ts, depth, track))
    t, d, a, b = track[order], depth[order], ts[order], end[order]
    same = np.zeros(len(order), dtype=bool)
    same[1:] = (t[1:] == t[:-1]) & (d[1:] == d[:-1])
    starts = np.flatnonzero(~same)  # each (track, depth) group: its running end, reset
    group_max = np.zeros(len(order), dtype=np.int64)
    for i, s0 in enumerate(starts):
        s1 = starts[i + 1] if i + 1 < len(starts) else len(order)
        group_max[s0:s1] = np.maximum.accumulate(b[s0:s1])
    clash = np.zeros(len(order), dtype=bool)
    clash[1:] = same[1:] & (a[1:] < group_max[:-1])
    bad_tracks = np.unique(t[clash])
    if not len(bad_tracks):
        return depth
    out = depth.copy()
    budget = REPACK_LIMIT
    for tr in bad_tracks:
        idx = np.flatnonzero(track == tr)
        if len(idx) > budget:
            continue
        budget -= len(idx)
        sub = idx[np.lexsort((-(end[idx] - ts[idx]), ts[idx]))]  # start order, outer first
        free_at: list[int] = []
        for i in sub.tolist():
            row = int(depth[i])
            while row < len(free_at) and free_at[row] > ts[i]:
                row += 1
            while len(free_at) <= row:
                free_at.append(-(1 << 62))
            free_at[row] = int(end[i])
            out[i] = row
    return np.minimum(out, 2 * MAX_DEPTH - 1)


def _union(ts: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merged intervals of `[ts, end)` (any order) as sorted, disjoint (start, end) arrays."""
    if not len(ts):
        return ts, end
    order = np.argsort(ts, kind="stable")
    ts, end = ts[order], end[order]
    reach = np.maximum.accumulate(end)
    starts = np.ones(len(ts), dtype=bool)
    starts[1:] = ts[1:] > reach[:-1]
    first = np.flatnonzero(starts)
    last = np.append(first[1:] - 1, len(ts) - 1)
    return ts[first], reach[last]


@dataclass(frozen=True)
class _Lanes:
    """The distinct (rank, pid, tid, device) lanes of the slices, found by integer codes.

    Args:
        table: one row per lane: rank, is_device, pid, tid (text).
        of_slice: each slice's lane (a position in `table`).
        pid_code / tid_code: every event's pid / tid code (-1: none).
        pid_text / tid_text: code -> text (the last entry, "", for -1).
    """

    table: pd.DataFrame
    of_slice: np.ndarray
    pid_code: np.ndarray
    tid_code: np.ndarray
    pid_text: np.ndarray
    tid_text: np.ndarray


def _lanes(ev: pd.DataFrame, rows: np.ndarray) -> _Lanes:
    """The lanes of the slices `rows` (no per-event strings: one unique over integer keys)."""
    import pandas as pd

    from hpuprof.analysis._common import factor

    pid_code, pid_name = factor(ev["pid"])
    tid_code, tid_name = factor(ev["tid"])
    rank_all = ev["rank"].to_numpy(dtype=np.int64)
    dev_all = ev["is_device"].to_numpy(dtype=bool)
    n_pid, n_tid = len(pid_name) + 1, len(tid_name) + 1
    lane_key = (
        (rank_all[rows] * n_pid + pid_code[rows] + 1) * n_tid + tid_code[rows] + 1
    ) * 2 + dev_all[rows]
    uniq, lane_id = np.unique(lane_key, return_inverse=True)
    u_dev = (uniq % 2).astype(bool)
    u_tid = (uniq // 2) % n_tid - 1
    u_pid = (uniq // 2 // n_tid) % n_pid - 1
    u_rank = uniq // 2 // n_tid // n_pid
    pid_text = np.append(pid_name.astype(str), "")
    tid_text = np.append(tid_name.astype(str), "")
    table = pd.DataFrame(
        {"rank": u_rank, "is_device": u_dev, "pid": pid_text[u_pid], "tid": tid_text[u_tid]}
    )
    return _Lanes(table, lane_id, pid_code, tid_code, pid_text, tid_text)


def _group_list(
    lanes: pd.DataFrame, procs: dict[tuple[Any, ...], dict[str, Any]], multi: bool
) -> list[Group]:
    """The processes of each rank, host first, in the trace's own sort order."""
    gkeys = lanes.groupby(["rank", "pid"], sort=False)["is_device"].any().reset_index()

    def gsort(rec: tuple[int, str, bool]) -> tuple[Any, ...]:
        r, p, dev = rec
        si = int(procs.get((r, p), {}).get("sort_index", NO_ID))
        return (r, p == "Spans", dev, si if si >= 0 else 1 << 40, _natural(p))

    grecs = sorted(
        ((int(r), str(p), bool(d)) for r, p, d in gkeys.itertuples(index=False)), key=gsort
    )
    return [
        Group(r, p, _group_label(r, p, d, procs.get((r, p), {}), multi), d) for r, p, d in grecs
    ]


TrackKey = tuple[int, str, str, bool]
"""(rank, pid, tid, is_device) of a track."""


def _track_keys(
    lanes: pd.DataFrame,
    gid: dict[tuple[int, str], int],
    threads: dict[tuple[Any, ...], dict[str, Any]],
) -> tuple[list[TrackKey], np.ndarray]:
    """The tracks (threads and streams of each group, in the trace's sort order) and each
    lane's track. One track per (rank, pid, tid): a stream's host-side events (Kineto's
    `cuda_sync` waits on stream 7) share the stream's track with its kernels, so no stream
    is drawn twice; a track is a device track when any of its slices runs on the device."""

    def tsort(rec: TrackKey) -> tuple[Any, ...]:
        r, p, t, dev = rec
        th = threads.get((r, p, t), {})
        si = int(th.get("sort_index", NO_ID))
        return (gid[(r, p)], si if si >= 0 else 1 << 40, _natural(_thread_label(t, dev, th)))

    keys = [
        (int(r), str(p), str(t))
        for r, p, t in lanes[["rank", "pid", "tid"]].itertuples(index=False)
    ]
    on_device: dict[tuple[int, str, str], bool] = {}
    for key, dev in zip(keys, lanes["is_device"].to_numpy(dtype=bool).tolist(), strict=True):
        on_device[key] = on_device.get(key, False) or bool(dev)
    trecs = sorted(((r, p, t, d) for (r, p, t), d in on_device.items()), key=tsort)
    tid_of = {(r, p, t): i for i, (r, p, t, _) in enumerate(trecs)}
    return trecs, np.asarray([tid_of[k] for k in keys], dtype=np.int64)


def _slice_depths(
    ev: pd.DataFrame, rows: np.ndarray, track_of: np.ndarray, ts: np.ndarray, end: np.ndarray
) -> np.ndarray:
    """Each slice's drawing row within its track (`free_rows` of its clipped nesting depth)."""
    from hpuprof.analysis._common import cat_test, isin

    depth = np.minimum(ev["depth"].to_numpy(dtype=np.int64)[rows], MAX_DEPTH - 1)
    depth = np.maximum(depth, 0)
    # steps are the top row of their thread, as in Perfetto: a slice crossing a step boundary
    # (a modeled compile) never makes the following steps nest under it
    is_step = isin(ev["hpu_event"], ("step",)) | cat_test(
        ev["name"], lambda n: n.startswith(STEP_ANNOTATION_PREFIX)
    )
    depth = np.where(is_step[rows], 0, depth)
    return free_rows(track_of, depth, ts, end)


@dataclass(frozen=True)
class _Rows:
    """The slices laid out in rows (a track's depths), sorted by (row, start).

    Args:
        track / depth: each row's track and depth; base: each track's first row (+ the end).
        of_slice: each sorted slice's row; event: its event (a row of the events table).
        offsets: each row's first sorted slice (+ the end).
        ts / end / dur: the sorted slices' start, end and duration (ns from t0).
    """

    track: np.ndarray
    depth: np.ndarray
    base: np.ndarray
    of_slice: np.ndarray
    event: np.ndarray
    offsets: np.ndarray
    ts: np.ndarray
    end: np.ndarray
    dur: np.ndarray


def _row_layout(
    rows: np.ndarray, track_of: np.ndarray, depth: np.ndarray, depths: np.ndarray,
    ts: np.ndarray, dur: np.ndarray,
) -> _Rows:  # fmt: skip
    """The rows of every track (`depths` each) and the slices sorted into them."""
    n_tracks = len(depths)
    row_base = np.concatenate([[0], np.cumsum(depths)])
    row_of = row_base[track_of] + depth if len(track_of) else np.zeros(0, dtype=np.int64)
    n_rows = int(row_base[-1])
    row_track = np.repeat(np.arange(n_tracks), depths)
    row_depth = np.concatenate([np.arange(d) for d in depths]) if n_tracks else np.zeros(0)
    order = np.lexsort((ts, row_of))
    row_sorted = row_of[order]
    ts_s, dur_s = ts[order], dur[order]
    offsets = np.searchsorted(row_sorted, np.arange(n_rows + 1))
    return _Rows(
        row_track, row_depth, row_base, row_sorted, rows[order], offsets, ts_s, ts_s + dur_s, dur_s
    )


def _summaries(
    tracks: list[Track], layout: _Rows, n_groups: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each group's busy time (the union of its depth-0 slices): offsets, starts, ends."""
    track_group = np.array([t.group for t in tracks], dtype=np.int64)
    row_sorted = layout.of_slice
    top = layout.depth[row_sorted] == 0 if len(row_sorted) else np.zeros(0, dtype=bool)
    slice_group = track_group[layout.track[row_sorted]] if len(row_sorted) else row_sorted
    parts: list[tuple[np.ndarray, np.ndarray]] = []
    for g in range(n_groups):
        sel = top & (slice_group == g)
        parts.append(_union(layout.ts[sel], layout.end[sel]))
    offsets = np.concatenate([[0], np.cumsum([len(a) for a, _ in parts])])
    starts = np.concatenate([a for a, _ in parts]) if parts else np.zeros(0, np.int64)
    ends = np.concatenate([b for _, b in parts]) if parts else np.zeros(0, np.int64)
    return offsets, starts, ends


def _mark_rows(
    ev: pd.DataFrame, marked: np.ndarray, lanes: _Lanes, layout: _Rows,
    host_track: dict[tuple[int, str, str], int],
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """(marked events kept, their rows): a marked slice on its own row, an instant on its
    thread's top row; marks with neither are dropped."""
    pos_of_event = np.full(len(ev), -1, dtype=np.int64)
    pos_of_event[layout.event] = np.arange(len(layout.event))
    mk_pos = pos_of_event[marked]
    on_row = layout.of_slice[np.maximum(mk_pos, 0)] if len(layout.of_slice) else -1
    mk_row = np.where(mk_pos >= 0, on_row, -1)
    if (mk_row < 0).any():
        ranks_m = ev["rank"].to_numpy(dtype=np.int64)[marked]
        pids_m = lanes.pid_text[lanes.pid_code[marked]]
        tids_m = lanes.tid_text[lanes.tid_code[marked]]
        for j in np.flatnonzero(mk_row < 0):
            tr = host_track.get((int(ranks_m[j]), str(pids_m[j]), str(tids_m[j])))
            if tr is not None:
                mk_row[j] = layout.base[tr]
    keep = mk_row >= 0
    return marked[keep], mk_row[keep]


def _flows(ev: pd.DataFrame, layout: _Rows) -> pd.DataFrame:
    """Host launch -> device op of the same correlation and rank: (src, dst) sorted slices,
    by dst."""
    import pandas as pd

    corr = ev["correlation"].to_numpy(dtype=np.int64)[layout.event]
    dev_slice = ev["is_device"].to_numpy(dtype=bool)[layout.event]
    rank_slice = ev["rank"].to_numpy(dtype=np.int64)[layout.event]
    has = corr != NO_ID
    host, dev = has & ~dev_slice, has & dev_slice
    src = pd.DataFrame(
        {"rank": rank_slice[host], "corr": corr[host], "src": np.flatnonzero(host)}
    ).drop_duplicates(["rank", "corr"])
    dst = pd.DataFrame({"rank": rank_slice[dev], "corr": corr[dev], "dst": np.flatnonzero(dev)})
    return src.merge(dst, on=["rank", "corr"], how="inner").sort_values("dst")


@dataclass(frozen=True)
class _Counters:
    """Counter series as tracks: `TimelineIndex.ctr_*` and the groups and tracks they add."""

    groups: tuple[Group, ...]
    tracks: tuple[Track, ...]
    track: np.ndarray
    offsets: np.ndarray
    ts: np.ndarray
    value: np.ndarray


def _counters(
    ctr: pd.DataFrame, t0: int, gid: dict[tuple[int, str], int], n_groups: int, n_tracks: int,
    multi: bool, devices: frozenset[tuple[int, str]] = frozenset(),
) -> _Counters:  # fmt: skip
    """One track per (rank, name, series), in a "counters" group per rank (new groups and
    tracks numbered after the `n_groups` and `n_tracks` there are); a series recorded on a
    device process of `devices` (a hardware trace's cache-slice and TPC counters) is drawn in
    that device's group, beside its engines."""
    import pandas as pd

    if not len(ctr):
        zero = np.zeros(0, dtype=np.int64)
        return _Counters((), (), zero, np.zeros(1, dtype=np.int64), zero, np.zeros(0))
    c = pd.DataFrame(
        {
            "rank": ctr["rank"].to_numpy(dtype=np.int64),
            "name": ctr["name"].astype(str).to_numpy(),
            "series": ctr["series"].astype(str).to_numpy(),
            "pid": ctr["pid"].astype(str).to_numpy() if "pid" in ctr else "",
            "ts": ctr["ts_ns"].to_numpy(dtype=np.int64) - t0,
            "value": ctr["value"].to_numpy(dtype=np.float64),
        }
    )
    c = c[np.isfinite(c["value"])].sort_values(["rank", "name", "series", "ts"], kind="stable")
    keys = c.drop_duplicates(["rank", "name", "series"])[["rank", "name", "series", "pid"]]
    groups: list[Group] = []
    tracks: list[Track] = []
    for r, name, series, pid in keys.itertuples(index=False):
        key = (int(r), str(pid)) if (int(r), str(pid)) in devices else (int(r), "counters")
        if key not in gid:
            gid[key] = n_groups + len(groups)
            label = f"rank {r} · counters" if multi else "counters"
            groups.append(Group(int(r), "counters", label, False))
        label = name if series in ("", "value", name) else f"{name} ({series})"
        tracks.append(Track(gid[key], f"{name}/{series}", label, False, 1, counter=True))
    sizes = c.groupby(["rank", "name", "series"], sort=True).size().to_numpy()
    return _Counters(
        tuple(groups),
        tuple(tracks),
        np.arange(n_tracks, n_tracks + len(tracks), dtype=np.int64),
        np.concatenate([[0], np.cumsum(sizes)]),
        c["ts"].to_numpy(dtype=np.int64),
        c["value"].to_numpy(dtype=np.float64),
    )


def _name_codes(names: pd.Series) -> tuple[np.ndarray, tuple[str, ...]]:
    """Every event's name code and the names (the loaders intern names as categories)."""
    if hasattr(names, "cat"):
        return names.cat.codes.to_numpy(dtype=np.int64), tuple(str(c) for c in names.cat.categories)
    cat = names.astype("category")  # pragma: no cover - the loaders always intern names
    return cat.cat.codes.to_numpy(dtype=np.int64), tuple(str(c) for c in cat.cat.categories)


def _first_start(
    ts_all: np.ndarray, rows: np.ndarray, marked: np.ndarray, ctr: pd.DataFrame
) -> int:
    """t0: the first slice, mark or counter sample."""
    starts = [ts_all[rows], ts_all[marked]]
    if len(ctr):
        starts.append(ctr["ts_ns"].to_numpy(dtype=np.int64))
    joined = np.concatenate(starts)
    return int(joined.min()) if len(joined) else 0


def build_index(trace: Trace) -> TimelineIndex:
    """Sort the trace's slices once into tracks, rows and groups (see the module docstring)."""
    from hpuprof.analysis._common import isin
    from hpuprof.analysis.memory_tracks import timeline_counters

    ev = trace.events
    codes = mark_codes(ev)
    rows = np.flatnonzero(isin(ev["ph"], ("X",)) & ~isin(ev["kind"], ("span",)))
    lanes = _lanes(ev, rows)
    ts_all = ev["ts_ns"].to_numpy(dtype=np.int64)
    dur_all = np.maximum(ev["dur_ns"].to_numpy(dtype=np.int64), 0)
    marked = np.flatnonzero(codes > 0)
    ctr = timeline_counters(trace)
    t0 = _first_start(ts_all, rows, marked, ctr)
    procs = _meta(trace.processes, ("rank", "pid"))
    threads = _meta(trace.threads, ("rank", "pid", "tid"))
    multi = lanes.table["rank"].nunique() > 1 or bool(len(ctr) and ctr["rank"].nunique() > 1)
    groups = _group_list(lanes.table, procs, bool(multi))
    gid = {(g.rank, g.pid): i for i, g in enumerate(groups)}
    trecs, track_of_lane = _track_keys(lanes.table, gid, threads)
    track_of = track_of_lane[lanes.of_slice] if len(lanes.of_slice) else lanes.of_slice
    ts, dur = ts_all[rows], dur_all[rows]
    depth = _slice_depths(ev, rows, track_of, ts, ts + dur)
    depths = np.zeros(len(trecs), dtype=np.int64)
    if len(track_of):
        np.maximum.at(depths, track_of, depth + 1)
    tracks = [
        Track(gid[(r, p)], t, _thread_label(t, d, threads.get((r, p, t), {})), d, int(depths[i]))
        for i, (r, p, t, d) in enumerate(trecs)
    ]
    layout = _row_layout(rows, track_of, depth, depths, ts - t0, dur)
    max_dur = np.zeros(len(layout.offsets) - 1, dtype=np.int64)
    if len(layout.dur):
        np.maximum.at(max_dur, layout.of_slice, layout.dur)
    name_codes, names = _name_codes(ev["name"])
    sum_offsets, sum_ts, sum_end = _summaries(tracks, layout, len(groups))
    host_track = {(r, p, t): i for i, (r, p, t, d) in enumerate(trecs) if not d}
    marked, mk_row = _mark_rows(ev, marked, lanes, layout, host_track)
    mk_ts = ts_all[marked] - t0
    mk_order = np.argsort(mk_ts, kind="stable")
    pairs = _flows(ev, layout)
    devices = frozenset((g.rank, g.pid) for g in groups if g.is_device)
    counters = _counters(ctr, t0, gid, len(groups), len(tracks), bool(multi), devices)
    groups += counters.groups
    tracks += counters.tracks
    missing = len(groups) + 1 - len(sum_offsets)  # counter groups have no busy intervals
    sum_offsets = np.concatenate([sum_offsets, np.full(missing, sum_offsets[-1])])
    span_parts = [layout.end.max() if len(layout.end) else 0, mk_ts.max() if len(mk_ts) else 0]
    span_parts.append(int(counters.ts.max()) if len(counters.ts) else 0)
    return TimelineIndex(
        t0_ns=t0,
        span_ns=max(int(max(span_parts)), 1),
        groups=tuple(groups),
        tracks=tuple(tracks),
        names=names,
        row_track=layout.track.astype(np.int64),
        row_depth=np.asarray(layout.depth, dtype=np.int64),
        offsets=layout.offsets.astype(np.int64),
        ts=layout.ts,
        end=layout.end,
        cum=np.cumsum(layout.dur),
        max_dur=max_dur,
        event=layout.event.astype(np.int64),
        name_code=name_codes[layout.event].astype(np.int32),
        mark=codes[layout.event],
        sum_offsets=sum_offsets.astype(np.int64),
        sum_ts=sum_ts.astype(np.int64),
        sum_end=sum_end.astype(np.int64),
        sum_cum=np.cumsum(sum_end - sum_ts),
        mark_ts=mk_ts[mk_order],
        mark_row=mk_row[mk_order].astype(np.int64),
        mark_kind=codes[marked][mk_order],
        mark_event=marked[mk_order].astype(np.int64),
        mark_name=name_codes[marked][mk_order].astype(np.int32),
        flow_src=pairs["src"].to_numpy(dtype=np.int64),
        flow_dst=pairs["dst"].to_numpy(dtype=np.int64),
        ctr_track=counters.track,
        ctr_offsets=counters.offsets.astype(np.int64),
        ctr_ts=counters.ts,
        ctr_value=counters.value,
    )
