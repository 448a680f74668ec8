"""Two recordings of one rank into one run directory at once (issue 27): `hpuprof record`
refuses the second before its script runs, naming the directory and the other run's pid; an
`HPUProfiler` inside a script says so once and lets the script run to its own end."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hpuprof.capture.run_dir import read_manifest
from hpuprof.capture.run_lock import RankLock, RunDirectoryBusyError

from .helpers import child_env, spawn, try_load

pytest.importorskip("torch")

CLI = "from hpuprof.cli.main import run; run()"
HOLDER = """
import sys, torch
from hpuprof.capture.profiler import HPUProfiler
with HPUProfiler({out!r}, backend="cpu", filename="first") as prof:
    x = torch.ones(4, 4)
    x = torch.mm(x, x)
    print("ready", flush=True)
    sys.stdin.readline()  # holds the run until the test says
    x = torch.mm(x, x)
print("first done", flush=True)
"""

SECOND = """
import sys, torch
from hpuprof.capture.profiler import HPUProfiler
with HPUProfiler(sys.argv[1], backend="cpu", filename="second") as prof:
    for _ in range(3):
        torch.mm(torch.ones(4, 4), torch.ones(4, 4))
        prof.step()
print("second ran to its end", flush=True)
print(prof.summary(), flush=True)
assert prof.export_perfetto() is None
sys.exit(7)
"""


def _holding(out: Path) -> subprocess.Popen[bytes]:
    child = subprocess.Popen(
        [sys.executable, "-c", HOLDER.format(out=str(out))],
        env=child_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stdout is not None
    line = child.stdout.readline()
    assert line.strip() == b"ready", child.stderr.read() if child.stderr else line
    return child


def _while_held(
    holder: subprocess.Popen[bytes], code_and_args: list[str]
) -> subprocess.CompletedProcess[str]:
    """`python -c CODE ARGS...` run to its end while `holder` records, then `holder` ends."""
    try:
        return subprocess.run(
            [sys.executable, "-c", *code_and_args],
            env=child_env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        out, err = holder.communicate(b"go\n", timeout=120)
        assert holder.returncode == 0 and b"first done" in out, err


def test_hpuprof_record_refuses_a_busy_directory_before_the_script_runs(tmp_path: Path) -> None:
    out = tmp_path / "run"
    holder = _holding(out)
    marker = tmp_path / "script-ran"
    script = tmp_path / "train.py"
    script.write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    record = ["record", "--backend", "cpu", "--no-summary", "-o", str(out)]
    second = _while_held(holder, [CLI, *record, "--", "python", str(script)])
    assert second.returncode == 3, second.stderr
    assert not marker.exists()  # refused at the start: the script never ran
    message = second.stderr.strip()
    assert message.count("\n") == 0 and "Traceback" not in message
    assert str(out) in message and f"process {holder.pid}" in message
    manifest = read_manifest(out)  # the first run is whole, and alone
    assert manifest["end_state"] == "completed" and manifest["pids"] == {"0": holder.pid}
    assert manifest["traces"] == ["traces/first-rank0.pt.trace.json"]
    assert (try_load(out).events["name"] == "aten::mm").sum() == 2


def test_a_profiler_in_a_script_on_a_busy_directory_warns_and_lets_it_finish(
    tmp_path: Path,
) -> None:
    out = tmp_path / "run"
    holder = _holding(out)
    second = _while_held(holder, [SECOND, str(out)])
    assert second.returncode == 7, second.stderr  # the script's own exit code
    assert "second ran to its end" in second.stdout
    assert "not recorded" in second.stdout  # summary() says why
    warnings = [line for line in second.stderr.splitlines() if line.startswith("hpuprof:")]
    assert len(warnings) == 1, second.stderr
    assert str(out) in warnings[0] and f"process {holder.pid}" in warnings[0]
    manifest = read_manifest(out)
    assert manifest["traces"] == ["traces/first-rank0.pt.trace.json"]
    assert not list((out / "traces").glob("second-*"))
    assert (try_load(out).events["name"] == "aten::mm").sum() == 2


def test_the_lock_goes_with_a_killed_holder(tmp_path: Path) -> None:
    code = (
        "import sys, time\n"
        "from hpuprof.capture.run_lock import RankLock\n"
        f"RankLock(__import__('pathlib').Path({str(tmp_path)!r}), 0).acquire()\n"
        "print('held', flush=True)\n"
        "time.sleep(600)\n"
    )
    child = spawn(code)
    assert child.stdout is not None and child.stdout.readline().strip() == b"held"
    with pytest.raises(RunDirectoryBusyError) as busy:
        RankLock(tmp_path, 0).acquire()
    assert busy.value.holder == child.pid and busy.value.exit_code == 3
    other_rank = RankLock(tmp_path, 1)
    other_rank.acquire()  # ranks of one run take different locks
    other_rank.release()
    child.kill()
    child.wait(60)
    mine = RankLock(tmp_path, 0)
    mine.acquire()  # kill -9 left no stale lock
    mine.release()
