"""Collectives across ranks: per-rank arrival tables, matching, collective skew (pure functions).

Per rank (`collective_table`), each collective instance is one row: where it comes from
(`device`: a communication op on the accelerator, e.g. an NCCL kernel or an HCCL op on a Gaudi
NIC lane; else `host`: the collective call on the host, for CPU-only or host-only traces), its
process group, its sequence number when the trace has one (Kineto's "Seq" arg), its order
within its process group, its name, step, start and end.

Across ranks (`match_collectives`), instances are matched on (process group, sequence number)
when every rank's instance carries one, else on (process group, order in that group): NCCL and
HCCL run a group's collectives in the same order on every rank. The arrival of a rank is the
start of its instance (a collective kernel starts when its rank reaches it and then waits for
the others). For each matched instance: the rank that arrived last, the arrival skew (last
minus first) and the waiting it caused (sum over the other ranks of last arrival minus theirs).
Clocks: ranks are compared on their own timestamps (one host, or hosts whose clocks agree); no
skew correction is applied.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import pandas as pd

from hpuprof.analysis._common import arg_values, cat_test, ends, isin, strs, without_args
from hpuprof.trace.schema import NO_ID

COLLECTIVE_COLUMNS: Final = ("pg", "seq", "order", "name", "step", "start_ns", "end_ns", "source")
HOST_COLLECTIVE_RE: Final = re.compile(
    r"^c10d::(all_?reduce|allgather|_allgather_base|all_gather|reduce_scatter|"
    r"_reduce_scatter_base|broadcast|alltoall|all_to_all|reduce_|gather|scatter|barrier|send|recv)"
)
KERNEL_NAME_RE: Final = re.compile(r"(?:nccl|rccl|hccl)(?:Dev)?(?:Kernel)?_?([A-Za-z]+)", re.I)


def _collective_name(value: str, event_name: str) -> str:
    """The collective's name: its `collective_name` column, else from the event name."""
    if value:
        return value
    if event_name.startswith("c10d::"):
        return event_name[6:].strip("_")
    match = KERNEL_NAME_RE.match(event_name)
    return match.group(1) if match else event_name


def _rows_for(ev: pd.DataFrame, ktype: np.ndarray | None, dev: pd.DataFrame) -> tuple[Any, str]:
    """The events that stand for collectives on this rank, and their source."""
    if ktype is not None and len(dev):
        comm = dev[ktype == "COMMUNICATION"]
        if len(comm):
            return comm, "device"
    host = ev[~ev["is_device"].to_numpy(dtype=bool) & isin(ev["ph"], ("X",))]
    params = host[isin(host["name"], ("record_param_comms",))]
    if len(params):
        return params, "host"
    calls = host[cat_test(host["name"], lambda n: HOST_COLLECTIVE_RE.match(n) is not None)]
    if len(calls):  # the outermost call only (c10d ops nest in each other)
        calls = calls[calls["depth"] == calls.groupby(["pid", "tid"])["depth"].transform("min")]
    return calls, "host"


def collective_table(
    full: pd.DataFrame, dev: pd.DataFrame, ktype: np.ndarray | None
) -> pd.DataFrame:
    """One row per collective instance of one rank (columns COLLECTIVE_COLUMNS)."""
    ev = without_args(full)
    rows, source = _rows_for(ev, ktype, dev)
    if len(rows) == 0:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in COLLECTIVE_COLUMNS})
    rows = rows.sort_values("ts_ns", kind="stable")
    names = strs(rows["name"]).tolist()
    given = arg_values(full, "collective_name", rows.index).tolist()
    table = pd.DataFrame(
        {
            "pg": arg_values(full, "process_group", rows.index).tolist(),
            "seq": np.asarray(arg_values(full, "collective_seq", rows.index), dtype=np.int64),
            "name": [_collective_name(g, n) for g, n in zip(given, names, strict=True)],
            "step": rows["step"].to_numpy(dtype=np.int64),
            "start_ns": rows["ts_ns"].to_numpy(dtype=np.int64),
            "end_ns": ends(rows),
            "source": source,
        }
    )
    table.insert(2, "order", table.groupby("pg").cumcount().to_numpy(dtype=np.int64))
    return table.reset_index(drop=True)


@dataclass(frozen=True)
class CollectiveSkew:
    """One collective matched across ranks (`key` is its sequence number or order in `pg`)."""

    collective: str
    pg: str
    key: int
    step: int
    ranks: int
    last_rank: int
    first_rank: int
    skew_ns: int
    wait_caused_ns: int


def match_collectives(tables: dict[int, pd.DataFrame]) -> pd.DataFrame:
    """Every rank's instances with a `match` key and its rank: rank, pg, key, name, step,
    start_ns, end_ns (only instances seen on at least two ranks)."""
    frames = [t.assign(rank=r) for r, t in tables.items() if len(t)]
    if not frames:
        return pd.DataFrame(columns=["rank", "pg", "key", "name", "step", "start_ns", "end_ns"])
    allr = pd.concat(frames, ignore_index=True)
    # sequence numbers where every instance of the group has one, else order in the group
    with_seq = allr.groupby("pg")["seq"].transform(lambda s: bool((s != NO_ID).all()))
    allr["key"] = np.where(with_seq.to_numpy(dtype=bool), allr["seq"], allr["order"])
    seen = allr.groupby(["pg", "key"])["rank"].transform("nunique")
    return allr[seen.to_numpy() >= 2][
        ["rank", "pg", "key", "name", "step", "start_ns", "end_ns"]
    ].reset_index(drop=True)


def skews(matched: pd.DataFrame) -> list[CollectiveSkew]:
    """Arrival skew, last rank and waiting caused of each matched collective, in time order."""
    if matched.empty:
        return []
    m = matched.sort_values(["pg", "key", "start_ns", "rank"], kind="stable")
    g = m.groupby(["pg", "key"], sort=False)
    last_pos = g["start_ns"].transform("idxmax")
    first_pos = g["start_ns"].transform("idxmin")
    latest = g["start_ns"].transform("max")
    m = m.assign(
        _last=m.loc[last_pos.to_numpy(), "rank"].to_numpy(),
        _first=m.loc[first_pos.to_numpy(), "rank"].to_numpy(),
        _wait=latest - m["start_ns"],
    )
    agg = (
        m.groupby(["pg", "key"], sort=False)
        .agg(
            collective=("name", "first"),
            step=("step", "max"),
            ranks=("rank", "nunique"),
            last_rank=("_last", "first"),
            first_rank=("_first", "first"),
            t0=("start_ns", "min"),
            t1=("start_ns", "max"),
            wait=("_wait", "sum"),
        )
        .reset_index()
        .sort_values("t0", kind="stable")
    )
    cols = {c: agg[c].tolist() for c in agg.columns}
    return [
        CollectiveSkew(
            collective=str(cols["collective"][i]),
            pg=str(cols["pg"][i]),
            key=int(cols["key"][i]),
            step=int(cols["step"][i]),
            ranks=int(cols["ranks"][i]),
            last_rank=int(cols["last_rank"][i]),
            first_rank=int(cols["first_rank"][i]),
            skew_ns=int(cols["t1"][i] - cols["t0"][i]),
            wait_caused_ns=int(cols["wait"][i]),
        )
        for i in range(len(agg))
    ]
