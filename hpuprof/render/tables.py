"""A report's tables as lists of flat rows: shared by the Markdown, CSV, HTML and terminal views."""

from __future__ import annotations

from typing import Any

from hpuprof.analysis.report import Report, as_plain

TABLES: tuple[tuple[str, str, str], ...] = (
    # (table name, section, field)
    ("temporal", "bottleneck", "temporal"),
    ("kernel_types", "bottleneck", "kernel_types"),
    ("engines", "bottleneck", "engines"),
    ("host_device", "bottleneck", "host_device"),
    ("steps", "bottleneck", "steps"),
    ("idle_causes", "bottleneck", "idle_causes"),
    ("top_host_ops", "bottleneck", "top_host_ops"),
    ("top_device_ops", "bottleneck", "top_device_ops"),
    ("compilations", "dynamicity", "events"),
    ("compiles_by_graph", "dynamicity", "by_graph"),
    ("compiles_by_module", "dynamicity", "by_module"),
    ("compile_timeline", "dynamicity", "timeline"),
    ("recompile_table_1", "dynamicity", "recompile_table"),
    ("recompile_table_2", "dynamicity", "recompile_counts"),
    ("dynamic_ops", "dynamicity", "dynamic_ops"),
    ("precision_by_dtype", "precision", "by_dtype"),
    ("precision_by_op", "precision", "by_op"),
    ("precision_by_module", "precision", "by_module"),
    ("casts", "precision", "casts"),
    ("missed_lower_precision", "precision", "missed_lower_precision"),
    ("fp32_list_in_low_precision", "precision", "fp32_list_in_low_precision"),
    ("fallback_ops", "fallback", "ops"),
    ("hpu_graphs", "graphs", "graphs"),
    ("graph_candidates", "graphs", "eligible_modules"),
)


def _flat(row: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in row.items():
        if isinstance(v, (list, dict)):
            out[k] = "; ".join(str(x) for x in v) if isinstance(v, list) else str(v)
        else:
            out[k] = v
    return out


def report_tables(report: Report) -> dict[str, list[dict[str, Any]]]:
    """Non-empty tables of a report, rows flattened (lists joined with '; ')."""
    out: dict[str, list[dict[str, Any]]] = {}
    for name, section, fld in TABLES:
        sec = report.sections.get(section)
        if sec is None:
            continue
        rows = as_plain(getattr(sec, fld, ()))
        if rows:
            out[name] = [_flat(r) for r in rows]
    dyn = report.sections.get("dynamicity")
    if dyn is not None:
        hist = [
            {"op": h.op, "shape": s, "count": c} for h in dyn.shape_histograms for s, c in h.shapes
        ]
        if hist:
            out["shape_histograms"] = hist
    out["findings"] = [_flat(f.to_dict()) for f in report.findings]
    return out


def columns_of(rows: list[dict[str, Any]]) -> list[str]:
    """Every key of `rows`, in first-seen order (rows of one table may differ in their keys)."""
    cols: list[str] = []
    for r in rows:
        cols += [k for k in r if k not in cols]
    return cols


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


def fmt_cell(key: str, value: Any) -> str:
    """Cell text: ns columns as times, floats rounded, the rest as text."""
    if value is None:
        return ""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and key.endswith("_ns"):
        return fmt_ns(float(value))
    if isinstance(value, float):
        return f"{value:,.2f}" if abs(value) < 1e6 else f"{value:.3e}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)
