"""`hpuprof info DIR` summarizes rank files one by one (and caches each file's part): the figures
are those of the combined trace, on a first and on a cached run."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import pytest

from hpuprof.cli.main import main
from hpuprof.trace.combine import combine
from hpuprof.trace.load import load_file
from hpuprof.trace.summary import summarize
from hpuprof.trace.trace_file import trace_files
from tests.conftest import SAMPLE_TRACES, shared_trace_files


def _write(path: Path, rank: int | None, names: list[str], start_us: float) -> None:
    events = [
        {"ph": "X", "cat": "cpu_op" if i % 2 else "user_annotation", "name": name, "pid": 1,
         "tid": 1, "ts": start_us + 10 * i, "dur": 5, "args": {}}
        for i, name in enumerate(names)
    ]  # fmt: skip
    trace: dict[str, object] = {"traceEvents": events}
    if rank is not None:
        trace["distributedInfo"] = {"rank": rank}
    path.write_text(json.dumps(trace))


def _info_json(
    directory: Path, capsys: pytest.CaptureFixture[str], *extra: str
) -> dict[str, object]:
    assert main(["info", "--json", *extra, str(directory)]) == 0
    return json.loads(capsys.readouterr().out)


def _combined(directory: Path) -> dict[str, object]:
    traces = [load_file(f, cache=False) for f in trace_files(directory)]
    return summarize(combine(traces)).to_dict()


def test_directory_figures_are_the_combined_traces_first_and_cached(
    tmp_path: Path, cache_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    _write(run / "b.json", 1, ["aten::mm", "aten::add", "aten::mm"], 100)
    _write(run / "a.json", 0, ["aten::add", "step", "aten::relu", "aten::add"], 40)
    _write(run / "c.json", 2, [], 0)  # an empty rank
    expected = json.loads(json.dumps(_combined(run)))
    assert _info_json(run, capsys) == expected
    assert len(os.listdir(cache_dir / "summaries")) == 3
    assert not list(cache_dir.glob("*.arrow"))  # only the summaries: no events table stored
    assert _info_json(run, capsys) == expected  # from the cached parts


def test_shared_ranks_are_numbered_in_file_order_and_warned_each_run(
    tmp_path: Path, cache_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    for i in range(3):
        _write(run / f"w{i}.json", None, ["aten::mm"] * (i + 1), 10 * i)
    with pytest.warns(UserWarning, match="share ranks"):
        expected = json.loads(json.dumps(_combined(run)))
    for _ in range(2):
        with pytest.warns(UserWarning, match=r"share ranks \[0, 0, 0\]"):
            assert _info_json(run, capsys) == expected
    assert expected["ranks"] == [0, 1, 2]


def test_a_changed_file_is_read_again_and_no_cache_writes_nothing(
    tmp_path: Path, cache_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    _write(run / "a.json", 0, ["x"], 0)
    _write(run / "b.json", 1, ["y"], 0)
    assert _info_json(run, capsys, "--no-cache")["events"] == 2
    assert not cache_dir.exists()
    assert _info_json(run, capsys)["events"] == 2
    _write(run / "b.json", 1, ["y", "z", "w"], 0)
    assert _info_json(run, capsys)["events"] == 4


def _info_run(directory: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Any, ...]:
    """Exit code, stdout, stderr and warnings of `hpuprof info DIR` (no cache)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code = main(["info", "--no-cache", str(directory)])
    out = capsys.readouterr()
    return code, out.out, out.err, [str(w.message) for w in caught]


