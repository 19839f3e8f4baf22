"""Every recorder saves and loads every kind of value, dtype, shape, precision and nesting exactly."""

from __future__ import annotations

import enum
import io
import mmap
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _record_support import BINARY_RECORDERS, FILE_RECORDERS, converted, equal, sample_record

from burn_backend import DType, ParamId, ParamRecord, Recorder, TensorData
from burn_record import (
    BinBytesRecorder,
    CompactRecorder,
    DefaultFileRecorder,
    DefaultRecorder,
    DoublePrecisionSettings,
    FileRecorder,
    FullPrecisionSettings,
    HalfPrecisionSettings,
    NamedMpkBytesRecorder,
    NamedMpkFileRecorder,
    NamedMpkZstBytesRecorder,
    NamedMpkZstFileRecorder,
    PrettyJsonFileRecorder,
)
from burn_record._write import write_binary

SETTINGS = [FullPrecisionSettings(), HalfPrecisionSettings(), DoublePrecisionSettings()]
SHAPES: list[tuple[int, ...]] = [(), (0,), (1,), (7,), (2, 0, 3), (3, 4, 5)]


def _values(dtype: DType, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray[Any, Any]:
    """Values of ``dtype`` that fit every precision's dtypes, with the special floats where there is room."""
    count = int(np.prod(shape))
    if dtype is DType.BOOL:
        values = rng.random(count) < 0.5
    elif dtype.is_float:
        values = rng.uniform(-1000, 1000, count)
        special = [np.nan, np.inf, -np.inf, -0.0, 1e-30]
        values[: min(count, len(special))] = special[: min(count, len(special))]
    elif dtype.is_signed:
        values = rng.integers(-30000, 30000, count)
    else:
        high = np.iinfo(dtype.numpy).max
        values = rng.integers(0, high, count, dtype=dtype.numpy, endpoint=True)
    return np.asarray(values).astype(dtype.numpy).reshape(shape)


def _every_dtype_and_shape() -> dict[str, Any]:
    rng = np.random.default_rng(3)
    return {
        f"{dtype.value}_{'x'.join(map(str, shape)) or 'scalar'}": TensorData(_values(dtype, shape, rng))
        for dtype in DType
        for shape in SHAPES
    }


@pytest.mark.parametrize("via", ["file", "bytes"])
@pytest.mark.parametrize("recorder_type", FILE_RECORDERS, ids=lambda cls: cls.__name__)
def test_a_record_of_every_kind_of_value_round_trips(
    recorder_type: type[FileRecorder], via: str, tmp_path
) -> None:
    recorder = recorder_type()
    record = sample_record()
    if via == "file":
        written = recorder.save(record, tmp_path / "state")
        assert written == tmp_path / f"state.{recorder.file_extension}"
        loaded = recorder.load(tmp_path / "state")
    else:
        loaded = recorder.from_bytes(recorder.to_bytes(record))
    assert equal(record, loaded)
    assert equal(sample_record(), record)  # saving changed nothing


@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: s.name)
@pytest.mark.parametrize("recorder_type", FILE_RECORDERS, ids=lambda cls: cls.__name__)
def test_every_dtype_and_shape_converts_to_the_precision(recorder_type, settings, tmp_path) -> None:
    record = _every_dtype_and_shape()
    recorder = recorder_type(settings)
    loaded = recorder.load(recorder.save(record, tmp_path / "all"))
    assert list(loaded) == list(record)
    for name, value in record.items():
        expected = converted(value, settings)
        assert loaded[name].dtype is settings.stored_dtype(value.dtype), name
        assert equal(expected, loaded[name]), name
        if value.dtype in (DType.BOOL, DType.U8, DType.U16, DType.U32, DType.U64):
            assert loaded[name].dtype is value.dtype  # unsigned ints and bools keep their dtype


