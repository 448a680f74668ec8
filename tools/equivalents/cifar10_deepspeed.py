"""Model-References' DeepSpeed CIFAR-10 example (`PyTorch/examples/DeepSpeed/cifar_example/
cifar10_deepspeed.py`, 1.23.0) step for step, without torchvision: written here, not copied.

The example needs torchvision (its CIFAR-10 dataset and transforms; PyPI's torchvision is a CUDA
build that does not import beside this CPU torch) and the real CIFAR-10, which torchvision
verifies by md5 before it would skip the download. Here the data are random images of CIFAR-10's
shape, already as `ToTensor()` + `Normalize((0.5,) * 3, (0.5,) * 3)` would give them (3 x 32 x
32 in [-1, 1], labels 0-9), and `imshow` (matplotlib) is left out. Everything else is the
example's: `deepspeed.init_distributed("hccl")`, rank 0 making the data while the others wait
at a barrier, the same `Net`, `torch.compile(net, backend="hpu_backend")`,
`deepspeed.initialize(args=..., training_data=trainset)` with its `ds_config.json` (ZeRO-1, bf16,
Adam, WarmupLR), `model_engine.to("hpu")`, inputs cast to the engine's dtype, the training loop,
the test accuracy and the per-class accuracy.

    hpuprof record --emulate --cards N -- python cifar10_deepspeed.py --deepspeed \
        --deepspeed_config ds_config.json [--epochs 1] [--train-samples 512]
"""

from __future__ import annotations

import argparse

import deepspeed
import habana_frameworks.torch.core as htcore  # noqa: F401  (the example's import)
import torch
import torch.nn.functional as F
from torch import nn

device = "hpu"
CLASSES = ("plane", "car", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")


def add_argument() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="CIFAR")
    parser.add_argument("-b", "--batch_size", default=32, type=int)
    parser.add_argument("-e", "--epochs", default=1, type=int, help="the example: 10")
    parser.add_argument("--local_rank", type=int, default=-1)
    parser.add_argument("--log-interval", type=int, default=2000)
    parser.add_argument("--train-samples", type=int, default=512, help="CIFAR-10: 50,000")
    parser.add_argument("--test-samples", type=int, default=64, help="CIFAR-10: 10,000")
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    parser = deepspeed.add_config_arguments(parser)
    return parser.parse_args()


def synthetic_cifar10(samples: int, seed: int) -> torch.utils.data.TensorDataset:
    """Images as the example's transforms give them (3 x 32 x 32 in [-1, 1]) and labels 0-9."""
    generator = torch.Generator().manual_seed(seed)
    images = torch.rand(samples, 3, 32, 32, generator=generator) * 2 - 1
    labels = torch.randint(0, 10, (samples,), generator=generator)
    return torch.utils.data.TensorDataset(images, labels)


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = x.view(-1, 16 * 5 * 5)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def main() -> None:
    deepspeed.init_distributed(dist_backend="hccl")
    args = add_argument()
    if torch.distributed.get_rank() != 0:
        torch.distributed.barrier()  # the example: rank 0 downloads first
    trainset = synthetic_cifar10(args.train_samples, seed=0)
    testset = synthetic_cifar10(args.test_samples, seed=1)
    if torch.distributed.get_rank() == 0:
        torch.distributed.barrier()
    testloader = torch.utils.data.DataLoader(testset, batch_size=4, shuffle=False, num_workers=2)

    net = Net()
    if not args.no_compile:
        net = torch.compile(net, backend="hpu_backend")
    parameters = filter(lambda p: p.requires_grad, net.parameters())
    model_engine, _, trainloader, _ = deepspeed.initialize(
        args=args, model=net, model_parameters=parameters, training_data=trainset
    )
    model_engine = model_engine.to(device)
    fp16, bf16 = model_engine.fp16_enabled(), model_engine.bfloat16_enabled()
    print(f"fp16={fp16}")
    print(f"bf16={bf16}")
    dest_dtype = torch.float16 if fp16 else torch.bfloat16 if bf16 else torch.float32
    criterion = nn.CrossEntropyLoss()

    for epoch in range(args.epochs):
        running_loss = 0.0
        for i, (inputs, labels) in enumerate(trainloader):
            inputs, labels = inputs.to(device), labels.to(device)
            outputs = model_engine(inputs.to(dest_dtype))
            loss = criterion(outputs, labels)
            model_engine.backward(loss)
            model_engine.step()
            running_loss += loss.item()
            if i % args.log_interval == args.log_interval - 1:
                print(f"[{epoch + 1}, {i + 1:5d}] loss: {running_loss / args.log_interval:.3f}")
                running_loss = 0.0
    print("Finished Training")

    correct = total = 0
    class_correct, class_total = [0.0] * 10, [0.0] * 10
    with torch.no_grad():
        for images, labels in testloader:
            outputs = net(images.to(dest_dtype).to(device))
            _, predicted = torch.max(outputs, 1)
            hits = (predicted == labels.to(device)).squeeze()
            total += labels.size(0)
            correct += hits.sum().item()
            for k in range(4):
                class_correct[int(labels[k])] += hits[k].item()
                class_total[int(labels[k])] += 1
    torch.distributed.barrier()
    if torch.distributed.get_rank() == 0:
        print(f"Accuracy of the network on the {total} test images: {100 * correct // total} %")
        for k in range(10):
            share = 100 * class_correct[k] / class_total[k] if class_total[k] else 0
            print(f"Accuracy of {CLASSES[k]:>5s} : {share:2.0f} %")
    torch.distributed.barrier()


if __name__ == "__main__":
    main()
