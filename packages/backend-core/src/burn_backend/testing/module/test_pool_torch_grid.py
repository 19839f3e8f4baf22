"""Pooling against PyTorch over a grid of geometries: every kernel, stride, padding, ``ceil_mode`` and
``count_include_pad`` (dilation for max pooling) of small sizes, degenerate ones included (a kernel of 1,
strides past the kernel, which leave samples out and crop the input's end), 1-d and 2-d, values and the
backward kernels (f32, against PyTorch in f64); the input is never written. Skipped without PyTorch."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from burn_backend import Device, DType, Tensor, module
from burn_backend.testing import check, make, random_array
from burn_backend.testing.module._reference import kernel

Geometry = tuple[Any, ...]

LENGTHS = (7, 8)  # an odd and an even length: windows end on the last sample or short of it
SIZE_2D = (5, 6)
KERNELS_2D = [(1, 1), (2, 3), (3, 1)]
STRIDES_2D = [(1, 1), (1, 2), (2, 1), (3, 4)]


def _padded(kernels: tuple[int, ...]) -> list[tuple[int, ...]]:
    """No padding and the most PyTorch allows (half the kernel), per dim."""
    return sorted({tuple(0 for _ in kernels), tuple(k // 2 for k in kernels)})


def _grid_1d(dilations: tuple[int, ...], flags: tuple[bool, ...]) -> Iterator[Geometry]:
    """``(shape, kernel, stride, padding, dilation, ceil_mode, flag)``: ``flag`` is avg pooling's
    ``count_include_pad`` (one value for max pooling)."""
    for length, k, s, d, ceil, flag in itertools.product(
        LENGTHS, (1, 2, 3), (1, 2, 3, 4), dilations, (False, True), flags
    ):
        for (p,) in _padded((k,)):
            yield (1, 2, length), k, s, p, d, ceil, flag


def _grid_2d(dilations: tuple[tuple[int, int], ...], flags: tuple[bool, ...]) -> Iterator[Geometry]:
    for k, s, d, ceil, flag in itertools.product(KERNELS_2D, STRIDES_2D, dilations, (False, True), flags):
        for p in _padded(k):
            yield (1, 2, *SIZE_2D), k, s, p, d, ceil, flag


def _torch() -> Any:
    return pytest.importorskip("torch")


def _unchanged(x: Tensor, before: np.ndarray[Any, Any], what: str) -> None:
    assert np.array_equal(x.to_numpy(), before), f"{what} wrote into its input"


@pytest.mark.parametrize("n", [1, 2])
def test_avg_pool_grid_matches_torch(device: Device, rng: np.random.Generator, n: int) -> None:
    torch, dtype = _torch(), DType.F32
    torch_pool = torch.nn.functional.avg_pool1d if n == 1 else torch.nn.functional.avg_pool2d
    pool = module.avg_pool1d if n == 1 else module.avg_pool2d
    backward = f"avg_pool{n}d_backward"
    both = (False, True)
    grid = _grid_1d((1,), both) if n == 1 else _grid_2d(((1, 1),), both)
    cases = 0
    for shape, k, s, p, _, ceil, include in grid:
        what = f"avg_pool{n}d(x{list(shape)}, k={k}, s={s}, p={p}, ceil={ceil}, include_pad={include})"
        x = random_array(rng, shape, dtype)
        tx = torch.tensor(x.astype(np.float64), requires_grad=True)
        expected = torch_pool(tx, k, s, p, ceil, include)
        g = random_array(rng, tuple(expected.shape), dtype)
        expected.backward(torch.tensor(g.astype(np.float64)))
        bx = make(x, device)
        check(pool(bx, k, s, p, include, ceil), expected.detach().numpy(), dtype)
        _unchanged(bx, x, what)
        grad = kernel(device, backward, bx, make(g, device), k, s, p, include, ceil)
        check(grad, tx.grad.numpy(), dtype)
        cases += 1
    assert cases == (160 if n == 1 else 80)


@pytest.mark.parametrize("n", [1, 2])
def test_max_pool_grid_matches_torch(device: Device, rng: np.random.Generator, n: int) -> None:
    torch, dtype = _torch(), DType.F32
    torch_pool = torch.nn.functional.max_pool1d if n == 1 else torch.nn.functional.max_pool2d
    pool = module.max_pool1d_with_indices if n == 1 else module.max_pool2d_with_indices
    backward = f"max_pool{n}d_with_indices_backward"
    grid = _grid_1d((1, 2), (False,)) if n == 1 else _grid_2d(((1, 1), (2, 1)), (False,))
    cases = 0
    for shape, k, s, p, d, ceil, _ in grid:
        if not _fits(shape, k, p, d):
            continue
        what = f"max_pool{n}d(x{list(shape)}, k={k}, s={s}, p={p}, d={d}, ceil={ceil})"
        x = random_array(rng, shape, dtype)
        tx = torch.tensor(x.astype(np.float64), requires_grad=True)
        expected, indices = torch_pool(tx, k, s, p, d, ceil, return_indices=True)
        g = random_array(rng, tuple(expected.shape), dtype)
        expected.backward(torch.tensor(g.astype(np.float64)))
        bx = make(x, device)
        values, ours = pool(bx, k, s, p, d, ceil)
        check(values, expected.detach().numpy(), dtype)
        check(ours, indices.numpy(), device.backend.int_dtype)
        _unchanged(bx, x, what)
        grad = kernel(device, backward, bx, k, s, p, d, ceil, make(g, device), ours)
        check(grad, tx.grad.numpy(), dtype)
        cases += 1
    assert cases > 60


def _fits(shape: tuple[int, ...], k: Any, p: Any, d: Any) -> bool:
    """Whether a dilated window fits in the padded input (PyTorch refuses an empty output)."""
    sizes, ks, ps, ds = shape[2:], *(v if isinstance(v, tuple) else (v,) for v in (k, p, d))
    return all(n + 2 * q >= dd * (kk - 1) + 1 for n, kk, q, dd in zip(sizes, ks, ps, ds))
