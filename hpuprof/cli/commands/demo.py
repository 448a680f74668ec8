"""`hpuprof demo [-o DIR]`: profile the built-in emulated Gaudi workload and analyse it."""

from __future__ import annotations

from pathlib import Path

import click

from hpuprof.cli.command import command, option


@command(
    "demo",
    help="Run a small transformer on the emulated Gaudi (lazy mode, recompiles, bf16, a "
    "CPU fallback, a host sync, HPU graphs), record it and print the analysis.",
)
@option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    default=Path("runs/demo"),
    help="Run directory.",
)
@option("--device", default="gaudi2", help="gaudi2 | gaudi3.")
def demo(output: Path, device: str) -> int:
    from hpuprof.demo.run import run_demo

    return run_demo(output, device=device)
