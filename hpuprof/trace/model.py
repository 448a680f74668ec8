"""`Trace`: one record of a profiled run, as columnar tables (see `schema.py`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from hpuprof.trace.schema import SCHEMA_VERSION


@dataclass(frozen=True)
class Trace:
    """A loaded trace. Tables follow `schema.EVENT_COLUMNS`, `COUNTER_COLUMNS`, `FLOW_COLUMNS`.

    Args:
        events: slices and instants, one row each, sorted by (rank, ts_ns, -dur_ns, file
            order), so an enclosing slice comes before what it encloses. `parent` holds row
            positions (0..len-1) in this table.
        counters: `ph: C` samples, one row per (event, series).
        flows: `ph: s/t/f` flow points.
        metadata: top-level trace metadata per rank: {rank: {key: value}} (deviceProperties,
            distributedInfo, baseTimeNanoseconds, our `hpuprof` run metadata, ...).
        processes: from `M` events: rank, pid (text), name, labels, sort_index (NO_ID if none).
        threads: from `M` events: rank, pid, tid (text), name, sort_index.
        sources: the files this trace was read from, one per rank.
        format: the source format and era, e.g. "kineto-json/relative-ns+gaudi".
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

    def __len__(self) -> int:
        return len(self.events)

    def args(self, row: int) -> dict[str, Any]:
        """The parsed `args` object of event `row` (a position in `events`); {} if none."""
        import msgspec

        raw = self.events["args"].iloc[row]
        if raw is None or len(raw) == 0:
            return {}
        value = msgspec.json.decode(raw)
        return value if isinstance(value, dict) else {}

    @property
    def ranks(self) -> list[int]:
        """The ranks present, sorted."""
        ranks = set(self.metadata) | set(self.events["rank"].unique().tolist())
        return sorted(int(r) for r in ranks)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the trace to one Parquet file (schema version in its metadata), atomically."""
        from hpuprof.trace.parquet import save_parquet

        save_parquet(self, path)
