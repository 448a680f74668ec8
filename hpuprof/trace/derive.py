"""Columns derived once, at load time, from the normalized columns and the raw args.

Analyses read these columns; none of them looks into the raw args for these facts again.

- `op_row`: for a device row, the row of the host op its time belongs to:
  * launched by a host op or a runtime call (joined on `correlation`; a cpu_op with that
    correlation first): the innermost `cpu_op` enclosing the launch (the launch itself when it
    is one), as torch.profiler attributes a kernel's time to the op that launched it;
  * launched as part of a graph (a lazy-mode graph `launch`, an HPU-graph `graph_replay`): one
    of the graph's own host ops with the same name (`opinfo.kernel_key(kernel) ==
    opinfo.op_key(op)`; a fused chain's kernel takes its first op's name), the k-th device op
    of a name to the k-th host op of that name (modulo their count), the ops taken from the
    graph's window on the launching thread (the `graph_build` of that graph id before the
    launch; the `graph_capture` for a replay);
  * NO_ID when the trace does not say (no correlation, no op of that name in the graph).
- `dtype`: host ops: their first floating input type; device rows: the `dataType` arg (Gaudi
  bridge, emulator), else the dtype of their op.
- `flops`: device rows: `hpuprof.flops`; host matmul/conv ops: torch.profiler's `flops` arg,
  else from their shapes (`opinfo.shape_flops`); NaN when unknown.
- `call_site`, `cause_kind`, `cause`: `hpuprof.call_site` and `hpuprof.cause` (`cause` as
  compact JSON text; `cause_kind` its kind, "guard" for a text).
- the columns of hpuprof's other args keys (`schema.ARG_COLUMNS`), read by `arg_columns.py`
  from the rows that hold them.

Only rows that can carry a key have their args read (a vectorized byte search, then one JSON
decode per hit).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import msgspec
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from hpuprof.trace.arg_columns import (
    Found,
    MarkedRows,
    read_later_keys,
    read_source_keys,
    sparse_text,
)
from hpuprof.trace.categories import categorical
from hpuprof.trace.columns import take_binary
from hpuprof.trace.heap import release_free_memory
from hpuprof.trace.opinfo import (
    MATMUL_CONV,
    first_float_dtype,
    kernel_key,
    norm_dtype,
    op_key,
    shape_flops,
    short_op,
)
from hpuprof.trace.schema import (
    ARG_CALL_SITE,
    ARG_CAUSE,
    ARG_COLUMNS,
    ARG_FLOPS,
    EVENT_COLUMNS,
    NO_ID,
    stored_event_columns,
)
from hpuprof.trace.sorted_groups import group_keys, last_at_or_before, nth_of_group, rank_in_group

GRAPH_LAUNCHES = {"launch": "graph_build", "graph_replay": "graph_capture"}
"""Host events that launch a whole graph -> the event whose window holds the graph's ops."""
_MAX_CLIMB = 256


def with_derived(
    events: pd.DataFrame,
    our_rows: MarkedRows | None = None,
    data_types: DataTypes | None = None,
) -> pd.DataFrame:
    """`events` with the derived columns and those of hpuprof's args keys (re)computed, every
    column in schema order. `our_rows`: the rows whose args hold hpuprof keys and which (None:
    found by a byte search of the args). `data_types`: the rows' `dataType` args as read with
    the events (None: found in the args).

    One thread derives them all. Parts of it ran in a pool beside this thread's, their
    column-long temporaries at once: 2-thread loads, alternated runs, median peak RSS 393-396
    -> 381-382 MB (260 MB synthetic trace), 485 -> 440 MB (200 MB Gaudi trace). Not slower:
    with the other changes of that commit, `bench/bench_load.py --threads 2 --against` gave
    0.98x the wall-clock speed and 1.05x the CPU-time speed (4 alternated rounds)."""
    derived = derive(events, our_rows, data_types)
    columns = {name: derived[name] if name in derived else events[name] for name in EVENT_COLUMNS}
    return pd.DataFrame(columns, index=events.index, copy=False)


def _arg_keys(events: pd.DataFrame, our_rows: MarkedRows | None) -> dict[str, Any]:
    """The columns of hpuprof's args keys read later and of `schema.SOURCE_KEYS`."""
    keys = read_later_keys(events["args"], our_rows, len(events))
    keys.update(read_source_keys(events))
    return keys


