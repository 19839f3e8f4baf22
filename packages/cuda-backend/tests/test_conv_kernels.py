"""The convolution's bias-gradient kernel (``burn_cuda._ops._conv.channel_sums``) against NumPy in
float64 (on a GPU). The conformance suite checks the convolutions and their gradients on every Cuda
stack."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from burn_cuda._cupy import cp, unavailable_reason

REASON = unavailable_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"needs an NVIDIA GPU through CuPy: {REASON}")


@pytest.mark.parametrize("shape", [(64, 8, 26, 26), (3, 5), (2, 7, 300), (1, 1, 1, 1), (5, 3, 2, 2, 2)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_channel_sums_sum_every_dim_but_the_channels(shape: tuple[int, ...], dtype: Any) -> None:
    from burn_cuda._ops._conv import channel_sums

    rng = np.random.default_rng(len(shape))
    grad = rng.standard_normal(shape).astype(dtype)
    sums = channel_sums(cp.asarray(grad))
    expected = grad.astype(np.float64).sum(axis=(0, *range(2, grad.ndim)))
    assert sums.dtype == dtype
    assert sums.shape == (shape[1],)
    tolerance = 1e-4 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(
        cp.asnumpy(sums), expected, rtol=tolerance, atol=tolerance * np.sqrt(grad.size)
    )


def test_channel_sums_read_strided_gradients_and_repeat_bit_for_bit() -> None:
    from burn_cuda._ops._conv import channel_sums

    rng = np.random.default_rng(0)
    grad = rng.standard_normal((6, 4, 9)).astype(np.float32)
    strided = cp.asarray(np.ascontiguousarray(grad.transpose(2, 1, 0))).transpose(2, 1, 0)
    first = cp.asnumpy(channel_sums(strided))
    np.testing.assert_allclose(first, grad.astype(np.float64).sum(axis=(0, 2)), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(cp.asnumpy(channel_sums(strided)), first)


def test_channel_sums_of_nothing_are_zeros() -> None:
    from burn_cuda._ops._conv import channel_sums

    np.testing.assert_array_equal(cp.asnumpy(channel_sums(cp.ones((0, 3, 4), dtype=np.float32))), np.zeros(3))
