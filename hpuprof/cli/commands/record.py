"""`hpuprof record [options] -- python script.py args...`: profile an unchanged script."""

from __future__ import annotations

from pathlib import Path

import typer

HELP = """Run a script unchanged under HPUProfiler and write a run directory.

The script runs in this process (like `python script.py args`); its exit code is passed
through. With --emulate, the emulated Gaudi runtime serves `habana_frameworks` and `hpu`
tensors. Steps advance at every optimizer.step(), which drives --schedule. Once the script
has ended, the Perfetto trace is written from the recorded one (--no-perfetto: not).
"""


def register(app: typer.Typer) -> None:
    @app.command(
        "record",
        help=HELP,
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    )
    def record(
        ctx: typer.Context,
        emulate: bool = typer.Option(False, "--emulate", help="Run on the emulated Gaudi."),
        mode: str = typer.Option("lazy", "--mode", help="lazy | eager | compile (emulated)."),
        device: str = typer.Option("gaudi2", "--device", help="gaudi2 | gaudi3 (emulated)."),
        timeline: str = typer.Option(
            "projected",
            "--timeline",
            help="projected: host times as on a Gaudi host (emulated default) | measured: "
            "the emulator's own host clock.",
        ),
        output: Path | None = typer.Option(None, "-o", "--output", help="Run directory."),
        schedule: str | None = typer.Option(
            None, "--schedule", help="wait,warmup,active[,repeat[,skip_first]] in steps."
        ),
        backend: str | None = typer.Option(
            None, "--backend", help="emulated | gaudi | cuda | cpu (default: automatic)."
        ),
        record_shapes: bool = typer.Option(
            True,
            "--record-shapes/--no-record-shapes",
            help="Record op input shapes (as torch.profiler's record_shapes).",
        ),
        with_stack: bool = typer.Option(
            False,
            "--with-stack",
            help="Record Python call stacks (as torch.profiler's with_stack).",
        ),
        cards: int = typer.Option(
            0,
            "--cards",
            help="Emulated cards: N processes (one rank each, hccl over gloo) into one run "
            "directory, as torchrun would (needs --emulate).",
        ),
        window_s: float = typer.Option(
            10.0,
            "--window-s",
            help="Stream the recording to disk at least every this many seconds (at a step "
            "boundary, or on a timer where there are no steps; the first windows are shorter: "
            "1, 2, 4, 8 s): a killed run loses at most its last window. 0: only at the end.",
        ),
        window_steps: int = typer.Option(
            0, "--window-steps", help="Also stream every this many steps (0: by time only)."
        ),
        summary: bool = typer.Option(
            True, "--summary/--no-summary", help="Analyse the run and print a summary at the end."
        ),
        perfetto: bool = typer.Option(
            True,
            "--perfetto/--no-perfetto",
            help="Write the Perfetto trace once the script has ended (later: hpuprof convert "
            "RUN_DIR).",
        ),
    ) -> int:
        from hpuprof.capture.record_session import record_command

        if cards:
            from hpuprof.capture.cards import record_cards

            return record_cards(
                cards, list(ctx.args), emulate, mode, device, output, schedule, backend,
                record_shapes, with_stack,
                card_options=[
                    "--timeline", timeline, "--window-s", str(window_s),
                    "--window-steps", str(window_steps),
                    "--summary" if summary else "--no-summary",
                    "--perfetto" if perfetto else "--no-perfetto",
                ],
            )  # fmt: skip

        return record_command(
            list(ctx.args),
            emulate=emulate,
            mode=mode,
            device=device,
            timeline=timeline,
            output=output,
            schedule=schedule,
            backend=backend,
            record_shapes=record_shapes,
            with_stack=with_stack,
            window_s=window_s or None,
            window_steps=window_steps or None,
            summary=summary,
            perfetto=perfetto,
        )
