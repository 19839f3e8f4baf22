"""A model split across two backends with ``Router``: its embedding table on the CPU, the rest on the
GPU, trained end to end (``burn-router``).

Usage: ``python examples/split_devices/main.py [--steps N] [--seed N]``

The task is small and synthetic: a sequence of token ids is labelled by the class most of its tokens
belong to (token id modulo the number of classes), so the embedding has to learn the classes.

With burn-cuda and a GPU, the stack is ``Autodiff(Router(Cuda(), NdArray()))``: the embedding's lookup
runs on NumPy, its output moves to the GPU with ``to_device``, and the gradient flows back across the
move. Without a GPU the example says so and runs both parts on the CPU, through
``Router(NdArray(), NdArray())``, so it still shows the split.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from burn import Backend, Device, Tensor
from burn.backend import Autodiff, NdArray, Router
from burn.nn import EmbeddingConfig, LinearConfig, Module, Relu, loss
from burn.optim import AdamConfig, GradientsParams

VOCABULARY, SEQUENCE, CLASSES, WIDTH = 500, 8, 5, 32


def gpu_backend() -> Backend | None:
    """``Cuda()`` if burn-cuda is installed and a GPU is present, else ``None``."""
    try:
        from burn_cuda import Cuda
    except ImportError:
        return None
    try:
        return Cuda() if Cuda().device_count() > 0 else None
    except Exception:  # no driver, no device: the CPU runs both parts
        return None


class SplitModel(Module):
    """An embedding on one device, a two-layer classifier on another."""

    def __init__(self, embedding_device: Device, head_device: Device) -> None:
        self.embedding = EmbeddingConfig(VOCABULARY, WIDTH).init(embedding_device)
        self.hidden = LinearConfig(WIDTH, 64).init(head_device)
        self.output = LinearConfig(64, CLASSES).init(head_device)
        self.activation = Relu()
        self.head_device = head_device

    def forward(self, tokens: Tensor) -> Tensor:
        vectors = self.embedding(tokens).mean_dim(1).squeeze_dim(1)  # [batch, WIDTH], where the table is
        x = vectors.to_device(self.head_device)  # differentiable: gradients come back across
        return self.output(self.activation(self.hidden(x)))


def batch(rng: np.random.Generator, size: int) -> tuple[np.ndarray, np.ndarray]:
    """``size`` sequences: six tokens of the label's class and two random ones each."""
    labels = rng.integers(0, CLASSES, size)
    own = rng.integers(0, VOCABULARY // CLASSES, (size, SEQUENCE - 2)) * CLASSES + labels[:, None]
    tokens = np.concatenate([own, rng.integers(0, VOCABULARY, (size, 2))], axis=1)
    return tokens, labels


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    gpu = gpu_backend()
    if gpu is None:
        print("no GPU (burn-cuda not installed, or no device): both parts run on the CPU")
        backend = Autodiff(Router(NdArray(), NdArray()))
    else:
        backend = Autodiff(Router(gpu, NdArray()))
    head_device, embedding_device = backend.device(0), backend.device(backend.device_count() - 1)
    print(f"embedding on {embedding_device}, classifier on {head_device} ({backend.inner!r})")
    embedding_device.seed(args.seed)
    head_device.seed(args.seed)

    model = SplitModel(embedding_device, head_device)
    optim = AdamConfig().init()
    criterion = loss.CrossEntropyLossConfig().init(head_device)
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    for step in range(1, args.steps + 1):
        tokens, labels = batch(rng, 64)
        logits = model(Tensor.from_data(tokens, embedding_device))
        targets = Tensor.from_data(labels, head_device)
        batch_loss = criterion(logits, targets)
        grads = GradientsParams.from_grads(batch_loss.backward(), model)
        model = optim.step(3e-3, model, grads)
        if step % 50 == 0 or step == args.steps:
            correct = int((logits.argmax(1).flatten(0, 1) == targets).int().sum().into_scalar())
            print(f"step {step:4d}: loss {float(batch_loss.into_scalar()):.3f}, accuracy {correct / 64:.0%}")
    print(f"{args.steps} steps in {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
