"""Memory over time as counter tracks, for a timeline (the dashboard's).

`memory_counters(trace)` turns the memory sources of `memory.py` into counter samples (the
`schema.COUNTER_COLUMNS` table), one track per (rank, device) named "memory · <device>" with
the series "allocated" and, where the source has it, "reserved":
- allocator events (`[memory]` instants of torch.profiler's `profile_memory=True`): the
  allocator's running totals ("Total Allocated", "Total Reserved") after each event;
- else the emulator's `hpu.memory_in_use_bytes` counter: series "allocated, modeled".
Every sample is kept (a timeline thins them per view, keeping peaks). `timeline_counters(trace)`
is the trace's counters with its memory in that form, in place of the emulator's raw counter.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from hpuprof.analysis.memory import EMULATOR_COUNTER, allocator_samples, counter_samples
from hpuprof.trace.categories import categorical
from hpuprof.trace.combine import concat_tables
from hpuprof.trace.model import Trace

TRACK_PREFIX = "memory · "
"""The start of every memory track's name."""
MEMORY_CATEGORY = "hpuprof.memory"
"""The `cat` of the samples made here."""


def _table(parts: list[tuple[pd.DataFrame, str, str]]) -> pd.DataFrame:
    """The counters table of `parts`: per (frame of rank, device, ts_ns, ...; its value
    column; series name), one sample per row."""
    sizes = [len(frame) for frame, _, _ in parts]
    n = sum(sizes)
    device = np.concatenate([frame["device"].to_numpy(dtype=object) for frame, _, _ in parts])
    codes, devices = pd.factorize(device)
    zeros = np.zeros(n, dtype=np.int8)
    return pd.DataFrame(
        {
            "name": categorical(codes, [TRACK_PREFIX + str(d) for d in devices]),
            "series": categorical(
                np.repeat(np.arange(len(parts)), sizes), [s for _, _, s in parts]
            ),
            "cat": categorical(zeros, [MEMORY_CATEGORY]),
            "pid": categorical(zeros, ["memory"]),
            "tid": categorical(codes, [str(d) for d in devices]),
            "rank": np.concatenate([f["rank"].to_numpy(dtype=np.int32) for f, _, _ in parts]),
            "ts_ns": np.concatenate([f["ts_ns"].to_numpy(dtype=np.int64) for f, _, _ in parts]),
            "value": np.concatenate([f[c].to_numpy(dtype=np.float64) for f, c, _ in parts]),
        }
    )


def memory_counters(trace: Trace) -> pd.DataFrame:
    """The trace's memory as counter samples (see the module docstring); empty without a
    memory source."""
    parts: list[tuple[pd.DataFrame, str, str]] = []
    allocator = allocator_samples(trace)
    if allocator is not None:
        parts.append((allocator, "allocated_bytes", "allocated"))
        # a device whose allocator never reports a reservation (the CPU's) has no such series
        reserving = allocator.groupby(["rank", "device"])["reserved_bytes"].transform("max") > 0
        parts.append((allocator[reserving.to_numpy()], "reserved_bytes", "reserved"))
    else:
        modeled = counter_samples(trace)
        if modeled is not None:
            parts.append((modeled, "allocated_bytes", "allocated, modeled"))
    return _table(parts) if parts else trace.counters.iloc[0:0]


def timeline_counters(trace: Trace) -> pd.DataFrame:
    """The counter tracks a timeline draws: the trace's own counters (the emulator's raw
    memory counter left out) and its memory as `memory_counters` gives it."""
    own = trace.counters
    if len(own):
        own = own[(own["name"].astype(str) != EMULATOR_COUNTER).to_numpy()]
    memory = memory_counters(trace)
    if not len(memory):
        return own
    if not len(own):
        return memory
    return concat_tables([own, memory])
