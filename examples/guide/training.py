"""The guide's custom training loop (the Burn Book's "Custom Training Loop" chapter), with per-epoch
progress; the trained weights are saved with burn-record's ``CompactRecorder``, as in the Book."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from data import Split
from model import ModelConfig

from burn import Device, Tensor
from burn.nn import Config, Module, loss
from burn.optim import AdamConfig, GradientsParams
from burn.record import CompactRecorder


class TrainingConfig(Config):
    """The run's settings (saved next to the weights)."""

    model: ModelConfig
    optimizer: AdamConfig
    num_epochs: int = 10
    batch_size: int = 64
    seed: int = 42
    learning_rate: float = 1e-3


def _batch(images: np.ndarray, labels: np.ndarray, device: Device) -> tuple[Tensor, Tensor]:
    return Tensor.from_data(images, device), Tensor.from_data(labels, device)


def _correct(output: Tensor, targets: Tensor) -> int:
    return int((output.argmax(1).flatten(0, 1) == targets).int().sum().into_scalar())


def train(
    config: TrainingConfig, train_split: Split, valid_split: Split, device: Device, artifact_dir: Path
) -> tuple[Module, float]:
    """Train the guide model on ``device`` (an autodiff device); returns the model and the last validation
    accuracy (in percent)."""
    artifact_dir.mkdir(parents=True, exist_ok=True)
    config.save(artifact_dir / "config.json")
    device.seed(config.seed)
    rng = np.random.default_rng(config.seed)

    model = config.model.init(device)
    optim = config.optimizer.init()
    criterion = loss.CrossEntropyLossConfig().init(device)
    print(f"{model}\n")

    accuracy = 0.0
    for epoch in range(1, config.num_epochs + 1):
        start = time.perf_counter()
        train_loss = train_correct = 0.0
        for images, labels in train_split.batches(config.batch_size, rng):
            x, targets = _batch(images, labels, device)
            output = model(x)
            batch_loss = criterion(output, targets)
            train_loss += float(batch_loss.into_scalar()) * len(labels)
            train_correct += _correct(output, targets)

            grads = GradientsParams.from_grads(batch_loss.backward(), model)
            model = optim.step(config.learning_rate, model, grads)

        model_valid = model.valid()  # the inner backend: no graph, dropout off
        valid_loss = valid_correct = 0.0
        for images, labels in valid_split.batches(config.batch_size, None):
            x, targets = _batch(images, labels, model_valid.devices()[0])
            output = model_valid(x)
            valid_loss += float(criterion(output, targets).into_scalar()) * len(labels)
            valid_correct += _correct(output, targets)

        accuracy = 100.0 * valid_correct / len(valid_split)
        train_accuracy = 100.0 * train_correct / len(train_split)
        print(
            f"[Epoch {epoch:2d}/{config.num_epochs}] "
            f"train loss {train_loss / len(train_split):.3f}, accuracy {train_accuracy:5.2f}% | "
            f"valid loss {valid_loss / len(valid_split):.3f}, accuracy {accuracy:5.2f}% | "
            f"{time.perf_counter() - start:5.1f} s",
            flush=True,
        )

    # the Book saves the trained weights with the CompactRecorder: compressed, in half precision
    model.save_file(artifact_dir / "model", CompactRecorder())
    return model, accuracy
