"""Write a synthetic many-rank CUDA training run (Kineto JSON, one file per rank) with NCCL
all-reduces whose arrival skew is planted and known, for the distributed benchmark.

Every rank runs the same steps (`ProfilerStep#N`, synchronized step starts). A step is
BUCKETS backward buckets of compute ops (nested cpu_ops, cudaLaunchKernel, kernels on stream
7, ac2g flows), each closed by a gradient all-reduce: `record_param_comms` on the host and an
`ncclDevKernel_AllReduce...` kernel on stream 20, both carrying Kineto's collective args
(`Collective name`, `Process Group Name`, `Seq`, sizes). A rank arrives at a collective when
its bucket's work is done: every rank at the bucket's nominal end plus a jitter of up to
JITTER_NS, the straggler STRAGGLER_DELAY_NS later on a STRAGGLER_SHARE of the collectives.
All ranks' kernels of one collective end together (last arrival + transfer time), as NCCL's do.
Arrivals come from a generator seeded by (seed, step, bucket), so every rank's file agrees on
every other rank's arrival without reading it.

    python bench/gen_multi_rank.py OUT_DIR [--ranks 64] [--mb 100] [--straggler 37] [--jobs 2]
"""

from __future__ import annotations

import argparse
import json
import random
from multiprocessing import Pool
from pathlib import Path
from typing import TextIO

from gen_synthetic_trace import OPS, _us  # same ops and time format as the one-rank trace

BASE_NS = 1_790_857_026_000_000_000
PID, TID, DEVICE = 4242, 4242, 0
COMPUTE_STREAM, NCCL_STREAM = 7, 20
BUCKETS = 8
OPS_PER_BUCKET = 250
BUCKET_NS = OPS_PER_BUCKET * 16_000  # nominal host time of one bucket's ops
JITTER_NS = 150_000
STRAGGLER_DELAY_NS = 600_000
STRAGGLER_SHARE = 0.75
NCCL_NS = 900_000
STEP_GAP_NS = 200_000


def arrivals(seed: int, step: int, bucket: int, ranks: int, straggler: int) -> list[int]:
    """Offsets (ns) at which each rank reaches collective (step, bucket), after its nominal end."""
    rng = random.Random(f"{seed}/{step}/{bucket}")
    out = [rng.randrange(JITTER_NS) for _ in range(ranks)]
    if 0 <= straggler < ranks and rng.random() < STRAGGLER_SHARE:
        out[straggler] += STRAGGLER_DELAY_NS
    return out


class _Rank:
    """Writes one rank's events; counts the bytes written."""

    def __init__(self, out: TextIO, rank: int, seed: int) -> None:
        self.out = out
        self.rank = rank
        self.rng = random.Random(f"{seed}/rank{rank}")
        self.first = True
        self.bytes = 0
        self.external = 0
        self.correlation = 1_000_000  # real Kineto ids are large: never a 16-bit column
        self.seq = 0

    def write(self, text: str) -> None:
        chunk = ("  " if self.first else ",\n  ") + text
        self.first = False
        self.out.write(chunk)
        self.bytes += len(chunk)

    def slice(self, cat: str, name: str, pid: int, tid: int, ts: int, dur: int, args: str) -> None:
        self.write(
            f'{{\n    "ph": "X", "cat": "{cat}", "name": "{name}", "pid": {pid}, "tid": {tid},\n'
            f'    "ts": {_us(ts)}, "dur": {_us(dur)},\n    "args": {{\n      {args}\n    }}\n  }}'
        )

    def launch(
        self, kernel: str, ts: int, dur: int, kts: int, kdur: int, stream: int, extra: str
    ) -> None:
        self.correlation += 1
        corr = self.correlation
        self.slice(
            "cuda_runtime", "cudaLaunchKernel", PID, TID, ts, dur,
            f'"External id": {self.external}, "cbid": 211, "correlation": {corr}',
        )  # fmt: skip
        self.slice(
            "kernel", kernel, DEVICE, stream, kts, kdur,
            f'"External id": {self.external}, "device": {DEVICE}, "stream": {stream}, '
            f'"correlation": {corr}, "registers per thread": 64, "grid": [128, 1, 1], '
            f'"block": [256, 1, 1]{extra}',
        )  # fmt: skip
        for ph, pid, tid, t, bp in (
            ("s", PID, TID, ts, ""),
            ("f", DEVICE, stream, kts, ', "bp": "e"'),
        ):
            self.write(
                f'{{\n    "ph": "{ph}", "id": {corr}, "pid": {pid}, "tid": {tid}, '
                f'"ts": {_us(t)},\n    "cat": "ac2g", "name": "ac2g"{bp}\n  }}'
            )

    def ops(self, start: int, end: int, device_free: int) -> int:
        """Compute ops filling host time [start, end); returns when the compute stream frees."""
        rng = self.rng
        weights = [1.0 + rng.random() for _ in range(OPS_PER_BUCKET)]
        scale = (end - start) / sum(weights)
        clock = start
        for w in weights:
            length = int(w * scale)
            outer, inner, kernel, dims = OPS[rng.randrange(len(OPS))]
            self.external += 1
            inner_start = clock + length // 10
            launch = inner_start + length // 5
            inner_end = launch + length // 2
            dims_json = json.dumps(dims)
            self.slice("cpu_op", outer, PID, TID, clock, length - 200,
                       f'"External id": {self.external}, "Input Dims": {dims_json}, '
                       f'"Input type": ["float"], "Sequence number": {self.external}')  # fmt: skip
            self.slice("cpu_op", inner, PID, TID, inner_start, inner_end - inner_start,
                       f'"External id": {self.external}, "Input Dims": {dims_json}')  # fmt: skip
            kdur = 2_000 + rng.randrange(14_000)
            kts = max(device_free, launch + 4_000) + rng.randrange(1_000)
            self.launch(kernel, launch, 3_000, kts, kdur, COMPUTE_STREAM, "")
            device_free = kts + kdur
            clock += length
        return device_free

    def collective(self, arrive: int, end: int, step: int, size: int) -> None:
        self.seq += 1
        nelems = 1 << 22
        args = (
            f', "Collective name": "allreduce", "Process Group Name": "0", '
            f'"Process Group Description": "default_pg", "Seq": {self.seq}, '
            f'"In msg nelems": {nelems}, "Out msg nelems": {nelems}, "Group size": {size}, '
            f'"dtype": "Float"'
        )
        self.external += 1
        host = arrive - 30_000
        self.slice("cpu_op", "record_param_comms", PID, TID, host, 25_000,
                   f'"External id": {self.external}{args}')  # fmt: skip
        self.launch(
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
            host + 5_000, 15_000, arrive, end - arrive, NCCL_STREAM, args,
        )  # fmt: skip


