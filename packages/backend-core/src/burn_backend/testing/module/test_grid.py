"""Coordinate grids (``grid.meshgrid``) against ``numpy.meshgrid``, and padding (``module.pad``) against
``numpy.pad``, with their errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from burn_backend import Device, DType, Tensor, grid, module
from burn_backend.testing import check, make, random_array, require_dtype


@pytest.mark.parametrize("dtype", [DType.F32, DType.I64], ids=str)
@pytest.mark.parametrize("indexing", ["ij", "xy"])
@pytest.mark.parametrize("sizes", [(3,), (2, 3), (2, 1, 4)], ids=str)
def test_meshgrid(
    device: Device, rng: np.random.Generator, sizes: tuple[int, ...], indexing: str, dtype: DType
) -> None:
    require_dtype(device, dtype)
    vectors = [random_array(rng, (n,), dtype, -5, 5) for n in sizes]
    grids = grid.meshgrid(*[make(v, device) for v in vectors], indexing=indexing)
    expected = np.meshgrid(*vectors, indexing="ij" if indexing == "ij" else "xy")
    assert len(grids) == len(expected)
    for result, reference in zip(grids, expected):
        check(result, reference, dtype)
    as_list = grid.meshgrid([make(v, device) for v in vectors], indexing=indexing)
    check(as_list[-1], expected[-1], dtype)


def test_meshgrid_errors(device: Device) -> None:
    with pytest.raises(ValueError, match=r"meshgrid: indexing must be 'ij' or 'xy', got 'yx'"):
        grid.meshgrid(Tensor.ones([2], device), indexing="yx")
    with pytest.raises(ValueError, match=r"meshgrid: tensors\[1\] must be 1-d, got shape \[2, 2\]"):
        grid.meshgrid(Tensor.ones([2], device), Tensor.ones([2, 2], device))
    with pytest.raises(TypeError, match=r"meshgrid: tensors\[1\] has dtype i64, tensors\[0\] has f32"):
        grid.meshgrid(Tensor.ones([2], device, DType.F32), Tensor.ones([2], device, DType.I64))
    with pytest.raises(ValueError, match=r"meshgrid: needs at least one tensor"):
        grid.meshgrid()


NUMPY_MODE: dict[str, Any] = {
    "constant": "constant",
    "reflect": "reflect",
    "replicate": "edge",
    "circular": "wrap",
}


@pytest.mark.parametrize("dtype", [DType.F32, DType.I32], ids=str)
@pytest.mark.parametrize("widths", [(1, 2), (0, 3, 2, 0), (2, 2, 1, 1, 1, 0)], ids=str)
@pytest.mark.parametrize("mode", sorted(NUMPY_MODE))
def test_pad(
    device: Device, rng: np.random.Generator, mode: str, widths: tuple[int, ...], dtype: DType
) -> None:
    require_dtype(device, dtype)
    x = random_array(rng, (2, 3, 4), dtype, -5, 5)
    pairs = [(0, 0)] * (x.ndim - len(widths) // 2) + [
        (widths[2 * i], widths[2 * i + 1]) for i in reversed(range(len(widths) // 2))
    ]
    value = 7
    if mode == "constant":
        expected = np.pad(x, pairs, constant_values=value)
    else:
        expected = np.pad(x, pairs, mode=NUMPY_MODE[mode])
    check(module.pad(make(x, device), widths, mode, value), expected, dtype)


def test_pad_errors(device: Device) -> None:
    x = Tensor.ones([2, 3], device)
    with pytest.raises(ValueError, match=r"pad: mode must be one of"):
        module.pad(x, (1, 1), "edge")
    with pytest.raises(ValueError, match=r"pad: pad needs an even number of widths"):
        module.pad(x, (1, 1, 1))
    with pytest.raises(ValueError, match=r"pad: pad widths must be >= 0"):
        module.pad(x, (-1, 1))
    with pytest.raises(ValueError, match=r"pad: reflect padding needs widths below the size of the dim"):
        module.pad(x, (3, 0), "reflect")
    with pytest.raises(ValueError, match=r"pad: circular padding needs widths at most the size"):
        module.pad(x, (0, 4), "circular")
