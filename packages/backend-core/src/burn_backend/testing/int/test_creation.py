"""Creating Int tensors: arange (with steps, negative ones too), and random with each distribution,
for every int dtype."""

from __future__ import annotations

import numpy as np
import pytest

from burn_backend import Device, Distribution, DType, Tensor
from burn_backend.testing import INT_DTYPES, check, require_dtype
from burn_backend.testing.core._common import SIGNED_INT_DTYPES, values

ARANGES = [
    ((5,), [0, 1, 2, 3, 4]),
    ((2, 6), [2, 3, 4, 5]),
    ((0, 10, 3), [0, 3, 6, 9]),
    ((1, 2, 5), [1]),
    ((3, 3), []),
]


@pytest.mark.parametrize(("args", "expected"), ARANGES, ids=[str(a) for a, _ in ARANGES])
@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_arange(device: Device, dtype: DType, args: tuple[int, ...], expected: list[int]) -> None:
    require_dtype(device, dtype)
    start, end, step = (0, args[0], 1) if len(args) == 1 else (*args, 1)[:3]
    tensor = Tensor.arange(start, end, step, device, dtype)
    check(tensor, np.array(expected, dtype=np.int64), dtype)


@pytest.mark.parametrize(
    ("args", "expected"), [((5, -3, -2), [5, 3, 1, -1]), ((-1, -6, -1), [-1, -2, -3, -4, -5])]
)
@pytest.mark.parametrize("dtype", SIGNED_INT_DTYPES)
def test_arange_downwards(
    device: Device, dtype: DType, args: tuple[int, int, int], expected: list[int]
) -> None:
    require_dtype(device, dtype)
    check(Tensor.arange(*args, device=device, dtype=dtype), expected, dtype)


def test_arange_defaults(device: Device) -> None:
    tensor = Tensor.arange(4, device=device)
    check(tensor, [0, 1, 2, 3], device.backend.int_dtype)
    check(Tensor.arange(5, 0, device=device), np.zeros(0), device.backend.int_dtype)
    check(Tensor.arange(0, 5, 10, device), [0], device.backend.int_dtype)


def test_arange_of_a_large_range(device: Device) -> None:
    check(Tensor.arange(0, 3000, 7, device), np.arange(0, 3000, 7), device.backend.int_dtype)


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_random_uniform_ints_are_in_range(device: Device, dtype: DType) -> None:
    require_dtype(device, dtype)
    low, high = (-5, 5) if dtype.is_signed else (0, 10)
    tensor = Tensor.random([1000], Distribution.uniform(low, high), device, dtype)
    assert tensor.dtype is dtype
    drawn = values(tensor).astype(np.int64)
    assert set(np.unique(drawn).tolist()) == set(range(low, high))


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_random_default_ints(device: Device, dtype: DType) -> None:
    require_dtype(device, dtype)
    tensor = Tensor.random([2, 50], None, device, dtype)
    assert tensor.dtype is dtype
    assert tensor.dims() == [2, 50]
    assert len(np.unique(values(tensor))) > 10
    # the default distribution covers the dtype's whole range: 100 draws all in one half are a 2**-100 event
    drawn = values(tensor).astype(np.float64)
    info = np.iinfo(dtype.numpy)
    assert drawn.max() > info.max / 2
    assert drawn.min() < (info.min / 2 if dtype.is_signed else info.max / 2)


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_random_bernoulli_ints(device: Device, dtype: DType) -> None:
    require_dtype(device, dtype)
    drawn = values(Tensor.random([2000], Distribution.bernoulli(0.25), device, dtype)).astype(np.int64)
    assert set(np.unique(drawn).tolist()) == {0, 1}
    assert abs(drawn.mean() - 0.25) < 0.05


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_random_normal_ints(device: Device, dtype: DType) -> None:
    require_dtype(device, dtype)
    drawn = values(Tensor.random([2000], Distribution.normal(40.0, 4.0), device, dtype)).astype(np.int64)
    assert abs(drawn.mean() - 40.0) < 1.5
    assert 2.5 < drawn.std() < 5.5


def test_random_of_an_empty_shape(device: Device) -> None:
    tensor = Tensor.random([0, 2], Distribution.uniform(0, 3), device, device.backend.int_dtype)
    check(tensor, np.zeros((0, 2)), device.backend.int_dtype)
