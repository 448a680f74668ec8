"""`hpuprof record [options] -- python script.py args...`: profile an unchanged script."""

from __future__ import annotations

from pathlib import Path

import click

from hpuprof.cli.command import command, option

HELP = """Run a script unchanged under HPUProfiler and write a run directory.

The script runs in this process (like `python script.py args`); its exit code is passed
through. With --emulate, the emulated Gaudi runtime serves `habana_frameworks` and `hpu`
tensors. Steps advance at every optimizer.step(), which drives --schedule. Once the script
has ended, the Perfetto trace is written from the recorded one (--no-perfetto: not).
"""


@command(
    "record",
    help=HELP,
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
)
@click.pass_context
@option("--emulate", is_flag=True, default=False, help="Run on the emulated Gaudi.")
@option("--mode", default="lazy", help="lazy | eager | compile (emulated).")
@option("--device", default="gaudi2", help="gaudi2 | gaudi3 (emulated).")
@option(
    "--timeline",
    default="projected",
    help="projected: host times as on a Gaudi host (emulated default) | measured: "
    "the emulator's own host clock.",
)
@option("-o", "--output", type=click.Path(path_type=Path), help="Run directory.")
@option("--schedule", help="wait,warmup,active[,repeat[,skip_first]] in steps.")
@option("--backend", help="emulated | gaudi | cuda | cpu (default: automatic).")
@option(
    "--record-shapes/--no-record-shapes",
    default=True,
    help="Record op input shapes (as torch.profiler's record_shapes).",
)
@option(
    "--with-stack",
    is_flag=True,
    default=False,
    help="Record Python call stacks (as torch.profiler's with_stack).",
)
@option(
    "--cards",
    default=0,
    help="Emulated cards: N processes (one rank each, hccl over gloo) into one run "
    "directory, as torchrun would (needs --emulate).",
)
@option(
    "--window-s",
    default=10.0,
    help="Stream the recording to disk at least every this many seconds (at a step "
    "boundary, or on a timer where there are no steps; the first windows are shorter: "
    "1, 2, 4, 8 s): a killed run loses at most its last window. 0: only at the end.",
)
@option("--window-steps", default=0, help="Also stream every this many steps (0: by time only).")
@option(
    "--summary/--no-summary", default=True, help="Analyse the run and print a summary at the end."
)
@option(
    "--perfetto/--no-perfetto",
    default=True,
    help="Write the Perfetto trace once the script has ended (later: hpuprof convert RUN_DIR).",
)
def record(
    ctx: click.Context,
    emulate: bool,
    mode: str,
    device: str,
    timeline: str,
    output: Path | None,
    schedule: str | None,
    backend: str | None,
    record_shapes: bool,
    with_stack: bool,
    cards: int,
    window_s: float,
    window_steps: int,
    summary: bool,
    perfetto: bool,
) -> int:
    from hpuprof.capture.child_watch import ChildWatch

    with ChildWatch():  # the script's children end with a killed run (see child_watch)
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
