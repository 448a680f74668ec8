"""Why a script under `hpuprof predict` gets no prediction: its error and where, or the signal
that killed it.

A prediction of a run that did not finish would be a figure for a step that never ran, so a
script that raised, exited non-zero or was killed gets one line on stderr instead. `describe`
names the exception and the script's own line it came from (the deepest frame in the script's
file; the deepest frame at all for `python -m`); `run_watched` runs the prediction in a child
process so that a script the kernel kills (the out-of-memory killer sends SIGKILL) is reported
with its signal and peak memory, as no process can report its own SIGKILL.
"""

from __future__ import annotations

import os
import subprocess
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from hpuprof.capture.runner import ScriptOutcome
from hpuprof.capture.signals import signal_name

WATCHED_ENV: Final = "HPUPROF_PREDICT_CHILD"
"""Set in the child that runs the prediction (it does not watch itself again)."""


def script_frame(error: BaseException, script: str | None) -> str:
    """`file:line (in function)` of the frame the error came from: the deepest one in
    `script`'s file, else the deepest one."""
    frames = traceback.extract_tb(error.__traceback__)
    if not frames:
        return "<unknown line>"
    target = str(Path(script).resolve()) if script else None
    mine = [f for f in frames if target is not None and _same_file(f.filename, target)]
    frame = (mine or frames)[-1]
    return f"{frame.filename}:{frame.lineno} (in {frame.name})"


def _same_file(filename: str, target: str) -> bool:
    try:
        return str(Path(filename).resolve()) == target
    except OSError:
        return False


def describe(outcome: ScriptOutcome, script: str | None) -> str | None:
    """One line saying why `outcome` gets no prediction, or None when the script finished."""
    error = outcome.error
    if outcome.exit_code == 0:
        return None
    if error is None or isinstance(error, SystemExit):
        return f"the script exited with status {outcome.exit_code}"
    text = str(error).strip().splitlines()
    message = f": {text[0]}" if text else ""
    return (
        f"the script failed at {script_frame(error, script)} with {type(error).__name__}{message}"
    )


def run_watched(argv: Sequence[str]) -> int:
    """Run `hpuprof <argv>` in a child (stdout / stderr passed through) and return its exit
    code; a child killed by a signal gets a line saying which, and its peak memory."""
    env = dict(os.environ)
    env[WATCHED_ENV] = "1"
    code = "import sys; from hpuprof.cli.main import main; sys.exit(main(sys.argv[1:]))"
    proc = subprocess.Popen([sys.executable, "-c", code, *argv], env=env)
    while True:
        try:
            _, status, usage = os.wait4(proc.pid, 0)
            break
        except KeyboardInterrupt:  # the child got the same SIGINT: it ends its own way
            continue
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode >= 0:
        return proc.returncode
    signum = -proc.returncode
    peak_gb = usage.ru_maxrss * 1024 / 1e9  # KiB on Linux
    hint = " (the kernel's out-of-memory killer sends SIGKILL)" if signum == 9 else ""
    print(
        f"hpuprof: error: the script was killed by {signal_name(signum)} after reaching "
        f"{peak_gb:.1f} GB of host memory{hint}; no prediction",
        file=sys.stderr,
    )
    return 128 + signum


__all__ = ["WATCHED_ENV", "describe", "run_watched", "script_frame"]
