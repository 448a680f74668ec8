"""Shared vectorized helpers over the events table (schema.EVENT_COLUMNS)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final

import numpy as np
import pandas as pd

from hpuprof.trace.model import Trace
from hpuprof.trace.schema import ARG_COLUMNS, METADATA_KEY, STEP_ANNOTATION_PREFIX

# HTA 0.5.0's kernel-type regexes (hta/utils/utils.py), applied to names, so that our temporal
# and kernel-type breakdowns are comparable with HTA's on CUDA/ROCm/MTIA traces.
HTA_COMM_RE = re.compile(r"^nccl.*Kernel")
HTA_MEMORY_RE = re.compile(r"(^Memcpy)|(^Memset)|(^dma)")
HTA_NOT_COMPUTE_RE = re.compile(r"(^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync)")
# Wider communication names we also accept (HTA HEAD: hccl, ncclDevKernel, rccl, ...)
COMM_NAME_RE = re.compile(r"^(nccl|rccl|hccl|ncclDev)|ncclKernel|AllReduce|AllGather|ReduceScatter")

KERNEL_TYPES = ("COMPUTATION", "COMMUNICATION", "MEMORY", "OTHER")


def map_by_name(values: pd.Series, fn: Callable[[str], Any]) -> pd.Series:
    """Apply `fn` once per distinct value of a (categorical) string column, then broadcast."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        cats = values.cat.categories
        table = np.empty(len(cats) + 1, dtype=object)
        table[:-1] = [fn(str(c)) for c in cats]
        table[-1] = None
        codes = values.cat.codes.to_numpy()
        return pd.Series(table[np.where(codes >= 0, codes, len(cats))], index=values.index)
    uniq = pd.unique(values.astype(str))
    lookup = {u: fn(u) for u in uniq}
    return values.astype(str).map(lookup)


def strs(values: pd.Series) -> np.ndarray:
    """A string column as a numpy object array (categories taken by code: no string copy)."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        cats = values.cat.categories.to_numpy(dtype=object)
        codes = values.cat.codes.to_numpy()
        if len(cats) == 0:
            return np.full(len(values), "", dtype=object)
        out = cats[np.where(codes >= 0, codes, 0)]
        if (codes < 0).any():
            out[codes < 0] = ""
        return out
    return values.to_numpy(dtype=object)


def cat_test(values: pd.Series, fn: Callable[[str], bool]) -> np.ndarray:
    """`fn` applied once per distinct value of a categorical column, as a bool array."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        cats = values.cat.categories
        # (tolist: iterating the Index makes one scalar object a category, half of this)
        hit = np.array([bool(fn(str(c))) for c in cats.tolist()] + [bool(fn(""))], dtype=bool)
        codes = values.cat.codes.to_numpy()
        return np.asarray(hit[np.where(codes >= 0, codes, len(cats))], dtype=bool)
    return np.array([bool(fn(str(v))) for v in values.tolist()], dtype=bool)


