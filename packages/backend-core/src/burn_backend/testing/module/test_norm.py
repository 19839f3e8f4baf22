"""``module.layer_norm``: normalization over the last dim (biased variance) against NumPy float64, with
and without affine parameters, and the errors."""

from __future__ import annotations

import numpy as np
import pytest

from burn_backend import Device, DType, Tensor, module
from burn_backend.testing import check, make, random_array, require_dtype
from burn_backend.testing.module import _reference as ref

FLOATS = [DType.F64, DType.F32, DType.F16, DType.BF16]


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 7), (2, 1, 2, 1)], ids=str)
@pytest.mark.parametrize("affine", ["both", "gamma", "none"])
def test_layer_norm(
    device: Device, rng: np.random.Generator, shape: tuple[int, ...], affine: str, dtype: DType
) -> None:
    require_dtype(device, dtype)
    x = random_array(rng, shape, dtype, -3.0, 3.0)
    gamma = random_array(rng, shape[-1:], dtype) if affine != "none" else None
    beta = random_array(rng, shape[-1:], dtype) if affine == "both" else None
    result = module.layer_norm(
        make(x, device),
        None if gamma is None else make(gamma, device),
        None if beta is None else make(beta, device),
        1e-3,
    )
    expected = ref.layer_norm(
        x.astype(np.float64),
        None if gamma is None else gamma.astype(np.float64),
        None if beta is None else beta.astype(np.float64),
        1e-3,
    )
    check(result, expected, dtype, scale=10)


def test_layer_norm_constant_rows(device: Device) -> None:
    x = np.full((2, 4), 3.0, dtype=np.float32)
    check(module.layer_norm(make(x, device)), np.zeros((2, 4)), DType.F32)


def test_layer_norm_matches_torch(device: Device, rng: np.random.Generator) -> None:
    torch = pytest.importorskip("torch")
    x = random_array(rng, (3, 2, 6), DType.F64)
    gamma, beta = random_array(rng, (6,), DType.F64), random_array(rng, (6,), DType.F64)
    expected = torch.nn.functional.layer_norm(
        torch.tensor(x), (6,), torch.tensor(gamma), torch.tensor(beta), 1e-5
    )
    result = module.layer_norm(make(x, device), make(gamma, device), make(beta, device))
    check(result, expected.numpy(), DType.F64)


def test_layer_norm_errors(device: Device) -> None:
    own = device.backend.float_dtype  # the tensors below have the backend's default float dtype
    other = DType.F32 if own is DType.F64 else DType.F64
    x = Tensor.zeros([2, 4], device=device)
    with pytest.raises(ValueError, match=r"layer_norm: gamma must have shape \[4\]"):
        module.layer_norm(x, Tensor.ones([2], device=device))
    with pytest.raises(TypeError, match=rf"layer_norm: beta has dtype {other}, x has {own}"):
        module.layer_norm(x, None, Tensor.zeros([4], device=device, dtype=other))
    with pytest.raises(ValueError, match=r"layer_norm: epsilon must be >= 0"):
        module.layer_norm(x, epsilon=-1.0)
    with pytest.raises(TypeError, match=r"layer_norm: x must be a Float tensor"):
        module.layer_norm(Tensor.zeros([2, 4], device=device, dtype=DType.I64))
