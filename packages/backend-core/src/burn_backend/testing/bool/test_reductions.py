"""Bool reductions: any, all (whole, shape [1], and along a dim, kept), argwhere and nonzero."""

from __future__ import annotations

import numpy as np
import pytest

from burn_backend import Device, DType, Tensor
from burn_backend.testing import check, make, random_array
from burn_backend.testing.core._common import LAYOUTS, laid_out


def sparse(rng: np.random.Generator, shape: tuple[int, ...], p: float) -> np.ndarray:
    return rng.random(shape) < p


@pytest.mark.parametrize("p", [0.0, 0.1, 0.5, 0.9, 1.0])
@pytest.mark.parametrize("shape", [(6,), (3, 4), (2, 3, 4), ()], ids=str)
def test_any_and_all(device: Device, rng: np.random.Generator, shape: tuple[int, ...], p: float) -> None:
    a = sparse(rng, shape, p)
    tensor = make(a, device)
    check(tensor.any(), [a.any()], DType.BOOL)
    check(tensor.all(), [a.all()], DType.BOOL)


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_any_dim_and_all_dim(device: Device, rng: np.random.Generator, p: float, dim: int) -> None:
    a = sparse(rng, (3, 4, 5), p)
    tensor = make(a, device)
    check(tensor.any_dim(dim), a.any(dim, keepdims=True), DType.BOOL)
    check(tensor.all_dim(dim), a.all(dim, keepdims=True), DType.BOOL)


def test_any_and_all_of_nothing(device: Device) -> None:
    empty = Tensor.zeros([0, 3], device, DType.BOOL)
    check(empty.any(), [False], DType.BOOL)
    check(empty.all(), [True], DType.BOOL)
    check(empty.any_dim(0), [[False] * 3], DType.BOOL)
    check(empty.all_dim(0), [[True] * 3], DType.BOOL)
    check(empty.any_dim(1), np.zeros((0, 1), bool), DType.BOOL)


@pytest.mark.parametrize("layout", LAYOUTS[1:])
def test_reductions_of_laid_out_inputs(device: Device, rng: np.random.Generator, layout: str) -> None:
    a = sparse(rng, (6, 4), 0.3)
    tensor = laid_out(a, device, layout)
    for dim in (0, 1):
        check(tensor.any_dim(dim), a.any(dim, keepdims=True), DType.BOOL)
        check(tensor.all_dim(dim), a.all(dim, keepdims=True), DType.BOOL)


@pytest.mark.parametrize("p", [0.0, 0.3, 1.0])
@pytest.mark.parametrize("shape", [(7,), (3, 4), (2, 3, 2), (0, 2), ()], ids=str)
def test_argwhere_and_nonzero(
    device: Device, rng: np.random.Generator, shape: tuple[int, ...], p: float
) -> None:
    a = sparse(rng, shape, p)
    int_dtype = device.backend.int_dtype
    check(make(a, device).argwhere(), np.argwhere(a), int_dtype)
    found = make(a, device).nonzero()
    assert len(found) == len(shape)
    for got, axis in zip(found, np.nonzero(a) if shape else []):
        check(got, axis, int_dtype)


@pytest.mark.parametrize("layout", LAYOUTS[1:])
def test_argwhere_of_laid_out_inputs(device: Device, rng: np.random.Generator, layout: str) -> None:
    a = sparse(rng, (5, 4), 0.4)
    check(laid_out(a, device, layout).argwhere(), np.argwhere(a), device.backend.int_dtype)


def test_argwhere_lists_positions_in_order(device: Device) -> None:
    tensor = Tensor.from_data([[False, True, True], [True, False, False]], device)
    check(tensor.argwhere(), [[0, 1], [0, 2], [1, 0]], device.backend.int_dtype)


def test_any_and_all_through_comparisons(device: Device, rng: np.random.Generator) -> None:
    x = random_array(rng, (5, 6), DType.F32)
    tensor = make(x, device)
    check((tensor > 0).any_dim(1), (x > 0).any(1, keepdims=True), DType.BOOL)
    check((tensor > -3).all(), [True], DType.BOOL)
