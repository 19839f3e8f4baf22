"""Softplus' gradient is ``sigmoid(beta x)``: 0.5 at 0 as PyTorch's (a sum of two pieces, each with a
one-sided derivative there, would give 1), and equal to ``torch.autograd``'s at random points, around the
threshold and for every beta."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from burn_backend import Device, DType, Tensor, activation
from burn_backend.testing import require_dtype
from burn_backend.testing.autodiff._gradcheck import gradcheck

SETTINGS = [(1.0, 20.0), (2.0, 5.0), (0.5, 1.0), (3.0, 0.5)]
SETTING_IDS = [f"beta{b}-threshold{t}" for b, t in SETTINGS]


def torch_softplus(beta: float, threshold: float) -> Any:
    torch = pytest.importorskip("torch")
    return lambda x: torch.nn.functional.softplus(x, beta, threshold)


@pytest.mark.parametrize("dtype", [DType.F64, DType.F32, DType.F16, DType.BF16])
@pytest.mark.parametrize(("beta", "threshold"), SETTINGS, ids=SETTING_IDS)
def test_softplus_gradient_at_zero_is_one_half(
    ad_device: Device, dtype: DType, beta: float, threshold: float
) -> None:
    require_dtype(ad_device, dtype)
    x = Tensor.from_data([0.0, -0.0], ad_device, dtype).require_grad()
    gradient = x.grad(activation.softplus(x, beta, threshold).sum().backward())
    assert gradient is not None
    assert gradient.float(DType.F64).tolist() == [0.5, 0.5]


@pytest.mark.parametrize(("beta", "threshold"), SETTINGS, ids=SETTING_IDS)
def test_softplus_gradient_matches_torch(
    ad_device: Device, rng: np.random.Generator, beta: float, threshold: float
) -> None:
    torch = pytest.importorskip("torch")
    limit = threshold / beta
    # random points, zero, both sides of the threshold (away from it: the function has a kink there)
    values = np.concatenate([rng.uniform(-6.0, 6.0, 12), [0.0, limit - 0.25, limit + 0.25, -40.0, 40.0]])
    x = Tensor.from_data(values, ad_device, DType.F64).require_grad()
    ours = x.grad(activation.softplus(x, beta, threshold).sum().backward())
    leaf = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    torch.nn.functional.softplus(leaf, beta, threshold).sum().backward()
    assert ours is not None
    np.testing.assert_allclose(ours.to_numpy(), leaf.grad.numpy(), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize(("beta", "threshold"), SETTINGS[:2], ids=SETTING_IDS[:2])
def test_softplus_gradcheck(
    ad_device: Device, rng: np.random.Generator, beta: float, threshold: float
) -> None:
    values = rng.uniform(-3.0, 3.0, (3, 4))
    values = values[np.abs(values * beta - threshold) > 0.05].reshape(-1) if threshold < 3.0 else values
    gradcheck(
        ad_device,
        lambda t: activation.softplus(t, beta, threshold),
        [values],
        rng,
        torch_function=torch_softplus(beta, threshold),
    )
