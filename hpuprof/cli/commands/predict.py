"""`hpuprof predict [options] -- python script.py args`: a script's step time on a Gaudi.

Runs the script under the emulated runtime on fake tensors (no compute, no memory for data) with
the projected timeline, and prints the modeled step time, throughput, MFU, compilations, peak
HBM and where the time goes (`hpusim.predict`). `-o RUNDIR` also records the run (projected
trace, metrics, run.json with the prediction) for `analyze` and the dashboard.
"""

from __future__ import annotations

import json
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import Any

import click

from hpuprof.cli.command import command, option

HELP = """Predict a script's step time, throughput, MFU, compilations and peak HBM on a Gaudi.

The script runs unchanged on the emulated Gaudi with fake tensors (shapes only), so a large
model's step is simulated in seconds. Steps end at optimizer.step() (mark_step in inference
loops). Values read on the host (.item(), bool(), .tolist()) get deterministic stand-ins and a
warning. Every figure is MODELED; --format json prints the keys documented in
docs/device-model.md. Several devices or card counts (--device gaudi2,gaudi3 --cards 1,8,64)
run the script once and print one table, each other combination replayed from that run.
"""

FORMATS = ("text", "json")
DEVICES = ("gaudi2", "gaudi3")
"""The device profiles (runtime/hpusim/data/device_profiles.json)."""
SERVER_CARDS = 8
"""Cards of one Gaudi server (HLS): a card count is 1-8, or whole servers."""
_PERCENT = {"mfu_pct", "host_bound_pct", "comm_pct"}


@dataclass(frozen=True)
class WhatIfRow:
    """One combination of a what-if: its prediction's JSON, whether it is the combination the
    script ran on, and what it cost (the run's seconds for that one, the replay's for others)."""

    prediction: dict[str, Any]
    is_run: bool
    run_s: float
    seconds: float


