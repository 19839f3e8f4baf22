"""Train the Burn Book's guide model on MNIST through the ``Learner`` (the Book's "Training" chapter): data
sets and a data loader feed it, metrics show on the live dashboard (one line per epoch without a terminal),
checkpoints are written each epoch, and ``--resume EPOCH`` continues a stopped run. As the Book's guide
ends, the trained model saved with the ``CompactRecorder`` is loaded back and classifies a validation image
(``inference.py``). ``custom_loop.py`` trains the same model with the Book's custom training loop.

Usage: ``python examples/guide/main.py [--device SPEC] [--devices N] [--epochs N] [--seed N] [--num-workers N]
[--mnist-dir DIR] [--artifact-dir DIR] [--resume EPOCH]``

The model is ``model.py``'s; the data is the same 5,000-image MNIST subset and split as ``data.py``'s
(``burn.data.MnistDataset``), normalized with ``data.py``'s statistics by the batcher below. Press ``q``
or Ctrl-C to stop: the learner saves a checkpoint first, and ``--resume`` picks it up.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
from data import MEAN, STD
from inference import infer
from model import Model, ModelConfig

from burn import Device, Tensor, parse_device
from burn.data import DataLoaderBuilder, MnistDataset, MnistItem
from burn.nn import Config, loss
from burn.optim import AdamConfig
from burn.record import CompactRecorder
from burn.train import (
    AccuracyMetric,
    ClassificationOutput,
    LearnerBuilder,
    LossMetric,
    Split,
    TrainOutput,
)


class MnistBatch:
    """Images ``[batch, 28, 28]`` (normalized) and their digits ``[batch]``."""

    def __init__(self, images: Tensor, targets: Tensor) -> None:
        self.images = images
        self.targets = targets


class MnistBatcher:
    """``MnistItem``s to an ``MnistBatch`` on a device: pixel values to ``[0, 1]``, then MNIST's mean and
    standard deviation (the Book's batcher)."""

    def batch(self, items: list[MnistItem], device: Device) -> MnistBatch:
        images = np.stack([item.image for item in items])
        images = ((images / 255.0 - MEAN) / STD).astype(np.float32)
        targets = np.array([item.label for item in items], dtype=np.int64)
        return MnistBatch(Tensor.from_data(images, device), Tensor.from_data(targets, device))


class GuideModel(Model):
    """``model.py``'s model with the Book's classification output and the Learner's two steps."""

    def forward_classification(self, images: Tensor, targets: Tensor) -> ClassificationOutput:
        output = self.forward(images)
        value = loss.CrossEntropyLossConfig().init(output.device).forward(output, targets)
        return ClassificationOutput(value, output, targets)

    def train_step(self, batch: MnistBatch) -> TrainOutput[ClassificationOutput]:
        item = self.forward_classification(batch.images, batch.targets)
        return TrainOutput(self, item.loss.backward(), item)

    def valid_step(self, batch: MnistBatch) -> ClassificationOutput:
        return self.forward_classification(batch.images, batch.targets)


class TrainingConfig(Config):
    """The run's settings (saved as ``config.json`` in the artifact folder)."""

    model: ModelConfig
    optimizer: AdamConfig
    num_epochs: int = 10
    batch_size: int = 64
    # batches made on the training thread: an MNIST batch takes a fraction of a millisecond to make,
    # and loader threads would compete with the training loop for Python's interpreter lock (on the
    # H100 with replayed steps, 10 epochs took 2.8 - 3.6 s with 4 threads against 2.0 - 2.7 s without;
    # no difference on the CPU). Threads pay off where making a batch waits on files or decoding.
    num_workers: int = 0
    seed: int = 42
    learning_rate: float = 1e-3


def train(
    config: TrainingConfig,
    device: Device,
    artifact_dir: Path,
    mnist_dir: Path | None = None,
    resume: int | None = None,
    devices: list[Device] | None = None,
) -> tuple[GuideModel, float]:
    """Train with the Learner; returns the trained model and its last validation accuracy (percent).

    ``devices`` (``device`` first) trains data-parallel over several devices of one backend."""
    artifact_dir.mkdir(parents=True, exist_ok=True)
    config.save(artifact_dir / "config.json")
    devices = devices or [device]
    for each in devices:
        each.seed(config.seed)

    train_loader = (
        DataLoaderBuilder(MnistBatcher())
        .batch_size(config.batch_size)
        .shuffle(config.seed)
        .num_workers(config.num_workers)
        .build(MnistDataset.train(mnist_dir, seed=config.seed))
    )
    valid_loader = (
        DataLoaderBuilder(MnistBatcher())
        .batch_size(config.batch_size)
        .num_workers(config.num_workers)
        .build(MnistDataset.test(mnist_dir, seed=config.seed))
    )

    builder = (
        LearnerBuilder(artifact_dir)
        .with_step_replay(step_replay(device) if config.optimizer.capturable and len(devices) == 1 else None)
        .metric_train_numeric(AccuracyMetric())
        .metric_valid_numeric(AccuracyMetric())
        .metric_train_numeric(LossMetric())
        .metric_valid_numeric(LossMetric())
        .with_file_checkpointer()  # full precision, so that a resumed run matches an uninterrupted one
        .devices(devices)
        .num_epochs(config.num_epochs)
        .summary()
    )
    if resume is not None:
        builder = builder.checkpoint(resume)
    learner = builder.build(GuideModel(config.model, device), config.optimizer.init(), config.learning_rate)
    model = learner.fit(train_loader, valid_loader)

    model.save_file(artifact_dir / "model", CompactRecorder())
    accuracy = learner.store.history("Accuracy", Split.VALID)
    return model, accuracy[max(accuracy)] if accuracy else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--device", default=os.environ.get("BURN_DEVICE", "autodiff-ndarray"))
    parser.add_argument(
        "--devices",
        type=int,
        default=1,
        metavar="N",
        help="train data-parallel on devices 0..N-1 of --device's backend",
    )
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--num-workers", type=int, default=0, help="data loader threads (default: none)")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--mnist-dir", type=Path, help="a folder with the full MNIST idx files")
    parser.add_argument("--artifact-dir", type=Path, default=Path(__file__).parent / "artifacts")
    parser.add_argument("--resume", type=int, metavar="EPOCH", help="continue from this checkpoint")
    args = parser.parse_args()

    device = parse_device(args.device)
    if not device.backend.ad_enabled():
        parser.error(
            f"--device {args.device}: training needs an autodiff device, such as 'autodiff-{args.device}'"
        )
    config = TrainingConfig(
        model=ModelConfig(num_classes=10, hidden_size=512),
        optimizer=AdamConfig(capturable=args.devices == 1 and step_replay(device) is not None),
        num_epochs=args.epochs,
        batch_size=args.batch_size,
        num_workers=args.num_workers,
        seed=args.seed,
        learning_rate=args.learning_rate,
    )
    count = device.backend.device_count()
    if not 1 <= args.devices <= count:
        parser.error(f"--devices {args.devices}: {device.backend.stack_name} has {count} device(s)")
    devices = [device.backend.device(i) for i in range(args.devices)] if args.devices > 1 else [device]
    start = time.perf_counter()
    model, accuracy = train(config, device, args.artifact_dir, args.mnist_dir, args.resume, devices)
    print(
        f"Validation accuracy {accuracy:.2f}% after {config.num_epochs} epochs in "
        f"{time.perf_counter() - start:.1f} s; weights, checkpoints, logs and curves.html in "
        f"{args.artifact_dir}/"
    )
    # as the Book's guide ends: the saved model, loaded back, classifies a validation image
    valid = MnistDataset.test(args.mnist_dir, seed=config.seed)
    item = valid.get(min(42, valid.len() - 1))
    assert item is not None
    image = ((item.image / 255.0 - MEAN) / STD).astype(np.float32)
    infer(args.artifact_dir, model.valid().devices()[0], image, int(item.label))


def step_replay(device: Device) -> Any:
    """``burn_fusion.replay`` where it can record training steps on ``device`` (a Fusion layer over Cuda:
    each step is then one CUDA graph launch, with Adam's step count on the device), else ``None``."""
    try:
        from burn_fusion import can_replay, replay
    except ImportError:
        return None
    return replay if can_replay(device) else None


if __name__ == "__main__":
    main()