def test_quick_summaries_print_what_full_loads_print(
    tmp_path: Path,
    cache_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A folder of the samples (two share rank 0) and shared real traces, then with an invalid
    file and with an empty file added: the same output, byte for byte, whether its small files
    are summarized from their raw columns or loaded fully."""
    import hpuprof.trace.progress
    import hpuprof.trace.quick_part

    monkeypatch.setattr(hpuprof.trace.progress, "DELAY_S", 1e9)  # (no bar: its timing differs)
    run = tmp_path / "run"
    run.mkdir()
    for i, sample in enumerate(sorted(SAMPLE_TRACES.glob("emulated_*/traces/*.json"))[:4]):
        shutil.copy(sample, run / f"{i}-{sample.name}")
    for i, shared in enumerate(shared_trace_files()[:6]):
        if shared.stat().st_size < 2 << 20:
            shutil.copy(shared, run / f"shared-{i}-{shared.name}")
    variants = {
        "plain": None,
        "invalid": b'{"traceEvents": [{"ph": "X", "ts": "a"}]}',
        "empty": b"",
    }
    for name, extra in variants.items():
        if extra is not None:
            (run / f"zz-{name}.json").write_bytes(extra)
        quick = _info_run(run, capsys)
        with monkeypatch.context() as patch:
            patch.setattr(hpuprof.trace.quick_part, "quick_part", lambda _path: None)
            full = _info_run(run, capsys)
        assert quick == full, name
        assert (quick[0] == 0) == (extra is None), quick
        if extra is not None:
            (run / f"zz-{name}.json").unlink()


def _small_files(run: Path, count: int) -> None:
    run.mkdir()
    for i in range(count):
        _write(run / f"w{i:03d}.json", i % 7, ["aten::mm", "aten::add"][: i % 3], 10 * i)
    cut = run / "w050-cut.json"
    _write(cut, 50, ["aten::mm"] * 4, 0)
    cut.write_bytes(cut.read_bytes()[:-30])


def test_worker_processes_print_what_one_process_prints(
    tmp_path: Path,
    cache_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Files read by worker processes (in tasks of 3): the same output, warnings in the same
    order (a cut file's, loaded here; ranks shared), first and cached, as in this process."""
    import hpuprof.trace.part_workers as workers
    import hpuprof.trace.progress

    monkeypatch.setattr(hpuprof.trace.progress, "DELAY_S", 1e9)
    run = tmp_path / "run"
    _small_files(run, 40)
    with monkeypatch.context() as patch:
        patch.setattr(workers, "POOL_MIN_FILES", 10**9)
        alone = _info_run(run, capsys)
    monkeypatch.setattr(workers, "POOL_MIN_FILES", 2)
    monkeypatch.setattr(workers, "FILES_PER_TASK", 3)
    assert workers._worker_count(41) == min(len(os.sched_getaffinity(0)), workers.MAX_WORKERS)
    assert _info_run(run, capsys) == alone
    assert "truncated" in alone[3][0] and "share ranks" in alone[3][1]
    for _ in range(2):  # the workers fill the summary cache, then read it
        with pytest.warns(UserWarning, match="share ranks"):
            assert main(["info", str(run)]) == 0
        assert capsys.readouterr().out == alone[1]
    assert len(os.listdir(cache_dir / "summaries")) == 14  # one entry a task of 3 files
    with pytest.warns(UserWarning, match="share ranks"):
        events = _info_json(run, capsys)["events"]
    _write(run / "w039.json", 4, ["a"] * 9, 0)  # (it had no event; in the 14th task)
    with pytest.warns(UserWarning, match="share ranks"):
        assert _info_json(run, capsys)["events"] == events + 9
    assert len(os.listdir(cache_dir / "summaries")) == 15  # only that task's entry is new


@pytest.mark.skipif(not hasattr(signal, "pthread_sigmask"), reason="POSIX signals")
def test_ctrl_c_with_worker_processes_exits_130_and_leaves_nothing(tmp_path: Path) -> None:
    """SIGINT to the whole process group (a terminal's Ctrl-C) while workers read: one line,
    exit 130, no worker's traceback, no worker left, no temporary file left in the cache."""
    run = tmp_path / "run"
    _small_files(run, 1500)
    env = {**os.environ, "HPUPROF_CACHE_DIR": str(tmp_path / "cache")}
    command = [
        sys.executable,
        "-c",
        "import sys; from hpuprof.cli.main import run; sys.exit(run())",
    ]
    child = subprocess.Popen(
        [*command, "info", str(run)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group, as a terminal's foreground job
        # with Ctrl-C's default action, as a terminal's job has it (a test run in the
        # background, `cmd &`, ignores SIGINT, and a child would inherit that)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 60
    while not list((tmp_path / "cache").glob("summaries/*.json")):  # the workers are reading
        assert child.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    os.killpg(child.pid, signal.SIGINT)
    out, err = child.communicate(timeout=60)
    assert child.returncode == 130, err
    assert out == b"" and b"Traceback" not in err and b"hpuprof: interrupted" in err
    with pytest.raises(ProcessLookupError):  # no process of its group is left
        os.killpg(child.pid, 0)
    assert not list((tmp_path / "cache").rglob("*.tmp"))


@pytest.mark.skipif(sys.platform != "linux", reason="workers are forked on Linux only")
def test_workers_ignore_ctrl_c_which_interrupts_the_command_alone() -> None:
    from hpuprof.trace.part_workers import worker_pool

    before = signal.getsignal(signal.SIGINT)
    with worker_pool(1) as pool:
        assert pool.submit(signal.getsignal, signal.SIGINT).result() == signal.SIG_IGN
    assert signal.getsignal(signal.SIGINT) is before  # (here: unchanged)


def test_files_are_read_here_when_no_worker_can_be_started(
    tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hpuprof.trace.part_workers as workers

    class NoFork:
        def submit(self, *_args: object) -> None:
            raise BlockingIOError(11, "Resource temporarily unavailable")  # fork's EAGAIN

        def shutdown(self, **_kwargs: object) -> None:
            pass

    run = tmp_path / "run"
    _small_files(run, 6)
    files = sorted(run.iterdir())
    monkeypatch.setattr(workers, "worker_pool", lambda _count: NoFork())
    monkeypatch.setattr(workers, "_worker_count", lambda _files: 2)
    parts = list(workers.quick_parts(files, cache=False))
    assert [p is None for p in parts] == [f.name.endswith("cut.json") for f in files]
    assert [p.events for p in parts if p is not None] == [0, 1, 2, 0, 1, 2]
