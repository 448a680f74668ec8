"""Intel's GPU Migration Toolkit, emulated: a CUDA script (in the style of Model-References'
gpu_migration mnist) runs unchanged on the emulated HPU with `PT_HPU_GPU_MIGRATION=1`, and the
toolkit's log names each migrated call; without the flag CUDA stays unavailable."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

SHIM = Path(__file__).resolve().parents[2] / "runtime" / "shim"

CUDA_SCRIPT = """
import torch
import torch.nn as nn
import torch.nn.functional as F
import habana_frameworks.torch.core as htcore

use_cuda = torch.cuda.is_available()
print(f"use_cuda: {use_cuda}")
torch.manual_seed(1)
device = torch.device("cuda" if use_cuda else "cpu")
torch.backends.cudnn.benchmark = True
torch.backends.cudnn.deterministic = True


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        return F.log_softmax(self.fc2(F.relu(self.fc1(x))), dim=1)


model = Net().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
scaler = torch.cuda.amp.GradScaler(enabled=use_cuda)
data = torch.randn(64, 16)
target = (data[:, 0] > 0).long() + 2 * (data[:, 1] > 0).long()
if use_cuda:
    data = data.pin_memory()
    torch.cuda.set_device(torch.cuda.current_device())
start = torch.cuda.Event(enable_timing=True) if use_cuda else None
for step in range(6):
    x, y = data.to(device), target.cuda() if use_cuda else target
    with torch.autocast(device_type="cuda", enabled=use_cuda):
        loss = F.nll_loss(model(x), y)
    optimizer.zero_grad()
    scaler.scale(loss).backward()
    htcore.mark_step()
    scaler.step(optimizer)
    scaler.update()
    htcore.mark_step()
    print(f"step {step} loss {loss.item():.4f}")
if use_cuda:
    torch.cuda.synchronize()
    zeros = torch.zeros(3, device="cuda:0")
    print("devices", x.device, y.device, next(model.parameters()).device, zeros.device)
    print("cards", torch.cuda.device_count(), "peak", torch.cuda.max_memory_allocated() > 0)
