"""`HABANA_PROFILE=1` under emulation: an .hltv in the working directory that hpuprof loads."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import hpuprof
from hpuprof.analysis.nodes import MODELED, analyze_nodes

pytest.importorskip("torch")

SCRIPT = """
import hpusim
hpusim.enable()
import torch
x = torch.ones(8, 8, device="hpu")
for _ in range(3):
    y = torch.relu(x @ x + 1)
print("sum", y.cpu().sum().item())
"""


def _run(tmp_path: Path, profile: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, HABANA_PROFILE=profile, PT_HPU_LAZY_MODE="1")
    env.pop("RANK", None)
    return subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def test_habana_profile_writes_an_hltv_that_loads(tmp_path: Path) -> None:
    out = _run(tmp_path, "1")
    assert out.returncode == 0, out.stderr[-2000:]
    assert "sum 576.0" in out.stdout
    written = list(tmp_path.glob("*.hltv"))
    assert len(written) == 1, out.stderr[-2000:]
    trace = hpuprof.load(written[0], cache=False)
    assert trace.format == "gaudi-hltv"
    kernels = trace.events[trace.events["kind"].isin(["kernel", "memcpy"])]
    names = kernels["name"].astype(str).tolist()
    assert names.count("mm_f32") == 3  # one per loop
    report = analyze_nodes(trace)
    assert report.iterations_from == "Intel's analyzed-nodes rows"
    nodes = {row.node for row in report.nodes}
    assert {"mm_f32", "mm_f32 iter 2", "mm_f32 iter 3"} <= nodes
    assert all(row.duration_us > 0 for row in report.nodes)


def test_without_it_no_file(tmp_path: Path) -> None:
    out = _run(tmp_path, "profile_api_light")
    assert out.returncode == 0, out.stderr[-2000:]
    assert not list(tmp_path.glob("*.hltv"))


def test_modeled_note_on_the_emulators_file(tmp_path: Path) -> None:
    from hpusim.hltv_profile import write_hltv
    from hpusim.sink import ENGINES, KIND_DEVICE, EventBatch

    n = 2
    batch = EventBatch(
        kind=[KIND_DEVICE] * n, hpu_event=[0] * n, name=[1, 2], ts_ns=[10_000, 12_000],
        dur_ns=[3_000, 500], tid=[0] * n, module=[0] * n, phase=[0] * n, mode=[0] * n,
        dims=[0] * n, types=[0] * n, engine=[ENGINES.index("MME"), ENGINES.index("TPC")],
        graph=[4, 4], corr=[-1] * n, flops=[0] * n, nbytes=[0] * n, payload=[-1] * n,
        strings=("", "gemm", "relu"), payloads=(), pid=1,
    )  # fmt: skip
    path = tmp_path / "x.hltv"
    write_hltv(batch, path)
    trace = hpuprof.load(path, cache=False)
    rows = {row.node: row for row in analyze_nodes(trace).nodes}
    assert rows["gemm"].unit == "MME" and rows["gemm"].duration_us == 3.0
    assert rows["relu"].unexposed_tpc_us == 0.5  # 12..12.5 under the gemm (10..13)
    assert rows["gemm"].graph == "4"
    assert trace.device_time == "modeled"  # prof_config.json names hpusim
    assert MODELED in analyze_nodes(trace).notes


LIGHTNING_SCRIPT = """
import hpusim
hpusim.enable()
from lightning_habana.pytorch.profiler import HPUProfiler as Theirs  # before lightning (its docs)
from hpuprof.integrations.lightning import HPUProfiler as Ours
for cls in (Theirs, Ours):
    try:
        cls(dirpath="prof")
    except AssertionError as error:
        print(cls.__module__, "refused:", error)
    else:
        print(cls.__module__, "ran")
"""


@pytest.mark.parametrize("profile", ["1", "profile_api_light"])
def test_lightning_habana_profilers_refuse_beside_habana_profile(
    tmp_path: Path, profile: str
) -> None:
    """Under emulation, as on a Gaudi: lightning-habana's `HPUProfiler` and hpuprof's Lightning
    profiler that mirrors it refuse to run beside `HABANA_PROFILE=1`, with lightning-habana's
    message; beside its light API mode both run."""
    import importlib.util

    from hpuprof.integrations.lightning import HABANA_PROFILE_REFUSAL

    if importlib.util.find_spec("lightning_habana") is None:
        pytest.skip("lightning-habana is not installed (make installs the [clients] extra)")
    env = dict(os.environ, HABANA_PROFILE=profile, PT_HPU_LAZY_MODE="1")
    env.pop("RANK", None)
    out = subprocess.run(
        [sys.executable, "-c", LIGHTNING_SCRIPT],
        cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.splitlines()
    modules = ("lightning_habana.pytorch.profiler.profiler", "hpuprof.integrations.lightning")
    if profile == "1":
        assert lines == [f"{m} refused: {HABANA_PROFILE_REFUSAL}" for m in modules]
    else:
        assert lines == [f"{m} ran" for m in modules]