@dataclass(frozen=True)
class DataTypes:
    """Each row's `dataType` arg (the Gaudi bridge's, the emulator's) as the loader read it
    with the event: codes into `texts`, "" where absent or not a text."""

    codes: NDArray[np.signedinteger[Any]]
    texts: list[str]


def derive(
    events: pd.DataFrame,
    our_rows: MarkedRows | None = None,
    data_types: DataTypes | None = None,
) -> dict[str, Any]:
    """The derived columns of an events table (its other columns per `schema.EVENT_COLUMNS`)
    and those of hpuprof's args keys. `our_rows`: see `with_derived`."""
    n = len(events)
    parent = _parent_positions(events)
    op_pos = _op_positions(events, parent)
    # its column-long temporaries are gone: their heap pages go back before the other parts'
    release_free_memory()
    keys = _arg_keys(events, our_rows)
    dtype = _dtypes(events, op_pos, _own_dtypes(events, data_types))
    flops = _flops(events, keys[ARG_FLOPS.column])
    cause_kind, cause = _causes(keys[ARG_CAUSE.column], n)
    return {
        "op_row": _labels_at(events.index, op_pos),
        "dtype": dtype,
        "flops": flops,
        "call_site": keys[ARG_CALL_SITE.column],
        "cause_kind": cause_kind,
        "cause": cause,
        **{name: keys[name] for name in ARG_COLUMNS},
    }


# --- helpers over categorical columns ---------------------------------------------------------


