"""The bridge's custom ops added in `hpusim.custom_ops`: one device op each, with the numerics
the bridge's own tests check (their reference formulas, re-derived here)."""

from __future__ import annotations

import math
from typing import Any

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional


def _device_ops(batch: Any) -> list[str]:
    from hpusim.sink import KIND_DEVICE

    return [batch.strings[batch.name[i]] for i in range(len(batch)) if batch.kind[i] == KIND_DEVICE]


def _one_device_op(fn: Any, *args: Any) -> tuple[Any, list[str]]:
    """(fn(*args), the device ops it launched)."""
    from hpusim.sink import get_sink

    get_sink().drain()
    out = fn(*args)
    return out, _device_ops(get_sink().drain())


def _hpu(ts: list[Any]) -> list[Any]:
    return [t.to("hpu") for t in ts]


@pytest.mark.parametrize("fused_weights", [False, True])
@pytest.mark.parametrize("permuted_weights", [False, True])
def test_mixture_of_experts_is_one_device_op_summing_the_routed_experts(
    hpu: Any, fused_weights: bool, permuted_weights: bool
) -> None:
    hpu("eager")
    torch.manual_seed(0)
    tokens, hidden, ffn, experts = 6, 16, 24, 4
    x = torch.randn(tokens, hidden)
    router_weights, table = torch.topk(torch.randn(tokens, experts), 2)
    w1, w2 = ([torch.randn(hidden, ffn) for _ in range(experts)] for _ in range(2))
    w3 = [torch.randn(ffn, hidden) for _ in range(experts)]
    want = torch.zeros_like(x)  # Mixtral's sparse MoE block, one (token, slot) at a time
    for t in range(tokens):
        for slot in range(2):
            e = int(table[t, slot])
            h = F.gelu(x[t] @ w1[e]) * (x[t] @ w2[e])
            want[t] += router_weights[t, slot] * (h @ w3[e])

    def stored(ws: list[Any]) -> list[Any]:
        return _hpu([w.t().contiguous() if permuted_weights else w for w in ws])

    head = (x.to("hpu"), table.to("hpu"), router_weights.to("hpu"))
    tail = (permuted_weights, "gelu", 0, experts - 1)
    if fused_weights:
        cat_dim = 0 if permuted_weights else 1
        w12 = [torch.cat((a, b), dim=cat_dim) for a, b in zip(stored(w1), stored(w2), strict=True)]
        op, weights = torch.ops.hpu.mixture_of_experts.fused_weights, (w12, stored(w3))
    else:
        op, weights = torch.ops.hpu.mixture_of_experts, (stored(w1), stored(w2), stored(w3))
    out, ops = _one_device_op(op, *head, *weights, *tail)
    assert ops == ["mixture_of_experts_f32"]
    torch.testing.assert_close(out.cpu(), want, atol=1e-4, rtol=1e-4)


def test_mixture_of_experts_computes_only_this_cards_experts(hpu: Any) -> None:
    # expert parallelism: experts outside [experts_min, experts_max] are another card's
    hpu("eager")
    torch.manual_seed(1)
    x = torch.randn(4, 8)
    table = torch.tensor([[0, 3], [1, 2], [3, 0], [2, 1]])
    rw = torch.ones(4, 2)
    w = [torch.randn(8, 8) for _ in range(2)]
    out = torch.ops.hpu.mixture_of_experts(
        x.to("hpu"), table.to("hpu"), rw.to("hpu"), _hpu(w), _hpu(w), _hpu(w), False, "relu", 2, 3
    ).cpu()
    expert = [(F.relu(x @ wi) * (x @ wi)) @ wi for wi in w]  # local experts 2 and 3
    torch.testing.assert_close(
        out, torch.stack([expert[1][0], expert[0][1], expert[1][2], expert[0][3]])
    )
    with pytest.raises(ValueError, match="activation 'tanh' is not one of"):
        torch.ops.hpu.mixture_of_experts(
            x.to("hpu"),
            table.to("hpu"),
            rw.to("hpu"),
            _hpu(w),
            _hpu(w),
            _hpu(w),
            False,
            "tanh",
            2,
            3,
        )


def test_kv_reorder_puts_each_window_in_its_packed_beam_order(hpu: Any) -> None:
    hpu("eager")
    torch.manual_seed(2)
    cache = torch.randint(0, 100, (3, 4, 8, 16, 5)).float()
    start = torch.tensor([0, 3, 5], dtype=torch.int32)
    length = torch.tensor([4, 9, 0], dtype=torch.int32)
    beams = torch.randint(0, 4, (3, 4), dtype=torch.int32)
    packed = (beams * torch.tensor([[64, 16, 4, 1]])).sum(-1).to(torch.uint8)
    args = (start.to("hpu"), (start + length).to("hpu"), packed.to("hpu"))
    copy, ops = _one_device_op(torch.ops.hpu.kv_reorder, cache.to("hpu"), *args)
    assert ops == ["kv_reorder_f32"]
    on_device = cache.to("hpu")
    torch.ops.hpu.kv_reorder_(on_device, *args)
    for i in range(3):
        window = cache[i].narrow(-2, int(start[i]), int(length[i]))
        window.copy_(window.index_select(0, beams[i]))
    assert torch.equal(copy.cpu(), cache) and torch.equal(on_device.cpu(), cache)
    with pytest.raises(ValueError, match="4 beams"):
        torch.ops.hpu.kv_reorder_(torch.zeros(1, 2, 3, 4, device="hpu"), *args)


