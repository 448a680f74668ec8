"""Crash trials: `hpuprof record` of a small training script, ended at random points.

Each trial runs `hpuprof record --window-steps 1 -- python train.py` (the real CLI path, in a
process forked from a zygote that imported torch -- and enabled the emulator, or put the fake
bridge on `sys.path` -- once, so a trial costs a fraction of a second) and ends it one way:

    exception  the script raises at a random step, at a random point of the step
    exit       the script calls `os._exit(3)` there (nothing of ours runs after it)
    SIGINT, SIGTERM, SIGKILL   sent at a random moment: during start-up, inside a random
               step (a random delay after the step before it was seen done), or while the
               run is being written (after the script's last line)
    none       the script runs to its end (the baseline, and the clock for the random moments)

The script prints `done <i>` after each optimizer step returned, i.e. after step i was
streamed. Each trial is one JSON line on stdout; `test_kill_trials.py` checks them (the run
loads, every printed step is in it, `run.json` says how the run ended, nothing left behind).

    python -m tests.capture.kill_trials --backend cpu --trials 20 --out DIR [--seed N]
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import random
import re
import signal
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

MODES = ("exception", "exit", "SIGINT", "SIGTERM", "SIGKILL")
BACKENDS = ("emulated", "cpu", "gaudi")
POINTS = ("start", "before", "middle", "after")
_DONE = re.compile(r"done (\d+)")
STEPS = 6

SCRIPT = """
import os, sys
import torch

backend, mode, fail_step, fail_point = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
steps = int(sys.argv[5])
if backend == "emulated":
    import habana_frameworks.torch.core as htcore
    device, mark_step = "hpu", htcore.mark_step
else:
    device, mark_step = "cpu", lambda: None


def fail(point, i):
    if i == fail_step and point == fail_point:
        if mode == "exception":
            raise RuntimeError(f"boom at step {i} ({point})")
        if mode == "exit":
            os._exit(3)


fail("start", fail_step)
model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
model = model.to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.ones(8, 16).to(device)
for i in range(steps):
    fail("before", i)
    loss = model(x).sum()
    loss.backward()
    mark_step()
    fail("middle", i)
    opt.step()
    mark_step()
    opt.zero_grad()
    print(f"done {i}", flush=True)
    fail("after", i)
print("finished", flush=True)
"""

FAKE_BRIDGE = {
    "habana_frameworks/__init__.py": "",
    "habana_frameworks/torch/__init__.py": "",
    "habana_frameworks/torch/core/__init__.py": "",
    "habana_frameworks/torch/hpu/__init__.py": "def get_device_name():\n    return 'GAUDI2'\n",
    "habana_frameworks/torch/hpu/metrics.py": (
        "class _M:\n"
        "    def stats(self):\n"
        "        return [('TotalNumber', 1)]\n"
        "def metric_global(name):\n"
        "    return _M() if name == 'graph_compilation' else None\n"
    ),
}
"""A stand-in for the real bridge (no Gaudi here): what the Gaudi backend imports."""


@dataclass(frozen=True)
class Trial:
    """One trial as run. `status`: the exit code, or minus the signal that killed it."""

    backend: str
    mode: str
    index: int
    run_dir: str
    fail_step: int
    fail_point: str
    kill_after: int
    kill_at_s: float  # -1: no signal was sent (none to send, or the child ended first)
    status: int
    duration_s: float
    done: list[int]
    finished: bool


def prepare_zygote(backend: str, out: Path) -> None:
    """Import what every trial needs once, before forking (torch.profiler's first start
    imports torch._dynamo and torch._inductor: seconds a trial need not pay again). The signal
    dispositions are a foreground `python`'s, however the zygote itself was started (a
    background job inherits SIGINT ignored)."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    import torch
    import torch._dynamo
    import torch._inductor

    import hpuprof.cli.main
    import hpuprof.trace.load
    import hpuprof.trace.perfetto_write  # noqa: F401

    if backend == "emulated":
        import hpusim

        hpusim.enable(mode="lazy", device="gaudi2")
        import habana_frameworks.torch.core  # noqa: F401
    elif backend == "gaudi":
        root = out / "fake-bridge"
        for rel, text in FAKE_BRIDGE.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        sys.path.insert(0, str(root))
    import torch.profiler  # noqa: F401


