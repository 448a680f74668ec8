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
    from hpuprof.render import get_renderer

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
        if form == "csv":
            renderer = get_renderer("csv")
            if output is not None and output.suffix.lower() != ".csv":
                _write_csv_dir(output, renderer.tables(rep))
                return 0
            chunks.append(renderer.render(rep))
        elif form == "text":
            chunks.append(
                get_renderer(
                    "text", width=None if output is None else 120, color=color and output is None
                ).render(rep)
            )
        else:
            chunks.append(get_renderer(form).render(rep))
    if all(isinstance(c, bytes) for c in chunks):
        _write(output, b"".join(c for c in chunks if isinstance(c, bytes)))
    else:
        _write(output, "\n".join(c.decode() if isinstance(c, bytes) else c for c in chunks))
    return 0


def render_diff_text(d: Any, limit: int = 25) -> str:
    """A DiffReport as plain text tables."""
    from hpuprof.render.tables import fmt_cell

    lines = [
        f"hpuprof diff: A={', '.join(d.a_source)} (step {d.a_step})  "
        f"B={', '.join(d.b_source)} (step {d.b_step})",
        "",
        f"{'metric':24} {'A':>16} {'B':>16} {'diff':>16} {'pct':>8}",
    ]
    for m in d.metrics:
        lines.append(
            f"{m.metric:24} {fmt_cell(m.metric, m.a):>16} {fmt_cell(m.metric, m.b):>16} "
            f"{fmt_cell(m.metric, m.diff):>16} {m.pct:>7.1f}%"
        )
    lines += ["", "regressions:"] + [f"  {f.title}" for f in d.regressions[:limit]]
    lines += ["", f"new ops: {len(d.new_ops)}, vanished ops: {len(d.vanished_ops)}", ""]
    lines.append(f"{'op':60} {'A n':>7} {'B n':>7} {'A time':>11} {'B time':>11} {'diff':>11}")
    for o in d.ops[:limit]:
        lines.append(
            f"{o.name[:60]:60} {o.a_count:>7} {o.b_count:>7} {fmt_cell('x_ns', o.a_total_ns):>11} "
            f"{fmt_cell('x_ns', o.b_total_ns):>11} {fmt_cell('x_ns', o.diff_ns):>11}"
        )
    return "\n".join(lines) + "\n"


def run_diff(
    control: Path, test: Path, fmt: str, output: Path | None, all_steps: bool, threshold: float
) -> int:
    import csv
    import io

    import orjson

    from hpuprof.analysis import AnalysisOptions
    from hpuprof.analysis.diff import diff_traces
    from hpuprof.analysis.report import as_plain
    from hpuprof.render.markdown import md_table

    form = pick_format(fmt, output)
    options = AnalysisOptions(regression_pct=threshold)
    step: int | None = None if all_steps else -1
    d = diff_traces(_load(control), _load(test), options, step, step)
    data: str | bytes
    if form == "json":
        data = orjson.dumps(d.to_dict(), option=orjson.OPT_INDENT_2)
    elif form == "md":
        data = (
            "# hpuprof diff\n\n## metrics\n\n"
            + md_table(as_plain(list(d.metrics)))
            + "\n\n## ops\n\n"
            + md_table(as_plain(list(d.ops)), limit=100)
            + "\n"
        )
    elif form == "csv":
        buf = io.StringIO()
        rows = as_plain(list(d.ops))
        w = csv.DictWriter(buf, fieldnames=list(rows[0]) if rows else ["name"], lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
        data = buf.getvalue()
    elif form == "text":
        data = render_diff_text(d)
    else:
        raise UsageError(f"diff supports text, json, md and csv, not {form}")
    _write(output, data)
    return 0
