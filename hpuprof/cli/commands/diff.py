"""`hpuprof diff A B [--format text|json|md|html|csv] [-o OUT]`: what changed from A (control) to B."""

from __future__ import annotations

from pathlib import Path

import click

from hpuprof.cli.command import command, option


@command(
    "diff",
    help="Compare two traces per step: step time, device time split, per-op host self and "
    "device time, per-kernel time, new and vanished ops; a change is a regression only "
    "beyond the step-to-step noise.",
)
@click.argument("control", type=click.Path(path_type=Path), help="Control trace (A).")
@click.argument("test", type=click.Path(path_type=Path), help="Test trace (B).")
@option("--format", "-f", "fmt", default="", help="text | json | md | html | csv.")
@option("-o", "--output", type=click.Path(path_type=Path), help="Output file.")
@option("--step", type=int, help="Compare only this step of each trace (default: every step).")
@option("--threshold-pct", default=5.0, help="Regression threshold.")
def diff(
    control: Path, test: Path, fmt: str, output: Path | None, step: int | None, threshold_pct: float
) -> int:
    from hpuprof.cli.commands._report_io import run_diff

    return run_diff(control, test, fmt, output, step, threshold_pct)
