"""Conversions from and to Int tensors: int(), float(), bool() and cast() across every dtype; floats
truncate toward zero; defaults come from the backend."""

from __future__ import annotations

import numpy as np
import pytest

from burn_backend import Device, DType, Kind, Tensor
from burn_backend.testing import FLOAT_DTYPES, INT_DTYPES, check, make, random_array, require_dtype
from burn_backend.testing.core._common import LAYOUTS, f64, ints, laid_out

PAIRS = [(a, b) for a in INT_DTYPES for b in INT_DTYPES if a is not b]


@pytest.mark.parametrize(("source", "target"), PAIRS, ids=[f"{a}->{b}" for a, b in PAIRS])
def test_int_to_int(device: Device, rng: np.random.Generator, source: DType, target: DType) -> None:
    require_dtype(device, source)
    require_dtype(device, target)
    low = -100 if source.is_signed and target.is_signed else 0
    a = ints(rng, (3, 4), source, low, 100)
    tensor = make(a, device)
    check(tensor.int(target), a.astype(np.int64), target)
    check(tensor.cast(target), a.astype(np.int64), target)
    check(tensor.cast(str(target)), a.astype(np.int64), target)


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_int_to_the_same_dtype(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    require_dtype(device, dtype)
    a = ints(rng, (5,), dtype, -9, 9)
    check(make(a, device).int(dtype), a, dtype)
    check(make(a, device).cast(dtype), a, dtype)


@pytest.mark.parametrize("target", FLOAT_DTYPES)
@pytest.mark.parametrize("source", INT_DTYPES)
def test_int_to_float(device: Device, rng: np.random.Generator, source: DType, target: DType) -> None:
    require_dtype(device, source)
    require_dtype(device, target)
    a = ints(rng, (3, 4), source, -128, 128)  # exact in every float dtype
    check(make(a, device).float(target), f64(a), target)
    check(make(a, device).cast(target), f64(a), target)


@pytest.mark.parametrize("source", FLOAT_DTYPES)
@pytest.mark.parametrize("target", INT_DTYPES)
def test_float_to_int_truncates(
    device: Device, rng: np.random.Generator, source: DType, target: DType
) -> None:
    require_dtype(device, source)
    require_dtype(device, target)
    low = -100.0 if target.is_signed else 0.0
    a = random_array(rng, (4, 5), source, low, 100.0)
    check(make(a, device).int(target), np.trunc(f64(a)), target)
    check(make(a, device).cast(target), np.trunc(f64(a)), target)


def test_float_to_int_examples(device: Device) -> None:
    tensor = Tensor.from_data([2.7, -2.7, 0.5, -0.5, 3.0], device, DType.F32)
    check(tensor.int(DType.I32), [2, -2, 0, 0, 3], DType.I32)


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_int_to_bool_is_non_zero(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    require_dtype(device, dtype)
    a = ints(rng, (4, 5), dtype, -2, 2)
    check(make(a, device).bool(), a != 0, DType.BOOL)
    check(make(a, device).cast(DType.BOOL), a != 0, DType.BOOL)


def test_defaults_come_from_the_backend(device: Device) -> None:
    backend = device.backend
    floats = (
        Tensor.from_data([1.5, -2.5], device, DType.F64)
        if backend.supports_dtype(device, DType.F64)
        else None
    )
    ints_ = Tensor.from_data([1, 2], device)
    assert ints_.float().dtype is backend.float_dtype
    assert ints_.int() is ints_
    if floats is not None:
        assert floats.int().dtype is backend.int_dtype
        assert floats.float(DType.F64) is floats


@pytest.mark.parametrize("layout", LAYOUTS[1:])
def test_casts_of_laid_out_inputs(device: Device, rng: np.random.Generator, layout: str) -> None:
    a = ints(rng, (4, 3), device.backend.int_dtype, -50, 50)
    tensor = laid_out(a, device, layout)
    check(tensor.float(), f64(a), device.backend.float_dtype)
    check(tensor.bool(), a != 0, DType.BOOL)
    require_dtype(device, DType.I16)
    check(tensor.int(DType.I16), a, DType.I16)


@pytest.mark.parametrize("shape", [(0, 3), ()], ids=str)
def test_casts_of_edge_shapes(device: Device, shape: tuple[int, ...]) -> None:
    tensor = Tensor.zeros(shape, device, Kind.INT)
    check(tensor.float(), np.zeros(shape), device.backend.float_dtype)
    check(tensor.bool(), np.zeros(shape, bool), DType.BOOL)
    require_dtype(device, DType.U8)
    check(tensor.int(DType.U8), np.zeros(shape), DType.U8)
