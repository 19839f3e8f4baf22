"""Pooling with padding and ``ceil_mode`` on NdArray: values and gradients against PyTorch on random
geometries, and memory in O(output) where the padded input would be large (a kernel larger than its
input, as ONNX models pool a small map)."""

from __future__ import annotations

import tracemalloc
from typing import Any

import numpy as np
import pytest
import torch

from burn_ndarray import NdArray

F = torch.nn.functional
backend = NdArray()


def _geometries(seed: int, count: int) -> list[tuple[Any, ...]]:
    """Random valid 2-d pooling geometries (PyTorch's rules: padding at most half the kernel, and
    every window starting inside the input or its left padding)."""
    rng = np.random.default_rng(seed)
    cases: list[tuple[Any, ...]] = []
    while len(cases) < count:
        size = tuple(int(v) for v in rng.integers(3, 12, 2))
        kernel = tuple(int(v) for v in rng.integers(1, 6, 2))
        stride = tuple(int(v) for v in rng.integers(1, 4, 2))
        padding = tuple(int(rng.integers(0, k // 2 + 1)) for k in kernel)
        dilation = tuple(int(v) for v in rng.integers(1, 3, 2))
        ceil = bool(rng.integers(0, 2))
        if all((k - 1) * d + 1 <= n + 2 * p for k, d, n, p in zip(kernel, dilation, size, padding)):
            cases.append((size, kernel, stride, padding, dilation, ceil))
    return cases


@pytest.mark.parametrize("case", _geometries(0, 24))
def test_avg_pool_values_and_gradient_match_torch(case: tuple[Any, ...]) -> None:
    size, kernel, stride, padding, _, ceil = case
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, *size)).astype(np.float32)
    for include in (True, False):
        tx = torch.from_numpy(x).double().requires_grad_(True)
        expected = F.avg_pool2d(tx, kernel, stride, padding, ceil, include)
        y = backend.avg_pool2d(x, kernel, stride, padding, include, ceil)
        np.testing.assert_allclose(y, expected.detach().numpy(), rtol=1e-5, atol=1e-6)
        grad = rng.standard_normal(y.shape).astype(np.float32)
        expected.backward(torch.from_numpy(grad).double())
        dx = backend.avg_pool2d_backward(x, grad, kernel, stride, padding, include, ceil)
        assert tx.grad is not None
        np.testing.assert_allclose(dx, tx.grad.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", _geometries(2, 24))
def test_max_pool_values_indices_and_gradient_match_torch(case: tuple[Any, ...]) -> None:
    size, kernel, stride, padding, dilation, ceil = case
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, *size)).astype(np.float32)
    tx = torch.from_numpy(x).requires_grad_(True)
    expected, expected_indices = F.max_pool2d(tx, kernel, stride, padding, dilation, ceil, True)
    y, indices = backend.max_pool2d_with_indices(x, kernel, stride, padding, dilation, ceil)
    np.testing.assert_array_equal(y, expected.detach().numpy())
    np.testing.assert_array_equal(indices, expected_indices.numpy())
    grad = rng.standard_normal(y.shape).astype(np.float32)
    expected.backward(torch.from_numpy(grad))
    dx = backend.max_pool2d_with_indices_backward(x, kernel, stride, padding, dilation, ceil, grad, indices)
    assert tx.grad is not None
    np.testing.assert_allclose(dx, tx.grad.numpy(), rtol=1e-6, atol=1e-6)


def test_max_pool_1d_with_all_minus_infinity_windows_points_inside() -> None:
    # where a window's maximum is -inf, its index is a sample of x, never the (-inf) padding
    x = np.full((1, 1, 5), -np.inf, dtype=np.float32)
    x[0, 0, 4] = 1.0
    y, indices = backend.max_pool1d_with_indices(x, 3, 2, 1, 1, True)
    expected, expected_indices = F.max_pool1d(torch.from_numpy(x), 3, 2, 1, 1, True, True)
    np.testing.assert_array_equal(y, expected.numpy())
    np.testing.assert_array_equal(indices, expected_indices.numpy())


# a kernel of 513 over a 7x7 map, padded by 254 with ceil_mode: the padded input alone would be
# 2 x 16 x 515 x 515 f32 (34 MB); the outputs are 2 x 16 x 2 x 2
HUGE = {"kernel": (513, 513), "stride": (2, 2), "padding": (254, 254)}


def _peak(function: Any) -> tuple[Any, int]:
    tracemalloc.start()
    try:
        result = function()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("include", [True, False])
def test_avg_pool_with_a_kernel_larger_than_its_input_takes_memory_of_its_output(include: bool) -> None:
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 16, 7, 7)).astype(np.float32)
    k, s, p = HUGE["kernel"], HUGE["stride"], HUGE["padding"]
    y, peak = _peak(lambda: backend.avg_pool2d(x, k, s, p, include, True))
    tx = torch.from_numpy(x).double().requires_grad_(True)
    expected = F.avg_pool2d(tx, k, s, p, True, include)
    assert y.shape == expected.shape == (2, 16, 2, 2)
    np.testing.assert_allclose(y, expected.detach().numpy(), rtol=1e-5, atol=1e-7)
    assert peak < 200_000, f"avg_pool2d took {peak} bytes at its peak for a 6 KB input"
    grad = rng.standard_normal(y.shape).astype(np.float32)
    dx, peak = _peak(lambda: backend.avg_pool2d_backward(x, grad, k, s, p, include, True))
    expected.backward(torch.from_numpy(grad).double())
    assert tx.grad is not None
    np.testing.assert_allclose(dx, tx.grad.numpy(), rtol=1e-5, atol=1e-8)
    assert peak < 200_000, f"avg_pool2d_backward took {peak} bytes at its peak"


def test_max_pool_with_a_kernel_larger_than_its_input_takes_memory_of_its_output() -> None:
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 16, 7, 7)).astype(np.float32)
    k, s, p = HUGE["kernel"], HUGE["stride"], HUGE["padding"]
    (y, indices), peak = _peak(lambda: backend.max_pool2d_with_indices(x, k, s, p, (1, 1), True))
    expected, expected_indices = F.max_pool2d(torch.from_numpy(x), k, s, p, 1, True, True)
    np.testing.assert_array_equal(y, expected.numpy())
    np.testing.assert_array_equal(indices, expected_indices.numpy())
    assert peak < 200_000, f"max_pool2d_with_indices took {peak} bytes at its peak for a 6 KB input"


def test_a_pool_of_one_tap_leaves_its_input_alone() -> None:
    # a single tap covering every output is a view of x: the divide must not write into it
    x = np.arange(2 * 1 * 9, dtype=np.float32).reshape(2, 1, 9)
    x.flags.writeable = False
    y = backend.avg_pool1d(x, 1, 2, 0, True, False)
    np.testing.assert_array_equal(y, x[:, :, ::2])
