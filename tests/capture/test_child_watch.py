"""Every child of a recorded run ends with it (issue 24): a recorder killed by SIGTERM or SIGKILL
leaves no process of the script's behind; a normal end leaves them as `python script.py` would."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hpuprof.capture.child_watch import Process, descendants, end_processes, start_time

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/task").is_dir(), reason="the child watch needs Linux's /proc"
)

CLI = "from hpuprof.cli.main import run; run()"

SCRIPT = """\
import subprocess, sys, time
from pathlib import Path
# a child, and a grandchild whose parent (the child) does not wait for it
child = subprocess.Popen([sys.executable, "-c",
    "import subprocess, sys, time; g = subprocess.Popen(['sleep', '300']);"
    "open(sys.argv[1], 'w').write(str(g.pid)); time.sleep(300)", sys.argv[2]])
Path(sys.argv[1]).write_text(str(child.pid))
while not Path(sys.argv[2]).exists() or not Path(sys.argv[2]).read_text():
    time.sleep(0.05)
Path(sys.argv[3]).write_text("started")
if sys.argv[4] == "wait":
    time.sleep(300)
"""


def _alive(pid: int) -> bool:
    """Running (not gone, not a zombie waiting for its reaper)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat.rpartition(b")")[2].split()[0] != b"Z"


def _wait_for(path: Path, proc: subprocess.Popen[bytes], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert proc.poll() is None, (path.parent / "out.txt").read_text()
        assert time.monotonic() < deadline, f"{path} never written"
        time.sleep(0.1)


def _record(tmp_path: Path, ending: str) -> tuple[subprocess.Popen[bytes], list[int]]:
    """`hpuprof record -- python script.py`, once the script's child and grandchild run:
    (the recorder, [child pid, grandchild pid])."""
    script = tmp_path / "spawns.py"
    script.write_text(SCRIPT)
    child, grandchild, started = (tmp_path / n for n in ("child", "grandchild", "started"))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            CLI,
            "record",
            "--no-summary",
            "--no-perfetto",
            "-o",
            str(tmp_path / "run"),
            "--",
            "python",
            str(script),
            str(child),
            str(grandchild),
            str(started),
            ending,
        ],
        stdout=(tmp_path / "out.txt").open("wb"),
        stderr=subprocess.STDOUT,
        cwd=tmp_path,
    )  # fmt: skip (a file, not a pipe: the children hold it open after the recorder ends)
    _wait_for(started, proc)
    time.sleep(1.5)  # the watcher notes the subtree about once a second
    return proc, [int(child.read_text()), int(grandchild.read_text())]


def _gone_within(pids: list[int], seconds: float) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.1)
    return [p for p in pids if _alive(p)]


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_a_killed_recorders_children_end_with_it(tmp_path: Path, sig: signal.Signals) -> None:
    proc, pids = _record(tmp_path, "wait")
    try:
        assert all(_alive(p) for p in pids)
        proc.send_signal(sig)
        proc.wait(timeout=60)
        assert proc.returncode == -sig
        assert _gone_within(pids, 20) == []
    finally:
        end_processes([Process(p, s) for p in pids if (s := start_time(p)) is not None], 0)


def test_a_normal_end_leaves_the_scripts_children_running(tmp_path: Path) -> None:
    proc, pids = _record(tmp_path, "return")
    try:
        assert proc.wait(timeout=120) == 0, (tmp_path / "out.txt").read_text()
        time.sleep(2.5)  # longer than the watcher's poll: it would have acted by now
        assert all(_alive(p) for p in pids)
    finally:
        end_processes([Process(p, s) for p in pids if (s := start_time(p)) is not None], 0)
    assert _gone_within(pids, 10) == []


def test_descendants_walks_the_subtree_and_spares_a_reused_pid() -> None:
    sleeper = subprocess.Popen(
        [sys.executable, "-c", "import subprocess, time; subprocess.Popen(['sleep', '60']); time.sleep(60)"]
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        below: list[Process] = []
        while not below and time.monotonic() < deadline:
            below = descendants(sleeper.pid)  # (only this test's subtree: never the worker's)
            time.sleep(0.05)
        assert [p.pid for p in below] != [] and start_time(below[0].pid) == below[0].start
        start = start_time(sleeper.pid)
        assert start is not None
        # a process noted with another start time is a reused pid: not signalled
        assert end_processes([Process(sleeper.pid, start + 1)], 0) == []
        assert sleeper.poll() is None
        found = [Process(sleeper.pid, start), *below]
        assert set(end_processes(found, 5)) == {p.pid for p in found}
        sleeper.wait(timeout=10)
        assert _gone_within([p.pid for p in below], 10) == []
    finally:
        sleeper.kill()
        sleeper.wait()


def test_start_time_reads_past_a_name_with_parentheses(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    (proc / "7").mkdir(parents=True)
    fields = " ".join(str(n) for n in range(3, 30))
    (proc / "7" / "stat").write_text(f"7 (a) b) (c) {fields}\n")
    assert start_time(7, proc) == 22  # field 22 of stat
    assert start_time(8, proc) is None
