"""The bridge's FP8 casts and GEMM: the `out=` first generation (`hpu::cast_to_fp8`,
`hpu::fp8_gemm`), the `.scalar` / `.scalar_list` overloads, per-channel scales and the casts'
input checks (`hpusim.fp8_ops`, `hpusim.transformer_engine`)."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")


def _device_ops(fn: Any) -> list[str]:
    from hpusim.sink import KIND_DEVICE, get_sink

    get_sink().drain()
    fn()
    batch = get_sink().drain()
    return [batch.strings[batch.name[i]] for i in range(len(batch)) if batch.kind[i] == KIND_DEVICE]


def test_cast_to_fp8_writes_out_and_amax(hpu: Any) -> None:
    hpu("eager")
    x = torch.tensor([[0.3, -2.0, 700.0], [1.5, -1000.0, 0.0]])
    scale = torch.tensor(0.5)
    out = torch.empty(2, 3, dtype=torch.float8_e4m3fn, device="hpu")
    amax = torch.zeros((), device="hpu")
    args = (x.to("hpu"), scale.to("hpu"), False, out, amax)
    ops = _device_ops(lambda: torch.ops.hpu.cast_to_fp8(*args))
    assert ops == ["cast_to_fp8_f32"]
    # Gaudi 2 saturates E4M3 at 240, rounding to nearest
    want = (x * 0.5).clamp(-240, 240).to(torch.float8_e4m3fn)
    assert torch.equal(out.cpu().float(), want.float())
    assert float(amax.cpu()) == 1000.0
    with pytest.raises(RuntimeError, match="must be of float or bfloat16"):
        torch.ops.hpu.cast_to_fp8(out, None, False, out, amax)


@pytest.mark.parametrize("accumulate", [False, True])
def test_fp8_gemm_writes_the_dequantized_product_into_out(hpu: Any, accumulate: bool) -> None:
    hpu("eager")
    torch.manual_seed(0)
    a, b = torch.randn(16, 8), torch.randn(16, 12)  # A is transposed: [K, M]
    a8, b8 = (t.to(torch.float8_e4m3fn) for t in (a * 4, b * 2))
    bias = torch.randn(8, 12)
    out = torch.full((8, 12), 3.0, device="hpu")
    args = (a8.to("hpu"), True, b8.to("hpu"), False, out, torch.float32)
    scales = (torch.tensor(0.25).to("hpu"), torch.tensor(0.5).to("hpu"))
    tail = (bias.to("hpu"), accumulate, out)
    ops = _device_ops(lambda: torch.ops.hpu.fp8_gemm(*args, *scales, *tail))
    assert ops == ["fp8_gemm"]  # named by its fp8 input, like the other fp8 ops
    want = (a8.float().t() @ b8.float()) * 0.125 + bias + (3.0 if accumulate else 0.0)
    torch.testing.assert_close(out.cpu(), want)


def test_scalar_overloads_and_per_channel_scales(hpu: Any) -> None:
    hpu("eager")
    torch.manual_seed(1)
    a = (torch.rand(6, 10) * 8).to(torch.float8_e4m3fn)
    b = (torch.rand(10, 4) * 8).to(torch.float8_e4m3fn)
    product = a.float() @ b.float()
    got = torch.ops.hpu.fp8_gemm_v2(
        a.to("hpu"), False, b.to("hpu"), False, None, torch.float32, 2.0, 0.5
    )
    torch.testing.assert_close(got.cpu(), product)
    per_row = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]  # B's scales laid out [6, 1]: one per output row
    got = torch.ops.hpu.fp8_gemm_v2(
        a.to("hpu"), False, b.to("hpu"), False, None, torch.float32, [1.0], per_row,
        None, False, [6, 1],
    )  # fmt: skip
    torch.testing.assert_close(got.cpu(), product * torch.tensor(per_row)[:, None])
    with pytest.raises(RuntimeError, match=r"Number of scale elements \(6\) is not equal"):
        torch.ops.hpu.fp8_gemm_v2(
            a.to("hpu"), False, b.to("hpu"), False, None, torch.float32, [1.0], per_row,
            None, False, [4],
        )  # fmt: skip
    x = torch.randn(3, 5)
    casted, _ = torch.ops.hpu.cast_to_fp8_v2(x.to("hpu"), 4.0, False, False, torch.float8_e5m2)
    assert torch.equal(casted.cpu().float(), (x * 4).to(torch.float8_e5m2).float())
    back = torch.ops.hpu.cast_from_fp8(casted, [0.25], torch.float32)
    torch.testing.assert_close(back.cpu(), casted.cpu().float() / 4)


def test_cast_to_fp8_v2_of_an_fp8_tensor_follows_the_kernels_rules(hpu: Any) -> None:
    hpu("eager")
    x = torch.randn(4, 4).to(torch.float8_e5m2).to("hpu")
    same, _ = torch.ops.hpu.cast_to_fp8_v2(x, 1.0, False, False, torch.float8_e5m2)
    assert torch.equal(same.cpu().float(), x.cpu().float())
    with pytest.raises(RuntimeError, match="CastToFp8V2 must have no amax for float8"):
        torch.ops.hpu.cast_to_fp8_v2(x, None, False, True, torch.float8_e5m2)
    with pytest.raises(RuntimeError, match="are Float8_e5m2 and Float8_e4m3fn"):
        torch.ops.hpu.cast_to_fp8_v2(x, None, False, False, torch.float8_e4m3fn)


@pytest.mark.parametrize("fp8", [False, True])
def test_te_linear_takes_its_weight_in_forward_without_allocated_parameters(
    hpu: Any, fp8: bool
) -> None:
    hpu("eager")
    import habana_frameworks.torch.hpex.experimental.transformer_engine as te

    torch.manual_seed(2)
    x, w, b = torch.randn(4, 8), torch.randn(6, 8), torch.randn(6)
    linear = te.Linear(8, 6, bias=True, skip_weight_param_allocation=True)
    assert linear.weight is None and list(linear.parameters()) == []
    with te.fp8_autocast(enabled=fp8):
        out = linear(x.to("hpu"), w.to("hpu"), b.to("hpu"), is_first_microbatch=True)
        keyword = linear(x.to("hpu"), weight=w.to("hpu"), bias=b.to("hpu"))
    want = torch.nn.functional.linear(x, w, b)
    tolerance = {"atol": 0.5, "rtol": 0.1} if fp8 else {}
    torch.testing.assert_close(out.cpu(), want, **tolerance)
    assert torch.equal(out.cpu(), keyword.cpu())
    with pytest.raises(ValueError, match="needs the weight passed to forward"):
        linear(x.to("hpu"))


def test_conv2d_fp8_dequantizes_then_convolves_on_the_mme(hpu: Any) -> None:
    hpu("eager")
    torch.manual_seed(3)
    x = torch.rand(2, 3, 9, 9).to(torch.float8_e4m3fn)
    w = torch.rand(5, 3, 2, 2).to(torch.float8_e4m3fn)
    bias = torch.rand(5)
    args = (x.to("hpu"), w.to("hpu"), bias.to("hpu"), [1, 1], [1, 1], [1, 1], 1, torch.float32)
    scales = (torch.tensor(1.5).to("hpu"), torch.tensor(0.5).to("hpu"))
    out = torch.ops.hpu.conv2d_fp8(*args, *scales)
    want = torch.nn.functional.conv2d(x.float(), w.float(), None, 1, 1) * 0.75
    torch.testing.assert_close(out.cpu(), want + bias[None, :, None, None])
    default = torch.ops.hpu.conv2d_fp8.scalar(x.to("hpu"), w.to("hpu"), scale_input=2.0)
    assert default.dtype == torch.bfloat16  # the kernel's default output
    want = torch.nn.functional.conv2d(x.float(), w.float()) * 2.0
    assert torch.equal(default.cpu(), want.to(torch.bfloat16))
    from hpusim.device_model import ENGINE_MME, engine_of

    assert engine_of("conv2d_fp8") == ENGINE_MME


@pytest.mark.parametrize("out_dtype", [None, torch.float32])
def test_sum_fp8_accumulates_in_fp32(hpu: Any, out_dtype: Any) -> None:
    hpu("eager")
    x = (torch.randn(4, 5, 6) * 10).to(torch.float8_e5m2)
    got = torch.ops.hpu.sum_fp8(x.to("hpu"), [0, 2], True, out_dtype)
    want = x.float().sum(dim=[0, 2], keepdim=True)
    assert got.dtype == (out_dtype or torch.float8_e5m2) and got.shape == (1, 5, 1)
    assert torch.equal(got.cpu(), want.to(got.dtype))
    whole = torch.ops.hpu.sum_fp8(x.to("hpu"), None, False, torch.float32)
    assert whole.shape == () and torch.equal(whole.cpu(), x.float().sum())


def test_softmax_fp8_scales_then_saturates_to_e4m3(hpu: Any) -> None:
    hpu("eager")
    torch.manual_seed(4)
    x = torch.rand(2, 3, 5, dtype=torch.bfloat16) * 4
    add = torch.rand(2, 1, 5, dtype=torch.bfloat16)
    probs = torch.softmax((x.float() * 0.1 * 0.05 + add.float()), dim=-1)
    got = torch.ops.hpu.softmax_fp8(
        x.to("hpu"), -1, torch.tensor(0.05).to("hpu"), torch.tensor(2.5).to("hpu"),
        torch.tensor(0.1).to("hpu"), add.to("hpu"),
    )  # fmt: skip
    assert got.dtype == torch.float8_e4m3fn
    assert torch.equal(got.cpu().float(), (probs * 2.5).to(torch.float8_e4m3fn).float())
    scalar = torch.ops.hpu.softmax_fp8(x.to("hpu"), -1, 0.05, 2.5, 0.1, add.to("hpu"))
    assert torch.equal(scalar.cpu().float(), got.cpu().float())
    plain = torch.ops.hpu.softmax_fp8(x.to("hpu"), -1)  # no output scale: bf16
    assert plain.dtype == torch.bfloat16
    assert torch.equal(plain.cpu(), torch.softmax(x.float(), -1).to(torch.bfloat16))


def test_casts_scale_in_the_tensors_dtype_and_can_round_stochastically(hpu: Any) -> None:
    hpu("eager")
    torch.manual_seed(5)
    x = torch.rand(64, 48, dtype=torch.bfloat16) * 30 + 10
    scale = torch.tensor(1.3)
    casted, _ = torch.ops.hpu.cast_to_fp8_v2(
        x.to("hpu"), scale.to("hpu"), False, False, torch.float8_e4m3fn
    )
    # the bridge's test_cast_to_fp8_v2 reference: the product rounded to bf16, then to fp8
    want = (x * scale.to(torch.bfloat16)).to(torch.float8_e4m3fn)
    assert torch.equal(casted.cpu().float(), want.float())
    back = torch.ops.hpu.cast_from_fp8(casted, (1 / scale).to("hpu"), torch.bfloat16)
    assert torch.equal(back.cpu(), want.to(torch.bfloat16) * (1 / scale).to(torch.bfloat16))
    steady = torch.full((20000,), 13.3)  # between E4M3's 13 and 14
    sr, _ = torch.ops.hpu.cast_to_fp8_v2(steady.to("hpu"), None, True, False, torch.float8_e4m3fn)
    values = sr.cpu().float()
    assert set(values.unique().tolist()) == {13.0, 14.0}
    assert abs(values.mean().item() - 13.3) < 0.02  # unbiased on average


def test_cast_to_fp8_hybrid_gives_both_formats_and_the_amax(hpu: Any) -> None:
    hpu("eager")
    x = torch.tensor([[0.3, -2.0, 70.0], [1.5, -100.0, 0.0]])
    e5m2, e4m3, amax = torch.ops.hpu.cast_to_fp8_hybrid(
        x.to("hpu"), torch.tensor(1.3).to("hpu"), torch.tensor(0.7).to("hpu"), False, True
    )
    assert (e5m2.dtype, e4m3.dtype) == (torch.float8_e5m2, torch.float8_e4m3fn)
    assert torch.equal(e5m2.cpu().float(), (x * 1.3).to(torch.float8_e5m2).float())
    assert torch.equal(e4m3.cpu().float(), (x * 0.7).to(torch.float8_e4m3fn).float())
    assert float(amax.cpu()) == 100.0
    _, _, none = torch.ops.hpu.cast_to_fp8_hybrid(x.to("hpu"))
    assert none.numel() == 0


def test_te_linear_scales_by_its_amax_history_one_step_late(hpu: Any) -> None:
    """Delayed scaling (Intel's transformer_engine, which the bridge re-exports): step 1 casts
    with scale 1 and records the amaxes; step 2's scale is 2**floor(log2(fp8_max / amax)) of the
    history; `save_fp8_meta` / `load_fp8_meta` restore it; a forced-off measurement records
    nothing."""
    hpu("eager")
    import habana_frameworks.torch.hpex.experimental.transformer_engine as te
    from habana_frameworks.torch.hpex.experimental.transformer_engine.fp8 import (
        FP8GlobalStateManager,
    )

    fmt = te.recipe.Format.E5M2
    recipe = te.recipe.DelayedScaling(
        fp8_format=fmt, amax_history_len=2, amax_compute_algo="max", reduce_amax=False
    )
    linear = te.Linear(4, 3, bias=False, params_dtype=torch.float32)
    x = torch.full((2, 4), 1000.0, device="hpu", requires_grad=True)

    def step(inp: torch.Tensor, **kw: Any) -> None:
        with te.fp8_autocast(enabled=True, fp8_recipe=recipe, **kw):
            linear(inp).sum().backward()

    step(x)
    fwd = linear.fp8_meta["scaling_fwd"]
    assert torch.equal(fwd.scale.cpu(), torch.ones(2))  # step 1: the initial scale
    w_amax = linear.weight.detach().abs().max().cpu()
    assert torch.equal(fwd.amax_history[0].cpu(), torch.stack([torch.tensor(1000.0), w_amax]))
    saved = linear.save_fp8_meta()
    step(x)
    want = torch.pow(2.0, torch.floor(torch.log2(fmt.value.max_fwd / torch.tensor(1000.0))))
    assert fwd.scale[0].cpu() == want == 32.0  # from step 1's amax
    assert int(fwd.amax_history_index.cpu()) == 1  # step 2 wrote the history's second row
    linear.load_fp8_meta(saved)
    assert torch.equal(linear.fp8_meta["scaling_fwd"].scale.cpu(), torch.ones(2))
    before = linear.fp8_meta["scaling_fwd"].amax_history.clone()
    step(x * 2, force_measurement=False)  # measurement forced off: the history stays
    assert torch.equal(linear.fp8_meta["scaling_fwd"].amax_history, before)
    assert FP8GlobalStateManager.get_manual_measurement_mode() is False
    FP8GlobalStateManager.set_measurement_mode(False)
    assert FP8GlobalStateManager.get_manual_measurement_mode() is None


def test_activation_checkpointing_recompute_leaves_the_fp8_state(hpu: Any) -> None:
    """`distributed.activation_checkpointing()`: the forward torch's checkpoint runs again in
    the backward counts no step, updates no scale and measures no amax; without it each step
    counted twice and the recompute moved the forward scales inside the backward."""
    hpu("lazy")
    import habana_frameworks.torch.core as htcore
    import habana_frameworks.torch.hpex.experimental.transformer_engine as te
    from habana_frameworks.torch.hpex.experimental.transformer_engine.distributed import (
        activation_checkpointing,
    )
    from torch.utils.checkpoint import checkpoint

    recipe = te.recipe.DelayedScaling(
        fp8_format=te.recipe.Format.E5M2, amax_history_len=1, interval=1, reduce_amax=False
    )
    linear = te.Linear(8, 8, bias=False)
    # as the bridge's test_gradient_checkpointing: the FP8 region is the function's own, so
    # the recompute runs in FP8 too
    ckpt = activation_checkpointing()(te.fp8_autocast(enabled=True, fp8_recipe=recipe)(linear))
    for step in (1, 2, 3):
        x = torch.full((4, 8), 10.0 * step, device="hpu", requires_grad=True)
        y = checkpoint(ckpt, x, use_reentrant=True)
        after_forward = linear.fp8_meta["scaling_fwd"].scale.cpu().clone()
        history = linear.fp8_meta["scaling_fwd"].amax_history.cpu().clone()
        y.sum().backward()
        htcore.mark_step()
        assert linear.run_cnt == step  # the recompute counted no step
        assert torch.equal(linear.fp8_meta["scaling_fwd"].scale.cpu(), after_forward)
        assert torch.equal(linear.fp8_meta["scaling_fwd"].amax_history.cpu(), history)
    assert float(history[0][0]) == 30.0  # the third step's forward measured its input


def test_te_fused_attention_is_fused_sdpa_outside_fp8(hpu: Any) -> None:
    """`te.FusedAttention` outside an FP8 region: the fused attention kernel (values and
    gradients as torch's SDPA); inside one it says it is not emulated."""
    hpu("lazy")
    import habana_frameworks.torch.hpex.experimental.transformer_engine as te

    torch.manual_seed(4)
    q, k, v = (torch.randn(2, 4, 16, 8, requires_grad=True) for _ in range(3))
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    ref.sum().backward()
    attention = te.FusedAttention(scale=None, attention_dropout=0.0, enable_recompute=True)
    qh, kh, vh = (t.detach().to("hpu").requires_grad_() for t in (q, k, v))
    out = attention(qh, kh, vh, None, True, "None")
    out.sum().backward()
    torch.testing.assert_close(out.cpu(), ref, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(kh.grad.cpu(), k.grad, atol=1e-4, rtol=1e-4)
    assert isinstance(attention.fp8_meta, dict)
    recipe = te.recipe.DelayedScaling(fp8_format=te.recipe.Format.E5M2)
    with (
        te.fp8_autocast(enabled=True, fp8_recipe=recipe),
        pytest.raises(NotImplementedError, match="FusedAttention in an fp8_autocast region"),
    ):
        attention(qh, kh, vh, None, True, "None")