@pytest.mark.parametrize("recorder_type", FILE_RECORDERS, ids=lambda cls: cls.__name__)
def test_bytes_forms_and_file_forms_hold_the_same_bytes(recorder_type, tmp_path) -> None:
    recorder = recorder_type()
    record = sample_record()
    path = recorder.save(record, tmp_path / "same")
    assert path.read_bytes() == recorder.to_bytes(record)  # deterministic, and one format for both
    assert equal(recorder.from_bytes(path.read_bytes()), record)


@pytest.mark.parametrize(
    ("bytes_type", "file_type"),
    [
        (BinBytesRecorder, "BinFileRecorder"),
        (NamedMpkBytesRecorder, "NamedMpkFileRecorder"),
        (NamedMpkZstBytesRecorder, "NamedMpkZstFileRecorder"),
    ],
)
def test_bytes_recorders_read_what_their_file_recorders_write(bytes_type, file_type, tmp_path) -> None:
    record = sample_record()
    data = bytes_type().save(record)
    assert equal(bytes_type().load(data), record)
    assert equal(bytes_type().from_bytes(bytearray(data)), record)
    assert bytes_type().to_bytes(record) == data
    file_recorder = {cls.__name__: cls for cls in FILE_RECORDERS}[file_type]()
    path = file_recorder.save(record, tmp_path / "model")
    assert equal(bytes_type().load(path.read_bytes()), record)
    with pytest.raises(TypeError, match=f"takes no path; {file_type} writes files"):
        bytes_type().save(record, tmp_path / "model")
    with pytest.raises(TypeError, match="device must be a Device or None, got str"):
        bytes_type().load(data, "cpu")
    assert repr(bytes_type(HalfPrecisionSettings)) == f"{bytes_type.__name__}(HalfPrecisionSettings())"


@pytest.mark.parametrize("recorder_type", BINARY_RECORDERS, ids=lambda cls: cls.__name__)
def test_a_large_tensor_round_trips_exactly(recorder_type, tmp_path) -> None:
    values = np.random.default_rng(0).standard_normal((1500, 2000)).astype(np.float32)  # 12 MB
    recorder = recorder_type()
    loaded = recorder.load(recorder.save({"w": TensorData(values)}, tmp_path / "large"))
    np.testing.assert_array_equal(loaded["w"].to_numpy(), values)


@pytest.mark.parametrize("recorder_type", BINARY_RECORDERS, ids=lambda cls: cls.__name__)
def test_tensors_past_one_chunk_are_split_and_joined(recorder_type) -> None:
    """Tensors above the ``bin 32`` limit (4 GiB) are written in pieces; a small chunk size (a header
    field) exercises that path."""
    rng = np.random.default_rng(1)
    record = {
        "split": TensorData(rng.standard_normal(1300).astype(np.float32)),  # 5200 bytes: 6 chunks of 1024
        "exact": TensorData(np.arange(512, dtype=np.int32)),  # 2048 bytes: 2 full chunks
        "small": TensorData(np.array([1.0, 2.0], np.float32)),
        "empty": TensorData(np.zeros(0, np.float32)),
    }
    recorder = recorder_type()
    out = io.BytesIO()
    write_binary(out, record, recorder._format, recorder.settings, 100, chunk=1024)
    assert equal(recorder.from_bytes(out.getvalue()), record)


def test_nesting_to_the_limit_and_wide_records_round_trip() -> None:
    deep: Any = TensorData([1.0])
    for level in range(99):
        deep = {"d": deep} if level % 2 else [deep]
    wide = {f"key{i}": i for i in range(5000)}
    record = {"deep": deep, "wide": wide, "lists": [[[], [[]]], []]}
    for recorder_type in FILE_RECORDERS:
        recorder = recorder_type()
        assert equal(recorder.from_bytes(recorder.to_bytes(record)), record), recorder_type.__name__


