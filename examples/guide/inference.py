"""Inference with the trained guide model, loaded from the files training saved (the Burn Book guide's
"Inference" section).

Usage: ``python examples/guide/inference.py [--artifact-dir DIR] [--index N] [--device SPEC]``
(with ``--mnist-dir DIR`` if training used the full MNIST files).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import numpy as np
from data import load_mnist_5k, load_mnist_idx
from model import ModelConfig

from burn import Device, Tensor, parse_device
from burn.record import CompactRecorder


def infer(artifact_dir: Path, device: Device, image: np.ndarray, label: int) -> int:
    """Load the model's settings (from the run's ``config.json``) and the weights saved in
    ``artifact_dir``, classify ``image`` (``[28, 28]``, normalized) on ``device`` and print the
    prediction next to ``label``; returns the prediction."""
    settings = json.loads((artifact_dir / "config.json").read_text())
    config = ModelConfig.from_dict(settings["model"])
    record = CompactRecorder().load(artifact_dir / "model", device)
    model = config.init_with(record, device)

    output = model(Tensor.from_data(image[None], device))  # a batch of one
    predicted = int(output.argmax(1).flatten(0, 1).into_scalar())
    print(f"Predicted {predicted} Expected {label}")
    return predicted


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--artifact-dir", type=Path, default=Path(__file__).parent / "artifacts")
    parser.add_argument("--index", type=int, default=42, help="which validation image to classify")
    parser.add_argument("--device", default=os.environ.get("BURN_DEVICE", "ndarray"))
    parser.add_argument("--mnist-dir", type=Path, help="the full MNIST idx files, if training used them")
    args = parser.parse_args()
    seed = json.loads((args.artifact_dir / "config.json").read_text())["seed"]
    _, valid = load_mnist_idx(args.mnist_dir) if args.mnist_dir else load_mnist_5k(seed)
    infer(
        args.artifact_dir, parse_device(args.device), valid.images[args.index], int(valid.labels[args.index])
    )


if __name__ == "__main__":
    main()
