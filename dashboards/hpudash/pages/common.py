"""Small layout helpers shared by the pages: grids, tables, KPI strips, messages, run picker."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode

import dash_ag_grid as dag
from dash import dcc, html

from hpudash import fmt
from hpudash.data import DataStore
from hpudash.ids import Id

Column = str | tuple[str, str]
"""A grid column: a field name (its header made from the name) or (field, header)."""


@dataclass(frozen=True)
class Context:
    """What a page layout gets: the store and the query (`run`, `b`, view parameters)."""

    store: DataStore
    run: str
    query: Mapping[str, str]


def parse_query(search: str | None) -> dict[str, str]:
    """`?run=a&b=c` -> {"run": "a", "b": "c"} (first value of each key)."""
    if not isinstance(search, str):
        return {}
    parsed = parse_qs(search.lstrip("?"))
    return {k: v[0] for k, v in parsed.items() if v}


def href(path: str, **query: str) -> str:
    q = {k: v for k, v in query.items() if v}
    return f"{path}?{urlencode(q)}" if q else path


UNSAFE_GRID_OPTIONS = frozenset({"columnDefs", "dangerously_allow_code", "defaultColDef"})


def column_defs(columns: Sequence[Column], wide: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Plain column definitions: a field and a header in words each, no `cellRenderer`, so AG
    Grid writes every cell as text (no markdown or HTML renderer ever sees a trace-supplied
    string). Columns in `wide` (names, paths) get room and stay pinned on the left."""
    out = []
    for c in columns:
        field, header = (c, fmt.words(c)) if isinstance(c, str) else c
        spec: dict[str, Any] = {"field": str(field), "headerName": header, "headerTooltip": header}
        if field in wide:
            spec |= {"minWidth": 280, "pinned": "left"}
        out.append(spec)
    return out


def grid(
    id_: str,
    rows: Sequence[Mapping[str, Any]],
    *,
    height: int = 420,
    columns: Sequence[Column] | None = None,
    wide: Sequence[str] = (),
    **extra: Any,
) -> Any:
    """A sortable, filterable AG Grid over plain rows (cells render as text, never HTML).

    Args:
        columns: column order and headers (default: the first row's keys, headers in words).
        wide: columns that get room and are pinned left (run keys, op names).
        extra: other AgGrid props; column definitions and `dangerously_allow_code` are not
            accepted here, so no caller can turn on an HTML-rendering cell.
    """
    unsafe = UNSAFE_GRID_OPTIONS & set(extra)
    if unsafe:
        raise ValueError(f"grid() does not take {sorted(unsafe)}: cells stay plain text")
    cols = list(columns) if columns is not None else list(rows[0] if rows else {})
    return dag.AgGrid(
        id=id_,
        rowData=grid_rows(rows, cols),
        columnDefs=column_defs(cols, wide),
        dangerously_allow_code=False,
        defaultColDef={
            "sortable": True,
            "filter": True,
            "resizable": True,
            "minWidth": 90,
            "wrapHeaderText": True,
            "autoHeaderHeight": True,
        },
        columnSize="responsiveSizeToFit",
        style={"height": f"{height}px"},
        **extra,
    )


def grid_rows(rows: Sequence[Mapping[str, Any]], columns: Sequence[Column]) -> list[dict[str, Any]]:
    """`rows` reduced to the grid's columns, every cell a plain value (`fmt.cell`)."""
    fields = [c if isinstance(c, str) else c[0] for c in columns]
    return [{f: fmt.cell(r.get(f)) for f in fields} for r in rows]


def kv_table(rows: Sequence[tuple[str, Any]], id_: str | None = None) -> html.Table:
    """A two-column table of (label, value) pairs, values as text."""
    body = [html.Tr([html.Th(str(k)), html.Td(str(fmt.cell(v)))]) for k, v in rows]
    if id_:
        return html.Table(html.Tbody(body), className="kv", id=id_)
    return html.Table(html.Tbody(body), className="kv")


def table(rows: Sequence[Mapping[str, Any]], columns: Sequence[Column]) -> html.Table:
    """A small plain table (findings' evidence, short lists), cells as text."""
    specs = [(c, fmt.words(c)) if isinstance(c, str) else c for c in columns]
    head = html.Thead(html.Tr([html.Th(h) for _, h in specs]))
    body = html.Tbody(
        [
            html.Tr(
                [html.Td(str(fmt.cell(r.get(f)) if r.get(f) is not None else "")) for f, _ in specs]
            )
            for r in rows
        ]
    )
    return html.Table([head, body], className="small-table")


def kpis(items: Sequence[tuple[str, str]], id_: str = "") -> html.Div:
    cards = [
        html.Div([html.Div(label, className="kpi-label"), html.Div(value, className="kpi-value")], className="kpi")
        for label, value in items
    ]  # fmt: skip
    return html.Div(cards, id=id_ or None, className="kpis")


def message(text: str, kind: str = "info") -> html.Div:
    return html.Div(text, className=f"msg msg-{kind}")


def run_picker(ctx: Context, id_: str = Id.RUN_SELECT, value: str | None = None) -> dcc.Dropdown:
    keys = [e.key for e in ctx.store.entries()]
    return dcc.Dropdown(
        id=id_,
        options=[{"label": k, "value": k} for k in keys],
        value=value if value is not None else ctx.run,
        clearable=False,
        style={"minWidth": "420px"},
    )


def section_errors(errors: Mapping[str, str]) -> list[html.Div]:
    return [
        message(f"The {name} analysis failed: {text}", "error") for name, text in errors.items()
    ]