def test_python_and_numpy_values_are_stored_as_their_plain_kind() -> None:
    class Level(enum.IntEnum):
        HIGH = 3

    record = {
        "tuple": (1, (2, 3)),
        "enum": Level.HIGH,
        "np_int": np.int16(-4),
        "np_float": np.float32(0.5),
        "np_bool": np.bool_(True),
        "array": np.arange(6, dtype=np.int64).reshape(2, 3),
    }
    loaded = NamedMpkFileRecorder(DoublePrecisionSettings()).from_bytes(
        NamedMpkFileRecorder(DoublePrecisionSettings()).to_bytes(record)
    )
    assert loaded["tuple"] == [1, [2, 3]]
    assert type(loaded["enum"]) is int
    assert loaded["enum"] == 3
    assert (type(loaded["np_int"]), type(loaded["np_float"]), type(loaded["np_bool"])) == (int, float, bool)
    assert equal(loaded["array"], TensorData(np.arange(6, dtype=np.int64).reshape(2, 3)))


def test_backend_tensors_are_stored_as_their_data() -> None:
    burn_ndarray = pytest.importorskip("burn_ndarray")
    from burn_backend import Tensor

    tensor = Tensor.from_data([[1.0, 2.0], [3.0, 4.0]], burn_ndarray.NdArray().device())
    loaded = NamedMpkFileRecorder().from_bytes(NamedMpkFileRecorder().to_bytes({"t": tensor}))
    assert equal(loaded["t"], TensorData(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)))


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"a": {1: 2}}, r"entry 'a' has the key 1 \(int\); record dicts are keyed by str"),
        ({"a": [{1, 2}]}, r"entry 'a.0' is a set; a record holds dicts with str keys"),
        ({"a": object()}, r"entry 'a' is a object"),
        ({"a": np.array(["x"])}, r"entry 'a' is a NumPy array of <U1, which no tensor dtype stores"),
        ({"a": ParamRecord(ParamId(1), "w")}, r"entry 'a' is a str"),  # type: ignore[arg-type]
        ([1, 2], r"save: a record is a dict \(str keys\), got list"),
    ],
)
def test_values_no_record_holds_are_named_by_their_path(record, message, tmp_path) -> None:
    for recorder_type in FILE_RECORDERS:
        with pytest.raises(TypeError, match=message):
            recorder_type().save(record, tmp_path / "bad")
    assert list(tmp_path.iterdir()) == []  # nothing written, no temporary file left


def test_a_record_that_contains_itself_is_refused() -> None:
    record: dict[str, Any] = {"a": [1]}
    record["a"].append(record)
    with pytest.raises(ValueError, match="nested deeper than 100 levels"):
        NamedMpkFileRecorder().to_bytes(record)


def test_uncompressed_files_load_as_aligned_views_of_the_mapped_file(tmp_path) -> None:
    record = {"w": TensorData(np.arange(1000, dtype=np.float64)), "b": TensorData(np.ones(3, np.int32))}
    path = NamedMpkFileRecorder(DoublePrecisionSettings()).save(record, tmp_path / "m")
    loaded = NamedMpkFileRecorder(DoublePrecisionSettings()).load(path)
    for value in loaded.values():
        array = value.to_numpy()
        assert array.ctypes.data % 64 == 0
        assert isinstance(_root_base(array), mmap.mmap)
        assert not array.flags.writeable
    read = NamedMpkFileRecorder(DoublePrecisionSettings(), memory_map=False).load(path)
    assert not isinstance(_root_base(read["w"].to_numpy()), mmap.mmap)
    assert read["w"].to_numpy().ctypes.data % 64 == 0
    assert equal(read, loaded)
    data = path.read_bytes()
    from_bytes = NamedMpkFileRecorder(DoublePrecisionSettings()).from_bytes(data)
    assert _root_base(from_bytes["w"].to_numpy()) is data  # a view of the bytes, not a copy


def _root_base(array: np.ndarray[Any, Any]) -> Any:
    base: Any = array
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    return base.obj if isinstance(base, memoryview) else base


