"""Recording windows: torch.profiler's run cut into windows streamed while the run goes on, so
a killed run keeps all but its last window -- at step boundaries, and on a main-thread timer in
code that has no steps at all (`hpuprof record -- python script.py` with no optimizer)."""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path

import orjson
import pytest

from hpuprof.capture.profiler import HPUProfiler
from hpuprof.capture.run_dir import read_manifest
from hpuprof.capture.run_end import run_end
from hpuprof.capture.windows import WindowPolicy
from hpuprof.errors import UsageError

from .helpers import REPO, child_env, names, read_trace, try_load

torch = pytest.importorskip("torch")


def _streamed(prof: HPUProfiler) -> list[dict[str, object]]:
    """The events on disk right now (the incomplete file is valid JSON after every chunk)."""
    events: list[dict[str, object]] = orjson.loads(prof.trace_path.read_bytes())["traceEvents"]
    return events


def _ops(events: list[dict[str, object]]) -> int:
    return sum(e.get("name") == "aten::mm" for e in events)


def test_first_windows_are_short_then_window_s(tmp_path: Path) -> None:
    """A run killed a few seconds in loses little: 1, 2, 4, 8 s, then `window_s` each."""
    prof = HPUProfiler(tmp_path, backend="cpu", window_s=10.0)
    policy = prof.session.policy
    lengths = [policy.length_ns(done) for done in range(7)]
    assert lengths == [int(s * 1e9) for s in (1, 2, 4, 8, 10, 10, 10)]
    assert policy.length_ns(10_000) == int(10e9)  # no overflow however long the run
    assert WindowPolicy(0.5).length_ns(0) == int(0.5e9)
    assert WindowPolicy(None).length_ns(0) is None
    assert HPUProfiler(tmp_path, backend="cpu", window_s=None).session.policy.seconds is None


def test_when_a_window_is_due() -> None:
    by_time, by_steps = WindowPolicy(10.0), WindowPolicy(None, steps=3)
    assert not by_time.due(0, steps_in_window=99, ns_in_window=999_999_999)
    assert by_time.due(0, steps_in_window=0, ns_in_window=1_000_000_000)
    assert not by_time.due(2, steps_in_window=0, ns_in_window=3_999_999_999)  # 3rd: 4 s
    assert not by_steps.due(5, steps_in_window=2, ns_in_window=10**15)
    assert by_steps.due(0, steps_in_window=3, ns_in_window=0)
    assert by_time.quiet_too_long(1, 2_000_000_000) and not by_steps.quiet_too_long(0, 10**15)
    for bad in ({"seconds": 0}, {"seconds": -1.0}, {"steps": 0}):
        with pytest.raises(UsageError):
            WindowPolicy(**bad)  # type: ignore[arg-type]


def test_step_windows_stream_every_n_steps(tmp_path: Path) -> None:
    x = torch.ones(8, 8)
    with HPUProfiler(tmp_path, backend="cpu", window_s=None, window_steps=2) as prof:
        on_disk = []
        for _ in range(6):
            x = torch.mm(x, x) * 0.1
            prof.step()
            on_disk.append(_ops(_streamed(prof)))
    assert on_disk == [0, 2, 2, 4, 4, 6]  # each window whole on disk when it ends
    assert prof.windows == 3
    trace = read_trace(tmp_path / "traces" / "trace-rank0.pt.trace.json")
    steps = [n for n in names(trace, "user_annotation") if n.startswith("ProfilerStep#")]
    assert steps == [f"ProfilerStep#{i}" for i in range(6)]  # no step cut or repeated
    assert names(trace).count("aten::mm") == 6
    process_names = [e for e in trace["traceEvents"] if e.get("name") == "process_name"]
    assert len(process_names) == len({(e["pid"], e["args"]["name"]) for e in process_names})


def test_step_spans_enclose_their_ops(tmp_path: Path) -> None:
    x = torch.ones(8, 8)
    with HPUProfiler(tmp_path, backend="cpu", window_s=None, window_steps=1) as prof:
        for _ in range(3):
            x = torch.mm(x, x) * 0.1
            prof.step()
    trace = try_load(tmp_path)
    events = trace.events
    steps = events[events["name"].str.startswith("ProfilerStep#")]
    mms = events[events["name"] == "aten::mm"]
    assert len(steps) == 3 and len(mms) == 3
    for (_, step), (_, mm) in zip(steps.iterrows(), mms.iterrows(), strict=True):
        assert step["ts_ns"] <= mm["ts_ns"]
        assert mm["ts_ns"] + mm["dur_ns"] <= step["ts_ns"] + step["dur_ns"]


