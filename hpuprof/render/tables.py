"""A report's tables as flat rows with worded, unit-aware columns: shared by every renderer.

Which tables a report has comes from the registry (`hpuprof.analysis.registry`); this module
turns a `Report` into `TableView`s (rows flattened to scalars, lists and dicts as short text,
never a Python repr; timestamp columns, unit "ts", counted from the trace's first event, the
report's `meta["start_ns"]`) and formats cells by unit (times in s/ms/us/ns, never raw ns).
A table column of several numbers reads in one unit, named in its header (`shown_columns`,
scales from `render.units`); a finding's timestamps read `at 12.35 ms` from the trace start.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from hpuprof.analysis.findings import Finding
from hpuprof.analysis.key_figures import figure_header
from hpuprof.analysis.registry import Column, View, column_unit, facts_of, spec, tables_of
from hpuprof.analysis.report import Report, as_plain
from hpuprof.render.units import (
    Scale,
    column_scale,
    fmt_plain_number,
    fmt_quantity,
    fmt_scaled,
    is_number,
)


@dataclass(frozen=True)
class TableView:
    """One table ready to render.

    Args:
        name: unique table name (CSV file name).
        title: heading in words.
        report: the report it belongs to ("" for findings).
        columns: every column, in first-seen key order (labels and units resolved).
        key_columns: the columns a terminal shows.
        rows: flat rows (scalars only), values unformatted.
        view: where it shows (see `registry.View`).
    """

    name: str
    title: str
    report: str
    columns: tuple[Column, ...]
    key_columns: tuple[Column, ...]
    rows: tuple[dict[str, Any], ...]
    view: View


def plain_text(value: Any) -> str:
    """A nested value (list, dict) as short readable text: `a: 1, b: 2`; `x; y`."""
    if isinstance(value, Mapping):
        return ", ".join(f"{k}: {plain_text(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return "; ".join(plain_text(v) for v in value)
    if value is None:
        return ""
    if isinstance(value, float):  # four significant digits, never `1.234e+04`
        return f"{value:,.0f}" if abs(value) >= 1e4 else f"{value:,.4g}"
    return str(value)


def flat_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """A plain row with nested values (lists, dicts) as readable text."""
    return {
        str(k): plain_text(v) if isinstance(v, (list, dict, tuple)) else v for k, v in row.items()
    }


def _plain_rows(rows: list[Any], origin_ns: int = 0) -> list[dict[str, Any]]:
    out = []
    for r in rows:
        p = as_plain(r)
        row = flat_row(p) if isinstance(p, dict) else {"value": p}
        for k, v in row.items():
            if isinstance(v, int) and not isinstance(v, bool) and column_unit(k) == "ts":
                row[k] = v - origin_ns
        out.append(row)
    return out


def columns_of(rows: list[dict[str, Any]]) -> list[str]:
    """Every key of `rows`, in first-seen order (rows of one table may differ in their keys)."""
    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    return keys


def filled_columns(rows: list[dict[str, Any]]) -> list[str]:
    """The keys of `rows` (`columns_of`) that some row fills: a column no row fills, such as a
    Gaudi engine's time on a trace of another device, is not shown."""
    return [k for k in columns_of(rows) if any(r.get(k) is not None for r in rows)]


def _columns(keys: list[str], declared: tuple[Column, ...]) -> tuple[Column, ...]:
    known = {c.key: c for c in declared}
    return tuple(known.get(k, Column(k)) for k in keys)


def finding_rows(findings: tuple[Finding, ...] | list[Finding]) -> list[dict[str, Any]]:
    """Findings as flat rows (the CSV); evidence as `name: value` text with units, timestamps
    as recorded."""
    return [
        {
            "severity": f.severity,
            "report": f.report,
            "title": f.title,
            "metric": f.metric,
            "value": f.value,
            "threshold": f.threshold,
            "threshold_option": f.threshold_option,
            "evidence": evidence_text(f),
            "advice": f.advice,
        }
        for f in findings
    ]


def evidence_rows(finding: Finding, origin_ns: int | None = None) -> list[dict[str, str]]:
    """A finding's evidence as a small two-column table: what, value (formatted by unit).

    A timestamp reads as the time since `origin_ns`, the trace's start (`at 12.345 ms`); with
    no origin (the CSV) it stays the number recorded."""
    return [
        {"what": Column(str(key)).header, "value": fmt_evidence(str(key), value, origin_ns)}
        for key, value in finding.evidence.items()
    ]


