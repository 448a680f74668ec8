"""`Trace`: one record of a profiled run, as columnar tables (see `schema.py`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from hpuprof.trace.schema import SCHEMA_VERSION


@dataclass(frozen=True)
class Trace:
    """A loaded trace. Tables follow `schema.EVENT_COLUMNS`, `COUNTER_COLUMNS`, `FLOW_COLUMNS`.

    Args:
        events: slices and instants, one row each, sorted by (rank, ts_ns).
        counters: `ph: C` samples, one row per (event, series).
        flows: `ph: s/t/f` flow points.
        metadata: top-level trace metadata per rank: {rank: {key: value}} (deviceProperties,
            distributedInfo, baseTimeNanoseconds, our `hpuprof` run metadata, ...).
        processes: process names/labels/sort indexes from `M` events (rank, pid, name, labels).
        threads: thread names from `M` events (rank, pid, tid, name).
        sources: the files this trace was read from, one per rank.
        format: the source format and era, e.g. "kineto-json/ns-relative", "gaudi-merged".
        schema_version: the model version this trace was built with.
    """

    events: pd.DataFrame
    counters: pd.DataFrame
    flows: pd.DataFrame
    metadata: Mapping[int, Mapping[str, Any]] = field(default_factory=dict)
    processes: pd.DataFrame = field(default_factory=pd.DataFrame)
    threads: pd.DataFrame = field(default_factory=pd.DataFrame)
    sources: tuple[str, ...] = ()
    format: str = ""
    schema_version: int = SCHEMA_VERSION
