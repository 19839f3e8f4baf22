"""burn-train's costs, side by side in one run:

1. The guide's training (examples/guide: model.py, 10 epochs on the 5,000-image MNIST subset, batch 64, Adam)
   through the ``Learner`` with the dashboard drawing (a ``TuiRenderer`` on a terminal console, rendered
   into /dev/null so that the drawing costs what it costs on a screen), file logging and a checkpoint per
   epoch, against the custom loop of the Book's "Custom Training Loop" chapter (the same model, data
   loader, batches, optimizer and per-epoch metrics, written by hand). Target: <= 1.05x. A third side,
   the custom loop making its batches inline in the training thread (no loader threads), is printed
   beside it: on a machine whose cores the model's own threads already fill, loader threads cost more
   than they save, whoever drives the loop.
2. The data loader with 4 worker threads feeding a "model" that sleeps 1 ms per batch (the guide's batcher:
   64 MNIST items stacked and normalized): the loader's overhead per step over the 1 ms. Target: <= 10% of
   the step. PyTorch's ``DataLoader`` (4 worker processes, persistent) with the same batcher is the
   reference row.

On a machine shared with other work, whole-run wall times swing with the load; the CPU-time row and the
median of the fastest quarter of all epochs (each side's epochs least disturbed by the load) are printed
beside them.

Run: ``python tools/bench/bench_train.py [--quick] [--epochs N] [--repeat N]``.
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from _harness import PAUSE_S, Row, print_table

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "guide"))

from data import MEAN, STD
from model import Model, ModelConfig
from rich.console import Console

from burn_autodiff import Autodiff
from burn_backend import Device, Tensor, Transaction
from burn_ndarray import NdArray
from burn_nn import loss
from burn_nn.optim import AdamConfig, GradientsParams
from burn_train import (
    AccuracyMetric,
    ClassificationOutput,
    CliRenderer,
    LearnerBuilder,
    LossMetric,
    Split,
    TrainOutput,
    TuiRenderer,
)
from burn_train.data import DataLoaderBuilder, MnistDataset

BATCH, LR, SEED = 64, 1e-3, 42


class Batcher:
    """The guide's batcher: items to normalized float32 images and int64 labels, as NumPy arrays (so that
    PyTorch's worker processes can use it too) or as tensors on a device."""

    def arrays(self, items: list[Any]) -> tuple[np.ndarray, np.ndarray]:
        images = np.stack([item.image for item in items])
        images = ((images / 255.0 - MEAN) / STD).astype(np.float32)
        return images, np.array([item.label for item in items], dtype=np.int64)

    def batch(self, items: list[Any], device: Device) -> tuple[Tensor, Tensor]:
        images, labels = self.arrays(items)
        return Tensor.from_data(images, device), Tensor.from_data(labels, device)

    def __call__(self, items: list[Any]) -> tuple[np.ndarray, np.ndarray]:  # PyTorch's collate_fn
        return self.arrays(items)


class GuideModel(Model):
    def forward_classification(self, images: Tensor, targets: Tensor) -> ClassificationOutput:
        output = self.forward(images)
        return ClassificationOutput(
            loss.CrossEntropyLossConfig().init(output.device)(output, targets), output, targets
        )

    def train_step(self, batch: tuple[Tensor, Tensor]) -> TrainOutput[ClassificationOutput]:
        item = self.forward_classification(*batch)
        return TrainOutput(self, item.loss.backward(), item)

    def valid_step(self, batch: tuple[Tensor, Tensor]) -> ClassificationOutput:
        return self.forward_classification(*batch)


EPOCH_TIMES: dict[str, list[float]] = {"ours": [], "theirs": [], "inline": []}


class StampedTui(TuiRenderer):
    """The dashboard, also noting when each epoch ends (its checkpoint and curves of the previous epoch
    included), for the per-epoch comparison."""

    def start(self, title: str, epoch_total: int, start_epoch: int) -> None:
        self._stamp = time.perf_counter()
        super().start(title, epoch_total, start_epoch)

    def end_epoch(self, epoch: int, values: Any, seconds: float) -> None:
        now = time.perf_counter()
        EPOCH_TIMES["ours"].append(now - self._stamp)
        self._stamp = now
        super().end_epoch(epoch, values, seconds)


