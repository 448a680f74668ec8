"""Small layout helpers shared by the pages: grids, KPI strips, messages, the run picker."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode

import dash_ag_grid as dag
from dash import dcc, html

from hpudash.data import DataStore
from hpudash.ids import Id


@dataclass(frozen=True)
class Context:
    """What a page layout gets: the store and the query (`run`, `b`)."""

    store: DataStore
    run: str
    query: Mapping[str, str]


def parse_query(search: str | None) -> dict[str, str]:
    """`?run=a&b=c` -> {"run": "a", "b": "c"} (first value of each key)."""
    parsed = parse_qs((search or "").lstrip("?"))
    return {k: v[0] for k, v in parsed.items() if v}


def href(path: str, **query: str) -> str:
    q = {k: v for k, v in query.items() if v}
    return f"{path}?{urlencode(q)}" if q else path


UNSAFE_GRID_OPTIONS = frozenset({"columnDefs", "dangerously_allow_code", "defaultColDef"})


def column_defs(names: Sequence[str], wide: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Plain column definitions: a field each and no `cellRenderer`, so AG Grid writes every
    cell as text (no markdown or HTML renderer ever sees a trace-supplied string). Columns
    in `wide` (names, paths) get room and stay pinned on the left."""
    return [
        {"field": str(k), "minWidth": 280, "pinned": "left"} if k in wide else {"field": str(k)}
        for k in names
    ]


def grid(
    id_: str,
    rows: Sequence[Mapping[str, Any]],
    *,
    height: int = 420,
    columns: Sequence[str] | None = None,
    wide: Sequence[str] = (),
    **extra: Any,
) -> Any:
    """A sortable, filterable AG Grid over plain rows (cells render as text, never HTML).

    Args:
        columns: column order (default: the first row's keys).
        wide: columns that get room and are pinned left (run keys, op names).
        extra: other AgGrid props; column definitions and `dangerously_allow_code` are not
            accepted here, so no caller can turn on an HTML-rendering cell.
    """
    unsafe = UNSAFE_GRID_OPTIONS & set(extra)
    if unsafe:
        raise ValueError(f"grid() does not take {sorted(unsafe)}: cells stay plain text")
    names = list(columns) if columns is not None else list(rows[0] if rows else {})
    return dag.AgGrid(
        id=id_,
        rowData=[dict(r) for r in rows],
        columnDefs=column_defs(names, wide),
        dangerously_allow_code=False,
        defaultColDef={"sortable": True, "filter": True, "resizable": True, "minWidth": 90},
        columnSize="responsiveSizeToFit",
        style={"height": f"{height}px"},
        **extra,
    )


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
    return [message(f"{name} analysis failed: {text}", "error") for name, text in errors.items()]
