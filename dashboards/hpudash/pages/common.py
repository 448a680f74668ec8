"""Small layout helpers shared by the pages: grids, tables, KPI strips, messages, run picker."""

from __future__ import annotations

import json
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


def column_defs(
    columns: Sequence[Column], wide: Sequence[str] = (), empty_text: str | None = None
) -> list[dict[str, Any]]:
    """Plain column definitions: a field and a header in words each, no `cellRenderer`, so AG
    Grid writes every cell as text (no markdown or HTML renderer ever sees a trace-supplied
    string). Columns in `wide` (names, paths) get room and stay pinned on the left. With
    `empty_text`, an empty cell shows the text its row holds under that field for its column
    (`{column: text}`); only what is shown changes: sorting and filtering see the empty value."""
    out = []
    for c in columns:
        field, header = (c, fmt.words(c)) if isinstance(c, str) else c
        spec: dict[str, Any] = {"field": str(field), "headerName": header, "headerTooltip": header}
        if field in wide:
            spec |= {"minWidth": 280, "pinned": "left"}
        if empty_text:
            spec["valueFormatter"] = {
                "function": _EMPTY_TEXT_JS.format(field=json.dumps(empty_text))
            }
        out.append(spec)
    return out


_EMPTY_TEXT_JS = (
    "params.value != null ? params.value : ((params.data && params.data[{field}] && "
    "params.data[{field}][params.colDef.field]) || '')"
)
"""An empty cell's text: what its row holds for its column under `field` (a JSON string)."""


