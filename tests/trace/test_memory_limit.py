"""A load that runs out of memory under an address-space limit (`ulimit -v`) fails with a
`MemoryLimitError` naming the limit (CLI exit 4), never a bare `MemoryError` (exit 70); a
file too large to map under the limit is streamed instead, with the same tables."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hpuprof.cli.main import main
from hpuprof.errors import MemoryLimitError
from hpuprof.trace import formats, memory_limit, rawio
from hpuprof.trace.kineto_json import read_kineto_json
from tests.trace.test_fast_scan import assert_same

ROOT = Path(__file__).parents[2]
SAMPLE = sorted((ROOT / "sample_traces").rglob("*.pt.trace.json"))[0]

_UNDER_LIMIT = r"""
import resource, sys
import hpuprof, hpuprof.trace.kineto_json, hpuprof.trace.normalize, hpuprof.trace.derive
import pandas, pyarrow.compute
from hpuprof.errors import MemoryLimitError
with open("/proc/self/status") as status:
    size = next(int(l.split()[1]) * 1024 for l in status if l.startswith("VmSize"))
# room for a few MiB more: far less than mapping the file and reserving its args takes
resource.setrlimit(resource.RLIMIT_AS, (size + (4 << 20), resource.RLIM_INFINITY))
try:
    hpuprof.load(sys.argv[1], cache=False, threads=1)
except MemoryLimitError as error:
    print("MemoryLimitError", error.exit_code, error)
else:
    print("loaded")
"""


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or memory_limit.address_space_limit() is not None,
    reason="needs Linux (/proc) and no address-space limit already set",
)
def test_a_load_past_the_address_space_limit_names_the_limit(tmp_path: Path) -> None:
    trace = tmp_path / "big.json"
    sys.path.insert(0, str(ROOT / "bench"))
    from gen_synthetic_trace import generate

    generate(trace, 40_000)  # ~9 MB
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-c", _UNDER_LIMIT, str(trace)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    line = done.stdout.strip().splitlines()[-1]
    assert line.startswith("MemoryLimitError 4 "), line
    assert "address-space limit (ulimit -v / RLIMIT_AS)" in line
    assert "MiB was reached" in line and str(trace) in line


def test_out_of_memory_is_one_line_and_exit_4(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def exhausted(self: Any, path: Path, options: Any) -> Any:
        raise MemoryError

    monkeypatch.setattr(type(formats.format_of(SAMPLE)), "read", exhausted)
    monkeypatch.setattr(memory_limit, "address_space_limit", lambda: 3 << 30)
    assert main(["info", str(SAMPLE), "--no-cache"]) == MemoryLimitError.exit_code == 4
    err = capsys.readouterr().err
    assert err.startswith("hpuprof: error: ") and "Traceback" not in err
    assert "address-space limit (ulimit -v / RLIMIT_AS) of 3,072 MiB" in err


def test_a_file_too_large_to_map_under_the_limit_is_streamed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    size = SAMPLE.stat().st_size
    mapped = rawio.map_plain(SAMPLE)
    assert mapped is not None
    mapped.close()
    expected = (read_kineto_json(SAMPLE), [])
    # a limit under which the file would take more than its share of the address space
    monkeypatch.setattr(
        memory_limit, "address_space_limit", lambda: int(size / memory_limit.MAP_SHARE) - 1
    )
    assert rawio.map_plain(SAMPLE) is None
    assert_same((read_kineto_json(SAMPLE), []), expected)


_CLI_UNDER_LIMIT = r"""
import os, resource, sys
from hpuprof.cli.main import main
path, headroom, warm = sys.argv[1], float(sys.argv[2]), sys.argv[3]
main(["info", warm, "--no-cache"])  # every module a load imports, imported first
with open("/proc/self/status") as status:
    size = next(int(l.split()[1]) * 1024 for l in status if l.startswith("VmSize"))
limit = size + int(headroom * os.path.getsize(path))
resource.setrlimit(resource.RLIMIT_AS, (limit, resource.RLIM_INFINITY))
sys.exit(main(["info", path, "--no-cache"]))
"""


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or memory_limit.address_space_limit() is not None,
    reason="needs Linux (/proc) and no address-space limit already set",
)
@pytest.mark.parametrize(("headroom", "exits"), [(0, {4}), (2, {0, 4}), (30, {0})])
def test_cli_under_an_address_space_limit_loads_or_names_it(
    tmp_path: Path, headroom: float, exits: set[int]
) -> None:
    """`hpuprof info` on a trace under `ulimit -v`: loaded (exit 0) or the limit named (exit 4),
    never a traceback (exit 70) nor a hang. Issue 27 found a 2 GB trace under a 4 GiB limit
    exiting 70; this is the same load made quick: an 18 MB trace with the limit set at the
    warmed-up interpreter's own address space plus 0, 2 and 30 times the file's size (the
    interpreter with numpy, pandas and Arrow already takes about 1.6 GiB of address space, so
    a limit proportional to the file alone cannot be set). With no room to spare, the thread
    of a parallel load that could not get memory as it started hung the load for ever."""
    trace = tmp_path / "big.json"
    sys.path.insert(0, str(ROOT / "bench"))
    from gen_synthetic_trace import generate

    generate(trace, 80_000)  # ~18 MB
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "HPUPROF_LOAD_THREADS": "2"}
    done = subprocess.run(
        [sys.executable, "-c", _CLI_UNDER_LIMIT, str(trace), str(headroom), str(SAMPLE)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode in exits, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    if done.returncode == 4:
        assert done.stderr.startswith("hpuprof: error: "), done.stderr[-2000:]
        assert "address-space limit (ulimit -v / RLIMIT_AS)" in done.stderr


def test_no_threads_of_its_own_near_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    used = 1 << 30
    monkeypatch.setattr(memory_limit, "address_space_used", lambda: used)
    monkeypatch.setattr(memory_limit, "address_space_limit", lambda: None)
    assert memory_limit.threads_within_limit(4) == 4
    room = 4 * memory_limit.THREAD_SHARE
    monkeypatch.setattr(memory_limit, "address_space_limit", lambda: used + room)
    assert memory_limit.threads_within_limit(4) == 4
    assert memory_limit.threads_within_limit(5) == 1
    assert memory_limit.threads_within_limit(1) == 1
