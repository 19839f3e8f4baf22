"""Python's and NumPy's spellings of layout ops: ``x[None]``, ``x[..., 0]``, ``x[mask]``,
``x[indices]``, ``reshape(2, 3)`` and the other varargs forms, ``squeeze(dim)``, ``unsqueeze()``,
``t()``, ``numpy()``, ``clone()``, ``diagonal`` and ``roll``, against NumPy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from burn_backend import Device, DType, Tensor
from burn_backend.testing import check, make


def arange(device: Device, *shape: int) -> tuple[np.ndarray, Tensor]:
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    return a, make(a, device)


def test_none_and_ellipsis(device: Device) -> None:
    a, x = arange(device, 2, 3, 4)
    check(x[None], a[None])
    check(x[:, None], a[:, None])
    check(x[..., None], a[..., None])
    check(x[..., 0], a[..., 0:1])  # an int keeps its dim (Burn's slice never changes the rank)
    check(x[None, 1, ..., None, 1:3], a[None, 1:2, ..., None, 1:3])
    check(x[..., 1:, None, 2], a[..., 1:, None, 2:3])
    with pytest.raises(IndexError, match="at most one ellipsis"):
        x[..., 0, ...]


def test_bool_mask(device: Device, rng: np.random.Generator) -> None:
    a, x = arange(device, 3, 4)
    mask = rng.random((3, 4)) < 0.5
    check(x[make(mask, device)], a[mask])
    rows = np.array([True, False, True])
    check(x[make(rows, device)], a[rows])  # a mask of the leading dims picks rows, as PyTorch
    with pytest.raises(IndexError, match=r"a Bool mask of shape \[4\] must have the tensor's shape"):
        x[make(np.ones(4, bool), device)]


def test_int_index_tensor(device: Device) -> None:
    a, x = arange(device, 4, 3)
    index = np.array([3, 0, 3])
    check(x[make(index, device)], a[index])
    check(x[make(np.array([[1, 2], [0, 0]]), device)], a[np.array([[1, 2], [0, 0]])])
    check(x[1:3, make(np.array([2, 0]), device)], a[1:3][:, [2, 0]])
    with pytest.raises(TypeError, match="one 1-d Int tensor at most"):
        x[make(index, device), make(index, device)]
    with pytest.raises(TypeError, match="list indices are not slices"):
        x[[0, 1]]


def test_varargs_shapes(device: Device) -> None:
    a, x = arange(device, 2, 3)
    check(x.reshape(3, 2), a.reshape(3, 2))
    check(x.reshape(6), a.reshape(6))
    check(x.reshape(-1, 1), a.reshape(-1, 1))
    check(x.permute(1, 0), a.T)
    check(x.flip(0, 1), a[::-1, ::-1])
    check(x.flip(1), a[:, ::-1])
    check(x[:1].expand(4, 3), np.broadcast_to(a[:1], (4, 3)))
    check(x.repeat(2, 1), np.tile(a, (2, 1)))
    with pytest.raises(TypeError, match="permute: expected ints"):
        x.permute(1, 0.5)  # type: ignore[arg-type]


def test_squeeze_and_unsqueeze(device: Device) -> None:
    a, x = arange(device, 1, 3, 1)
    check(x.squeeze(), a.reshape(3))
    check(x.squeeze(0), a.reshape(3, 1))
    check(x.squeeze(-1), a.reshape(1, 3))
    check(x.squeeze([0, 2]), a.reshape(3))
    with pytest.raises(ValueError, match="squeeze_dim: dim 1 has size 3, not 1"):
        x.squeeze(1)
    check(x.unsqueeze(), a[None])
    check(x.unsqueeze(rank=5), a[None, None])
    with pytest.raises(ValueError, match="unsqueeze: rank 2 is below the tensor's rank 3"):
        x.unsqueeze(rank=2)


def test_t_numpy_and_clone(device: Device) -> None:
    a, x = arange(device, 2, 3)
    check(x.t(), a.T)
    array = x.numpy()
    assert isinstance(array, np.ndarray)
    assert array.flags.writeable
    array[0, 0] = 99.0  # a copy: the tensor keeps its values
    np.testing.assert_array_equal(x.to_numpy(), a)
    assert x.clone() is x


@pytest.mark.parametrize(
    ("offset", "dim1", "dim2"), [(0, 0, 1), (1, 0, 1), (-1, 0, 1), (2, 1, 2), (0, -1, 0), (5, 0, 1)]
)
def test_diagonal(device: Device, offset: int, dim1: int, dim2: int) -> None:
    a, x = arange(device, 3, 4, 5)
    check(x.diagonal(offset, dim1, dim2), np.diagonal(a, offset, dim1, dim2))


def test_diagonal_errors(device: Device) -> None:
    _, x = arange(device, 3, 3)
    with pytest.raises(ValueError, match="diagonal: dim1 and dim2 name the same dim 0"):
        x.diagonal(0, 0, -2)
    with pytest.raises(ValueError, match="diagonal: needs a rank of at least 2"):
        Tensor.ones([3], device).diagonal()


@pytest.mark.parametrize(
    ("shifts", "dims"), [(1, 0), (-2, 1), ([1, 3], [0, 1]), ([7, -1], [1, 1]), (5, None)]
)
def test_roll(device: Device, shifts: Any, dims: Any) -> None:
    a, x = arange(device, 3, 4)
    check(x.roll(shifts, dims), np.roll(a, shifts, dims))


def test_roll_dim_and_errors(device: Device) -> None:
    a, x = arange(device, 3, 4)
    check(x.roll_dim(-1, -1), np.roll(a, -1, -1))
    check(x.int().roll_dim(2, 0), np.roll(a, 2, 0).astype(np.int64), x.int().dtype)
    check(Tensor.from_data(a > 4, device).roll_dim(1, 1), np.roll(a > 4, 1, 1), DType.BOOL)
    with pytest.raises(ValueError, match="roll: 2 shifts for 1 dims"):
        x.roll([1, 2], [0])