def factor(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(codes, names) of a string column: categorical codes when it is one, else factorized."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        return values.cat.codes.to_numpy(), values.cat.categories.to_numpy(dtype=object)
    codes, uniques = pd.factorize(values.to_numpy(dtype=object))
    return codes, np.asarray(uniques, dtype=object)


def isin(values: pd.Series, wanted: Iterable[str]) -> np.ndarray:
    """Bool array: the (categorical) string column's value is one of `wanted`."""
    keys = frozenset(wanted)
    return cat_test(values, keys.__contains__)


_READ_AT_ROWS: Final = ("args", *ARG_COLUMNS)


def without_args(ev: pd.DataFrame) -> pd.DataFrame:
    """The events without the raw `args` and the columns read from args
    (`schema.ARG_COLUMNS`), no copy, so row subsets stay cheap: `arg_values` reads those at
    the rows kept."""
    dropped = [name for name in _READ_AT_ROWS if name in ev.columns]
    return ev.drop(columns=dropped) if dropped else ev


def arg_values(
    events: pd.DataFrame, name: str, labels: Sequence[Any] | np.ndarray | pd.Index
) -> np.ndarray:
    """The values of the column `name` (one of `schema.ARG_COLUMNS`, which `without_args`
    leaves out) at the rows with these labels, read from the full events table: text as str
    objects, numbers and flags as numpy values."""
    pos = positions(events.index, np.asarray(labels))
    if (pos < 0).any():
        raise KeyError("row labels not in the events table")
    column = events[name]
    if isinstance(column.dtype, pd.CategoricalDtype):
        return strs(column.iloc[pos])
    return column.to_numpy()[pos]


def hta_kernel_type(name: str) -> str:
    """HTA 0.5.0's `get_kernel_type` on a device event name."""
    if HTA_COMM_RE.match(name):
        return "COMMUNICATION"
    if HTA_MEMORY_RE.match(name):
        return "MEMORY"
    if not HTA_NOT_COMPUTE_RE.match(name):
        return "COMPUTATION"
    return "OTHER"


def device_events(ev: pd.DataFrame) -> pd.DataFrame:
    """Device activity rows (kernels, copies, sets, other device ops); annotations excluded."""
    mask = ev["is_device"].to_numpy(dtype=bool) & ~isin(ev["kind"], ("device_annotation",))
    mask &= isin(ev["ph"], ("X",))
    return without_args(ev)[mask]


def kernel_types(dev: pd.DataFrame) -> pd.Series:
    """COMPUTATION / COMMUNICATION / MEMORY / OTHER per device row.

    Gaudi engines decide where known (MME/TPC compute, DMA memory, NIC communication); other
    rows use the event kind (memcpy/memset, collective) and then HTA's name regexes.
    """
    by_name = map_by_name(dev["name"], hta_kernel_type).to_numpy(dtype=object)
    eng = dev["engine"]
    kind = dev["kind"]
    out = by_name.copy()
    out[isin(kind, ("memcpy", "memset"))] = "MEMORY"
    out[isin(kind, ("collective",))] = "COMMUNICATION"
    out[isin(eng, ("MME", "TPC"))] = "COMPUTATION"
    out[isin(eng, ("DMA",))] = "MEMORY"
    out[isin(eng, ("NIC",))] = "COMMUNICATION"
    return pd.Series(out, index=dev.index, dtype=object)


def ends(ev: pd.DataFrame) -> np.ndarray:
    """End timestamps (ts + dur) in ns."""
    return ev["ts_ns"].to_numpy(dtype=np.int64) + ev["dur_ns"].to_numpy(dtype=np.int64)


def positions(index: pd.Index, labels: np.ndarray) -> np.ndarray:
    """Positions of row labels in `index` (-1 where absent); free on an unfiltered table."""
    labels = np.asarray(labels, dtype=np.int64)
    if isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1:
        return np.where((labels >= 0) & (labels < len(index)), labels, -1)
    return np.asarray(index.get_indexer(pd.Index(labels)), dtype=np.int64)


def self_time(ev: pd.DataFrame, rows: pd.DataFrame | None = None) -> pd.Series:
    """Host self time: duration minus the durations of direct children (same lane).

    `parent` holds the row label of the enclosing slice, so the table must keep its labels.
    """
    rows = ev if rows is None else rows
    par = ev["parent"].to_numpy(dtype=np.int64)
    dur = ev["dur_ns"].to_numpy(dtype=np.int64)
    at = positions(ev.index, par)
    has = at >= 0
    child = np.bincount(at[has], weights=dur[has], minlength=len(ev)).astype(np.int64)
    mine = positions(ev.index, rows.index.to_numpy())
    sub = np.where(mine >= 0, child[np.maximum(mine, 0)], 0)
    return pd.Series(np.maximum(rows["dur_ns"].to_numpy(dtype=np.int64) - sub, 0), index=rows.index)


def step_windows(ev: pd.DataFrame) -> pd.DataFrame:
    """Step windows [rank, step, start_ns, end_ns] from ProfilerStep#N or our step slices."""
    is_prof = cat_test(ev["name"], lambda n: n.startswith(STEP_ANNOTATION_PREFIX))
    is_prof &= isin(ev["kind"], ("user_annotation",))
    is_ours = isin(ev["hpu_event"], ("step",)) & ~is_prof
    rows = without_args(ev)[is_prof | is_ours]
    if rows.empty:
        return pd.DataFrame(
            {
                "rank": pd.Series(dtype=np.int32),
                "step": pd.Series(dtype=np.int64),
                "start_ns": pd.Series(dtype=np.int64),
                "end_ns": pd.Series(dtype=np.int64),
            }
        )
    step_num = pd.to_numeric(
        rows["name"].astype(str).str.extract(r"#(\d+)", expand=False), errors="coerce"
    )
    out = pd.DataFrame(
        {
            "rank": rows["rank"].to_numpy(),
            "step": step_num.fillna(-1).astype(np.int64).to_numpy(),
            "start_ns": rows["ts_ns"].to_numpy(dtype=np.int64),
            "end_ns": ends(rows),
        }
    )
    out = out.groupby(["rank", "step"], as_index=False).agg(
        start_ns=("start_ns", "min"), end_ns=("end_ns", "max")
    )
    return out.sort_values(["rank", "start_ns"], ignore_index=True)


def pct(part: float, whole: float) -> float:
    """Percentage rounded to 2 decimals; 0 when the whole is 0."""
    return round(100.0 * part / whole, 2) if whole else 0.0


def is_fallback(ev: pd.DataFrame) -> np.ndarray:
    """Bool array: the row is a CPU fallback (the `fallback` column or our fallback event)."""
    return ev["fallback"].to_numpy(dtype=bool) | isin(ev["hpu_event"], ("fallback",))


def steps_in(values: Iterable[Any]) -> tuple[int, ...]:
    """The distinct step numbers among `values`, sorted, without NO_ID (outside any step)."""
    return tuple(sorted({int(s) for s in values if s >= 0}))


def host_ops(ev: pd.DataFrame) -> pd.DataFrame:
    """Host ATen / torch ops (kind cpu_op), slices only."""
    mask = isin(ev["kind"], ("cpu_op",)) & isin(ev["ph"], ("X",))
    return without_args(ev)[mask]


HOST_WORK_KINDS: Final = ("cpu_op", "runtime", "hpu_runtime")


def host_work(ev: pd.DataFrame) -> pd.DataFrame:
    """Slices of the host's own work: ops, runtime calls, graph builds, compiles, launches and
    fallbacks (`HOST_WORK_KINDS`); waits on the device (`sync`) and annotations left out. The
    one definition of "host busy" (a host-bound verdict counts compiles, so does host busy)."""
    mask = isin(ev["kind"], HOST_WORK_KINDS) & isin(ev["ph"], ("X",))
    mask &= ~isin(ev["hpu_event"], ("sync",)) & ~ev["is_device"].to_numpy(dtype=bool)
    return without_args(ev)[mask]


def host_time_source(trace: Trace) -> str:
    """'measured' or 'projected' (an emulated run's projected host timeline) from our run
    metadata (measured when unknown)."""
    for meta in trace.metadata.values():
        ours = meta.get(METADATA_KEY) if isinstance(meta, dict) else None
        if isinstance(ours, dict) and ours.get("timeline") == "projected":
            return "projected"
    return "measured"


def device_time_source(trace: Trace) -> str:
    """'measured', 'modeled' or 'none' (`Trace.device_time`; measured when it does not say)."""
    return trace.device_time or "measured"


def records(frame: pd.DataFrame, index: str = "") -> list[dict[str, Any]]:
    """The rows of a (small, aggregated) table as dicts; its index under the key `index`."""
    table = frame.reset_index(names=index) if index else frame
    return [{str(k): v for k, v in r.items()} for r in table.to_dict("records")]
