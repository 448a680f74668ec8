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
from hpuprof.trace.model import Trace
from hpuprof.trace.schema import COUNTER_COLUMNS

TRACK_PREFIX = "memory · "
"""The start of every memory track's name."""
MEMORY_CATEGORY = "hpuprof.memory"
"""The `cat` of the samples made here."""


def _samples(frame: pd.DataFrame, column: str, series: str) -> pd.DataFrame:
    """One counter sample per row of `frame` (rank, device, ts_ns, `column`) named `series`."""
    n = len(frame)
    return pd.DataFrame(
        {
            "name": (TRACK_PREFIX + frame["device"].astype(str)).to_numpy(dtype=object),
            "series": np.full(n, series, dtype=object),
            "cat": np.full(n, MEMORY_CATEGORY, dtype=object),
            "pid": np.full(n, "memory", dtype=object),
            "tid": frame["device"].astype(str).to_numpy(dtype=object),
            "rank": frame["rank"].to_numpy(dtype=np.int32),
            "ts_ns": frame["ts_ns"].to_numpy(dtype=np.int64),
            "value": frame[column].to_numpy(dtype=np.float64),
        }
    )


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` with the dtypes of `COUNTER_COLUMNS` (categories for the texts)."""
    return frame.astype(COUNTER_COLUMNS)[list(COUNTER_COLUMNS)].reset_index(drop=True)


def memory_counters(trace: Trace) -> pd.DataFrame:
    """The trace's memory as counter samples (see the module docstring); empty without a
    memory source."""
    parts: list[pd.DataFrame] = []
    allocator = allocator_samples(trace)
    if allocator is not None:
        parts.append(_samples(allocator, "allocated_bytes", "allocated"))
        # a device whose allocator never reports a reservation (the CPU's) has no such series
        reserving = allocator.groupby(["rank", "device"])["reserved_bytes"].transform("max") > 0
        parts.append(_samples(allocator[reserving.to_numpy()], "reserved_bytes", "reserved"))
    else:
        modeled = counter_samples(trace)
        if modeled is not None:
            parts.append(_samples(modeled, "allocated_bytes", "allocated, modeled"))
    if not parts:
        return _typed(pd.DataFrame({c: [] for c in COUNTER_COLUMNS}))
    return _typed(pd.concat(parts, ignore_index=True))


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
    return _typed(pd.concat([own.astype(object), memory.astype(object)], ignore_index=True))
