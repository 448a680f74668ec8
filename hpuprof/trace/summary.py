"""What `hpuprof info` reports: a pure summary of a `Trace`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from hpuprof.trace.model import Trace
from hpuprof.trace.schema import NO_ID


@dataclass(frozen=True)
class TraceSummary:
    """Counts and spans of one loaded trace.

    Args:
        span_ns: last event end minus first event start (0 when empty).
        devices: accelerator indexes seen on device events, with names from deviceProperties.
        device_time: `Trace.device_time` ("modeled" / "measured" / "none"), "" when unknown.
    """

    sources: tuple[str, ...]
    format: str
    events: int
    counters: int
    flows: int
    start_ns: int
    end_ns: int
    span_ns: int
    ranks: tuple[int, ...]
    devices: dict[str, str]
    categories: dict[str, int]
    kinds: dict[str, int]
    steps: tuple[int, ...]
    device_time: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def device_names(metadata: Mapping[int, Mapping[str, Any]]) -> dict[int, str]:
    """Accelerator index -> name, from the deviceProperties of `metadata`."""
    names: dict[int, str] = {}
    for meta in metadata.values():
        props = meta.get("deviceProperties")
        if not isinstance(props, list):
            continue
        for i, prop in enumerate(props):
            if isinstance(prop, dict):
                index = prop.get("id", i)
                names[int(index) if isinstance(index, int) else i] = str(prop.get("name", ""))
    return names


def summarize(trace: Trace) -> TraceSummary:
    """Summarize `trace` (no side effects)."""
    events = trace.events
    if len(events):
        start = int(events["ts_ns"].min())
        end = int((events["ts_ns"] + events["dur_ns"]).max())
    else:
        start = end = 0
    device_ids = sorted(
        int(d) for d in events.loc[events["is_device"], "device"].unique() if d != NO_ID
    )
    names = device_names(trace.metadata)
    devices = {str(d): names.get(d, "") for d in device_ids}
    steps = sorted(int(s) for s in events["step"].unique() if s != NO_ID)
    cats = events["cat"].value_counts()
    kinds = events["kind"].value_counts()
    return TraceSummary(
        sources=trace.sources,
        format=trace.format,
        events=len(events),
        counters=len(trace.counters),
        flows=len(trace.flows),
        start_ns=start,
        end_ns=end,
        span_ns=end - start,
        ranks=tuple(trace.ranks),
        devices=devices,
        categories={str(k): int(v) for k, v in cats.items() if v},
        kinds={str(k): int(v) for k, v in kinds.items() if v},
        steps=tuple(steps),
        device_time=trace.device_time or "",
    )
