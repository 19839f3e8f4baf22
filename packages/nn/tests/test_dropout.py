"""Dropout: training statistics and scaling, gradients, evaluation, edge probabilities, errors, seeding."""

from __future__ import annotations

import math

import numpy as np
import pytest

from burn_autodiff import Autodiff
from burn_backend import Tensor
from burn_ndarray import NdArray
from burn_nn import Dropout, DropoutConfig, Module


def _train(dropout, x_np, upstream, device):
    """Output and input gradient of ``dropout`` on an autodiff device."""
    x = Tensor.from_data(x_np, device).require_grad()
    out = dropout(x)
    grads = (out * Tensor.from_data(upstream, device)).sum().backward()
    return out.to_data().to_numpy(), x.grad(grads).to_data().to_numpy()


@pytest.mark.parametrize("prob", [0.1, 0.5, 0.8])
def test_training_drops_a_fraction_prob_and_scales_the_rest(device, rng, prob) -> None:
    shape = (200, 250)
    x_np = rng.uniform(0.5, 1.5, shape).astype(np.float32)  # no zero: a zero output is a dropped value
    upstream = rng.normal(size=shape).astype(np.float32)
    out, gradient = _train(DropoutConfig(prob).init(), x_np, upstream, device)

    dropped = out == 0.0
    count = dropped.size
    # binomial(count, prob): within 5 standard deviations
    assert abs(dropped.mean() - prob) <= 5 * math.sqrt(prob * (1 - prob) / count)
    np.testing.assert_allclose(out[~dropped], x_np[~dropped] / (1 - prob), rtol=1e-6)
    # the gradient is the upstream gradient through the same scaled mask
    np.testing.assert_allclose(gradient[~dropped], upstream[~dropped] / (1 - prob), rtol=1e-6)
    np.testing.assert_array_equal(gradient[dropped], 0.0)


def test_the_mask_is_independent_of_the_values_position(device) -> None:
    out = DropoutConfig(0.5).init()(Tensor.ones([400, 100], device)).to_data().to_numpy()
    kept_per_row = (out != 0).mean(axis=1)
    kept_per_column = (out != 0).mean(axis=0)
    # every row and column keeps about half: no stripe of the mask is all kept or all dropped
    assert kept_per_row.min() > 0.25
    assert kept_per_row.max() < 0.75
    assert kept_per_column.min() > 0.3
    assert kept_per_column.max() < 0.7


def test_float64_keeps_dtype_and_exact_scale(rng) -> None:
    device = Autodiff(NdArray(float_dtype="f64")).device()
    device.seed(1)
    x_np = rng.uniform(1.0, 2.0, (50, 40))
    out = DropoutConfig(0.25).init()(Tensor.from_data(x_np, device))
    assert out.dtype.name == "F64"
    values = out.to_data().to_numpy()
    kept = values != 0.0
    np.testing.assert_allclose(values[kept], x_np[kept] / 0.75, rtol=1e-15)


def test_evaluation_is_the_identity(inner_device, rng) -> None:
    x_np = rng.normal(size=(30, 20)).astype(np.float32)
    dropout = DropoutConfig(0.9).init()
    out = dropout(Tensor.from_data(x_np, inner_device))
    np.testing.assert_array_equal(out.to_data().to_numpy(), x_np)


def test_valid_model_stops_dropping(device, inner_device, rng) -> None:
    class Model(Module):
        def __init__(self) -> None:
            self.dropout = DropoutConfig(0.5).init(device)

        def forward(self, x):
            return self.dropout(x)

    model = Model()
    x_np = rng.uniform(1.0, 2.0, (20, 30)).astype(np.float32)
    assert (model(Tensor.from_data(x_np, device)).to_data().to_numpy() == 0).any()
    evaluated = model.valid()
    np.testing.assert_array_equal(evaluated(Tensor.from_data(x_np, inner_device)).to_data().to_numpy(), x_np)


def test_prob_zero_is_the_identity_while_training(device, rng) -> None:
    x_np = rng.normal(size=(10, 10)).astype(np.float32)
    upstream = rng.normal(size=(10, 10)).astype(np.float32)
    out, gradient = _train(DropoutConfig(0.0).init(), x_np, upstream, device)
    np.testing.assert_array_equal(out, x_np)
    np.testing.assert_array_equal(gradient, upstream)


def test_prob_one_drops_everything_while_training(device, inner_device, rng) -> None:
    x_np = rng.normal(size=(10, 10)).astype(np.float32)
    dropout = DropoutConfig(1.0).init()
    np.testing.assert_array_equal(dropout(Tensor.from_data(x_np, device)).to_data().to_numpy(), 0.0)
    np.testing.assert_array_equal(dropout(Tensor.from_data(x_np, inner_device)).to_data().to_numpy(), x_np)


def test_prob_one_gives_a_zero_gradient(device, rng) -> None:
    x_np = rng.normal(size=(4, 5)).astype(np.float32)
    upstream = rng.normal(size=(4, 5)).astype(np.float32)
    _, gradient = _train(DropoutConfig(1.0).init(), x_np, upstream, device)
    np.testing.assert_array_equal(gradient, 0.0)


@pytest.mark.parametrize("prob", [-0.1, 1.5, math.nan])
def test_bad_prob_is_rejected(prob) -> None:
    with pytest.raises(ValueError, match=r"Dropout: prob must be a number in \[0, 1\], got"):
        DropoutConfig(prob).init()


def test_a_bool_prob_is_a_type_error() -> None:
    with pytest.raises(TypeError, match=r"DropoutConfig: prob must be a float, got True"):
        DropoutConfig(True)  # type: ignore[arg-type]


def test_device_seed_repeats_the_mask(device) -> None:
    dropout = DropoutConfig(0.5).init()
    x = Tensor.ones([64, 64], device)
    device.seed(7)
    first = dropout(x).to_data().to_numpy()
    second = dropout(x).to_data().to_numpy()
    device.seed(7)
    repeated = dropout(x).to_data().to_numpy()
    np.testing.assert_array_equal(repeated, first)
    assert not np.array_equal(first, second)  # without reseeding, a new mask


def test_config_defaults_and_display() -> None:
    assert DropoutConfig().prob == 0.5
    dropout = DropoutConfig(0.3).init()
    assert isinstance(dropout, Dropout)
    assert dropout.num_params() == 0
    assert repr(dropout) == "Dropout {prob: 0.3, params: 0}"
    assert DropoutConfig.from_json(DropoutConfig(0.3).to_json()) == DropoutConfig(0.3)
