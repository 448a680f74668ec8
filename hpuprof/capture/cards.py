"""`hpuprof record --emulate --cards N -- python script.py`: N emulated cards, one process each.

Like `torchrun --nproc-per-node N` on an 8-card Gaudi server: every card is a child process
running `hpuprof record --emulate ... -- python script.py` with `RANK`, `LOCAL_RANK`,
`WORLD_SIZE`, `LOCAL_WORLD_SIZE`, `MASTER_ADDR=127.0.0.1` and a free `MASTER_PORT`, all writing
their rank's trace into one run directory. If a card fails, the others are stopped (they would
wait forever in their next collective) and the first failure's exit status is returned; Ctrl-C
stops them all.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from hpuprof.capture.profiler import default_run_dir
from hpuprof.capture.runner import split_command
from hpuprof.errors import HpuprofError, UsageError

GRACE_S = 10.0
"""How long the other cards get to exit after one failed, before they are killed."""


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (the rendezvous of the cards' process group)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def card_env(rank: int, cards: int, port: int) -> dict[str, str]:
    """The environment of card `rank` (torchrun's variables)."""
    env = dict(os.environ)
    env.update(
        RANK=str(rank),
        LOCAL_RANK=str(rank),
        WORLD_SIZE=str(cards),
        LOCAL_WORLD_SIZE=str(cards),
        GROUP_RANK="0",
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
    )
    return env


def launch_cards(cards: int, record_args: Sequence[str], command: Sequence[str], out: Path) -> int:
    """Run `hpuprof record <record_args> -o out -- <command>` once per card; the exit status.

    Args:
        cards: how many emulated cards (processes).
        record_args: `hpuprof record` options for every card (without -o and --cards).
        command: the script command line (`python train.py ...`).
        out: the run directory shared by the cards.
    """
    if cards < 1:
        raise UsageError("--cards must be 1 or more")
    port = free_port()
    base = [sys.executable, "-c", "from hpuprof.cli.main import run; run()", "record"]
    argv = [*base, *record_args, "-o", str(out), "--", *command]
    procs = [subprocess.Popen(argv, env=card_env(r, cards, port)) for r in range(cards)]
    status = 0
    try:
        pending = dict(enumerate(procs))
        while pending:
            for rank, proc in list(pending.items()):
                code = proc.poll()
                if code is None:
                    continue
                del pending[rank]
                if code != 0 and status == 0:
                    status = code
                    print(f"hpuprof: card {rank} exited with status {code}; stopping the others",
                          file=sys.stderr)  # fmt: skip
                    _stop(list(pending.values()))
            time.sleep(0.05)
    except KeyboardInterrupt:
        _stop(procs)
        return 130
    return status


def _stop(procs: Sequence[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + GRACE_S
    for proc in procs:
        try:
            proc.wait(timeout=max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def record_cards(
    cards: int,
    command: list[str],
    emulate: bool,
    mode: str,
    device: str,
    output: Path | None,
    schedule: str | None,
    backend: str | None,
    record_shapes: bool,
    with_stack: bool,
    card_options: Sequence[str] = (),
) -> int:
    """`hpuprof record --cards N`: check the options, launch the cards, summarize the run.
    `card_options`: further `hpuprof record` options every card gets as they are."""
    if not (emulate or backend == "emulated"):
        raise UsageError("--cards starts emulated cards: add --emulate")
    if not command:
        raise UsageError("nothing to record: give a command after --, e.g. -- python train.py")
    split_command(command)  # a missing script is an error before any card starts
    args = ["--emulate", "--mode", mode, "--device", device]
    args += ["--record-shapes" if record_shapes else "--no-record-shapes"]
    args += ["--with-stack"] if with_stack else []
    args += ["--schedule", schedule] if schedule else []
    args += card_options
    out = output or default_run_dir()
    status = launch_cards(cards, args, command, out)
    print(f"hpuprof: {cards} emulated cards written to {out}")
    if status == 0:
        _summary(out)
    return status


def _summary(out: Path) -> None:
    """The distributed findings of the run, rank by rank in this process."""
    # the loaders and analyses (pandas): only once the cards are done
    from hpuprof.distributed.runner import analyze_files
    from hpuprof.trace.load import directory_trace_files

    try:
        report, _ = analyze_files(directory_trace_files(out), ["distributed"], workers=1)
    except HpuprofError as error:
        print(f"hpuprof: no distributed summary: {error}", file=sys.stderr)
        return
    for finding in report.findings[:5]:
        print(f"  {finding.severity}: {finding.title}")
    print(f"  more: hpuprof analyze {out} --report distributed --workers 2")
