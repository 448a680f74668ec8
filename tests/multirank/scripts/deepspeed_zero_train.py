"""A ZeRO training step as DeepSpeed's getting-started writes it, on emulated Gaudi cards: a
2-layer model, bf16, AdamW, `deepspeed.initialize` with ZeRO stage `--stage`, one process per card
(`hpuprof record --emulate --cards N -- python deepspeed_zero_train.py --stage S`: the launcher's
RANK / LOCAL_RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT, as `deepspeed --num_gpus N` sets).

Prints `rank R step S loss L` per step and `rank R weights W`, the sum of the whole (gathered)
weights after training, which every rank must agree on.
"""

from __future__ import annotations

import argparse

import torch


def main() -> None:
    import deepspeed
    import habana_frameworks.torch.core as htcore
    from deepspeed.accelerator import get_accelerator

    parser = argparse.ArgumentParser()
    parser.add_argument("--stage", type=int, default=1)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--offload", action="store_true", help="the optimizer on the host")
    args = parser.parse_args()
    print("accelerator:", get_accelerator().device_name())
    deepspeed.init_distributed(dist_backend="hccl")
    rank = torch.distributed.get_rank()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    config = {
        "train_micro_batch_size_per_gpu": 4,
        "bf16": {"enabled": True},
        "optimizer": {"type": "AdamW", "params": {"lr": 1e-2, "torch_adam": args.offload}},
        "zero_optimization": {"stage": args.stage},
    }
    if args.offload:  # ZeRO-Offload with torch's AdamW: DeepSpeedCPUAdam would JIT-build C++
        config["zero_optimization"]["offload_optimizer"] = {"device": "cpu"}
    engine, _, _, _ = deepspeed.initialize(
        model=model, model_parameters=model.parameters(), config=config
    )
    generator = torch.Generator().manual_seed(100 + rank)
    for step in range(args.steps):
        x = torch.randn(4, 16, generator=generator).to(engine.device, torch.bfloat16)
        y = torch.randint(0, 4, (4,), generator=generator).to(engine.device)
        loss = torch.nn.functional.cross_entropy(engine(x).float(), y)
        engine.backward(loss)
        engine.step()
        htcore.mark_step()
        print(f"rank {rank} step {step} loss {loss.item():.6f}", flush=True)
    params = list(engine.module.parameters())
    with deepspeed.zero.GatheredParameters(params, enabled=args.stage == 3):
        total = sum(float(p.detach().float().sum().item()) for p in params)
    print(f"rank {rank} weights {total:.6f}", flush=True)


if __name__ == "__main__":
    main()
