"""Adaptive average pooling's kernels against ``burn_backend.array``'s shared lowering and a float64
reference of PyTorch's windows, on even and uneven windows, 1-d and 2-d (on a GPU). The conformance
suite checks the ops themselves on every Cuda stack."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from burn_backend.array import ArrayModuleOps
from burn_cuda import Cuda
from burn_cuda._cupy import cp, unavailable_reason

REASON = unavailable_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"needs an NVIDIA GPU through CuPy: {REASON}")


def _windows(size: int, out: int) -> list[tuple[int, int]]:
    return [((i * size) // out, -(-((i + 1) * size) // out)) for i in range(out)]


def _reference(x: np.ndarray[Any, Any], out: tuple[int, int]) -> np.ndarray[Any, Any]:
    y = np.empty((*x.shape[:2], *out))
    for i, (h0, h1) in enumerate(_windows(x.shape[2], out[0])):
        for j, (w0, w1) in enumerate(_windows(x.shape[3], out[1])):
            y[:, :, i, j] = x[:, :, h0:h1, w0:w1].mean(axis=(2, 3))
    return y


@pytest.mark.parametrize(
    ("size", "out"), [((24, 24), (8, 8)), ((7, 10), (3, 4)), ((5, 3), (7, 6)), ((1, 9), (1, 4))]
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_the_kernels_compute_pytorchs_windows(
    size: tuple[int, int], out: tuple[int, int], dtype: Any
) -> None:
    rng = np.random.default_rng(size[0] * 100 + size[1])
    x = rng.standard_normal((2, 3, *size)).astype(dtype)
    g = rng.standard_normal((2, 3, *out)).astype(dtype)
    backend = Cuda()
    tolerance = {np.float32: 1e-6, np.float64: 1e-13, np.float16: 2e-3}[dtype]
    y = backend.adaptive_avg_pool2d(cp.asarray(x), out)
    assert y.dtype == dtype
    np.testing.assert_allclose(y.get(), _reference(x.astype(np.float64), out), rtol=tolerance, atol=tolerance)
    shared = ArrayModuleOps.adaptive_avg_pool2d(backend, cp.asarray(x), out)
    np.testing.assert_allclose(y.get(), shared.get(), rtol=tolerance, atol=tolerance)
    # the gradient: each input sums its windows' gradients over their sizes; a gather, so it repeats
    dx = backend.adaptive_avg_pool2d_backward(cp.asarray(x), cp.asarray(g))
    shared_dx = ArrayModuleOps.adaptive_avg_pool2d_backward(backend, cp.asarray(x), cp.asarray(g))
    np.testing.assert_allclose(dx.get(), shared_dx.get(), rtol=tolerance, atol=tolerance)
    again = backend.adaptive_avg_pool2d_backward(cp.asarray(x), cp.asarray(g))
    np.testing.assert_array_equal(dx.get(), again.get())


def test_the_1d_op_and_strided_inputs() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 11)).astype(np.float32)
    backend = Cuda()
    y = backend.adaptive_avg_pool1d(cp.asarray(x), 4)
    want = _reference(x[:, :, None, :].astype(np.float64), (1, 4))[:, :, 0, :]
    np.testing.assert_allclose(y.get(), want, rtol=1e-6, atol=1e-6)  # atol: means near zero cancel
    strided = cp.asarray(rng.standard_normal((3, 2, 6, 8)).astype(np.float32)).transpose(1, 0, 2, 3)
    np.testing.assert_allclose(
        backend.adaptive_avg_pool2d(strided, (4, 3)).get(),
        _reference(strided.get().astype(np.float64), (4, 3)),
        rtol=1e-6,
        atol=1e-6,
    )
