"""Dynamicity: compilations (recorded, or what a Gaudi port would see), causes, shapes, buckets.

On a trace without compile events (CUDA, ROCm, CPU) nothing here is called a compilation of
the run: the counts are "not recorded" and the report's estimate for a Gaudi lazy-mode port
is shown as one, in its own words.
"""

from __future__ import annotations

import re
from typing import Any

import dash
from dash import dcc, html

from hpudash.data import DataStore
from hpudash.ids import Id
from hpudash.pages.common import (  # fmt: skip
    Context,
    kv_table,
    message,
    notes,
    page_head,
    report_grid,
)
from hpudash.reportview import facts, report_of, section
from hpuprof.render import figures

PATH = "/dynamicity"
TITLE = "Dynamicity"
NEEDS_RUN = True
RECOMPILE_KEYS = ("step", "graph", "call_site", "module", "cause_kind", "cause_text", "dur_ns", "recompile")  # fmt: skip


def natural(text: Any) -> tuple[Any, ...]:
    """Sort key reading numbers as numbers ("graph 2" before "graph 10")."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", str(text)))


def bucketing_text(doc: dict[str, Any]) -> str:
    """The report's bucketing plan in one sentence ('' when the report has none)."""
    plan = section(doc, "dynamicity", "bucketing")
    if not isinstance(plan, dict):
        return ""
    target = section(doc, "dynamicity", "bucketing_target") or "the dynamic dimension"
    bounds = ", ".join(str(x) for x in plan.get("boundaries") or [])
    saved = plan.get("compilations_saved")
    if not saved:
        return f"Bucketing {target} would not save compilations here ({plan.get('distinct_sizes')} distinct sizes)."  # fmt: skip
    return (
        f"Pad {target} to the buckets [{bounds}]: {plan.get('distinct_sizes')} distinct sizes "
        f"become {len(plan.get('boundaries') or [])} graphs, saving {saved} compilations for "
        f"{plan.get('padding_pct')} % padding."
    )


def layout(ctx: Context) -> Any:
    entry = ctx.store.entry(ctx.run)
    doc = ctx.store.view(entry)
    estimate = section(doc, "dynamicity", "port_estimate")
    label = estimate.get("label") if isinstance(estimate, dict) else None
    graphs = section(doc, "dynamicity", "by_graph") or []
    bucket = bucketing_text(doc)
    doc_sorted = _with_sorted(doc, "compiles_by_graph", "key")
    return html.Div(
        [
            *page_head("Dynamicity", entry.key, doc, "dynamicity"),
            kv_table(facts(doc, "dynamicity"), id_=Id.DYN_KPIS),
            message(str(label)) if label else None,
            *notes(doc, "dynamicity"),
            dcc.Graph(id=Id.DYN_COMPILES, figure=figures.compiles_figure(report_of(doc))),
            html.H3(f"Compilations by graph ({len(graphs)})"),
            report_grid(
                Id.DYN_GRAPHS,
                doc_sorted,
                "compiles_by_graph",
                ("key", "compilations", "recompilations", "time_ns"),
                height=320,
            ),
            html.H3("Each compilation and its cause"),
            report_grid(
                Id.DYN_CAUSES, doc, "compilations", RECOMPILE_KEYS, height=320, wide=("cause_text",)
            ),
            dcc.Graph(id=Id.DYN_SHAPES, figure=figures.shapes_figure(report_of(doc))),
            html.H3("Input shapes per op"),
            report_grid(
                Id.DYN_SHAPE_TABLE, doc, "shape_histograms", height=320, wide=("op", "shape")
            ),
            html.H3("Data-dependent-shape ops"),
            report_grid(Id.DYN_DYNAMIC_OPS, doc, "dynamic_ops", height=240),
            html.H3("Bucketing"),
            html.Div(
                message(bucket)
                if bucket
                else message("No bucketing recommendation: it would not save compilations here."),
                id=Id.DYN_BUCKETING,
            ),
        ]
    )


def _with_sorted(doc: dict[str, Any], name: str, key: str) -> dict[str, Any]:
    """`doc` with the rows of table `name` in natural order of `key` (graph 2 before 10)."""
    spec = (doc.get("tables") or {}).get(name)
    if not isinstance(spec, dict):
        return doc
    rows = sorted(spec.get("rows") or [], key=lambda r: natural(r.get(key)))
    return doc | {"tables": (doc.get("tables") or {}) | {name: spec | {"rows": rows}}}


def register(app: dash.Dash, store: DataStore) -> None:
    """No callbacks."""
