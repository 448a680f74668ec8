"""The Python surface real Gaudi code imports, as the bridge 1.19 provides it."""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

BRIDGE_HPU_NAMES = [
    "BFloat16Tensor",
    "BoolTensor",
    "ByteTensor",
    "CachedParams",
    "CharTensor",
    "DoubleTensor",
    "Event",
    "FloatTensor",
    "GraphModel",
    "HABANA_VISIBLE_MODULES_VAR",
    "HLS_MODULE_ID_VAR",
    "HPUGraph",
    "HalfTensor",
    "IntTensor",
    "InvalidMetricDumpFileFormat",
    "InvalidMetricDumpTrigger",
    "LongTensor",
    "MetricNotFound",
    "ModuleCacher",
    "ShortTensor",
    "Stream",
    "StreamContext",
    "TensorPacker",
    "can_device_access_peer",
    "copy_to",
    "current_device",
    "current_stream",
    "default_stream",
    "device",
    "device_count",
    "device_of",
    "disable_const_section_serialization",
    "disable_dynamic_shape",
    "disable_inference_mode",
    "disable_matmul3d_2d_reshape",
    "disable_optim_output_sif",
    "disable_quantization",
    "enable_const_section_serialization",
    "enable_dynamic_shape",
    "enable_inference_mode",
    "enable_matmul3d_2d_reshape",
    "enable_optim_output_sif",
    "enable_quantization",
    "enable_recompute_sdp",
    "extract_tensors",
    "getDeterministic",
    "get_arch_list",
    "get_autocast_hpu_dtype",
    "get_device_capability",
    "get_device_name",
    "get_device_properties",
    "get_dynamic_shape_status",
    "get_gencode_flags",
    "get_rng_state",
    "get_rng_state_all",
    "get_stream_info",
    "get_sync_debug_mode",
    "get_tensor_info",
    "get_user_input_tensor_list",
    "graph",
    "hpu",
    "hpu_graph_print",
    "init",
    "initial_seed",
    "input_hash",
    "is_autocast_hpu_enabled",
    "is_available",
    "is_bf16_supported",
    "is_current_stream_capturing",
    "is_initialized",
    "is_lazy",
    "is_lazy_mode",
    "make_graphed_callables",
    "manual_seed",
    "manual_seed_all",
    "max_memory_allocated",
    "max_memory_cached",
    "max_memory_reserved",
    "mem_get_info",
    "memory_allocated",
    "memory_cached",
    "memory_reserved",
    "memory_stats",
    "memory_summary",
    "memory_usage",
    "metric_global",
    "metric_localcontext",
    "metrics_dump",
    "recompute_sdp_enabled",
    "record_stream",
    "reset_accumulated_memory_stats",
    "reset_peak_memory_stats",
    "sdp_kernel",
    "seed",
    "seed_all",
    "setDeterministic",
    "set_autocast_hpu_dtype",
    "set_autocast_hpu_enabled",
    "set_device",
    "set_rng_state",
    "set_rng_state_all",
    "set_stream",
    "set_sync_debug_mode",
    "stream",
    "stringify",
    "synchronize",
    "utilization",
    "wrap_in_hpu_graph",
    "wrap_in_hpu_graph_func",
    "wrapped_hpugraph_forward",
]
"""The public API names of the bridge 1.19 `habana_frameworks.torch.hpu` (lazy mode; module
re-exports such as `torch` or `os` left out)."""


def test_one_hpu_module_with_the_bridge_surface(hpu: Any) -> None:
    hpu("lazy")
    import habana_frameworks.torch as ht
    import habana_frameworks.torch.core as htcore
    import habana_frameworks.torch.hpu as hthpu

    assert torch.hpu is ht.hpu is htcore.hpu is hthpu is hthpu.hpu
    missing = [n for n in BRIDGE_HPU_NAMES if not hasattr(hthpu, n)]
    assert missing == []
    assert hthpu.get_device_name() == "GAUDI2" and hthpu.device_count() == 1
    index = hthpu._get_device_index  # the bridge's test_habanaframework_api uses it
    assert (index("hpu:1"), index(torch.device("hpu:2")), index(3)) == (1, 2, 3)
    assert index("hpu", optional=True) == 0 and index("cpu", allow_cpu=True) == -1
    with pytest.raises(ValueError, match="Expected a hpu device, but got: cpu"):
        index("cpu")
    with pytest.raises(ValueError, match="with a specified index"):
        index(torch.device("hpu"))


