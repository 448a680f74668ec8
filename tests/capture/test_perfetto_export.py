"""The Perfetto trace is made after the run, never by `stop()` in the training process:
`HPUProfiler.export_perfetto()`, `hpuprof convert RUN_DIR`, `hpuprof record` (in
test_record_demo.py); `run.json`'s `perfetto` names only files that exist."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from hpuprof.capture.perfetto_export import export_run, perfetto_name
from hpuprof.capture.profiler import HPUProfiler
from hpuprof.capture.run_dir import read_manifest
from hpuprof.cli.main import main
from hpuprof.errors import UsageError

from .helpers import child_env, spawn

torch = pytest.importorskip("torch")


def _record(root: Path, filename: str = "trace") -> HPUProfiler:
    with HPUProfiler(root, filename=filename, backend="cpu", window_s=None) as prof:
        torch.mm(torch.ones(4, 4), torch.ones(4, 4))
    return prof


def _slice_names(path: Path) -> set[str]:
    pb2 = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")
    message = pb2.Trace()
    message.ParseFromString(path.read_bytes())
    named = {p.track_event.name for p in message.packet if p.HasField("track_event")}
    interned = {
        n.name
        for p in message.packet
        if p.HasField("interned_data")
        for n in p.interned_data.event_names
    }
    return named | interned


def test_stop_writes_no_perfetto_and_export_perfetto_does(tmp_path: Path) -> None:
    prof = _record(tmp_path)
    assert prof.files["perfetto"] == [] and read_manifest(tmp_path)["perfetto"] == []
    assert not (tmp_path / "perfetto").exists() or not any((tmp_path / "perfetto").iterdir())
    written = prof.export_perfetto()
    assert written == tmp_path / "perfetto" / "trace-rank0.perfetto-trace"
    assert prof.files["perfetto"] == ["perfetto/trace-rank0.perfetto-trace"]
    assert read_manifest(tmp_path)["perfetto"] == ["perfetto/trace-rank0.perfetto-trace"]
    assert "aten::mm" in _slice_names(written)


def test_export_perfetto_before_stop_is_a_usage_error(tmp_path: Path) -> None:
    prof = HPUProfiler(tmp_path, backend="cpu", window_s=None).start()
    try:
        with pytest.raises(UsageError, match="after stop"):
            prof.export_perfetto()
    finally:
        prof.stop()


def test_convert_run_dir_writes_each_finished_rank(tmp_path: Path) -> None:
    _record(tmp_path, "job")
    running = HPUProfiler(
        tmp_path, filename="job", backend="cpu", rank=1, window_s=None, handle_signals=False
    ).start()
    try:  # rank 1 is still running: its stream is not converted
        assert main(["convert", str(tmp_path)]) == 0
        manifest = read_manifest(tmp_path)
        assert manifest["perfetto"] == ["perfetto/job-rank0.perfetto-trace"]
        assert (tmp_path / "perfetto" / "job-rank0.perfetto-trace").is_file()
        assert not (tmp_path / "perfetto" / "job-rank1.perfetto-trace").exists()
    finally:
        running.stop()


def test_a_failed_conversion_is_a_warning_in_run_json(tmp_path: Path) -> None:
    _record(tmp_path)
    trace = tmp_path / "traces" / "trace-rank0.pt.trace.json"
    trace.write_bytes(b"not json at all")
    with pytest.warns(UserWarning, match="Perfetto trace not written"):
        [done] = export_run(tmp_path)
    assert done.perfetto is None and "Perfetto trace not written" in done.warning
    manifest = read_manifest(tmp_path)
    assert manifest["perfetto"] == []
    assert done.warning in manifest["warnings"]
    assert not [p for p in (tmp_path / "perfetto").iterdir()]  # no half-written file


def test_convert_of_a_directory_that_is_no_run_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not a run directory"):
        export_run(tmp_path)
    assert main(["convert", str(tmp_path)]) == 2


def test_perfetto_names() -> None:
    assert perfetto_name("traces/x-rank3.pt.trace.json") == "perfetto/x-rank3.perfetto-trace"
    assert perfetto_name("traces/y.json.gz") == "perfetto/y.perfetto-trace"


SIGTERM_WHILE_WRITING = """
import sys, time
from hpuprof.capture.signals import fatal_signals_raise
from hpuprof.trace.atomic_write import atomic_output
with fatal_signals_raise():
    with atomic_output(sys.argv[1]) as out:
        out.write(b"half")
        print("writing", flush=True)
        time.sleep(60)
print("survived", flush=True)
"""


@pytest.mark.parametrize("ignored", [False, True])
def test_a_fatal_signal_while_converting_removes_the_half_file_then_kills(
    tmp_path: Path, ignored: bool
) -> None:
    """`record` converts after the run, its signal handlers given back: SIGTERM still ends the
    process as before, without leaving a dot-named temporary file; an ignored one stays so."""
    target = tmp_path / "out.perfetto-trace"
    code = SIGTERM_WHILE_WRITING
    if ignored:  # the signal changes nothing: the write goes on to its end
        code = code.replace("time.sleep(60)", "time.sleep(2)")
        code = "import signal; signal.signal(signal.SIGTERM, signal.SIG_IGN)\n" + code
    child = subprocess.Popen(
        [sys.executable, "-c", code, str(target)],
        env=child_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stdout.readline().strip() == "writing"
    child.send_signal(signal.SIGTERM)
    out, err = child.communicate(timeout=120)
    if ignored:
        assert child.returncode == 0 and out.strip() == "survived", err
        assert target.read_bytes() == b"half"
    else:
        assert child.returncode == -signal.SIGTERM, err
        assert "survived" not in out
        assert not target.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_fatal_signals_raise_leaves_the_handlers_as_they_were() -> None:
    from hpuprof.capture.signals import HANDLED, fatal_signals_raise

    before = [signal.getsignal(s) for s in HANDLED]
    with fatal_signals_raise():
        pass
    assert [signal.getsignal(s) for s in HANDLED] == before
    child = spawn(
        "import signal\n"
        "from hpuprof.capture.signals import fatal_signals_raise\n"
        "with fatal_signals_raise():\n"
        "    print(signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL)\n"
        "print(signal.getsignal(signal.SIGTERM) is signal.SIG_DFL)\n"
    )
    out, err = child.communicate(timeout=120)
    assert out.split() == [b"True", b"True"], err
