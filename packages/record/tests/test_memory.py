"""Saving streams (no copy of the record is gathered) and loading makes no copy of uncompressed tensors:
measured with tracemalloc, which sees NumPy's allocations (not the memory-mapped file)."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from burn_backend import TensorData
from burn_record import (
    BinBytesRecorder,
    FullPrecisionSettings,
    HalfPrecisionSettings,
    NamedMpkFileRecorder,
    NamedMpkZstFileRecorder,
)

MB = 1 << 20
TENSOR_MB = 4
COUNT = 12  # 48 MB of f32


@pytest.fixture(scope="module")
def record() -> dict[str, Any]:
    rng = np.random.default_rng(0)
    return {
        f"t{i}": TensorData(rng.standard_normal(TENSOR_MB * MB // 4, dtype=np.float32)) for i in range(COUNT)
    }


def _peak(function: Callable[[], Any]) -> tuple[int, Any]:
    tracemalloc.start()
    try:
        result = function()
        return tracemalloc.get_traced_memory()[1], result
    finally:
        tracemalloc.stop()


def test_saving_streams_tensor_by_tensor(record, tmp_path: Path) -> None:
    peak, _ = _peak(lambda: NamedMpkFileRecorder().save(record, tmp_path / "full"))
    assert peak < 2 * MB  # nothing the size of a tensor, let alone of the record
    peak, _ = _peak(lambda: NamedMpkFileRecorder(HalfPrecisionSettings()).save(record, tmp_path / "half"))
    converted = TENSOR_MB * MB // 2  # one tensor in f16
    assert peak < 2 * converted + 2 * MB  # one at a time (and its overflow check), not the whole record
    peak, _ = _peak(lambda: NamedMpkZstFileRecorder().save(record, tmp_path / "zst"))
    assert peak < 2 * MB  # shuffled in blocks


def test_loading_uncompressed_makes_no_copy(record, tmp_path: Path) -> None:
    path = NamedMpkFileRecorder().save(record, tmp_path / "full")
    peak, loaded = _peak(lambda: NamedMpkFileRecorder().load(path))
    assert peak < 1 * MB
    np.testing.assert_array_equal(loaded["t3"].to_numpy(), record["t3"].to_numpy())
    data = BinBytesRecorder().save(record)
    peak, loaded = _peak(lambda: BinBytesRecorder().load(data))
    assert peak < 1 * MB
    np.testing.assert_array_equal(loaded["t5"].to_numpy(), record["t5"].to_numpy())


def test_loading_compressed_takes_one_buffer_of_the_data(record, tmp_path: Path) -> None:
    path = NamedMpkZstFileRecorder(FullPrecisionSettings()).save(record, tmp_path / "zst")
    peak, loaded = _peak(lambda: NamedMpkZstFileRecorder().load(path))
    size = COUNT * TENSOR_MB * MB
    assert size <= peak < 1.1 * size
    np.testing.assert_array_equal(loaded["t7"].to_numpy(), record["t7"].to_numpy())
