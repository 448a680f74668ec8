"""Bodies of `hpuprof analyze` and `hpuprof diff`: load, filter, analyse, render, write.

Imported only when one of those commands runs (pandas and the analyses are heavy).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from hpuprof.errors import OutputError, UsageError


def _load(path: Path) -> Any:
    import hpuprof

    if not path.exists():
        raise UsageError(f"{path}: no such file or directory")
    return hpuprof.load(path)


def pick_format(fmt: str, output: Path | None) -> str:
    """--format wins; else the output suffix (a directory or .csv -> csv); else text."""
    from hpuprof.render import FORMATS, SUFFIXES

    if fmt:
        if fmt not in FORMATS:
            raise UsageError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")
        return fmt
    if output is None:
        return "text"
    if output.is_dir() or output.suffix == "":
        return "csv"
    if output.suffix.lower() not in SUFFIXES:
        raise UsageError(f"cannot tell the format from {output.name!r}; use --format")
    return SUFFIXES[output.suffix.lower()]


def _write(output: Path | None, data: str | bytes) -> None:
    """`data` to stdout (newline-terminated), or atomically to `output` (UTF-8 for text)."""
    if output is None:
        text = data.decode() if isinstance(data, bytes) else data
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        return
    from hpuprof.trace.atomic_write import atomic_output

    with atomic_output(output) as out:
        out.write(data if isinstance(data, bytes) else data.encode("utf-8"))


def _write_csv_dir(output: Path, tables: dict[str, str]) -> None:
    """One `<name>.csv` per table in the directory `output` (made even when no table has rows)."""
    try:
        output.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise OutputError(f"cannot write {output}: {err.strerror or err}") from err
    for name, text in tables.items():
        _write(output / f"{name}.csv", text)


def render_report(
    report: Any, form: str, output: Path | None, color: bool = False
) -> str | bytes | None:
    """A Report in `form`; None when it was written as a CSV directory (one file per table)."""
    from hpuprof.render import get_renderer

    if form == "csv":
        renderer = get_renderer("csv")
        if output is not None and output.suffix.lower() != ".csv":
            _write_csv_dir(output, renderer.tables(report))
            return None
        out: str | bytes = renderer.render(report)
        return out
    if form == "text":
        width = None if output is None else 120
        return get_renderer("text", width=width, color=color and output is None).render(report)
    out = get_renderer(form).render(report)
    return out


def _write_all(output: Path | None, chunks: list[str | bytes]) -> None:
    if all(isinstance(c, bytes) for c in chunks):
        _write(output, b"".join(c for c in chunks if isinstance(c, bytes)))
    else:
        _write(output, "\n".join(c.decode() if isinstance(c, bytes) else c for c in chunks))


def run_analyze(
    paths: list[Path],
    report: str,
    fmt: str,
    output: Path | None,
    ranks: list[int],
    steps: str,
    name: str,
    drop_last_step: bool,
    color: bool,
) -> int:
    from hpuprof.analysis import AnalysisOptions, analyze, parse_reports
    from hpuprof.analysis.filters import EventFilter, NamePattern, RankFilter, parse_steps

    names = parse_reports(report)
    form = pick_format(fmt, output)
    if output is not None and len(paths) > 1 and form != "text":
        raise UsageError("-o with several traces: analyse them one at a time")
    filters: list[EventFilter] = []
    if ranks:
        filters.append(RankFilter(tuple(ranks)))
    if steps:
        filters.append(parse_steps(steps))
    if name:
        filters.append(NamePattern(name))
    options = AnalysisOptions(drop_last_step=drop_last_step)
    chunks: list[str | bytes] = []
    for path in paths:
        rep = analyze(_load(path), reports=names, options=options, filters=filters)
        data = render_report(rep, form, output, color)
        if data is None:
            return 0
        chunks.append(data)
    _write_all(output, chunks)
    return 0


def run_diff(
    control: Path, test: Path, fmt: str, output: Path | None, step: int | None, threshold: float
) -> int:
    from hpuprof.analysis import AnalysisOptions, compare

    form = pick_format(fmt, output)
    options = AnalysisOptions(regression_pct=threshold)
    rep = compare(_load(control), _load(test), options, step, step)
    data = render_report(rep, form, output)
    if data is not None:
        _write_all(output, [data])
    return 0
