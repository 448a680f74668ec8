"""Train a decoder-only transformer on an HPU: an ordinary Gaudi training script.

    python bench/calibration/train_decoder.py --model llama2-7b --seq 4096 --batch 1 --steps 3

It runs unchanged on a Gaudi, on the emulated one (`hpuprof record --emulate`), or on fake
tensors through `hpuprof predict`. Random token ids stand in for a data set. The model is built
directly on the device (`torch.device("hpu")`), as large models are, so no host copy exists;
`--build-on host` builds it on the CPU and moves it (`Model().to("hpu")`), as most scripts do.
Each optimizer step runs `--accum` micro-batches (forward, backward), bf16 autocast, AdamW
(`capturable=True`: its step and bias corrections stay on the device, so the lazy graph does not
change between steps), and `mark_step` after the backward and after the optimizer, as Habana's
examples do. `--fp8` runs the linear layers as `te.Linear` inside `te.fp8_autocast`. `--recompute-attention`
checkpoints the attention core (Megatron's selective recompute). `--tp N` runs one card's shard
of an N-way tensor-parallel group with sequence parallelism, its collectives modeled (under
`hpuprof predict` only; models.py).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
from models import CONFIGS, Decoder


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", choices=sorted(CONFIGS), default="llama2-7b")
    ap.add_argument("--layers", type=int, default=None, help="override the layer count")
    ap.add_argument("--seq", type=int, default=4096)
    ap.add_argument("--batch", type=int, default=1, help="micro-batch per card")
    ap.add_argument("--accum", type=int, default=1, help="micro-batches per optimizer step")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--fp8", action="store_true", help="te.Linear under te.fp8_autocast")
    ap.add_argument("--fp32", action="store_true", help="no bf16 autocast")
    ap.add_argument("--tp", type=int, default=1, help="tensor-parallel shard (predict only)")
    ap.add_argument(
        "--recompute-attention", action="store_true", help="checkpoint the attention core"
    )
    ap.add_argument("--device", default="hpu")
    ap.add_argument(
        "--build-on",
        choices=("device", "host"),
        default="device",
        help="build the model on the device, or on the host and move it (Model().to('hpu'))",
    )
    args = ap.parse_args(argv)
    if args.device == "hpu":
        import habana_frameworks.torch.core as htcore

        mark_step = htcore.mark_step
    else:

        def mark_step() -> None:
            return None

    cfg = CONFIGS[args.model]
    if args.layers is not None:
        cfg = cfg.scaled(args.layers)
    torch.manual_seed(0)
    with torch.device(args.device if args.build_on == "device" else "cpu"):
        model = Decoder(
            cfg, args.seq, fp8=args.fp8, tp=args.tp, recompute_attention=args.recompute_attention
        )
    model = model.to(args.device)  # built on the host: its fp32 weights are copied over
    opt = torch.optim.AdamW(
        model.parameters(), lr=1e-4, capturable=args.device != "cpu", foreach=False
    )
    fp8 = contextlib.nullcontext
    if args.fp8:
        import habana_frameworks.torch.hpex.experimental.transformer_engine as te

        recipe = te.recipe.DelayedScaling(fp8_format=te.recipe.Format.HYBRID)

        def fp8() -> contextlib.AbstractContextManager[None]:  # type: ignore[misc]
            return te.fp8_autocast(enabled=True, fp8_recipe=recipe)

    autocast = (
        contextlib.nullcontext() if args.fp32 else torch.autocast(args.device, dtype=torch.bfloat16)
    )
    for step in range(args.steps):
        for _ in range(args.accum):
            ids = torch.randint(0, model.vocab_local, (args.batch, args.seq + 1))
            inputs, labels = ids[:, :-1].to(args.device), ids[:, 1:].to(args.device)
            with autocast, fp8():
                logits = model(inputs)
            loss = F.cross_entropy(
                logits.reshape(-1, model.vocab_local).float(), labels.reshape(-1)
            )
            (loss / args.accum).backward()
            mark_step()
        opt.step()
        opt.zero_grad(set_to_none=True)
        mark_step()
        print(f"step {step}: loss {loss.item():.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