def test_a_loaded_mapped_file_survives_a_save_over_it(tmp_path) -> None:
    recorder = NamedMpkFileRecorder()
    path = recorder.save({"w": TensorData(np.full(4096, 1.0, np.float32))}, tmp_path / "m")
    loaded = recorder.load(path)
    recorder.save({"w": TensorData(np.full(4096, 2.0, np.float32))}, path)  # a new file, renamed over
    np.testing.assert_array_equal(loaded["w"].to_numpy(), 1.0)
    np.testing.assert_array_equal(recorder.load(path)["w"].to_numpy(), 2.0)


def test_paths_get_the_format_extension_and_load_finds_files(tmp_path) -> None:
    record = {"x": 1}
    assert NamedMpkFileRecorder().save(record, tmp_path / "a") == tmp_path / "a.mpk"
    assert NamedMpkFileRecorder().save(record, tmp_path / "a.mpk") == tmp_path / "a.mpk"
    assert NamedMpkZstFileRecorder().save(record, str(tmp_path / "a")) == tmp_path / "a.mpk.zst"
    assert NamedMpkZstFileRecorder().path_for("m.mpk") == Path("m.mpk.mpk.zst")
    assert PrettyJsonFileRecorder().path_for("state") == Path("state.json")
    (tmp_path / "weights.data").write_bytes(NamedMpkFileRecorder().to_bytes(record))
    assert NamedMpkFileRecorder().load(tmp_path / "weights.data") == record
    with pytest.raises(FileNotFoundError, match=r"missing\.mpk"):
        NamedMpkFileRecorder().load(tmp_path / "missing")
    with pytest.raises(FileNotFoundError):
        NamedMpkFileRecorder().save(record, tmp_path / "no_folder" / "m")


def test_recorders_are_records_vocabulary_recorders_with_settings() -> None:
    for recorder_type in FILE_RECORDERS:
        assert isinstance(recorder_type(), Recorder)
        assert recorder_type(HalfPrecisionSettings).settings == HalfPrecisionSettings()
    assert repr(NamedMpkFileRecorder()) == "NamedMpkFileRecorder(FullPrecisionSettings())"
    assert CompactRecorder().settings == HalfPrecisionSettings()
    assert isinstance(CompactRecorder(), NamedMpkZstFileRecorder)
    assert DefaultRecorder is NamedMpkFileRecorder
    assert DefaultFileRecorder is NamedMpkFileRecorder
    assert DefaultRecorder().settings == FullPrecisionSettings()
    with pytest.raises(TypeError, match="expected precision settings"):
        NamedMpkFileRecorder("half")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="device must be a Device or None, got int"):
        NamedMpkFileRecorder().load("x", 0)  # type: ignore[arg-type]


def test_compressed_files_are_smaller_and_the_compact_recorder_halves_floats(tmp_path) -> None:
    weights = np.random.default_rng(0).uniform(-0.05, 0.05, (256, 256)).astype(np.float32)
    record = {"w": TensorData(weights)}
    plain = NamedMpkFileRecorder().save(record, tmp_path / "m").stat().st_size
    compressed = NamedMpkZstFileRecorder().save(record, tmp_path / "m").stat().st_size
    compact = CompactRecorder().save(record, tmp_path / "c").stat().st_size
    assert compressed < 0.9 * plain
    assert compact < 0.5 * plain
    loaded = CompactRecorder().load(tmp_path / "c")["w"]
    assert loaded.dtype is DType.F16
    np.testing.assert_array_equal(loaded.to_numpy(), weights.astype(np.float16))


def test_saving_writes_durably_beside_the_target_and_keeps_permissions(tmp_path) -> None:
    path = NamedMpkFileRecorder().save({"x": 1}, tmp_path / "m")
    os.chmod(path, 0o640)
    NamedMpkFileRecorder().save({"x": 2}, tmp_path / "m")
    assert path.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.mpk"]
