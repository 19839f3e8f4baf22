"""``module.embedding`` and ``module.linear``, with the embedding's backward kernel: values against NumPy
float64, duplicate indices summed in the gradient, any index shape, and the errors."""

from __future__ import annotations

import numpy as np
import pytest

from burn_backend import Device, DType, Tensor, module
from burn_backend.testing import check, make, random_array, require_dtype
from burn_backend.testing.module._reference import kernel

FLOATS = [DType.F64, DType.F32, DType.F16, DType.BF16]


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("shape", [(2, 5), (1, 1), (3, 4)], ids=str)
def test_embedding(device: Device, rng: np.random.Generator, shape: tuple[int, int], dtype: DType) -> None:
    require_dtype(device, dtype)
    weights = random_array(rng, (7, 3), dtype)
    indices = rng.integers(0, 7, shape)
    indices[0, 0] = 6
    result = module.embedding(make(weights, device), make(indices, device, device.backend.int_dtype))
    check(result, weights.astype(np.float64)[indices], dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_embedding_backward_sums_duplicates(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    require_dtype(device, dtype)
    weights = random_array(rng, (6, 4), dtype)
    indices = np.array([[0, 2, 2], [5, 0, 2]])
    grad = random_array(rng, (2, 3, 4), dtype)
    result = kernel(
        device,
        "embedding_backward",
        make(weights, device),
        make(grad, device),
        make(indices, device, device.backend.int_dtype),
    )
    expected = np.zeros((6, 4))
    np.add.at(expected, indices.ravel(), grad.astype(np.float64).reshape(-1, 4))
    check(result, expected, dtype, scale=2)


def test_embedding_any_index_shape(device: Device, rng: np.random.Generator) -> None:
    weights = random_array(rng, (5, 2), DType.F32)
    for shape in [(4,), (2, 3, 2)]:
        indices = rng.integers(0, 5, shape)
        result = module.embedding(make(weights, device), make(indices, device, DType.I32))
        check(result, weights.astype(np.float64)[indices], DType.F32)


def test_embedding_errors(device: Device) -> None:
    weights = Tensor.zeros([5, 2], device=device)
    indices = Tensor.zeros([2, 3], device=device, dtype=DType.I64)
    with pytest.raises(TypeError, match=r"embedding: indices must be an Int tensor"):
        module.embedding(weights, Tensor.zeros([2, 3], device=device))
    with pytest.raises(ValueError, match=r"embedding: weights must have rank 2"):
        module.embedding(Tensor.zeros([5], device=device), indices)
    with pytest.raises(TypeError, match=r"embedding: weights must be a Float tensor"):
        module.embedding(Tensor.zeros([5, 2], device=device, dtype=DType.I64), indices)
    with pytest.raises(ValueError, match=r"embedding: indices must have rank >= 1"):
        module.embedding(weights, Tensor.zeros([], device=device, dtype=DType.I64))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("shape", [(3,), (2, 3), (2, 4, 3), (1, 2, 2, 3)], ids=str)
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
def test_linear(
    device: Device, rng: np.random.Generator, shape: tuple[int, ...], bias: bool, dtype: DType
) -> None:
    require_dtype(device, dtype)
    x = random_array(rng, shape, dtype, -1.0, 1.0)
    w = random_array(rng, (3, 5), dtype, -1.0, 1.0)
    b = random_array(rng, (5,), dtype, -1.0, 1.0)
    result = module.linear(make(x, device), make(w, device), make(b, device) if bias else None)
    expected = x.astype(np.float64) @ w.astype(np.float64) + (b.astype(np.float64) if bias else 0.0)
    check(result, expected, dtype, scale=4)


def test_linear_errors(device: Device) -> None:
    own = device.backend.float_dtype  # the tensors below have the backend's default float dtype
    other = DType.F32 if own is DType.F64 else DType.F64
    x = Tensor.zeros([2, 3], device=device)
    w = Tensor.zeros([3, 4], device=device)
    with pytest.raises(
        ValueError, match=r"linear: the last dim of x \(shape \[2, 4\]\) must match weight's d_in"
    ):
        module.linear(Tensor.zeros([2, 4], device=device), w)
    with pytest.raises(ValueError, match=r"linear: weight must have rank 2 \(\[d_in, d_out\]\)"):
        module.linear(x, Tensor.zeros([3], device=device))
    with pytest.raises(ValueError, match=r"linear: bias must have shape \[4\]"):
        module.linear(x, w, Tensor.zeros([3], device=device))
    with pytest.raises(TypeError, match=rf"linear: weight has dtype {other}, x has {own}"):
        module.linear(x, Tensor.zeros([3, 4], device=device, dtype=other))
    with pytest.raises(ValueError, match=r"linear: x must have rank >= 1"):
        module.linear(Tensor.zeros([], device=device), w)