def test_hpu_module_identity_survives_disable_and_enable(hpu: Any) -> None:
    hpu("lazy")
    import habana_frameworks.torch.hpu as hthpu

    hpu("eager")
    assert torch.hpu is hthpu and not hasattr(hthpu, "wrap_in_hpu_graph")  # lazy-only names
    hpu("lazy")
    assert torch.hpu is hthpu and hasattr(hthpu, "wrap_in_hpu_graph")


def test_memory_functions_report_the_emulated_allocator(hpu: Any) -> None:
    hpu("eager")
    hthpu = torch.hpu
    before = hthpu.memory_stats()
    x = torch.empty(256, 1024, device="hpu")  # 1 MiB
    after = hthpu.memory_stats()
    assert after["InUse"] - before["InUse"] == 1 << 20
    assert after["NumAllocs"] == before["NumAllocs"] + 1
    assert after["MaxAllocSize"] >= 1 << 20 and hthpu.max_memory_allocated() >= 1 << 20
    free, total = hthpu.mem_get_info()
    assert total == 96 * (1 << 30) and free == total - after["InUse"]
    del x
    assert hthpu.memory_stats()["NumFrees"] == after["NumFrees"] + 1
    assert hthpu.memory_allocated() == before["InUse"]
    hthpu.reset_peak_memory_stats()
    assert hthpu.max_memory_allocated() == hthpu.memory_allocated()
    assert "PyTorch HPU memory summary, device ID 0" in hthpu.memory_summary()


def test_events_measure_modeled_device_time(hpu: Any) -> None:
    hpu("eager")
    hthpu = torch.hpu
    a = torch.randn(512, 512, device="hpu")
    spans = []
    for n in (1, 20):
        start, end = hthpu.Event(enable_timing=True), hthpu.Event(enable_timing=True)
        start.record()
        for _ in range(n):
            a = a @ a
        end.record()
        end.synchronize()
        # done once the host waited for them, though the modeled device time of 20 large
        # matmuls lies ahead of this machine's clock (query read that clock only)
        assert end.query() and start.query()
        spans.append(start.elapsed_time(end))
    assert 0 < spans[0] < spans[1]  # milliseconds of modeled device work between the events
    late = hthpu.Event()
    late.record()
    for _ in range(20):
        a = a @ a
    hthpu.synchronize()  # a device synchronize completes every event recorded before it
    assert late.query()
    with pytest.raises(RuntimeError, match="enable_timing=True"):
        hthpu.Event().elapsed_time(hthpu.Event())


def test_streams_and_the_stream_context(hpu: Any) -> None:
    hpu("eager")
    hthpu = torch.hpu
    assert hthpu.current_stream() == hthpu.default_stream() and hthpu.default_stream().id() == 0
    s = hthpu.Stream()
    with hthpu.stream(s):
        assert hthpu.current_stream() == s
        event = s.record_event()
        hthpu.current_stream().wait_event(event)
    assert hthpu.current_stream() == hthpu.default_stream()


def test_rng_state_round_trip(hpu: Any) -> None:
    hpu("eager")
    import habana_frameworks.torch.hpu.random as htrandom

    state = htrandom.get_rng_state()
    a = torch.randn(4, device="hpu").cpu()
    htrandom.set_rng_state(state)
    assert torch.equal(torch.randn(4, device="hpu").cpu(), a)
    with pytest.raises(RuntimeError, match="supports only device 0"):
        htrandom.get_rng_state(1)