def test_scaled_triangular_softmax_and_its_retained_statistics(hpu: Any) -> None:
    hpu("eager")
    torch.manual_seed(3)
    scores = torch.rand(4, 10, 10)
    masked = torch.tril(scores * 1.3)
    rows, cols = torch.triu_indices(10, 10, 1)
    masked[:, rows, cols] = torch.finfo(torch.float32).min
    out, ops = _one_device_op(torch.ops.hpu.scaled_triangular_softmax, scores.to("hpu"), 1.3)
    assert ops == ["scaled_triangular_softmax_f32"]
    torch.testing.assert_close(out.cpu(), torch.softmax(masked, dim=-1))
    res, recpr, row_max = torch.ops.hpu.scaled_triangular_softmax_retain(scores.to("hpu"), 1.3)
    assert recpr.dtype == torch.float32 and recpr.shape == row_max.shape == (4, 10, 1)
    again = torch.ops.hpu.scaled_triangular_softmax(scores.to("hpu"), 1.3, recpr, row_max)
    assert torch.equal(res.cpu(), again.cpu())


@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("trans_b", [False, True])
def test_masked_batch_gemm_adds_the_masks_product(hpu: Any, trans_a: bool, trans_b: bool) -> None:
    hpu("eager")
    torch.manual_seed(4)

    def make(shape: list[int], trans: bool) -> Any:
        return torch.randn(shape[:-2] + (shape[-2:][::-1] if trans else shape[-2:]))

    a, b = make([2, 3, 2, 4], trans_a), make([2, 3, 4, 8], trans_b)
    mask_a, mask_b = make([2, 1, 2, 4], trans_a), make([2, 1, 4, 8], trans_b)
    out, ops = _one_device_op(
        torch.ops.hpu.masked_batch_gemm, *_hpu([a, b, mask_a, mask_b]), trans_a, trans_b
    )
    assert ops == ["masked_batch_gemm_f32"]

    def op(t: Any, trans: bool) -> Any:
        return t.transpose(-2, -1) if trans else t

    want = op(a, trans_a) @ op(b, trans_b) + op(mask_a, trans_a) @ op(mask_b, trans_b)
    torch.testing.assert_close(out.cpu(), want, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name", ["exp", "sqrt", "rsqrt"])
def test_fast_math_unaries(hpu: Any, name: str) -> None:
    hpu("eager")
    x = torch.rand(5, 4, 3, dtype=torch.bfloat16) * 10 + 0.1
    out, ops = _one_device_op(getattr(torch.ops.hpu, f"{name}_fast_math"), x.to("hpu"))
    assert ops == [f"{name}_fast_math_bf16"]
    torch.testing.assert_close(out.cpu(), getattr(torch, name)(x))


def test_the_new_fused_op_costs() -> None:
    from hpusim.fused_costs import fused_op_cost

    tokens, hidden, ffn, k, experts = 32, 64, 224, 2, 8
    weights = [[(hidden, ffn)] * experts, [(hidden, ffn)] * experts, [(ffn, hidden)] * experts]
    moe = fused_op_cost(
        "hpu::mixture_of_experts",
        [(tokens, hidden), (tokens, k), (tokens, k), *weights],
        ["bfloat16", "int64", "bfloat16", *[["bfloat16"] * experts] * 3],
    )
    assert moe is not None and moe.engine == "MME"
    assert moe.mme_flops == 2 * tokens * k * 3 * hidden * ffn
    fused = fused_op_cost(
        "hpu::mixture_of_experts.fused_weights",
        [(tokens, hidden), (tokens, k), (tokens, k), [(hidden, 2 * ffn)] * experts, weights[2]],
        ["bfloat16", "int64", "bfloat16", ["bfloat16"] * experts, ["bfloat16"] * experts],
    )
    assert fused is not None and fused.mme_flops == moe.mme_flops
    assert fused.bytes_read == moe.bytes_read
    gemm = fused_op_cost(
        "hpu::masked_batch_gemm",
        [(2, 3, 2, 4), (2, 3, 4, 8), (2, 1, 2, 4), (2, 1, 4, 8)],
        ["float32"] * 4,
    )
    assert gemm is not None and gemm.mme_flops == 2 * 2 * 6 * (2 * 8 * 4) * 1
    assert gemm.bytes_written == 2 * 3 * 2 * 8 * 4
    exp = fused_op_cost("hpu::exp_fast_math", [(5, 4)], ["bfloat16"])
    assert exp is not None and exp.engine == "TPC" and exp.bytes_read == math.prod((5, 4)) * 2
