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


def _masked_reference(x: Any, scale: float, bounds: list[tuple[int, int]], group: int) -> Any:
    """Softmax of x * scale with each group's keys outside [start, end) and (square scores) the
    keys after the query at -inf; a row with no key left is 0 (the kernel's output there)."""
    batch, rows, cols = x.shape
    s = x.float() * scale
    for b in range(batch):
        start, end = bounds[b // group]
        s[b, :, :start] = float("-inf")
        s[b, :, end:] = float("-inf")
        if rows == cols:
            s[b] = s[b].masked_fill(torch.ones(rows, cols, dtype=torch.bool).triu(1), float("-inf"))
    return torch.softmax(s, dim=-1).nan_to_num(nan=0.0)


def test_scaled_masked_triangular_softmax_masks_each_groups_window(hpu: Any) -> None:
    hpu("eager")
    torch.manual_seed(5)
    x = torch.randn(4, 6, 6) * 5
    start_end = torch.tensor([[1, 5], [0, 3]])  # groups of two batch entries
    out, ops = _one_device_op(
        torch.ops.hpu.scaled_masked_triangular_softmax, x.to("hpu"), start_end.to("hpu"),
        1.3, 2, True, 0, None,
    )  # fmt: skip
    assert ops == ["scaled_masked_triangular_softmax_f32"]
    want = _masked_reference(x, 1.3, [(1, 5), (0, 3)], 2)
    torch.testing.assert_close(out.cpu(), want)
    assert torch.equal(out.cpu()[:2, 0], torch.zeros(2, 6))  # query 0 sees only key 0 < start
    # next-token scores ([batch, 1, keys]): no triangle, flattened (start, end) pairs
    step = torch.randn(4, 1, 9)
    flat = torch.tensor([2, 7, 4, 9])
    out = torch.ops.hpu.scaled_masked_triangular_softmax(
        step.to("hpu"), flat.to("hpu"), 1.1, 2, False, 1, None
    )
    torch.testing.assert_close(out.cpu(), _masked_reference(step, 1.1, [(2, 7), (4, 9)], 2))


def test_scaled_masked_triangular_softmax_fp8_output_and_checks(hpu: Any) -> None:
    hpu("eager")
    x = torch.randn(2, 4, 4, dtype=torch.bfloat16)
    se = torch.tensor([0, 4]).to("hpu")
    out = torch.ops.hpu.scaled_masked_triangular_softmax(
        x.to("hpu"), se, 1.0, 2, True, 0, torch.float8_e4m3fn
    )
    assert out.dtype == torch.float8_e4m3fn
    want = _masked_reference(x, 1.0, [(0, 4)], 2).to(torch.float8_e4m3fn)
    assert torch.equal(out.cpu().float(), want.float())
    with pytest.raises(RuntimeError, match="input must be bfloat16 and output must be fp8"):
        torch.ops.hpu.scaled_masked_triangular_softmax(
            x.float().to("hpu"), se, 1.0, 2, True, 0, torch.float8_e4m3fn
        )
    with pytest.raises(RuntimeError, match="Dim1 must equal"):
        torch.ops.hpu.scaled_masked_triangular_softmax(
            torch.zeros(2, 3, 4, device="hpu"), se, 1.0, 2, True, 0, None
        )
    with pytest.raises(RuntimeError, match="needs 2"):
        torch.ops.hpu.scaled_masked_triangular_softmax(
            torch.zeros(2, 4, 4, device="hpu"), se, 1.0, 1, True, 0, None
        )


def test_ragged_softmax_keeps_each_rows_first_valid_count(hpu: Any) -> None:
    hpu("eager")
    torch.manual_seed(6)
    x = torch.randn(3, 1, 1, 5, dtype=torch.bfloat16)
    counts = torch.tensor([1, 3, 5], dtype=torch.int32)
    out, ops = _one_device_op(torch.ops.hpu.ragged_softmax, x.to("hpu"), -1, True, counts.to("hpu"))
    assert ops == ["ragged_softmax_bf16"] and out.dtype == torch.float32
    for row, n in enumerate(counts.tolist()):
        want = torch.zeros(5)
        want[:n] = torch.softmax(x[row, 0, 0, :n].float(), dim=-1)
        torch.testing.assert_close(out.cpu()[row, 0, 0], want)


def test_plain_index_and_in_place_interleave(hpu: Any) -> None:
    hpu("eager")
    x = torch.rand(5, 5, 5)
    idx = [torch.tensor([1, 2, 3]), torch.tensor([1, 3, 1])]
    out, ops = _one_device_op(torch.ops.hpu.plain_index, x.to("hpu"), _hpu(idx))
    assert ops == ["plain_index_f32"]
    assert torch.equal(out.cpu(), x[idx[0], idx[1]])
    beams = torch.randn(8, 2, 2, 5).to(torch.float8_e5m2)  # CPU torch has no fp8 index kernel
    on_device = beams.to("hpu")
    _, ops = _one_device_op(torch.ops.hpu.in_place_interleave_, on_device)
    assert ops == ["in_place_interleave"]  # the in-place op's device name; fp8 has no suffix
    first_quarter = beams.view(torch.uint8)[:2].repeat_interleave(4, dim=0)
    assert torch.equal(on_device.cpu().view(torch.uint8), first_quarter)
    with pytest.raises(RuntimeError, match="multiple of 4"):
        torch.ops.hpu.in_place_interleave(torch.zeros(6, 1, 1, 1, device="hpu"))


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("layout", ["padded", "concatenated", "unbatched"])
def test_hpex_ctc_loss_matches_torch_with_one_op_each_way(
    hpu: Any, reduction: str, layout: str
) -> None:
    hpu("eager")
    from habana_frameworks.torch.hpex.kernels import CTCLoss  # the shim: after enable()

    torch.manual_seed(7)
    steps, classes, batch = 12, 6, 3
    if layout == "unbatched":
        log_probs = torch.randn(steps, classes).log_softmax(-1)
        lengths, target_lengths = torch.tensor(steps), torch.tensor(4)
        targets, blank = torch.randint(1, classes, (4,)), 0
    else:
        log_probs = torch.randn(steps, batch, classes).log_softmax(-1)
        lengths = torch.tensor([12, 10, 7])
        target_lengths = torch.tensor([4, 1, 3])
        if layout == "padded":  # blank last, int32 targets padded to 5
            targets, blank = torch.randint(0, classes - 1, (batch, 5), dtype=torch.int32), 5
        else:
            targets, blank = torch.randint(1, classes, (int(target_lengths.sum()),)), 0
    ref_in = log_probs.clone().requires_grad_()
    ref = F.ctc_loss(ref_in, targets, lengths, target_lengths, blank, reduction)
    ref.sum().backward()
    dev_in = log_probs.to("hpu").requires_grad_()
    args = [t.to("hpu") for t in (targets, lengths, target_lengths)]
    loss, ops = _one_device_op(CTCLoss.apply, dev_in, *args, blank, reduction)
    assert ops == ["ctc_loss_custom_f32"]
    torch.testing.assert_close(loss.cpu(), ref.reshape(loss.shape), atol=1e-5, rtol=1e-5)
    _, ops = _one_device_op(lambda: loss.sum().backward())
    assert "ctc_loss_custom_backward_f32" in ops
    torch.testing.assert_close(dev_in.grad.cpu(), ref_in.grad, atol=1e-5, rtol=1e-5)


def test_ctc_loss_custom_returns_the_kernels_alpha_layout(hpu: Any) -> None:
    hpu("eager")
    log_probs = torch.randn(7, 2, 5).log_softmax(-1)
    targets = torch.tensor([[1, 2, 0, 0], [3, 3, 1, 0]])
    loss, alpha = torch.ops.hpu.ctc_loss_custom(
        log_probs.to("hpu"), targets.to("hpu"), torch.tensor([7, 6]).to("hpu"),
        torch.tensor([2, 3]).to("hpu"), 0, 0, False,
    )  # fmt: skip
    assert loss.shape == (2,) and alpha.shape == (7, 2, 2 * 4 + 1)
    want = F.ctc_loss(log_probs, targets, [7, 6], [2, 3], reduction="none")
    torch.testing.assert_close(loss.cpu(), want)


def test_the_ctc_and_index_costs() -> None:
    from hpusim.fused_costs import fused_op_cost

    fwd = fused_op_cost(
        "hpu::ctc_loss_custom",
        [(50, 4, 30), (4, 10), (4,), (4,)],
        ["float32", "int64", "int64", "int64"],
    )
    assert fwd is not None and fwd.engine == "TPC"
    states = 50 * 4 * 21
    assert fwd.flops == 6 * states and fwd.bytes_written == (states + 4) * 4
    gather = fused_op_cost(
        "hpu::plain_index", [(5, 6, 7), [(3,), (2, 1)]], ["bfloat16", ["int64", "int64"]]
    )
    # indices broadcast to (2, 3): six rows of 7 bf16 values gathered
    assert gather is not None and gather.bytes_written == 2 * 3 * 7 * 2


def test_sdpa_dropout_variants_torch_compile_inserts(hpu: Any) -> None:
    hpu("eager")
    torch.manual_seed(8)
    q, k, v = (torch.randn(2, 3, 6, 8) for _ in range(3))
    args = _hpu([q, k, v])
    want = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    for name in ("sdpa_recomp_fwd_non_dropout", "sdpa_fwd_non_dropout"):
        tail = (True, "None", None, "left") if "recomp" in name else ("None", None, "left")
        out, ops = _one_device_op(getattr(torch.ops.hpu, name), *args, None, 0.0, 0.125**0.5, True, *tail)  # fmt: skip
        assert ops == [f"{name}_f32"]
        torch.testing.assert_close(out[0].cpu(), want, atol=1e-5, rtol=1e-5)
    seed = torch.tensor([1234], dtype=torch.int32).to("hpu")
    recomp = torch.ops.hpu.sdpa_recomp_fwd_dropout_seed
    tail = (None, 0.5, 0.125**0.5, True, True, "None", None, "left")
    first, ops = _one_device_op(recomp, seed, *args, *tail)
    assert ops == ["sdpa_recomp_fwd_dropout_seed_f32"]
    again = recomp(seed, *args, *tail)
    assert torch.equal(first[0].cpu(), again[0].cpu())  # the seed decides the dropout mask
    assert not torch.allclose(first[0].cpu(), want)
    plain = torch.ops.hpu.sdpa_fwd_dropout_seed(seed, *args, None, 0.5, 0.125**0.5, True, "None", None, "left")  # fmt: skip
    assert int(plain[2].cpu().sum()) not in (0, plain[2].numel())  # a real keep-mask


def test_the_seeded_sdpa_costs_skip_the_seed() -> None:
    from hpusim.fused_costs import fused_op_cost

    qkv = [(2, 4, 128, 64)] * 3
    plain = fused_op_cost("hpu::sdpa_fwd_dropout", [*qkv, None], ["bfloat16"] * 3 + [None])
    seeded = fused_op_cost(
        "hpu::sdpa_fwd_dropout_seed", [(1,), *qkv, None], ["int32"] + ["bfloat16"] * 3 + [None]
    )
    assert plain is not None and seeded is not None
    assert (seeded.flops, seeded.nbytes) == (plain.flops, plain.nbytes) and seeded.flops > 0