def grid(
    id_: str,
    rows: Sequence[Mapping[str, Any]] | None,
    *,
    height: int = 420,
    columns: Sequence[Column] | None = None,
    wide: Sequence[str] = (),
    empty_text: str | None = None,
    **extra: Any,
) -> Any:
    """A sortable, filterable AG Grid over plain rows (cells render as text, never HTML).

    Args:
        rows: the rows; None for a grid whose rows come page by page (`rowModelType`
            "infinite": `grid_query`).
        columns: column order and headers (default: the first row's keys, headers in words).
        wide: columns that get room and are pinned left (run keys, op names).
        empty_text: see `column_defs`.
        extra: other AgGrid props; column definitions and `dangerously_allow_code` are not
            accepted here, so no caller can turn on an HTML-rendering cell.
    """
    unsafe = UNSAFE_GRID_OPTIONS & set(extra)
    if unsafe:
        raise ValueError(f"grid() does not take {sorted(unsafe)}: cells stay plain text")
    cols = list(columns) if columns is not None else list(rows[0] if rows else {})
    if rows is not None:
        extra["rowData"] = grid_rows(rows, cols)
    return dag.AgGrid(
        id=id_,
        columnDefs=column_defs(cols, wide, empty_text),
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


def errors_of(doc: Mapping[str, Any], *reports: str) -> list[html.Div]:
    """Error messages of the named report sections whose analysis failed."""
    errors = doc.get("errors") or {}
    return section_errors({k: v for k, v in errors.items() if k in reports})


def section_errors(errors: Mapping[str, str]) -> list[html.Div]:
    return [
        message(f"The {name} analysis failed: {text}", "error") for name, text in errors.items()
    ]


# --- a run's key figures and its report's parts, as every page shows them --------------------


def key_columns() -> list[tuple[str, str]]:
    """The key figures' grid columns (the library's `KEY_FIGURES`), headers with screen units;
    a figure that adds up every rank's count says so."""
    from hpuprof.analysis.key_figures import SUMMED_FIGURES
    from hpuprof.render.tables import KEY_FIGURES

    out = []
    for c in KEY_FIGURES:
        if c.key == "lazy_port_estimate":  # a sentence: the Overview shows it, a grid cannot
            continue
        header = c.header
        if c.key in SUMMED_FIGURES:  # one column for runs of any rank count: say it is a total
            header = f"{header} (total over ranks)"
        if c.kind == "ns":  # "Step time (mean per rank)" -> "Step time (mean per rank, ms)"
            header = header[:-1] + ", ms)" if header.endswith(")") else header + " (ms)"
        out.append((c.key, header))
    return out


def key_figure_row(figs: Mapping[str, Any]) -> dict[str, Any]:
    """A run's key figures (`hpuprof.analysis.key_figures`) as grid cells: times in ms,
    shares to one decimal; the one place of the rounding the Runs grid shows. A figure the
    trace cannot give is an empty cell here (the grid's number columns hold numbers only); the
    run's Overview says why."""
    from hpuprof.render.tables import KEY_FIGURES

    row: dict[str, Any] = {}
    for c in KEY_FIGURES:
        value = figs.get(c.key)
        number = fmt.number(value)
        if c.kind == "ns":
            row[c.key] = round(number / 1e6, 3) if number is not None else None
        elif c.kind == "pct":
            row[c.key] = round(number, 1) if number is not None else None
        elif isinstance(value, (list, tuple)):
            row[c.key] = ", ".join(str(v) for v in value) if value else "none"
        else:
            row[c.key] = value if value != "" else None
    return row


def key_figure_items(figs: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(label, text) of a run's key figures for a KPI strip, as the reports print them
    (`hpuprof.render.tables.KEY_FIGURES`); a figure the trace cannot give says so ("not
    measurable (no steps)"); figures the run lacks are left out, and those summed over several
    ranks say so."""
    from hpuprof.analysis.key_figures import figure_header
    from hpuprof.render.tables import KEY_FIGURES, fmt_column, key_figure_value

    out = []
    for c in KEY_FIGURES:
        value = key_figure_value(figs, c.key)
        if value is None or c.key == "lazy_port_estimate":
            continue
        text = ", ".join(str(v) for v in value) if isinstance(value, (list, tuple)) else fmt_column(c, value)  # fmt: skip
        modeled = " (modeled)" if c.key == "device_util_pct" and figs.get("device_time") == "modeled" and not isinstance(value, str) else ""  # fmt: skip
        out.append((figure_header(c.key, c.header, figs.get("ranks")) + modeled, text))
    return out


def report_grid(
    id_: str,
    doc: Mapping[str, Any],
    name: str,
    keys: Sequence[str] | None = None,
    *,
    height: int = 320,
    wide: Sequence[str] = ("name", "op"),
    **extra: Any,
) -> Any:
    """A grid of the report table `name` (registry headers, screen units), or a note that the
    run has none. `keys` picks the columns; by default those the registry names for it."""
    from hpudash.reportview import screen_columns
    from hpudash.reportview import table as view_table

    spec = view_table(doc, name)
    if spec is None:  # an empty grid still, so callbacks that filter it find it
        hidden = html.Div(grid(id_, [], columns=[], height=60, **extra), style={"display": "none"})
        return html.Div([message("None in this run."), hidden])  # fmt: skip
    columns, rows = screen_columns(spec, keys if keys is not None else spec.get("key_columns"))
    height = min(height, 110 + 42 * max(len(rows), 1))
    return grid(id_, rows, columns=columns, wide=tuple(w for w in wide if any(c == w for c, _ in columns)), height=height, **extra)  # fmt: skip


def finding_card(f: Mapping[str, Any]) -> html.Div:
    """One finding: severity, title, the measured value against its threshold (and the
    `AnalysisOptions` field that sets it), advice, and the evidence as a small table."""
    from hpuprof.analysis.registry import Column
    from hpuprof.render.tables import fmt_cell

    metric = str(f.get("metric") or "")
    option = f", option {f['threshold_option']}" if f.get("threshold_option") else ""
    value = f"{Column(metric).header}: {fmt_cell(metric, f.get('value'))} (threshold {fmt_cell(metric, f.get('threshold'))}{option})"  # fmt: skip
    evidence = [r for r in f.get("evidence_rows") or [] if isinstance(r, Mapping)]
    severity = str(f.get("severity") or "info")
    return html.Div(
        [
            html.Span(severity.upper(), className=f"sev sev-{severity}"),
            html.B(str(f.get("title") or "")),
            html.Div(value, className="small"),
            table(evidence, (("what", "Evidence"), ("value", "Value"))) if evidence else None,
            html.Div(["Advice: ", str(f["advice"])], className="advice")
            if f.get("advice")
            else None,
        ],
        className=f"finding finding-{severity}",
    )


def notes(doc: Mapping[str, Any], *reports: str) -> list[html.Div]:
    """The notes the named reports attach (what they could not tell, and why)."""
    from hpudash.reportview import section

    out = []
    for name in reports:
        for text in section(doc, name, "notes") or []:
            out.append(message(str(text)))
    return out


def page_head(title: str, run: str, doc: Mapping[str, Any], *reports: str) -> list[Any]:
    """Every report page's first lines: its title and run, what was analysed, and the errors of
    the reports it shows."""
    return [html.H2(f"{title}: {run}"), run_meta(doc), *errors_of(doc, *reports)]


def run_meta(doc: Mapping[str, Any]) -> html.Div:
    """What was analysed, in one line: device, what the timeline is, how device time is known."""
    from hpudash.reportview import section

    device = section(doc, "meta", "device") or {}
    parts = [f"Device: {device.get('label') or 'unknown'}"]
    if section(doc, "meta", "device_time") == "modeled":
        parts.append("device times modeled by the emulator, not measured")
        if section(doc, "meta", "timeline") == "projected":
            parts.append("host times projected for a Gaudi host (emulator's own work removed)")
    elif section(doc, "meta", "timeline") == "projected":
        parts.append("device times projected for the device, not measured")
    ranks = section(doc, "meta", "ranks") or []
    parts.append(f"{len(ranks)} rank{'s' if len(ranks) != 1 else ''}")
    parts.append(f"{int(section(doc, 'meta', 'events') or 0):,} events")
    return html.Div(" · ".join(parts), className="small runmeta")
