"""`hpuprof record` and `hpuprof demo`: enable the emulator if asked, profile, then -- once the
script has ended, outside the profiler's stop -- write the Perfetto trace and report.

The recorded trace is loaded once after the run, for both the Perfetto trace
(`perfetto_export.py`) and the summary. While that is written, a SIGINT / SIGTERM / SIGHUP the
process would die of still ends it, but only after the half-written file is removed
(`signals.fatal_signals_raise`): the run itself was complete before.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from hpuprof.capture import compile_mode
from hpuprof.capture.profiler import DEFAULT_WINDOW_S, HPUProfiler
from hpuprof.capture.run_dir import update_manifest
from hpuprof.capture.run_end import RunEnd, from_exception, from_exit_code
from hpuprof.capture.run_summary import load_trace, summary_text
from hpuprof.capture.runner import ScriptOutcome, run_script, split_command
from hpuprof.capture.schedule import parse_schedule
from hpuprof.capture.signals import fatal_signals_raise
from hpuprof.errors import UsageError
from hpuprof.path_text import path_text

if TYPE_CHECKING:
    from hpuprof.trace.model import Trace

MODES = ("lazy", "eager", "compile")
DEVICES = ("gaudi2", "gaudi3")
TIMELINES = ("projected", "measured")


def enable_emulator(
    mode: str,
    device: str,
    timeline: str = "projected",
    compute: str = "real",
    cards: int = 1,
) -> None:
    """`hpusim.enable(mode, device, ...)`, with a clear error for bad values or a missing
    runtime."""
    if mode not in MODES:
        raise UsageError(f"--mode {mode!r}: choose one of {', '.join(MODES)}")
    if device not in DEVICES:
        raise UsageError(f"--device {device!r}: choose one of {', '.join(DEVICES)}")
    if timeline not in TIMELINES:
        raise UsageError(f"--timeline {timeline!r}: choose one of {', '.join(TIMELINES)}")
    if cards < 1:
        raise UsageError(f"--cards {cards}: must be at least 1")

    try:
        import hpusim  # the emulator (and torch): only when a run asks for it
    except ImportError as error:
        raise UsageError(f"the emulated runtime (hpusim) is not installed: {error}") from None

    if mode == "compile":  # the eager frontend, and torch.compile calls get hpu_backend
        os.environ["PT_HPU_LAZY_MODE"] = "0"
        hpusim.enable(mode="eager", device=device, timeline=timeline, compute=compute, cards=cards)
        compile_mode.install()
    else:
        compile_mode.uninstall()
        hpusim.enable(mode=mode, device=device, timeline=timeline, compute=compute, cards=cards)


def disable_emulator() -> None:
    """Undo `enable_emulator`: the emulator off and `torch.compile` as it was (compile mode's
    forced backend would otherwise outlive the run in a process that goes on)."""
    import hpusim

    hpusim.disable()
    compile_mode.uninstall()


def finish_run(
    prof: HPUProfiler, out: Callable[[str], None] = print, *, summary: bool = True
) -> None:
    """After the script (the profiler stopped): the Perfetto trace when `prof.perfetto`, the
    compile-mode note in `run.json`, and the report -- the trace loaded once for all."""
    written = prof.end is not None and prof.paths.trace.is_file()
    trace = load_trace(prof.paths.trace) if written and (summary or prof.perfetto) else None
    with fatal_signals_raise():
        if written and prof.perfetto:
            prof.export_perfetto(trace)
        _note_compile_backends(prof)
    report(prof, out, summary=summary, trace=trace)


def report(
    prof: HPUProfiler,
    out: Callable[[str], None] = print,
    *,
    summary: bool = True,
    trace: Trace | None = None,
) -> None:
    """Where the run went, and a one-screen summary of `trace` (or only the event counts)."""
    end = prof.end
    ended = prof.status if end is None else end.state
    if end is not None and end.detail:
        ended += f": {end.detail}"  # failed: exit code 1, exception: RuntimeError: boom
    out(f"hpuprof: run written to {path_text(prof.dirpath)} ({ended})")
    for key, paths in prof.files.items():
        for rel in paths:
            out(f"  {key:<9} {path_text(prof.dirpath / rel)}")
    for warning in prof.warnings:
        out(f"  warning: {warning}")
    out(summary_text(trace if summary else None, prof.event_counts, prof.backend))


def record_command(
    command: list[str],
    *,
    emulate: bool,
    mode: str,
    device: str,
    output: Path | None,
    schedule: str | None,
    backend: str | None,
    record_shapes: bool = True,
    with_stack: bool = False,
    timeline: str = "projected",
    window_s: float | None = DEFAULT_WINDOW_S,
    window_steps: int | None = None,
    summary: bool = True,
    perfetto: bool = True,
) -> int:
    """Profile `command` (`python script.py args`); returns the script's exit code."""
    if not command:
        raise UsageError("nothing to record: give a command after --, e.g. -- python train.py")
    split_command(command)  # a missing script is an error before anything heavy starts
    if emulate or backend == "emulated":
        enable_emulator(mode, device, timeline)
        backend = backend or "emulated"
    prof = HPUProfiler(
        output,
        filename=_script_name(command),
        schedule=parse_schedule(schedule) if schedule else None,
        backend=backend,
        record_shapes=record_shapes,
        with_stack=with_stack,
        step_on_optimizer=True,
        window_s=window_s,
        window_steps=window_steps,
        perfetto=perfetto,
        if_busy="raise",  # refused before the script runs, not after it lost its profile
    )
    try:
        prof.start()
        outcome = run_script(command)
    except BaseException as error:  # not the script's own exceptions: those are in outcome
        prof.stop(end=from_exception(error, signal_seen=prof.signal_seen))
        raise
    finally:
        sys.stdout.flush()
    prof.stop(end=script_end(outcome, prof.signal_seen))
    finish_run(prof, summary=summary)
    return outcome.exit_code


def script_end(outcome: ScriptOutcome, signal_seen: str | None) -> RunEnd:
    """The run's ending from the script's: completed, failed (exit code), exception, signal."""
    if outcome.error is None:
        return from_exit_code(outcome.exit_code)
    end = from_exception(outcome.error, signal_seen=signal_seen)
    if end.exit_code is None:  # the exit status `python script.py` would have had
        end = dataclasses.replace(end, exit_code=outcome.exit_code)
    return end


def _note_compile_backends(prof: HPUProfiler) -> None:
    """Emulated compile mode: which backends the script asked for were replaced (run.json)."""
    if compile_mode.is_installed() and compile_mode.replaced:
        replaced = dict(compile_mode.replaced)
        update_manifest(prof.dirpath, {"compile_backends_replaced": replaced})
        print(
            "hpuprof: emulated compile mode: torch.compile backend "
            + ", ".join(f"{b!r} x{n}" for b, n in replaced.items())
            + " replaced by 'hpu_backend'"
        )


def _script_name(command: list[str]) -> str:
    """Trace file stem: the script's name, or the module's for `-m`."""
    if "-m" in command[:2] and command.index("-m") + 1 < len(command):
        return command[command.index("-m") + 1].rsplit(".", 1)[-1]
    for arg in command:
        if arg.endswith(".py"):
            return Path(arg).stem
    return Path(command[-1]).stem