def fmt_evidence(key: str, value: Any, origin_ns: int | None = None) -> str:
    """One evidence value as text. Its unit comes from its key, or, in a dict or list, from
    the enclosing key when its own names none (`idle_causes_ns: {"compile": 35190000}`)."""
    if isinstance(value, Mapping):
        return ", ".join(_evidence_item(str(k), v, key, origin_ns) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(fmt_evidence(key, v, origin_ns) for v in value)
    if column_unit(key) == "ts" and is_number(value):
        return fmt_cell("", value) if origin_ns is None else f"at {fmt_ns(value - origin_ns)}"
    return fmt_cell(key, value)


def _evidence_item(key: str, value: Any, outer: str, origin_ns: int | None) -> str:
    text = fmt_evidence(key if column_unit(key) else outer, value, origin_ns)
    if column_unit(key) == "ts" and origin_ns is not None:
        return text  # `at 12.345 ms` says what it is
    return f"{key}: {text}"


def evidence_text(finding: Finding, origin_ns: int | None = None) -> str:
    """The evidence in one line: `What: value; ...`."""
    return "; ".join(f"{r['what']}: {r['value']}" for r in evidence_rows(finding, origin_ns))


def report_origin_ns(report: Report) -> int:
    """The trace's first instant (`meta["start_ns"]`, set by the analysis), from which views
    count timestamps; 0 for a report without one (a comparison of two traces)."""
    return int(report.meta.get("start_ns") or 0)


def report_views(report: Report) -> list[TableView]:
    """Every non-empty table of a report (facts first per report, findings last)."""
    out: list[TableView] = []
    for name, section in report.sections.items():
        title = spec(name).title if _known(name) else name
        facts = facts_of(name, section)
        if facts:
            cols = tuple(c for c, _ in facts)
            row = flat_row({c.key: as_plain(v) for c, v in facts})
            summary = TableView(
                f"{name}_summary", f"{title}: summary", name, cols, cols, (row,), "data"
            )
            out.append(summary)
        for table, rows in tables_of(name, section):
            plain = _plain_rows(rows, report_origin_ns(report))
            if not plain:
                continue
            filled = filled_columns(plain)
            cols = _columns(filled, table.columns)
            shown = tuple(c for c in table.columns if c.key in filled) or cols
            key_cols = _with_rank_column(shown, plain)
            out.append(
                TableView(table.name, table.title, name, cols, key_cols, tuple(plain), table.view)
            )
    if report.findings:
        rows_f = finding_rows(report.findings)
        cols = _columns(columns_of(rows_f), ())
        out.append(TableView("findings", "Findings", "", cols, cols, tuple(rows_f), "data"))
    return out


def _with_rank_column(cols: tuple[Column, ...], rows: list[dict[str, Any]]) -> tuple[Column, ...]:
    """The columns shown, led by the rank where the rows come from several ranks (a report
    stacked rank by rank) and the table does not show it already."""
    if any(c.key == "rank" for c in cols) or len({r.get("rank") for r in rows}) < 2:
        return cols
    return (Column("rank"), *cols)


def _known(name: str) -> bool:
    try:
        spec(name)
    except Exception:
        return False
    return True


def report_tables(report: Report) -> dict[str, list[dict[str, Any]]]:
    """Non-empty tables of a report by name, rows flattened (the CSV view)."""
    return {v.name: list(v.rows) for v in report_views(report)}


def fmt_ns(ns: float) -> str:
    """Human time from ns: 1.23 s, 4.56 ms, 7.8 us, 12 ns."""
    return fmt_quantity("ns", ns)


def fmt_bytes(n: float) -> str:
    """Human size: 1.5 GiB, 3.0 MiB, 12.0 KiB, 100 B."""
    return fmt_quantity("bytes", n)


def fmt_value(unit: str, value: Any) -> str:
    """Cell text by unit: times as s/ms/us, % with one decimal, sizes, FLOPs, counts (never
    scientific notation)."""
    if value is None:
        return ""
    if not is_number(value):
        return plain_text(value) if isinstance(value, (list, tuple, Mapping)) else str(value)
    if unit == "pct":
        return f"{value:.1f}%"
    if unit in ("ns", "ts", "bytes", "flops"):
        return fmt_quantity(unit, float(value))
    return fmt_plain_number(value)


def fmt_cell(key: str, value: Any) -> str:
    """Cell text for a column key (its unit from the key's suffix)."""
    return fmt_value(column_unit(key), value)


def fmt_column(column: Column, value: Any, row: Mapping[str, Any] | None = None) -> str:
    """Cell text for a column (a "row" unit column takes the unit from the row's `unit`)."""
    unit: str = column.kind
    if unit == "row":
        unit = str((row or {}).get("unit") or "")
    return fmt_value(unit, value)


@dataclass(frozen=True)
class ShownColumn:
    """A column as a table shows it: a time, size or FLOP column in one scale, chosen for its
    largest value and named in the header (`Self time (ms)`), not a unit per cell.

    Args:
        column: the column.
        scale: the column's one scale (None: each cell formatted on its own).
    """

    column: Column
    scale: Scale | None = None

    @property
    def header(self) -> str:
        words = self.column.header.lower().split()
        if self.scale is None or {self.scale.symbol.lower(), f"{self.scale.symbol}s".lower()} & set(
            words
        ):
            return self.column.header  # no unit, or the header names it already ("FLOPs")
        since = " from trace start" if self.column.kind == "ts" else ""
        return f"{self.column.header} ({self.scale.symbol}{since})"

    def text(self, row: Mapping[str, Any]) -> str:
        value = row.get(self.column.key)
        if self.scale is not None and is_number(value):
            return fmt_scaled(float(value), self.scale)
        return fmt_column(self.column, value, row)


def shown_columns(
    columns: tuple[Column, ...], rows: tuple[dict[str, Any], ...] | list[dict[str, Any]]
) -> tuple[ShownColumn, ...]:
    """The columns with the one scale each takes over `rows` (the rows shown). Columns read
    side by side, A's and B's of a comparison (`a_host_ns`, `b_host_ns`), share one. A column
    of a single number (a one-row table: key figures, a summary) keeps its unit beside it."""
    keys = {c.key for c in columns}
    numbers = {c.key: [v for r in rows if is_number(v := r.get(c.key))] for c in columns}
    shared: dict[str, list[float]] = {}
    for c in columns:
        shared.setdefault(_paired(c.key, keys), []).extend(numbers[c.key])
    return tuple(
        ShownColumn(c, column_scale(c.kind, shared[_paired(c.key, keys)]))
        if len(numbers[c.key]) > 1
        else ShownColumn(c)
        for c in columns
    )


def _paired(key: str, keys: set[str]) -> str:
    """The quantity A's and B's columns share (`host_ns` of `a_host_ns` beside `b_host_ns`)."""
    for mine, other in (("a_", "b_"), ("b_", "a_")):
        if key.startswith(mine) and other + key[2:] in keys:
            return key[2:]
    return key


def _one_meta(meta: Mapping[str, Any]) -> str:
    parts = [str(meta.get("format") or "trace")]
    parts.append(f"{int(meta.get('events') or 0):,} events")
    ranks = list(meta.get("ranks") or [])
    parts.append(f"rank{'s' if len(ranks) != 1 else ''} {', '.join(str(r) for r in ranks)}")
    device = meta.get("device")
    if isinstance(device, Mapping) and device.get("label"):
        parts.append(f"device: {device['label']}")
    if meta.get("timeline"):
        parts.append(f"timeline: {meta['timeline']}")
    if meta.get("device_time"):
        parts.append(f"device time: {meta['device_time']}")
    return ", ".join(parts)


def meta_line(report: Report) -> str:
    """One line about what was analysed: format, events, ranks, device, timeline."""
    meta = report.meta
    if "a" in meta and "b" in meta:
        return f"A: {_one_meta(meta['a'])}. B: {_one_meta(meta['b'])}."
    return _one_meta(meta)


KEY_FIGURES: tuple[Column, ...] = (
    Column("step_time_ns", "Step time (mean per rank)"),
    Column("steps_per_rank", "Steps per rank", "count"),
    Column("device_util_pct", "Device busy % of steps"),
    Column("compilations", "Compilations", "count"),
    Column("recompilations", "Recompilations", "count"),
    Column("compile_time_ns", "Compile time"),
    Column("lazy_port_estimate", "Compilations"),
    Column("fallbacks", "CPU fallbacks", "count"),
    Column("bf16_flops_pct", "Matmul/conv FLOPs in bf16/fp16 %"),
    Column("low_precision_time_pct", "Device time in bf16/fp16 %"),
    Column("stragglers", "Straggling ranks"),
    Column("device_time", "Device time is"),
)
"""The key figures views show, in order, with their words and units."""


def key_figure_rows(report: Report) -> list[tuple[Column, Any]]:
    """(column, value) of the key figures a report has, or why one is not measurable
    (unknown ones left out)."""
    figures = report.meta.get("key_figures")
    if not isinstance(figures, Mapping):
        return []
    return [
        (replace(c, label=figure_header(c.key, c.header, figures.get("ranks"))), v)
        for c in KEY_FIGURES
        if (v := key_figure_value(figures, c.key)) is not None
    ]


def key_figure_value(figures: Mapping[str, Any], key: str) -> Any:
    """A key figure's value, or why the trace cannot give it (`KeyFigures.not_measurable`:
    "not measurable (no steps)"); None where it is unknown (left out)."""
    missing = figures.get("not_measurable")
    if isinstance(missing, Mapping) and missing.get(key):
        return str(missing[key])
    value = figures.get(key)
    return None if value in (None, "", [], ()) else value
