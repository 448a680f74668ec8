"""`hpuprof demo [-o DIR]`: profile the built-in emulated Gaudi workload and analyse it."""

from __future__ import annotations

from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    @app.command(
        "demo",
        help="Run a small transformer on the emulated Gaudi (lazy mode, recompiles, bf16, a "
        "CPU fallback, a host sync, HPU graphs), record it and print the analysis.",
    )
    def demo(
        output: Path = typer.Option(Path("runs/demo"), "-o", "--output", help="Run directory."),
        device: str = typer.Option("gaudi2", "--device", help="gaudi2 | gaudi3."),
    ) -> int:
        from hpuprof.demo.run import run_demo

        return run_demo(output, device=device)
