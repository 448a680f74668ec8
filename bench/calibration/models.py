"""Decoder-only transformer shapes for the calibration and prediction benches (no download).

`Decoder` builds LLaMA-style (RMSNorm, rotary positions, SwiGLU, grouped-query attention) and
GPT/MPT-style (LayerNorm, GELU MLP) stacks from a `DecoderConfig`; `LLAMA2_7B` and friends give
the published models' shapes. Linear layers are `te.Linear` (the bridge's Transformer Engine)
when `fp8=True`, so they run at the MME's FP8 rate inside `te.fp8_autocast`. Attention is torch's
`scaled_dot_product_attention`, which the Gaudi bridge runs as FusedSDPA. Plain PyTorch: these
scripts run unchanged on a Gaudi or, through `hpuprof predict`, on the emulated one.

`tp > 1` builds ONE card's shard of a Megatron tensor-parallel group with sequence parallelism
(heads, KV heads, FFN and vocabulary split `tp` ways; norms and residuals on `seq / tp` tokens;
an all-gather of the sequence before the QKV / FC1 / LM-head projections and a reduce-scatter
after the output / FC2 projections and the vocab-parallel embedding, the conjugate collective in
the backward). Its collectives are MODELED by the emulator (`hpusim.predict.modeled_collective`),
so `tp > 1` runs under `hpuprof predict` only. `recompute_attention` checkpoints the attention
core (Megatron's `--recompute-granularity selective`): its forward runs again in the backward.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint


@dataclass(frozen=True)
class DecoderConfig:
    """Shapes of a decoder-only transformer."""

    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int
    norm: str = "rms"  # rms | layer
    mlp: str = "swiglu"  # swiglu | gelu
    rope: bool = True
    attention: str = "sdpa"
    """"sdpa": torch's fused attention (FusedSDPA on Gaudi); "alibi": LLM Foundry's
    `attn_impl: torch` with an ALiBi bias (explicit QK^T, bias, causal mask, softmax, PV)."""

    def scaled(self, layers: int) -> DecoderConfig:
        return replace(self, layers=layers)

    @property
    def params(self) -> int:
        """Parameter count (embedding and LM head included)."""
        d, f = self.hidden, self.ffn
        kv = d * self.kv_heads // self.heads
        attn = d * d * 2 + d * kv * 2
        mlp = d * f * (3 if self.mlp == "swiglu" else 2)
        return self.layers * (attn + mlp + 2 * d) + 2 * self.vocab * d + d


LLAMA2_7B = DecoderConfig(32, 4096, 32, 32, 11008, 32000)
LLAMA2_13B = DecoderConfig(40, 5120, 40, 40, 13824, 32000)
LLAMA3_8B = DecoderConfig(32, 4096, 32, 8, 14336, 128256)
MISTRAL_7B = DecoderConfig(32, 4096, 32, 8, 14336, 32000)
MPT_7B = DecoderConfig(
    32, 4096, 32, 32, 16384, 50432, norm="layer", mlp="gelu", rope=False, attention="alibi"
)
"""mosaicml/mpt-7b: ALiBi instead of positions. On Gaudi, LLM Foundry runs it with
`attn_impl: torch` (its flash and triton implementations are CUDA kernels; the Gaudi 2 yamls of
the HPU port, mosaicml/llm-foundry commits 351fb436 and ba30d674, 2023, all set `attn_impl:
torch` and `precision: amp_bf16`)."""
CONFIGS = {
    "llama2-7b": LLAMA2_7B,
    "llama2-13b": LLAMA2_13B,
    "llama3-8b": LLAMA3_8B,
    "mistral-7b": MISTRAL_7B,
    "mpt-7b": MPT_7B,
}


def _tp_collective(kind: str, x: torch.Tensor, shape: tuple[int, ...], tp: int) -> torch.Tensor:
    try:
        from hpusim.predict import modeled_collective
    except ImportError as exc:  # a real Gaudi: tensor parallelism needs one process per card
        raise SystemExit(
            "--tp > 1 runs under `hpuprof predict` only (modeled collectives)"
        ) from exc
    out: torch.Tensor = modeled_collective(kind, x, x.new_empty(shape), tp)
    return out


class _GatherSeq(torch.autograd.Function):
    """Sequence-parallel all-gather along dim 1; its backward is a reduce-scatter."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, tp: int) -> torch.Tensor:
        ctx.tp = tp
        b, s, h = x.shape
        return _tp_collective("all_gather", x, (b, s * tp, h), tp)

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[torch.Tensor, None]:
        b, s, h = g.shape
        return _tp_collective("reduce_scatter", g, (b, s // ctx.tp, h), ctx.tp), None


class _ScatterSeq(torch.autograd.Function):
    """Sequence-parallel reduce-scatter along dim 1; its backward is an all-gather."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, tp: int) -> torch.Tensor:
        ctx.tp = tp
        b, s, h = x.shape
        return _tp_collective("reduce_scatter", x, (b, s // tp, h), tp)

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[torch.Tensor, None]:
        b, s, h = g.shape
        return _tp_collective("all_gather", g, (b, s * ctx.tp, h), ctx.tp), None


def gather_seq(x: torch.Tensor, tp: int) -> torch.Tensor:
    out: torch.Tensor = _GatherSeq.apply(x, tp) if tp > 1 else x
    return out


def scatter_seq(x: torch.Tensor, tp: int) -> torch.Tensor:
    out: torch.Tensor = _ScatterSeq.apply(x, tp) if tp > 1 else x
    return out


def linear(cfg_fp8: bool, n_in: int, n_out: int) -> nn.Module:
    """`te.Linear` for FP8 runs, `nn.Linear` otherwise (no bias, as LLaMA)."""
    if cfg_fp8:
        import habana_frameworks.torch.hpex.experimental.transformer_engine as te

        module: nn.Module = te.Linear(n_in, n_out, bias=False)
        return module
    return nn.Linear(n_in, n_out, bias=False)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        var = x.float().pow(2).mean(-1, keepdim=True)
        return (x.float() * torch.rsqrt(var + self.eps)).to(x.dtype) * self.weight


def rotary_tables(seq: int, dim: int, device: Any) -> tuple[torch.Tensor, torch.Tensor]:
    inv = 1.0 / (10000 ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    freqs = torch.outer(torch.arange(seq, dtype=torch.float32), inv)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(device), emb.sin().to(device)


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


class Attention(nn.Module):
    def __init__(self, cfg: DecoderConfig, fp8: bool, tp: int = 1, recompute: bool = False) -> None:
        super().__init__()
        self.cfg = cfg
        self.tp = tp
        self.recompute = recompute
        self.head_dim = cfg.hidden // cfg.heads
        self.heads, self.kv_heads = cfg.heads // tp, cfg.kv_heads // tp
        width, kv = self.head_dim * self.heads, self.head_dim * self.kv_heads
        self.q_proj = linear(fp8, cfg.hidden, width)
        self.k_proj = linear(fp8, cfg.hidden, kv)
        self.v_proj = linear(fp8, cfg.hidden, kv)
        self.o_proj = linear(fp8, width, cfg.hidden)
        if cfg.attention == "alibi" and tp > 1:
            raise ValueError("ALiBi attention is modeled on one card only (tp=1)")
        self._alibi: torch.Tensor | None = None

    def _alibi_attention(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """LLM Foundry's `scaled_multihead_dot_product_attention` (attn_impl: torch, v0.4.0)
        with MPT's causal ALiBi bias: an fp32 (1, heads, 1, seq) bias made once (MPT's
        `_attn_bias` is built in float32), added to the scaled bf16 scores (so fp32 from there),
        a causal mask filled with the dtype's minimum, softmax, the weights cast back for PV."""
        s = q.shape[-2]
        if self._alibi is None or self._alibi.shape[-1] != s:
            self._alibi = alibi_bias(self.heads, s, q.device)
        scores = q.matmul(k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
        scores = scores + self._alibi
        causal = ~scores.new_ones(s, s, dtype=torch.float32).tril().to(torch.bool)
        scores = scores.masked_fill(causal.view(1, 1, s, s), torch.finfo(q.dtype).min)
        return torch.softmax(scores, dim=-1).to(v.dtype).matmul(v)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        x = gather_seq(x, self.tp)
        b, s, _ = x.shape
        heads, kv_heads, d = self.heads, self.kv_heads, self.head_dim
        q = self.q_proj(x).view(b, s, heads, d).transpose(1, 2)
        k = self.k_proj(x).view(b, s, kv_heads, d).transpose(1, 2)
        v = self.v_proj(x).view(b, s, kv_heads, d).transpose(1, 2)
        if self.cfg.rope:
            q, k = apply_rotary(q, cos[:s], sin[:s]), apply_rotary(k, cos[:s], sin[:s])
        if kv_heads != heads:
            rep = heads // kv_heads
            k = k[:, :, None].expand(b, kv_heads, rep, s, d).reshape(b, heads, s, -1)
            v = v[:, :, None].expand(b, kv_heads, rep, s, d).reshape(b, heads, s, -1)
        core = self._alibi_attention if self.cfg.attention == "alibi" else _causal_sdpa
        if self.recompute:
            out = checkpoint(core, q, k, v, use_reentrant=False, preserve_rng_state=False)
        else:
            out = core(q, k, v)
        out = self.o_proj(out.transpose(1, 2).reshape(b, s, heads * d))
        return scatter_seq(out, self.tp)


def _causal_sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def alibi_bias(heads: int, seq: int, device: torch.device, max_bias: int = 8) -> torch.Tensor:
    """MPT's causal ALiBi bias, (1, heads, 1, seq) in float32: position offsets 1 - seq .. 0
    times a per-head slope 2^(-max_bias * h / heads') (heads' the next power of two; LLM
    Foundry's `gen_slopes` and `build_alibi_bias`)."""
    padded = 2 ** math.ceil(math.log2(heads))
    m = torch.arange(1, padded + 1, dtype=torch.float32, device=device) * (max_bias / padded)
    slopes = 1.0 / torch.pow(2, m)
    if padded != heads:
        slopes = torch.cat([slopes[1::2], slopes[::2]])[:heads]
    offsets = torch.arange(1 - seq, 1, dtype=torch.int32, device=device).view(1, 1, 1, seq)
    return (offsets * slopes.view(1, heads, 1, 1)).to(torch.float32)


class MLP(nn.Module):
    def __init__(self, cfg: DecoderConfig, fp8: bool, tp: int = 1) -> None:
        super().__init__()
        self.tp = tp
        self.swiglu = cfg.mlp == "swiglu"
        ffn = cfg.ffn // tp
        self.up = linear(fp8, cfg.hidden, ffn)
        self.gate = linear(fp8, cfg.hidden, ffn) if self.swiglu else None
        self.down = linear(fp8, ffn, cfg.hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return scatter_seq(self._local(gather_seq(x, self.tp)), self.tp)

    def _local(self, x: torch.Tensor) -> torch.Tensor:
        if self.gate is not None:
            gate = self.gate(x)
            # SiLU as x * sigmoid(x): the emulator's op table (from the bridge's ops list)
            # marks aten::silu_backward missing on HPU, which the bridge's own SiLU autograd
            # never reaches; sigmoid's backward is on the table
            return self.down(gate * torch.sigmoid(gate) * self.up(x))
        return self.down(F.gelu(self.up(x)))


class Block(nn.Module):
    def __init__(self, cfg: DecoderConfig, fp8: bool, tp: int = 1, recompute: bool = False) -> None:
        super().__init__()
        norm = (
            (lambda: RMSNorm(cfg.hidden))
            if cfg.norm == "rms"
            else (lambda: nn.LayerNorm(cfg.hidden, bias=False))
        )
        self.attn_norm = norm()
        self.attn = Attention(cfg, fp8, tp, recompute)
        self.mlp_norm = norm()
        self.mlp = MLP(cfg, fp8, tp)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.attn_norm(x), cos, sin)
        return x + self.mlp(self.mlp_norm(x))


class Decoder(nn.Module):
    """Embedding, `layers` blocks, final norm, LM head (one card's shard when `tp > 1`: its
    input ids and logits index the card's `vocab_local` slice of the vocabulary)."""

    def __init__(
        self,
        cfg: DecoderConfig,
        seq: int,
        fp8: bool = False,
        tp: int = 1,
        recompute_attention: bool = False,
    ) -> None:
        super().__init__()
        if cfg.heads % tp or cfg.kv_heads % tp or cfg.ffn % tp or cfg.vocab % tp or seq % tp:
            raise ValueError(f"tp={tp} does not divide the heads, FFN, vocabulary and sequence")
        self.cfg = cfg
        self.tp = tp
        self.vocab_local = cfg.vocab // tp
        self.embed = nn.Embedding(self.vocab_local, cfg.hidden)
        self.blocks = nn.ModuleList(
            Block(cfg, fp8, tp, recompute_attention) for _ in range(cfg.layers)
        )
        self.norm = (
            RMSNorm(cfg.hidden) if cfg.norm == "rms" else nn.LayerNorm(cfg.hidden, bias=False)
        )
        self.lm_head = nn.Linear(cfg.hidden, self.vocab_local, bias=False)
        cos, sin = rotary_tables(seq, cfg.hidden // cfg.heads, self.embed.weight.device)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = scatter_seq(self.embed(ids), self.tp)  # vocab-parallel: partial sums, reduced
        for block in self.blocks:
            x = block(x, self.cos, self.sin)
        return self.lm_head(gather_seq(self.norm(x), self.tp))


def model_flops_per_token(cfg: DecoderConfig, seq: int, training: bool = True) -> float:
    """The usual analytic model FLOPs per token: 2 per weight multiply-add (x3 with the
    backward), plus causal attention (QK^T and PV over half the sequence on average)."""
    dense = 2 * (cfg.params - cfg.vocab * cfg.hidden)  # the embedding lookup is free
    attn = 2 * 2 * cfg.layers * cfg.hidden * seq / 2
    return (dense + attn) * (3 if training else 1)
