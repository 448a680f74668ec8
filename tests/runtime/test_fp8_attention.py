"""FP8 fused attention (`hpex.kernels.fp8_fused_sdpa`) against the CPU reference the bridge's
own test writes (`any_mode/FusedSDPA/test_hpu_sdpa_fp8.py`): q, k, v cast to FP8 with
per-tensor scales and read back with their descales, the probabilities cast to FP8 with
`q_scale_s` before `P V`, the output in bf16 or (recompute) FP8 with `q_scale_o`."""

from __future__ import annotations

import math
from typing import Any

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional


def _reference(q: Any, k: Any, v: Any, is_causal: bool) -> tuple[Any, Any]:
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if is_causal:  # top-left aligned, as torch and the bridge's reference
        keep = torch.ones(s.shape[-2], s.shape[-1], dtype=torch.bool).tril()
        s = s.masked_fill(~keep, float("-inf"))
    p = torch.softmax(s, dim=-1)
    return p @ v, p.abs().amax()


def _pow2_scale(t: Any) -> float:
    return 2.0 ** math.floor(math.log2(216.0 / float(t.abs().amax())))


@pytest.mark.parametrize("recompute", [True, False])
@pytest.mark.parametrize("is_causal", [True, False])
def test_fp8_attention_matches_the_reference_in_inference(
    hpu: Any, recompute: bool, is_causal: bool
) -> None:
    hpu("lazy")
    import habana_frameworks.torch.hpu as ht
    from habana_frameworks.torch.hpex.kernels import fp8_fused_sdpa

    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 4, 16, 8), torch.randn(2, 4, 32, 8), torch.randn(2, 4, 32, 8))
    ref, amax_s_ref = _reference(q, k, v, is_causal)
    scales = [_pow2_scale(t) for t in (q, k, v)]
    fp8 = [
        torch.ops.hpu.cast_to_fp8_v2(t.to("hpu"), torch.tensor([s]).to("hpu"), False, False,
                                     torch.float8_e4m3fn)[0]
        for t, s in zip((q, k, v), scales, strict=True)
    ]  # fmt: skip
    d_scales = [torch.tensor([1.0 / s]).to("hpu") for s in scales]
    q_scale_s = torch.tensor([128.0]).to("hpu")
    q_scale_o = torch.tensor([_pow2_scale(ref)]).to("hpu") if recompute else None
    with ht.sdp_kernel(enable_recompute=recompute):
        out, amax_s, _ = fp8_fused_sdpa(
            *fp8, is_causal=is_causal, d_scale_q=d_scales[0], d_scale_k=d_scales[1],
            d_scale_v=d_scales[2], q_scale_s=q_scale_s, q_scale_o=q_scale_o,
            d_scale_s=1.0 / q_scale_s, is_amax_s=True,
        )  # fmt: skip
    got = out.cpu().float()
    if recompute:
        assert out.dtype == torch.float8_e4m3fn  # the output cast with q_scale_o
        got = got / q_scale_o.cpu()
    else:
        assert out.dtype == torch.bfloat16
    assert amax_s.shape == (1,) and amax_s.dtype == torch.float32
    assert float(amax_s.cpu()) == pytest.approx(float(amax_s_ref), abs=0.05)
    assert torch.allclose(got, ref, atol=0.4, rtol=1e-3)
    exact = torch.allclose(got, ref, atol=1e-3)
    assert not exact  # FP8 rounding shows: the inputs and P were quantized
