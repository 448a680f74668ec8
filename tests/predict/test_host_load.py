"""The projected host clock does not depend on this machine's load: the same script predicted
on an idle machine and with a busy loop on every core gives the same step time (its host
side is the script's own Python, counted in thread CPU time and blocked time, never the time
its thread waits for a CPU)."""

from __future__ import annotations

import json
import statistics
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")

LOAD_TOLERANCE = 0.03
"""The issue's 3 %, beside this machine's own step-to-step noise measured in the same run.
Measured here (2026-11-29, 31 periods of 96 steps): busy steps 1.001, 1.022, 1.002x their
idle neighbours (noise 0.013-0.027); three whole predictions with the busy loops on for every
step against three with them off: 0.999, 0.964, 1.021x, as far apart as two idle runs (4.95,
5.23 ms). Three stops earlier this comment said 1.03-1.09x with 10 periods; what moved it
since is not isolated."""

SCRIPT = textwrap.dedent(
    """
    import os, signal, subprocess, sys, time
    import torch
    import habana_frameworks.torch.core as htcore

    BUSY = "import time\\nend = time.time() + 60\\nwhile time.time() < end:\\n    pass\\n"
    busy = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(os.cpu_count() or 1)]
    try:
        model = torch.nn.Sequential(
            torch.nn.Linear(128, 256), torch.nn.GELU(), torch.nn.Linear(256, 10)
        ).to("hpu")
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        for step in range(STEPS):
            # every third step runs with a busy loop on every core, the others without
            for p in busy:
                os.kill(p.pid, signal.SIGCONT if step % 3 == 2 else signal.SIGSTOP)
            # the script's own host work: a few ms of pure Python (a data pipeline's parsing)
            label = 0
            for i in range(WORK):
                label = (label * 31 + i + step) % 10
            SLEEP
            x = torch.randn(32, 128).to("hpu")
            y = torch.full((32,), label, dtype=torch.long).to("hpu")
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            htcore.mark_step()
            opt.step()
            opt.zero_grad(set_to_none=True)
            htcore.mark_step()
    finally:
        for p in busy:
            p.kill()
            p.wait()
    """
)


def _script(tmp_path: Path, steps: int, work: int, sleep_s: float = 0.0) -> Path:
    path = tmp_path / "train.py"
    sleep = f"time.sleep({sleep_s})" if sleep_s else "pass"
    text = SCRIPT.replace("STEPS", str(steps)).replace("WORK", str(work))
    path.write_text(text.replace("SLEEP", sleep))
    return path


def _neighbour_ratios(
    run_predict: Callable[..., tuple[int, str, str]], script: Path
) -> tuple[list[float], list[float]]:
    """Per period of three steps after warm-up (idle, idle, busy): the second idle step's
    time over the first's (A/A), and the busy step's over the idle step's before it (A/B)."""
    code, out, err = run_predict(str(script))
    assert code == 0, err
    doc: dict[str, Any] = json.loads(out)
    # the prediction says which host it assumes and how the script's host time was counted
    assert any("Gaudi server (Intel Xeon)" in a for a in doc["assumptions"]), doc["assumptions"]
    t = doc["step_times_s"]
    first = max(int(doc["warmup_steps"]), 1)
    first += -first % 3  # the first idle step of a period
    periods = range(first, len(t) - 2, 3)
    return [t[i + 1] / t[i] for i in periods], [t[i + 2] / t[i + 1] for i in periods]


def test_prediction_is_the_same_idle_and_with_every_core_busy(
    tmp_path: Path, run_predict: Callable[..., tuple[int, str, str]]
) -> None:
    """One prediction in which every third step runs with a busy loop on every core (the
    script stops and resumes them): the median busy step is within `LOAD_TOLERANCE` of the
    idle step before it, plus this machine's own step-to-step noise (the median deviation of
    an idle step from the idle step before it). Step by step, because this shared machine's
    speed drifts by tens of % within seconds whatever the load (one run's idle steps went 20,
    12, 11 ms), moving a step and its neighbour alike; on a quiet machine the noise is ~0.
    Counting wall time instead made busy steps 2.5-4.7x the idle ones."""
    aa, ab = _neighbour_ratios(run_predict, _script(tmp_path, steps=96, work=60_000))
    assert len(ab) >= 30
    noise = statistics.median(abs(r - 1) for r in aa)
    assert abs(statistics.median(ab) - 1) <= LOAD_TOLERANCE + noise, (ab, aa)


def test_a_sleep_in_the_script_is_host_time(
    tmp_path: Path, run_predict: Callable[..., tuple[int, str, str]]
) -> None:
    """A `time.sleep` is as long on a Gaudi host: it lengthens the predicted step by itself
    (it vanished when the host clock counted CPU time only)."""
    steps = []
    for sleep_s in (0.0, 0.03):
        code, out, err = run_predict(str(_script(tmp_path, steps=6, work=0, sleep_s=sleep_s)))
        assert code == 0, err
        steps.append(json.loads(out)["step_time_s"])
    assert 0.027 <= steps[1] - steps[0] <= 0.036, steps
