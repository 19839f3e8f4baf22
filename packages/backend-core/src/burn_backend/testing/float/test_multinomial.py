"""``Tensor.multinomial``: categorical draws from non-negative weights, with and without replacement.
Shapes, dtype and range; distinct categories without replacement; the empirical distribution against the
weights (a chi-square bound at p = 0.001 on a fixed seed, the expected frequencies in float64); zero
weights never drawn; the errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from burn_backend import AutodiffBackend, Device, DType, Kind, Tensor
from burn_backend.testing import make, require_dtype

WEIGHTS = [1.0, 2.0, 3.0, 4.0, 0.0]  # not normalized; the last category never comes up
# the 0.999 quantiles of the chi-square distribution by degrees of freedom
CHI2_999 = {2: 13.816, 3: 16.266}
Array = np.ndarray[Any, Any]


def draws(tensor: Tensor) -> Array:
    assert tensor.kind is Kind.INT
    return tensor.to_data().to_numpy()


def chi_square(samples: Array, probabilities: Array) -> tuple[float, int]:
    """Pearson's statistic of ``samples`` (category indices) against ``probabilities``, over the
    categories of non-zero probability, and its degrees of freedom."""
    expected = probabilities * samples.size
    observed = np.bincount(samples, minlength=probabilities.size).astype(np.float64)
    kept = expected > 0
    assert observed[~kept].sum() == 0, f"categories of probability 0 drawn: {observed[~kept]}"
    statistic = float((((observed - expected) ** 2)[kept] / expected[kept]).sum())
    return statistic, int(kept.sum()) - 1


@pytest.mark.parametrize("dtype", [DType.F32, DType.F64, DType.F16], ids=str)
@pytest.mark.parametrize("replacement", [True, False], ids=["replacement", "no-replacement"])
def test_shapes_dtype_and_range(device: Device, dtype: DType, replacement: bool) -> None:
    require_dtype(device, dtype)
    device.seed(1)
    vector = make(WEIGHTS, device, dtype)
    one = vector.multinomial(3, replacement)
    assert one.dims() == [3]
    assert one.dtype == device.backend.int_dtype
    rows = make([WEIGHTS, [0.5, 0.0, 0.0, 0.0, 0.5], [1.0] * 5], device, dtype)
    many = rows.multinomial(2, replacement)
    assert many.dims() == [3, 2]
    values = draws(many)
    assert values.min() >= 0
    assert values.max() < 5
    assert set(values[1].tolist()) <= {0, 4}
    assert 4 not in draws(one).tolist()


def test_same_seed_same_draws(device: Device) -> None:
    weights = make([[3.0, 1.0, 0.5, 2.0]] * 4, device, DType.F32)
    device.seed(7)
    first = draws(weights.multinomial(3)), draws(weights.multinomial(6, replacement=True))
    device.seed(7)
    again = draws(weights.multinomial(3)), draws(weights.multinomial(6, replacement=True))
    assert first[0].tolist() == again[0].tolist()
    assert first[1].tolist() == again[1].tolist()


def test_without_replacement_draws_distinct_categories(device: Device) -> None:
    device.seed(3)
    weights = make([[5.0, 0.0, 1.0, 0.01, 2.0, 0.0]] * 64, device, DType.F32)
    three = draws(weights.multinomial(3))
    assert all(len(set(row)) == 3 for row in three.tolist())
    assert not np.isin(three, [1, 5]).any()
    # as many draws as non-zero weights: each row is an ordering of those categories
    four = draws(weights.multinomial(4))
    assert all(sorted(row) == [0, 2, 3, 4] for row in four.tolist())


def test_with_replacement_follows_the_weights(device: Device) -> None:
    device.seed(11)
    samples = draws(make(WEIGHTS, device, DType.F32).multinomial(20_000, replacement=True))
    probabilities = np.array(WEIGHTS, dtype=np.float64) / sum(WEIGHTS)
    statistic, freedom = chi_square(samples, probabilities)
    assert statistic < CHI2_999[freedom], f"chi-square {statistic:.2f} with {freedom} dof"
    rows = [[0.2, 0.0, 0.5, 0.0, 0.3], [7.0, 7.0, 0.0, 0.0, 7.0]]
    by_row = draws(make(rows, device, DType.F32).multinomial(10_000, replacement=True))
    for row, samples in zip(rows, by_row, strict=True):
        probabilities = np.array(row, dtype=np.float64) / sum(row)
        statistic, freedom = chi_square(samples, probabilities)
        assert statistic < CHI2_999[freedom], f"row {row}: chi-square {statistic:.2f} with {freedom} dof"


def test_without_replacement_follows_the_weights(device: Device) -> None:
    device.seed(5)
    samples = draws(make([WEIGHTS] * 5_000, device, DType.F32).multinomial(2))
    p = np.array(WEIGHTS, dtype=np.float64) / sum(WEIGHTS)
    # the first draw follows the weights; the second, P(j) = sum over i != j of p_i p_j / (1 - p_i)
    second = np.array([sum(p[i] * p[j] / (1 - p[i]) for i in range(p.size) if i != j) for j in range(p.size)])
    assert second.sum() == pytest.approx(1.0)
    for column, probabilities in ((0, p), (1, second)):
        statistic, freedom = chi_square(samples[:, column], probabilities)
        assert statistic < CHI2_999[freedom], f"draw {column}: chi-square {statistic:.2f} with {freedom} dof"


def test_no_gradient(device: Device) -> None:
    weights = make([1.0, 2.0, 3.0], device, DType.F32)
    if isinstance(device.backend, AutodiffBackend):
        weights = weights.require_grad()
    drawn = weights.multinomial(2)
    assert drawn.kind is Kind.INT
    assert not drawn.is_require_grad()


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda d: make([1, 2], d).multinomial(1), TypeError, "multinomial: expected a Float tensor"),
        (lambda d: make(2.0, d).multinomial(1), ValueError, "expected weights of rank 1 or 2"),
        (lambda d: make([[[1.0]]], d).multinomial(1), ValueError, r"rank 1 or 2 .*shape \[1, 1, 1\]"),
        (lambda d: Tensor.zeros([2, 0], d).multinomial(1), ValueError, "no categories to draw from"),
        (lambda d: make([1.0, 2.0], d).multinomial(0), ValueError, "num_samples must be positive, got 0"),
        (lambda d: make([1.0, 2.0], d).multinomial(1.0), TypeError, "num_samples must be an int"),  # type: ignore[arg-type]
        (lambda d: make([1.0, 2.0], d).multinomial(1, "no"), TypeError, "replacement must be a bool"),  # type: ignore[arg-type]
        (
            lambda d: make([1.0, 2.0, 3.0], d).multinomial(4),
            ValueError,
            "cannot draw 4 samples without replacement from 3 categories; pass replacement=True",
        ),
    ],
    ids=[
        "int",
        "rank-0",
        "rank-3",
        "no-category",
        "zero-samples",
        "float-samples",
        "replacement",
        "too-many",
    ],
)
def test_argument_errors(device: Device, call: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        call(device)


@pytest.mark.parametrize(
    ("weights", "num_samples", "replacement", "message"),
    [
        ([1.0, -0.5, 2.0], 1, True, r"weights must be non-negative, got -0.5 at \[1\]"),
        ([[1.0, 2.0], [3.0, -1.0]], 1, True, r"non-negative, got -1.0 at \[1, 1\] of the Float f32 tensor"),
        ([[1.0, 2.0], [0.0, 0.0]], 1, True, r"rows \[1\] are all zero, there is nothing to draw"),
        ([0.0, 0.0, 0.0], 2, True, "the weights are all zero"),
        ([1.0, float("nan")], 1, True, r"weights must be finite, got nan at \[1\]"),
        ([1.0, float("inf")], 1, False, r"weights must be finite, got inf at \[1\]"),
        (
            [[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]],
            2,
            False,
            r"cannot draw 2 samples without replacement: row 1 of .* has 1 categories of non-zero weight",
        ),
    ],
    ids=["negative", "negative-row", "zero-row", "all-zero", "nan", "inf", "too-few-nonzero"],
)
def test_weight_errors(
    device: Device, weights: Any, num_samples: int, replacement: bool, message: str
) -> None:
    if not device.backend.validates_index_values:
        pytest.skip(f"{device.backend.name} does not read values to check them (validates_index_values)")
    with pytest.raises(ValueError, match=message):
        make(weights, device, DType.F32).multinomial(num_samples, replacement)
