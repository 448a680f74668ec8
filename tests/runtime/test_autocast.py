"""Habana autocast under `torch.autocast("hpu", bfloat16)`: per-op dtypes from Gaudi's lists (not
CPU's), env override files, cast events, backward dtypes, and bf16 training bit-identical to the
same script under `torch.autocast("cpu", bfloat16)` where the two policies coincide."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.runtime.conftest import runtime_events

torch = pytest.importorskip("torch")
F = torch.nn.functional
BF16 = torch.bfloat16
FP32 = torch.float32


def _ops(x: Any, w: Any) -> dict[str, Any]:
    return {
        "mm": torch.mm(x, w),
        "matmul": x @ w,
        "linear": F.linear(x, w),
        "mul": x * x,
        "softmax": torch.softmax(x, -1),
        "layer_norm": F.layer_norm(x, (x.shape[-1],)),
        "mean": x.mean(),
        "exp_of_bf16": x.bfloat16().exp(),
        "div_of_bf16": x.bfloat16() / 2,
        "add_bf16_fp32": x.bfloat16() + x,
        "relu": torch.relu(x),
    }


def test_per_op_dtypes_follow_habana_lists(hpu: Any) -> None:
    hpu()
    x, w = torch.randn(4, 8, device="hpu"), torch.randn(8, 8, device="hpu")
    with torch.autocast("hpu", dtype=BF16):
        got = {k: v.dtype for k, v in _ops(x, w).items()}
    assert got == {
        "mm": BF16,
        "matmul": BF16,
        "linear": BF16,
        "mul": BF16,  # Gaudi's lower list; CPU autocast leaves mul in fp32
        "softmax": BF16,  # idem
        "layer_norm": BF16,
        "mean": BF16,
        "exp_of_bf16": FP32,  # fp32 list
        "div_of_bf16": FP32,
        "add_bf16_fp32": FP32,  # promote
        "relu": FP32,  # in no list: runs in its input dtype
    }
    with torch.autocast("cpu", dtype=BF16):  # the CPU policy differs on Habana's extras
        xc, wc = x.cpu(), w.cpu()
        cpu = {k: v.dtype for k, v in _ops(xc, wc).items()}
    assert cpu["mm"] == BF16 and cpu["mul"] == FP32 and cpu["softmax"] == FP32
    assert torch.softmax(x, -1).dtype == FP32  # outside the region nothing is cast


def test_casts_are_events_and_layer_norm_casts_only_its_input(hpu: Any) -> None:
    from hpusim.sink import get_sink

    hpu()
    x, w = torch.randn(4, 8, device="hpu"), torch.randn(8, 8, device="hpu")
    ln = torch.nn.LayerNorm(8).to("hpu")
    get_sink().drain()
    with torch.autocast("hpu", dtype=BF16):
        torch.mm(x, w)
        ln(x)
    casts = runtime_events(get_sink().drain(), "cast")
    mm = [c for c in casts if c["hpuprof.op"] == "aten::mm"]
    assert len(mm) == 2
    assert mm[0]["hpuprof.dtype_from"] == "float32" and mm[0]["hpuprof.dtype_to"] == "bfloat16"
    assert mm[0]["hpuprof.policy"] == "lower_precision_fp"
    norm = [c for c in casts if c["hpuprof.op"] == "aten::layer_norm"]
    assert len(norm) == 1 and norm[0]["hpuprof.policy"] == "lower_first_arg"


def test_backward_dtypes(hpu: Any) -> None:
    hpu()
    lin = torch.nn.Linear(8, 4).to("hpu")
    x = torch.randn(2, 8, device="hpu")
    with torch.autocast("hpu", dtype=BF16):
        out = lin(x)
        loss = F.mse_loss(out, torch.zeros(2, 4, device="hpu"))
    assert out.dtype == BF16 and loss.dtype == FP32
    loss.backward()
    assert lin.weight.grad is not None and lin.weight.grad.dtype == FP32


def test_env_files_replace_the_default_lists(hpu: Any, tmp_path: Any) -> None:
    lower = tmp_path / "lower.txt"
    lower.write_text("mm\n")
    fp32 = tmp_path / "fp32.txt"
    fp32.write_text("relu\n")
    hpu(
        PT_HPU_AUTOCAST_LOWER_PRECISION_OPS_LIST=str(lower),
        PT_HPU_AUTOCAST_FP32_OPS_LIST=str(fp32),
    )
    x = torch.randn(4, 8, device="hpu")
    with torch.autocast("hpu", dtype=BF16):
        assert torch.mm(x, x.t()).dtype == BF16
        assert (x * x).dtype == FP32  # mul no longer in the lower list
        assert torch.relu(x.bfloat16()).dtype == FP32  # relu now in the fp32 list
        assert x.bfloat16().exp().dtype == BF16  # exp no longer in the fp32 list


def test_unreadable_list_file_warns_and_loads_the_default(hpu: Any, tmp_path: Any) -> None:
    missing = str(tmp_path / "nope.txt")
    with pytest.warns(UserWarning, match="Failed to open file with ops to autocast: .*nope.txt"):
        hpu(PT_HPU_AUTOCAST_LOWER_PRECISION_OPS_LIST=missing)
    x = torch.randn(4, 8, device="hpu")
    with torch.autocast("hpu", dtype=BF16):
        assert (x * x).dtype == BF16


def _train(model: Any, device: str, data: list[Any], steps: int) -> list[float]:
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    losses = []
    for x, y in data[:steps]:
        x, y = x.to(device), y.to(device)
        opt.zero_grad()
        with torch.autocast(device, dtype=BF16):
            loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def test_bf16_training_bit_identical_to_cpu_autocast(hpu: Any) -> None:
    """Compared: the 10 per-step losses (exact float equality) and the final parameters of an
    MLP (Linear-ReLU-Linear-ReLU-Linear, MSE loss, AdamW) trained with the same data and seed
    under `autocast("hpu")` on the emulator and under `autocast("cpu")` on plain CPU. Every op
    of this model is treated alike by both policies: linear in both lower lists, relu in none,
    mse_loss in both fp32 lists; the optimizer runs outside the region."""
    hpu()
    torch.manual_seed(0)
    cpu_model = torch.nn.Sequential(
        torch.nn.Linear(16, 32),
        torch.nn.ReLU(),
        torch.nn.Linear(32, 16),
        torch.nn.ReLU(),
        torch.nn.Linear(16, 4),
    )
    hpu_model = copy.deepcopy(cpu_model).to("hpu")
    data = [(torch.randn(8, 16), torch.randn(8, 4)) for _ in range(10)]
    cpu_losses = _train(cpu_model, "cpu", data, 10)
    hpu_losses = _train(hpu_model, "hpu", data, 10)
    assert hpu_losses == cpu_losses
    assert len(set(cpu_losses)) > 1  # it trained
    for pc, ph in zip(cpu_model.parameters(), hpu_model.parameters(), strict=True):
        assert torch.equal(pc, ph.cpu())


def test_torch_hpu_autocast_helpers(hpu: Any) -> None:
    hpu()
    assert torch.hpu.is_bf16_supported()
    assert not torch.hpu.is_autocast_hpu_enabled()
    with torch.autocast("hpu", dtype=BF16):
        assert torch.hpu.is_autocast_hpu_enabled()
        assert torch.hpu.get_autocast_hpu_dtype() == BF16
        with torch.autocast("hpu", enabled=False):
            x = torch.randn(2, 2, device="hpu")
            assert torch.mm(x, x).dtype == FP32  # a disabled nested region casts nothing


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_autocast_inside_a_compiled_function(hpu: Any) -> None:
    """In a compiled region the C++ (CPU) policy applies (the function mode is not traced)."""
    import torch._dynamo

    torch._dynamo.reset()
    hpu()
    lin = torch.nn.Linear(4, 2).to("hpu")

    def f(x: Any) -> Any:
        with torch.autocast("hpu", dtype=BF16):
            return torch.relu(lin(x))

    x = torch.randn(3, 4, device="hpu")
    out = torch.compile(f, backend="hpu_backend")(x)
    assert out.dtype == BF16
    assert torch.equal(out.cpu(), f(x).cpu())
    torch._dynamo.reset()