def test_the_bridge_submodules_are_attributes_of_the_hpu_module(hpu: Any) -> None:
    """The bridge's `hpu/__init__.py` imports `events`, `memory`, `metrics`, `random` and
    `streams` (`from .random import *`...), which binds each submodule as an attribute of the
    package: DeepSpeed's HPU accelerator seeds through `hpu.random.manual_seed` without importing
    `habana_frameworks.torch.hpu.random` itself."""
    hpu("eager")
    hthpu = torch.hpu
    for name in ("events", "memory", "metrics", "random", "streams"):
        assert getattr(hthpu, name) is sys.modules[f"habana_frameworks.torch.hpu.{name}"], name
    hthpu.random.manual_seed(7)
    a = torch.randn(3, device="hpu").cpu()
    hthpu.random.manual_seed(7)
    assert torch.equal(torch.randn(3, device="hpu").cpu(), a) and hthpu.random.initial_seed() == 7
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        _ = hthpu.no_such_name
    hpu("lazy")  # `from .graphs import *` in lazy mode only
    assert hthpu.graphs.wrap_in_hpu_graph is hthpu.wrap_in_hpu_graph


PIN_WAIVER_CHECK = """
import os
import habana_frameworks.torch  # the emulator, as on a Gaudi: DeepSpeed picks its HPU accelerator
import deepspeed
from lightning.pytorch.utilities.exceptions import MisconfigurationException
from lightning_habana.pytorch.plugins import HPUDeepSpeedPrecisionPlugin
from lightning_habana.pytorch.plugins import deepspeed_precision
from lightning_habana.pytorch.strategies import HPUDeepSpeedStrategy
from hpuprof.integrations.deepspeed import accept_pypi_deepspeed

for make in (lambda: HPUDeepSpeedStrategy(stage=2), lambda: HPUDeepSpeedPrecisionPlugin("bf16-mixed")):
    try:
        make()
        raise SystemExit("accepted PyPI's DeepSpeed before the waiver")
    except MisconfigurationException as exc:
        assert "must have hpu DeepSpeed installed" in str(exc), exc
assert accept_pypi_deepspeed() == deepspeed.__version__
zero = HPUDeepSpeedStrategy(stage=2, offload_optimizer=True).config["zero_optimization"]
assert zero["stage"] == 2 and zero["offload_optimizer"]["device"] == "cpu", zero
assert HPUDeepSpeedPrecisionPlugin(precision="bf16-mixed").precision == "bf16-mixed"
assert deepspeed_precision.deepspeed is deepspeed  # its `deepspeed.init_inference` resolves
print("waived", deepspeed.__version__)
"""


def test_lightning_habana_deepspeed_pin_is_waived_only_when_asked(tmp_path: Path) -> None:
    """lightning-habana 1.6.0 accepts only Habana's DeepSpeed fork (a `RequirementCache` of
    `deepspeed==0.14.0+hpu.synapse.v1.16.0`): with PyPI's it refuses, under emulation as on a
    Gaudi, until `accept_pypi_deepspeed()` waives the pin; then the strategy builds its ZeRO
    config and the bf16 precision plugin constructs. In a process of its own: DeepSpeed picks its
    accelerator once per process, and lightning imports PyPI's torchvision."""
    for module in ("deepspeed", "lightning_habana"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed (the deepspeed and clients extras)")
    repo = Path(__file__).resolve().parents[2]
    path = os.pathsep.join([str(repo / "runtime" / "shim"), str(repo / "runtime"), str(repo)])
    env = {**os.environ, "PYTHONPATH": path, "HABANA_LOGS": str(tmp_path)}
    for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "PT_HPU_LAZY_MODE"):
        env.pop(var, None)
    done = subprocess.run(
        [sys.executable, "-c", PIN_WAIVER_CHECK], env=env, capture_output=True, text=True,
        timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "waived" in done.stdout


def _device_ops(batch: Any) -> list[str]:
    from hpusim.sink import KIND_DEVICE

    return [batch.strings[batch.name[i]] for i in range(len(batch)) if batch.kind[i] == KIND_DEVICE]


@pytest.mark.parametrize("recompute", [True, False])
def test_fused_sdpa_is_one_device_op_with_sdpa_numerics(hpu: Any, recompute: bool) -> None:
    from hpusim.sink import get_sink

    hpu("eager")
    from habana_frameworks.torch.hpex.kernels import FusedSDPA

    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 4, 8, 16, requires_grad=True) for _ in range(3))
    mask = torch.randn(2, 1, 8, 8)
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    ref.sum().backward()
    qh, kh, vh = (t.detach().to("hpu").requires_grad_() for t in (q, k, v))
    get_sink().drain()
    out = FusedSDPA.apply(qh, kh, vh, mask.to("hpu"), 0.0, False, None, "None", recompute)
    out.sum().backward()
    ops = _device_ops(get_sink().drain())
    name = "sdpa_recomp" if recompute else "sdpa"
    assert ops.count(f"{name}_fwd_f32") == 1 and ops.count(f"{name}_bwd_f32") == 1
    assert not any(op.startswith(("bmm", "softmax", "_softmax")) for op in ops)
    torch.testing.assert_close(out.cpu(), ref, atol=1e-5, rtol=1e-4)
    for got, want in ((qh, q), (kh, k), (vh, v)):
        torch.testing.assert_close(got.grad.cpu(), want.grad, atol=1e-5, rtol=1e-4)


