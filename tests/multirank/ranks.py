"""Write small many-rank Kineto runs with NCCL all-reduces and a known straggler (test helper).

Each rank: `steps` ProfilerSteps; per step `buckets` gradient buckets of a few ops (cpu_op ->
cudaLaunchKernel -> kernel on stream 7, compute `compute_ns` long), each closed by an
all-reduce (record_param_comms + cudaLaunchKernel + ncclDevKernel on stream 20 with Kineto's
collective args). Every rank reaches collective k at the same nominal time plus a small
rank-dependent offset; the straggler `delay_ns` later. Kernels of one collective end together.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

BASE_NS = 1_700_000_000_000_000_000
NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"


def _x(cat: str, name: str, pid: int, tid: int, ts_ns: int, dur_ns: int, **args: Any) -> dict:
    return {
        "ph": "X",
        "cat": cat,
        "name": name,
        "pid": pid,
        "tid": tid,
        "ts": ts_ns / 1000,
        "dur": dur_ns / 1000,
        "args": args,
    }


def rank_events(
    rank: int, ranks: int, straggler: int, steps: int, buckets: int, delay_ns: int, compute_ns: int
) -> list[dict[str, Any]]:
    ev: list[dict[str, Any]] = []
    corr = 0
    seq = 0
    bucket_ns = 4 * (compute_ns + 20_000) + delay_ns + 200_000
    t_step = 1_000_000
    for step in range(1, steps + 1):
        step_len = buckets * bucket_ns + 500_000
        ev.append(_x("user_annotation", f"ProfilerStep#{step}", 1, 1, t_step, step_len))
        for b in range(buckets):
            start = t_step + b * bucket_ns
            late = [5_000 * ((r * 7 + b + step) % 5) for r in range(ranks)]
            late[straggler] += delay_ns
            arrive = start + 4 * (compute_ns + 20_000) + 50_000
            for op in range(4):
                t = start + op * (compute_ns + 20_000)
                corr += 1
                ev.append(_x("cpu_op", "aten::mm", 1, 1, t, 15_000, **{"External id": corr}))
                ev.append(_x("cuda_runtime", "cudaLaunchKernel", 1, 1, t + 5_000, 5_000,
                             correlation=corr))  # fmt: skip
                ev.append(_x("kernel", "sgemm", 0, 7, t + 12_000, compute_ns,
                             correlation=corr, stream=7, device=0))  # fmt: skip
            seq += 1
            corr += 1
            mine = arrive + late[rank]
            end = arrive + max(late) + 100_000
            coll = {
                "Collective name": "allreduce",
                "Process Group Name": "0",
                "Seq": seq,
                "Group size": ranks,
            }
            ev.append(_x("cpu_op", "record_param_comms", 1, 1, mine - 20_000, 10_000, **coll))
            ev.append(_x("cuda_runtime", "cudaLaunchKernel", 1, 1, mine - 9_000, 5_000,
                         correlation=corr))  # fmt: skip
            ev.append(_x("kernel", NCCL, 0, 20, mine, end - mine, correlation=corr, stream=20,
                         device=0, **coll))  # fmt: skip
        t_step += step_len + 100_000
    return ev


def write_run(
    directory: Path,
    ranks: int = 4,
    straggler: int = 2,
    steps: int = 3,
    buckets: int = 4,
    delay_ns: int = 300_000,
    compute_ns: int = 50_000,
) -> list[Path]:
    """Write `rank<N>.json` files into `directory`; returns them."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for rank in range(ranks):
        doc = {
            "schemaVersion": 1,
            "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": ranks},
            "baseTimeNanoseconds": BASE_NS,
            "traceEvents": rank_events(
                rank, ranks, straggler, steps, buckets, delay_ns, compute_ns
            ),
        }
        path = directory / f"rank{rank}.json"
        path.write_text(json.dumps(doc))
        paths.append(path)
    return paths


def write_memory_bomb(path: Path, megabytes: int = 400) -> Path:
    """A valid one-event trace whose single arg unpacks to `megabytes` MB (a tiny .json.gz)."""
    chunk = "x" * (1 << 20)
    with gzip.open(path, "wt", compresslevel=1) as out:
        out.write('{"traceEvents": [{"ph": "X", "name": "a", "cat": "cpu_op", "pid": 1, ')
        out.write('"tid": 1, "ts": 1, "dur": 1, "args": {"blob": "')
        for _ in range(megabytes):
            out.write(chunk)
        out.write('"}}]}')
    return path