def test_time_windows_at_steps(tmp_path: Path) -> None:
    x = torch.ones(8, 8)
    with HPUProfiler(tmp_path, backend="cpu", window_s=0.15) as prof:
        for _ in range(8):
            x = torch.mm(x, x) * 0.1
            time.sleep(0.05)
            prof.step()
        streamed_before_stop = _ops(_streamed(prof))
    assert 2 <= prof.windows <= 5  # a window about every third step, at a step boundary
    assert streamed_before_stop >= 4
    assert (
        names(read_trace(tmp_path / "traces" / "trace-rank0.pt.trace.json")).count("aten::mm") == 8
    )


def test_timer_windows_without_steps(tmp_path: Path) -> None:
    """No step, no optimizer: the ticker borrows the main thread between two bytecodes."""
    x = torch.ones(8, 8)
    with HPUProfiler(tmp_path, backend="cpu", window_s=0.2) as prof:
        ticker = prof.hooks.ticker
        assert ticker is not None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and prof.windows < 2:
            x = torch.mm(x, x) * 0.1
            time.sleep(0.002)  # a blocking call: the tick waits for it to return
        streamed = _ops(_streamed(prof))
        assert prof.windows >= 2, (ticker.ticks, ticker.skipped, ticker.errors)
        assert streamed > 0
    assert not ticker.errors
    assert not any(t.name == "hpuprof-window-ticker" for t in threading.enumerate())


def test_user_span_across_a_window_is_cut_not_lost(tmp_path: Path) -> None:
    x = torch.ones(8, 8)
    prof = HPUProfiler(tmp_path, backend="cpu", window_s=None, window_steps=1)
    with prof, torch.profiler.record_function("outer"):
        for _ in range(2):
            x = torch.mm(x, x) * 0.1
            prof.step()
    trace = read_trace(tmp_path / "traces" / "trace-rank0.pt.trace.json")
    assert names(trace, "user_annotation").count("outer") == 1  # the part in the 1st window


@pytest.mark.skipif(
    not (REPO / "runtime" / "hpusim").is_dir(), reason="the emulated runtime is not here"
)
def test_emulated_timer_drains_the_sink_without_steps(tmp_path: Path) -> None:
    code = f"""
import time, sys
import hpusim
hpusim.enable(mode="eager")
import torch
from hpuprof.capture.profiler import HPUProfiler
prof = HPUProfiler({str(tmp_path)!r}, backend="emulated", window_s=0.2).start()
x = torch.ones(8, 8).to("hpu")
deadline = time.monotonic() + 20
while prof.windows < 2 and time.monotonic() < deadline:
    x = (x @ x) * 0.1
print("ops on disk" if b"aten::mm" in prof.trace_path.read_bytes() else "nothing", flush=True)
time.sleep(60)
"""
    import subprocess
    import sys

    child = subprocess.Popen(
        [sys.executable, "-c", code], env=child_env(), stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "ops on disk"
    child.kill()
    assert child.wait(60) == -signal.SIGKILL
    trace = try_load(tmp_path)
    assert (trace.events["name"] == "aten::mm").sum() > 0
    assert run_end(read_manifest(tmp_path)).state == "killed"


STEPLESS = """
import glob, time, torch
x = torch.ones(32, 32)
said = False
n = 0
while True:
    x = torch.mm(x, x) * 0.01
    n += 1
    if not said and n % 200 == 0:
        on_disk = b"".join(open(p, "rb").read() for p in glob.glob("run/traces/*.incomplete.json"))
        if on_disk.count(b'"PyTorch Profiler (0)"') >= 3:  # one per torch.profiler window
            print("3 windows on disk", flush=True)
            said = True
"""


def test_record_kill_9_of_a_stepless_script_keeps_its_windows(tmp_path: Path) -> None:
    """The issue's case: no optimizer, no schedule, `kill -9` -> the windows before it stay."""
    import subprocess
    import sys

    script = tmp_path / "script.py"
    script.write_text(STEPLESS)
    out = tmp_path / "run"
    child = subprocess.Popen(
        [
            *(sys.executable, "-c", "from hpuprof.cli.main import run; run()", "record"),
            *("--window-s", "0.5", "--backend", "cpu", "-o", str(out)),
            *("--", "python", str(script)),
        ],
        env=child_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=tmp_path,
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "3 windows on disk"
    child.kill()
    assert child.wait(60) == -signal.SIGKILL
    manifest = read_manifest(out)
    assert manifest["traces"] == ["traces/script-rank0.pt.trace.incomplete.json"]
    trace = try_load(out)
    names = trace.events["name"]
    assert (names == "PyTorch Profiler (0)").sum() >= 3
    assert (names == "aten::mm").sum() > 0
    assert run_end(manifest).state == "killed"
