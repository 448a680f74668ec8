"""The text report fits the terminal: at 60, 80 and 120 columns no line is wider, every finding's
severity and title are shown whole, and their continuation lines keep a hanging indent (issue 25).
"""

from __future__ import annotations

import dataclasses
import re
from functools import cache

import pytest

import hpuprof
from hpuprof.analysis import Report, analyze
from hpuprof.analysis.findings import Finding
from hpuprof.cli.main import main
from hpuprof.render.terminal import ADVICE_MARK, SEVERITY_WIDTH, TerminalRenderer
from tests.conftest import SAMPLE_TRACES

WIDTHS = (60, 80, 120)
SAMPLES = ("emulated_bf16", "emulated_lazy", "emulated_two_ranks", "cpu_torch_profiler")
GUTTER = " " * (SEVERITY_WIDTH + 1)
SEVERITY_LINE = re.compile(r"^(CRITICAL|WARNING|INFO)\s+\S")

LONG_FINDING = Finding(
    "warning",
    "precision",
    "3 ops on Gaudi's lower-precision list still run in fp32 (0.15 ms): aten::_log_softmax, "
    "aten::addmm, aten::mm in /a/very/long/path/without/any/spaces/in/it/to/model/"
    "transformer_block_with_a_long_name.py:123",
    "fp32_ops",
    3.0,
    0.0,
    advice="check they run inside the autocast region; pass bf16 inputs; or add them to "
    "PT_HPU_AUTOCAST_LOWER_PRECISION_OPS_LIST_WHICH_IS_A_LONG_NAME_WITHOUT_SPACES_AT_ALL",
)
"""A title and advice longer than any width, with words wider than the narrowest one."""


@cache
def _report(sample: str) -> Report:
    report = analyze(hpuprof.load(SAMPLE_TRACES / sample, cache=False))
    return dataclasses.replace(report, findings=(LONG_FINDING, *report.findings))


def _findings_block(lines: list[str]) -> list[str]:
    """The lines after `Findings` up to the first line outside the gutter layout."""
    start = lines.index("Findings") + 1
    block = []
    for line in lines[start:]:
        if not (SEVERITY_LINE.match(line) or line.startswith(GUTTER) or _is_advice(line)):
            break
        block.append(line)
    return block


def _is_advice(line: str) -> bool:
    return line.startswith(f"{ADVICE_MARK:>{SEVERITY_WIDTH}} ")


def _entries(block: list[str]) -> list[tuple[str, str, str]]:
    """(severity, title, advice) of each finding as shown, continuation lines joined."""
    entries: list[tuple[str, list[str], list[str]]] = []
    for line in block:
        if SEVERITY_LINE.match(line):
            entries.append((line.split()[0], [line[SEVERITY_WIDTH + 1 :]], []))
        elif _is_advice(line):
            entries[-1][2].append(line[SEVERITY_WIDTH + 1 :])
        else:  # a continuation line: its text starts right of the gutter
            assert line.startswith(GUTTER) and line[len(GUTTER)] != " ", line
            (entries[-1][2] or entries[-1][1]).append(line[len(GUTTER) :])
    return [
        (sev, "".join("".join(t).split()), "".join("".join(a).split())) for sev, t, a in entries
    ]


def _squeezed(text: str) -> str:
    return "".join(text.split())


@pytest.mark.parametrize("brief", [False, True], ids=["full", "brief"])
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("sample", SAMPLES)
def test_findings_fit_the_width_whole_and_indented(sample: str, width: int, brief: bool) -> None:
    report = _report(sample)
    text = TerminalRenderer(width=width, brief=brief).render(report)
    lines = text.splitlines()
    too_wide = [line for line in lines if len(line) > width]
    assert not too_wide, too_wide
    shown = report.findings[: 5 if brief else 30]
    entries = _entries(_findings_block(lines))
    assert [sev for sev, _, _ in entries] == [f.severity.upper() for f in shown]
    for (_, title, advice), finding in zip(entries, shown, strict=True):
        assert title == _squeezed(finding.title)  # whole: every character, in order
        assert advice == _squeezed(finding.advice)


def test_long_title_wraps_under_its_gutter() -> None:
    lines = TerminalRenderer(width=60).render(_report("emulated_lazy")).splitlines()
    block = _findings_block(lines)
    assert block[0].startswith("WARNING  3 ops on Gaudi's lower-precision list")
    assert block[1].startswith(GUTTER) and not block[1].startswith(GUTTER + " ")
    advice = next(i for i, line in enumerate(block) if _is_advice(line))
    assert block[advice].startswith(f"      {ADVICE_MARK} check they run inside")
    assert block[advice + 1].startswith(GUTTER)


@pytest.mark.parametrize("width", WIDTHS)
def test_cli_text_report_fits_the_terminal_width(
    width: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", str(width))
    assert main(["analyze", str(SAMPLE_TRACES / "emulated_bf16")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "Findings" in lines and any(SEVERITY_LINE.match(line) for line in lines)
    assert max(len(line) for line in lines) <= width


@pytest.mark.parametrize("width", (60, 80))
def test_run_summary_is_as_wide_as_the_terminal(
    width: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The summary `hpuprof demo` and `hpuprof record` print after a run."""
    from hpuprof.capture.run_summary import analysis_summary

    monkeypatch.setenv("COLUMNS", str(width))
    text = analysis_summary(hpuprof.load(SAMPLE_TRACES / "emulated_bf16", cache=False))
    assert text is not None and "Findings" in text
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= width
    assert max(len(line) for line in lines) > width - 5  # it uses the width, not a fixed 100
