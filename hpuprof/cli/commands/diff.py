"""`hpuprof diff A B [--format text|json|md|html|csv] [-o OUT]`: what changed from A (control) to B."""

from __future__ import annotations

from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    @app.command(
        "diff",
        help="Compare two traces per step: step time, device time split, per-op host self and "
        "device time, per-kernel time, new and vanished ops; a change is a regression only "
        "beyond the step-to-step noise.",
    )
    def diff(
        control: Path = typer.Argument(..., help="Control trace (A)."),
        test: Path = typer.Argument(..., help="Test trace (B)."),
        fmt: str = typer.Option("", "--format", "-f", help="text | json | md | html | csv."),
        output: Path | None = typer.Option(None, "-o", "--output", help="Output file."),
        step: int | None = typer.Option(
            None, "--step", help="Compare only this step of each trace (default: every step)."
        ),
        threshold_pct: float = typer.Option(5.0, "--threshold-pct", help="Regression threshold."),
    ) -> int:
        from hpuprof.cli.commands._report_io import run_diff

        return run_diff(control, test, fmt, output, step, threshold_pct)