"""


def _run(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "train.py"
    script.write_text(CUDA_SCRIPT)
    full = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SHIM), os.environ.get("PYTHONPATH", "")]),
        "PT_HPU_LAZY_MODE": "1",
        "HABANA_LOGS": str(tmp_path / "logs"),
        **env,
    }
    for var in ("PT_HPU_METRICS_FILE", "PT_HPU_GPU_MIGRATION", "GPU_MIGRATION_LOG_LEVEL"):
        if var not in env:
            full.pop(var, None)
    return subprocess.run(
        [sys.executable, "train.py"],
        capture_output=True,
        text=True,
        env=full,
        cwd=tmp_path,
        timeout=300,
    )


def _losses(stdout: str) -> list[float]:
    return [float(ln.split()[-1]) for ln in stdout.splitlines() if ln.startswith("step ")]


def test_a_cuda_script_trains_on_the_emulated_hpu_and_the_log_names_the_migrated_calls(
    tmp_path: Path,
) -> None:
    proc = _run(tmp_path, PT_HPU_GPU_MIGRATION="1", GPU_MIGRATION_LOG_LEVEL="1")
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert "use_cuda: True" in lines
    losses = _losses(proc.stdout)
    assert len(losses) == 6 and losses[-1] < losses[0]
    assert "devices hpu:0 hpu:0 hpu:0 hpu:0" in lines
    assert "cards 1 peak True" in lines
    logs = list((tmp_path / "logs" / "gpu_migration_logs").glob("*/*/gpu_migration_*.log"))
    assert len(logs) == 1, logs
    assert f"gpu migration log will be saved to {logs[0]}" in lines
    day, clock = logs[0].parent.parent.name, logs[0].parent.name
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", day) and re.fullmatch(r"\d\d-\d\d-\d\d", clock)
    log = logs[0].read_text()
    entry = (
        r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] \S*train\.py:7\n"
        r"    \[context\]: use_cuda = torch\.cuda\.is_available\(\)\n"
        r"    \[hpu_match\]: torch\.cuda\.is_available\(\) --> torch\.hpu\.is_available\(\)\n\n"
    )
    assert re.search(entry, log), log[:2000]
    for call in (
        "[hpu_match]: torch.cuda.manual_seed_all(seed=1, ) --> torch.hpu.random.manual_seed_all",
        "[hpu_match]: torch.Tensor.to(args=(device(type='cuda'),), kwargs={}, ) --> "
        "torch.Tensor.to(args=('hpu',), kwargs={})",
        "[hpu_match]: torch.Tensor.cuda(device=None",
        "[hpu_match]: torch.Tensor.pin_memory(",
        "[hpu_match]: torch.cuda.amp.GradScaler.__init__(",
        "[hpu_match]: torch.autocast.__init__(device_type=cuda, dtype=None, enabled=True, "
        "cache_enabled=None, ) --> torch.autocast.__init__(device_type=hpu",
        "[hpu_modified]: torch.cuda.current_device() --> ",
        "[hpu_match]: torch.cuda.set_device(device=0, ) --> torch.hpu.set_device(hpu:0)",
        "[hpu_match]: torch.cuda.synchronize(",
        "[hpu_match]: torch.zeros(args=(3,), kwargs={'device': 'cuda:0'}, ) --> "
        "torch.zeros(args=(3,), kwargs={device=hpu:0, })",
        "[hpu_modified]: torch.cuda.device_count() --> ",
        "[hpu_match]: torch.cuda.max_memory_allocated(device=None, ) --> ",
    ):
        assert call in log, call
    # level 1 logs torch's own callers too (torch.manual_seed -> torch.cuda.manual_seed_all)
    assert re.search(r"torch[/\\]random\.py:\d+\n", log)
    # each (file, line, message) once: the loop's six .to calls are one entry
    assert log.count("kwargs={}, ) --> torch.Tensor.to(args=('hpu',)") == 1
    # level 1 also prints the entries
    assert "[hpu_match]: torch.cuda.is_available() --> torch.hpu.is_available()" in proc.stdout


def test_without_the_flag_cuda_stays_unavailable_and_nothing_is_logged(tmp_path: Path) -> None:
    proc = _run(tmp_path, GPU_MIGRATION_LOG_LEVEL="1")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "use_cuda: False" in proc.stdout.splitlines()
    assert len(_losses(proc.stdout)) == 6
    assert not (tmp_path / "logs" / "gpu_migration_logs").exists()


def _log_text(tmp_path: Path) -> str:
    return "".join(p.read_text() for p in tmp_path.glob("logs/gpu_migration_logs/*/*/*.log"))


def test_the_migration_is_undone_when_the_emulation_ends(
    hpu: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    import hpusim

    before = {
        "is_available": torch.cuda.is_available,
        "to": torch.Tensor.to,
        "zeros": torch.zeros,
        "init_process_group": torch.distributed.init_process_group,
        "autocast_init": torch.autocast.__init__,
        "cuda_in_tensor_dict": "cuda" in vars(torch.Tensor),
    }
    hpu(PT_HPU_GPU_MIGRATION="1", HABANA_LOGS=str(tmp_path / "logs"))
    assert torch.cuda.is_available() and torch.cuda.device_count() == 1
    assert torch.randn(2, device="cuda").device.type == "hpu"
    assert torch.ones(2).cuda().device.type == "hpu"
    hpusim.disable()
    assert torch.cuda.is_available is before["is_available"] and not torch.cuda.is_available()
    after_to = torch.Tensor.to
    monkeypatch.delenv("PT_HPU_GPU_MIGRATION")
    hpusim.enable(mode="eager")  # transfers' own Tensor.to is back, not the migrated one
    assert not torch.cuda.is_available()
    hpusim.disable()
    assert torch.Tensor.to is before["to"] and after_to is before["to"]
    assert torch.zeros is before["zeros"]
    assert torch.distributed.init_process_group is before["init_process_group"]
    assert torch.autocast.__init__ is before["autocast_init"]
    assert ("cuda" in vars(torch.Tensor)) == before["cuda_in_tensor_dict"]


def test_levels_2_and_3_leave_out_torchs_own_callers(hpu: Any, tmp_path: Path) -> None:
    hpu(PT_HPU_GPU_MIGRATION="1", GPU_MIGRATION_LOG_LEVEL="2", HABANA_LOGS=str(tmp_path / "logs"))
    torch.manual_seed(3)  # torch/random.py calls torch.cuda.manual_seed_all: not logged
    torch.cuda.manual_seed_all(4)
    torch.cuda.nvtx.range_push("x")
    torch.cuda.empty_cache()
    log = _log_text(tmp_path)
    assert "torch.cuda.manual_seed_all(seed=4, )" in log
    assert "seed=3" not in log
    assert "[hpu_mismatch]: torch.cuda.nvtx.range_push(" in log
    assert "[hpu_mismatch]: torch.cuda.empty_cache() --> Dummy" in log


def test_an_unset_log_level_writes_no_log(hpu: Any, tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.delenv("GPU_MIGRATION_LOG_LEVEL", raising=False)
    hpu(PT_HPU_GPU_MIGRATION="1", HABANA_LOGS=str(tmp_path / "logs"))
    assert torch.cuda.is_available()
    assert not (tmp_path / "logs" / "gpu_migration_logs").exists()


def test_cuda_apis_answer_as_the_toolkit_does(hpu: Any, tmp_path: Path) -> None:
    hpu(PT_HPU_GPU_MIGRATION="1", HABANA_LOGS=str(tmp_path / "logs"))
    assert torch.cuda.get_device_capability() == (9, 0)
    props = torch.cuda.get_device_properties(0)
    assert props.name == "GAUDI2" and props.total_memory == 96 * (1 << 30)
    t = torch.cuda.FloatTensor([1.0, 2.0])
    assert t.device.type == "hpu" and t.dtype == torch.float32
    assert torch.ones(2, device="cuda").type() == "torch.cuda.FloatTensor"
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        assert torch.cuda.current_stream() == stream
    assert torch.cuda.current_stream() == torch.cuda.default_stream()
    with torch.cuda.nvtx.range("region"):
        pass
    scaler = torch.amp.GradScaler("cuda")
    assert not scaler.is_enabled()
    with torch.autocast("cuda", dtype=torch.float16):
        assert torch.is_autocast_enabled("hpu")
        assert torch.get_autocast_dtype("hpu") == torch.bfloat16


def test_nccl_becomes_hccl() -> None:
    from hpusim.gpu_migration import hccl_backend

    assert hccl_backend("nccl") == "hccl"
    assert hccl_backend("NCCL") == "hccl"
    assert hccl_backend("cpu:gloo,cuda:nccl") == "cpu:gloo,hpu:hccl"
    assert hccl_backend("gloo") == "gloo"
    assert hccl_backend(None) is None


def test_torch_compile_with_its_default_backend_compiles_for_the_hpu(
    hpu: Any, tmp_path: Path
) -> None:
    hpu(PT_HPU_GPU_MIGRATION="1", GPU_MIGRATION_LOG_LEVEL="3", HABANA_LOGS=str(tmp_path / "logs"))

    def affine(x: Any) -> Any:
        return x * 2 + 1

    compiled = torch.compile(affine)
    x = torch.arange(4.0, device="cuda")
    assert torch.equal(compiled(x).cpu(), affine(x).cpu())
    assert "backend=hpu_backend" in _log_text(tmp_path)


def test_importing_the_toolkit_migrates_without_the_flag(
    hpu: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    import importlib

    monkeypatch.delenv("PT_HPU_GPU_MIGRATION", raising=False)
    hpu(HABANA_LOGS=str(tmp_path / "logs"))
    assert not torch.cuda.is_available()
    monkeypatch.delitem(sys.modules, "habana_frameworks.torch.gpu_migration", raising=False)
    importlib.import_module("habana_frameworks.torch.gpu_migration")
    assert torch.cuda.is_available()
    assert torch.empty(2, device="cuda").device.type == "hpu"


def test_the_functions_are_migrated_where_torch_defines_them_too(hpu: Any, tmp_path: Path) -> None:
    hpu(PT_HPU_GPU_MIGRATION="1", HABANA_LOGS=str(tmp_path / "logs"))
    torch.ones(1024, device="cuda")
    assert torch.cuda.memory.max_memory_allocated() >= 4096
    assert torch.cuda.memory.memory_stats()["MaxInUse"] >= 4096  # the bridge's keys
    torch.cuda.random.manual_seed(5)
    first = torch.rand(2, device="cuda").cpu()
    torch.cuda.random.manual_seed(5)
    assert torch.equal(torch.rand(2, device="cuda").cpu(), first)
