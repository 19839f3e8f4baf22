"""Initializers: the statistics and bounds of each kind, against PyTorch's rules."""

from __future__ import annotations

import math

import numpy as np
import pytest

from burn_backend import DType
from burn_nn import Initializer, LinearConfig

SHAPE = [256, 128]  # fan_in 128 is dim 1 only for the 2-d helpers below; the fans are passed explicitly


def values(initializer: Initializer, device, **fans) -> np.ndarray:
    return initializer.init(SHAPE, device, **fans).val().to_data().to_numpy().astype(np.float64)


def test_constant_ones_zeros(device) -> None:
    assert (values(Initializer.Constant(0.25), device) == 0.25).all()
    assert (values(Initializer.Ones(), device) == 1).all()
    assert (values(Initializer.Zeros(), device) == 0).all()


@pytest.mark.parametrize(
    ("initializer", "fans", "bound"),
    [
        (Initializer.Uniform(-0.3, 0.7), {}, None),
        (Initializer.KaimingUniform(1 / math.sqrt(3)), {"fan_in": 128}, 1 / math.sqrt(128)),
        (Initializer.KaimingUniform(2.0, fan_out_only=True), {"fan_out": 64}, 2.0 * math.sqrt(3 / 64)),
        (Initializer.XavierUniform(1.5), {"fan_in": 128, "fan_out": 64}, 1.5 * math.sqrt(6 / 192)),
    ],
)
def test_uniform_kinds_fill_their_interval(initializer, fans, bound, device) -> None:
    low, high = (-0.3, 0.7) if bound is None else (-bound, bound)
    drawn = values(initializer, device, **fans)
    assert drawn.min() >= low
    assert drawn.max() <= high
    # a uniform sample of 32k values reaches within 0.1% of both ends and has the interval's mean and std
    span = high - low
    assert drawn.min() < low + 1e-3 * span
    assert drawn.max() > high - 1e-3 * span
    assert abs(drawn.mean() - (low + high) / 2) < 0.02 * span
    assert abs(drawn.std() - span / math.sqrt(12)) < 0.02 * span


@pytest.mark.parametrize(
    ("initializer", "fans", "mean", "std"),
    [
        (Initializer.Normal(0.5, 2.0), {}, 0.5, 2.0),
        (Initializer.KaimingNormal(math.sqrt(2)), {"fan_in": 128}, 0.0, math.sqrt(2 / 128)),
        (Initializer.XavierNormal(1.0), {"fan_in": 100, "fan_out": 28}, 0.0, math.sqrt(2 / 128)),
    ],
)
def test_normal_kinds_have_their_moments(initializer, fans, mean, std, device) -> None:
    drawn = values(initializer, device, **fans)
    assert abs(drawn.mean() - mean) < 0.03 * std + 1e-3
    assert abs(drawn.std() / std - 1) < 0.02


@pytest.mark.parametrize("shape", [[4, 6], [6, 4], [3, 2, 2]])
def test_orthogonal_gives_orthonormal_rows_or_columns(shape, device) -> None:
    drawn = Initializer.Orthogonal(gain=2.0).init(shape, device).val().to_data().to_numpy().astype(np.float64)
    matrix = drawn.reshape(shape[0], -1) / 2.0
    small = min(matrix.shape)
    gram = matrix @ matrix.T if matrix.shape[0] == small else matrix.T @ matrix
    np.testing.assert_allclose(gram, np.eye(small), atol=1e-5)


def test_orthogonal_needs_a_matrix(device) -> None:
    with pytest.raises(ValueError, match=r"Orthogonal: needs at least 2 dims, got shape \[5\]"):
        Initializer.Orthogonal().init([5], device).val()


def test_missing_fans_fail_when_the_param_is_declared(device) -> None:
    with pytest.raises(ValueError, match="KaimingUniform: needs a positive fan_in, got None"):
        Initializer.KaimingUniform(1.0).init([3], device)
    with pytest.raises(ValueError, match="XavierNormal: needs a positive fan_out, got None"):
        Initializer.XavierNormal(1.0).init([3], device, fan_in=3)


def test_seeding_repeats_the_draw_and_dtype_is_honoured(device) -> None:
    device.seed(3)
    first = values(Initializer.Normal(0, 1), device)
    device.seed(3)
    np.testing.assert_array_equal(first, values(Initializer.Normal(0, 1), device))
    param = Initializer.Uniform(0, 1).init([2], device, dtype=DType.F64)
    assert param.dtype == DType.F64
    assert param.val().dtype == DType.F64


def test_linear_default_init_matches_torch_rule(device) -> None:
    layer = LinearConfig(64, 300).init(device)
    weight = layer.weight.val().to_data().to_numpy()
    bias = layer.bias.val().to_data().to_numpy()
    bound = 1 / math.sqrt(64)  # torch: kaiming_uniform(a=sqrt(5)) and bias U(±1/sqrt(fan_in))
    assert np.abs(weight).max() <= bound
    assert np.abs(weight).max() > 0.99 * bound
    assert np.abs(bias).max() <= bound
    assert np.abs(bias).max() > 0.9 * bound
