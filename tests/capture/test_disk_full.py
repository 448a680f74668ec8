"""A disk that fills mid-run never ends the profiled program (issue 27): the trace keeps every
event written before the failed write (valid, loadable), recording stops, the failure is said
once on stderr and in `run.json`, and the script ends with its own exit code.

The writer's tests fail writes by hand (no root needed); the end-to-end runs, on the CPU
backend (`HPUProfiler` in a script) and the emulated one (`hpuprof record --emulate`), fill a
small tmpfs (mounting one needs root: skipped elsewhere, saying so), which the script fills
after its 11th step, as another writer would."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

import hpuprof
from hpuprof.capture import stream_writer
from hpuprof.capture.run_dir import RunPaths, read_manifest
from hpuprof.capture.run_end import RunEnd
from hpuprof.capture.run_writer import RunWriter
from hpuprof.capture.stream_writer import ChunkedTraceWriter
from hpuprof.errors import OutputError

from .helpers import REPO, child_env


def _ev(i: int) -> dict[str, Any]:
    return {"ph": "X", "cat": "cpu_op", "name": f"op{i}", "pid": 1, "tid": 1, "ts": i, "dur": 1}


class _DiskFills:
    """`os.pwrite` that writes only part of what it is given, then fails ENOSPC, once `armed`
    (and until the write shrinks the file: truncation frees space, as on a real disk)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.armed = False
        self.failures = 0
        real = os.pwrite

        def pwrite(fd: int, data: Any, pos: int) -> int:
            if self.armed and len(data) > 16:
                self.failures += 1
                if self.failures == 1:
                    return real(fd, bytes(data)[:7], pos)  # a short write first
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return real(fd, data, pos)

        monkeypatch.setattr(stream_writer.os, "pwrite", pwrite)


def test_failed_append_leaves_the_file_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    disk = _DiskFills(monkeypatch)
    writer = ChunkedTraceWriter(tmp_path / "t.json", {"schemaVersion": 1})
    writer.write([_ev(i) for i in range(5)])
    disk.armed = True
    with pytest.raises(OutputError, match="disk full"):
        writer.write([_ev(i) for i in range(5, 50)])
    assert disk.failures == 2  # the short write was continued, then failed
    data = orjson.loads(writer.path.read_bytes())  # valid JSON: the half-written chunk is gone
    assert [e["name"] for e in data["traceEvents"]] == [f"op{i}" for i in range(5)]
    disk.armed = False
    writer.write([_ev(50)])  # room again: the file goes on from where it was
    assert orjson.loads(writer.close().read_bytes())["traceEvents"][-1]["name"] == "op50"


def _run_writer(tmp_path: Path) -> RunWriter:
    paths = RunPaths(tmp_path, "job", 0)
    paths.prepare()
    writer = RunWriter(paths)
    writer.open({"schemaVersion": 1})
    writer.announce({"ranks": [0], "world_size": 1, "status": "running"})
    return writer


def test_run_writer_never_raises_a_failed_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    disk = _DiskFills(monkeypatch)
    writer = _run_writer(tmp_path)
    assert (writer.scratch_dir / "reserve").stat().st_size > 0
    writer.emit([_ev(i) for i in range(3)])
    disk.armed = True
    writer.emit([_ev(i) for i in range(3, 40)])  # fails: said, not raised
    writer.emit([_ev(99)])  # dropped: nothing more goes to the trace
    writer.emit_raw(orjson.dumps(_ev(98)))
    assert writer.failed
    assert not (writer.scratch_dir / "reserve").exists()  # freed for the end of the run
    disk.armed = False
    writer.finish(RunEnd("completed"), errors=[], metrics=lambda: None, extra={})
    said = [line for line in capsys.readouterr().err.splitlines() if "disk full" in line]
    assert len(said) == 1 and said[0].startswith("hpuprof: warning:"), said
    manifest = read_manifest(tmp_path)
    assert "keeps the 3 events" in manifest["write_error"]
    assert manifest["write_error"] in manifest["warnings"]
    trace = hpuprof.load(tmp_path, cache=False)
    assert sorted(trace.events["name"]) == ["op0", "op1", "op2"]


# --- end to end on a small tmpfs -------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 5 MiB tmpfs (the run starts: 4 MiB must be free)."""
    mount = tmp_path / "fs"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=5m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here (needs root): {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


FILL_DISK = """
def fill_disk(path):  # another writer takes every byte left on the run's disk
    import errno
    with open(path, "wb", buffering=0) as ballast:
        try:
            while True:
                ballast.write(bytes(1 << 16))
        except OSError as error:
            assert error.errno == errno.ENOSPC, error
"""

CPU_SCRIPT = (
    FILL_DISK
    + """
import sys, torch
from hpuprof.capture.profiler import HPUProfiler
from hpuprof.capture.schedule import schedule
with HPUProfiler(sys.argv[1], backend="cpu", schedule=schedule(wait=0, warmup=0, active=1),
                 record_shapes=True) as prof:
    x = torch.ones(64, 64)
    for i in range(STEPS):
        for _ in range(20):
            x = torch.mm(x, x) * 0.01 + 1
        prof.step()
        if i == 10:
            fill_disk(sys.argv[2])
print("script done", i + 1, flush=True)
sys.exit(7)
"""
)

EMULATED_SCRIPT = (
    FILL_DISK
    + """
import sys, torch
import habana_frameworks.torch.core as htcore
dev = torch.device("hpu")
model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
model = model.to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(STEPS):
    loss = model(torch.randn(32, 64).to(dev)).pow(2).mean()
    loss.backward()
    htcore.mark_step()
    opt.step()
    opt.zero_grad()
    htcore.mark_step()
    if step == 10:
        fill_disk(sys.argv[1])
print("script done", step + 1, flush=True)
sys.exit(5)
"""
)

STEPS = 40


def _check_run(run: Path, done: subprocess.CompletedProcess[str], code: int, steps: int) -> None:
    said = done.stderr + done.stdout
    assert done.returncode == code, said[-3000:]  # the script's own exit code (no SIGSEGV)
    assert f"script done {steps}" in done.stdout, said[-3000:]
    warnings = [line for line in said.splitlines() if line.startswith("hpuprof: warning: disk")]
    assert len(warnings) == 1, said[-3000:]
    manifest = read_manifest(run)
    assert "recording stopped" in manifest["write_error"]
    for rel in manifest["traces"]:
        orjson.loads((run / rel).read_bytes())  # valid JSON on disk
    assert len(hpuprof.load(run, cache=False).events) > 100


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_cpu_backend_survives_a_full_disk(small_disk: Path) -> None:
    pytest.importorskip("torch")
    run = small_disk / "run"
    script = CPU_SCRIPT.replace("STEPS", str(STEPS))
    done = subprocess.run(
        [sys.executable, "-c", script, str(run), str(small_disk / "ballast")],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=500,
        check=False,
    )
    _check_run(run, done, 7, STEPS)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_emulated_record_survives_a_full_disk(small_disk: Path, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    script = tmp_path / "train.py"
    script.write_text(EMULATED_SCRIPT.replace("STEPS", str(STEPS)))
    run = small_disk / "run"
    cli = "from hpuprof.cli.main import run; run()"
    command = [sys.executable, "-c", cli, "record", "--emulate", "--no-summary", "-o", str(run)]
    done = subprocess.run(
        [*command, "--", "python", str(script), str(small_disk / "ballast")],
        env=child_env(),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=500,
        check=False,
    )
    _check_run(run, done, 5, STEPS)
