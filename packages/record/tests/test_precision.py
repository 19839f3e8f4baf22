"""Precision settings convert on save and on load, and raise where a value does not fit."""

from __future__ import annotations

import re

import numpy as np
import pytest
from _record_support import FILE_RECORDERS

from burn_backend import DType, ParamId, ParamRecord, TensorData
from burn_record import (
    DoublePrecisionSettings,
    FullPrecisionSettings,
    HalfPrecisionSettings,
    NamedMpkFileRecorder,
    PrecisionError,
    RecordFileError,
)
from burn_record._precision import convert_checked


@pytest.mark.parametrize("recorder_type", FILE_RECORDERS, ids=lambda cls: cls.__name__)
def test_a_value_that_overflows_f16_raises_on_save_and_leaves_the_file(recorder_type, tmp_path) -> None:
    recorder = recorder_type(HalfPrecisionSettings())
    path = recorder.save({"w": TensorData([1.0])}, tmp_path / "m")
    before = path.read_bytes()
    weights = np.array([[1.0, 2.0], [1e5, -7e4]], np.float32)
    record = {"layer": {"weight": ParamRecord(ParamId(1), TensorData(weights))}}
    with pytest.raises(
        PrecisionError,
        match=r"save: entry 'layer.weight': 100000 at index \[1, 0\] \(and 1 more\) does not fit f16 "
        r"\(largest finite 65504\)",
    ):
        recorder.save(record, tmp_path / "m")
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]


def test_ints_out_of_the_stored_range_raise() -> None:
    with pytest.raises(PrecisionError, match=r"entry 'step': 1099511627776 at index \[\] does not fit i32"):
        NamedMpkFileRecorder().to_bytes({"step": TensorData(np.int64(2**40))})
    with pytest.raises(
        PrecisionError, match=r"-40000 at index \[1\] does not fit i16 \(range -32768 to 32767\)"
    ):
        NamedMpkFileRecorder(HalfPrecisionSettings()).to_bytes({"i": TensorData(np.array([1, -40000]))})
    with pytest.raises(PrecisionError, match=r"1e\+39 at index \[0\] does not fit f32"):
        NamedMpkFileRecorder().to_bytes({"x": TensorData(np.array([1e39]))})


def test_non_finite_values_and_underflow_convert_silently() -> None:
    values = np.array([np.nan, np.inf, -np.inf, 1e-30, 65504.0], np.float64)
    loaded = NamedMpkFileRecorder(HalfPrecisionSettings()).from_bytes(
        NamedMpkFileRecorder(HalfPrecisionSettings()).to_bytes({"x": TensorData(values)})
    )
    np.testing.assert_array_equal(loaded["x"].to_numpy(), values.astype(np.float16))  # 1e-30 -> 0: no error


def test_loading_converts_to_the_recorders_precision() -> None:
    values = np.array([0.1, 1e5, -3.25], np.float32)
    data = NamedMpkFileRecorder(FullPrecisionSettings()).to_bytes({"w": TensorData(values), "n": 7})
    double = NamedMpkFileRecorder(DoublePrecisionSettings()).from_bytes(data)
    assert double["w"].dtype is DType.F64
    np.testing.assert_array_equal(double["w"].to_numpy(), values.astype(np.float64))
    assert double["n"] == 7  # plain numbers are never converted
    with pytest.raises(RecordFileError, match=r"entry 'w': 100000 at index \[1\] does not fit f16"):
        NamedMpkFileRecorder(HalfPrecisionSettings()).from_bytes(data)
    half_file = NamedMpkFileRecorder(HalfPrecisionSettings()).to_bytes({"w": TensorData([0.5, 2.0])})
    full = NamedMpkFileRecorder().from_bytes(half_file)
    assert full["w"].dtype is DType.F32
    np.testing.assert_array_equal(full["w"].to_numpy(), [0.5, 2.0])


@pytest.mark.parametrize(
    ("source", "target", "values", "bad"),
    [
        (np.float32, DType.F16, [1.0, 7e4], "70000 at index [1]"),
        (np.float64, DType.F32, [3e38, 4e38], "4e+38 at index [1]"),
        (np.int64, DType.I16, [32767, 32768], "32768 at index [1]"),
        (np.uint64, DType.I64, [1, 2**63], "9223372036854775808 at index [1]"),
        (np.int64, DType.U8, [-1, 3], "-1 at index [0]"),
        (np.float32, DType.I32, [np.nan, 1.0], "nan at index [0]"),
        (np.float64, DType.I64, [2.0**63], "9.22337e+18 at index [0]"),
    ],
)
def test_checked_conversion_reports_the_first_value_that_does_not_fit(source, target, values, bad) -> None:
    with pytest.raises(PrecisionError, match="where: " + re.escape(bad)):
        convert_checked(np.array(values, source), target, "where")


def test_checked_conversion_matches_numpy_where_values_fit() -> None:
    rng = np.random.default_rng(0)
    floats = rng.normal(size=100) * 100
    for target in (DType.F16, DType.BF16, DType.F32, DType.F64):
        np.testing.assert_array_equal(convert_checked(floats, target, "w"), floats.astype(target.numpy))
    ints = rng.integers(-100, 100, 50)
    for target in (DType.I8, DType.I16, DType.I32, DType.F16):
        np.testing.assert_array_equal(convert_checked(ints, target, "w"), ints.astype(target.numpy))
    np.testing.assert_array_equal(convert_checked(np.array([2.9, -2.9]), DType.I32, "w"), [2, -2])
    same = np.arange(3, dtype=np.float32)
    assert convert_checked(same, DType.F32, "w") is same


def test_modules_of_another_dtype_convert_on_load_and_reject_overflow() -> None:
    burn_nn = pytest.importorskip("burn_nn")
    burn_ndarray = pytest.importorskip("burn_ndarray")
    half = burn_ndarray.NdArray(float_dtype="f16").device()
    layer = burn_nn.LinearConfig(2, 2).init(half)
    record = layer.into_record()
    weight = np.array([[1.0, 2.5], [1e5, 3.0]], np.float32)
    record["weight"] = ParamRecord(record["weight"].id, TensorData(weight))
    record["bias"] = ParamRecord(record["bias"].id, TensorData(np.array([7e4, 1.0], np.float64)))
    with pytest.raises(burn_nn.RecordError) as error:
        layer.load_record(record)
    assert error.value.mismatched == [
        "weight: record value 100000.0 at index [1, 0] (f32) does not fit the module's f16",
        "bias: record value 70000.0 at index [0] (f64) does not fit the module's f16",
    ]
    record["weight"] = ParamRecord(record["weight"].id, TensorData(np.array([[1.0, 2.5], [-3.0, 0.1]])))
    record["bias"] = ParamRecord(record["bias"].id, TensorData(np.array([0.5, 1.0], np.float64)))
    loaded = layer.load_record(record)
    assert loaded.weight.dtype is DType.F16
    np.testing.assert_array_equal(
        loaded.weight.val().to_data().to_numpy(), np.array([[1.0, 2.5], [-3.0, 0.1]]).astype(np.float16)
    )