def _split(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def parse_devices(value: str) -> list[str]:
    """`gaudi2,gaudi3` -> the devices, each once, in order; UsageError naming the choices."""
    from hpuprof.errors import UsageError

    names = _split(value)
    bad = [n for n in names if n not in DEVICES]
    if bad or not names:
        raise UsageError(
            f"--device {value!r}: {'unknown ' + ', '.join(map(repr, bad)) if bad else 'empty'}; "
            f"choose from {', '.join(DEVICES)} (several separated by commas)"
        )
    return list(dict.fromkeys(names))


def parse_cards(value: str) -> list[int]:
    """`1,8,64` -> the card counts, each once, in order; UsageError naming the choices."""
    from hpuprof.errors import UsageError

    choices = f"1-{SERVER_CARDS} in one server or a multiple of {SERVER_CARDS} (whole servers),"
    out: list[int] = []
    for text in _split(value) or [value]:
        n = int(text) if text.isdigit() else 0
        if n < 1 or (n > SERVER_CARDS and n % SERVER_CARDS):
            raise UsageError(
                f"--cards {value!r}: {text!r} is not a card count; choose {choices} "
                "several separated by commas (e.g. 1,8,64)"
            )
        out.append(n)
    return list(dict.fromkeys(out))


def _check_host_sides(devices: list[str]) -> None:
    """A what-if keeps the run's host timeline: every device must model the host alike."""
    from hpusim.device_model import load_profile  # (the emulator: only when predicting)
    from hpusim.whatif import check_host_side

    from hpuprof.errors import UsageError

    try:
        for other in devices[1:]:
            check_host_side(load_profile(devices[0]), load_profile(other))
    except ValueError as error:
        raise UsageError(f"--device: {error}") from None


@command(
    "predict",
    help=HELP,
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
)
@click.pass_context
@option(
    "--device",
    default="gaudi2",
    help="gaudi2 | gaudi3, or several separated by commas (one run, a what-if per device).",
)
@option(
    "--cards",
    default="1",
    help="Data-parallel cards (each runs the batch): 1-8 in one server or a multiple of 8; "
    "several separated by commas (e.g. 1,8,64) for a what-if table from one run.",
)
@option("--steps", type=int, help="Stop the script after this many steps (default: all).")
@option("--tokens-per-step", type=int, help="Tokens per step per card, if not from input ids.")
@option(
    "--max-batch",
    "max_batch",
    metavar="ARG",
    help="Search the script's batch argument ARG (e.g. --batch) for the largest value that "
    "fits each device's HBM, by bisection over runs of the script.",
)
@option("--mode", default="lazy", help="lazy | eager | compile.")
@option("--format", "fmt", default="text", help="text | json.")
@option("-o", "--output", type=click.Path(path_type=Path), help="Also write a run directory.")
def predict(
    ctx: click.Context,
    device: str,
    cards: str,
    steps: int | None,
    tokens_per_step: int | None,
    max_batch: str | None,
    mode: str,
    fmt: str,
    output: Path | None,
) -> int:
    if _watch():
        from hpuprof.capture.script_failure import run_watched

        options: dict[str, Any] = {"--device": device, "--cards": cards, "--steps": steps}
        options |= {"--tokens-per-step": tokens_per_step, "--mode": mode, "--format": fmt}
        options["--max-batch"] = max_batch
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
        max_batch=max_batch,
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
    cards: int | str = 1,
    steps: int | None = None,
    tokens_per_step: int | None = None,
    mode: str = "lazy",
    fmt: str = "text",
    output: Path | None = None,
    max_batch: str | None = None,
) -> int:
    """Run `command` on fake tensors and print the prediction; returns the script's exit code.
    A script that fails gets its error and where on stderr instead (script_failure). Several
    devices or card counts: one run, replayed for each combination (`hpusim.whatif`).
    `max_batch`: the script's batch argument, searched for the largest value that fits."""
    from hpuprof.errors import UsageError

    devices = parse_devices(device)
    card_counts = parse_cards(str(cards))
    if fmt not in FORMATS:
        raise UsageError(f"--format {fmt!r}: choose one of {', '.join(FORMATS)}")
    if steps is not None and steps < 1:
        raise UsageError(f"--steps {steps}: must be at least 1")
    if tokens_per_step is not None and tokens_per_step < 1:
        raise UsageError(f"--tokens-per-step {tokens_per_step}: must be at least 1")
    if not command:
        raise UsageError("nothing to predict: give a command after --, e.g. -- python train.py")
    whatif = len(devices) * len(card_counts) > 1
    if whatif:
        _check_host_sides(devices)
    if max_batch is not None:
        if output is not None:
            raise UsageError("-o with --max-batch: record the batch it finds in a run of its own")
        plan = (devices, card_counts, steps or MAX_BATCH_STEPS, tokens_per_step, mode, whatif)
        return _max_batch(command, max_batch, plan, fmt)
    result = _predict_run(
        command, devices[0], max(card_counts), steps, tokens_per_step, mode, output, whatif
    )
    if isinstance(result, int):
        return result
    one, code, prof = result
    if not whatif:
        data = one.live.to_json()
        if prof is not None:
            _write_prediction(prof.dirpath, data)
        print(json.dumps(data, indent=2) if fmt == "json" else format_text(data, prof))
        return code
    table = whatif_rows(one, [(d, c) for d in devices for c in card_counts])
    doc = whatif_json(table)
    if prof is not None:  # the trace is the run's: its own prediction, the what-if beside it
        _write_prediction(prof.dirpath, one.live.to_json(), whatif=doc)
    print(json.dumps(doc, indent=2) if fmt == "json" else format_whatif(doc, prof))
    return code


MAX_BATCH_STEPS = 2
"""Steps per run of a `--max-batch` search unless `--steps` says: the second step holds the
optimizer's states beside the activations."""


