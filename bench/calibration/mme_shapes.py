"""The MME shapes the device model is checked on against Intel's cost model (mme_oracle.py):
GEMMs of every shape family, attention batch GEMMs with head dims 32 / 64 / 128, ResNet-50's
convolutions (forward, dX, dW) and Swin's patch embedding, small-N and skinny shapes, in bf16,
fp8 and fp32. Each row: (label, family, kind, batch, M, N, K, precision), M the output rows
(spatial), N its columns (FCD), K the common dimension."""

from __future__ import annotations

from typing import NamedTuple


class MmeShape(NamedTuple):
    """One shape: a GEMM's `dims` are (batch, M, N, K); a 2-D convolution pass's are (N, C,
    H=W, K, R=S, stride, padding) of an [N, C, H, W] input by a [K, C, R, S] weight."""

    label: str
    family: str
    kind: str
    dims: tuple[int, ...]
    precision: str


def _conv(label: str, *dims: int, first: bool = False) -> list[MmeShape]:
    """The passes of one convolution: forward, dX (not for a network's first layer, whose
    input needs no gradient) and dW."""
    passes = ("conv_fwd", "conv_dw") if first else ("conv_fwd", "conv_dx", "conv_dw")
    return [MmeShape(f"{label} {k[5:]}", "conv", k, dims, "bf16") for k in passes]


def _g(label: str, family: str, b: int, m: int, n: int, k: int, dt: str = "bf16") -> MmeShape:
    return MmeShape(label, family, "gemm", (b, m, n, k), dt)


SHAPES: list[MmeShape] = [
    # square GEMMs
    _g("square 1024", "square", 1, 1024, 1024, 1024),
    _g("square 4096", "square", 1, 4096, 4096, 4096),
    _g("square 8192", "square", 1, 8192, 8192, 8192),
    _g("square 4096 fp8", "square", 1, 4096, 4096, 4096, "fp8"),
    _g("square 4096 fp32", "square", 1, 4096, 4096, 4096, "fp32"),
    _g("odd 1000", "square", 1, 1000, 1000, 1000),
    # transformer linear layers (tokens x in -> out)
    _g("llama qkv 4096 tok", "linear", 1, 4096, 12288, 4096),
    _g("llama up 4096 tok", "linear", 1, 4096, 11008, 4096),
    _g("llama down 4096 tok", "linear", 1, 4096, 4096, 11008),
    _g("llama up 8192 tok fp8", "linear", 1, 8192, 14336, 4096, "fp8"),
    _g("llama down 8192 tok fp8", "linear", 1, 8192, 4096, 14336, "fp8"),
    _g("bert-l qkv 14336 tok", "linear", 1, 14336, 3072, 1024),
    _g("bert-l fc1 14336 tok", "linear", 1, 14336, 4096, 1024),
    _g("bert-l fc2 14336 tok", "linear", 1, 14336, 1024, 4096),
    _g("bert-l fc1 dW", "linear", 1, 4096, 1024, 14336),
    _g("vit-b fc1 64x197 tok", "linear", 1, 12608, 3072, 768),
    _g("swin-b s1 qkv 64x3136", "linear", 1, 200704, 384, 128),
    _g("swin-b s4 fc2 64x49", "linear", 1, 3136, 1024, 4096),
    _g("lm head 4096 tok", "linear", 1, 4096, 32000, 4096),
    _g("linear fp32 2048 tok", "linear", 1, 2048, 4096, 4096, "fp32"),
    # small N (tall and narrow outputs)
    _g("small-N 64", "small-N", 1, 16384, 64, 1024),
    _g("small-N 32", "small-N", 1, 16384, 32, 4096),
    _g("small-N 128", "small-N", 1, 8192, 128, 4096),
    _g("classifier 1000", "small-N", 1, 256, 1000, 2048),
    _g("small-N 16 fp8", "small-N", 1, 8192, 16, 4096, "fp8"),
    # skinny (few rows: decode, small batches)
    _g("decode m=1", "skinny", 1, 1, 4096, 4096),
    _g("decode m=8", "skinny", 1, 8, 4096, 4096),
    _g("decode m=32 fp8", "skinny", 1, 32, 11008, 4096, "fp8"),
    _g("decode m=128", "skinny", 1, 128, 4096, 4096),
    _g("decode m=256 fp8", "skinny", 1, 256, 14336, 4096, "fp8"),
    _g("small K 64", "skinny", 1, 4096, 4096, 64),
    _g("small K 128 fp32", "skinny", 1, 4096, 4096, 128, "fp32"),
    # attention batch GEMMs: QK^T (K = head dim) and PV (N = head dim)
    _g("bert qk d64 s512", "attention", 8 * 16, 512, 512, 64),
    _g("bert pv d64 s512", "attention", 8 * 16, 512, 64, 512),
    _g("vit qk d64 s197", "attention", 64 * 12, 197, 197, 64),
    _g("vit pv d64 s197", "attention", 64 * 12, 197, 64, 197),
    _g("llama qk d128 s4096", "attention", 32, 4096, 4096, 128),
    _g("llama pv d128 s4096", "attention", 32, 4096, 128, 4096),
    _g("llama qk d128 s2048 fp8", "attention", 32, 2048, 2048, 128, "fp8"),
    _g("swin qk d32 w49", "attention", 4096 * 4, 49, 49, 32),
    _g("swin pv d32 w49", "attention", 4096 * 4, 49, 32, 49),
    _g("whisper qk d64 s1500", "attention", 20, 1500, 1500, 64),
    _g("d32 qk s1024", "attention", 64, 1024, 1024, 32),
    _g("d32 pv s1024 fp32", "attention", 64, 1024, 32, 1024, "fp32"),
    _g("decode qk d128 cache 2048", "attention", 32 * 8, 1, 2048, 128),
    # ResNet-50 at batch 256 (forward, dX, dW) and Swin-B's patch embedding at batch 64
    *_conv("rn50 conv1 7x7/2", 256, 3, 224, 64, 7, 2, 3, first=True),
    *_conv("rn50 l1 1x1 64>64", 256, 64, 56, 64, 1, 1, 0),
    *_conv("rn50 l1 3x3 64", 256, 64, 56, 64, 3, 1, 1),
    *_conv("rn50 l1 1x1 64>256", 256, 64, 56, 256, 1, 1, 0),
    *_conv("rn50 l2 3x3/2 128", 256, 128, 56, 128, 3, 2, 1),
    *_conv("rn50 l3 3x3 256", 256, 256, 14, 256, 3, 1, 1),
    *_conv("rn50 l4 3x3 512", 256, 512, 7, 512, 3, 1, 1),
    *_conv("rn50 l4 1x1 2048>512", 256, 2048, 7, 512, 1, 1, 0),
    *_conv("swin patch 4x4/4", 64, 3, 224, 128, 4, 4, 0, first=True),
]
