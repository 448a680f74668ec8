"""Train ResNet-50 on an HPU as the MLPerf Training submission of Intel Gaudi 2 does: an ordinary
Gaudi training script (no torchvision needed: the network is written out below; random images
stand in for ImageNet).

    python bench/calibration/train_resnet.py --batch 256 --steps 3

The recipe of mlcommons/training_results_v3.1, Intel-HabanaLabs/benchmarks/resnet
(HLS-Gaudi2-PT): ResNet-50 v1.5 (the stride on the 3x3 convolution), 256 images of 224 x 224
per card, bf16 autocast, LARS (`hpex.optimizers.FusedLars` over SGD with momentum 0.9), lazy
mode with a `mark_step` after the backward and after the optimizer step. The images reach the
card decoded by Habana's media pipeline (on the card): here the batch is made on the device.
"""

from __future__ import annotations

import argparse
import sys

import torch
import torch.nn.functional as F
from torch import nn


class Bottleneck(nn.Module):
    """1x1 -> 3x3 (carrying the stride, v1.5) -> 1x1, batch norm and ReLU, a projected shortcut
    where the shape changes."""

    def __init__(self, cin: int, width: int, stride: int) -> None:
        super().__init__()
        cout = width * 4
        self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, cout, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(cout)
        self.short = None
        if stride != 1 or cin != cout:
            self.short = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.bn1(self.conv1(x)))
        y = F.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        return F.relu(y + (x if self.short is None else self.short(x)))


class ResNet50(nn.Module):
    def __init__(self, classes: int = 1000) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
            nn.MaxPool2d(3, 2, 1),
        )  # fmt: skip
        blocks: list[nn.Module] = []
        cin = 64
        for width, count, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
            for i in range(count):
                blocks.append(Bottleneck(cin, width, stride if i == 0 else 1))
                cin = width * 4
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.blocks(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--steps", type=int, default=3)
    args = ap.parse_args(argv)
    import habana_frameworks.torch.core as htcore
    from habana_frameworks.torch.hpex.optimizers import FusedLars

    torch.manual_seed(0)
    with torch.device("hpu"):
        model = ResNet50().train()
    params = list(model.parameters())
    skip = [int(p.dim() > 1) for p in params]  # LARS on weights; batch norm and biases plain
    opt = FusedLars(torch.optim.SGD(params, lr=0.1, momentum=0.9), skip_mask=skip)
    # the media pipeline decodes the images on the card: the batch is already there
    x = torch.randn(args.batch, 3, 224, 224, dtype=torch.bfloat16, device="hpu")
    y = torch.randint(0, 1000, (args.batch,), device="hpu")
    for _ in range(args.steps):
        with torch.autocast("hpu", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x), y)
        loss.backward()
        htcore.mark_step()
        opt.step()
        opt.zero_grad(set_to_none=True)
        htcore.mark_step()
    print(f"loss {loss.item():.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
