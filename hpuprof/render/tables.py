"""A report's tables as flat rows with worded, unit-aware columns: shared by every renderer.

Which tables a report has comes from the registry (`hpuprof.analysis.registry`); this module
turns a `Report` into `TableView`s (rows flattened to scalars, lists and dicts as short text,
never a Python repr; timestamp columns, unit "ts", counted from the trace's first event, the
report's `meta["start_ns"]`) and formats cells by unit (times in s/ms/us/ns, never raw ns).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hpuprof.analysis.findings import Finding
from hpuprof.analysis.registry import Column, View, column_unit, facts_of, spec, tables_of
from hpuprof.analysis.report import Report, as_plain


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
    if isinstance(value, float):
        return f"{value:,.4g}"
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


def _columns(keys: list[str], declared: tuple[Column, ...]) -> tuple[Column, ...]:
    known = {c.key: c for c in declared}
    return tuple(known.get(k, Column(k)) for k in keys)


def finding_rows(findings: tuple[Finding, ...] | list[Finding]) -> list[dict[str, Any]]:
    """Findings as flat rows; evidence as `name: value` text with units."""
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


def evidence_rows(finding: Finding) -> list[dict[str, str]]:
    """A finding's evidence as a small two-column table: what, value (formatted by unit)."""
    out = []
    for key, value in finding.evidence.items():
        if isinstance(value, Mapping):
            text = ", ".join(f"{k}: {fmt_cell(str(key), v)}" for k, v in value.items())
        elif isinstance(value, (list, tuple)):
            text = ", ".join(plain_text(v) for v in value)
        else:
            text = fmt_cell(str(key), value)
        out.append({"what": Column(str(key)).header, "value": text})
    return out


def evidence_text(finding: Finding) -> str:
    """The evidence in one line: `What: value; ...`."""
    return "; ".join(f"{r['what']}: {r['value']}" for r in evidence_rows(finding))


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
            plain = _plain_rows(rows, int(report.meta.get("start_ns") or 0))
            if not plain:
                continue
            cols = _columns(columns_of(plain), table.columns)
            key_cols = _with_rank_column(table.columns or cols, plain)
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
    a = abs(ns)
    if a >= 1e9:
        return f"{ns / 1e9:.2f} s"
    if a >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if a >= 1e3:
        return f"{ns / 1e3:.1f} us"
    return f"{ns:.0f} ns"


def fmt_bytes(n: float) -> str:
    """Human size: 1.5 GiB, 3.0 MiB, 12 KiB, 100 B."""
    a = abs(n)
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if a >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n:.0f} B"


def fmt_value(unit: str, value: Any) -> str:
    """Cell text by unit: times as s/ms/us, % with one decimal, sizes, FLOPs, counts."""
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return plain_text(value) if isinstance(value, (list, tuple, Mapping)) else str(value)
    if unit in ("ns", "ts"):
        return fmt_ns(float(value))
    if unit == "pct":
        return f"{value:.1f}%"
    if unit == "bytes":
        return fmt_bytes(float(value))
    if unit == "flops":
        return f"{value:.3e}" if abs(value) >= 1e6 else f"{value:,.0f}"
    if isinstance(value, float):
        return f"{value:,.2f}" if abs(value) < 1e6 else f"{value:.3e}"
    return f"{value:,}"


def fmt_cell(key: str, value: Any) -> str:
    """Cell text for a column key (its unit from the key's suffix)."""
    return fmt_value(column_unit(key), value)


def fmt_column(column: Column, value: Any, row: Mapping[str, Any] | None = None) -> str:
    """Cell text for a column (a "row" unit column takes the unit from the row's `unit`)."""
    unit: str = column.kind
    if unit == "row":
        unit = str((row or {}).get("unit") or "")
    return fmt_value(unit, value)


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
    """(column, value) of the key figures a report has (unknown ones left out)."""
    figures = report.meta.get("key_figures")
    if not isinstance(figures, Mapping):
        return []
    return [
        (c, figures[c.key]) for c in KEY_FIGURES if figures.get(c.key) not in (None, "", [], ())
    ]
