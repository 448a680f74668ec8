"""A report as the dashboard shows it, kept as plain data with the run (memory and disk).

`view_doc(report)` is made once per analysed run from the `Report` object: the JSON contract
(`report.to_dict()`, what `hpuprof analyze --format json` prints), every table of every
section with the registry's headers and units (`hpuprof.render.tables.report_views`, the
same tables the HTML report shows), and the findings with their evidence as small tables.
Pages only pick from it and choose units for the screen: times in ms, sizes in MiB, shares
in %, headers in words; they never compute a number of their own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hpudash import fmt

VIEW_VERSION = 1


def view_doc(report: Any, errors: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The plain-data view of a `Report` (None: nothing analysed) and its failed sections."""
    if report is None:
        return {"version": VIEW_VERSION, "data": {}, "tables": {}, "findings": [], "errors": dict(errors or {})}  # fmt: skip
    from hpuprof.analysis.report import as_plain
    from hpuprof.render.tables import evidence_rows, report_origin_ns, report_views

    tables: dict[str, Any] = {}
    for view in report_views(report):
        if view.name == "findings":
            continue
        tables[view.name] = {
            "title": view.title,
            "report": view.report,
            "columns": [[c.key, c.header, c.kind] for c in view.columns],
            "key_columns": [c.key for c in view.key_columns],
            "rows": as_plain(list(view.rows)),
        }
    origin_ns = report_origin_ns(report)
    findings = [
        as_plain(f.to_dict()) | {"evidence_rows": evidence_rows(f, origin_ns)}
        for f in report.findings
    ]
    return {
        "version": VIEW_VERSION,
        "data": report.to_dict(),
        "tables": tables,
        "findings": findings,
        "errors": dict(errors or {}),
    }


def table(doc: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    """The table `name` of a view, or None when the run has none (empty tables are left out)."""
    got = (doc.get("tables") or {}).get(name)
    return got if isinstance(got, Mapping) and got.get("rows") else None


def screen_columns(
    spec: Mapping[str, Any], keys: Sequence[str] | None = None
) -> tuple[list[tuple[str, str]], list[dict[str, Any]]]:
    """(grid columns, rows) of a view table for the screen: times as ms, sizes as MiB, shares
    rounded, "row"-unit cells as text in their own unit; `keys` picks and orders columns
    (default: every column). Negative sizes (the report's "unknown") become empty cells."""
    from hpuprof.analysis.registry import Column
    from hpuprof.render.tables import fmt_column

    cols = [(str(k), str(h), str(u)) for k, h, u in spec.get("columns") or []]
    if keys is not None:
        by_key = {c[0]: c for c in cols}
        cols = [by_key[k] for k in keys if k in by_key]
    headers = []
    for key, header, unit in cols:
        suffix = {"ns": " (ms)", "bytes": " (MiB)"}.get(unit, "")
        headers.append((key, header + suffix))
    rows = []
    for row in spec.get("rows") or []:
        out: dict[str, Any] = {}
        for key, _, unit in cols:
            value = row.get(key)
            if unit == "ns":
                out[key] = fmt.ns_to_ms(value)
            elif unit == "bytes":
                number = fmt.number(value)
                out[key] = round(number / 2**20, 3) if number is not None and number >= 0 else None  # fmt: skip
            elif unit == "pct":
                number = fmt.number(value)
                out[key] = round(number, 2) if number is not None else None
            elif unit == "row":
                out[key] = fmt_column(Column(key, unit="row"), value, row)
            else:
                out[key] = value
        rows.append(out)
    return headers, rows


def facts(doc: Mapping[str, Any], report: str) -> list[tuple[str, str]]:
    """(label, value) of a report's scalar facts, formatted in their units ("not recorded"
    where the report has no value)."""
    from hpuprof.analysis.registry import Column
    from hpuprof.render.tables import fmt_column

    spec = table(doc, f"{report}_summary")
    if spec is None:
        return []
    row = spec["rows"][0]
    out = []
    for key, header, unit in spec.get("columns") or []:
        value = row.get(key)
        if value is None or value == "":
            text = "not recorded"
        elif value == []:
            text = "none"
        else:
            text = fmt_column(Column(key, header, unit), value, row)
        out.append((str(header), text))
    return out


def findings(doc: Mapping[str, Any], report: str | None = None) -> list[Mapping[str, Any]]:
    """The findings of a view (of one report when named), most severe first."""
    return [
        f
        for f in doc.get("findings") or []
        if isinstance(f, Mapping) and (report is None or f.get("report") == report)
    ]


def report_of(doc: Mapping[str, Any]) -> Mapping[str, Any]:
    """The report dict of a view (the JSON contract, what `hpuprof.render.figures` draws),
    {} when nothing was analysed."""
    data = doc.get("data")
    return data if isinstance(data, Mapping) else {}


def section(doc: Mapping[str, Any], *path: str) -> Any:
    """`doc["data"][path[0]][path[1]]...` (the JSON contract), or None when missing."""
    from hpuprof.render.figures import section as report_section

    return report_section(report_of(doc), *path)
