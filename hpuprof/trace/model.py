"""`Trace`: one record of a profiled run, as columnar tables (see `schema.py`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from hpuprof.path_text import path_text
from hpuprof.trace.schema import DEVICE_TIME_SOURCES, METADATA_KEY, SCHEMA_VERSION, DeviceTimeSource


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
        sources: the files this trace was read from, one per rank, as `path_text` shows them
            (always valid UTF-8: a name that is not is shown with `\\xNN` escapes).
        format: the source format and era, e.g. "kineto-json/relative-ns+gaudi".
        schema_version: the model version this trace was built with.
        device_time: where its device times come from: "measured" (a real device),
            "modeled" (the emulator's device model) or "none" (no device); None when the
            trace does not say (analyses take device times as measured). When not given,
            what hpuprof's run metadata states (`stated_device_time`).
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
    device_time: DeviceTimeSource | None = None

    def __post_init__(self) -> None:
        shown = tuple(path_text(s) for s in self.sources)
        if shown != self.sources:
            object.__setattr__(self, "sources", shown)
        if self.device_time is None:
            object.__setattr__(self, "device_time", stated_device_time(self.metadata))

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


def stated_device_time(metadata: Mapping[int, Mapping[str, Any]]) -> DeviceTimeSource | None:
    """The device time source hpuprof's run metadata states (the first rank's that states
    one), or None."""
    for meta in metadata.values():
        ours = meta.get(METADATA_KEY) if isinstance(meta, Mapping) else None
        stated = ours.get("device_time") if isinstance(ours, Mapping) else None
        if stated in DEVICE_TIME_SOURCES:
            return stated
    return None
