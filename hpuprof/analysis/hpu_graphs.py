"""HPU-graph report: captures, replays, cache misses and causes, host time saved, candidates."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from hpuprof.analysis._common import host_ops, isin, strs, without_args
from hpuprof.analysis.advice import advise
from hpuprof.analysis.device import trace_device
from hpuprof.analysis.dynamicity import DYNAMIC_OP_NAMES
from hpuprof.analysis.findings import Finding
from hpuprof.analysis.options import AnalysisOptions
from hpuprof.trace.model import Trace


@dataclass(frozen=True)
class GraphStats:
    """One HPU graph (by graph id / module).

    `host_saved_ns` is an estimate: replays x (mean capture host time - mean replay host time).
    """

    graph: str
    captures: int
    replays: int
    cache_misses: int
    causes: tuple[str, ...]
    capture_ns: int
    replay_ns: int
    host_saved_ns: int


@dataclass(frozen=True)
class Candidate:
    """A module that looks eligible for HPU-graph wrapping."""

    module: str
    calls: int
    host_time_ns: int
    shapes: int


@dataclass(frozen=True)
class GraphsReport:
    """Result of `analyze_hpu_graphs`."""

    captures: int
    replays: int
    cache_misses: int
    host_saved_ns: int
    graphs: tuple[GraphStats, ...]
    eligible_modules: tuple[Candidate, ...]
    findings: tuple[Finding, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)


def analyze_hpu_graphs(trace: Trace, options: AnalysisOptions | None = None) -> GraphsReport:
    """Capture/replay accounting per graph and modules that could be wrapped."""
    options = options or AnalysisOptions()
    full = trace.events
    ev = without_args(full)
    rows = ev[isin(ev["hpu_event"], ("graph_capture", "graph_replay"))]
    graphs: list[GraphStats] = []
    if not rows.empty:
        frame = pd.DataFrame(
            {
                "graph": [
                    str(g) or str(m) or "(unnamed)"
                    for g, m in zip(
                        rows["graph_id"].astype(str), rows["module"].astype(str), strict=True
                    )
                ],
                "ev": rows["hpu_event"].astype(str).to_numpy(),
                "dur": rows["dur_ns"].to_numpy(),
                "cause": strs(rows["cause_kind"]).tolist(),
            }
        )
        for gname, grp in frame.groupby("graph"):
            cap = grp[grp["ev"] == "graph_capture"]
            rep = grp[grp["ev"] == "graph_replay"]
            mean_cap = float(cap["dur"].mean()) if len(cap) else 0.0
            mean_rep = float(rep["dur"].mean()) if len(rep) else 0.0
            saved = int(max(mean_cap - mean_rep, 0.0) * len(rep))
            causes = tuple(sorted({c for c in cap["cause"].iloc[1:] if c}))
            graphs.append(
                GraphStats(
                    str(gname),
                    len(cap),
                    len(rep),
                    max(len(cap) - 1, 0),
                    causes,
                    int(cap["dur"].sum()),
                    int(rep["dur"].sum()),
                    saved,
                )
            )
    host = host_ops(ev)
    cands: list[Candidate] = []
    mod = host[strs(host["module"]) != ""]
    if not mod.empty:
        bad = mod["fallback"].to_numpy(dtype=bool) | isin(mod["name"], DYNAMIC_OP_NAMES)
        frame = pd.DataFrame(
            {
                "module": strs(mod["module"]),
                "bad": bad,
                "dims": strs(mod["input_dims"]),
                "dur": mod["dur_ns"].to_numpy(),
                "depth": mod["depth"].to_numpy(),
            }
        )
        fb_mods = set(strs(ev.loc[isin(ev["hpu_event"], ("fallback",)), "module"])) - {""}
        captured = {g.graph for g in graphs}
        for m, grp in frame.groupby("module"):
            if grp["bad"].any() or m in fb_mods or m in captured:
                continue
            top = grp[grp["depth"] == grp["depth"].min()]
            shapes = top["dims"].nunique()
            if shapes <= 1:
                cands.append(Candidate(str(m), len(top), int(top["dur"].sum()), int(shapes)))
        cands.sort(key=lambda c: -c.host_time_ns)
    captures = sum(g.captures for g in graphs)
    replays = sum(g.replays for g in graphs)
    misses = sum(g.cache_misses for g in graphs)
    saved = sum(g.host_saved_ns for g in graphs)
    findings: list[Finding] = []
    device = trace_device(trace)
    miss_advice = advise("graph_cache_miss", device)
    candidate_advice = advise("graph_candidates", device)
    for g in graphs:
        if g.cache_misses >= 1 and g.cache_misses * 2 >= g.replays and miss_advice is not None:
            findings.append(
                Finding(
                    "warning",
                    "graphs",
                    f"HPU graph {g.graph} recaptured {g.cache_misses} times for {g.replays} "
                    f"replays (causes: {', '.join(g.causes) or 'unknown'})",
                    "graph_cache_misses",
                    g.cache_misses,
                    g.replays / 2,
                    {"graph": g.graph, "causes": list(g.causes)},
                    miss_advice,
                )
            )
    if cands and not graphs and candidate_advice is not None:
        c = cands[0]
        findings.append(
            Finding(
                "info",
                "graphs",
                f"{len(cands)} modules look static (no fallbacks, no dynamic ops, one shape); "
                f"largest: {c.module} ({c.host_time_ns / 1e6:.2f} ms host)",
                "eligible_modules",
                len(cands),
                0.0,
                {"modules": [x.module for x in cands[:10]]},
                candidate_advice,
            )
        )
    return GraphsReport(
        captures,
        replays,
        misses,
        saved,
        tuple(graphs),
        tuple(cands[: options.top_n]),
        tuple(findings),
        ("host_saved_ns is an estimate from capture vs replay host times",) if graphs else (),
    )
