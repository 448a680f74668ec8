"""Batched greedy generation with a static KV cache on an HPU, as optimum-habana runs it.

    python bench/calibration/generate_decoder.py --model llama2-7b --batch 1230 \\
        --input-len 128 --output-len 128 --fp8 --lengths 129,192,256

Each `mark_step` ends one step: the model's initialization, the prefill of the whole batch
three times (captured into an HPU graph, then replayed twice),
then one decode step (one new token per sequence) at each cache length of `--lengths`, twice
each (the first of a new shape compiles; the second is the steady one). The cache is allocated
once for `input + output` tokens; a decode step attends over the cache up to the current length
rounded up to `--bucket` (optimum-habana's bucketing, which keeps shapes static between buckets).
`--fp8` runs the linear layers and both attention matmuls of the decode in FP8 with weights
quantized once (as Intel Neural Compressor's FP8 inference does) through the bridge's
`hpu::fp8_gemm_v2`, and keeps the KV cache in FP8. The next token is the argmax on the device:
no host sync inside the loop. Runs on fake tensors through `hpuprof predict`.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from models import CONFIGS, Decoder, apply_rotary

FP8 = torch.float8_e4m3fn
FP8_MAX = 448.0


class Fp8Linear(nn.Module):
    """A linear layer with its weight quantized to FP8 once and its input per call."""

    def __init__(self, linear: nn.Module) -> None:
        super().__init__()
        w = linear.weight.detach()
        self.register_buffer("w8", (w * (FP8_MAX / 4.0)).to(FP8))
        self.register_buffer("w_scale", torch.tensor(4.0 / FP8_MAX, device=w.device))
        self.register_buffer("x_scale", torch.tensor(1.0, device=w.device))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x2 = x.reshape(-1, x.shape[-1])
        x8 = (x2 * (1.0 / self.x_scale)).to(FP8)  # a static (calibrated) input scale
        out = torch.ops.hpu.fp8_gemm_v2(
            x8, False, self.w8, True, None, torch.bfloat16, self.x_scale, self.w_scale
        )
        return out.reshape(*x.shape[:-1], out.shape[-1])


def quantize_linears(module: nn.Module) -> None:
    for name, child in list(module.named_children()):
        if isinstance(child, nn.Linear):
            setattr(module, name, Fp8Linear(child))
        else:
            quantize_linears(child)


def fp8_matmul(a: torch.Tensor, b: torch.Tensor, trans_b: bool) -> torch.Tensor:
    one = torch.ones((), device=a.device)
    return torch.ops.hpu.fp8_gemm_v2(
        a.to(FP8), False, b if b.dtype == FP8 else b.to(FP8), trans_b, None, torch.bfloat16,
        one, one,
    )  # fmt: skip


class Generator:
    """Prefill and decode steps of a `Decoder` over a static KV cache."""

    def __init__(self, model: Decoder, batch: int, max_len: int, fp8: bool) -> None:
        c = model.cfg
        self.model, self.cfg, self.fp8 = model, c, fp8
        self.head_dim = c.hidden // c.heads
        dev = model.embed.weight.device
        shape = (batch, c.kv_heads, max_len, self.head_dim)
        dtype = FP8 if fp8 else torch.bfloat16
        self.k = [torch.zeros(shape, dtype=dtype, device=dev) for _ in range(c.layers)]
        self.v = [torch.zeros(shape, dtype=dtype, device=dev) for _ in range(c.layers)]

    def _qkv(
        self, block: nn.Module, x: torch.Tensor, positions: torch.Tensor
    ) -> tuple[torch.Tensor, ...]:
        b, s, _ = x.shape
        c, d = self.cfg, self.head_dim
        att = block.attn
        q = att.q_proj(x).view(b, s, c.heads, d).transpose(1, 2)
        k = att.k_proj(x).view(b, s, c.kv_heads, d).transpose(1, 2)
        v = att.v_proj(x).view(b, s, c.kv_heads, d).transpose(1, 2)
        cos = self.model.cos.index_select(0, positions)
        sin = self.model.sin.index_select(0, positions)
        return apply_rotary(q, cos, sin), apply_rotary(k, cos, sin), v

    def _store(self, layer: int, k: torch.Tensor, v: torch.Tensor, positions: torch.Tensor) -> None:
        dtype = self.k[layer].dtype
        self.k[layer].index_copy_(2, positions, k.to(dtype))
        self.v[layer].index_copy_(2, positions, v.to(dtype))

    def prefill(self, ids: torch.Tensor) -> torch.Tensor:
        m, c = self.model, self.cfg
        x = m.embed(ids)
        b, s = ids.shape
        positions = torch.arange(s, device=ids.device)
        for i, block in enumerate(m.blocks):
            q, k, v = self._qkv(block, block.attn_norm(x), positions)
            self._store(i, k, v, positions)
            if c.kv_heads != c.heads:
                rep = c.heads // c.kv_heads
                k = k[:, :, None].expand(b, c.kv_heads, rep, s, -1).reshape(b, c.heads, s, -1)
                v = v[:, :, None].expand(b, c.kv_heads, rep, s, -1).reshape(b, c.heads, s, -1)
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + block.attn.o_proj(out.transpose(1, 2).reshape(b, s, c.hidden))
            x = x + block.mlp(block.mlp_norm(x))
        return m.lm_head(m.norm(x[:, -1:])).argmax(-1)

    def decode(self, tok: torch.Tensor, pos: torch.Tensor, keys_seen: torch.Tensor) -> torch.Tensor:
        """One token per sequence at position `pos` (a 1-element device tensor, so one graph
        serves a whole bucket), attending over the first `keys_seen.numel()` cache slots."""
        m, c, d = self.model, self.cfg, self.head_dim
        b = tok.shape[0]
        span = keys_seen.shape[0]
        groups = c.heads // c.kv_heads
        mask = (keys_seen <= pos).view(1, 1, 1, span)
        x = m.embed(tok)
        for i, block in enumerate(m.blocks):
            q, k, v = self._qkv(block, block.attn_norm(x), pos)
            self._store(i, k, v, pos)
            q = q.reshape(b, c.kv_heads, groups, d)  # grouped queries share their KV head
            keys, values = self.k[i][:, :, :span], self.v[i][:, :, :span]
            if self.fp8:
                scores = fp8_matmul(q * (1.0 / math.sqrt(d)), keys, True)
                probs = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
                out = fp8_matmul(probs, values, False)
            else:
                out = F.scaled_dot_product_attention(q, keys, values, attn_mask=mask)
            x = x + block.attn.o_proj(out.reshape(b, 1, c.hidden))
            x = x + block.mlp(block.mlp_norm(x))
        return m.lm_head(m.norm(x)).argmax(-1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", choices=sorted(CONFIGS), default="llama2-7b")
    ap.add_argument("--layers", type=int, default=None)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--input-len", type=int, default=128)
    ap.add_argument("--output-len", type=int, default=128)
    ap.add_argument("--lengths", default="", help="decode cache lengths (comma separated)")
    ap.add_argument("--bucket", type=int, default=128)
    ap.add_argument("--fp8", action="store_true")
    ap.add_argument("--prefill-only", action="store_true")
    ap.add_argument(
        "--no-hpu-graphs", action="store_true", help="launch lazy graphs instead of replays"
    )
    args = ap.parse_args(argv)
    import habana_frameworks.torch as ht
    import habana_frameworks.torch.core as htcore

    cfg = CONFIGS[args.model]
    if args.layers is not None:
        cfg = cfg.scaled(args.layers)
    max_len = args.input_len + args.output_len
    max_len = -(-max_len // args.bucket) * args.bucket
    torch.manual_seed(0)
    with torch.device("hpu"), torch.no_grad():
        model = Decoder(cfg, max_len).to(torch.bfloat16).eval()
        if args.fp8:
            quantize_linears(model.blocks)
        gen = Generator(model, args.batch, max_len, args.fp8)
    ids = torch.randint(0, cfg.vocab, (args.batch, args.input_len)).to("hpu")
    lengths = [int(x) for x in args.lengths.split(",") if x]
    prefill, decode = gen.prefill, gen.decode
    if not args.no_hpu_graphs:  # optimum-habana's --use_hpu_graphs
        prefill = ht.hpu.wrap_in_hpu_graph_func(prefill)
        decode = ht.hpu.wrap_in_hpu_graph_func(decode)
    htcore.mark_step()  # the model's initialization is its own graph
    with torch.no_grad():
        for _ in range(3):  # capture (compiles), then replays
            tok = prefill(ids)
            htcore.mark_step()
        if args.prefill_only:
            return 0
        for length in lengths:
            pos = torch.tensor([length - 1]).to("hpu")
            span = min(-(-length // args.bucket) * args.bucket, max_len)
            keys_seen = torch.arange(span).to("hpu")
            for _ in range(2):
                tok = decode(tok, pos, keys_seen)
                htcore.mark_step()
    return 0


if __name__ == "__main__":
    sys.exit(main())
