"""The guide model (examples/guide) against PyTorch CPU eager, side by side in one run: one training step
(batch 64: forward, cross-entropy, backward, Adam) and the whole guide training (10 epochs on the 5,000-image
MNIST subset), with each side's validation accuracy.

Both sides see the same images in the same order; each initializes its weights its own (identically
distributed) way, so accuracies match in distribution, not digit for digit.

Run: ``python tools/bench/bench_guide.py [--quick] [--seeds N] [--no-training]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch
from _harness import Row, compare, print_table

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "guide"))

from data import Split, load_mnist_5k
from model import ModelConfig

from burn_autodiff import Autodiff
from burn_backend import Tensor
from burn_ndarray import NdArray
from burn_nn import loss
from burn_nn.optim import AdamConfig, GradientsParams

EPOCHS, BATCH, LR = 10, 64, 1e-3


class TorchModel(torch.nn.Module):
    """The same model in PyTorch, with PyTorch's default initialization."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 8, 3)
        self.conv2 = torch.nn.Conv2d(8, 16, 3)
        self.pool = torch.nn.AdaptiveAvgPool2d((8, 8))
        self.dropout = torch.nn.Dropout(0.5)
        self.linear1 = torch.nn.Linear(1024, 512)
        self.linear2 = torch.nn.Linear(512, 10)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = images.unsqueeze(1)
        x = self.dropout(self.conv1(x))
        x = torch.relu(self.dropout(self.conv2(x)))
        x = self.pool(x).flatten(1)
        x = torch.relu(self.dropout(self.linear1(x)))
        return self.linear2(x)


def ours_training(train: Split, valid: Split, seed: int) -> float:
    device = Autodiff(NdArray()).device()
    device.seed(seed)
    rng = np.random.default_rng(seed)
    model = ModelConfig(10, 512).init(device)
    optim = AdamConfig().init()
    criterion = loss.CrossEntropyLossConfig().init(device)
    for _ in range(EPOCHS):
        for images, labels in train.batches(BATCH, rng):
            batch_loss = criterion(model(Tensor.from_data(images, device)), Tensor.from_data(labels, device))
            model = optim.step(LR, model, GradientsParams.from_grads(batch_loss.backward(), model))
    valid_model = model.valid()
    inner = valid_model.devices()[0]
    correct = 0
    for images, labels in valid.batches(BATCH, None):
        predicted = valid_model(Tensor.from_data(images, inner)).argmax(1).to_data().to_numpy().reshape(-1)
        correct += int((predicted == labels).sum())
    return 100.0 * correct / len(valid)


def torch_training(train: Split, valid: Split, seed: int) -> float:
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    model = TorchModel()
    optim = torch.optim.Adam(model.parameters(), lr=LR)
    for _ in range(EPOCHS):
        model.train()
        for images, labels in train.batches(BATCH, rng):
            optim.zero_grad()
            batch_loss = torch.nn.functional.cross_entropy(
                model(torch.from_numpy(images)), torch.from_numpy(labels)
            )
            batch_loss.backward()
            optim.step()
    model.eval()
    correct = 0
    with torch.no_grad():
        for images, labels in valid.batches(BATCH, None):
            correct += int((model(torch.from_numpy(images)).argmax(1).numpy() == labels).sum())
    return 100.0 * correct / len(valid)


def step_rows(train: Split, quick: bool) -> list[Row]:
    images, labels = train.batches(BATCH, None)[0]
    device = Autodiff(NdArray()).device()
    device.seed(0)
    state = {"model": ModelConfig(10, 512).init(device)}
    optim = AdamConfig().init()
    criterion = loss.CrossEntropyLossConfig().init(device)
    x, y = Tensor.from_data(images, device), Tensor.from_data(labels, device)

    def ours() -> None:
        model = state["model"]
        grads = GradientsParams.from_grads(criterion(model(x), y).backward(), model)
        state["model"] = optim.step(LR, model, grads)

    torch.manual_seed(0)
    torch_model = TorchModel()
    torch_optim = torch.optim.Adam(torch_model.parameters(), lr=LR)
    tx, ty = torch.from_numpy(images), torch.from_numpy(labels)

    def theirs() -> None:
        torch_optim.zero_grad()
        torch.nn.functional.cross_entropy(torch_model(tx), ty).backward()
        torch_optim.step()

    repeat = 3 if quick else 9
    return [compare("guide training step, batch 64 (Adam)", ours, theirs, "torch", "<= 2x", repeat, 5)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (noisier)")
    parser.add_argument("--seeds", type=int, default=1, help="whole trainings per side (default 1)")
    parser.add_argument("--no-training", action="store_true", help="only the training step")
    args = parser.parse_args()

    train, _ = load_mnist_5k(0)
    rows = step_rows(train, args.quick)
    print_table("Guide model on Autodiff(NdArray()) (ratio = our time / PyTorch CPU time)", rows)
    if args.no_training:
        return

    times: dict[str, list[float]] = {"ours": [], "torch": []}
    accuracies: dict[str, list[float]] = {"ours": [], "torch": []}
    for seed in range(args.seeds):
        train, valid = load_mnist_5k(seed)
        for side, run in (("torch", torch_training), ("ours", ours_training)):
            time.sleep(0.3)
            start = time.perf_counter()
            accuracies[side].append(run(train, valid, seed))
            times[side].append(time.perf_counter() - start)
            print(
                f"seed {seed} {side:5s}: {times[side][-1]:6.1f} s, "
                f"validation accuracy {accuracies[side][-1]:.2f}%"
            )
    ours_time, torch_time = statistics.median(times["ours"]), statistics.median(times["torch"])
    print(
        f"\nwhole training ({EPOCHS} epochs, {args.seeds} seed(s)): "
        f"ours {ours_time:.1f} s, torch {torch_time:.1f} s, "
        f"ratio {ours_time / torch_time:.2f} (target <= 2x)\n"
        f"mean validation accuracy: ours {statistics.mean(accuracies['ours']):.2f}%, "
        f"torch {statistics.mean(accuracies['torch']):.2f}% (target: ours >= 94% and within 1 point)"
    )


if __name__ == "__main__":
    main()
