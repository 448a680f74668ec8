"""A small Gaudi-style training / inference script, run unchanged by `hpuprof record --emulate`.

Usage: python gaudi_train.py [--steps N] [--bf16] [--compile] [--hpu-graph-infer]
Fixed seeds; variable sequence lengths (16, 24, 16, 32, ...) make lazy mode recompile.
"""

from __future__ import annotations

import argparse

import torch

SEQ_LENS = (16, 24, 16, 32, 24, 16)
WIDTH = 256
"""Input features: the first layer's GEMMs (up to 128 x 256 x 1024) are large enough that the
device model runs them on the MME (GEMMs too small for it run on the TPCs)."""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--bf16", action="store_true")
    parser.add_argument("--compile", action="store_true")
    parser.add_argument("--hpu-graph-infer", action="store_true")
    args = parser.parse_args()

    import habana_frameworks.torch.core as htcore

    torch.manual_seed(0)
    device = torch.device("hpu")
    model = torch.nn.Sequential(
        torch.nn.Linear(WIDTH, 1024),
        torch.nn.GELU(),
        torch.nn.LayerNorm(1024),
        torch.nn.Linear(1024, 8),
    ).to(device)
    if args.hpu_graph_infer:
        from habana_frameworks.torch.hpu import wrap_in_hpu_graph

        model.eval()
        model = wrap_in_hpu_graph(model)
        x = torch.randn(4, 16, WIDTH).to(device)
        with torch.no_grad():
            for _ in range(args.steps):
                model(x).cpu()
        return
    step_fn = torch.compile(model, backend="hpu_backend") if args.compile else model
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for step in range(args.steps):
        seq = SEQ_LENS[step % len(SEQ_LENS)]
        x = torch.randn(4, seq, WIDTH).to(device)
        with torch.autocast(device_type="hpu", dtype=torch.bfloat16, enabled=args.bf16):
            loss = step_fn(x).float().pow(2).mean()
        loss.backward()
        htcore.mark_step()
        opt.step()
        opt.zero_grad(set_to_none=True)
        htcore.mark_step()
        print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
