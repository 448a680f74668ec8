"""`hpuprof diff A B [--format text|json|md|html|csv] [-o OUT]`: what changed from A (control) to B."""

from __future__ import annotations

from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    @app.command(
        "diff",
        help="Compare two traces: step time, categories, per-op counts and durations (one "
        "step each, like HTA's TraceDiff), new and vanished ops, regressions.",
    )
    def diff(
        control: Path = typer.Argument(..., help="Control trace (A)."),
        test: Path = typer.Argument(..., help="Test trace (B)."),
        fmt: str = typer.Option("", "--format", "-f", help="text | json | md | html | csv."),
        output: Path | None = typer.Option(None, "-o", "--output", help="Output file."),
        all_steps: bool = typer.Option(False, "--all-steps", help="Per-op over whole traces."),
        threshold_pct: float = typer.Option(5.0, "--threshold-pct", help="Regression threshold."),
    ) -> int:
        from hpuprof.cli.commands._report_io import run_diff

        return run_diff(control, test, fmt, output, all_steps, threshold_pct)