def learner_run(epochs: int, workers: int, dashboard: bool = True) -> float:
    """The guide through the Learner, dashboard on; returns the last validation accuracy."""
    device = Autodiff(NdArray()).device()
    device.seed(SEED)
    train = DataLoaderBuilder(Batcher()).batch_size(BATCH).shuffle(SEED).num_workers(workers)
    valid = DataLoaderBuilder(Batcher()).batch_size(BATCH).num_workers(workers)
    console = Console(file=open(os.devnull, "w"), force_terminal=True, width=120)  # noqa: SIM115
    with tempfile.TemporaryDirectory() as artifacts:
        learner = (
            LearnerBuilder(artifacts)
            .metric_train_numeric(AccuracyMetric())
            .metric_valid_numeric(AccuracyMetric())
            .metric_train_numeric(LossMetric())
            .metric_valid_numeric(LossMetric())
            .with_file_checkpointer()
            .devices([device])
            .num_epochs(epochs)
            .renderer(StampedTui(console=console) if dashboard else CliRenderer(console.file))
            .build(GuideModel(ModelConfig(10, 512), device), AdamConfig().init(), LR)
        )
        learner.fit(train.build(MnistDataset.train(seed=SEED)), valid.build(MnistDataset.test(seed=SEED)))
        accuracy = learner.store.history("Accuracy", Split.VALID)[epochs]
    console.file.close()
    return accuracy


def inline_batches(dataset: Any, order: Any, device: Device) -> Any:
    """Batches made in the training thread, as plain loops over ``order``: no loader at all."""
    batcher = Batcher()
    for start in range(0, len(order), BATCH):
        images, labels = batcher.arrays([dataset[int(i)] for i in order[start : start + BATCH]])
        yield Tensor.from_data(images, device), Tensor.from_data(labels, device)


def custom_run(epochs: int, workers: int | None) -> float:
    """The Book's custom training loop: the same model, data, batches (the same seeded orders), Adam,
    and the per-epoch loss and accuracy of both splits (read once per batch), printed per epoch.

    With ``workers`` a number, batches come from the same ``DataLoader`` as the Learner's (as in the
    Book's chapter); with ``None`` they are made inline in the training thread."""
    device = Autodiff(NdArray()).device()
    device.seed(SEED)
    train_set, valid_set = MnistDataset.train(seed=SEED), MnistDataset.test(seed=SEED)
    if workers is not None:
        train = DataLoaderBuilder(Batcher()).batch_size(BATCH).shuffle(SEED).num_workers(workers)
        valid = DataLoaderBuilder(Batcher()).batch_size(BATCH).num_workers(workers)
        train_loader = train.set_device(device).build(train_set)
        valid_loader = valid.set_device(device).build(valid_set)
    model = GuideModel(ModelConfig(10, 512), device)
    optim = AdamConfig().init()
    criterion = loss.CrossEntropyLossConfig().init(device)
    out = io.StringIO()
    accuracy = 0.0
    stamp = time.perf_counter()
    for epoch in range(1, epochs + 1):
        order = np.random.default_rng([SEED, epoch]).permutation(train_set.len())
        totals = [0.0, 0.0]
        batches = train_loader if workers is not None else inline_batches(train_set, order, device)
        for images, labels in batches:
            output = model(images)
            batch_loss = criterion(output, labels)
            model = optim.step(LR, model, GradientsParams.from_grads(batch_loss.backward(), model))
            value, predicted, targets = (
                Transaction().register(batch_loss).register(output.argmax(1)).register(labels).execute()
            )
            count = targets.num_elements()
            totals[0] += float(value.to_numpy().mean()) * count
            totals[1] += int((predicted.to_numpy().reshape(-1) == targets.to_numpy()).sum())
        valid_model = model.valid()
        inner = valid_model.devices()[0]
        correct = 0
        batches = (
            valid_loader.to_device(inner)
            if workers is not None
            else inline_batches(valid_set, range(valid_set.len()), inner)
        )
        for images, labels in batches:
            output = valid_model(images)
            batch_loss = criterion(output, labels)
            value, predicted, targets = (
                Transaction().register(batch_loss).register(output.argmax(1)).register(labels).execute()
            )
            correct += int((predicted.to_numpy().reshape(-1) == targets.to_numpy()).sum())
        accuracy = 100.0 * correct / valid_set.len()
        print(
            f"[Epoch {epoch}] train loss {totals[0] / len(order):.3f} | valid accuracy {accuracy:.2f}%",
            file=out,
        )
        now = time.perf_counter()
        EPOCH_TIMES["theirs" if workers is not None else "inline"].append(now - stamp)
        stamp = now
    return accuracy


