"""Cuda's one-kernel activations (``burn_cuda._ops.activation``) against NumPy in float64: the exact GELU,
its gradient and ReLU's gradient, in f32, f16, bf16 and f64 (which keeps the shared code), on odd sizes
and strided views, with infinite gradients (ReLU's gradient selects, never multiplies by 0). Skips
without a GPU."""

from __future__ import annotations

import math

import numpy as np
import pytest

from burn_backend import DType, Tensor, activation
from burn_cuda import Cuda
from burn_cuda._cupy import unavailable_reason

REASON = unavailable_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"needs an NVIDIA GPU through CuPy: {REASON}")
TOLERANCE = {DType.F32: 2e-6, DType.F16: 2e-3, DType.BF16: 1.6e-2, DType.F64: 1e-12}
_erf = np.vectorize(math.erf)


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def _gelu_grad(x: np.ndarray, g: np.ndarray) -> np.ndarray:
    cdf = 0.5 * (1.0 + _erf(x / math.sqrt(2.0)))
    return g * (cdf + x * np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi))


def _close(got: Tensor, want: np.ndarray, dtype: DType) -> None:
    assert got.dtype is dtype
    values = got.cast(DType.F64).to_numpy()
    bound = TOLERANCE[dtype]
    np.testing.assert_allclose(values, want, rtol=bound, atol=bound)


@pytest.mark.parametrize("dtype", list(TOLERANCE), ids=str)
@pytest.mark.parametrize("shape", [(7, 13), (1,), (3, 1030)])
def test_gelu_and_its_gradient(dtype: DType, shape: tuple[int, ...]) -> None:
    device = Cuda().device()
    rng = np.random.default_rng(0)
    x = rng.uniform(-6, 6, shape)
    g = rng.standard_normal(shape)
    xt = Tensor.from_data(x, device).cast(dtype)
    gt = Tensor.from_data(g, device).cast(dtype)
    xr, gr = xt.cast(DType.F64).to_numpy(), gt.cast(DType.F64).to_numpy()  # the rounded inputs
    _close(activation.gelu(xt), _gelu(xr), dtype)
    _close(
        Tensor.from_primitive(device.backend.gelu_backward(xt.primitive, gt.primitive), device),
        _gelu_grad(xr, gr),
        dtype,
    )


@pytest.mark.parametrize("dtype", list(TOLERANCE), ids=str)
def test_relu_gradient_selects(dtype: DType) -> None:
    device = Cuda().device()
    output = np.array([[0.0, 1.0, 2.5, 0.0], [3.0, 0.0, 0.5, 7.0]])
    grad = np.array([[np.inf, -np.inf, 2.0, np.nan], [1.0, 4.0, -np.inf, -3.0]])
    out_t = Tensor.from_data(output, device).cast(dtype)
    grad_t = Tensor.from_data(grad, device).cast(dtype)
    got = Tensor.from_primitive(device.backend.relu_backward(out_t.primitive, grad_t.primitive), device)
    want = np.where(output > 0, grad, 0.0)
    np.testing.assert_array_equal(got.cast(DType.F64).to_numpy(), want)
    # a strided view
    wide = Tensor.from_data(np.arange(24.0).reshape(4, 6) - 12, device).cast(dtype)
    view = wide.swap_dims(0, 1)
    got = Tensor.from_primitive(device.backend.relu_backward(view.primitive, view.primitive), device)
    expected = view.cast(DType.F64).to_numpy()
    np.testing.assert_array_equal(got.cast(DType.F64).to_numpy(), np.where(expected > 0, expected, 0.0))
