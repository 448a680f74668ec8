"""Nothing lost, on every backend: 20 trials each of an exception, `os._exit`, SIGINT, SIGTERM
and SIGKILL at random points of `hpuprof record` (emulated, CPU, and Gaudi against a fake
bridge). Every run directory loads, every step the script saw finish is in it, `run.json` says
how the run ended, and nothing but a killed run's own stream is left behind.

The trials run in `kill_trials.py` (forked from one zygote per backend, about a second each);
`HPUPROF_KILL_TRIALS=N` runs N of each instead of 20 (`make soak` runs more).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hpuprof.capture.run_dir import read_manifest
from hpuprof.capture.run_end import run_end

from .helpers import child_env

pytest.importorskip("torch")

TRIALS = int(os.environ.get("HPUPROF_KILL_TRIALS", "20"))
SEED = int(os.environ.get("HPUPROF_KILL_SEED", "13"))
EXPECTED_END = {
    "none": {"completed"},
    "exception": {"exception"},
    "exit": {"killed"},
    "SIGKILL": {"killed", "completed"},  # completed: the kill came after the run was written
    "SIGTERM": {"signal", "completed"},
    "SIGINT": {"signal", "completed"},
}
EXPECTED_STATUS = {
    "none": {0},
    "exception": {1},
    "exit": {3},
    "SIGKILL": {-signal.SIGKILL},
    "SIGTERM": {-signal.SIGTERM},
    "SIGINT": {130},
}


def _hpusim_available() -> bool:
    try:
        import hpusim
    except ImportError:
        return False
    return hasattr(hpusim, "enable")


def _run_trials(backend: str, out: Path) -> list[dict[str, Any]]:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.capture.kill_trials",
            "--backend",
            backend,
            "--trials",
            str(TRIALS),
            "--seed",
            str(SEED),
            "--out",
            str(out),
        ],
        env=child_env(),
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        timeout=300 + 60 * TRIALS,  # a guard against a hang, not a speed target
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    (out / "trials.jsonl").write_bytes(done.stdout)  # for a look at a failure
    return [json.loads(line) for line in done.stdout.decode().splitlines() if line.startswith("{")]


def _step_numbers(run: Path) -> set[int]:
    import hpuprof

    trace = hpuprof.load(run, cache=False)
    names = trace.events["name"].astype(str)
    steps = names[names.str.startswith("ProfilerStep#")].str.removeprefix("ProfilerStep#")
    return {int(s) for s in steps}


def _leftovers(run: Path) -> list[str]:
    """Dot-named scratch/temporary files and streams a finished run must not leave (the lock
    files stay by design: `.run.json.lock`, `.rank<R>.lock`, see `run_lock.py`)."""
    return sorted(
        p.relative_to(run).as_posix()
        for p in run.rglob("*")
        if (p.name.startswith(".") and not p.name.endswith(".lock"))
        or p.name.endswith(".incomplete.json")
    )


def _stderr_tail(trial_dir: Path) -> str:
    """The last lines the trial's `hpuprof record` wrote to stderr (what a failure was)."""
    try:
        lines = (trial_dir / "stderr.txt").read_text(errors="replace").splitlines()
    except OSError as error:
        return f"(no stderr: {error})"
    return " | ".join(lines[-4:])


def _check(trial: dict[str, Any]) -> str | None:
    """What is wrong with one trial, or None."""
    mode, run = trial["mode"], Path(trial["run_dir"])
    if mode.startswith("SIG") and trial["kill_at_s"] < 0:
        mode = "none"  # the child ended before its moment came: a plain run
    # a SIGINT/SIGTERM that lands as the process exits (in its last `os._exit`) changes
    # nothing: exit 0 is right then, if the run was whole and says completed (checked below)
    late = mode in ("SIGINT", "SIGTERM") and trial["status"] == 0 and trial["finished"]
    if trial["status"] not in EXPECTED_STATUS[mode] and not late:
        return f"exit status {trial['status']}; stderr ends: {_stderr_tail(run.parent)!r}"
    if not (run / "run.json").is_file():
        # only a signal before the profiler started leaves no run (and no step had run)
        if mode.startswith("SIG") and not trial["done"]:
            return None
        return "no run.json"
    try:
        steps = _step_numbers(run)
    except Exception as error:  # the point of the test: report, do not stop at the first
        return f"does not load: {type(error).__name__}: {error}"
    missing = sorted(set(trial["done"]) - steps)
    if missing:
        return f"finished steps missing from the trace: {missing} (has {sorted(steps)})"
    end = run_end(read_manifest(run))
    if end.state not in EXPECTED_END[mode] or (late and end.state != "completed"):
        return f"run.json says {end.state} ({end.detail}), exit status {trial['status']}"
    if end.state == "exception" and end.exception != "RuntimeError":
        return f"exception recorded as {end.exception}"
    if end.state == "signal" and end.signal != mode:
        return f"signal recorded as {end.signal}"
    if mode not in ("SIGKILL", "exit") and _leftovers(run):
        return f"left behind: {_leftovers(run)}"
    return None


@pytest.mark.parametrize(
    "backend",
    [
        pytest.param(
            "emulated",
            marks=pytest.mark.skipif(not _hpusim_available(), reason="no emulated runtime"),
        ),
        "cpu",
        "gaudi",
    ],
)
@pytest.mark.timeout(600 + 60 * TRIALS)
def test_random_kills_lose_nothing(backend: str, tmp_path: Path) -> None:
    trials = _run_trials(backend, tmp_path)
    assert len(trials) == 1 + 5 * TRIALS
    problems = [
        f"{t['mode']}#{t['index']} (step {t['fail_step']} {t['fail_point']}, "
        f"kill at {t['kill_at_s']} s): {problem}"
        for t in trials
        if (problem := _check(t)) is not None
    ]
    assert not problems, f"seed {SEED}, {len(problems)} of {len(trials)}:\n" + "\n".join(problems)
    # not vacuous: most trials got into the run, and the killed ones kept steps
    for mode in ("exception", "exit", "SIGKILL", "SIGTERM", "SIGINT"):
        started = [t for t in trials if t["mode"] == mode and t["done"]]
        assert len(started) >= TRIALS // 2, f"{mode}: only {len(started)} trials reached a step"
    killed = [t for t in trials if t["mode"] == "SIGKILL" and t["done"] and not t["finished"]]
    assert killed, "no SIGKILL landed in the middle of the training loop"
