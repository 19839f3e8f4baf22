"""gather_nd, scatter_nd, mask_select and scatter with update ops, for every kind; defaults included."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import burn_backend
from burn_backend import Device, DType, IndexingUpdateOp, Tensor
from burn_backend.testing import check, make

KINDS = {"float": DType.F32, "int": DType.I32, "bool": DType.BOOL}
UPDATES = list(IndexingUpdateOp)
OP_GROUPS = {
    "float": burn_backend.FloatTensorOps,
    "int": burn_backend.IntTensorOps,
    "bool": burn_backend.BoolTensorOps,
}


def values_of(rng: np.random.Generator, shape: tuple[int, ...], dtype: DType) -> np.ndarray[Any, Any]:
    if dtype is DType.BOOL:
        return rng.random(shape) < 0.5
    return rng.integers(-5, 6, shape).astype(dtype.numpy)


def reference_update(
    out: np.ndarray[Any, Any], index: Any, values: np.ndarray[Any, Any], update: IndexingUpdateOp
) -> np.ndarray[Any, Any]:
    out = out.copy()
    if update is IndexingUpdateOp.ASSIGN:
        out[index] = values
    else:
        {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum}[update.value].at(
            out, index, values
        )
    return out


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("depth", [1, 2, 3])
def test_gather_nd(device: Device, rng: np.random.Generator, kind: str, depth: int) -> None:
    dtype = KINDS[kind]
    array = values_of(rng, (3, 4, 5), dtype)
    index = np.stack([rng.integers(0, s, (2, 6)) for s in (3, 4, 5)[:depth]], axis=-1)
    result = make(array, device).gather_nd(make(index, device, device.backend.int_dtype))
    expected = array[tuple(np.moveaxis(index, -1, 0))]
    check(result, expected, dtype)
    default = OP_GROUPS[kind].__dict__[f"{kind}_gather_nd"](
        device.backend, make(array, device).primitive, make(index, device, device.backend.int_dtype).primitive
    )
    check(Tensor(default, device), expected, dtype)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("update", UPDATES, ids=lambda u: u.value)
def test_scatter_nd(device: Device, rng: np.random.Generator, kind: str, update: IndexingUpdateOp) -> None:
    dtype = KINDS[kind]
    array = values_of(rng, (4, 3), dtype)
    # distinct positions for assign (its winner on repeats is unspecified); repeats for the reductions
    rows = np.array([0, 2, 3]) if update is IndexingUpdateOp.ASSIGN else np.array([0, 2, 2, 0])
    index = rows.reshape(-1, 1)
    values = values_of(rng, (len(rows), 3), dtype)
    expected = reference_update(array, (rows,), values, update)
    indices = make(index, device, device.backend.int_dtype)
    result = make(array, device).scatter_nd(indices, make(values, device), update)
    check(result, expected, dtype)
    default = OP_GROUPS[kind].__dict__[f"{kind}_scatter_nd"](
        device.backend,
        make(array, device).primitive,
        indices.primitive,
        make(values, device).primitive,
        update,
    )
    check(Tensor(default, device), expected, dtype)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("update", UPDATES, ids=lambda u: u.value)
@pytest.mark.parametrize("dim", [0, 1])
def test_scatter_with_update(
    device: Device, rng: np.random.Generator, kind: str, update: IndexingUpdateOp, dim: int
) -> None:
    dtype = KINDS[kind]
    array = values_of(rng, (3, 4), dtype)
    size = array.shape[dim]
    if update is IndexingUpdateOp.ASSIGN:
        # one write per target position: a permutation along dim
        index = np.stack([rng.permutation(size) for _ in range(array.shape[1 - dim])], axis=1 - dim)
    else:
        index = rng.integers(0, size, array.shape)
    values = values_of(rng, array.shape, dtype)
    grids: list[Any] = list(np.indices(index.shape, sparse=True))
    grids[dim] = index
    expected = reference_update(array, tuple(grids), values, update)
    indices = make(index, device, device.backend.int_dtype)
    check(make(array, device).scatter(dim, indices, make(values, device), update.value), expected, dtype)
    default = OP_GROUPS[kind].__dict__[f"{kind}_scatter"](
        device.backend,
        make(array, device).primitive,
        dim,
        indices.primitive,
        make(values, device).primitive,
        update,
    )
    check(Tensor(default, device), expected, dtype)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("mask_shape", [(3, 4), (1, 4), (3, 1)])
def test_mask_select(
    device: Device, rng: np.random.Generator, kind: str, mask_shape: tuple[int, ...]
) -> None:
    dtype = KINDS[kind]
    array = values_of(rng, (3, 4), dtype)
    mask = rng.random(mask_shape) < 0.5
    expected = array[np.broadcast_to(mask, array.shape)]
    check(make(array, device).mask_select(make(mask, device)), expected, dtype)
    default = OP_GROUPS[kind].__dict__[f"{kind}_mask_select"](
        device.backend, make(array, device).primitive, make(mask, device).primitive
    )
    check(Tensor(default, device), expected, dtype)


def test_nd_errors(device: Device) -> None:
    tensor = Tensor.zeros([3, 4], device)
    with pytest.raises(
        ValueError, match=r"gather_nd: indices of shape \[2, 3\] need a last dim between 1 and the rank 2"
    ):
        tensor.gather_nd(Tensor.zeros([2, 3], device, DType.I64))
    outside = Tensor.from_data([[0, 4]], device)
    if device.backend.validates_index_values:
        with pytest.raises(IndexError, match=r"gather_nd: an index is outside the shape \[3, 4\]"):
            tensor.gather_nd(outside)
        with pytest.raises(IndexError, match=r"scatter_nd: an index is outside the shape \[3, 4\]"):
            tensor.scatter_nd(outside, Tensor.zeros([1], device))
    else:  # not read back (that would wait for the device): unspecified values, but a result
        assert tensor.gather_nd(outside).dims() == [1]
    with pytest.raises(TypeError, match="gather_nd: indices must be an Int tensor"):
        tensor.gather_nd(Tensor.zeros([1, 2], device))
    with pytest.raises(ValueError, match=r"scatter_nd: values of shape \[2\], expected \[1, 4\]"):
        tensor.scatter_nd(Tensor.from_data([[1]], device), Tensor.zeros([2], device))
    with pytest.raises(ValueError, match="'sum' is not a valid IndexingUpdateOp"):
        tensor.scatter(0, Tensor.zeros([3, 4], device, DType.I64), tensor, "sum")
    with pytest.raises(TypeError, match="mask_select: mask must be a Bool tensor"):
        tensor.mask_select(tensor)
