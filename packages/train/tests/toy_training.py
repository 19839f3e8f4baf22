"""A small classification run through the Learner, shared by the learner tests and run as a script by the
kill-and-resume test: ``python toy_training.py ARTIFACT_DIR --epochs N [--resume EPOCH] [--delay S]``.

The model has dropout, so the device's random generator matters; the loader shuffles with a seed and
uses worker threads; the optimizer is Adam (state to restore) with a step LR schedule."""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from burn_autodiff import Autodiff
from burn_backend import Device, Tensor
from burn_ndarray import NdArray
from burn_nn import DropoutConfig, LinearConfig, Module, Relu, loss
from burn_nn.optim import AdamConfig, StepLrSchedulerConfig
from burn_record import FullPrecisionSettings, NamedMpkFileRecorder
from burn_train import (
    AccuracyMetric,
    ClassificationOutput,
    CliRenderer,
    LearnerBuilder,
    LossMetric,
    MetricEntry,
    MetricMetadata,
    TrainingProgress,
    TrainOutput,
)
from burn_train.data import DataLoaderBuilder, InMemDataset

CLASSES, FEATURES = 4, 16


@dataclass(frozen=True)
class Item:
    features: np.ndarray
    label: int


def dataset(count: int, seed: int) -> InMemDataset[Item]:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, CLASSES, count)
    centers = np.random.default_rng(0).normal(size=(CLASSES, FEATURES))
    features = (centers[labels] + rng.normal(scale=1.5, size=(count, FEATURES))).astype(np.float32)
    return InMemDataset([Item(f, int(label)) for f, label in zip(features, labels)])


class Batcher:
    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay

    def batch(self, items: list[Item], device: Device) -> tuple[Tensor, Tensor]:
        if self.delay:
            time.sleep(self.delay)
        features = np.stack([item.features for item in items])
        labels = np.array([item.label for item in items], dtype=np.int64)
        return Tensor.from_data(features, device), Tensor.from_data(labels, device)


class Model(Module):
    def __init__(self, device: Device, dropout: float = 0.3) -> None:
        self.linear1 = LinearConfig(FEATURES, 32).init(device)
        self.dropout = DropoutConfig(dropout).init()
        self.activation = Relu()
        self.linear2 = LinearConfig(32, CLASSES).init(device)

    def forward(self, x: Tensor) -> Tensor:
        return self.linear2(self.activation(self.dropout(self.linear1(x))))

    def forward_classification(self, x: Tensor, targets: Tensor) -> ClassificationOutput:
        output = self.forward(x)
        value = loss.CrossEntropyLossConfig().init(output.device).forward(output, targets)
        return ClassificationOutput(value, output, targets)

    def train_step(self, batch: tuple[Tensor, Tensor]) -> TrainOutput[ClassificationOutput]:
        item = self.forward_classification(*batch)
        return TrainOutput(self, item.loss.backward(), item)

    def valid_step(self, batch: tuple[Tensor, Tensor]) -> ClassificationOutput:
        return self.forward_classification(*batch)


class StopAfter:
    """A metric that asks the learner's interrupter to stop after a given step of a given epoch."""

    input_type = None

    def __init__(self, epoch: int, iteration: int) -> None:
        self.at = (epoch, iteration)
        self.interrupter: Any = None

    def name(self) -> str:
        return "Stopper"

    def update(self, item: object, metadata: MetricMetadata) -> MetricEntry:
        if (metadata.epoch, metadata.iteration) == self.at:
            self.interrupter.stop("test")
        return MetricEntry("Stopper", "", "")

    def clear(self) -> None:
        pass


class ProgressFile(CliRenderer):
    """Also writes ``epoch iteration`` after each training step to a file (the kill test reads it)."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path

    def update(self, progress: TrainingProgress, entries: Any) -> None:
        if progress.split == "train":
            with open(self.path, "a") as file:
                file.write(f"{progress.epoch} {progress.iteration}\n")


def run(
    artifact_dir: Path,
    epochs: int,
    *,
    seed: int = 7,
    resume: int | None = None,
    delay: float = 0.0,
    workers: int = 2,
    accumulation: int = 1,
    renderer: Any = None,
    builder_hook: Any = None,
    devices: list[Device] | None = None,
    dropout: float = 0.3,
    lr: float | None = None,
    capturable: bool = False,
    train_items: int = 384,
) -> Module:
    """Train the toy model (``lr``: a constant rate instead of the step schedule; ``capturable``: Adam's
    step count on the device; ``train_items``: not a multiple of 32 for a last, smaller batch)."""
    devices = devices or [Autodiff(NdArray()).device()]
    device = devices[0]
    for each in devices:
        each.seed(seed)
    train_loader = (
        DataLoaderBuilder(Batcher(delay))
        .batch_size(32)
        .shuffle(seed)
        .num_workers(workers)
        .build(dataset(train_items, 1))
    )
    valid_loader = DataLoaderBuilder(Batcher()).batch_size(64).build(dataset(128, 2))
    builder = (
        LearnerBuilder(artifact_dir)
        .metric_train_numeric(AccuracyMetric())
        .metric_valid_numeric(AccuracyMetric())
        .metric_train_numeric(LossMetric())
        .metric_valid_numeric(LossMetric())
        .with_file_checkpointer(NamedMpkFileRecorder(FullPrecisionSettings()))
        .devices(devices)
        .num_epochs(epochs)
        .grads_accumulation(accumulation)
        .renderer(renderer or CliRenderer())
    )
    if resume is not None:
        builder = builder.checkpoint(resume)
    if builder_hook is not None:
        builder = builder_hook(builder)
    scheduler = StepLrSchedulerConfig(1e-2, 10, 0.5) if lr is None else lr
    learner = builder.build(Model(device, dropout), AdamConfig(capturable=capturable).init(), scheduler)
    return learner.fit(train_loader, valid_loader)


def weights(model: Module) -> dict[str, np.ndarray]:
    return {path: param.val().to_data().to_numpy() for path, param in model.named_params()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("artifact_dir", type=Path)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--resume", type=int)
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--dropout", type=float, default=0.3)
    parser.add_argument("--accumulation", type=int, default=1)
    parser.add_argument("--distributed", action="store_true", help="one process of a burn_train.launch run")
    parser.add_argument("--stop-at", type=int, nargs=3, help="RANK EPOCH ITERATION: that rank asks to stop")
    args = parser.parse_args()
    renderer = ProgressFile(args.artifact_dir / "progress.txt")
    final = args.artifact_dir / "final.npz"
    hook = None
    if args.distributed:
        from burn_backend.distributed import ProcessGroup

        group = ProcessGroup.from_environment(timeout=60)
        final = args.artifact_dir / f"final-rank{group.rank}.npz"
        renderer = ProgressFile(args.artifact_dir / f"progress-rank{group.rank}.txt")

        def hook(builder: Any) -> Any:
            builder = builder.distributed(group)
            if args.stop_at and args.stop_at[0] == group.rank:
                stopper = StopAfter(args.stop_at[1], args.stop_at[2])
                stopper.interrupter = builder.interrupter()
                builder = builder.metric_train(stopper)
            return builder

    model = run(
        args.artifact_dir, args.epochs, resume=args.resume, delay=args.delay, renderer=renderer,
        dropout=args.dropout, builder_hook=hook, accumulation=args.accumulation,
    )  # fmt: skip
    np.savez(final, **weights(model))
    print("done", file=sys.stderr)


if __name__ == "__main__":
    main()