def test_fused_sdpa_grouped_query_attention_and_causal(hpu: Any) -> None:
    hpu("eager")
    from habana_frameworks.torch.hpex.kernels import FusedSDPA

    torch.manual_seed(1)
    q = torch.randn(1, 8, 6, 16, requires_grad=True)
    k, v = (torch.randn(1, 2, 6, 16, requires_grad=True) for _ in range(2))
    ref = torch.nn.functional.scaled_dot_product_attention(
        q, k.repeat_interleave(4, 1), v.repeat_interleave(4, 1), is_causal=True
    )
    ref.pow(2).sum().backward()
    qh, kh, vh = (t.detach().to("hpu").requires_grad_() for t in (q, k, v))
    out = FusedSDPA.apply(qh, kh, vh, None, 0.0, True)
    out.pow(2).sum().backward()
    torch.testing.assert_close(out.cpu(), ref, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(kh.grad.cpu(), k.grad, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize(("seq_q", "seq_k"), [(16, 32), (32, 16)])
@pytest.mark.parametrize("recompute", [True, False])
def test_causal_fused_sdpa_aligns_its_triangle_at_the_top_left(
    hpu: Any, seq_q: int, seq_k: int, recompute: bool
) -> None:
    """With more keys than queries or fewer, query i sees keys 0..i, as torch's `is_causal`
    and the bridge's tests' reference (`ones(L, S).tril(diagonal=0)`): the emulator aligned it
    at the bottom right, and two of the bridge's FusedSDPA tests failed."""
    hpu("lazy")
    import habana_frameworks.torch.hpu as ht
    from habana_frameworks.torch.hpex.kernels import FusedSDPA

    torch.manual_seed(3)
    q, k, v = torch.randn(2, 4, seq_q, 8), torch.randn(2, 4, seq_k, 8), torch.randn(2, 4, seq_k, 8)
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    with ht.sdp_kernel(enable_recompute=recompute):
        out = FusedSDPA.apply(q.to("hpu"), k.to("hpu"), v.to("hpu"), None, 0.0, True)
    torch.testing.assert_close(out.cpu(), ref, atol=1e-5, rtol=1e-4)


def test_fused_rms_norm_and_rotary_embedding_match_their_formulas(hpu: Any) -> None:
    hpu("eager")
    from habana_frameworks.torch.hpex.kernels import RotaryPosEmbeddingHelperV2
    from habana_frameworks.torch.hpex.normalization import FusedRMSNorm

    torch.manual_seed(2)
    x = torch.randn(3, 5, 16, requires_grad=True)
    w = torch.randn(16, requires_grad=True)
    ref = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
    ref.sum().backward()
    xh, wh = x.detach().to("hpu").requires_grad_(), w.detach().to("hpu").requires_grad_()
    out = FusedRMSNorm.apply(xh, wh, 1e-6)
    out.sum().backward()
    torch.testing.assert_close(out.cpu(), ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(xh.grad.cpu(), x.grad, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(wh.grad.cpu(), w.grad, atol=1e-5, rtol=1e-4)

    q = torch.randn(2, 4, 6, 8)  # [batch, heads, seq, dim]
    cos, sin = torch.randn(1, 1, 10, 8), torch.randn(1, 1, 10, 8)
    pos = torch.tensor([[0, 1, 2, 3, 4, 5], [4, 5, 6, 7, 8, 9]])
    half = torch.cat((-q[..., 4:], q[..., :4]), dim=-1)
    c, s = cos[0, 0][pos].unsqueeze(1), sin[0, 0][pos].unsqueeze(1)
    got = RotaryPosEmbeddingHelperV2.apply(q.to("hpu"), cos.to("hpu"), sin.to("hpu"), pos.to("hpu"))
    torch.testing.assert_close(got.cpu(), q * c + half * s)


def test_rotary_embedding_v1_offset_selects_the_table_columns_after_it(hpu: Any) -> None:
    """GPT-NeoX <= 4.27.4 (RotaryPosEmbeddingHelperV1): tables wider than the input by
    `offset` give `cos[..., offset : offset + dim]`, as the bridge's documented formula; the
    backward is the formula's gradient."""
    hpu("lazy")
    from habana_frameworks.torch.hpex.kernels import RotaryPosEmbeddingHelperV1

    torch.manual_seed(4)
    p = torch.randn(8, 2, 32, 8, requires_grad=True)
    cos, sin = torch.randn(8, 1, 1, 10), torch.randn(8, 1, 1, 10)
    c, s = cos[..., 2:10], sin[..., 2:10]
    ref = p * c + torch.cat((-p[..., 4:], p[..., :4]), dim=-1) * s
    ref.sum().backward()
    ph = p.detach().to("hpu").requires_grad_()
    got = RotaryPosEmbeddingHelperV1.apply(ph, cos.to("hpu"), sin.to("hpu"), 2)
    got.sum().backward()
    torch.testing.assert_close(got.cpu(), ref)
    torch.testing.assert_close(ph.grad.cpu(), p.grad)


def _mlp() -> Any:
    torch.manual_seed(3)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))


@pytest.mark.parametrize("mode", ["eager", "lazy"])
def test_fused_adamw_matches_torch_adamw_with_one_op_per_group(hpu: Any, mode: str) -> None:
    from hpusim.sink import get_sink

    hpu(mode)
    from habana_frameworks.torch.hpex.optimizers import FusedAdamW

    cpu_model, hpu_model = _mlp(), _mlp().to("hpu")
    # the fused kernel adds eps to sqrt(v) before the bias correction (step size
    # lr*sqrt(bc2)/bc1), torch after it: with a negligible eps both are the same AdamW
    ref = torch.optim.AdamW(cpu_model.parameters(), lr=1e-2, weight_decay=0.1, eps=1e-12)
    opt = FusedAdamW(hpu_model.parameters(), lr=1e-2, weight_decay=0.1, eps=1e-12)
    x = torch.randn(5, 8)
    for _ in range(3):
        for model, optim, inp in ((cpu_model, ref, x), (hpu_model, opt, x.to("hpu"))):
            optim.zero_grad()
            model(inp).pow(2).sum().backward()
            get_sink().drain()
            optim.step()
    assert _device_ops(get_sink().drain()).count("optimizer_adamw_f32") == 1
    for a, b in zip(cpu_model.parameters(), hpu_model.parameters(), strict=True):
        torch.testing.assert_close(b.detach().cpu(), a.detach(), atol=1e-6, rtol=1e-5)


def test_fused_sgd_and_clip_norm_match_torch(hpu: Any) -> None:
    hpu("eager")
    from habana_frameworks.torch.hpex.normalization import FusedClipNorm
    from habana_frameworks.torch.hpex.optimizers import FusedSGD

    cpu_model, hpu_model = _mlp(), _mlp().to("hpu")
    ref = torch.optim.SGD(cpu_model.parameters(), lr=0.1, momentum=0.9)
    opt = FusedSGD(hpu_model.parameters(), lr=0.1, momentum=0.9)
    clip = FusedClipNorm(hpu_model.parameters(), max_norm=0.5)
    x = torch.randn(5, 8)
    for _ in range(3):
        ref.zero_grad()
        cpu_model(x).pow(2).sum().backward()
        want = torch.nn.utils.clip_grad_norm_(cpu_model.parameters(), 0.5)
        ref.step()
        opt.zero_grad()
        hpu_model(x.to("hpu")).pow(2).sum().backward()
        got = clip.clip_norm(hpu_model.parameters())
        opt.step()
        torch.testing.assert_close(got.cpu().reshape(()), want, rtol=1e-5, atol=1e-6)
    for a, b in zip(cpu_model.parameters(), hpu_model.parameters(), strict=True):
        torch.testing.assert_close(b.detach().cpu(), a.detach(), atol=1e-6, rtol=1e-5)


def test_hpex_c_fused_norm_clips_in_place_and_returns_the_norm(hpu: Any) -> None:
    """`_hpex_C.fused_norm(grads, max_norm, norm_type)` (the bridge's pybind binding, as its
    lazy/fused_ops/test_norm.py calls it): every tensor of the list scaled in place by
    max_norm / (norm + 1e-6) when that is below 1, the global norm returned as a new
    one-element tensor, one `fused_norm_lazy` device op; an empty list is refused."""
    hpu("lazy")
    from habana_frameworks.torch import _hpex_C
    from hpusim.sink import get_sink

    cpu = [torch.rand(2, 64) for _ in range(5)]
    grads = [t.to("hpu") for t in cpu]
    norm = torch.stack([t.norm() for t in cpu]).norm()
    coef = 1.0 / (norm + 1e-6)
    assert coef < 1  # the case that clips
    get_sink().drain()
    got = _hpex_C.fused_norm(grads, torch.ones(1).to("hpu"), 2.0)
    assert got.shape == (1,) and got.dtype == torch.float32
    torch.testing.assert_close(got.cpu().reshape(()), norm, rtol=1e-5, atol=1e-6)
    for g, c in zip(grads, cpu, strict=True):
        torch.testing.assert_close(g.cpu(), c * coef, rtol=1e-5, atol=1e-6)
    assert "fused_norm_lazy_f32" in _device_ops(get_sink().drain())
    with pytest.raises(RuntimeError, match="empty grad vector"):
        _hpex_C.fused_norm([], torch.ones(1).to("hpu"), 2.0)


def test_fused_op_costs_are_pure_functions_of_shapes() -> None:
    from hpusim.fused_costs import FUSED_OPS, fused_op_cost

    q = (2, 8, 128, 64)
    full = fused_op_cost("hpu::sdpa_recomp_fwd", [q, q, q, None, None], ["bfloat16"] * 5)
    causal = fused_op_cost(
        "hpu::sdpa_recomp_fwd", [q, q, q, None, None], ["bfloat16"] * 5, is_causal=True
    )
    assert full is not None and causal is not None and full.engine == "MME"
    assert full.mme_flops == 2 * 16 * 128 * 128 * (64 + 64)  # QK^T and PV
    assert causal.mme_flops * 2 == full.mme_flops
    assert full.bytes_read == 3 * math.prod(q) * 2
    adamw = fused_op_cost(
        "hpu::optimizer_adamw",
        [[(4, 4), (4,)]] * 4 + [(1,)],
        [["float32", "float32"]] * 4 + ["float32"],
    )
    assert adamw is not None and adamw.engine == "TPC" and adamw.bytes_written == 3 * 20 * 4
    assert fused_op_cost("aten::add", [(2,)], ["float32"]) is None
    assert {"hpu::sdpa_recomp_fwd", "hpu::rms_norm", "hpu::optimizer_adamw"} <= FUSED_OPS


def test_what_the_emulator_cannot_provide_says_so(hpu: Any) -> None:
    import hpusim

    hpu("eager")
    from habana_frameworks.torch.hpex.optimizers import FusedAdamW

    with pytest.raises(NotImplementedError, match=r"FusedAdamW\(moments_dtype=fp8\)"):
        FusedAdamW(_mlp().to("hpu").parameters(), moments_dtype=torch.float8_e4m3fn)
    with pytest.raises(NotImplementedError, match="utilization"):
        torch.hpu.utilization()
    import habana_frameworks.torch.hpex.experimental.transformer_engine as te

    assert te.fp8.is_fp8_enabled() is False  # status queries answer
    assert te.fp8.is_fp8_available() == (True, "")  # Gaudi 2: te.Linear runs in FP8
    hpusim.disable()
    assert te.fp8.is_fp8_available() == (False, te.fp8.NO_FP8_DEVICE)


def test_gaudi_installation_parts_exist_only_while_emulating(
    hpu: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import hpusim
    import hpusim.torchvision_ops

    # without PyPI's torchvision set aside for emulation (tests/runtime/test_torchvision.py)
    monkeypatch.setattr(hpusim.torchvision_ops, "folder", lambda: tmp_path / "no-torchvision")
    hpu("eager")
    assert importlib.metadata.version("habana-torch-plugin") == "1.19.0"
    assert importlib.metadata.version("habana-torch-dataloader") == "1.19.0"
    hl_smi = shutil.which("hl-smi")
    assert hl_smi is not None
    version = subprocess.run([hl_smi, "-v"], capture_output=True, text=True, check=True).stdout
    assert "hl-1.19.0-fw-" in version
    table = subprocess.run([hl_smi], capture_output=True, text=True, check=True).stdout
    assert "HL-225" in table and "98304MiB" in table
    listed = subprocess.run(
        "pip list 2>/dev/null | grep habana-torch-plugin", shell=True, capture_output=True,
        text=True, check=False,
    ).stdout  # fmt: skip
    assert "1.19.0" in listed
    import habana_dataloader

    loader = habana_dataloader.HabanaDataLoader(list(range(10)), batch_size=4)
    assert [b.tolist() for b in loader] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    if "torchvision" not in sys.modules:  # probes find no torchvision: clients take their path
        assert importlib.util.find_spec("torchvision") is None  # without it (lightning's MNIST)
    from torchvision import transforms  # an import statement gets the stand-in

    with pytest.raises(NotImplementedError, match="hpusim"):
        transforms.Resize(4)
    hpusim.disable()
    assert shutil.which("hl-smi") != hl_smi
    with pytest.raises(importlib.metadata.PackageNotFoundError):
        importlib.metadata.version("habana-torch-plugin")


def test_profiler_activity_hpu_merges_the_device_in_the_bridge_shape(
    hpu: Any, tmp_path: Path
) -> None:
    from hpusim.sink import get_sink

    native = torch.profiler.ProfilerActivity
    hpu("lazy")
    get_sink().recording = False  # no other consumer: the HPU activity owns the sink
    import habana_frameworks.torch.core as htcore
    from torch.profiler import ProfilerActivity, profile

    assert not isinstance(ProfilerActivity.HPU, torch._C._profiler.ProfilerActivity)
    model = torch.nn.Linear(8, 8).to("hpu")
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.HPU]) as prof:
        model(torch.randn(4, 8, device="hpu")).sum().backward()
        htcore.mark_step()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    doc = json.loads(path.read_text())
    events = doc["traceEvents"]
    kernels = [e for e in events if e.get("cat") == "Kernel"]
    assert kernels and {e["tid"] for e in kernels} <= {6000, 7000}  # MME, TPC
    assert {"recipeId", "recipeName", "streamHandle", "eventHandle", "dataType"} <= set(
        kernels[0]["args"]
    )
    names = {e["name"] for e in events}
    assert {"SyncTensorsGraphInternal", "synLaunchWithExternalEvents"} <= names
    assert doc["deviceProperties"] == [{"name": "GAUDI2", "totalGlobalMem": 96 * (1 << 30)}]
    assert os.environ.get("HABANA_PROFILE") == "profile_api_light"  # set by importing core
    import hpusim

    hpusim.disable()
    assert torch.profiler.ProfilerActivity is native


def test_dynamo_and_distributed_entry_points(hpu: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    hpu("eager")
    from habana_frameworks.torch.dynamo.compile_backend import config
    from habana_frameworks.torch.dynamo.compile_backend.experimental import (
        enable_compiled_autograd,
    )

    assert config.configuration_flags["use_eager_fallback"] is True
    config.configuration_flags["use_eager_fallback"] = False
    assert config.use_eager_fallback is False
    assert callable(enable_compiled_autograd)
    assert "hpu_backend" in torch._dynamo.list_backends()
    hccl = importlib.import_module("habana_frameworks.torch.distributed.hccl")
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("RANK", "2")
    monkeypatch.setenv("LOCAL_RANK", "2")
    monkeypatch.delenv("HLS_MODULE_ID", raising=False)
    assert hccl.initialize_distributed_hpu() == (4, 2, 2)
    assert os.environ["HLS_MODULE_ID"] == "2" and os.environ["ID"] == "2"
    import habana_frameworks.torch.utils.experimental as htexp

    assert htexp._get_device_type() == htexp.synDeviceType.synDeviceGaudi2


def test_lightning_habana_imports_with_a_synapse_version(hpu: Any) -> None:
    if importlib.util.find_spec("lightning_habana") is None:
        pytest.skip("lightning-habana is not installed (make installs the [clients] extra)")
    hpu("lazy")
    from lightning_habana.utils.resources import get_hpu_synapse_version

    get_hpu_synapse_version.cache_clear()
    assert get_hpu_synapse_version() == "1.19.0"  # read from the emulated hl-smi -v


def test_convolution_overrideable_is_the_bridge_convolution(hpu: Any) -> None:
    """The bridge registers its convolution on torch's out-of-tree hook; CPU torch has none."""
    hpu("lazy")
    torch.manual_seed(5)
    x = torch.randn(2, 3, 7, 6, requires_grad=True)
    w = torch.randn(4, 3, 2, 2, requires_grad=True)
    b = torch.randn(4, requires_grad=True)
    conv = (b, [1, 1], [1, 0], [1, 1], False, [0, 0], 1)
    with pytest.raises(NotImplementedError, match="convolution_overrideable not implemented"):
        torch.ops.aten.convolution_overrideable(x, w, *conv)
    ref = torch.nn.functional.conv2d(x, w, b, padding=(1, 0))
    ref.pow(2).sum().backward()
    xh, wh, bh = (t.detach().to("hpu").requires_grad_() for t in (x, w, b))
    got = torch.ops.aten.convolution_overrideable(xh, wh, bh, *conv[1:])
    got.pow(2).sum().backward()
    torch.testing.assert_close(got.cpu(), ref)
    for mine, theirs in ((xh, x), (wh, w), (bh, b)):
        torch.testing.assert_close(mine.grad.cpu(), theirs.grad)


@pytest.mark.parametrize("mode", ["eager", "lazy"])
def test_distributed_fused_adamw_steps_on_the_gradients_it_is_given(hpu: Any, mode: str) -> None:
    """`hpex.optimizers.distributed.FusedAdamW`: the bridge's functional AdamW (`step(grads)`,
    one parameter group, not sharded), one `optimizer_adamw` per step, torch's AdamW values."""
    from hpusim.sink import get_sink

    hpu(mode)
    import habana_frameworks.torch.core as htcore
    from habana_frameworks.torch.hpex.optimizers.distributed import FusedAdamW

    torch.manual_seed(6)
    ref = [torch.randn(3, 4, requires_grad=True), torch.randn(5, requires_grad=True)]
    on_card = [p.detach().to("hpu") for p in ref]
    opt = FusedAdamW(on_card, lr=0.1, betas=(0.9, 0.99), eps=1e-6, weight_decay=0.1)
    torch_opt = torch.optim.AdamW(ref, lr=0.1, betas=(0.9, 0.99), eps=1e-6, weight_decay=0.1)
    for _ in range(2):
        grads = [torch.randn_like(p) for p in ref]
        for p, g in zip(ref, grads, strict=True):
            p.grad = g
        torch_opt.step()
        get_sink().drain()
        opt.step([g.to("hpu") for g in grads])
        htcore.mark_step()  # lazy: the step's graph runs here
        assert _device_ops(get_sink().drain()).count("optimizer_adamw_f32") == 1
    for mine, theirs in zip(on_card, ref, strict=True):
        torch.testing.assert_close(mine.cpu(), theirs.detach(), atol=1e-5, rtol=1e-4)
    assert float(opt.state[on_card[0]]["step"]) == 2.0
    with pytest.raises(ValueError, match="does not equal to the size of the parameters"):
        opt.step([None])
