"""What an MME op asks of the MME: its GEMMs (`mme_cost.Kind`, batch, M, N, K) and FLOPs, from
the op's base name, its tensor inputs' shapes, its non-tensor arguments and its output size.

    mme_problems("linear", [(8, 512, 1024), (4096, 1024)], (), 8 * 512 * 4096)
    -> [("gemm", 1, 4096, 4096, 1024)]

A convolution is its implicit GEMM per pass (`mme_cost.conv_gemm`); `convolution_backward`
is its dX and dW passes (as its `output_mask` asks). An op whose dimensions cannot be read
gets None: the device model then prices its FLOPs at the MME's full rate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Final

from hpusim.mme_cost import Kind, conv_gemm

Problem = tuple[Kind, int, int, int, int]
"""(kind, batch, M, N, K): M output rows (spatial), N output columns (FCD), K the common dim."""

FP8_GEMMS: Final = frozenset({"fp8_gemm_v2", "fp8_gemm"})
"""`hpu::fp8_gemm(A, trans_A, B, trans_B, D, ..., out)` has `fp8_gemm_v2`'s leading arguments."""
CONVS: Final = frozenset(
    {"convolution", "_convolution", "conv1d", "conv2d", "conv3d", "conv2d_fp8"}
)


def _gemm(b: int, m: int, n: int, k: int) -> Problem:
    return ("gemm", b, m, n, k)


def _matmul(a: Sequence[int], w: Sequence[int]) -> Problem:
    """torch.matmul's GEMM: a 2-D right operand flattens the left one's leading dims into M
    (the brain's flattening of a broadcast operand); two batched operands are a batched GEMM."""
    if len(a) == 1:
        a = (1, a[0])
    if len(w) == 1:
        return _gemm(1, math.prod(a[:-1]), 1, a[-1])
    if len(w) == 2:
        return _gemm(1, math.prod(a[:-1]), w[-1], a[-1])
    lead = max(len(a), len(w)) - 2
    batch = 1
    for i in range(lead):  # the broadcast batch dims, aligned at the right
        da = a[len(a) - 3 - i] if len(a) - 3 - i >= 0 else 1
        dw = w[len(w) - 3 - i] if len(w) - 3 - i >= 0 else 1
        batch *= max(da, dw)
    return _gemm(batch, a[-2], w[-1], a[-1])


def _conv(kind: Kind, x: Sequence[int], w: Sequence[int], y: Sequence[int]) -> tuple[Problem, int]:
    """A convolution pass with `groups` inferred from the channels (C = groups x w[1]); its
    FLOPs."""
    groups = max(x[1] // max(w[1], 1), 1)
    per_w = (w[0] // groups, *w[1:])
    per_x = (x[0], w[1], *x[2:])
    per_y = (y[0], w[0] // groups, *y[2:])
    b, m, n, k = conv_gemm(kind, per_x, per_w, per_y)
    return (kind, b * groups, m, n, k), 2 * b * groups * m * n * k


def mme_problems(
    op: str, shapes: Sequence[tuple[int, ...]], scalars: Sequence[Any], out_numel: int
) -> tuple[list[Problem], int] | None:
    """The MME GEMMs of one op and its FLOPs (2 per multiply-add), or None when its dimensions
    cannot be read from `shapes` (the op's tensor inputs in order)."""
    try:
        return _problems(op, list(shapes), scalars, out_numel)
    except (IndexError, TypeError, ValueError, ZeroDivisionError):
        return None


def _problems(
    op: str, shapes: list[tuple[int, ...]], scalars: Sequence[Any], out_numel: int
) -> tuple[list[Problem], int] | None:
    if op in FP8_GEMMS:
        a, b = shapes[0], shapes[1]
        ta, tb = (scalars[0] is True, scalars[1] is True) if len(scalars) >= 2 else (False, False)
        m, k = (a[-1], a[-2]) if ta else (a[-2], a[-1])
        n = b[-2] if tb else b[-1]
        p = _gemm(math.prod(a[:-2]), m, n, k)
    elif op in ("mm", "_scaled_mm"):
        p = _gemm(1, shapes[0][0], shapes[1][1], shapes[0][1])
    elif op == "addmm":
        p = _gemm(1, shapes[1][0], shapes[2][1], shapes[1][1])
    elif op in ("bmm", "baddbmm"):
        a, b = (shapes[0], shapes[1]) if op == "bmm" else (shapes[1], shapes[2])
        p = _gemm(a[0], a[1], b[2], a[2])
    elif op == "addbmm":  # sum over the batch of a[i] @ b[i]
        a, b = shapes[1], shapes[2]
        p = _gemm(a[0], a[1], b[2], a[2])
    elif op == "linear":
        a, w = shapes[0], shapes[1]
        p = _gemm(1, math.prod(a[:-1]), w[0], a[-1])
    elif op == "matmul":
        p = _matmul(shapes[0], shapes[1])
    elif op == "dot":
        p = _gemm(1, 1, 1, shapes[0][0])
    elif op == "mv":
        p = _gemm(1, shapes[0][0], 1, shapes[0][1])
    elif op == "addmv":
        p = _gemm(1, shapes[1][0], 1, shapes[1][1])
    elif op in CONVS:
        x, w = shapes[0], shapes[1]
        k_out = w[0]
        pixels = out_numel // max(x[0] * k_out, 1)
        y = (x[0], k_out, pixels)  # only the output's pixel count matters
        conv, flops = _conv("conv_fwd", x, w, y)
        return [conv], flops
    elif op == "convolution_backward":
        gy, x, w = shapes[0], shapes[1], shapes[2]
        mask = scalars[-1] if scalars and isinstance(scalars[-1], tuple) else (True, True)
        out: list[Problem] = []
        flops = 0
        for want, kind in zip(mask[:2], ("conv_dx", "conv_dw"), strict=False):
            if want:
                conv, f = _conv(kind, x, w, gy)  # type: ignore[arg-type]
                out.append(conv)
                flops += f
        return out, flops
    else:
        return None
    _, batch, m, n, k = p
    return [p], 2 * batch * m * n * k
