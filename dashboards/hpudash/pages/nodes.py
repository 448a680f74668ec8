"""Nodes: Intel's "Analyzed Nodes" table, one row per Gaudi graph node, and Intel's advice.

The rows are the `nodes` report of `hpuprof.analysis` (`hpuprof analyze --report nodes`), shown
under Intel's column names and in Intel's units (µs, %), from the engine lanes of a Gaudi trace:
a hardware-profiler CSV or `.hltv`, an emulated Gaudi run, a torch.profiler HPU trace with
engine lanes. The report is analysed when the page is first opened (`DataStore.nodes_view`).
Beside it, habana_perf_tool's recommendations for the trace (the `perf_tool` report's findings,
whose advice follows the trace's device). A trace of another device has no Gaudi graph nodes:
the page says so instead of showing an empty table.
"""

from __future__ import annotations

from typing import Any

import dash
from dash import html

from hpudash.data import DataStore
from hpudash.ids import Id
from hpudash.pages.common import (
    Context,
    errors_of,
    finding_card,
    kv_table,
    message,
    notes,
    page_head,
    report_grid,
)
from hpudash.reportview import facts, findings, section, table

PATH = "/nodes"
TITLE = "Nodes"
NEEDS_RUN = True


def absent_reason(device: dict[str, Any]) -> str:
    """Why a run of `device` (the report's `meta.device`) has no nodes table, in words."""
    label = str(device.get("label") or "unknown")
    return (
        f"No Gaudi graph nodes in this trace (device: {label}). The Analyzed Nodes table is Intel's "
        "per-node view of a Gaudi graph's MME / TPC / DMA engines; it is shown for "
        "hardware-profiler traces (CSV, .hltv), emulated Gaudi runs and torch.profiler HPU "
        "traces with engine lanes."
    )


def layout(ctx: Context) -> Any:
    entry = ctx.store.entry(ctx.run)
    doc = ctx.store.view(entry)
    device = section(doc, "meta", "device") or {}
    head = page_head("Nodes", entry.key, doc)
    if device.get("kind") != "hpu":
        return html.Div([*head, html.Div(message(absent_reason(device)), id=Id.NODES_ABSENT)])
    nodes = ctx.store.nodes_view(entry)
    spec = table(nodes, "nodes")
    keys = [str(c[0]) for c in spec["columns"]] if spec else None
    count = len(spec["rows"]) if spec else 0
    advice = findings(doc, "perf_tool")
    return html.Div(
        [
            *head,
            *errors_of(doc, "perf_tool"),
            kv_table(facts(nodes, "nodes"), id_=Id.NODES_FACTS),
            *notes(nodes, "nodes"),
            html.H3(f"Analyzed Nodes ({count:,}; times in µs, as Intel gives them)"),
            report_grid(Id.NODES_GRID, nodes, "nodes", keys, height=560, wide=("node",)),
            html.H3("habana_perf_tool's recommendations"),
            html.Div(
                [finding_card(f) for f in advice]
                or [message("No recommendation of habana_perf_tool applies to this trace.")],
                id=Id.NODES_FINDINGS,
            ),
        ]
    )


def register(app: dash.Dash, store: DataStore) -> None:
    """No callbacks: the page is built once per visit from the run's nodes view."""