def guide_row(epochs: int, repeat: int, workers: int) -> tuple[list[Row], list[float], list[float]]:
    """Alternating runs of three sides: the Learner, the custom loop over the same data loader (the
    target row) and the custom loop making its batches inline (no loader threads at all). Also a
    CPU-time row (this process's CPU seconds, steadier than wall time on a machine others share)."""
    sides = {
        "theirs": lambda: custom_run(epochs, workers),
        "inline": lambda: custom_run(epochs, None),
        "ours": lambda: learner_run(epochs, workers),
    }
    walls: dict[str, list[float]] = {side: [] for side in sides}
    cpus: dict[str, list[float]] = {side: [] for side in sides}
    accuracy: dict[str, list[float]] = {side: [] for side in sides}
    names = list(sides)
    for round_index in range(repeat):  # alternating, so that the machine's load hits every side alike
        turn = round_index % len(names)  # and rotating who goes first, so no side always follows another
        for side in names[turn:] + names[:turn]:
            run = sides[side]
            time.sleep(PAUSE_S)
            wall, cpu = time.perf_counter(), time.process_time()
            accuracy[side].append(run())
            walls[side].append(time.perf_counter() - wall)
            cpus[side].append(time.process_time() - cpu)
        print(
            f"  {workers} workers: Learner {walls['ours'][-1]:.1f} s ({cpus['ours'][-1]:.1f} s CPU), "
            f"custom loop {walls['theirs'][-1]:.1f} s ({cpus['theirs'][-1]:.1f} s CPU), "
            f"inline batches {walls['inline'][-1]:.1f} s ({cpus['inline'][-1]:.1f} s CPU)",
            flush=True,
        )
    paired = [ours / theirs for ours, theirs in zip(walls["ours"], walls["theirs"])]
    print(
        f"  per-round Learner / custom loop: {', '.join(f'{r:.2f}' for r in paired)}; "
        f"median {statistics.median(paired):.2f} (a round's runs are seconds apart, so the machine's "
        "load hits both alike)"
    )
    name = f"guide {epochs} epochs, Learner + dashboard, {workers} workers"
    fastest = {side: sorted(times)[: max(3, len(times) // 4)] for side, times in EPOCH_TIMES.items()}
    for times in EPOCH_TIMES.values():
        times.clear()
    median = statistics.median
    rows = [
        Row(name, median(walls["ours"]), median(walls["theirs"]), "custom loop, same loader", "<= 1.05x"),
        Row(name + " (CPU s)", median(cpus["ours"]), median(cpus["theirs"]), "custom", "-"),
        Row(
            "one epoch: median of each side's fastest quarter",
            median(fastest["ours"]),
            median(fastest["theirs"]),
            "custom loop",
            "-",
        ),
        Row(name, median(walls["ours"]), median(walls["inline"]), "custom loop, inline batches", "-"),
    ]
    return rows, accuracy["ours"], accuracy["theirs"] + accuracy["inline"]


class SleepingModel:
    """Takes 1 ms per batch, holding no lock (as a GPU step does)."""

    def __call__(self, batch: Any) -> None:
        time.sleep(0.001)


def loader_rows(epochs: int) -> list[Row]:
    import torch

    dataset = MnistDataset.train(seed=SEED)
    model = SleepingModel()
    batches = -(-dataset.len() // BATCH)
    loader = DataLoaderBuilder(Batcher()).batch_size(BATCH).shuffle(SEED).num_workers(4).build(dataset)

    class TorchView(torch.utils.data.Dataset):  # type: ignore[misc]
        def __len__(self) -> int:
            return dataset.len()

        def __getitem__(self, index: int) -> Any:
            return dataset[index]

    torch_loader = torch.utils.data.DataLoader(
        TorchView(),
        batch_size=BATCH,
        shuffle=True,
        num_workers=4,
        collate_fn=Batcher(),
        persistent_workers=True,
    )

    def per_step(run: Any) -> float:
        run()  # warm-up (PyTorch starts its workers)
        times = []
        for _ in range(epochs):
            time.sleep(PAUSE_S)
            start = time.perf_counter()
            run()
            times.append((time.perf_counter() - start) / batches)
        return statistics.median(times)

    def sleep_only() -> None:
        for _ in range(batches):
            model(None)

    def ours() -> None:
        for batch in loader:
            model(batch)

    def theirs() -> None:
        for batch in torch_loader:
            model(batch)

    bare, ours_step, torch_step = per_step(sleep_only), per_step(ours), per_step(theirs)
    rows = [
        Row("loader, 4 workers, 1 ms model: step", ours_step, torch_step, "torch DataLoader", "reference"),
        Row("loader overhead over the bare 1 ms step", ours_step, bare, "sleep alone", "<= 1.10x"),
    ]
    print(
        f"\nloader overhead: ours {100 * (ours_step - bare) / ours_step:.1f}% of the step, "
        f"torch {100 * (torch_step - bare) / torch_step:.1f}% (bare step {bare * 1e3:.3f} ms; target <= 10%)"
    )
    return rows


def interleaved_rows(runs: int, workers: int) -> list[Row]:
    """One-epoch runs of each side, alternated ``runs`` times: the machine's load changes between
    alternations less than over whole 10-epoch runs, so the medians compare the sides more fairly."""
    times: dict[str, list[float]] = {"custom": [], "plain": [], "dashboard": []}  # custom: same loader
    for _ in range(runs):
        for side in times:
            time.sleep(PAUSE_S)
            start = time.perf_counter()
            if side == "custom":
                custom_run(1, workers)
            else:
                learner_run(1, workers, dashboard=side == "dashboard")
            times[side].append(time.perf_counter() - start)
    for epoch_times in EPOCH_TIMES.values():
        epoch_times.clear()
    custom = statistics.median(times["custom"])
    return [
        Row(f"1 epoch x{runs} alternated, Learner (line per epoch), {workers} w",
            statistics.median(times["plain"]), custom, "custom loop", "<= 1.05x"),
        Row(f"1 epoch x{runs} alternated, Learner + dashboard, {workers} w",
            statistics.median(times["dashboard"]), custom, "custom loop", "<= 1.05x"),
    ]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="2 epochs, once (noisier)")
    parser.add_argument("--epochs", type=int, default=10, help="guide epochs per run (default 10)")
    parser.add_argument("--repeat", type=int, default=3, help="alternating runs per side (default 3)")
    parser.add_argument("--workers", type=int, nargs="+", default=[4], help="Learner loader workers")
    parser.add_argument(
        "--interleaved", type=int, default=0, metavar="N", help="also N alternated one-epoch runs per side"
    )
    args = parser.parse_args()
    epochs, repeat = (2, 1) if args.quick else (args.epochs, args.repeat)
    MnistDataset.train()  # fetch and cache before timing
    rows = loader_rows(3 if args.quick else 10)
    for workers in args.workers:
        guide_rows, accuracies, custom = guide_row(epochs, repeat, workers)
        rows += guide_rows
        shown = ", ".join(f"{a:.2f}%" for a in accuracies)
        print(f"validation accuracy after {epochs} epochs: Learner {shown}; custom loop ", end="")
        print(", ".join(f"{a:.2f}%" for a in custom))
    for workers in args.workers if args.interleaved else []:
        rows += interleaved_rows(args.interleaved, workers)
    print_table("burn-train (ratio = ours / reference)", rows)


if __name__ == "__main__":
    main()
