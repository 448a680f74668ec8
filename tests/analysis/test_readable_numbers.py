"""Numbers a person reads (issue 25, readability): in the text, Markdown and HTML reports no
epoch-sized timestamp (times count from the trace's start), no scientific notation, and one unit
per time column, named in its header; the machine formats (JSON, CSV) keep raw values."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

import hpuprof
from hpuprof.analysis import Report, analyze
from hpuprof.analysis.findings import Finding
from hpuprof.analysis.registry import Column
from hpuprof.render.html import HtmlRenderer
from hpuprof.render.markdown import MarkdownRenderer
from hpuprof.render.tables import evidence_text, fmt_value, plain_text, shown_columns
from hpuprof.render.terminal import TerminalRenderer
from hpuprof.render.units import column_scale, fmt_plain_number, fmt_scaled, scale_for
from tests.conftest import SAMPLE_TRACES, SHARED_TRACES

SAMPLES = ("emulated_lazy", "emulated_bf16", "emulated_two_ranks", "cpu_torch_profiler")
SHARED = (
    "tests/data/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json",
    "tests/data/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json",
    "tests/data/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json",
)
"""Real traces of other tools (relative to shared/traces/kineto; `.gz` accepted)."""
EPOCH_SIZED = 1e15
"""A number this large is an absolute timestamp in ns (1e15 ns is 11.6 days)."""
SCIENTIFIC = re.compile(r"\d(?:\.\d+)?e[+-]\d")
"""`9.791e+07` (Python always writes the exponent's sign)."""
NAME = re.compile(r"\b[A-Za-z_][\w.]*")
"""A word or identifier (left out before looking for numbers: `fc1e+3` is none)."""
TIME_UNIT = re.compile(r"\d\s*(s|ms|us|ns)$")


def _inputs() -> list[Path]:
    out = [SAMPLE_TRACES / s for s in SAMPLES]
    for rel in SHARED:
        found = [p for p in (SHARED_TRACES / rel, SHARED_TRACES / f"{rel}.gz") if p.exists()]
        out += found[:1]
    return out


@cache
def _report(path: Path) -> Report:
    return analyze(hpuprof.load(path, cache=False))


@cache
def _documents(path: Path) -> dict[str, str]:
    report = _report(path)
    return {
        "txt": TerminalRenderer(width=200, max_rows=50).render(report),
        "md": MarkdownRenderer().render(report),
        "html": HtmlRenderer(include_plotlyjs=False).render(report),
    }


def _numbers(text: str) -> list[float]:
    return [float(m.replace(",", "")) for m in re.findall(r"\d[\d,]*(?:\.\d+)?", text)]


@pytest.mark.parametrize("path", _inputs(), ids=lambda p: p.name)
def test_no_epoch_timestamp_and_no_scientific_notation(path: Path) -> None:
    for fmt, text in _documents(path).items():
        if fmt == "html":  # the figures' JSON is for plotly, not read: the text between tags
            text = re.sub(r"<script>.*?</script>", "", text, flags=re.S)
        huge = [n for n in _numbers(text) if n >= EPOCH_SIZED]
        assert not huge, f"{fmt}: epoch-sized numbers {huge[:3]}"
        sci = SCIENTIFIC.findall(NAME.sub(" ", text))
        assert not sci, f"{fmt}: scientific notation {sci[:3]}"


def _md_tables(text: str) -> list[list[list[str]]]:
    """Every Markdown table as rows of cells (the header first, the rule left out)."""
    tables: list[list[list[str]]] = []
    current: list[list[str]] = []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|") and not line.startswith("|---"):
            current.append([c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]])
        elif not line.startswith("|---") and current:
            tables.append(current)
            current = []
    return tables


@pytest.mark.parametrize("path", _inputs(), ids=lambda p: p.name)
def test_each_time_column_reads_in_one_unit_named_in_its_header(path: Path) -> None:
    tables = _md_tables(_documents(path)["md"])
    assert tables
    time_columns = 0
    for table in tables:
        header, *rows = table
        for i, name in enumerate(header):
            cells = [r[i] for r in rows if i < len(r) and r[i]]
            units = {m.group(1) for c in cells if (m := TIME_UNIT.search(c))}
            assert len(units) <= 1, f"{name}: cells in {sorted(units)}"
            if re.search(r"\((s|ms|us|ns)( from trace start)?\)$", name):
                time_columns += 1
                assert not units, f"{name}: the unit is in the header, not the cells"
    if path.is_relative_to(SAMPLE_TRACES):  # each sample has tables of several times
        assert time_columns, "no time column found"