def _child(argv: list[str], trial_dir: Path) -> None:
    """In the forked child: stdout/stderr to files, then `hpuprof record ...`; never returns."""
    code = 70
    try:
        for fd, name in ((1, "stdout.txt"), (2, "stderr.txt")):
            handle = os.open(trial_dir / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(handle, fd)
            os.close(handle)
        import faulthandler

        faulthandler.enable()
        from hpuprof.cli.main import main

        code = main(argv)
        sys.stdout.flush()
        sys.stderr.flush()
    except KeyboardInterrupt:  # SIGINT before hpuprof's CLI was even running
        code = 130
    finally:
        os._exit(code)


def _status(wait_status: int) -> int:
    if os.WIFSIGNALED(wait_status):
        return -os.WTERMSIG(wait_status)
    return os.WEXITSTATUS(wait_status)


def _observed(trial_dir: Path) -> tuple[list[int], bool]:
    try:
        lines = (trial_dir / "stdout.txt").read_text(errors="replace").splitlines()
    except OSError:
        return [], False
    # a signal can land inside `print`, between a line and its newline: "done 5hpuprof: ..."
    done = [int(m.group(1)) for m in map(_DONE.match, lines) if m]
    return done, "finished" in lines


def _progress(trial_dir: Path) -> int:
    """-2 before the child has started (its stdout file is not there yet), -1 before the first
    step was done, i after step i, STEPS once the script finished."""
    if not (trial_dir / "stdout.txt").exists():
        return -2
    done, finished = _observed(trial_dir)
    return STEPS if finished else (done[-1] if done else -1)


@dataclass(frozen=True)
class Spec:
    """One trial to run. `kill_after`: the progress (see `_progress`) after which the signal
    goes, `kill_delay_s` later (-1: after the child started; a signal sent before, between
    `fork` and Python's after-fork reset, would be dropped, which no real process does)."""

    mode: str
    index: int
    fail_step: int
    fail_point: str
    kill_after: int = -3
    kill_delay_s: float = 0.0


@dataclass
class _Running:
    pid: int
    spec: Spec
    trial_dir: Path
    started: float
    seen: dict[int, float]  # progress -> when first seen
    kill_at: float | None = None
    sent: bool = False


def _gaps(seen: dict[int, float], ended: float) -> dict[int, float]:
    """How long the baseline spent after each progress level: start-up, each step, the end."""
    marks = [*sorted(seen.items()), (STEPS + 1, ended)]
    return {level: max(later - at, 0.01) for (level, at), (_, later) in itertools.pairwise(marks)}


def run_trials(
    backend: str, modes: tuple[str, ...], trials: int, out: Path, seed: int, parallel: int
) -> list[Trial]:
    """Run `trials` trials of each mode (after one `none` baseline); see the module doc."""
    rng = random.Random(seed)
    script = out / "train.py"
    script.write_text(SCRIPT)
    baseline, gaps = _run_batch(backend, [Spec("none", 0, -1, "none")], out, script, 1)
    levels = sorted(gaps)  # -1 start-up, 0 .. STEPS-1 inside steps, STEPS writing the run
    specs: list[Spec] = []
    for mode in modes:
        for i in range(trials):
            step, point = rng.randrange(STEPS), rng.choice(POINTS)
            if mode.startswith("SIG"):
                level = rng.choice(levels)
                specs.append(Spec(mode, i, step, point, level, rng.uniform(0, gaps[level])))
            else:
                specs.append(Spec(mode, i, step, point))
    rng.shuffle(specs)
    return baseline + _run_batch(backend, specs, out, script, parallel)[0]


def _argv(backend: str, spec: Spec, trial_dir: Path, script: Path) -> list[str]:
    return [
        "record",
        "--backend",
        backend,
        "--window-steps",
        "1",
        "--no-summary",
        "-o",
        str(trial_dir / "run"),
        "--",
        "python",
        str(script),
        backend,
        spec.mode,
        str(spec.fail_step),
        spec.fail_point,
        str(STEPS),
    ]


def _run_batch(
    backend: str, specs: list[Spec], out: Path, script: Path, parallel: int
) -> tuple[list[Trial], dict[int, float]]:
    """Run `specs`, `parallel` at a time; also returns the last trial's progress gaps."""
    results: list[Trial] = []
    gaps: dict[int, float] = {}
    queue = list(specs)
    running: dict[int, _Running] = {}
    while queue or running:
        while queue and len(running) < parallel:
            spec = queue.pop(0)
            trial_dir = out / f"{spec.mode}-{spec.index}"
            trial_dir.mkdir(parents=True, exist_ok=True)
            argv = _argv(backend, spec, trial_dir, script)
            pid = os.fork()
            if pid == 0:
                _child(argv, trial_dir)
            running[pid] = _Running(pid, spec, trial_dir, time.monotonic(), {})
        time.sleep(0.002)
        for pid, job in list(running.items()):
            done_pid, wait_status = os.waitpid(pid, os.WNOHANG)
            if done_pid == 0:
                _watch(job)  # after waitpid: a signal is only sent to a live child
                continue
            ended = time.monotonic()
            del running[pid]
            gaps = _gaps(job.seen, ended)
            done, finished = _observed(job.trial_dir)
            spec = job.spec
            results.append(
                Trial(
                    backend=backend,
                    mode=spec.mode,
                    index=spec.index,
                    run_dir=str(job.trial_dir / "run"),
                    fail_step=spec.fail_step,
                    fail_point=spec.fail_point,
                    kill_after=spec.kill_after,
                    kill_at_s=round(job.kill_at - job.started, 3) if job.sent else -1.0,
                    status=_status(wait_status),
                    duration_s=round(ended - job.started, 3),
                    done=done,
                    finished=finished,
                )
            )
    return results, gaps


def _watch(job: _Running) -> None:
    """Note the child's progress; send its signal when the moment has come."""
    now = time.monotonic()
    level = _progress(job.trial_dir)
    for seen in range(-1, level + 1):
        job.seen.setdefault(seen, now)
    spec = job.spec
    if job.kill_at is None and spec.kill_after >= -1 and level >= spec.kill_after:
        job.kill_at = now + spec.kill_delay_s
    if not job.sent and job.kill_at is not None and now >= job.kill_at:
        job.sent = True
        with contextlib.suppress(ProcessLookupError):
            os.kill(job.pid, getattr(signal, spec.mode))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=BACKENDS, required=True)
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--parallel", type=int, default=2)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    prepare_zygote(args.backend, args.out)
    modes = tuple(m for m in args.modes.split(",") if m)
    for trial in run_trials(args.backend, modes, args.trials, args.out, args.seed, args.parallel):
        print(json.dumps(asdict(trial)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
