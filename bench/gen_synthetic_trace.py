"""Write a realistic synthetic Kineto trace (deterministic for a seed) for the load benchmark.

Shape follows a torch.profiler CUDA training trace as Kineto writes it (pretty-printed, ns
relative float µs with baseTimeNanoseconds): ProfilerStep#N annotations; nested cpu_op with
External id / Sequence number / Ev Idx / Input Dims / Input type / Input Strides / Concrete
Inputs args; cudaLaunchKernel runtime calls and their kernels with correlation, stream, grid,
block args; ac2g flows; memcpy; a few counters; process/thread metadata.

    python bench/gen_synthetic_trace.py OUT.json [--events 2000000] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from typing import TextIO

PID, TID, DEVICE, STREAM = 4242, 4242, 0, 7
BASE_NS = 1_790_857_026_000_000_000
OPS = [
    ("aten::linear", "aten::addmm", "ampere_sgemm_128x64_tn", [[64, 1024], [1024, 1024], [1024]]),
    ("aten::conv2d", "aten::cudnn_convolution", "implicit_convolve_sgemm", [[32, 64, 56, 56]]),
    ("aten::layer_norm", "aten::native_layer_norm", "vectorized_layer_norm_kernel", [[64, 1024]]),
    ("aten::relu", "aten::clamp_min", "vectorized_elementwise_kernel<4, clamp_min>", [[64, 4096]]),
    ("aten::add", "aten::add_", "vectorized_elementwise_kernel<4, AddFunctor>", [[64, 1024]]),
]


def _us(ns: int) -> str:
    return f"{ns // 1000}.{ns % 1000:03d}"


class _Writer:
    def __init__(self, out: TextIO, rng: random.Random) -> None:
        self.out = out
        self.rng = rng
        self.count = 0
        self.limit = 0  # op events beyond this are dropped (room kept for the closing events)
        self.first = True
        self.external = 0
        self.correlation = 0
        self.ev_idx = 0
        self.seq = 0

    def event(self, text: str, force: bool = False) -> None:
        if self.count >= self.limit and not force:
            return
        self.out.write(("  " if self.first else ",\n  ") + text)
        self.first = False
        self.count += 1

    def complete(
        self,
        cat: str,
        name: str,
        pid: int,
        tid: int,
        ts: int,
        dur: int,
        args: str,
        force: bool = False,
    ) -> None:
        self.event(
            f'{{\n    "ph": "X", "cat": "{cat}", "name": "{name}", "pid": {pid}, "tid": {tid},\n'
            f'    "ts": {_us(ts)}, "dur": {_us(dur)},\n    "args": {{\n      {args}\n    }}\n  }}',
            force,
        )

    def counter(self, ts: int) -> None:
        self.event(
            f'{{\n    "ph": "C", "name": "memory", "pid": {PID}, "tid": {TID}, '
            f'"ts": {_us(ts)},\n    "cat": "counter", "args": {{"allocated": '
            f'{self.rng.randrange(1 << 30)}, "reserved": {1 << 31}}}\n  }}',
            force=True,
        )

    def cpu_op(self, name: str, ts: int, dur: int, dims: list[list[int]], outer: bool) -> None:
        """An ATen op; the outer (autograd-recorded) one carries strides and inputs too."""
        self.external += 1
        self.ev_idx += 1
        types = json.dumps(["float"] * len(dims))
        args = f'"External id": {self.external}, "Input type": {types}, '
        if outer:
            self.seq += 1
            strides = json.dumps([[1] * len(d) for d in dims])
            concrete = json.dumps([""] * len(dims))
            args += f'"Concrete Inputs": {concrete}, "Input Strides": {strides}, '
            args += f'"Sequence number": {self.seq}, '
        args += f'"Input Dims": {json.dumps(dims)}, "Ev Idx": {self.ev_idx}'
        self.complete("cpu_op", name, PID, TID, ts, dur, args)

    def launch(self, kernel: str, ts: int, kernel_ts: int, kernel_dur: int) -> None:
        self.correlation += 1
        corr = self.correlation
        self.complete(
            "cuda_runtime",
            "cudaLaunchKernel",
            PID,
            TID,
            ts,
            4_000 + self.rng.randrange(3_000),
            f'"External id": {self.external},"cbid": 211, "correlation": {corr}',
        )
        grid = f"[{self.rng.randrange(1, 512)}, 1, 1]"
        self.complete(
            "kernel",
            kernel,
            DEVICE,
            STREAM,
            kernel_ts,
            kernel_dur,
            f'"External id": {self.external}, "device": {DEVICE}, "stream": {STREAM}, '
            f'"correlation": {corr}, "registers per thread": 64, "grid": {grid}, '
            f'"block": [256, 1, 1]',
        )
        for ph, pid, tid, t, bp in (
            ("s", PID, TID, ts, ""),
            ("f", DEVICE, STREAM, kernel_ts, ', "bp": "e"'),
        ):
            self.event(
                f'{{\n    "ph": "{ph}", "id": {corr}, "pid": {pid}, "tid": {tid}, "ts": {_us(t)},\n'
                f'    "cat": "ac2g", "name": "ac2g"{bp}\n  }}'
            )


def trace_or_generated(trace: Path | None, scratch: str, events: int) -> Path:
    """`trace` itself, or a synthetic trace of `events` events generated in `scratch`."""
    if trace is not None:
        return trace
    made = Path(scratch) / "synthetic.pt.trace.json"
    generate(made, events)
    return made


def generate(path: Path, events: int, seed: int = 0) -> int:
    """Write exactly `events` events (slices, flows, counters, metadata and instants) to `path`;
    returns that count."""
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as out:
        out.write(
            '{\n  "schemaVersion": 1,\n  "deviceProperties": [\n    {"id": 0, "name": '
            '"NVIDIA H100 80GB HBM3", "totalGlobalMem": 85028896768, "computeMajor": 9, '
            '"computeMinor": 0, "numSms": 132}\n  ],\n  "distributedInfo": {"backend": "nccl", '
            '"rank": 0, "world_size": 1},\n  "record_shapes": 1,\n  "displayTimeUnit": "ms",\n'
            f'  "baseTimeNanoseconds": {BASE_NS},\n  "traceEvents": [\n'
        )
        w = _Writer(out, rng)
        for name, pid, tid in (("process_name", PID, 0), ("process_name", DEVICE, 0)):
            label = "python3" if pid == PID else f"GPU {DEVICE}"
            w.event(
                f'{{\n    "name": "{name}", "ph": "M", "ts": 0.000, "pid": {pid}, "tid": {tid},\n'
                f'    "args": {{\n      "name": "{label}"\n    }}\n  }}',
                force=True,
            )
        clock = 5_000_000_000
        device_clock = clock
        step = 0
        w.limit = events - 3  # room for the last step's annotation and counter, and the end marker
        while w.count < w.limit:
            step += 1
            ops_in_step = 2_000
            step_start = clock
            body: list[tuple[int, int]] = []
            clock += 2_000
            for _ in range(ops_in_step):
                outer, inner, kernel, dims = OPS[rng.randrange(len(OPS))]
                start = clock
                inner_start = start + 1_500 + rng.randrange(1_000)
                launch_start = inner_start + 2_000 + rng.randrange(2_000)
                inner_end = launch_start + 9_000
                end = inner_end + 1_000 + rng.randrange(1_000)
                w.cpu_op(outer, start, end - start, dims, outer=True)
                w.cpu_op(inner, inner_start, inner_end - inner_start, dims, outer=False)
                device_clock = max(device_clock, launch_start + 3_000) + rng.randrange(2_000)
                kernel_dur = 3_000 + rng.randrange(20_000)
                w.launch(kernel, launch_start, device_clock, kernel_dur)
                device_clock += kernel_dur
                if rng.random() < 0.05:
                    w.complete(
                        "gpu_memcpy",
                        "Memcpy HtoD (Pageable -> Device)",
                        DEVICE,
                        STREAM,
                        device_clock,
                        2_000,
                        f'"device": {DEVICE}, "context": 1, "stream": {STREAM}, "correlation": 0,'
                        '"bytes": 4096, "memory bandwidth (GB/s)": 2.05',
                    )
                    device_clock += 2_000
                clock = end + 500 + rng.randrange(1_500)
                body.append((start, end))
                if w.count >= w.limit:
                    break
            w.complete(
                "user_annotation",
                f"ProfilerStep#{step}",
                PID,
                TID,
                step_start,
                clock - step_start,
                f'"External id": {w.external + 1},"Record function id": 0, "Ev Idx": {w.ev_idx}',
                force=True,
            )
            w.counter(clock)
            clock += 10_000
            if events - 1 - w.count < 4:  # no room for another step: pad with samples
                while w.count < events - 1:
                    w.counter(clock)
                    clock += 10_000
                break
        out.write(
            ',\n  {\n    "name": "Record Window End", "ph": "i", "s": "g",\n'
            f'    "pid": "", "tid": "", "ts": {_us(clock)}\n  }}\n  ],\n'
            '  "traceName": "synthetic.pt.trace.json"\n}\n'
        )
        return w.count + 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--events", type=int, default=2_000_000)
    parser.add_argument("--seed", type=int, default=0)
    options = parser.parse_args()
    count = generate(options.out, options.events, options.seed)
    size = options.out.stat().st_size
    print(f"wrote {options.out}: {count:,} events, {size / 1e6:,.1f} MB")


if __name__ == "__main__":
    main()