def _codes(col: pd.Series) -> tuple[NDArray[np.integer[Any]], list[str]]:
    """The column's codes (-1: none) and texts; a categorical's codes at their own width (an
    int64 copy of every row's code was 8 bytes a row of the load's peak, several times over):
    index tables with them (-1 picks a table's last entry), widen a subset before arithmetic."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        return col.cat.codes.to_numpy(), [str(c) for c in col.cat.categories]
    codes, uniques = pd.factorize(col.astype(str).to_numpy(dtype=object))
    return codes.astype(np.int64), [str(u) for u in uniques]


def _is(col: pd.Series, wanted: set[str] | frozenset[str]) -> NDArray[np.bool_]:
    if isinstance(col.dtype, pd.CategoricalDtype):
        cats = col.cat.categories
        table = np.array([str(c) in wanted for c in cats] + [False], dtype=bool)
        return np.asarray(table[col.cat.codes.to_numpy()], dtype=bool)  # code -1: the last
    codes, names = _codes(col)
    table = np.array([c in wanted for c in names] + [False], dtype=bool)
    return np.asarray(table[codes], dtype=bool)


def _parent_positions(events: pd.DataFrame) -> NDArray[np.int64]:
    parent = events["parent"].to_numpy(dtype=np.int64)
    index = events.index
    if isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1:
        return parent
    pos = np.full(len(parent), NO_ID, dtype=np.int64)
    has = parent != NO_ID
    pos[has] = index.get_indexer(pd.Index(parent[has]))
    return pos


# --- op_row ---------------------------------------------------------------------------------------


def _labels_at(index: pd.Index, positions: NDArray[np.int64]) -> NDArray[np.int64]:
    """The index labels at `positions` (NO_ID where a position is negative): `positions`
    itself under the default index, which a loaded table has (no column-long copies of the
    labels at the load's peak)."""
    if isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1:
        return (
            np.where(positions >= 0, positions, NO_ID) if (positions < NO_ID).any() else positions
        )
    labels = np.full(len(positions), NO_ID, dtype=np.int64)
    known = positions >= 0
    labels[known] = index.to_numpy()[positions[known]]
    return labels


def _launch_positions(
    events: pd.DataFrame, is_cpu_op: NDArray[np.bool_]
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """(device row positions with a correlation, the position of their host launch or -1)."""
    corr = events["correlation"].to_numpy(dtype=np.int64)
    is_dev = events["is_device"].to_numpy(dtype=bool)
    dev = np.flatnonzero(is_dev & (corr != NO_ID))
    host = np.flatnonzero(~is_dev & (corr != NO_ID) & _is(events["ph"], {"X"}))
    # several host rows may share a correlation (a fallback event around its op): the op first
    host = host[np.argsort(~is_cpu_op[host], kind="stable")]
    if len(dev) == 0 or len(host) == 0:
        return dev, np.full(len(dev), NO_ID, dtype=np.int64)
    rank = events["rank"].to_numpy()
    if rank[0] == rank[-1] and (rank == rank[0]).all():  # one rank: the correlation is the key
        return dev, _first_with_key(corr[host], host, corr[dev])
    lookup = pd.Series(host, index=pd.MultiIndex.from_arrays([rank[host], corr[host]]))
    wanted = pd.MultiIndex.from_arrays([rank[dev], corr[dev]])
    lookup = lookup[~lookup.index.duplicated(keep="first")]
    got = lookup.reindex(wanted).to_numpy(dtype=np.float64)
    launch = np.where(np.isnan(got), NO_ID, np.nan_to_num(got, nan=-1)).astype(np.int64)
    return dev, launch


def _first_with_key(
    keys: NDArray[np.int64], values: NDArray[np.int64], wanted: NDArray[np.int64]
) -> NDArray[np.int64]:
    """For each of `wanted`, the value of the first of `keys` equal to it, or NO_ID (by one
    stable sort and a binary search: numpy work without the GIL, no hash table)."""
    order = np.argsort(keys, kind="stable")  # equal keys keep their order: the first first
    sorted_keys = keys[order]
    at = np.searchsorted(sorted_keys, wanted, side="left")
    inside = at < len(sorted_keys)
    found = np.zeros(len(wanted), dtype=bool)
    found[inside] = sorted_keys[at[inside]] == wanted[inside]
    out = np.full(len(wanted), NO_ID, dtype=np.int64)
    out[found] = values[order[at[found]]]
    return out


def _op_positions(events: pd.DataFrame, parent: NDArray[np.int64]) -> NDArray[np.int64]:
    n = len(events)
    out = np.full(n, NO_ID, dtype=np.int64)
    is_cpu_op = _is(events["kind"], {"cpu_op"})
    dev, launch = _launch_positions(events, is_cpu_op)
    if len(dev) == 0:
        return out
    hpu_event = events["hpu_event"]
    found = launch >= 0
    via_graph = np.zeros(len(dev), dtype=bool)
    via_graph[found] = _is(hpu_event, set(GRAPH_LAUNCHES))[launch[found]]
    # launched by an op or a runtime call: climb to the innermost cpu_op
    cur = np.where(found & ~via_graph, launch, NO_ID)
    for _ in range(_MAX_CLIMB):
        need = (cur >= 0) & ~is_cpu_op[np.maximum(cur, 0)]
        if not need.any():
            break
        cur[need] = parent[cur[need]]
    out[dev] = cur
    if via_graph.any():
        gdev, glaunch = dev[via_graph], launch[via_graph]
        out[gdev] = _graph_ops(events, gdev, glaunch, _codes(hpu_event), is_cpu_op)
    return out


def _window_of(
    events: pd.DataFrame, rows: NDArray[np.int64], windows: NDArray[np.int64]
) -> NDArray[np.int64]:
    """For each row in `rows`, the last window (same rank and graph id, started at or before
    it) or -1."""
    if len(windows) == 0 or len(rows) == 0:
        return np.full(len(rows), NO_ID, dtype=np.int64)
    rank = events["rank"].to_numpy(dtype=np.int64)
    gid, _ = _codes(events["graph_id"])
    ts = events["ts_ns"].to_numpy(dtype=np.int64)
    both = np.concatenate([windows, rows])
    group = group_keys(rank[both], gid[both])
    got = last_at_or_before(group[len(windows) :], ts[rows], group[: len(windows)], ts[windows])
    return np.where(got >= 0, windows[np.maximum(got, 0)], NO_ID)


def _ops_in_windows(
    events: pd.DataFrame, windows: NDArray[np.int64], is_cpu_op: NDArray[np.bool_]
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """(host op positions, the window each lies in) for the cpu_ops inside `windows`, matched
    on the window's own thread (rank, pid, tid)."""
    ops = np.flatnonzero(is_cpu_op & _is(events["ph"], {"X"}))
    if len(ops) == 0 or len(windows) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    rank = events["rank"].to_numpy(dtype=np.int64)
    pid, _ = _codes(events["pid"])
    tid, _ = _codes(events["tid"])
    ts = events["ts_ns"].to_numpy(dtype=np.int64)
    end = ts + events["dur_ns"].to_numpy(dtype=np.int64)
    both = np.concatenate([windows, ops])
    group = group_keys(rank[both], pid[both], tid[both])
    got = last_at_or_before(group[len(windows) :], ts[ops], group[: len(windows)], ts[windows])
    op, win = ops[got >= 0], windows[got[got >= 0]]
    inside = ts[op] < end[win]
    return op[inside], win[inside]


def _graph_ops(
    events: pd.DataFrame,
    dev: NDArray[np.int64],
    launch: NDArray[np.int64],
    hpu_event: tuple[NDArray[np.integer[Any]], list[str]],
    is_cpu_op: NDArray[np.bool_],
) -> NDArray[np.int64]:
    """The host op of each device row launched as part of a graph (see the module docstring);
    `hpu_event`: the codes and texts of the `hpu_event` column (codes compared, not texts: a
    text comparison of every row cost a third of this on a 1 M-event trace)."""
    out = np.full(len(dev), NO_ID, dtype=np.int64)
    name_codes, name_texts = _codes(events["name"])
    ts = events["ts_ns"].to_numpy(dtype=np.int64)
    event_codes, event_texts = hpu_event
    for launch_event, window_event in GRAPH_LAUNCHES.items():
        if launch_event not in event_texts or window_event not in event_texts:
            continue
        windows = np.flatnonzero(event_codes == event_texts.index(window_event))
        mine = np.flatnonzero(event_codes[launch] == event_texts.index(launch_event))
        if len(mine) == 0 or len(windows) == 0:
            continue
        launches, of_launch = np.unique(launch[mine], return_inverse=True)
        kwin = _window_of(events, launches, windows)[of_launch.reshape(-1)]
        op, owin = _ops_in_windows(events, windows, is_cpu_op)
        if len(op) == 0:
            continue
        keys: dict[str, int] = {}  # each distinct name's key computed once, then indexed
        kkey = _name_keys(name_codes[dev[mine]], name_texts, kernel_key, keys)
        okey = _name_keys(name_codes[op], name_texts, op_key, keys)
        # the k-th kernel of a key in its launch (in time order) -> the (k mod n)-th of the n
        # host ops of that key in the launch's window (in time order)
        kernel_order = np.lexsort((mine, ts[dev[mine]]))
        k = np.empty(len(mine), dtype=np.int64)
        k[kernel_order] = rank_in_group((launch[mine] * len(keys) + kkey)[kernel_order])
        host_order = np.lexsort((op, ts[op]))
        windowed = kwin >= 0
        got = nth_of_group(
            (owin * len(keys) + okey)[host_order],
            op[host_order],
            (kwin * len(keys) + kkey)[windowed],
            k[windowed],
        )
        out[mine[windowed]] = got
    return out


def _name_keys(
    codes: NDArray[np.integer[Any]], texts: list[str], key_of: Any, keys: dict[str, int]
) -> NDArray[np.int64]:
    """The key number (in `keys`, which grows) of each row's name, given as name codes: one
    key per distinct name (code -1, no name, is the table's last entry)."""
    table = [keys.setdefault(key_of(text), len(keys)) for text in (*texts, "")]
    return np.asarray(table, dtype=np.int64)[codes]


# --- dtype and flops ------------------------------------------------------------------------------


_MATCH_ROWS = 1 << 16
"""Rows whose args `_arg_matches` copies and matches at once."""


def _arg_matches(
    events: pd.DataFrame, rows: NDArray[np.int64], pattern: str, literal: bytes
) -> Any:
    """Regex capture `v` in the raw args of `rows` as an Arrow string array (null where
    absent), one vectorized pass. `literal` is text every match holds: when the rows' args
    hold none, no row matches and the regex is not run (most traces have no such key)."""
    col = events["args"]
    arrow = getattr(col.array, "__arrow_array__", None)
    arr = arrow() if arrow is not None else pa.array(col.to_numpy(dtype=object), type=pa.binary())
    if arr.type != pa.large_binary():
        taken = arr.take(pa.array(rows, type=pa.int64()))
        text = pc.cast(taken, pa.large_string() if "large" in str(taken.type) else pa.string())
        return pc.struct_field(pc.extract_regex(text, pattern), "v")
    # the loader's (gathered in C, one exact-size buffer): nothing is copied when no row's args
    # hold `literal`, else the rows are matched a slice at a time (their copy at once was the
    # load's peak: a third of a large trace's args). The search of every row's args is left
    # out for a few rows (the matmuls of a 200 MB Gaudi trace: it took 0.1 s, their copies
    # and searches a slice at a time less)
    found = re.compile(re.escape(literal))
    chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
    few = len(rows) * 8 < len(arr)
    if not few and not any(
        c.buffers()[2] and found.search(memoryview(c.buffers()[2])) for c in chunks
    ):
        return pa.nulls(len(rows), pa.large_string())
    parts = []
    for first in range(0, len(rows), _MATCH_ROWS):
        taken = take_binary(arr, rows[first : first + _MATCH_ROWS])
        data = taken.buffers()[2]
        if data is None or found.search(memoryview(data)) is None:
            parts.append(pa.nulls(len(taken), pa.large_string()))
            continue
        text = pc.cast(taken, pa.large_string())
        parts.append(pc.struct_field(pc.extract_regex(text, pattern), "v"))
        del taken, text
    return pa.concat_arrays(parts) if parts else pa.nulls(0, pa.large_string())


def _arg_texts(
    events: pd.DataFrame, rows: NDArray[np.int64], pattern: str, literal: bytes
) -> tuple[list[str], NDArray[np.int64]]:
    """The captures of `_arg_matches`: their distinct texts, sorted ("" where absent), and
    each row's position among them (dictionary-encoded in Arrow: no Python string per row)."""
    if len(rows) == 0 or "args" not in events.columns:
        return [], np.zeros(0, dtype=np.int64)
    encoded = pc.dictionary_encode(_arg_matches(events, rows, pattern, literal).fill_null(""))
    texts: list[str] = encoded.dictionary.to_pylist()
    order = sorted(range(len(texts)), key=texts.__getitem__)
    place = np.empty(len(texts), dtype=np.int64)
    place[order] = np.arange(len(texts), dtype=np.int64)
    indices = np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
    return [texts[i] for i in order], place[indices]


def _arg_floats(events: pd.DataFrame, rows: NDArray[np.int64], key: str) -> NDArray[np.float64]:
    """The number under `key` in the raw args of `rows` (NaN where absent or not a number)."""
    if len(rows) == 0 or "args" not in events.columns:
        return np.zeros(0, dtype=np.float64)
    pattern = '"' + re.escape(key) + r'":\s*(?P<v>-?[0-9][0-9.eE+-]*)'
    got = _arg_matches(events, rows, pattern, f'"{key}":'.encode())
    try:
        values = pc.cast(got, pa.float64())
    except pa.ArrowInvalid:
        return pd.to_numeric(pd.Series(got.to_pylist()), errors="coerce").to_numpy(np.float64)
    return np.asarray(values.to_numpy(zero_copy_only=False), dtype=np.float64)


def _keyed_device_rows(events: pd.DataFrame) -> NDArray[np.int64]:
    """Device rows that can carry `dataType` / `hpuprof.flops` (Gaudi lanes, the emulator)."""
    is_dev = events["is_device"].to_numpy(dtype=bool)
    return np.flatnonzero(is_dev & ~_is(events["engine"], {"GPU"}))


def _own_dtypes(
    events: pd.DataFrame, data_types: DataTypes | None = None
) -> tuple[NDArray[np.int32], list[str]]:
    """Each row's own dtype as codes into a vocabulary ("" first: none): host ops their first
    floating input type, device rows their `dataType` arg (`data_types`, else found in the
    args)."""
    at: dict[str, int] = {"": 0}

    def code(dtype: str) -> int:
        return at.setdefault(dtype, len(at))

    codes_in, cats = _codes(events["input_types"])
    per_cat = np.array([code(first_float_dtype(c)) for c in cats] + [0], dtype=np.int32)
    dtype = per_cat[codes_in]  # (code -1, no input types: the table's last entry; int32: a
    # column-long temporary of the load's peak, at half the width of int64)
    dtype[~_is(events["kind"], {"cpu_op"})] = 0
    keyed = _keyed_device_rows(events)
    if data_types is not None:
        uniq, inv = data_types.texts, np.asarray(data_types.codes[keyed], dtype=np.int64)
    else:
        uniq, inv = _arg_texts(events, keyed, r'"dataType":\s*"(?P<v>[^"]*)"', b'"dataType":')
    if len(keyed):
        dtype[keyed] = np.array([code(norm_dtype(u)) if u else 0 for u in uniq], np.int32)[inv]
    return dtype, sorted(at, key=at.__getitem__)


def _dtypes(
    events: pd.DataFrame,
    op_pos: NDArray[np.int64],
    own: tuple[NDArray[np.int32], list[str]],
) -> pd.Categorical:
    """The `dtype` column: each row's own dtype (`_own_dtypes`), else for a device row the
    dtype of its op."""
    dtype, vocabulary = own
    dev = np.flatnonzero(events["is_device"].to_numpy(dtype=bool) & (op_pos >= 0))
    inherit = dev[dtype[dev] == 0]
    dtype[inherit] = dtype[op_pos[inherit]]
    return categorical(dtype, vocabulary)


def _flops(events: pd.DataFrame, ours: NDArray[np.float64]) -> NDArray[np.float64]:
    """Device rows: `ours` (their `hpuprof.flops`); matmul/conv host ops: torch.profiler's
    `flops` arg, else from their shapes."""
    n = len(events)
    flops = np.full(n, np.nan, dtype=np.float64)
    keyed = _keyed_device_rows(events)
    if len(keyed):
        flops[keyed] = ours[keyed]
    ncodes, names = _codes(events["name"])
    mm_name = np.array([short_op(x) in MATMUL_CONV for x in names] + [False], dtype=bool)
    mm = np.flatnonzero(mm_name[ncodes] & _is(events["kind"], {"cpu_op"}))  # (-1: the last)
    if len(mm) == 0:
        return flops
    dcodes, dims = _codes(events["input_dims"])
    pair = ncodes[mm].astype(np.int64) * (len(dims) + 1) + dcodes[mm]
    uniq, inv = np.unique(pair, return_inverse=True)
    width = len(dims) + 1
    by_shape = np.array(
        [
            shape_flops(names[u // width], dims[u % width]) if 0 <= u % width < len(dims) else 0.0
            for u in uniq.tolist()
        ],
        dtype=np.float64,
    )[inv]
    given = _arg_floats(events, mm, "flops")
    value = np.where(np.isnan(given), by_shape, given)
    flops[mm] = np.where(value > 0, value, np.nan)
    return flops


# --- hpuprof runtime keys -------------------------------------------------------------------------


def _causes(found: Found, n: int) -> tuple[pd.Categorical, pd.Categorical]:
    """The `cause_kind` and `cause` columns from the `hpuprof.cause` values (a text: a guard
    failure's)."""
    rows: list[int] = []
    kinds: list[str] = []
    causes: list[str] = []
    given = [i for i, value in enumerate(found.values) if value is not None]  # (few rows)
    values = [found.values[i] for i in given]
    for row, got in zip(found.rows[given].tolist(), values, strict=True):
        if got and not isinstance(got, dict):
            got = {"kind": "guard", "text": str(got)}
        if isinstance(got, dict):
            rows.append(row)
            kinds.append(str(got.get("kind") or ""))
            causes.append(msgspec.json.encode(got).decode())
    return sparse_text(n, rows, kinds), sparse_text(n, rows, causes)


OLDEST_READABLE_VERSION = 1
"""Saved traces of this schema version or later load (older derived columns recomputed)."""


def upgrade_events(events: pd.DataFrame, version: int) -> pd.DataFrame | None:
    """Events saved by an older schema `version` (`schema.stored_event_columns`) with the
    columns it lacks computed; None when the columns are not those of that version."""
    if list(events.columns) != list(stored_event_columns(version)):
        return None
    return with_derived(events)
