"""Index ops check their indices before the backend sees them: gather's indices have the tensor's shape
outside ``dim`` (Burn's rule; nothing broadcasts), a scatter's fit inside it, masks broadcast to the
tensor, and index values lie in range (negative ones are errors, not counted from the end, as in Burn and
PyTorch). Value checks run where the backend ``validates_index_values``."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from burn_backend import Device, DType, Kind, Tensor, module
from burn_backend.testing import make
from burn_backend.testing.core._common import index_tensor


def tensor_of(device: Device, kind: Kind, shape: tuple[int, ...] = (2, 3)) -> Tensor:
    values = np.arange(np.prod(shape)).reshape(shape)
    if kind is Kind.BOOL:
        return make(values % 2 == 0, device, DType.BOOL)
    return make(values, device, device.backend.default_dtype(kind))


def requires_value_checks(device: Device) -> None:
    if not device.backend.validates_index_values:
        pytest.skip(f"{device.backend.stack_name} does not read index values back (validates_index_values)")


# -- shapes --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", [Kind.FLOAT, Kind.INT, Kind.BOOL], ids=["Float", "Int", "Bool"])
@pytest.mark.parametrize(
    ("dim", "indices"),
    [(1, [[0, 2]]), (1, [[0], [1], [2]]), (0, [[0, 1]]), (0, [[0, 1, 1, 0]])],
    ids=["fewer-rows", "more-rows", "fewer-columns", "more-columns"],
)
def test_gather_indices_must_have_the_shape_outside_dim(
    device: Device, kind: Kind, dim: int, indices: list[list[int]]
) -> None:
    index = index_tensor(indices, device)
    shape = np.shape(indices)
    message = (
        rf"gather: indices of shape \[{shape[0]}, {shape[1]}\] must have the shape of the tensor, "
        rf"\[2, 3\], outside dim {dim}"
    )
    with pytest.raises(ValueError, match=message):
        tensor_of(device, kind).gather(dim, index)


def test_gather_with_the_shape_outside_dim(device: Device) -> None:
    tensor = tensor_of(device, Kind.FLOAT)
    assert tensor.gather(1, index_tensor([[2], [0]], device)).tolist() == [[2.0], [3.0]]
    assert tensor.gather(0, index_tensor([[1, 0, 1], [0, 0, 0], [1, 1, 1]], device)).dims() == [3, 3]


def test_scatter_indices_must_fit_the_tensor_outside_dim(device: Device) -> None:
    tensor = tensor_of(device, Kind.FLOAT)
    indices = index_tensor([[0], [1], [0]], device)
    with pytest.raises(ValueError, match=r"scatter: indices of shape \[3, 1\] exceed the tensor's shape"):
        tensor.scatter(1, indices, tensor_of(device, Kind.FLOAT, (3, 1)))


@pytest.mark.parametrize("mask", [(3, 3), (2, 2, 3), (2, 2)], ids=["3x3", "2x2x3", "2x2"])
def test_mask_select_needs_a_mask_that_broadcasts_to_the_tensor(
    device: Device, mask: tuple[int, ...]
) -> None:
    tensor = tensor_of(device, Kind.FLOAT)
    shape = ", ".join(map(str, mask))
    with pytest.raises(
        ValueError,
        match=rf"mask_select: a mask of shape \[{shape}\] does not broadcast to the tensor's shape",
    ):
        tensor.mask_select(Tensor.ones(list(mask), device, DType.BOOL))


# -- values ----------------------------------------------------------------------------------------------
# op -> a call with the index ``bad`` placed among valid ones along dim 1 of a [2, 3] tensor
INDEXED: dict[str, Callable[[Tensor, int], Tensor]] = {
    "gather": lambda t, bad: t.gather(1, index_tensor([[0, bad, 1], [2, 1, 0]], t.device)),
    "scatter": lambda t, bad: t.scatter(
        1, index_tensor([[0, bad], [2, 1]], t.device), t.slice([slice(None), slice(0, 2)])
    ),
    "select": lambda t, bad: t.select(1, index_tensor([0, bad], t.device)),
    "select_assign": lambda t, bad: t.select_assign(
        1, index_tensor([0, bad], t.device), t.slice([slice(None), slice(0, 2)])
    ),
}


@pytest.mark.parametrize("bad", [-1, -3], ids=["minus-1", "minus-3"])
@pytest.mark.parametrize("kind", [Kind.FLOAT, Kind.INT], ids=["Float", "Int"])
@pytest.mark.parametrize("op", list(INDEXED))
def test_negative_indices_are_errors(device: Device, op: str, kind: Kind, bad: int) -> None:
    requires_value_checks(device)
    with pytest.raises(IndexError, match=rf"{op}: index {bad} is negative; .* not counted from the end"):
        INDEXED[op](tensor_of(device, kind), bad)


@pytest.mark.parametrize("bad", [3, 100])
@pytest.mark.parametrize("kind", [Kind.FLOAT, Kind.INT], ids=["Float", "Int"])
@pytest.mark.parametrize("op", list(INDEXED))
def test_indices_past_the_end_are_errors(device: Device, op: str, kind: Kind, bad: int) -> None:
    requires_value_checks(device)
    with pytest.raises(IndexError, match=rf"{op}: index {bad} is out of range for dim 1 of size 3"):
        INDEXED[op](tensor_of(device, kind), bad)


@pytest.mark.parametrize("op", list(INDEXED))
def test_indices_in_range_pass_the_checks(device: Device, op: str) -> None:
    result = INDEXED[op](tensor_of(device, Kind.FLOAT), 2)
    assert result.kind is Kind.FLOAT


@pytest.mark.parametrize("bad", [-1, 4])
def test_embedding_indices_must_be_rows_of_the_table(device: Device, bad: int) -> None:
    requires_value_checks(device)
    weights = Tensor.ones([4, 2], device)
    message = (
        rf"embedding: index {bad} is negative" if bad < 0 else rf"embedding: index {bad} is out of range"
    )
    with pytest.raises(IndexError, match=message):
        module.embedding(weights, index_tensor([[0, bad]], device))


def test_index_checks_of_empty_indices(device: Device) -> None:
    tensor = tensor_of(device, Kind.FLOAT)
    empty = Tensor.zeros([0], device, device.backend.int_dtype)
    assert tensor.select(1, empty).dims() == [2, 0]
