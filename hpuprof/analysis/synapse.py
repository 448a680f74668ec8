"""Synapse report: the host's Synapse API calls, per call, per recipe and stream, and where they
sit among the bridge's scopes.

Reads any trace whose host events include Synapse API calls: a Synapse logger trace
(`trace/synapse_log.py`: names `call:synLaunchWithExternalEvents`, ...) or a torch.profiler
Gaudi trace whose Synapse Logger lane the bridge merged in (names `synLaunchWithExternalEvents`,
...). Definitions:
- a call is a host slice named `syn<Name>` (after an optional `call:`);
- launches are `synLaunch*`, copies `synMemCopy*`, syncs `syn*Synchronize` and
  `synStreamWaitEvent` (the host or a stream waiting);
- recipe: the launch's `pRecipeHandle` (or `recipeHandle`) argument; stream: its
  `streamHandle` with the logger's `streamName`; a call without them counts under "";
- a call's bridge scope: the innermost enclosing slice on its thread that is not itself a call
  (`LaunchSyncTensorsGraph`, `copy_hpu_lazy_H2D`, ...), "" at the top of its thread.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np
import pandas as pd

from hpuprof.analysis._common import pct, strs
from hpuprof.analysis.options import AnalysisOptions
from hpuprof.trace.model import Trace

CALL_NAME: Final = re.compile(r"^(?:call:)?(syn[A-Z]\w*)$")
_KINDS: Final = (
    ("launch", re.compile(r"^synLaunch")),
    ("copy", re.compile(r"^synMemCopy")),
    ("sync", re.compile(r"Synchronize$|^synStreamWaitEvent$")),
)
_RECIPE_KEYS: Final = ("pRecipeHandle", "recipeHandle")


@dataclass(frozen=True)
class CallRow:
    """Time in one Synapse API call (host, ns)."""

    call: str
    kind: str
    count: int
    total_ns: int
    mean_ns: float
    max_ns: int
    pct_of_calls: float


@dataclass(frozen=True)
class RecipeStreamRow:
    """Launches, copies and syncs of one (recipe, stream)."""

    rank: int
    recipe: str
    stream: str
    stream_name: str
    launches: int
    copies: int
    syncs: int
    time_ns: int


@dataclass(frozen=True)
class ScopeRow:
    """The Synapse calls made inside one bridge scope (its name; "" at a thread's top)."""

    scope: str
    call: str
    count: int
    time_ns: int


@dataclass(frozen=True)
class SynapseReport:
    """Result of `analyze_synapse`.

    Args:
        calls: Synapse API calls made.
        call_time_ns: host time in them (a call inside another counts once, as the outer).
        in_scope_pct: share of calls made inside a bridge scope.
        by_call / by_recipe_stream / by_scope: the tables.
    """

    calls: int
    call_time_ns: int
    in_scope_pct: float
    by_call: tuple[CallRow, ...]
    by_recipe_stream: tuple[RecipeStreamRow, ...]
    by_scope: tuple[ScopeRow, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        from hpuprof.analysis.report import as_plain

        return as_plain(self)


def call_kind(name: str) -> str:
    """launch, copy, sync or other, for a Synapse call name (`synLaunch...`)."""
    for kind, pattern in _KINDS:
        if pattern.search(name):
            return kind
    return "other"


def _call_names(trace: Trace) -> np.ndarray:
    """Each event's Synapse call name ("" where it is not a host Synapse call)."""
    ev = trace.events
    names = strs(ev["name"])
    matched = np.array([m.group(1) if (m := CALL_NAME.match(n)) else "" for n in names], object)
    host_slice = ~ev["is_device"].to_numpy(dtype=bool) & (strs(ev["ph"]) == "X")
    matched[~host_slice] = ""
    return matched


def _scope_of(row: int, parent: np.ndarray, is_call: np.ndarray, names: np.ndarray) -> str:
    at = int(parent[row])
    while at >= 0 and is_call[at]:
        at = int(parent[at])
    return str(names[at]) if at >= 0 else ""


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def analyze_synapse(trace: Trace, options: AnalysisOptions | None = None) -> SynapseReport:
    """Synapse calls per call, per recipe and stream, and per enclosing bridge scope."""
    calls = _call_names(trace)
    rows = np.flatnonzero(calls != "")
    if rows.size == 0:
        return SynapseReport(0, 0, 0.0, (), (), (), ("no Synapse API calls in this trace",))
    ev = trace.events
    dur = ev["dur_ns"].to_numpy(dtype=np.int64)
    parent = ev["parent"].to_numpy(dtype=np.int64)
    rank = ev["rank"].to_numpy()
    names = strs(ev["name"])
    is_call = calls != ""
    outer = rows[~is_call[np.maximum(parent[rows], 0)] | (parent[rows] < 0)]
    call_time = int(dur[outer].sum())

    frame = pd.DataFrame({"call": calls[rows], "dur": dur[rows]})
    stats = frame.groupby("call")["dur"].agg(["count", "sum", "mean", "max"])
    by_call = sorted(
        (
            CallRow(
                str(name),
                call_kind(str(name)),
                int(r["count"]),
                int(r["sum"]),
                round(float(r["mean"]), 1),
                int(r["max"]),
                pct(int(r["sum"]), call_time),
            )
            for name, r in stats.iterrows()
        ),
        key=lambda c: (-c.total_ns, c.call),
    )

    streams: dict[tuple[int, str, str, str], Counter[str]] = defaultdict(Counter)
    scopes: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    in_scope = 0
    for row in rows.tolist():
        args = trace.args(row)
        recipe = next((_text(args[k]) for k in _RECIPE_KEYS if k in args), "")
        key = (
            int(rank[row]),
            recipe,
            _text(args.get("streamHandle")),
            _text(args.get("streamName")),
        )
        kind = call_kind(str(calls[row]))
        streams[key][kind] += 1
        streams[key]["time"] += int(dur[row])
        scope = _scope_of(row, parent, is_call, names)
        in_scope += scope != ""
        tally = scopes[(scope, str(calls[row]))]
        tally[0] += 1
        tally[1] += int(dur[row])
    by_stream = [
        RecipeStreamRow(r, recipe, stream, name, c["launch"], c["copy"], c["sync"], c["time"])
        for (r, recipe, stream, name), c in sorted(streams.items())
    ]
    by_scope = sorted(
        (ScopeRow(scope, call, n, t) for (scope, call), (n, t) in scopes.items()),
        key=lambda s: (s.scope, -s.count, s.call),
    )
    return SynapseReport(
        calls=int(rows.size),
        call_time_ns=call_time,
        in_scope_pct=pct(in_scope, int(rows.size)),
        by_call=tuple(by_call),
        by_recipe_stream=tuple(by_stream),
        by_scope=tuple(by_scope),
    )