class _ScriptFailed(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def _max_batch(command: list[str], arg: str, plan: tuple[Any, ...], fmt: str) -> int:
    """`--max-batch ARG`: search (hpuprof.capture.max_batch), then each device's combinations
    at its largest batch, as the what-if table with a batch column."""
    from hpusim.device_model import load_profile

    from hpuprof.capture.max_batch import batch_value, search_max_batch, with_batch

    devices, card_counts, steps, tokens_per_step, mode, whatif = plan
    runs: dict[int, Any] = {}
    codes: list[int] = []

    def peak_of(batch: int) -> int:
        result = _predict_run(
            with_batch(command, arg, batch), devices[0], max(card_counts), steps,
            tokens_per_step, mode, None, whatif,
        )  # fmt: skip
        if isinstance(result, int):
            raise _ScriptFailed(result)
        runs[batch] = result[0]
        codes.append(result[1])
        return int(result[0].peak_bytes)

    capacities = {d: load_profile(d).usable_hbm_bytes for d in devices}
    try:
        search = search_max_batch(peak_of, capacities, batch_value(command, arg) or 1)
    except _ScriptFailed as failed:
        return failed.code
    rows: list[WhatIfRow] = []
    for d in devices:
        batch = search.largest[d] or min(runs)  # none fits: the smallest batch tried, failing
        for row in whatif_rows(runs[batch], [(d, c) for c in card_counts]):
            rows.append(WhatIfRow({**row.prediction, "batch": batch}, *astuple(row)[1:]))
    doc = whatif_json(rows)
    doc["script_runs"] = search.runs
    doc["max_batch"] = {
        "argument": arg,
        "largest": {d: search.largest[d] or None for d in devices},
        "at_search_limit": [d for d in devices if search.at_limit[d]],
        "tried": [{"batch": b, "peak_hbm_gib": peak / 2**30} for b, peak in search.tried],
    }
    print(json.dumps(doc, indent=2) if fmt == "json" else format_whatif(doc))
    return max(codes, default=0)


def _predict_run(
    command: list[str],
    device: str,
    cards: int,
    steps: int | None,
    tokens_per_step: int | None,
    mode: str,
    output: Path | None,
    whatif: bool,
) -> Any:
    """Run the script once on `device` x `cards`: the script's exit code when it failed, else
    (`hpusim.whatif.OneRun`, exit code, profiler or None)."""
    import contextlib
    import sys
    import time

    from hpuprof.capture.record_session import disable_emulator, enable_emulator
    from hpuprof.capture.runner import ScriptOutcome, run_script, split_command
    from hpuprof.capture.script_failure import describe

    kind, target, _ = split_command(command)
    enable_emulator(mode, device, "projected", compute="fake", cards=cards)
    from hpusim import state
    from hpusim.device_model import load_profile
    from hpusim.fake import standin_sites
    from hpusim.host_fake import no_data_hint
    from hpusim.predict import StepLedger, StopPrediction, summarize
    from hpusim.whatif import CapacityWatch, Combination, OneRun, WorkLog

    rt = state.require_runtime()
    log = WorkLog() if whatif else None
    watch = CapacityWatch(rt.alloc, [p.usable_hbm_bytes for p in map(load_profile, DEVICES)])
    ledger = StepLedger(rt, max_steps=steps, tokens_per_step=tokens_per_step, log=log)
    ledger.install()
    if whatif:
        watch.install()
    prof = _profiler(output, command) if output is not None else None
    outcome = ScriptOutcome(0)
    t0 = time.perf_counter()
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
        watch.uninstall()
    failure = describe(outcome, target if kind == "script" else None)
    if failure is not None:
        disable_emulator()
        hint = no_data_hint(outcome.error) if outcome.error is not None else None
        print(f"hpuprof: error: {failure}; no prediction", file=sys.stderr)
        if hint is not None:
            print(f"hpuprof: {hint}", file=sys.stderr)
        return outcome.exit_code
    code = outcome.exit_code
    live = summarize(ledger, exit_code=code, standins=standin_sites())
    run_s = time.perf_counter() - t0
    disable_emulator()
    return OneRun(live, Combination(device, cards), ledger.facts(code, live.standins), log,
                  watch, run_s), code, prof  # fmt: skip


def whatif_rows(one: Any, combos: list[tuple[str, int]]) -> list[WhatIfRow]:
    """Each combination's prediction from the one run (`hpusim.whatif.OneRun`), timed."""
    import time

    from hpusim.whatif import Combination

    rows = []
    for d, c in combos:
        t0 = time.perf_counter()
        pred = one.predict(Combination(d, c))
        seconds = time.perf_counter() - t0
        rows.append(WhatIfRow(pred.to_json(), one.run == Combination(d, c), one.seconds, seconds))
    return rows


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


def _write_prediction(
    root: Path, data: dict[str, Any], whatif: dict[str, Any] | None = None
) -> None:
    from hpuprof.capture.run_dir import update_manifest
    from hpuprof.trace.atomic_write import write_bytes_atomic

    write_bytes_atomic(root / "prediction.json", (json.dumps(data, indent=2) + "\n").encode())
    entries = {"prediction": "prediction.json", "timeline": "projected"}
    if whatif is not None:
        write_bytes_atomic(root / "whatif.json", (json.dumps(whatif, indent=2) + "\n").encode())
        entries["whatif"] = "whatif.json"
    update_manifest(root, entries)


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


WHATIF_COLUMNS = (
    ("device", "device"),
    ("cards", "cards"),
    ("step time", "step_time_s"),
    ("samples/s", "samples_per_s"),
    ("tokens/s", "tokens_per_s"),
    ("MFU", "mfu_pct"),
    ("peak HBM GiB", "peak_hbm_gib"),
    ("fits", "fits"),
)
"""The what-if table's columns (label, prediction key)."""


def whatif_json(rows: list[WhatIfRow]) -> dict[str, Any]:
    """What `--format json` prints for several combinations: one prediction per combination
    (the single-combination keys), the script run once, what each extra combination cost."""
    run = next(r for r in rows if r.is_run)
    return {
        "script_runs": 1,
        "run": {
            "device": run.prediction["device"],
            "cards": run.prediction["cards"],
            "seconds": run.run_s,
        },
        "predictions": [r.prediction for r in rows],
        "replay_seconds": [None if r.is_run else r.seconds for r in rows],
    }


def _cell(key: str, value: Any) -> str:
    if key == "peak_hbm_gib" and isinstance(value, float):
        return f"{value:.1f}"
    if key == "step_time_s" and isinstance(value, float):
        return f"{value * 1e3:,.1f} ms"
    if key in ("samples_per_s", "tokens_per_s") and isinstance(value, float):
        return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"
    return _fmt_value(key, value)


def _largest(device: str, batch: int | None, search: dict[str, Any]) -> str:
    if batch is None:
        return f"{device}: none (not even 1)"
    limit = " (the search's limit)" if device in search["at_search_limit"] else ""
    return f"{device}: {batch}{limit}"


def format_whatif(doc: dict[str, Any], prof: Any = None) -> str:
    """The what-if as one table (every figure MODELED), then where a combination runs out of
    memory and the assumptions (those of every combination once, then each one's own)."""
    preds = doc["predictions"]
    run = doc["run"]
    columns = list(WHATIF_COLUMNS)
    search = doc.get("max_batch")
    if search is not None:
        columns.insert(2, (search["argument"], "batch"))
    header = [label for label, _ in columns]
    body = [[_cell(k, p.get(k)) for _, k in columns] for p in preds]
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
    first = preds[0]
    lines = [
        f"hpuprof predict: what if, {len(preds)} combinations from one run of the script on "
        f"{run['device']} x {run['cards']} ({first['mode']} mode, {first['steps']} step(s), "
        f"{run['seconds']:.1f} s; MODELED)",
        "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)),
    ]
    if search is not None:
        lines[0] = (
            f"hpuprof predict: the largest {search['argument']} that fits, by bisection over "
            f"{doc['script_runs']} runs of the script ({first['mode']} mode, {first['steps']} "
            "step(s) each; MODELED): "
            + ", ".join(_largest(d, b, search) for d, b in search["largest"].items())
        )
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in body]
    extra = [s for s in doc["replay_seconds"] if s is not None]
    if extra:
        lines.append(
            f"each other combination: replayed in {max(extra):.3f} s at most "
            f"({100 * max(extra) / run['seconds']:.1f} % of the run)"
        )
    for p in preds:
        if p.get("oom_at"):
            lines.append(f"{p['device']} x {p['cards']} would run out of memory at {p['oom_at']}")
    applies: dict[str, list[str]] = {}  # each assumption once, with the combinations it is of
    for p in preds:
        for a in p["assumptions"]:
            applies.setdefault(a, []).append(f"{p['device']} x {p['cards']}")
    lines.append("assumptions (of every combination unless named):")
    for a, combos in applies.items():
        lines.append(f"  - {a}" + ("" if len(combos) == len(preds) else f" ({', '.join(combos)})"))
    if prof is not None:
        lines.append(f"run written to {prof.dirpath} (hpuprof analyze / dashboard open it)")
    return "\n".join(lines)
