"""`hpuprof predict [options] -- python script.py args`: a script's step time on a Gaudi.

Runs the script under the emulated runtime on fake tensors (no compute, no memory for data) with
the projected timeline, and prints the modeled step time, throughput, MFU, compilations, peak
HBM and where the time goes (`hpusim.predict`). `-o RUNDIR` also records the run (projected
trace, metrics, run.json with the prediction) for `analyze` and the dashboard.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from hpuprof.cli.command import command, option

HELP = """Predict a script's step time, throughput, MFU, compilations and peak HBM on a Gaudi.

The script runs unchanged on the emulated Gaudi with fake tensors (shapes only), so a large
model's step is simulated in seconds. Steps end at optimizer.step() (mark_step in inference
loops). Values read on the host (.item(), bool(), .tolist()) get deterministic stand-ins and a
warning. Every figure is MODELED; --format json prints the keys documented in
docs/device-model.md.
"""

FORMATS = ("text", "json")
_PERCENT = {"mfu_pct", "host_bound_pct", "comm_pct"}


@command(
    "predict",
    help=HELP,
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
)
@click.pass_context
@option("--device", default="gaudi2", help="gaudi2 | gaudi3.")
@option("--cards", default=1, help="Data-parallel cards (each runs the batch).")
@option("--steps", type=int, help="Stop the script after this many steps (default: all).")
@option("--tokens-per-step", type=int, help="Tokens per step per card, if not from input ids.")
@option("--mode", default="lazy", help="lazy | eager | compile.")
@option("--format", "fmt", default="text", help="text | json.")
@option("-o", "--output", type=click.Path(path_type=Path), help="Also write a run directory.")
def predict(
    ctx: click.Context,
    device: str,
    cards: int,
    steps: int | None,
    tokens_per_step: int | None,
    mode: str,
    fmt: str,
    output: Path | None,
) -> int:
    if _watch():
        from hpuprof.capture.script_failure import run_watched

        options = {"--device": device, "--cards": cards, "--steps": steps}
        options |= {"--tokens-per-step": tokens_per_step, "--mode": mode, "--format": fmt}
        options["--output"] = output
        argv = ["predict"]
        for name, value in options.items():
            if value is not None:
                argv += [name, str(value)]
        return run_watched([*argv, "--", *ctx.args])
    return predict_command(
        list(ctx.args),
        device=device,
        cards=cards,
        steps=steps,
        tokens_per_step=tokens_per_step,
        mode=mode,
        fmt=fmt,
        output=output,
    )


def _watch() -> bool:
    """Run the prediction in a watched child (script_failure.run_watched): from a terminal or
    a pipe, where the child can write to our stdout; not in-process callers that captured
    `sys.stdout`, nor in the child itself."""
    import os
    import sys

    from hpuprof.capture.script_failure import WATCHED_ENV

    return sys.stdout is sys.__stdout__ and not os.environ.get(WATCHED_ENV)


def predict_command(
    command: list[str],
    *,
    device: str = "gaudi2",
    cards: int = 1,
    steps: int | None = None,
    tokens_per_step: int | None = None,
    mode: str = "lazy",
    fmt: str = "text",
    output: Path | None = None,
) -> int:
    """Run `command` on fake tensors and print the prediction; returns the script's exit code.
    A script that fails gets its error and where on stderr instead (script_failure)."""
    import contextlib
    import sys

    from hpuprof.capture.record_session import disable_emulator, enable_emulator
    from hpuprof.capture.runner import ScriptOutcome, run_script, split_command
    from hpuprof.capture.script_failure import describe
    from hpuprof.errors import UsageError

    if fmt not in FORMATS:
        raise UsageError(f"--format {fmt!r}: choose one of {', '.join(FORMATS)}")
    if steps is not None and steps < 1:
        raise UsageError(f"--steps {steps}: must be at least 1")
    if tokens_per_step is not None and tokens_per_step < 1:
        raise UsageError(f"--tokens-per-step {tokens_per_step}: must be at least 1")
    if not command:
        raise UsageError("nothing to predict: give a command after --, e.g. -- python train.py")
    kind, target, _ = split_command(command)
    enable_emulator(mode, device, "projected", compute="fake", cards=cards)
    from hpusim import state
    from hpusim.fake import standin_sites
    from hpusim.host_fake import no_data_hint
    from hpusim.predict import StepLedger, StopPrediction, summarize

    rt = state.require_runtime()
    ledger = StepLedger(rt, max_steps=steps, tokens_per_step=tokens_per_step)
    ledger.install()
    prof = _profiler(output, command) if output is not None else None
    outcome = ScriptOutcome(0)
    try:
        if prof is not None:
            prof.start()
        # the script's prints go to stderr, so stdout holds only the prediction
        with contextlib.redirect_stdout(sys.stderr):
            try:
                outcome = run_script(command)
            except StopPrediction:
                outcome = ScriptOutcome(0)
    finally:
        if prof is not None:
            with contextlib.redirect_stdout(sys.stderr):
                prof.stop()
        ledger.uninstall()
    failure = describe(outcome, target if kind == "script" else None)
    if failure is not None:
        disable_emulator()
        hint = no_data_hint(outcome.error) if outcome.error is not None else None
        print(f"hpuprof: error: {failure}; no prediction", file=sys.stderr)
        if hint is not None:
            print(f"hpuprof: {hint}", file=sys.stderr)
        return outcome.exit_code
    code = outcome.exit_code
    prediction = summarize(ledger, exit_code=code, standins=standin_sites())
    disable_emulator()
    data = prediction.to_json()
    if prof is not None:
        _write_prediction(prof.dirpath, data)
    print(json.dumps(data, indent=2) if fmt == "json" else format_text(data, prof))
    return code


def _profiler(output: Path, command: list[str]) -> Any:
    from hpuprof.capture.profiler import HPUProfiler
    from hpuprof.capture.record_session import _script_name

    return HPUProfiler(
        output,
        filename=_script_name(command),
        backend="emulated",
        record_shapes=True,
        step_on_optimizer=True,
    )


def _write_prediction(root: Path, data: dict[str, Any]) -> None:
    from hpuprof.capture.run_dir import update_manifest
    from hpuprof.trace.atomic_write import write_bytes_atomic

    write_bytes_atomic(root / "prediction.json", (json.dumps(data, indent=2) + "\n").encode())
    update_manifest(root, {"prediction": "prediction.json", "timeline": "projected"})


def _fmt_value(key: str, value: Any) -> str:
    if value is None:
        return "unknown"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if key in _PERCENT:
            return f"{value:.1f} %"
        if key in ("step_time_s", "compile_time_s"):
            return f"{value:.4g} s"
        return f"{value:,.4g}"
    return str(value)


def format_text(data: dict[str, Any], prof: Any = None) -> str:
    """The prediction as a short report (every figure MODELED)."""
    lines = [
        f"hpuprof predict: {data['device']} x {data['cards']}, {data['mode']} mode, "
        f"{data['steps']} step(s) on the {data['timeline']} timeline (MODELED)",
    ]
    rows = (
        ("step time", "step_time_s"),
        ("samples/s (all cards)", "samples_per_s"),
        ("tokens/s (all cards)", "tokens_per_s"),
        ("model FLOPs per step", "model_flops_per_step"),
        ("achieved TFLOPs per card", "achieved_tflops_per_card"),
        ("MFU", "mfu_pct"),
        ("compilations", "compilations"),
        ("recompilations", "recompilations"),
        ("compile time", "compile_time_s"),
        ("peak HBM (GiB)", "peak_hbm_gib"),
        ("HBM of the card (GiB)", "hbm_gib"),
        ("fits", "fits"),
        ("would run out of memory at", "oom_at"),
        ("host-bound (device idle)", "host_bound_pct"),
        ("exposed communication", "comm_pct"),
    )
    for label, key in rows:
        value = data.get(key)
        if key == "oom_at" and value is None:
            continue
        lines.append(f"  {label:<28} {_fmt_value(key, value)}")
    lines.append("assumptions:")
    lines.extend(f"  - {a}" for a in data["assumptions"])
    if prof is not None:
        lines.append(f"run written to {prof.dirpath} (hpuprof analyze / dashboard open it)")
    return "\n".join(lines)