def test_evidence_timestamps_count_from_the_trace_start() -> None:
    finding = Finding(
        "warning",
        "dynamicity",
        "t",
        "recompilations",
        2,
        1,
        {"example": {"ts_ns": 1_795_243_660_556_054_936, "step": 3}, "time_ns": 1_500_000},
    )
    text = evidence_text(finding, origin_ns=1_795_243_660_543_709_936)
    assert text == "Example: at 12.35 ms, step: 3; Time: 1.50 ms"
    # the CSV keeps the timestamp as recorded
    assert evidence_text(finding).startswith("Example: ts_ns: 1,795,243,660,556,054,936,")


def test_a_column_takes_the_scale_of_its_largest_value() -> None:
    assert scale_for("ns", 999).symbol == "ns"
    assert scale_for("ns", 1_000).symbol == "us"
    assert scale_for("ns", 12_345_678).symbol == "ms"
    assert scale_for("ns", -3e9).symbol == "s"
    ms = column_scale("ns", [12_000, None, 5_740_000, True, "x", -1])
    assert ms is not None and ms.symbol == "ms"
    assert [fmt_scaled(v, ms) for v in (12_000, 5_740_000, 0, 40)] == [
        "0.012",
        "5.740",
        "0.000",
        "<0.001",
    ]
    assert column_scale("ns", [None, "x"]) is not None  # no number: the smallest scale
    assert column_scale("count", [1, 2]) is None
    mib = column_scale("bytes", [97_910_000, 1024])
    assert mib is not None and fmt_scaled(97_910_000, mib) == "93.4"


def test_large_numbers_are_written_out() -> None:
    assert fmt_plain_number(97_910_000.0) == "97,910,000"
    assert fmt_plain_number(97_910_000) == "97,910,000"
    assert fmt_value("flops", 1.082e11) == "108.2 GFLOP"
    assert fmt_value("bytes", 97_910_000) == "93.4 MiB"
    assert fmt_value("", 9.791e07) == "97,910,000"
    assert plain_text({"flops": [12_345.6, 0.5]}) == "flops: 12,346; 0.5"


@pytest.mark.parametrize(
    ("key", "values", "header", "cells"),
    [
        ("self_ns", [12_000, 5_740_000, None], "Self time (ms)", ["0.012", "5.740", ""]),
        ("ts_ns", [1_500, 2_000_000_000], "Start (s from trace start)", ["<0.001", "2.000"]),
        ("flops", [2e9, 5e6], "FLOPs (GFLOP)", ["2.00", "0.01"]),
        ("flops", [512, 7], "FLOPs", ["512", "7"]),
        ("peak_bytes", [97_910_000, 1024], "Peak (MiB)", ["93.4", "<0.1"]),
        ("self_ns", [3_000_000], "Self time", ["3.00 ms"]),  # one value: its unit beside it
    ],
)
def test_a_shown_column_names_its_one_unit_in_the_header(
    key: str, values: list[float | None], header: str, cells: list[str]
) -> None:
    rows = [{key: v} for v in values]
    (shown,) = shown_columns((Column(key),), rows)
    assert shown.header == header
    assert [shown.text(r) for r in rows] == cells


def test_a_and_b_columns_of_a_comparison_share_one_unit() -> None:
    rows = [{"a_host_ns": 900_000, "b_host_ns": 2_500_000}, {"a_host_ns": 120_000, "b_host_ns": 7}]
    columns = (Column("a_host_ns", "A host self"), Column("b_host_ns", "B host self"))
    a, b = shown_columns(columns, rows)
    assert (a.header, b.header) == ("A host self (ms)", "B host self (ms)")
    assert [a.text(r) for r in rows] == ["0.900", "0.120"]  # alone, A would read in us
    assert [b.text(r) for r in rows] == ["2.500", "<0.001"]
