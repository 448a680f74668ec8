"""The analysis registry: one spec line makes a report that analyze(), the CLI and every
renderer handle; column words and units come from the keys."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import orjson
import pytest

from hpuprof.analysis import analyze, parse_reports
from hpuprof.analysis.options import AnalysisOptions
from hpuprof.analysis.registry import (
    _REGISTRY,
    Column,
    ReportSpec,
    Table,
    cols,
    column_label,
    column_unit,
    register,
    report_names,
)
from hpuprof.errors import UsageError
from hpuprof.render import FORMATS, get_renderer
from hpuprof.trace.model import Trace
from tests.tracebuild import make_trace


@dataclass(frozen=True)
class _Row:
    name: str
    busy_ns: int
    share_pct: float


@dataclass(frozen=True)
class _CountReport:
    events: int
    rows: tuple[_Row, ...]
    findings: tuple[()] = ()


def analyze_count(trace: Trace, options: AnalysisOptions) -> _CountReport:
    ev = trace.events
    rows = tuple(
        _Row(str(n), int(g["dur_ns"].sum()), 50.0) for n, g in ev.groupby(ev["name"].astype(str))
    )
    return _CountReport(len(ev), rows)


@pytest.fixture
def counted() -> Iterator[str]:
    spec = ReportSpec(
        "count_test",
        "Event count",
        f"{__name__}:analyze_count",
        tables=(Table("count_rows", "Busy time by name", "rows", cols("name", "busy_ns")),),
        facts=cols("events"),
        default=False,
    )
    register(spec)
    try:
        yield spec.name
    finally:
        _REGISTRY.pop(spec.name)


def _trace() -> Trace:
    return make_trace(
        [
            {"name": "aten::mm", "ts_ns": 0, "dur_ns": 2_500_000},
            {"name": "aten::add", "ts_ns": 3_000_000, "dur_ns": 1_000},
        ]
    )


def test_one_spec_line_reaches_analyze_and_every_renderer(counted: str) -> None:
    assert counted in report_names()
    assert parse_reports(counted) == (counted,)
    report = analyze(_trace(), reports=counted)
    assert report.sections[counted].events == 2
    data = orjson.loads(get_renderer("json").render(report))
    assert data[counted]["rows"][0]["busy_ns"] in (1_000, 2_500_000)
    text = get_renderer("text", width=120).render(report)
    assert "Busy time by name" not in text  # a data table: documents only
    md = get_renderer("md").render(report)
    assert "## Busy time by name" in md and "| Name | Busy time (ms) | Share % |" in md
    # times in one unit per column, named in the header, never raw ns
    assert "| aten::mm | 2.500 |" in md and "| aten::add | 0.001 |" in md
    html = get_renderer("html", include_plotlyjs=False).render(report)
    assert "Busy time by name" in html and "<td>2.500</td>" in html
    csv = get_renderer("csv").tables(report)
    assert csv["count_rows"].splitlines()[0] == "name,busy_ns,share_pct"
    assert set(FORMATS) == {"text", "json", "md", "html", "csv"}


def test_default_reports_exclude_opt_in_ones(counted: str) -> None:
    assert counted not in parse_reports(None)


def test_unknown_and_two_trace_reports_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="unknown report 'nope'"):
        parse_reports("nope")
    with pytest.raises(UsageError, match="hpuprof diff"):
        parse_reports("compare")


def test_table_names_are_unique_across_reports() -> None:
    clash = ReportSpec("clash_test", "x", f"{__name__}:analyze_count", (Table("temporal", "x", "rows"),))  # fmt: skip
    with pytest.raises(ValueError, match="already belongs to 'bottleneck'"):
        register(clash)
    assert "clash_test" not in report_names()


@pytest.mark.parametrize(
    ("key", "label", "unit"),
    [
        ("self_ns", "Self time", "ns"),
        ("device_ratio_pct", "Device ratio %", "pct"),
        ("mme_tpc_overlap_ns", "MME TPC overlap time", "ns"),
        ("device_idle_ns", "Device idle time", "ns"),
        ("pct_of_idle", "% of idle", "pct"),
        ("peak_bytes", "Peak", "bytes"),
        ("count", "Calls", ""),
        ("host_ops", "Host ops", ""),
    ],
)
def test_column_words_and_units(key: str, label: str, unit: str) -> None:
    assert column_label(key) == label
    assert column_unit(key) == unit
    assert Column(key, "Given").header == "Given"
