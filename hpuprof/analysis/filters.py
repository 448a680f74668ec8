"""Composable event filters (rank, step range, time window, device, name pattern).

A filter is a frozen dataclass with `mask(events) -> numpy bool array`; `&` composes them.
`apply_filters(trace, filters)` returns a new `Trace` whose events keep their row labels (so
`parent` still points at the right rows); the input trace is never modified.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd

from hpuprof.errors import UsageError
from hpuprof.trace.broadcast_columns import subset
from hpuprof.trace.model import Trace

BoolArray = npt.NDArray[np.bool_]


class EventFilter:
    """Base: subclasses implement `mask`."""

    def mask(self, events: pd.DataFrame) -> BoolArray:  # pragma: no cover - abstract
        raise NotImplementedError

    def __and__(self, other: EventFilter) -> AllOf:
        return AllOf((self, other))


@dataclass(frozen=True)
class AllOf(EventFilter):
    """Every filter must match."""

    filters: tuple[EventFilter, ...]

    def mask(self, events: pd.DataFrame) -> BoolArray:
        out = np.ones(len(events), dtype=bool)
        for f in self.filters:
            out &= f.mask(events)
        return out


@dataclass(frozen=True)
class RankFilter(EventFilter):
    """Keep the given ranks."""

    ranks: tuple[int, ...]

    def mask(self, events: pd.DataFrame) -> BoolArray:
        return np.isin(events["rank"].to_numpy(), np.asarray(self.ranks))


@dataclass(frozen=True)
class StepRange(EventFilter):
    """Keep events whose step lies in [first, last] (inclusive); events outside steps drop.

    Device events without a step of their own are kept when their start lies inside the time
    span of the selected steps (of the same rank).
    """

    first: int
    last: int

    def mask(self, events: pd.DataFrame) -> BoolArray:
        step = events["step"].to_numpy()
        inside = (step >= self.first) & (step <= self.last)
        if inside.any():
            sel = events[inside]
            ts = events["ts_ns"].to_numpy()
            rank = events["rank"].to_numpy()
            extra = np.zeros(len(events), dtype=bool)
            spans = (
                sel.groupby("rank", observed=True)["ts_ns"]
                .agg(["min"])
                .join((sel["ts_ns"] + sel["dur_ns"]).groupby(sel["rank"]).max().rename("max"))
            )
            for r, row in spans.iterrows():
                extra |= (rank == r) & (ts >= row["min"]) & (ts < row["max"]) & (step < 0)
            inside |= extra
        return inside


@dataclass(frozen=True)
class TimeWindow(EventFilter):
    """Keep events that start in [start_ns, end_ns)."""

    start_ns: int
    end_ns: int

    def mask(self, events: pd.DataFrame) -> BoolArray:
        ts = events["ts_ns"].to_numpy()
        return (ts >= self.start_ns) & (ts < self.end_ns)


@dataclass(frozen=True)
class DeviceFilter(EventFilter):
    """Keep host events plus device events of the given device index."""

    device: int

    def mask(self, events: pd.DataFrame) -> BoolArray:
        dev = events["is_device"].to_numpy(dtype=bool)
        return ~dev | (events["device"].to_numpy() == self.device)


@dataclass(frozen=True)
class NamePattern(EventFilter):
    """Keep events whose name matches a regular expression (search, case-sensitive)."""

    pattern: str

    def mask(self, events: pd.DataFrame) -> BoolArray:
        try:
            rx = re.compile(self.pattern)
        except re.error as err:
            raise UsageError(f"bad name pattern {self.pattern!r}: {err}") from err
        names = events["name"]
        if isinstance(names.dtype, pd.CategoricalDtype):
            cats = names.cat.categories
            hit = np.array([rx.search(str(c)) is not None for c in cats] + [False])
            codes = names.cat.codes.to_numpy()
            return np.asarray(hit[np.where(codes >= 0, codes, len(cats))], dtype=bool)
        return names.astype(str).str.contains(self.pattern, regex=True).to_numpy(dtype=bool)


def parse_steps(text: str) -> StepRange:
    """`A:B`, `A:` or `:B` or `N` into a StepRange (inclusive)."""
    try:
        if ":" in text:
            a, b = text.split(":", 1)
            return StepRange(int(a) if a else -(2**31), int(b) if b else 2**31 - 1)
        n = int(text)
    except ValueError as err:
        raise UsageError(f"--steps expects A:B, A:, :B or N, got {text!r}") from err
    return StepRange(n, n)


def apply_filters(trace: Trace, filters: Iterable[EventFilter] | EventFilter | None) -> Trace:
    """A new Trace with only the matching events (row labels kept); counters by rank/time."""
    if filters is None:
        return trace
    fs: Sequence[EventFilter] = (filters,) if isinstance(filters, EventFilter) else tuple(filters)
    if not fs:
        return trace
    combined = AllOf(tuple(fs))
    events = subset(trace.events, combined.mask(trace.events))
    counters = trace.counters
    ranks = [f.ranks for f in fs if isinstance(f, RankFilter)]
    if ranks and not counters.empty and "rank" in counters.columns:
        counters = counters[np.isin(counters["rank"].to_numpy(), np.asarray(ranks[0]))]
    return dataclasses.replace(trace, events=events, counters=counters)
