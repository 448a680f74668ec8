"""Real clients under the emulator: scripts in the style of lightning-habana's, optimum-habana's
and the Gaudi docs' examples (tests/runtime/clients/) run unchanged in fresh processes.

Each script is a file a Gaudi user could have written; the test checks what it printed and
wrote (traces with the emulated card's events, per-rank names, fused device ops...)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")

CLIENTS = Path(__file__).parent / "clients"
LAUNCHER = (
    "import sys, runpy, hpusim; hpusim.enable(); sys.argv = sys.argv[1:]; "
    "runpy.run_path(sys.argv[0], run_name='__main__')"
)
TIMEOUT = 600


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "PT_HPU_METRICS_FILE", "HABANA_PROFILE"):
        env.pop(var, None)
    env.update(
        PT_HPU_LAZY_MODE="1",
        HABANA_LOGS=str(tmp_path / "habana_logs"),
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        HF_HOME=str(tmp_path / "hf"),
        TOKENIZERS_PARALLELISM="false",
    )
    env.update(extra)
    return env


def need(module: str) -> None:
    """Skip unless `module` is installed (found, not imported: importing a Gaudi client outside
    the emulator runs its own hardware checks)."""
    try:
        found = importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        found = False
    if not found:
        pytest.skip(f"{module} is not installed (make installs the [clients] extra)")


def run_script(
    tmp_path: Path, name: str, *args: str, **env: str
) -> subprocess.CompletedProcess[str]:
    """`python <clients/name> args...` with the emulator enabled before it starts."""
    out = subprocess.run(
        [sys.executable, "-c", LAUNCHER, str(CLIENTS / name), *args],
        capture_output=True,
        text=True,
        env=_env(tmp_path, **env),
        timeout=TIMEOUT,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-6000:]
    return out


def device_categories(trace: Path) -> Counter[str]:
    events = json.loads(trace.read_text())["traceEvents"]
    return Counter(str(e.get("cat")) for e in events if e.get("pid") == 0 and e.get("ph") == "X")


def test_lightning_habana_trainer_fit_validate_test_predict_with_its_hpu_profiler(
    tmp_path: Path,
) -> None:
    need("lightning_habana")
    out_dir = tmp_path / "logs"
    out = run_script(tmp_path, "lightning_stages.py", str(out_dir))
    assert "HPU available: True, using: 1 HPUs" in out.stdout + out.stderr
    assert "validate [{'val_loss':" in out.stdout
    assert "test [{'test_acc':" in out.stdout
    assert "predict torch.Size([64])" in out.stdout
    traces = {p.name.split("-", 1)[0]: p for p in out_dir.glob("*.pt.trace.json")}
    assert set(traces) == {"fit", "validate", "test", "predict"}
    for stage, trace in traces.items():
        cats = device_categories(trace)
        assert cats["Kernel"] > 0, (stage, cats)  # the emulated card's events, bridge shape
        doc = json.loads(trace.read_text())
        assert doc["deviceProperties"][0]["name"] == "GAUDI2"
    fit = json.loads(traces["fit"].read_text())["traceEvents"]
    names = {e.get("name") for e in fit}
    assert "[pl][profile]my_loss_action" in names  # profiler.profile("...") custom action
    assert {"SyncTensorsGraphInternal", "synLaunchWithExternalEvents"} <= names


def test_optimum_habana_gaudi_trainer_runs_with_fused_kernels_under_record(
    tmp_path: Path,
) -> None:
    need("optimum.habana")
    run = tmp_path / "run"
    out = subprocess.run(
        [
            sys.executable, "-c", "from hpuprof.cli.main import run; run()", "record",
            "--emulate", "-o", str(run),
            "--", "python", str(CLIENTS / "optimum_gaudi_trainer.py"), str(tmp_path / "out"),
        ],
        capture_output=True, text=True, env=_env(tmp_path), timeout=TIMEOUT, cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-6000:]
    assert "train " in out.stdout and "eval {'eval_loss'" in out.stdout
    trace = next((run / "traces").glob("*.pt.trace.json"))
    events = json.loads(trace.read_text())["traceEvents"]
    device = Counter(e["name"] for e in events if e.get("pid") == 0 and e.get("ph") == "X")
    # BERT's attention runs the fused SDPA, the optimizer the fused AdamW and clip norm: ONE
    # device op per call, not the decomposed ops
    assert device["sdpa_fwd_f32"] > 0 and device["sdpa_bwd_f32"] > 0
    assert device["optimizer_adamw_f32"] > 0 and device["fused_clip_norm_f32"] > 0
    compiles = [
        e["args"]
        for e in events
        if e.get("args", {}).get("hpuprof.event") == "compile"
        and not e["args"].get("hpuprof.eager")
    ]
    # a changing learning rate feeds the fused AdamW as a device tensor: no recompiles
    assert compiles and all(c["hpuprof.cause"]["kind"] == "new_graph" for c in compiles)
    assert json.loads((run / "run.json").read_text())["status"] == "complete"


def test_habana_quantization_toolkit_measures_and_quantizes_to_fp8(tmp_path: Path) -> None:
    """Habana's HQT (the PyPI wheel, unchanged) on the emulated Gaudi 2: its measurement hooks
    write their stats, its quantized Linear runs `hpu::cast_to_fp8_v2` and `hpu::fp8_gemm_v2`
    (one device op each), and the result is an FP8 one: close to fp32, not equal to it."""
    need("habana_quantization_toolkit")
    run = tmp_path / "run"
    out = subprocess.run(
        [
            sys.executable, "-c", "from hpuprof.cli.main import run; run()", "record",
            "--emulate", "-o", str(run),
            "--", "python", str(CLIENTS / "hqt_fp8_inference.py"), str(tmp_path),
        ],
        capture_output=True, text=True, env=_env(tmp_path), timeout=TIMEOUT, cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-6000:]
    assert "stats_hooks_maxabs.json" in out.stdout
    assert "patched ['PatchedLinear', 'ReLU', 'PatchedLinear']" in out.stdout
    printed = next(line for line in out.stdout.splitlines() if line.startswith('{"max_abs'))
    numbers = json.loads(printed)
    assert 0 < numbers["max_abs_error"] < 0.1 * numbers["reference_max"]
    trace = next((run / "traces").glob("*.pt.trace.json"))
    events = json.loads(trace.read_text())["traceEvents"]
    device = Counter(e["name"] for e in events if e.get("pid") == 0 and e.get("ph") == "X")
    assert device["fp8_gemm_v2"] == 2  # the two quantized Linears of the one quantized forward
    assert sum(n for name, n in device.items() if "cast_to_fp8_v2" in name) >= 2


@pytest.mark.parametrize("backend", ["emulated", "gaudi"])
def test_hpuprofiler_writes_one_trace_per_rank_with_custom_actions(
    tmp_path: Path, backend: str
) -> None:
    out_dir = tmp_path / "prof"
    run_script(tmp_path, "hpuprofiler_ranks.py", str(out_dir), backend, RANK="1", WORLD_SIZE="2")
    traces = list((out_dir / "traces").glob("*.json"))
    assert [t.name for t in traces] == ["train-rank1.pt.trace.json"]
    events: list[dict[str, Any]] = json.loads(traces[0].read_text())["traceEvents"]
    actions = Counter(e["name"] for e in events if e.get("cat") == "user_annotation")
    assert actions["data_loading"] == 3 and actions["train_step"] == 3
    cats = device_categories(traces[0])
    # the gaudi backend is torch.profiler + ProfilerActivity.HPU: the bridge's categories
    assert cats["Kernel" if backend == "gaudi" else "kernel"] > 0


def test_hpu_graphs_for_training(tmp_path: Path) -> None:
    out = run_script(tmp_path, "hpu_graphs_training.py")
    assert "replayed losses" in out.stdout
    assert "graphed callable grad (4, 8)" in out.stdout


def test_hpu_graphs_for_inference_wrap_and_module_cacher(tmp_path: Path) -> None:
    out = run_script(tmp_path, "hpu_graphs_inference.py")
    assert "wrap_in_hpu_graph (4, 2)" in out.stdout
    assert "ModuleCacher [(4, 2), (4, 2), (4, 2), (4, 2)]" in out.stdout


def test_torch_compile_with_hpu_backend(tmp_path: Path) -> None:
    out = run_script(tmp_path, "compile_hpu_backend.py", PT_HPU_LAZY_MODE="0")
    assert "compiled loss" in out.stdout
