"""`hpuprof analyze PATH... [--report ...] [--format ...] [-o OUT] [--rank R] [--steps A:B]`."""

from __future__ import annotations

from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    from hpuprof.analysis.registry import default_report_names, report_names

    @app.command(
        "analyze",
        help=f"Analyse traces: {', '.join(report_names())} reports (default: "
        f"{', '.join(default_report_names())}). With -o the format follows the suffix (.json "
        ".md .html .txt; .csv or a directory: one CSV per table).",
    )
    def analyze(
        paths: list[Path] = typer.Argument(..., help="Trace files or run/rank directories."),
        report: str = typer.Option(
            "",
            "--report",
            "-r",
            help=f"Comma-separated list of: {', '.join(report_names())}.",
        ),
        fmt: str = typer.Option("", "--format", "-f", help="text | json | md | html | csv."),
        output: Path | None = typer.Option(None, "-o", "--output", help="Output file or dir."),
        rank: list[int] = typer.Option([], "--rank", help="Only these ranks (repeatable)."),
        steps: str = typer.Option("", "--steps", help="Step range A:B (inclusive)."),
        name: str = typer.Option("", "--name", help="Only events whose name matches (regex)."),
        drop_last_step: bool = typer.Option(
            False, "--drop-last-step", help="Drop the last ProfilerStep like HTA's default."
        ),
        color: bool = typer.Option(False, "--color/--no-color", help="ANSI colour (text)."),
        workers: int = typer.Option(
            0,
            "--workers",
            "-w",
            help="Analyse rank by rank: 1 in this process, N on a local Dask cluster of N "
            "processes (memory bounded; per-rank tables stacked). Exit 1 if a rank failed.",
        ),
        scheduler: str = typer.Option(
            "", "--scheduler", help="Rank by rank on an existing Dask cluster: tcp://host:8786."
        ),
        worker_memory: str = typer.Option(
            "", "--worker-memory", help="Memory limit per local Dask worker, e.g. 3GB."
        ),
    ) -> int:
        from hpuprof.cli.commands._report_io import run_analyze

        if workers or scheduler:
            from hpuprof.cli.commands.analyze_ranks import analyze_by_rank

            return analyze_by_rank(
                paths, report, fmt, output, (rank, steps, name), drop_last_step, color,
                workers, scheduler, worker_memory,
            )  # fmt: skip

        return run_analyze(paths, report, fmt, output, rank, steps, name, drop_last_step, color)
