"""Ranks: step time per rank and step as a heat map, where each rank's time goes, stragglers.

Everything is the ranks report of `hpuprof.analysis`; stragglers are its findings (a rank
slower than the median rank beyond the steps' own noise), shown as findings. A run of several
rank files is analysed rank by rank (`DataStore.ranks_view`): the page never loads all ranks'
events together.
"""

from __future__ import annotations

from typing import Any

import dash
from dash import dcc, html

from hpudash.data import DataStore
from hpudash.ids import Id
from hpudash.pages.common import (
    Context,
    finding_card,
    kv_table,
    message,
    notes,
    page_head,
    report_grid,
)
from hpudash.reportview import facts, findings, report_of, section
from hpuprof.render import figures

PATH = "/ranks"
TITLE = "Ranks"
NEEDS_RUN = True


def layout(ctx: Context) -> Any:
    entry = ctx.store.entry(ctx.run)
    doc = ctx.store.ranks_view(entry)
    ranks = section(doc, "meta", "ranks") or []
    not_read = [
        message(f"Rank file not analysed: {f.get('source')}: {f.get('reason')}", "error")
        for f in section(doc, "meta", "failed") or []
    ]
    stragglers = findings(doc, "ranks")
    if stragglers:
        verdict: list[Any] = [finding_card(f) for f in stragglers]
    elif len(ranks) > 1:
        verdict = [message("No stragglers: no rank is slower than the median rank beyond its steps' noise.")]  # fmt: skip
    else:
        verdict = [message("A single-rank run: nothing to compare across ranks.")]
    return html.Div(
        [
            *page_head("Ranks", entry.key, doc, "ranks"),
            *not_read,
            html.Div(verdict, id=Id.RANKS_STRAGGLERS),
            kv_table(facts(doc, "ranks"), id_=Id.RANKS_FACTS),
            *notes(doc, "ranks"),
            dcc.Graph(id=Id.RANKS_GRAPH, figure=figures.rank_heatmap(report_of(doc))),
            dcc.Graph(id=Id.RANKS_SPLIT, figure=figures.rank_split_figure(report_of(doc))),
            html.H3("Per rank"),
            report_grid(Id.RANKS_TABLE, doc, "rank_summary", height=280),
            html.H3("Per rank and step"),
            report_grid(Id.RANKS_STEPS, doc, "rank_steps", height=320),
        ]
    )


def register(app: dash.Dash, store: DataStore) -> None:
    """No callbacks."""
