"""Synthetic traces for the dashboard's tests and benchmark, built straight into the model.

`synthetic_trace(n)` makes about `n` events shaped like an emulated Gaudi training run, per
rank: ProfilerStep#N annotations on the host thread, ops (`cpu_op`) each with a launch
(`runtime`) and its device op on an MME, TPC or DMA engine lane (joined by `correlation`),
plus compiles (with recompile causes), syncs, CPU fallbacks and HPU-graph replays marked with
`hpuprof.event`. Deterministic. `write_chrome_json(trace, path)` writes the same events as
Kineto-style Chrome JSON (our keys under `hpuprof.*`), for tests that go through the loader.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pandas as pd

from hpuprof.trace.model import Trace
from hpuprof.trace.schema import ARG_FALLBACK, ARG_KEYS, COUNTER_COLUMNS, FLOW_COLUMNS, NO_ID
from tests.tracebuild import GIVEN_COLUMNS, derived_events, table, typed_table

OPS = ("aten::mm", "aten::add", "aten::relu", "aten::softmax", "aten::copy_", "aten::mul")
ENGINES = (("MME", "MME 0", "kernel"), ("TPC", "TPC 0", "kernel"), ("DMA", "DMA 0", "memcpy"))


def _rank_rows(rank: int, n_ops: int, ops_per_step: int, slow: float) -> dict[str, list[Any]]:
    cols: dict[str, list[Any]] = {c: [] for c in GIVEN_COLUMNS}
    cols["uid"], cols["parent_uid"] = [], []

    def add(**kw: Any) -> int:
        uid = len(cols["uid"])
        row = {
            "cat": "cpu_op", "ph": "X", "pid": "100", "tid": "100", "dur_ns": 0, "rank": rank,
            "kind": "cpu_op", "is_device": False, "device": NO_ID, "stream": NO_ID, "engine": "",
            "correlation": NO_ID, "external_id": NO_ID, "depth": 0, "parent": NO_ID,
            "step": NO_ID, "input_dims": "", "input_types": "", "mode": "lazy", "module": "",
            "phase": "", "graph_id": "", "hpu_event": "", "flush_reason": "", "fallback": False,
            "args": b"", "parent_uid": NO_ID,
        }  # fmt: skip
        row.update(kw)
        for c in cols:
            if c != "uid":
                cols[c].append(row[c])
        cols["uid"].append(uid)
        return uid

    op_ns, gap_ns = int(20_000 * slow), 2_000
    t = 1_000_000
    n_steps = max(1, n_ops // ops_per_step)
    corr = rank * 10_000_000
    for s in range(n_steps):
        step_len = ops_per_step * (op_ns + gap_ns) + 200_000
        step_uid = add(
            name=f"ProfilerStep#{s}", cat="user_annotation", kind="user_annotation",
            ts_ns=t, dur_ns=step_len, step=s,
        )  # fmt: skip
        t_op = t + 10_000
        if s in (0, 1) or s % 25 == 7:
            cause = {"kind": "new_graph" if s == 0 else "shape", "input": 0,
                     "from": "[8, 128]", "to": f"[{8 + s % 4}, 128]", "text": "shape changed"}  # fmt: skip
            add(
                name="hpu_compile", cat="hpuprof", kind="hpu_runtime", ts_ns=t_op, dur_ns=80_000,
                step=s, depth=1, parent_uid=step_uid, hpu_event="compile", graph_id=f"g{s % 2}",
                args=orjson.dumps({"hpuprof.event": "compile", "hpuprof.cause": cause}),
            )  # fmt: skip
            t_op += 90_000
        for i in range(ops_per_step):
            k = (s * ops_per_step + i) % len(OPS)
            name = OPS[k]
            fallback = name == "aten::softmax" and i % 7 == 3
            dims = "[[8,128],[128,128]]" if k == 0 else "[[8,128]]"
            dtype = '["c10::BFloat16"]' if k % 2 == 0 else '["float"]'
            op = add(
                name=name, ts_ns=t_op, dur_ns=op_ns, step=s, depth=1, parent_uid=step_uid,
                input_dims=dims, input_types=dtype, module=f"layers.{i % 4}.block",
                phase="fwd" if i < ops_per_step * 2 // 3 else "bwd", fallback=fallback,
                hpu_event="fallback" if fallback else "op",
            )  # fmt: skip
            corr += 1
            add(
                name="hpu_launch", cat="cuda_runtime", kind="runtime", ts_ns=t_op + 5_000,
                dur_ns=5_000, step=s, depth=2, parent_uid=op, correlation=corr,
            )  # fmt: skip
            eng, lane, dkind = ENGINES[k % 3]
            add(
                name=f"{name.split('::')[1]}_{eng.lower()}", cat="kernel" if dkind == "kernel" else "gpu_memcpy",
                kind=dkind, pid="0", tid=lane, is_device=True, device=0, stream=k % 3, engine=eng,
                ts_ns=t_op + 12_000, dur_ns=int(15_000 * slow), step=s, correlation=corr,
                args=orjson.dumps({"hpuprof.modeled": True, "hpuprof.flops": 1_000_000 * (k + 1)}),
            )  # fmt: skip
            t_op += op_ns + gap_ns
        replay = s % 3 == 2
        add(
            name="hpu_graph_replay" if replay else "hpu_sync", cat="hpuprof", kind="hpu_runtime" if replay else "sync",
            ts_ns=t_op + 10_000, dur_ns=30_000, step=s, depth=1, parent_uid=step_uid,
            hpu_event="graph_replay" if replay else "sync",
        )  # fmt: skip
        t = t + step_len + 50_000
    return cols


def _frame(cols: dict[str, list[Any]]) -> pd.DataFrame:
    df = pd.DataFrame(cols)
    df = df.sort_values(["rank", "ts_ns"], kind="stable", ignore_index=True)
    new_row = np.empty(len(df), dtype=np.int64)
    new_row[df["uid"].to_numpy()] = np.arange(len(df))
    pu = df["parent_uid"].to_numpy()
    df["parent"] = np.where(pu >= 0, new_row[np.maximum(pu, 0)], NO_ID)
    given = {c: df[c].tolist() for c in GIVEN_COLUMNS}
    return derived_events(typed_table(GIVEN_COLUMNS, given, len(df)))  # as a loader derives


def synthetic_trace(n_events: int = 3_000, *, ranks: int = 1, ops_per_step: int = 60) -> Trace:
    """About `n_events` events per the model; rank r > 0 runs 10 % slower per rank (a straggler)."""
    per_rank = max(ops_per_step, n_events // (3 * ranks))
    frames = []
    offset = 0
    for r in range(ranks):
        cols = _rank_rows(r, per_rank, ops_per_step, 1.0 + 0.1 * r)
        cols["uid"] = [u + offset for u in cols["uid"]]
        cols["parent_uid"] = [p + offset if p >= 0 else p for p in cols["parent_uid"]]
        offset += len(cols["uid"])
        frames.append(cols)
    merged = {c: [v for f in frames for v in f[c]] for c in frames[0]}
    threads = pd.DataFrame(
        [(r, p, t, n) for r in range(ranks) for p, t, n in
         [("100", "100", "python main"), *[("0", lane, lane) for _, lane, _ in ENGINES]]],
        columns=["rank", "pid", "tid", "name"],
    )  # fmt: skip
    processes = pd.DataFrame(
        [(r, p, n) for r in range(ranks) for p, n in [("100", "python"), ("0", "/device:HPU:0")]],
        columns=["rank", "pid", "name"],
    )
    meta = {
        r: {"hpuprof": {"device_time": "modeled", "mode": "lazy"}, "distributedInfo": {"rank": r}}
        for r in range(ranks)
    }
    return Trace(
        events=_frame(merged),
        counters=table(COUNTER_COLUMNS, []),
        flows=table(FLOW_COLUMNS, []),
        metadata=meta,
        processes=processes,
        threads=threads,
        sources=("<synthetic>",),
        format="synthetic",
    )


def write_chrome_json(trace: Trace, path: Path, rank: int = 0) -> Path:
    """Rank `rank` of `trace` as Kineto-style Chrome JSON (gzip when the name ends in .gz)."""
    ev = trace.events[trace.events["rank"] == rank]
    out: list[dict[str, Any]] = []
    for _, r in trace.processes[trace.processes["rank"] == rank].iterrows():
        out.append({"ph": "M", "name": "process_name", "pid": int(r["pid"]), "tid": 0,
                    "args": {"name": r["name"]}})  # fmt: skip
    for _, r in trace.threads[trace.threads["rank"] == rank].iterrows():
        tid = int(r["tid"]) if str(r["tid"]).isdigit() else r["tid"]
        out.append({"ph": "M", "name": "thread_name", "pid": int(r["pid"]), "tid": tid,
                    "args": {"name": r["name"]}})  # fmt: skip
    keys = {column: key for column, key in ARG_KEYS.items() if column != "fallback"}
    for rec in ev.to_dict("records"):
        args: dict[str, Any] = orjson.loads(rec["args"]) if rec["args"] else {}
        for col, key in keys.items():
            if rec[col]:
                args[key] = rec[col]
        if rec["fallback"]:
            args[ARG_FALLBACK.key] = True
        if rec["correlation"] != NO_ID:
            args["correlation"] = int(rec["correlation"])
        if rec["input_dims"]:
            args["Input Dims"] = orjson.loads(rec["input_dims"])
            args["Input type"] = orjson.loads(rec["input_types"])
        tid = rec["tid"]
        out.append({
            "ph": "X", "cat": rec["cat"], "name": rec["name"], "pid": int(rec["pid"]),
            "tid": int(tid) if str(tid).isdigit() else tid,
            "ts": rec["ts_ns"] / 1000, "dur": rec["dur_ns"] / 1000, "args": args,
        })  # fmt: skip
    doc = {
        "schemaVersion": 1,
        "distributedInfo": {"rank": rank, "world_size": int(trace.events["rank"].nunique())},
        "hpuprof": {"schema": 1, "device_time": "modeled", "mode": "lazy", "rank": rank},
        "traceEvents": out,
    }
    data = orjson.dumps(doc)
    path.write_bytes(gzip.compress(data) if path.name.endswith(".gz") else data)
    return path
