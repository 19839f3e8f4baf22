"""Infinities and NaNs go through the module ops as IEEE arithmetic says, silently (no warnings, which
are errors under ``filterwarnings = error``), with the same results as the float64 references."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from burn_backend import ConvOptions, Device, DType, InterpolateMode, module
from burn_backend.testing import check, make
from burn_backend.testing.module import _reference as ref
from burn_backend.testing.module._reference import Array


@pytest.fixture
def special(rng: np.random.Generator) -> Array:
    x = rng.uniform(-2.0, 2.0, (2, 2, 6, 6)).astype(np.float32)
    x[0, 0, 1, 1] = np.inf
    x[0, 0, 1, 2] = -np.inf
    x[1, 1, 4, 0] = np.nan
    x[1, 0, 5, 5] = np.inf
    return x


def expected(function: Callable[..., Array], *args: Any) -> Array:
    with np.errstate(all="ignore"):
        return function(*args)


def test_pooling(device: Device, special: Array) -> None:
    x = special.astype(np.float64)
    tx = make(special, device)
    check(
        module.avg_pool2d(tx, 3, 2, 1, False, True),
        expected(ref.avg_pool, x, (3, 3), (2, 2), (1, 1), False, True),
        DType.F32,
    )
    check(module.adaptive_avg_pool2d(tx, (4, 5)), expected(ref.adaptive_avg_pool, x, (4, 5)), DType.F32)
    values = module.max_pool2d(tx, 2).to_numpy()
    assert np.isinf(values[0, 0, 0, 0])
    assert np.isnan(values[1, 1, 2, 0])


@pytest.mark.parametrize("mode", list(InterpolateMode), ids=lambda m: m.value)
def test_interpolate(device: Device, special: Array, mode: InterpolateMode) -> None:
    result = module.interpolate(make(special, device), (9, 7), mode)
    check(
        result, expected(ref.interpolate, special.astype(np.float64), (9, 7), mode.value), DType.F32, scale=4
    )


def test_conv_and_layer_norm(device: Device, special: Array, rng: np.random.Generator) -> None:
    w = rng.uniform(-1.0, 1.0, (3, 2, 3, 3)).astype(np.float32)
    b = np.array([1.0, -np.inf, 0.5], dtype=np.float32)
    result = module.conv2d(
        make(special, device), make(w, device), make(b, device), ConvOptions((1, 1), (1, 1), (1, 1))
    )
    reference = expected(
        ref.conv,
        special.astype(np.float64),
        w.astype(np.float64),
        b.astype(np.float64),
        (1, 1),
        (1, 1),
        (1, 1),
        1,
    )
    check(result, reference, DType.F32, scale=10)
    flat = np.full((2, 4), 3.0, dtype=np.float32)
    normed = module.layer_norm(make(flat, device), epsilon=0.0).to_numpy()
    assert np.all(np.isnan(normed))
