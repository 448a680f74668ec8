"""`hpuprof analyze PATH... [--report ...] [--format ...] [-o OUT] [--rank R] [--steps A:B]`."""

from __future__ import annotations

from pathlib import Path

import click

from hpuprof.analysis.registry import default_report_names, report_names
from hpuprof.cli.command import command, option


@command(
    "analyze",
    help="Analyse traces into reports (--report) as text, JSON, Markdown, HTML or CSV. "
    f"Reports: {', '.join(report_names())} (default: {', '.join(default_report_names())}). "
    "With -o the format follows the suffix (.json "
    ".md .html .txt; .csv or a directory: one CSV per table).",
)
@click.argument(
    "paths",
    nargs=-1,
    required=True,
    type=click.Path(path_type=Path),
    help="Trace files or run/rank directories.",
)
@option(
    "--report",
    "-r",
    default="",
    help=f"Comma-separated list of: {', '.join(report_names())}.",
)
@option("--format", "-f", "fmt", default="", help="text | json | md | html | csv.")
@option("-o", "--output", type=click.Path(path_type=Path), help="Output file or dir.")
@option("--rank", type=int, multiple=True, help="Only these ranks (repeatable).")
@option("--steps", default="", help="Step range A:B (inclusive).")
@option("--name", default="", help="Only events whose name matches (regex).")
@option(
    "--drop-last-step",
    is_flag=True,
    default=False,
    help="Drop the last ProfilerStep like HTA's default.",
)
@option("--color/--no-color", default=False, help="ANSI colour (text).")
@option(
    "--workers",
    "-w",
    default=0,
    help="Analyse rank by rank: 1 in this process, N on a local Dask cluster of N "
    "processes (memory bounded; per-rank tables stacked). Exit 1 if a rank failed.",
)
@option(
    "--scheduler", default="", help="Rank by rank on an existing Dask cluster: tcp://host:8786."
)
@option("--worker-memory", default="", help="Memory limit per local Dask worker, e.g. 3GB.")
def analyze(
    paths: tuple[Path, ...],
    report: str,
    fmt: str,
    output: Path | None,
    rank: tuple[int, ...],
    steps: str,
    name: str,
    drop_last_step: bool,
    color: bool,
    workers: int,
    scheduler: str,
    worker_memory: str,
) -> int:
    from hpuprof.cli.commands._report_io import run_analyze

    if workers or scheduler:
        from hpuprof.cli.commands.analyze_ranks import analyze_by_rank

        return analyze_by_rank(
            list(paths), report, fmt, output, (list(rank), steps, name), drop_last_step, color,
            workers, scheduler, worker_memory,
        )  # fmt: skip

    return run_analyze(
        list(paths), report, fmt, output, list(rank), steps, name, drop_last_step, color
    )