def write_rank(out_dir: Path, rank: int, ranks: int, mb: float, straggler: int, seed: int) -> int:
    """Write rank `rank`'s file (about `mb` MB); returns its size in bytes."""
    path = out_dir / f"rank{rank}.pt.trace.json"
    limit = int(mb * 1e6)
    with open(path, "w", encoding="utf-8") as out:
        out.write(
            '{\n  "schemaVersion": 1,\n  "deviceProperties": [\n    {"id": 0, "name": '
            '"NVIDIA H100 80GB HBM3", "totalGlobalMem": 85028896768}\n  ],\n'
            f'  "distributedInfo": {{"backend": "nccl", "rank": {rank}, "world_size": {ranks}}},\n'
            f'  "baseTimeNanoseconds": {BASE_NS},\n  "traceEvents": [\n'
        )
        w = _Rank(out, rank, seed)
        for name, pid, label in (
            ("process_name", PID, "python3"),
            ("process_name", DEVICE, "GPU 0"),
        ):
            w.write(f'{{"name": "{name}", "ph": "M", "ts": 0, "pid": {pid}, "tid": 0, '
                    f'"args": {{"name": "{label}"}}}}')  # fmt: skip
        step_start = 5_000_000_000
        step = 0
        while w.bytes < limit:
            step += 1
            clock = step_start
            device_free = step_start
            for bucket in range(BUCKETS):
                late = arrivals(seed, step, bucket, ranks, straggler)
                nominal = step_start + (bucket + 1) * (BUCKET_NS + STRAGGLER_DELAY_NS + JITTER_NS)
                arrive = nominal + late[rank]
                end = nominal + max(late) + NCCL_NS
                device_free = w.ops(clock, arrive - 40_000, device_free)
                w.collective(arrive, end, step, ranks)
                clock = arrive
            step_end = nominal + max(late) + NCCL_NS + STEP_GAP_NS
            w.external += 1
            w.slice("user_annotation", f"ProfilerStep#{step}", PID, TID, step_start,
                    step_end - step_start, f'"External id": {w.external}')  # fmt: skip
            step_start = step_end + 50_000
        out.write('\n  ],\n  "traceName": "rank.pt.trace.json"\n}\n')
    return path.stat().st_size


def _job(args: tuple[Path, int, int, float, int, int]) -> int:
    return write_rank(*args)


def generate(out_dir: Path, ranks: int, mb: float, straggler: int, seed: int, jobs: int) -> int:
    """Write every rank file (in `jobs` processes); returns the total bytes."""
    out_dir.mkdir(parents=True, exist_ok=True)
    work = [(out_dir, r, ranks, mb, straggler, seed) for r in range(ranks)]
    if jobs <= 1:
        return sum(map(_job, work))
    with Pool(jobs) as pool:
        return sum(pool.imap_unordered(_job, work))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--ranks", type=int, default=64)
    parser.add_argument("--mb", type=float, default=100.0)
    parser.add_argument("--straggler", type=int, default=37)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=2)
    a = parser.parse_args()
    total = generate(a.out, a.ranks, a.mb, a.straggler, a.seed, a.jobs)
    print(f"wrote {a.ranks} ranks to {a.out}: {total / 1e6:,.0f} MB, straggler rank {a.straggler}")


if __name__ == "__main__":
    main()
